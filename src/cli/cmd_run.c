/* cmd_run.c: `dlca run MODEL`: a rollout of a trained model as a PNG strip or frames, on any
 * grid size, soft or hard, sync or async, with damage at chosen steps. */
#include "ca_backend.h"
#include "ca_file.h"
#include "ca_memory.h"
#include "ca_runner.h"
#include "ca_task.h"
#include "cli.h"
#include "cli_env.h"
#include "commands.h"
#include "error.h"
#include "image_png.h"
#include "view_start.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_DAMAGE = 16 };

typedef struct {
    int x, y, width, height, from, to;
} damage_rect;

typedef struct {
    const char *model, *out, *device;
    int height, width, has_grid, hard, has_rate, scale, view, has_view;
    long long steps, seed, every;
    double fire_rate, max_memory;
    damage_rect damage[MAX_DAMAGE];
    int damage_count;
} run_options;

static void print_help(void)
{
    printf("usage: dlca run MODEL --out FILE.png|DIR [options]\n"
           "\n"
           "Runs a trained model from its preset's start state and writes the frames.\n"
           "\n"
           "  --out PATH         a .png gets the frames side by side; anything else is a folder that\n"
           "                     gets frame_00000.png, frame_00001.png, ...\n"
           "  --grid HxW         grid size (default: the training grid)\n"
           "  --steps N          CA steps (default: the training T)\n"
           "  --hard | --soft    the boolean circuit, run bit-packed (default), or the relaxed one\n"
           "  --async RATE       fire rate in (0, 1]; 1 = synchronous (default: as trained)\n"
           "  --damage X,Y,W,H@FROM-TO  zero that rectangle before steps FROM..TO (repeatable); it is\n"
           "                     clipped to the grid, and one wholly outside the grid or after the\n"
           "                     last step is an error\n"
           "  --seed N           start state and fire masks (default 1)\n"
           "  --every K          keep every K-th frame (default: about 20 frames)\n"
           "  --scale S          pixels per cell (default 8)\n"
           "  --view grey|rgb    channel 0 as grey, or channels 0..2 as colour (default: rgb for\n"
           "                     3-channel targets, else grey)\n"
           "  --device D         auto, cpu, or a Vulkan device (default: $DLCA_DEVICE, else auto)\n"
           "  --max-memory GiB   refuse, before starting, a run estimated to need more host memory\n"
           "                     than this: the engine, the kept frames and the pictures (default %g)\n"
           "\n"
           "Pictures are checked before the run: at most 1000000 pixels a side and 2^28 in all.\n",
           CA_MEMORY_DEFAULT_GIB);
}

/* At most 7 characters a number: %d on a longer one overflows (undefined), and so would
 * x + width in ca_runner_paint; 7 keeps every sum far inside int. %n proves nothing follows. */
static int parse_damage(const char *text, damage_rect *d)
{
    int used = -1, more = -1;
    int n = sscanf(text, "%7d,%7d,%7d,%7d@%7d%n-%7d%n", &d->x, &d->y, &d->width, &d->height, &d->from, &used, &d->to,
                   &more);
    int whole = (n == 5 && used >= 0 && text[used] == '\0') || (n == 6 && more >= 0 && text[more] == '\0');
    if (n == 5) d->to = d->from;
    if (!whole || d->width < 1 || d->height < 1 || d->from < 0 || d->to < d->from)
        return err_set(DLCA_ERR, "--damage: '%s' is not X,Y,W,H@FROM-TO (e.g. 22,22,20,20@40-40)", text);
    return DLCA_OK;
}

static int parse_flag(run_options *o, const char *flag, const char *v)
{
    if (strcmp(flag, "--out") == 0) o->out = v;
    else if (strcmp(flag, "--device") == 0) o->device = v;
    else if (strcmp(flag, "--grid") == 0) return o->has_grid = 1, cli_grid(flag, v, CA_MAX_SIDE, &o->height, &o->width);
    else if (strcmp(flag, "--steps") == 0) return cli_int(flag, v, 0, 1000000, &o->steps);
    else if (strcmp(flag, "--seed") == 0) return cli_int(flag, v, 0, INT64_MAX, &o->seed);
    else if (strcmp(flag, "--every") == 0) return cli_int(flag, v, 1, 1000000, &o->every);
    else if (strcmp(flag, "--max-memory") == 0) return cli_double(flag, v, CA_MEMORY_MIN_GIB, CA_MEMORY_MAX_GIB, &o->max_memory);
    else if (strcmp(flag, "--async") == 0) return o->has_rate = 1, cli_double(flag, v, CA_MIN_FIRE_RATE, 1.0, &o->fire_rate);
    else if (strcmp(flag, "--scale") == 0) {
        long long scale;
        if (cli_int(flag, v, 1, 64, &scale)) return DLCA_ERR;
        o->scale = (int)scale;
    } else if (strcmp(flag, "--view") == 0) {
        if (strcmp(v, "grey") && strcmp(v, "rgb")) return err_set(DLCA_ERR, "--view: '%s' is not grey or rgb", v);
        o->has_view = 1, o->view = strcmp(v, "rgb") == 0 ? IMAGE_RGB : IMAGE_CHANNEL0;
    } else if (strcmp(flag, "--damage") == 0) {
        if (o->damage_count == MAX_DAMAGE) return err_set(DLCA_ERR, "--damage: at most %d rectangles", MAX_DAMAGE);
        return parse_damage(v, &o->damage[o->damage_count++]);
    } else return err_set(DLCA_ERR, "unknown option '%s' (see dlca run --help)", flag);
    return DLCA_OK;
}

static int parse_options(int argc, char **argv, run_options *o, int *help)
{
    memset(o, 0, sizeof *o);
    o->device = NULL, o->hard = 1, o->seed = 1, o->steps = -1, o->scale = 8, o->max_memory = CA_MEMORY_DEFAULT_GIB;
    int has_mode = 0;
    for (int i = 1; i < argc; i++) {
        const char *value;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return *help = 1, DLCA_OK;
        if (strcmp(argv[i], "--hard") == 0 || strcmp(argv[i], "--soft") == 0) {
            int hard = strcmp(argv[i], "--hard") == 0;
            if (has_mode && hard != o->hard) return err_set(DLCA_ERR, "--hard and --soft contradict each other: give one");
            o->hard = hard, has_mode = 1;
            continue;
        }
        if (strncmp(argv[i], "--", 2) != 0) {
            if (o->model) return err_set(DLCA_ERR, "unexpected argument '%s' (one MODEL only)", argv[i]);
            o->model = argv[i];
            continue;
        }
        if (cli_value(argc, argv, &i, &value) || parse_flag(o, argv[i - 1], value)) return DLCA_ERR;
    }
    if (!o->model) return err_set(DLCA_ERR, "no MODEL given (see dlca run --help)");
    if (!o->out) return err_set(DLCA_ERR, "--out FILE.png or --out DIR is required");
    return DLCA_OK;
}

/* A damage rectangle that would never touch the run: wholly outside the grid, or from a step
 * the run does not reach. Refused, rather than silently ignored. */
static int check_damage(const run_options *o, int height, int width, int steps)
{
    for (int d = 0; d < o->damage_count; d++) {
        const damage_rect *r = &o->damage[d];
        if (r->x >= width || r->y >= height || r->x + r->width <= 0 || r->y + r->height <= 0)
            return err_set(DLCA_ERR, "--damage %d,%d,%d,%d@%d-%d: the rectangle is outside the %dx%d grid (x 0..%d, y 0..%d)",
                           r->x, r->y, r->width, r->height, r->from, r->to, height, width, width - 1, height - 1);
        if (r->from >= steps)
            return err_set(DLCA_ERR, "--damage %d,%d,%d,%d@%d-%d: the run has %d steps (damage applies before steps 0..%d)",
                           r->x, r->y, r->width, r->height, r->from, r->to, steps, steps - 1);
    }
    return DLCA_OK;
}

/* The preset's start at the run's grid (view_start.h: the viewer shows the same frames). */
static int start_grid(const ca_model *m, const run_options *o, ca_runner *r)
{
    if (view_start_grid(&m->config, (uint64_t)o->seed, r->shape, r->grid)) return DLCA_ERR;
    return ca_runner_grid_changed(r);
}

/* Frames the rollout keeps: every `every`-th step from 0, and the last. */
static int kept_frames(int steps, int every) { return steps / every + 1 + (steps % every != 0); }

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Collects the kept frames, then writes them as one strip or as files in a folder. */
static int rollout(ca_runner *r, const run_options *o, int steps, int every, image_view view)
{
    int channels = r->view.config.channels, kept = 0, capacity = kept_frames(steps, every);
    double *frames = malloc((size_t)capacity * r->grid_values * sizeof(double));
    if (!frames) return err_set(DLCA_ERR_NOMEM, "out of memory for %d frames", capacity);
    int rc = DLCA_OK;
    for (int t = 0; !rc && t <= steps; t++) {
        if (t % every == 0 || t == steps)
            memcpy(frames + (size_t)kept++ * r->grid_values, r->grid, r->grid_values * sizeof(double));
        if (t == steps) break;
        for (int d = 0; d < o->damage_count; d++)
            if (t >= o->damage[d].from && t <= o->damage[d].to)
                ca_runner_paint(r, o->damage[d].x, o->damage[d].y, o->damage[d].width, o->damage[d].height, 0.0);
        rc = ca_runner_step(r);
    }
    if (!rc && ends_with(o->out, ".png")) {
        rc = image_write_strip(o->out, frames, kept, channels, r->shape, 0, o->scale, view);
    } else if (!rc) {
        if (mkdir(o->out, 0777) != 0 && errno != EEXIST)
            rc = err_set(DLCA_ERR, "%s: cannot create the folder: %s", o->out, strerror(errno));
        for (int f = 0; !rc && f < kept; f++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/frame_%05d.png", o->out, f);
            rc = image_write_frame(path, frames + (size_t)f * r->grid_values, channels, r->shape, 0, o->scale, view);
        }
    }
    if (!rc) printf("%d steps on a %dx%d grid (%s), %d frames -> %s\n", steps, r->shape.height, r->shape.width,
                    r->hard ? "hard" : "soft", kept, o->out);
    free(frames);
    return rc;
}

/* Before anything runs: the pictures must be writable (a --scale 64 strip of a 4096x4096 grid
 * was refused only after the run had taken gigabytes), and the run's host memory -- the runner,
 * the kept frames and the pixels -- must fit --max-memory. */
static int check_run_size(const run_options *o, const ca_model *m, ca_backend backend, const vk_context *vk,
                          int height, int width, int steps, int every)
{
    ca_shape shape = {1, height, width, m->config.boundary};
    int kept = kept_frames(steps, every), strip = ends_with(o->out, ".png");
    double pixels;
    if (image_strip_check(o->out, strip ? kept : 1, shape, o->scale, &pixels)) return DLCA_ERR;
    double frames = (double)kept * m->config.channels * height * width * sizeof(double);
    double bytes = ca_memory_runner(m, backend, vk, 1, height, width, o->hard) + frames + pixels;
    return ca_memory_check(bytes, o->max_memory, "run of %s (a %dx%d grid, %d channels, %d frames kept)", o->model,
                           height, width, m->config.channels, kept);
}

static int run(const run_options *o)
{
    ca_model model;
    vk_context vk;
    ca_backend backend = CA_BACKEND_CPU;
    ca_runner runner;
    memset(&runner, 0, sizeof runner);
    if (ca_file_load(o->model, &model, NULL, NULL)) return DLCA_ERR;
    const ca_config *c = &model.config;
    int height = o->has_grid ? o->height : c->height, width = o->has_grid ? o->width : c->width;
    int steps = o->steps >= 0 ? (int)o->steps : c->steps;
    int every = o->every ? (int)o->every : (steps + 19) / 20 > 0 ? (steps + 19) / 20 : 1;
    image_view view = o->has_view ? (image_view)o->view : c->loss_channels == 3 ? IMAGE_RGB : IMAGE_CHANNEL0;
    int rc = check_damage(o, height, width, steps);
    if (!rc && view == IMAGE_RGB && c->channels < 3)
        rc = err_set(DLCA_ERR, "--view rgb needs 3 channels, the model has %d", c->channels);
    ca_options run;
    if (!rc) rc = cli_run_options(&run, o->device);
    if (!rc) rc = ca_backend_open(&run, &vk, &backend);
    if (!rc) rc = check_run_size(o, &model, backend, &vk, height, width, steps, every);
    if (!rc) rc = ca_runner_init(&runner, &model, backend, &vk, 1, height, width, o->hard,
                                 o->has_rate ? o->fire_rate : c->fire_rate, (uint64_t)o->seed);
    if (!rc) rc = start_grid(&model, o, &runner);
    if (!rc) rc = rollout(&runner, o, steps, every, view);
    ca_runner_free(&runner);
    if (backend == CA_BACKEND_GPU) vk_context_free(&vk);
    ca_model_free(&model);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    run_options options;
    int help = 0;
    if (parse_options(argc, argv, &options, &help)) return cli_fail("run", 1);
    if (help) return print_help(), 0;
    return run(&options) ? cli_fail("run", 0) : 0;
}
