/* test_viewer: dlca-view run headless from scripts, as CI runs it. Its screenshots must equal,
 * pixel for pixel, the frames `dlca run` writes for the same model, grid, seed, steps and damage
 * (hard and soft, sync and async), and the engine's own rollout where `dlca run` has no flag for
 * it (painting cells, switching hard to soft). Reset, channel views, window resizing, automatic
 * screenshot names and bad input (one line on stderr, non-zero exit) are checked too. A recording
 * (--record, key g) has the frames of `dlca run --out F.gif`, and without --headless and without
 * a usable display the viewer says so in one line and exits 1 instead of running unseen. The
 * status line marks step T and counts the grid's wrong bits against the model's target.
 * The viewer is found beside this test, in viewer/; without it (DLCA_BUILD_VIEWER=OFF) the test
 * is skipped (exit 77). */
#include "ca_file.h"
#include "ca_fixtures.h"
#include "ca_runner.h"
#include "check.h"
#include "error.h"
#include "gif_fixtures.h"
#include "image_png.h"
#include "view_start.h"

#include <libgen.h>
#include <limits.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { H = 20, W = 28, SCALE = 3, SEED = 5 };

/* view_image.h's mosaic gap colour (the test does not include viewer headers). */
static const unsigned char view_gap_rgb[3] = {48, 80, 140};

static char viewer[1024], dlca[1024], scratch[256], model[512];

/* Runs `program args`, stdout and stderr captured (stderr into `err`); returns the exit status. */
static int run(const char *program, char *err, size_t err_size, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
static int run(const char *program, char *err, size_t err_size, const char *format, ...)
{
    char args[4096], command[8192], err_path[512];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", scratch);
    snprintf(command, sizeof command, "cd '%s' && '%s' %s > '%s/stdout.txt' 2> '%s'", scratch, program, args, scratch,
             err_path);
    int status = system(command);
    err[0] = '\0';
    FILE *f = fopen(err_path, "r");
    if (f) {
        size_t n = fread(err, 1, err_size - 1, f);
        err[n] = '\0';
        fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* An 8-bit RGB picture read with libpng. */
typedef struct {
    int width, height;
    unsigned char *rgb;
} picture;

static picture read_png(const char *name)
{
    picture p = {0, 0, NULL};
    char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, path)) return p;
    image.format = PNG_FORMAT_RGB;
    p.rgb = malloc(PNG_IMAGE_SIZE(image));
    if (!p.rgb || !png_image_finish_read(&image, NULL, p.rgb, 0, NULL)) {
        png_image_free(&image);
        free(p.rgb);
        p.rgb = NULL;
        return p;
    }
    p.width = (int)image.width, p.height = (int)image.height;
    return p;
}

/* Are the two PNGs in the scratch folder the same picture? `loud`: print the first difference. */
static int same_png_loud(const char *a_name, const char *b_name, int loud)
{
    picture a = read_png(a_name), b = read_png(b_name);
    int same = a.rgb && b.rgb && a.width == b.width && a.height == b.height;
    if (!a.rgb || !b.rgb) fprintf(stderr, "  cannot read %s or %s\n", a_name, b_name);
    else if (!same) fprintf(stderr, "  %s is %dx%d, %s %dx%d\n", a_name, a.width, a.height, b_name, b.width, b.height);
    for (size_t i = 0; same && i < (size_t)a.width * (size_t)a.height * 3; i++)
        if (a.rgb[i] != b.rgb[i]) {
            size_t pixel = i / 3;
            if (loud)
                fprintf(stderr, "  first difference at pixel (%zu, %zu): %d vs %d\n", pixel % (size_t)a.width,
                    pixel / (size_t)a.width, a.rgb[i], b.rgb[i]);
            same = 0;
        }
    free(a.rgb), free(b.rgb);
    return same;
}

static int same_png(const char *a_name, const char *b_name) { return same_png_loud(a_name, b_name, 1); }

/* Number of distinct grey levels in channel R of a PNG: a picture of one colour shows nothing. */
static int colours(const char *name)
{
    picture p = read_png(name);
    int seen[256] = {0}, n = 0;
    for (size_t i = 0; p.rgb && i < (size_t)p.width * (size_t)p.height; i++) n += !seen[p.rgb[i * 3]]++;
    free(p.rgb);
    return n;
}

/* A small model whose gates each lean to one of a few ops (logit 5 against noise in [-1, 1)):
 * mostly XOR and XNOR, which keep a random grid changing, so a frame shows structure and a
 * difference in damage or fire masks shows in it. The checkerboard-async preset's rate (0.6)
 * makes the fire masks matter. */
static int make_model(void)
{
    static const int ops[] = {GATE_XOR, GATE_XNOR, GATE_XOR, GATE_A, GATE_B, GATE_OR, GATE_AND};
    ca_config c;
    if (ca_config_preset(&c, "checkerboard-async")) return DLCA_ERR;
    c.kernels = 4, c.update_depth = 4;
    int widths[4] = {64, 32, 16, 8};
    memcpy(c.update_widths, widths, sizeof widths);
    c.height = H, c.width = W, c.seed = 11;
    /* the wiring these ops were picked with: its soft frames never flatten */
    c.perception_wiring = CA_PERCEPTION_SHARED;
    ca_model m;
    if (ca_model_init(&m, &c)) return DLCA_ERR;
    rng_state rng;
    rng_init(&rng, 3, 0);
    for (size_t g = 0; g < m.gate_count; g++) {
        float *z = m.logits + g * GATE_OP_COUNT;
        for (int i = 0; i < GATE_OP_COUNT; i++) z[i] = (float)(2.0 * rng_uniform(&rng) - 1.0);
        z[ops[rng_below(&rng, sizeof ops / sizeof ops[0])]] += 5.0f;
    }
    snprintf(model, sizeof model, "%s/model.dlca", scratch);
    int rc = ca_file_save(model, &m, NULL, NULL);
    ca_model_free(&m);
    return rc;
}

/* The viewer headless on the test model with `keys`, common flags first. */
static int view(char *err, size_t size, const char *flags, const char *keys)
{
    return run(viewer, err, size, "'%s' --headless --device cpu --grid %dx%d --scale %d --seed %d %s --keys '%s'",
               model, H, W, SCALE, SEED, flags, keys);
}

/* `dlca run` of the test model for `steps` steps, its last frame (named by its step) renamed to
 * `name`. */
static int dlca_run(char *err, size_t size, const char *flags, int steps, const char *name)
{
    int status = run(dlca, err, size, "run '%s' --device cpu --grid %dx%d --scale %d --seed %d --steps %d --every %d %s --out frames",
                     model, H, W, SCALE, SEED, steps, steps, flags);
    char from[512], to[512];
    snprintf(from, sizeof from, "%s/frames/step_%05d.png", scratch, steps);
    snprintf(to, sizeof to, "%s/%s", scratch, name);
    if (status == 0 && rename(from, to) != 0) return 99;
    return status;
}

/* A drag from (4,8) to (12,8) with the 3x3 brush erases x 3..13, y 7..9: --damage 3,7,11,3. */
static void test_matches_dlca_run(const char *mode, const char *rate)
{
    char err[4096], flags[128];
    snprintf(flags, sizeof flags, "%s %s", mode, rate);
    int v = view(err, sizeof err, flags, "step 7; drag 4,8-12,8; step 5; screenshot view.png; quit");
    CHECK(v == 0, "viewer %s exits 0: %s", flags, err);
    char run_flags[256];
    snprintf(run_flags, sizeof run_flags, "%s %s --damage 3,7,11,3@7-7", mode, rate);
    int r = dlca_run(err, sizeof err, run_flags, 12, "run.png");
    int u = dlca_run(err, sizeof err, flags, 12, "undamaged.png");
    CHECK(r == 0 && u == 0, "dlca run %s exits 0 (%d %d): %s", flags, r, u, err);
    CHECK(same_png("view.png", "run.png"), "%s: the viewer's step 12 after a drag equals dlca run --damage", flags);
    CHECK(!same_png_loud("view.png", "undamaged.png", 0), "%s: the drag changed the grid (else the check above is void)", flags);
    CHECK(colours("view.png") > 1, "%s: the frame is not one flat colour", flags);
}

/* `dlca run` cannot set cells or switch engines mid-run: compare those with ca_runner itself. */
typedef struct {
    ca_model model;
    ca_runner runner;
} engine_run;

static int engine_start(engine_run *e, int hard, uint64_t t, const double *grid)
{
    if (ca_runner_init(&e->runner, &e->model, CA_BACKEND_CPU, NULL, 1, H, W, hard, e->model.config.fire_rate, SEED))
        return DLCA_ERR;
    e->runner.t = t;
    if (grid) memcpy(e->runner.grid, grid, e->runner.grid_values * sizeof(double));
    else if (view_start_grid(&e->model.config, SEED, e->runner.shape, e->runner.grid)) return DLCA_ERR;
    return ca_runner_grid_changed(&e->runner);
}

static int engine_steps(engine_run *e, int steps)
{
    for (int i = 0; i < steps; i++)
        if (ca_runner_step(&e->runner)) return DLCA_ERR;
    return DLCA_OK;
}

static int engine_frame(engine_run *e, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    return image_write_frame(path, e->runner.grid, e->model.config.channels, e->runner.shape, 0, SCALE, IMAGE_CHANNEL0);
}

/* Hard 6 steps, a right-drag setting x 9..11, y 1..13, 6 more steps, switch to soft, 5 more. */
static void test_matches_engine(void)
{
    char err[4096];
    int v = view(err, sizeof err, "", "step 6; paint 10,2-10,12; step 6; key h; step 5; screenshot view.png");
    CHECK(v == 0, "viewer exits 0: %s", err);
    engine_run e;
    memset(&e, 0, sizeof e);
    int rc = ca_file_load(model, &e.model, NULL, NULL);
    if (!rc) rc = engine_start(&e, 1, 0, NULL);
    if (!rc) rc = engine_steps(&e, 6);
    if (!rc) ca_runner_paint(&e.runner, 9, 1, 3, 13, 1.0), rc = engine_steps(&e, 6);
    double *grid = rc ? NULL : malloc(e.runner.grid_values * sizeof(double));
    if (grid) memcpy(grid, e.runner.grid, e.runner.grid_values * sizeof(double));
    ca_runner_free(&e.runner);
    if (!rc) rc = grid ? engine_start(&e, 0, 12, grid) : DLCA_ERR;
    if (!rc) rc = engine_steps(&e, 5);
    if (!rc) rc = engine_frame(&e, "engine.png");
    CHECK(rc == 0, "the engine's rollout runs: %s", err_message());
    CHECK(same_png("view.png", "engine.png"), "paint and hard-to-soft equal ca_runner's rollout");
    CHECK(colours("view.png") > 2, "the soft frame has grey levels");
    free(grid);
    ca_runner_free(&e.runner);
    ca_model_free(&e.model);
}

/* Do cells (x, y) of a picture at `scale` match cells (x + left, y + top) of one at `other_scale`? */
static int same_cells(const picture *a, int scale, const picture *b, int other_scale, int left, int top)
{
    if (!a->rgb || !b->rgb || a->width < W * scale || b->width < (W + left) * other_scale) return 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const unsigned char *p = a->rgb + ((size_t)(y * scale) * (size_t)a->width + (size_t)(x * scale)) * 3;
            const unsigned char *q =
                b->rgb + ((size_t)((y + top) * other_scale) * (size_t)b->width + (size_t)((x + left) * other_scale)) * 3;
            if (memcmp(p, q, 3) != 0) return 0;
        }
    return 1;
}

static void test_reset_views_resize(void)
{
    char err[4096];
    int v = view(err, sizeof err, "--async 1",
                 "step 9; drag 0,0-20,20; key r; step 4; screenshot reset.png; key r; step 4; screenshot fresh.png;"
                 "key c; screenshot rgb.png; key c; resize 400x400; screenshot mosaic.png; key c; screenshot big.png;"
                 "quit");
    CHECK(v == 0, "viewer exits 0: %s", err);
    CHECK(same_png("reset.png", "fresh.png"), "r goes back to the start state and step 0");
    int r = dlca_run(err, sizeof err, "--async 1 --view rgb", 4, "run_rgb.png");
    CHECK(r == 0, "dlca run --view rgb exits 0: %s", err);
    CHECK(same_png("rgb.png", "run_rgb.png"), "c shows channels 0..2 as dlca run --view rgb does");
    picture fresh = read_png("fresh.png"), mosaic = read_png("mosaic.png"), big = read_png("big.png");
    /* 8 channels: 3 x 3 tiles 1 cell apart, (3W+2) x (3H+2) = 86 x 62 cells, fit in 400x400: 4 pixels */
    int s = 4;
    CHECK(mosaic.width == (3 * W + 2) * s && mosaic.height == (3 * H + 2) * s, "mosaic of 3x3 tiles (%dx%d)",
          mosaic.width, mosaic.height);
    CHECK(same_cells(&fresh, SCALE, &mosaic, s, 0, 0), "the mosaic's first tile is channel 0");
    CHECK(mosaic.rgb && mosaic.width > W * s && memcmp(mosaic.rgb + (size_t)W * s * 3, view_gap_rgb, 3) == 0,
          "tiles are separated by the gap colour");
    /* back to grey: 400x400 fits 28 x 20 cells at 14 pixels, and the screenshot follows */
    CHECK(big.width == W * 14 && big.height == H * 14, "resized: %dx%d", big.width, big.height);
    CHECK(same_cells(&fresh, SCALE, &big, 14, 0, 0), "c cycles grey, rgb, mosaic and back to grey");
    free(fresh.rgb), free(mosaic.rgb), free(big.rgb);
}

static void test_screenshot_names(void)
{
    char err[4096], path[512];
    snprintf(path, sizeof path, "%s/shots", scratch);
    mkdir(path, 0777);
    int v = view(err, sizeof err, "--screenshot-dir shots", "key s; step; key s");
    CHECK(v == 0, "viewer exits 0 at the end of a headless script: %s", err);
    snprintf(path, sizeof path, "%s/shots/dlca-view-0000.png", scratch);
    CHECK(exists(path), "key s saves dlca-view-0000.png");
    snprintf(path, sizeof path, "%s/shots/dlca-view-0001.png", scratch);
    CHECK(exists(path), "the next one is dlca-view-0001.png");
}

/* Frames i of two decoded GIFs: the same size and pixels? */
static int same_gif_frame(const GifFileType *a, int i, const GifFileType *b, int j)
{
    if (a->SWidth != b->SWidth || a->SHeight != b->SHeight || i >= a->ImageCount || j >= b->ImageCount) return 0;
    unsigned char *p = gif_frame_rgb(a, i), *q = gif_frame_rgb(b, j);
    int same = p && q && memcmp(p, q, (size_t)a->SWidth * (size_t)a->SHeight * 3) == 0;
    free(p), free(q);
    return same;
}

/* --record from the start, g stops it after step 5, g starts dlca-view-0000.gif at step 7, which
 * the end of the script saves. The first has dlca run's GIF frames of steps 0..5. */
static void test_record(void)
{
    char err[4096], path[512];
    int v = view(err, sizeof err, "--record rec.gif", "step 5; key g; step 2; key g; step 3");
    CHECK(v == 0, "viewer --record exits 0: %s", err);
    int r = run(dlca, err, sizeof err, "run '%s' --device cpu --grid %dx%d --scale %d --seed %d --steps 5 --out run.gif",
                model, H, W, SCALE, SEED);
    CHECK(r == 0, "dlca run --out run.gif exits 0: %s", err);
    const char *why;
    snprintf(path, sizeof path, "%s/rec.gif", scratch);
    GifFileType *rec = gif_read(path, &why);
    CHECK(rec != NULL, "rec.gif decodes: %s", why);
    snprintf(path, sizeof path, "%s/run.gif", scratch);
    GifFileType *ran = gif_read(path, &why);
    CHECK(ran != NULL, "run.gif decodes: %s", why);
    int band = image_label_height(W * SCALE);
    if (rec && ran) {
        CHECK(rec->ImageCount == 6 && rec->SWidth == W * SCALE && rec->SHeight == H * SCALE + band,
              "rec.gif: 6 frames (steps 0..5) of %dx%d (%d of %dx%d)", W * SCALE, H * SCALE + band, rec->ImageCount,
              rec->SWidth, rec->SHeight);
        int same = rec->ImageCount == ran->ImageCount;
        for (int i = 0; same && i < rec->ImageCount; i++) same = same_gif_frame(rec, i, ran, i);
        CHECK(same, "the recording's frames are dlca run --out F.gif's, step labels included");
    }
    snprintf(path, sizeof path, "%s/dlca-view-0000.gif", scratch);
    GifFileType *second = gif_read(path, &why);
    CHECK(second != NULL, "key g's recording is saved as dlca-view-0000.gif: %s", why);
    if (second) {
        unsigned char *first = second->ImageCount > 0 ? gif_frame_rgb(second, 0) : NULL;
        CHECK(second->ImageCount == 4, "it holds steps 7..10 (%d frames)", second->ImageCount);
        CHECK(gif_label_matches(first, second->SWidth, 0, second->SWidth, 7), "its first frame is labelled step 7");
        free(first);
    }
    int error;
    if (rec) DGifCloseFile(rec, &error);
    if (ran) DGifCloseFile(ran, &error);
    if (second) DGifCloseFile(second, &error);
}

/* Without --headless and without a display: one line that says so and what to do, exit 1, no hang. */
static void test_no_display(void)
{
    static const char *const environments[] = {"", "DISPLAY=:4711"};
    for (size_t i = 0; i < sizeof environments / sizeof environments[0]; i++) {
        char err[4096], args[2048];
        /* LSan would list the libdbus suppression (tests/lsan.supp) that SDL's X11 attempt needs */
        snprintf(args, sizeof args, "%s LSAN_OPTIONS=\"${LSAN_OPTIONS:-}:print_suppressions=0\" timeout 60 '%s' '%s' --device cpu",
                 environments[i], viewer, model);
        int status = run("env", err, sizeof err, "%s", args);
        size_t lines = 0;
        for (const char *p = err; *p; p++) lines += *p == '\n';
        CHECK(status == 1, "'%s' exits 1 (got %d; 124 is a hang)", args, status);
        CHECK(lines == 1 && strstr(err, "dlca-view: no display (DISPLAY/WAYLAND_DISPLAY unset or unusable") &&
                  strstr(err, "--headless"),
              "'%s' says in one line that there is no display and to use --headless: %s", args, err);
    }
}

/* A refusal: status `want`, one line on stderr that names `needle`. */
static void expect_refused(int want, const char *needle, const char *args)
{
    char err[4096];
    int status = run(viewer, err, sizeof err, "%s", args);
    size_t lines = 0;
    for (const char *p = err; *p; p++) lines += *p == '\n';
    CHECK(status == want, "'%s' exits %d (got %d)", args, want, status);
    CHECK(lines == 1, "'%s' prints one line, got %zu: %s", args, lines, err);
    CHECK(strstr(err, needle) != NULL, "'%s': message '%s' names '%s'", args, err, needle);
}

static void test_bad_input(void)
{
    char args[1024], garbage[512];
    snprintf(garbage, sizeof garbage, "%s/garbage.dlca", scratch);
    FILE *f = fopen(garbage, "w");
    if (f) fputs("not a model", f), fclose(f);
    expect_refused(1, "missing.dlca", "missing.dlca --headless");
    expect_refused(1, "missing.dlca", "missing.dlca"); /* no display here: no message box either */
    snprintf(args, sizeof args, "'%s' --headless", garbage);
    expect_refused(1, "garbage.dlca", args);
    expect_refused(2, "--bogus", "--bogus 1");
    expect_refused(2, "--grid", "--grid 0x4 --headless");
    snprintf(args, sizeof args, "'%s' --headless --keys 'step 2; jump 3'", model);
    expect_refused(1, "jump", args);
    snprintf(args, sizeof args, "'%s' --headless --keys 'drag 1,2'", model);
    expect_refused(1, "X0,Y0-X1,Y1", args);
    snprintf(args, sizeof args, "'%s' --headless --script nothing.txt", model);
    expect_refused(1, "nothing.txt", args);
    snprintf(args, sizeof args, "'%s' --headless --record no/such/folder.gif --keys 'step 1'", model);
    expect_refused(1, "no/such/folder.gif", args);
    snprintf(args, sizeof args, "'%s' --headless --keys 'key x'", model);
    expect_refused(1, "space right r h a c g + - s ? q esc", args);
    expect_refused(1, "DLCA_ASSETS", "--headless"); /* DLCA_ASSETS points at an empty folder */
}

/* Line `n` (from 0) of the viewer's stdout, or "" */
static void stdout_line(int n, char *line, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/stdout.txt", scratch);
    line[0] = '\0';
    FILE *f = fopen(path, "r");
    for (int i = 0; f && i <= n; i++)
        if (!fgets(line, (int)size, f)) line[0] = '\0';
    if (f) fclose(f);
    line[strcspn(line, "\n")] = '\0';
}

/* The status line (script command `status`) against the model's target. The test model's
 * checkerboard on the 20x28 grid: at step 0 the wrong bits of its start, counted here from the
 * start grid, and "(T)" at step T only. The shipped image model: at step 0 (an all-zero start)
 * every set bit of its picture is wrong, and at T its circuit is exact (dlca eval checks it). */
static void test_target_status(void)
{
    char err[4096], line[512], want[128];
    ca_model m;
    if (ca_file_load(model, &m, NULL, NULL)) {
        CHECK(0, "the test model: %s", err_message());
        return;
    }
    ca_shape shape = {1, H, W, m.config.boundary};
    size_t cells = (size_t)H * W;
    double *start = malloc((size_t)m.config.channels * cells * sizeof *start);
    long wrong = 0;
    int steps = m.config.steps;
    if (start && view_start_grid(&m.config, SEED, shape, start) == DLCA_OK)
        for (size_t cell = 0; cell < cells; cell++)
            wrong += (start[cell] >= 0.5) != (int)((cell / W / 2 + cell % W / 2) & 1);
    free(start), ca_model_free(&m);
    char keys[128];
    snprintf(keys, sizeof keys, "status; step %d; status; step; status; quit", steps);
    int status = view(err, sizeof err, "--hard", keys);
    CHECK(status == 0, "status lines: %s", err);
    snprintf(want, sizeof want, "step 0  %ld wrong  ", wrong);
    stdout_line(0, line, sizeof line);
    CHECK(wrong > 0 && strncmp(line, want, strlen(want)) == 0, "the start against the checkerboard: '%s' (want '%s')",
          line, want);
    snprintf(want, sizeof want, "step %d (T)  ", steps);
    stdout_line(1, line, sizeof line);
    CHECK(strncmp(line, want, strlen(want)) == 0, "step T is marked: '%s'", line);
    stdout_line(2, line, sizeof line);
    snprintf(want, sizeof want, "step %d  ", steps + 1);
    CHECK(strncmp(line, want, strlen(want)) == 0 && !strstr(line, "(T)"), "the next is not: '%s'", line);

    char image[1024];
    const char *slash = strrchr(__FILE__, '/');
    snprintf(image, sizeof image, "%.*s../assets/models/image.dlca", slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__);
    ca_target_image target;
    if (ca_file_load(image, &m, NULL, &target)) {
        CHECK(0, "the shipped image model: %s", err_message());
        return;
    }
    long ones = 0;
    for (size_t i = 0; target.bits && i < (size_t)target.channels * target.height * target.width; i++)
        ones += target.bits[i] != 0;
    steps = m.config.steps;
    ca_model_free(&m), ca_target_image_free(&target);
    snprintf(keys, sizeof keys, "status; step %d; status; quit", steps);
    status = run(viewer, err, sizeof err, "'%s' --headless --device cpu --keys '%s'", image, keys);
    CHECK(status == 0, "the image model's status lines: %s", err);
    snprintf(want, sizeof want, "step 0  %ld wrong  ", ones);
    stdout_line(0, line, sizeof line);
    CHECK(ones > 0 && strncmp(line, want, strlen(want)) == 0, "an all-zero start misses every set bit: '%s' (want "
          "'%s')", line, want);
    snprintf(want, sizeof want, "step %d (T)  exact  ", steps);
    stdout_line(1, line, sizeof line);
    CHECK(strncmp(line, want, strlen(want)) == 0, "exact at T: '%s'", line);
}

/* Soft mode on the CPU where it would take more than the viewer allows (the shipped lizard on a
 * 256x256 grid: about 22 GiB) is declined: one line says why, and the viewer goes on in hard mode. */
static void test_soft_declined(void)
{
    char lizard[1024], err[4096], line[512];
    const char *slash = strrchr(__FILE__, '/');
    snprintf(lizard, sizeof lizard, "%.*s../assets/models/lizard.dlca", slash ? (int)(slash - __FILE__ + 1) : 0,
             __FILE__);
    int status = run(viewer, err, sizeof err,
                     "'%s' --headless --device cpu --hard --grid 256x256 --scale 1 --keys 'key h; status; quit'",
                     lizard);
    CHECK(status == 0 && strstr(err, "soft mode on the CPU needs") && strstr(err, "256x256 grid"),
          "soft mode too large for the CPU is declined in one line: %s", err);
    stdout_line(0, line, sizeof line);
    CHECK(strstr(line, "  hard ") != NULL, "the viewer goes on in hard mode: '%s'", line);
}

int main(int argc, char **argv)
{
    char self[PATH_MAX];
    (void)argc;
    char cwd[PATH_MAX / 2];
    if (!getcwd(cwd, sizeof cwd)) return fprintf(stderr, "test_viewer: no working folder\n"), 1;
    snprintf(self, sizeof self, "%s/%s", argv[0][0] == '/' ? "" : cwd, argv[0]);
    const char *dir = dirname(self); /* absolute: the commands run in the scratch folder */
    snprintf(viewer, sizeof viewer, "%s/viewer/dlca-view", dir);
    snprintf(dlca, sizeof dlca, "%s/dlca", dir);
    if (access(viewer, X_OK) != 0) {
        fprintf(stderr, "test_viewer: no %s (built with DLCA_BUILD_VIEWER=OFF?): skipped\n", viewer);
        return 77;
    }
    snprintf(scratch, sizeof scratch, "/tmp/dlca_view_XXXXXX");
    if (!mkdtemp(scratch)) return fprintf(stderr, "cannot make a scratch folder\n"), 1;
    unsetenv("DISPLAY"), unsetenv("WAYLAND_DISPLAY"); /* never pop up a message box */
    setenv("DLCA_ASSETS", scratch, 1);
    if (make_model()) {
        CHECK(0, "make the test model: %s", err_message());
        return test_finish("test_viewer");
    }
    test_matches_dlca_run("--hard", "");
    test_matches_dlca_run("--hard", "--async 1");
    test_matches_dlca_run("--soft", "");
    test_matches_engine();
    test_reset_views_resize();
    test_screenshot_names();
    test_record();
    test_no_display();
    test_bad_input();
    test_target_status();
    test_soft_declined();
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    if (!getenv("DLCA_TEST_KEEP") && system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch);
    return test_finish("test_viewer");
}
