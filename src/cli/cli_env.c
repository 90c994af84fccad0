/* cli_env.c: the only place dlca reads environment variables (cli_env.h). */
#include "cli_env.h"

#include "cli.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of `name`, or NULL when unset or empty. */
static const char *env_value(const char *name)
{
    const char *value = getenv(name);
    return value && value[0] ? value : NULL;
}

/* A 0/1 switch: unset is 0. */
static int env_switch(const char *name, int *out)
{
    const char *value = env_value(name);
    if (!value) return DLCA_OK;
    if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
        return err_set(DLCA_ERR, "environment %s=%s: expected 0 or 1", name, value);
    *out = value[0] == '1';
    return DLCA_OK;
}

/* A count in [low, high]: unset leaves *out as it is (0, automatic). */
static int env_count(const char *name, long long low, long long high, uint32_t *out)
{
    const char *value = env_value(name);
    long long n;
    if (!value) return DLCA_OK;
    if (cli_int(name, value, low, high, &n)) {
        char why[256];
        snprintf(why, sizeof why, "%s", err_message());
        return err_set(DLCA_ERR, "environment %s", why);
    }
    *out = (uint32_t)n;
    return DLCA_OK;
}

/* A path choice: 0 = off, 1 = on, and for the persistent kernels `step`. */
static int env_choice(const char *name, int allow_step, ca_gpu_choice *out)
{
    const char *value = env_value(name);
    if (!value) return DLCA_OK;
    if (strcmp(value, "0") == 0) *out = CA_GPU_OFF;
    else if (strcmp(value, "1") == 0) *out = CA_GPU_ON;
    else if (allow_step && strcmp(value, "step") == 0) *out = CA_GPU_STEPWISE;
    else return err_set(DLCA_ERR, "environment %s=%s: expected 0, 1%s", name, value, allow_step ? " or step" : "");
    return DLCA_OK;
}

static int read_gpu(ca_gpu_options *g)
{
    const char *cache = env_value("DLCA_CACHE");
    if (cache && strcmp(cache, "full") != 0 && strcmp(cache, "checkpoint") != 0)
        return err_set(DLCA_ERR, "environment DLCA_CACHE=%s: expected full or checkpoint", cache);
    if (cache) g->cache = strcmp(cache, "full") == 0 ? CA_CACHE_FULL : CA_CACHE_CHECKPOINT;
    if (env_choice("DLCA_FUSED", 0, &g->fused) || env_choice("DLCA_PERSISTENT", 1, &g->persistent)) return DLCA_ERR;
    if (env_count("DLCA_TILE", 1, 64, &g->tile) || env_count("DLCA_TILE_BACKWARD", 1, 64, &g->tile_backward) ||
        env_count("DLCA_FUSED_SLOTS", 1, 1 << 30, &g->max_slots) || env_count("DLCA_PER_THREAD", 1, 64, &g->per_thread) ||
        env_count("DLCA_BLOCKS_PER_BUFFER", 1, 1 << 30, &g->blocks_per_buffer))
        return DLCA_ERR;
    return DLCA_OK;
}

/* The persistent pipeline cache's folder (vk_cache.h) into `folder`: DLCA_PIPELINE_CACHE=DIR (or
 * off: none), else $XDG_CACHE_HOME/dlca (absolute only, as the XDG rules say), else
 * $HOME/.cache/dlca; none when neither is set or the path is too long to hold a file. */
static int read_pipeline_cache(char folder[VK_CACHE_FOLDER_MAX + 1])
{
    const char *named = env_value("DLCA_PIPELINE_CACHE"), *xdg = env_value("XDG_CACHE_HOME"), *home = env_value("HOME");
    int n = 0;
    folder[0] = '\0';
    if (named && strcmp(named, "off") == 0) return DLCA_OK;
    if (named) n = snprintf(folder, VK_CACHE_FOLDER_MAX + 1, "%s", named);
    else if (xdg && xdg[0] == '/') n = snprintf(folder, VK_CACHE_FOLDER_MAX + 1, "%s/dlca", xdg);
    else if (home) n = snprintf(folder, VK_CACHE_FOLDER_MAX + 1, "%s/.cache/dlca", home);
    if (n > VK_CACHE_FOLDER_MAX) {
        folder[0] = '\0';
        if (named)
            return err_set(DLCA_ERR, "environment DLCA_PIPELINE_CACHE: a folder of %d characters, at most %d (or off)",
                           n, VK_CACHE_FOLDER_MAX);
    }
    return DLCA_OK;
}

int cli_env_read(ca_options *o)
{
    memset(o, 0, sizeof *o);
    o->device = env_value("DLCA_DEVICE");
    o->device_from_environment = o->device != NULL;
    o->assets = env_value("DLCA_ASSETS");
    uint32_t threads = 0, timeout = 0, queues = 0;
    if (env_switch("DLCA_VALIDATE", &o->vk.validate) || env_switch("DLCA_ROBUST", &o->vk.robust) ||
        env_switch("DLCA_PIPELINE_STATS", &o->vk.pipeline_stats) || env_count("DLCA_TIMEOUT", 1, 86400, &timeout) ||
        env_count("DLCA_QUEUES", 1, VK_MAX_QUEUES, &queues) ||
        env_count("DLCA_THREADS", 1, 256, &threads) || env_switch("DLCA_CPU_REFERENCE", &o->cpu_reference) ||
        env_switch("DLCA_CHECK_STAGES", &o->check_stages) || read_gpu(&o->gpu) ||
        read_pipeline_cache(o->vk.pipeline_cache))
        return DLCA_ERR;
    o->vk.timeout_s = timeout, o->vk.queues = (int)queues, o->cpu_threads = (int)threads;
    return DLCA_OK;
}

int cli_run_options(ca_options *o, const char *device_flag)
{
    if (cli_env_read(o)) return DLCA_ERR;
    if (device_flag) o->device = device_flag, o->device_from_environment = 0;
    return DLCA_OK;
}

void cli_env_compiler(const char **cc, const char **tmpdir)
{
    *cc = env_value("DLCA_CC");
    *tmpdir = env_value("TMPDIR");
}

void cli_env_display(cli_display *d)
{
    d->x11 = env_value("DISPLAY");
    d->wayland = env_value("WAYLAND_DISPLAY");
    d->sdl_driver = env_value("SDL_VIDEODRIVER");
}
