/* cmd_run.c: `dlca run MODEL`: a rollout of a trained model as an animated GIF, a PNG strip or
 * PNG frames, on any grid size, soft or hard, sync or async, with damage at chosen steps. The
 * GIF's frames and the strip's carry their step numbers; a folder's frames are named by step
 * and left unlabelled, so each is exactly the viewer's screenshot of that step. */
#include "ca_backend.h"
#include "ca_file.h"
#include "ca_memory.h"
#include "ca_runner.h"
#include "ca_task.h"
#include "cli.h"
#include "cli_env.h"
#include "commands.h"
#include "error.h"
#include "ca_run_defaults.h"
#include "image_frame.h"
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

/* What --out names: an animation, a strip, or a folder of frames. */
typedef enum { OUT_GIF, OUT_STRIP, OUT_FOLDER } out_kind;

enum { DEFAULT_STRIP_FRAMES = 10, DEFAULT_FPS = 10 };

typedef struct {
    const char *model, *out, *device;
    int height, width, has_grid, hard, has_rate, scale, view, has_view;
    long long steps, seed, every, fps;
    double fire_rate, max_memory;
    damage_rect damage[MAX_DAMAGE];
    int damage_count;
} run_options;

static void print_help(void)
{
    printf("usage: dlca run MODEL --out FILE.gif|FILE.png|DIR [options]\n"
           "\n"
           "Runs a trained model from its preset's start state and writes the frames.\n"
           "\n"
           "  --out PATH         a .gif gets an animation, a .png the frames side by side, each\n"
           "                     labelled with its step; anything else is a folder that gets one\n"
           "                     unlabelled PNG a frame, named by step: step_00000.png,\n"
           "                     step_00020.png, ... (the viewer's screenshots of those steps)\n"
           "  --grid HxW         grid size (default: the training grid; 64x64 for gol, whose 3x3\n"
           "                     training boards show nothing)\n"
           "  --steps N          CA steps (default: the training T; 64 for gol)\n"
           "  --hard | --soft    the boolean circuit, run bit-packed (default), or the relaxed one\n"
           "  --async RATE       fire rate in (0, 1]; 1 = synchronous (default: as trained)\n"
           "  --damage X,Y,W,H@FROM-TO  zero that rectangle before steps FROM..TO (repeatable); it is\n"
           "                     clipped to the grid, and one wholly outside the grid or after the\n"
           "                     last step is an error\n"
           "  --seed N           start state and fire masks (default 1)\n"
           "  --every K          keep every K-th step's frame, and the last (default: every step for a\n"
           "                     GIF or a folder; for a strip about 10 frames, evenly spaced where the\n"
           "                     steps allow)\n"
           "  --fps N            GIF frames per second, 1..50 (default 10); the last frame stays 1 s\n"
           "  --scale S          pixels per cell (default 8, halved for each doubling of the grid past\n"
           "                     32 cells a side: 4 for 64x64, 2 for 128x128, 1 past that)\n"
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
    else if (strcmp(flag, "--fps") == 0) return cli_int(flag, v, 1, 50, &o->fps);
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
    o->device = NULL, o->hard = 1, o->seed = 1, o->steps = -1, o->scale = 0, o->max_memory = CA_MEMORY_DEFAULT_GIB;
    o->fps = DEFAULT_FPS;
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
    if (!o->out) return err_set(DLCA_ERR, "--out FILE.gif, --out FILE.png or --out DIR is required");
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

static out_kind out_kind_of(const char *out)
{
    if (ends_with(out, ".gif") || ends_with(out, ".GIF")) return OUT_GIF;
    if (ends_with(out, ".png") || ends_with(out, ".PNG")) return OUT_STRIP;
    return OUT_FOLDER;
}

/* The run as its options and the model's defaults (ca_run_defaults.h) make it. */
typedef struct {
    int height, width, steps, every, scale;
    out_kind out;
    image_view view;
} run_plan;

/* Every how many steps a strip keeps a frame: about DEFAULT_STRIP_FRAMES frames, evenly spaced
 * where a divisor of the steps is near (64 steps: every 8th, not every 7th and then step 64). */
static int strip_every(int steps)
{
    int every = (steps + DEFAULT_STRIP_FRAMES - 1) / DEFAULT_STRIP_FRAMES;
    if (every < 1) return 1;
    for (int e = every; e <= 2 * every; e++)
        if (steps % e == 0) return e;
    return every;
}

static void plan_run(const run_options *o, const ca_config *c, run_plan *p)
{
    ca_run_default_grid(c, &p->height, &p->width);
    if (o->has_grid) p->height = o->height, p->width = o->width;
    p->steps = o->steps >= 0 ? (int)o->steps : ca_run_default_steps(c);
    p->out = out_kind_of(o->out);
    p->every = o->every ? (int)o->every : p->out == OUT_STRIP ? strip_every(p->steps) : 1; /* GIF, folder: every step */
    p->scale = o->scale ? o->scale : ca_run_default_scale(p->height, p->width);
    p->view = o->has_view ? (image_view)o->view : c->loss_channels == 3 ? IMAGE_RGB : IMAGE_CHANNEL0;
}

/* Writes each kept frame as DIR/step_NNNNN.png, the width of the last step's number (5 digits at
 * least), so that the names sort in step order. */
static int write_folder(const run_options *o, const run_plan *p, const ca_runner *r, const double *frames,
                        const long long *steps, int kept)
{
    if (mkdir(o->out, 0777) != 0 && errno != EEXIST)
        return err_set(DLCA_ERR, "%s: cannot create the folder: %s", o->out, strerror(errno));
    int digits = snprintf(NULL, 0, "%d", p->steps);
    if (digits < 5) digits = 5;
    for (int f = 0; f < kept; f++) {
        char path[4096];
        int n = snprintf(path, sizeof path, "%s/step_%0*lld.png", o->out, digits, steps[f]);
        if (n < 0 || (size_t)n >= sizeof path) return err_set(DLCA_ERR, "--out %.60s...: the path is too long", o->out);
        if (image_write_frame(path, frames + (size_t)f * r->grid_values, r->view.config.channels, r->shape, 0, p->scale,
                              p->view))
            return DLCA_ERR;
    }
    return DLCA_OK;
}

/* Collects the kept frames, then writes them as an animation, a strip or files in a folder. */
static int rollout(ca_runner *r, const run_options *o, const run_plan *p)
{
    int channels = r->view.config.channels, kept = 0, capacity = kept_frames(p->steps, p->every);
    double *frames = malloc((size_t)capacity * r->grid_values * sizeof(double));
    long long *steps = malloc((size_t)capacity * sizeof *steps);
    int rc = frames && steps ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for %d frames", capacity);
    for (int t = 0; !rc && t <= p->steps; t++) {
        if (t % p->every == 0 || t == p->steps) {
            memcpy(frames + (size_t)kept * r->grid_values, r->grid, r->grid_values * sizeof(double));
            steps[kept++] = t;
        }
        if (t == p->steps) break;
        for (int d = 0; d < o->damage_count; d++)
            if (t >= o->damage[d].from && t <= o->damage[d].to)
                ca_runner_paint(r, o->damage[d].x, o->damage[d].y, o->damage[d].width, o->damage[d].height, 0.0);
        rc = ca_runner_step(r);
    }
    if (!rc && p->out == OUT_GIF)
        rc = image_write_gif(o->out, frames, kept, channels, r->shape, 0, p->scale, p->view, steps,
                             (int)((100 + o->fps / 2) / o->fps));
    else if (!rc && p->out == OUT_STRIP)
        rc = image_write_strip_labelled(o->out, frames, kept, channels, r->shape, 0, p->scale, p->view, steps);
    else if (!rc)
        rc = write_folder(o, p, r, frames, steps, kept);
    if (!rc) printf("%d steps on a %dx%d grid (%s), %d frames -> %s\n", p->steps, r->shape.height, r->shape.width,
                    r->hard ? "hard" : "soft", kept, o->out);
    free(frames);
    free(steps);
    return rc;
}

/* Before anything runs: the pictures must be writable (a --scale 64 strip of a 4096x4096 grid
 * was refused only after the run had taken gigabytes), and the run's host memory -- the runner,
 * the kept frames and the pixels -- must fit --max-memory. */
static int check_run_size(const run_options *o, const run_plan *p, const ca_model *m, ca_backend backend,
                          const vk_context *vk)
{
    ca_shape shape = {1, p->height, p->width, m->config.boundary};
    int kept = kept_frames(p->steps, p->every);
    double pixels;
    if (p->out == OUT_GIF) {
        long long width, height;
        image_gif_frame_size(shape, p->scale, &width, &height);
        if (image_gif_check(o->out, width, height)) return DLCA_ERR;
        pixels = (double)width * height * 4.0; /* the RGB frame and its palette indices */
    } else if (image_strip_check(o->out, p->out == OUT_STRIP ? kept : 1, shape, p->scale, p->out == OUT_STRIP, &pixels)) {
        return DLCA_ERR;
    }
    double frames = (double)kept * (m->config.channels * (double)p->height * p->width * sizeof(double) + 8.0);
    double bytes = ca_memory_runner(m, backend, vk, 1, p->height, p->width, o->hard) + frames + pixels;
    return ca_memory_check(bytes, o->max_memory, "run of %s (a %dx%d grid, %d channels, %d frames kept)", o->model,
                           p->height, p->width, m->config.channels, kept);
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
    run_plan plan;
    plan_run(o, c, &plan);
    int rc = check_damage(o, plan.height, plan.width, plan.steps);
    if (!rc && plan.view == IMAGE_RGB && c->channels < 3)
        rc = err_set(DLCA_ERR, "--view rgb needs 3 channels, the model has %d", c->channels);
    ca_options run;
    if (!rc) rc = cli_run_options(&run, o->device);
    if (!rc) rc = ca_backend_open(&run, &vk, &backend);
    if (!rc) rc = check_run_size(o, &plan, &model, backend, &vk);
    if (!rc) rc = ca_runner_init(&runner, &model, backend, &vk, 1, plan.height, plan.width, o->hard,
                                 o->has_rate ? o->fire_rate : c->fire_rate, (uint64_t)o->seed);
    if (!rc) rc = start_grid(&model, o, &runner);
    if (!rc) rc = rollout(&runner, o, &plan);
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
