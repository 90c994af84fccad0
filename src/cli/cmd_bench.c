/* cmd_bench.c: `dlca bench`: the speed of a training step on the GPU or the CPU engine (median
 * and spread of wall clock and GPU timestamps, gate evaluations per second, dispatches and
 * submissions per step, device memory) and the start-up before it (the command's start to the end
 * of the first step: context, pipelines, engine), or with --hard of the bit-packed hard engine (on
 * the CPU, or with --device on a Vulkan GPU over a batch of grids). Prints a table; --json writes
 * every number, flat, one key per line, for tools/bench_table.sh. */
#include "cmd_bench.h"

#include "ca_backend.h"
#include "ca_bench.h"
#include "ca_config_text.h"
#include "ca_file.h"
#include "ca_target.h"
#include "cli.h"
#include "cli_env.h"
#include "cli_json.h"
#include "cmd_population.h"
#include "commands.h"
#include "error.h"
#include "hard_bench.h"
#include "hard_bench_gpu.h"
#include "hard_circuit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    HARD_SIZE = 512,     /* the hard engine runs on HARD_SIZE x HARD_SIZE cells */
    HARD_GPU_BATCH = 256, /* grids per GPU step by default: 2^26 cells, enough to fill a big GPU */
    HARD_GPU_T = 100      /* CA steps per GPU run (one submission) by default */
};

static void print_help(void)
{
    printf("usage: dlca bench [--preset P] [--batch N] [--T N] [--perception-wiring W] [--device D]\n"
           "                  [--cache full|checkpoint]\n"
           "                  [--steps N] [--warmup N] [--cold] [--json FILE] [--hard [MODEL]]\n"
           "                  [--population N]\n"
           "\n"
           "Times training steps (the step `dlca train` runs between log rows: forward, loss, BPTT,\n"
           "logit gradient, AdamW, with its uploads and loss read-back) after a warm-up, and prints the\n"
           "median, p10, p90, min and max of the wall clock and, on a GPU, of the GPU timestamps of the\n"
           "whole step and of its forward (coefficients + T steps), loss, backward (BPTT) and optimizer\n"
           "parts. Gate evaluations per second count forward and backward once each: 2 x (gate\n"
           "evaluations per cell and CA step) x cells x T per step, where perception gates count once per\n"
           "channel. Also: dispatches and queue submissions per step, and peak device memory.\n"
           "\n"
           "Start-up: the time from the command's start to the end of the first training step, in parts:\n"
           "setup (model, target), context (Vulkan instance, device, reading the pipeline cache),\n"
           "pipelines (compiling or loading each kernel, with how many the driver found in the cache),\n"
           "engine init and the first step (each without its pipelines).\n"
           "\n"
           "  --preset P       gol, checkerboard, checkerboard-async, lizard, image, image-persist\n"
           "                   (default checkerboard)\n"
           "  --batch N        samples per step (default: the preset's); with --hard on a GPU, grids per\n"
           "                   step (default %d)\n"
           "  --T N            CA steps per rollout (default: the preset's); with --hard, CA steps per\n"
           "                   timed run (default 20 on the CPU, %d on a GPU)\n"
           "  --perception-wiring W  shared or per-kernel: the moore layer's neighbour order (default: the\n"
           "                   preset's)\n"
           "  --device D       auto, cpu, a Vulkan device index or part of its name (default: $DLCA_DEVICE,\n"
           "                   else auto: a real GPU when there is one, else the CPU engine)\n"
           "  --cache C        full or checkpoint: GPU activation memory (default full)\n"
           "  --steps N        measured steps (default 20 on a GPU, 5 on the CPU engine); with --hard,\n"
           "                   timed runs (default 5)\n"
           "  --warmup N       untimed steps first (default 3 on a GPU, 1 on the CPU engine); on a GPU\n"
           "                   they go on for 1 s at least, so that it leaves its idle clock\n"
           "  --cold           start up without dlca's pipeline cache (DLCA_PIPELINE_CACHE), neither read\n"
           "                   nor written, as a first run does; a driver's own shader cache (Mesa's,\n"
           "                   NVIDIA's: __GL_SHADER_DISK_CACHE=0) still applies\n"
           "  --kernels        on a GPU, also time each dispatch of a step (a timestamp after each) and\n"
           "                   print the step's timeline: kernel, median us from the timestamp before\n"
           "                   (its barrier and its run); where kernels would overlap the stamps\n"
           "                   serialise them, so the total is a little above the GPU median\n"
           "  --json FILE      also write every number (and device, driver, preset, batch, T, cache) as\n"
           "                   one flat JSON object; times in ms, memory in bytes, null when not measured\n"
           "  --hard [MODEL]   time the bit-packed hard engine instead on %dx%d periodic grids: MODEL's\n"
           "                   pruned circuit, or without MODEL the gol preset (or --preset P) with random\n"
           "                   two-input ops; reports cell updates/s. Without --device (or with --device cpu):\n"
           "                   the CPU engine on one grid, one thread, thread CPU time. With --device D naming\n"
           "                   a Vulkan device: the GPU engine (the circuit compiled to SPIR-V) on --batch N\n"
           "                   grids (default %d; refused, naming the largest that fits, beyond the device's\n"
           "                   memory), --T steps per submission (default %d), --steps timed submissions\n"
           "                   after an untimed one; median by GPU timestamps and by wall clock\n"
           "  --population N   time a step of N members (seeds 1..N, as dlca train --population):\n"
           "                   a submission a member over the GPU's queues; wall clock of the whole\n"
           "                   step, without and with every member's hard loss (what dlca train\n"
           "                   measures each step), and where that is measured (the host's threads\n"
           "                   or the GPU)\n"
           "\n"
           "The trainer's logits really change during the run; nothing is saved.\n",
           HARD_GPU_BATCH, HARD_GPU_T, HARD_SIZE, HARD_SIZE, HARD_GPU_BATCH, HARD_GPU_T);
}

static int parse_cache(const char *text, ca_cache *cache)
{
    if (strcmp(text, "full") == 0) *cache = CA_CACHE_FULL;
    else if (strcmp(text, "checkpoint") == 0) *cache = CA_CACHE_CHECKPOINT;
    else return err_set(DLCA_ERR, "--cache: '%s' is not full or checkpoint", text);
    return DLCA_OK;
}

static int parse_flag(bench_options *o, const char *flag, const char *v)
{
    if (strcmp(flag, "--preset") == 0) o->preset = v, o->has_preset = 1;
    else if (strcmp(flag, "--device") == 0) o->device = v, o->has_device = 1;
    else if (strcmp(flag, "--json") == 0) o->json = v;
    else if (strcmp(flag, "--perception-wiring") == 0) o->perception_wiring = v;
    else if (strcmp(flag, "--cache") == 0) return parse_cache(v, &o->cache);
    else if (strcmp(flag, "--batch") == 0) return o->has_batch = 1, cli_int(flag, v, 1, CA_MAX_BATCH, &o->batch);
    else if (strcmp(flag, "--T") == 0) return o->has_T = 1, cli_int(flag, v, 1, CA_MAX_T, &o->T);
    else if (strcmp(flag, "--steps") == 0) return o->has_steps = 1, cli_int(flag, v, 1, 1000000, &o->steps);
    else if (strcmp(flag, "--warmup") == 0) return o->has_warmup = 1, cli_int(flag, v, 0, 1000000, &o->warmup);
    else if (strcmp(flag, "--population") == 0) return cli_int(flag, v, 1, CMD_POPULATION_MAX, &o->population);
    else return err_set(DLCA_ERR, "unknown option '%s' (see dlca bench --help)", flag);
    return DLCA_OK;
}

static int parse_options(int argc, char **argv, bench_options *o, int *help)
{
    memset(o, 0, sizeof *o);
    o->preset = "checkerboard", o->device = NULL, o->cache = CA_CACHE_FULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return *help = 1, DLCA_OK;
        if (strcmp(argv[i], "--cold") == 0 || strcmp(argv[i], "--kernels") == 0) {
            *(argv[i][2] == 'c' ? &o->cold : &o->kernels) = 1;
            continue;
        }
        if (strcmp(argv[i], "--hard") == 0) {
            /* MODEL is optional: the next argument, unless it is a flag. */
            o->hard = 1;
            if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) o->hard_model = argv[++i];
            continue;
        }
        const char *value;
        if (strncmp(argv[i], "--", 2) != 0) return err_set(DLCA_ERR, "unexpected argument '%s'", argv[i]);
        if (cli_value(argc, argv, &i, &value) || parse_flag(o, argv[i - 1], value)) return DLCA_ERR;
    }
    if (o->hard && (o->cache != CA_CACHE_FULL || o->has_warmup || o->cold || o->kernels))
        return err_set(DLCA_ERR, "--hard times the hard engine: --cache, --warmup, --cold and --kernels do not apply (use --steps, "
                                 "--T, --preset, --device, --batch, --json)");
    if (o->population && (o->hard || o->kernels))
        return err_set(DLCA_ERR, "--population times a population's training step: --hard and --kernels do not apply");
    if (o->hard && o->has_batch && (!o->has_device || strcmp(o->device, "cpu") == 0))
        return err_set(DLCA_ERR, "--hard --batch N times the GPU hard engine: name a Vulkan device with --device D "
                                 "(the CPU hard engine runs one grid)");
    return DLCA_OK;
}

/* ---- JSON: one flat object, one "key": value per line (cli_json.h) ---- */

/* A number, or null when `known` is 0. */
static void json_number(cli_json *j, const char *key, double value, int known)
{
    cli_json_number(j, key, known ? value : NAN);
}

void cmd_bench_json_spread(cli_json *w, const char *name, const ca_bench_spread *s, int known)
{
    const char *suffix[] = {"median", "p10", "p90", "min", "max"};
    double value[] = {s->median, s->p10, s->p90, s->min, s->max};
    char key[64];
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "%s_%s", name, suffix[i]);
        json_number(w, key, value[i], known);
    }
}


/* The CPU's model name from /proc/cpuinfo, or "cpu". */
static void cpu_name(char *name, size_t size)
{
    snprintf(name, size, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        snprintf(name, size, "%s", colon + 2);
        name[strcspn(name, "\n")] = '\0';
        break;
    }
    if (f) fclose(f);
}

void cmd_bench_machine_describe(bench_machine *m, ca_backend backend, const vk_context *vk)
{
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    if (gethostname(m->host, sizeof m->host)) snprintf(m->host, sizeof m->host, "unknown");
    m->host[sizeof m->host - 1] = '\0';
    cpu_name(m->cpu, sizeof m->cpu);
    m->engine = "cpu", m->device = m->cpu, m->device_type = "host", m->driver = NULL, m->api[0] = '\0';
    if (backend != CA_BACKEND_GPU) return;
    vk_driver_describe(vk->physical, m->driver_text, sizeof m->driver_text);
    snprintf(m->api, sizeof m->api, "%u.%u.%u", VK_API_VERSION_MAJOR(vk->props.apiVersion),
             VK_API_VERSION_MINOR(vk->props.apiVersion), VK_API_VERSION_PATCH(vk->props.apiVersion));
    m->engine = "gpu", m->device = vk->props.deviceName, m->device_type = vk_device_type_name(vk->props.deviceType);
    m->driver = m->driver_text;
}

void cmd_bench_json_machine(cli_json *w, const bench_machine *m, const char *mode)
{
    cli_json_string(w, "dlca_version", DLCA_VERSION);
    cli_json_string(w, "mode", mode);
    cli_json_string(w, "date", m->date);
    cli_json_string(w, "host", m->host);
    cli_json_string(w, "cpu", m->cpu);
    cli_json_string(w, "engine", m->engine);
    cli_json_string(w, "device", m->device);
    cli_json_string(w, "device_type", m->device_type);
    cli_json_string(w, "driver", m->driver);
    cli_json_string(w, "vulkan_api", m->api[0] ? m->api : NULL);
}

int cmd_bench_json_write(const char *path, void (*body)(cli_json *, const void *), const void *data)
{
    cli_json j = {0};
    cli_json_open(&j, NULL, '{');
    body(&j, data);
    cli_json_close(&j, '}');
    int rc = cli_json_write(&j, path, "--json");
    cli_json_free(&j);
    return rc;
}

/* ---- training bench ---- */

typedef struct {
    const bench_options *options;
    const bench_machine *machine;
    const ca_config *config;
    ca_backend backend;
    ca_bench_startup startup;
    ca_bench_result result;
} train_report;

/* The start-up parts (ca_bench_startup), ms; the context's own parts and the cache on a GPU. */
static void json_startup(cli_json *w, const ca_bench_startup *s)
{
    const int gpu = s->gpu;
    json_number(w, "startup_ms", s->end[CA_STARTUP_FIRST_STEP] - s->start, 1);
    json_number(w, "startup_setup_ms", ca_bench_startup_ms(s, CA_STARTUP_SETUP), 1);
    json_number(w, "startup_context_ms", ca_bench_startup_ms(s, CA_STARTUP_CONTEXT), 1);
    json_number(w, "startup_instance_ms", s->instance_ms, gpu);
    json_number(w, "startup_device_ms", s->device_ms, gpu);
    json_number(w, "startup_queues", s->queues, gpu);
    json_number(w, "startup_cache_read_ms", s->cache_ms, gpu);
    json_number(w, "startup_pipelines_ms", ca_bench_startup_pipelines_ms(s), 1);
    json_number(w, "startup_pipelines", s->pipelines[CA_STARTUP_FIRST_STEP], 1);
    json_number(w, "startup_pipelines_engine", s->pipelines[CA_STARTUP_ENGINE] - s->pipelines[CA_STARTUP_CONTEXT], 1);
    json_number(w, "startup_pipeline_cache_hits", s->cache_hits[CA_STARTUP_FIRST_STEP], gpu && s->cache_feedback);
    json_number(w, "startup_engine_ms", ca_bench_startup_ms(s, CA_STARTUP_ENGINE), 1);
    json_number(w, "startup_engine_submissions",
                (double)(s->submissions[CA_STARTUP_ENGINE] - s->submissions[CA_STARTUP_CONTEXT]), gpu);
    json_number(w, "startup_first_step_ms", ca_bench_startup_ms(s, CA_STARTUP_FIRST_STEP), 1);
    cli_json_string(w, "pipeline_cache", s->cache_state);
    json_number(w, "pipeline_cache_read_bytes", (double)s->cache_bytes, gpu);
}

static void json_train(cli_json *w, const void *data)
{
    const train_report *t = data;
    const ca_bench_result *r = &t->result;
    const ca_config *c = t->config;
    int gpu = t->backend == CA_BACKEND_GPU, ts = r->has_gpu_times;
    cmd_bench_json_machine(w, t->machine, "train");
    cli_json_string(w, "preset", c->preset);
    cli_json_string(w, "perception_wiring", c->perception_wiring == CA_PERCEPTION_PER_KERNEL ? "per-kernel" : "shared");
    json_number(w, "batch", c->batch, 1);
    json_number(w, "T", c->steps, 1);
    json_number(w, "height", c->height, 1);
    json_number(w, "width", c->width, 1);
    json_number(w, "channels", c->channels, 1);
    cli_json_string(w, "cache", gpu ? (t->options->cache == CA_CACHE_FULL ? "full" : "checkpoint") : NULL);
    cli_json_string(w, "kernels", gpu ? (r->fused ? "fused" : "per-layer") : NULL);
    cli_json_string(w, "plan", gpu ? r->plan : NULL);
    json_number(w, "persistent", r->persistent, gpu);
    json_number(w, "persistent_gave_up", r->persistent_gave_up, gpu);
    json_number(w, "warmup", r->warmup, 1);
    json_number(w, "steps", r->steps, 1);
    json_number(w, "model_gates", (double)r->model_gates, 1);
    json_number(w, "gate_evals_per_cell_step", (double)r->evals_per_cell, 1);
    json_number(w, "cells", (double)r->cells, 1);
    json_number(w, "forward_gate_evals", r->forward_evals, 1);
    json_number(w, "gate_evals_per_step", 2.0 * r->forward_evals, 1);
    cmd_bench_json_spread(w, "wall_ms", &r->wall_ms, 1);
    cmd_bench_json_spread(w, "gpu_ms", &r->gpu_ms, ts);
    cmd_bench_json_spread(w, "forward_ms", &r->forward_ms, ts);
    cmd_bench_json_spread(w, "loss_ms", &r->loss_ms, ts);
    cmd_bench_json_spread(w, "backward_ms", &r->backward_ms, ts);
    cmd_bench_json_spread(w, "optimizer_ms", &r->optimizer_ms, ts);
    json_number(w, "gate_evals_per_s_wall", ca_bench_evals_per_second(r, r->wall_ms.median), 1);
    json_number(w, "gate_evals_per_s_gpu", ca_bench_evals_per_second(r, r->gpu_ms.median), ts);
    json_number(w, "forward_gate_evals_per_s", 0.5 * ca_bench_evals_per_second(r, r->forward_ms.median), ts);
    json_number(w, "backward_gate_evals_per_s", 0.5 * ca_bench_evals_per_second(r, r->backward_ms.median), ts);
    json_number(w, "dispatches_per_step", r->dispatches_per_step, gpu);
    json_number(w, "submissions_per_step", r->submissions_per_step, gpu);
    json_number(w, "peak_device_bytes", (double)r->peak_device_bytes, gpu);
    json_number(w, "engine_device_bytes", (double)r->engine_device_bytes, gpu);
    json_startup(w, &t->startup);
}

/* Where the start-up went: one line a part, the pipelines on a line of their own. */
static void print_startup(const ca_bench_startup *s)
{
    const uint32_t made = s->pipelines[CA_STARTUP_FIRST_STEP],
                   in_engine = s->pipelines[CA_STARTUP_ENGINE] - s->pipelines[CA_STARTUP_CONTEXT];
    printf("\n  start-up: %.1f ms from the command's start to the end of the first training step\n",
           s->end[CA_STARTUP_FIRST_STEP] - s->start);
    printf("    %-12s %9.1f ms  options, model, target\n", "setup", ca_bench_startup_ms(s, CA_STARTUP_SETUP));
    printf("    %-12s %9.1f ms", "context", ca_bench_startup_ms(s, CA_STARTUP_CONTEXT));
    if (s->gpu)
        printf("  instance %.1f, device %.1f (%u queue%s), pipeline cache %.1f (%s", s->instance_ms, s->device_ms,
               s->queues, s->queues == 1 ? "" : "s", s->cache_ms, s->cache_state);
    if (s->gpu && s->cache_bytes) printf(", %zu bytes read", s->cache_bytes);
    printf("%s\n", s->gpu ? ")" : "  (the CPU engine: no Vulkan context)");
    if (s->gpu) {
        printf("    %-12s %9.1f ms  %u made, %u in engine init, %u in the first step", "pipelines",
               ca_bench_startup_pipelines_ms(s), made, in_engine, made - in_engine);
        if (strcmp(s->cache_state, "off") == 0) printf("; no pipeline cache\n");
        else if (s->cache_feedback) printf("; %u found in the cache\n", s->cache_hits[CA_STARTUP_FIRST_STEP]);
        else printf("; the driver does not say which were cached\n");
    }
    printf("    %-12s %9.1f ms  plan, buffers, tables, uploads (without its pipelines)", "engine init",
           ca_bench_startup_ms(s, CA_STARTUP_ENGINE));
    if (s->gpu)
        printf("; %llu queue submissions", (unsigned long long)(s->submissions[CA_STARTUP_ENGINE] -
                                                                s->submissions[CA_STARTUP_CONTEXT]));
    printf("\n");
    printf("    %-12s %9.1f ms  (without its pipelines)\n", "first step", ca_bench_startup_ms(s, CA_STARTUP_FIRST_STEP));
}

static void print_spread(const char *name, const ca_bench_spread *s)
{
    printf("  %-20s %11.3f %11.3f %11.3f %11.3f %11.3f\n", name, s->median, s->p10, s->p90, s->min, s->max);
}

/* --kernels: the step's dispatches in order, then each kernel's total a step. */
static void print_kernels(const ca_bench_result *r)
{
    if (r->kernel_count < 0) printf("  kernels: the steps recorded different dispatches; no timeline\n");
    if (r->kernel_count <= 0) return;
    double total = 0.0;
    printf("  timeline of a step (us, median; from the timestamp before: barrier and run)%s\n",
           r->kernel_count == CA_BENCH_KERNELS_MAX ? ", its first dispatches" : "");
    for (int k = 0; k < r->kernel_count; k++) {
        printf("    %3d  %-40s %9.2f\n", k + 1, r->kernel_names[k], r->kernel_us[k]);
        total += r->kernel_us[k];
    }
    printf("    sum  %-40s %9.2f\n", "", total);
}

static void print_train(const train_report *t)
{
    const ca_bench_result *r = &t->result;
    const ca_config *c = t->config;
    const bench_machine *m = t->machine;
    printf("dlca bench: %s on %s%s%s\n", c->preset, m->device, m->driver ? ", " : " (CPU engine)",
           m->driver ? m->driver : "");
    printf("  %dx%d grid x batch %d = %zu cells, C %d, T %d%s; %zu model gates, %zu gate evaluations per cell "
           "and CA step\n",
           c->height, c->width, c->batch, r->cells, c->channels, c->steps,
           t->backend != CA_BACKEND_GPU ? ""
           : r->fused                   ? ", fused kernels"
           : t->options->cache == CA_CACHE_FULL ? ", per-layer kernels, cache full"
                                                : ", per-layer kernels, cache checkpoint",
           r->model_gates, r->evals_per_cell);
    printf("  %d measured steps after %d warm-up; each step evaluates 2 x %.4g gates (forward + backward)\n\n",
           r->steps, r->warmup, r->forward_evals);
    printf("  %-20s %11s %11s %11s %11s %11s\n", "ms per step", "median", "p10", "p90", "min", "max");
    print_spread("wall clock", &r->wall_ms);
    if (r->has_gpu_times) {
        print_spread("GPU", &r->gpu_ms);
        print_spread("  forward", &r->forward_ms);
        print_spread("  loss", &r->loss_ms);
        print_spread("  backward", &r->backward_ms);
        print_spread("  optimizer", &r->optimizer_ms);
    } else if (t->backend == CA_BACKEND_GPU) {
        printf("  (this queue has no timestamps: no GPU times)\n");
    }
    printf("\n  gate evals/s: %.4g by wall clock", ca_bench_evals_per_second(r, r->wall_ms.median));
    if (r->has_gpu_times)
        printf(", %.4g by GPU time (forward %.4g, backward %.4g)", ca_bench_evals_per_second(r, r->gpu_ms.median),
               0.5 * ca_bench_evals_per_second(r, r->forward_ms.median),
               0.5 * ca_bench_evals_per_second(r, r->backward_ms.median));
    printf("\n");
    if (t->backend != CA_BACKEND_GPU) return;
    printf("  per step: %.4g dispatches, %.4g queue submissions%s\n", r->dispatches_per_step, r->submissions_per_step,
           r->submissions_per_step > 1.0 ? " (one is the recorded step; the rest are synchronous transfers)" : "");
    printf("  device memory: peak %.2f MiB (engine buffers %.2f MiB)\n", (double)r->peak_device_bytes / 1048576.0,
           (double)r->engine_device_bytes / 1048576.0);
    printf("  plan: %s\n", r->plan);
    if (r->persistent)
        printf("  persistent kernels: every CA step of the forward, and of BPTT where it fits, in one dispatch\n");
    else if (r->persistent_gave_up)
        printf("  persistent kernels: the device could not run %u workgroups at once; one dispatch a CA step\n",
               r->persistent_gave_up);
    print_kernels(r);
}

static void print_report(const train_report *t)
{
    print_train(t);
    print_startup(&t->startup);
}

/* Everything the training bench allocates, freed in one place. */
typedef struct {
    ca_model model;
    ca_target_image target;
    double *image;
    vk_context vk;
    ca_backend backend;
    ca_trainer trainer;
} train_setup;

int cmd_bench_config(const bench_options *o, const char *assets, ca_config *c, ca_target_image *target, double **image)
{
    if (ca_config_preset(c, o->preset)) return DLCA_ERR;
    if (o->has_batch) c->batch = (int)o->batch;
    if (o->has_T) c->steps = (int)o->T;
    if (o->perception_wiring &&
        ca_config_key_find("perception-wiring")->parse(c, o->perception_wiring, "--perception-wiring"))
        return DLCA_ERR;
    char path[4096];
    const char *picture = ca_target_default_path(c, assets, path, sizeof path);
    if (picture && ca_target_load_png(c, picture, target)) return DLCA_ERR;
    if (target->bits && !(*image = ca_target_values(target)))
        return err_set(DLCA_ERR_NOMEM, "out of memory for the target");
    return DLCA_OK;
}

static int setup_model(train_setup *s, const bench_options *o, const char *assets)
{
    ca_config c;
    if (cmd_bench_config(o, assets, &c, &s->target, &s->image)) return DLCA_ERR;
    return ca_model_init(&s->model, &c);
}

static void setup_free(train_setup *s)
{
    ca_trainer_free(&s->trainer);
    if (s->backend == CA_BACKEND_GPU) vk_context_free(&s->vk);
    ca_model_free(&s->model), ca_target_image_free(&s->target);
    free(s->image);
}

/* `start`: the command's start (ca_bench_now_ms), where the start-up report begins. */
static int bench_train(const bench_options *o, double start)
{
    train_setup s;
    bench_machine machine;
    memset(&s, 0, sizeof s);
    train_report report = {o, &machine, &s.model.config, CA_BACKEND_CPU, {.start = start}, {0}};
    ca_bench_startup *startup = &report.startup;
    ca_options run;
    int rc = cli_run_options(&run, o->device);
    run.gpu.cache = o->cache;
    if (o->cold) run.vk.pipeline_cache[0] = '\0';
    if (!rc) rc = setup_model(&s, o, run.assets);
    if (!rc) ca_bench_startup_mark(startup, CA_STARTUP_SETUP, NULL);
    if (!rc) rc = ca_backend_open(&run, &s.vk, &s.backend);
    const vk_context *vk = s.backend == CA_BACKEND_GPU ? &s.vk : NULL;
    if (!rc) ca_bench_startup_mark(startup, CA_STARTUP_CONTEXT, vk);
    if (!rc) rc = ca_trainer_init(&s.trainer, &s.model, s.image, s.backend, &s.vk, &run);
    if (!rc) ca_bench_startup_mark(startup, CA_STARTUP_ENGINE, vk);
    if (rc) return setup_free(&s), rc;
    int gpu = s.backend == CA_BACKEND_GPU;
    int steps = o->has_steps ? (int)o->steps : gpu ? 20 : 5, warmup = o->has_warmup ? (int)o->warmup : gpu ? 3 : 1;
    report.backend = s.backend;
    cmd_bench_machine_describe(&machine, s.backend, &s.vk);
    rc = ca_bench_train(&s.trainer, warmup, steps, o->kernels, startup, &report.result);
    if (!rc) print_report(&report);
    if (!rc && o->json) rc = cmd_bench_json_write(o->json, json_train, &report);
    setup_free(&s);
    return rc;
}

/* ---- hard engine bench ---- */

typedef struct {
    const bench_machine *machine;
    const char *model_name;
    int runs, steps;
    hard_stats stats;
    double rate;
    int gpu, batch;             /* gpu: timed hard_gpu on `batch` grids (else hard_cpu on one) */
    hard_bench_gpu_result timed; /* gpu only */
} hard_report;

static void json_hard(cli_json *w, const void *data)
{
    const hard_report *h = data;
    cmd_bench_json_machine(w, h->machine, "hard");
    cli_json_string(w, "model", h->model_name);
    json_number(w, "height", HARD_SIZE, 1);
    json_number(w, "width", HARD_SIZE, 1);
    json_number(w, "runs", h->runs, 1);
    json_number(w, "steps_per_run", h->steps, 1);
    json_number(w, "model_gates", (double)h->stats.model_gates, 1);
    json_number(w, "pruned_gates", (double)h->stats.after.total, 1);
    json_number(w, "cell_updates_per_s", h->rate, 1);
    if (!h->gpu) return;
    const hard_bench_gpu_result *t = &h->timed;
    json_number(w, "batch", h->batch, 1);
    cli_json_string(w, "circuit", t->compiled ? "compiled" : "interpreted");
    json_number(w, "cell_updates_per_s_gpu", t->gpu_rate, t->gpu_rate > 0.0);
    json_number(w, "cell_updates_per_s_wall", t->wall_rate, 1);
    json_number(w, "gpu_ms_per_run_median", t->gpu_ms, t->gpu_rate > 0.0);
    json_number(w, "wall_ms_per_run_median", t->wall_ms, 1);
    json_number(w, "engine_device_bytes", (double)t->engine_bytes, 1);
}

static int load_hard_model(const bench_options *o, ca_model *model)
{
    if (o->hard_model) return ca_file_load(o->hard_model, model, NULL, NULL);
    ca_config c;
    if (ca_config_preset(&c, o->has_preset ? o->preset : "gol") || ca_model_init(model, &c)) return DLCA_ERR;
    hard_bench_random_ops(model, 1); /* a fresh model is all pass-through and prunes to nothing */
    return DLCA_OK;
}

/* The GPU hard engine on HARD_GPU_BATCH (or --batch) grids; `vk` is open on the chosen device. */
static int bench_hard_gpu(const bench_options *o, vk_context *vk, const ca_model *model, hard_report *h)
{
    h->gpu = 1, h->batch = o->has_batch ? (int)o->batch : HARD_GPU_BATCH;
    h->steps = o->has_T ? (int)o->T : HARD_GPU_T;
    printf("dlca bench --hard: %s on %s\n", h->model_name, vk->props.deviceName);
    int rc = hard_bench_gpu(vk, model, h->batch, HARD_SIZE, HARD_SIZE, h->runs, h->steps, HARD_GPU_AUTO, stdout,
                            &h->timed);
    h->rate = h->timed.rate;
    return rc;
}

static int bench_hard(const bench_options *o)
{
    bench_machine machine;
    ca_model model;
    vk_context vk;
    ca_backend backend = CA_BACKEND_CPU;
    memset(&model, 0, sizeof model);
    memset(&vk, 0, sizeof vk);
    ca_options run;
    if (cli_run_options(&run, o->device)) return DLCA_ERR;
    /* The CPU engine unless a device is named: `--device auto` picks a real GPU when there is one. */
    if (o->has_device && strcmp(o->device, "cpu") != 0 && ca_backend_open(&run, &vk, &backend)) return DLCA_ERR;
    if (backend != CA_BACKEND_GPU && o->has_batch)
        return err_set(DLCA_ERR, "--hard --batch N times the GPU hard engine, and --device %s found no GPU", o->device);
    cmd_bench_machine_describe(&machine, backend, &vk);
    machine.engine = backend == CA_BACKEND_GPU ? "hard_gpu" : "hard_cpu";
    char name[128];
    snprintf(name, sizeof name, "%s preset, random two-input ops", o->has_preset ? o->preset : "gol");
    hard_report h = {.machine = &machine, .model_name = o->hard_model ? o->hard_model : name,
                     .runs = o->has_steps ? (int)o->steps : 5, .steps = o->has_T ? (int)o->T : 20, .batch = 1};
    int rc = load_hard_model(o, &model);
    hard_netlist net;
    if (!rc) rc = hard_circuit_build(&net, &model, &h.stats);
    if (!rc) hard_netlist_free(&net);
    if (!rc && backend == CA_BACKEND_GPU) {
        rc = bench_hard_gpu(o, &vk, &model, &h);
    } else if (!rc) {
        printf("dlca bench --hard: %s on %s\n", h.model_name, machine.cpu);
        hard_compiler compiler;
        cli_env_compiler(&compiler.cc, &compiler.tmpdir);
        rc = hard_bench(&model, &compiler, HARD_SIZE, HARD_SIZE, h.runs, h.steps, stdout, &h.rate);
    }
    if (!rc && o->json) rc = cmd_bench_json_write(o->json, json_hard, &h);
    ca_model_free(&model);
    if (backend == CA_BACKEND_GPU) vk_context_free(&vk);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    double start = ca_bench_now_ms(); /* the start-up report counts from here */
    bench_options options;
    int help = 0;
    if (parse_options(argc, argv, &options, &help)) return cli_fail("bench", 1);
    if (help) return print_help(), 0;
    /* The JSON is written after the timing: its path is checked before, and must not be the model. */
    if (options.json && cli_output_not_model(options.json, "--json", options.hard_model)) return cli_fail("bench", 0);
    int rc = options.hard ? bench_hard(&options) : options.population ? cmd_bench_population(&options)
                                                                      : bench_train(&options, start);
    return rc ? cli_fail("bench", 0) : 0;
}
