/* test_ca_runner: hard runs (`dlca run --hard`, `dlca eval`) go through the bit-packed engines
 * and must equal the float engine's hard step, driven the way the runner drives it (a fresh fire
 * stream per step), bit for bit after every step, with the grid edited between steps (written,
 * then ca_runner_grid_changed; or ca_runner_paint); on the CPU and on the GPU. A CPU hard run that
 * reads back channel 0 only (read_channels), its hidden channel stale in the grid, keeps that
 * channel right through a paint; with defer_read its grid stays as it was after each step until
 * ca_runner_sync brings the same frames. Soft runs on both backends agree to float tolerance. */
#include "ca_runner.h"
#include "check.h"
#include "vk_test.h"
#include "hard_fixtures.h"
#include "vk_context.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *test_name = "test_ca_runner";

enum { STEPS = 7, PAINT_AT = 3, SEED = 41 };

/* The edit at PAINT_AT: the first quarter of the grid's values zeroed (written), or every channel
 * of each sample's top-left quarter zeroed (ca_runner_paint's rectangle). */
enum { EDIT_WRITE, EDIT_PAINT };

static void paint_quarter(double *grid, ca_shape s, int channels)
{
    size_t cells = ca_shape_cells(s), plane = (size_t)s.height * (size_t)s.width;
    for (int ch = 0; ch < channels; ch++)
        for (int b = 0; b < s.batch; b++)
            for (int y = 0; y < s.height / 2; y++)
                for (int x = 0; x < s.width / 2; x++)
                    grid[(size_t)ch * cells + (size_t)b * plane + (size_t)y * (size_t)s.width + (size_t)x] = 0.0;
}

/* The float engine's hard run: as the runner did before hard runs were bit-packed. */
static int float_hard_run(const ca_model *model, ca_shape shape, double fire_rate, int edit, const double *start,
                          double *frames)
{
    ca_model view = *model;
    view.config.steps = 1, view.config.fire_rate = fire_rate;
    ca_cpu engine;
    int rc = ca_cpu_init(&engine, &view, shape.batch, shape.height, shape.width);
    if (rc) return rc;
    double *logits = malloc(view.gate_count * GATE_OP_COUNT * sizeof(double));
    if (!logits) return ca_cpu_free(&engine), err_set(DLCA_ERR_NOMEM, "out of memory");
    ca_model_logits_to_double(&view, logits);
    ca_cpu_coefficients(&engine, logits, 1);
    size_t n = (size_t)model->config.channels * ca_shape_cells(shape);
    memcpy(frames, start, n * sizeof(double));
    for (int t = 0; t < STEPS; t++) {
        double *grid = frames + (size_t)t * n;
        if (t == PAINT_AT && edit == EDIT_WRITE) memset(grid, 0, n / 4 * sizeof(double)); /* damage between steps */
        if (t == PAINT_AT && edit == EDIT_PAINT) paint_quarter(grid, shape, model->config.channels);
        ca_cpu_set_fire_stream(&engine, rng_fire_stream(SEED, (uint64_t)t));
        memcpy(ca_cpu_grid(&engine, 0), grid, n * sizeof(double));
        ca_cpu_step_forward(&engine, 0);
        memcpy(grid + n, ca_cpu_grid(&engine, 1), n * sizeof(double));
    }
    free(logits);
    ca_cpu_free(&engine);
    return DLCA_OK;
}

/* How a run reads its grid back: every channel after each step, or only the first (read_channels
 * 1), and that one only on ca_runner_sync (defer_read). */
enum { READ_ALL, READ_FIRST, READ_FIRST_DEFERRED };

/* The runner's run of the same steps: frames as float_hard_run's (with READ_FIRST, only channel 0
 * of each frame is the run's). With READ_FIRST_DEFERRED, *unchanged counts the steps after which
 * the grid was still the one before the step, until ca_runner_sync. */
static int runner_run(const ca_model *model, ca_backend backend, vk_context *vk, ca_shape shape, int hard,
                      double fire_rate, int edit, int read, const double *start, double *frames, int *unchanged)
{
    ca_runner r;
    int rc = ca_runner_init(&r, model, backend, vk, shape.batch, shape.height, shape.width, hard, fire_rate, SEED);
    if (rc) return rc;
    r.read_channels = read == READ_ALL ? 0 : 1;
    r.defer_read = read == READ_FIRST_DEFERRED;
    memcpy(r.grid, start, r.grid_values * sizeof(double));
    rc = ca_runner_grid_changed(&r);
    memcpy(frames, r.grid, r.grid_values * sizeof(double));
    for (int t = 0; !rc && t < STEPS; t++) {
        if (t == PAINT_AT && edit == EDIT_WRITE) memset(r.grid, 0, r.grid_values / 4 * sizeof(double));
        if (t == PAINT_AT && edit == EDIT_WRITE) rc = ca_runner_grid_changed(&r);
        if (t == PAINT_AT && edit == EDIT_PAINT) ca_runner_paint(&r, 0, 0, shape.width / 2, shape.height / 2, 0.0);
        if (t == PAINT_AT) memcpy(frames + (size_t)t * r.grid_values, r.grid, r.grid_values * sizeof(double));
        rc = ca_runner_step(&r);
        double *before = frames + (size_t)t * r.grid_values;
        if (unchanged) *unchanged += !memcmp(r.grid, before, r.grid_values * sizeof(double));
        ca_runner_sync(&r);
        memcpy(frames + (size_t)(t + 1) * r.grid_values, r.grid, r.grid_values * sizeof(double));
    }
    ca_runner_free(&r);
    return rc;
}

/* The first frame whose first `compared` values differ by more than tolerance (-1: none). */
static int first_difference_of(const double *a, const double *b, size_t n, size_t compared, double tolerance)
{
    for (int t = 0; t <= STEPS; t++)
        for (size_t i = 0; i < compared; i++)
            if (fabs(a[(size_t)t * n + i] - b[(size_t)t * n + i]) > tolerance) return t;
    return -1;
}

static int first_difference(const double *a, const double *b, size_t n, double tolerance)
{
    return first_difference_of(a, b, n, n, tolerance);
}

static int count_changes(const double *frames, size_t n)
{
    int changes = 0;
    for (size_t i = 0; i < (size_t)STEPS * n; i++) changes += frames[i] != frames[i + n];
    return changes;
}

static void test_model(vk_context *vk, const char *name, const ca_model *model, ca_shape shape, double fire_rate)
{
    size_t n = (size_t)model->config.channels * ca_shape_cells(shape), all = (STEPS + 1) * n;
    double *start = malloc(n * sizeof(double)), *want = malloc(all * sizeof(double));
    double *got = malloc(all * sizeof(double)), *soft = malloc(all * sizeof(double));
    CHECK(start && want && got && soft, "%s: out of memory", name);
    if (!start || !want || !got || !soft) return free(start), free(want), free(got), free(soft);
    rng_state rng;
    rng_init(&rng, SEED, 2);
    hard_random_grid(start, n, &rng);
    int rc = float_hard_run(model, shape, fire_rate, EDIT_WRITE, start, want);
    CHECK(rc == DLCA_OK, "%s: float run: %s", name, err_message());
    CHECK(count_changes(want, n) > 0, "%s: the reference run never changes a cell (a weak test)", name);
    for (int backend = 0; backend < 2 && !rc; backend++) {
        if (backend == 1 && !vk) break;
        ca_backend b = backend ? CA_BACKEND_GPU : CA_BACKEND_CPU;
        rc = runner_run(model, b, vk, shape, 1, fire_rate, EDIT_WRITE, READ_ALL, start, got, NULL);
        CHECK(rc == DLCA_OK, "%s %s: hard runner: %s", name, backend ? "GPU" : "CPU", err_message());
        int bad = rc ? -2 : first_difference(want, got, n, 0.0);
        CHECK(bad == -1, "%s %s: the hard runner differs from the float hard step after step %d", name,
              backend ? "GPU" : "CPU", bad);
        printf("%-40s %s hard: %d cell changes over %d steps, equal\n", name, backend ? "GPU" : "CPU",
               count_changes(got, n), STEPS);
    }
    if (!rc) { /* channel 0 read back alone, the grid painted: the hidden channel must stay right */
        size_t plane = ca_shape_cells(shape);
        rc = float_hard_run(model, shape, fire_rate, EDIT_PAINT, start, want);
        if (!rc)
            rc = runner_run(model, CA_BACKEND_CPU, NULL, shape, 1, fire_rate, EDIT_PAINT, READ_FIRST, start, got, NULL);
        CHECK(rc == DLCA_OK, "%s: painted runs: %s", name, err_message());
        CHECK(count_changes(want, n) > count_changes(got, n) || model->config.channels == 1,
              "%s: channel 1 of the grid changed as if read back (read_channels 1 reads channel 0 only)", name);
        int bad = rc ? -2 : first_difference_of(want, got, n, plane, 0.0);
        CHECK(bad == -1, "%s CPU: channel 0 read back alone differs from the float hard step after step %d", name,
              bad);
        int unchanged = 0;
        double *deferred = soft; /* free until the soft runs below */
        if (!rc)
            rc = runner_run(model, CA_BACKEND_CPU, NULL, shape, 1, fire_rate, EDIT_PAINT, READ_FIRST_DEFERRED, start,
                            deferred, &unchanged);
        CHECK(rc == DLCA_OK, "%s: deferred run: %s", name, err_message());
        CHECK(unchanged == STEPS, "%s: defer_read: the grid changed before ca_runner_sync after %d of %d steps", name,
              STEPS - unchanged, STEPS);
        bad = rc ? -2 : first_difference(got, deferred, n, 0.0);
        CHECK(bad == -1, "%s CPU: the deferred run's synced frames differ from the eager one's after step %d", name,
              bad);
    }
    if (vk && !rc) {
        rc = runner_run(model, CA_BACKEND_CPU, NULL, shape, 0, fire_rate, EDIT_WRITE, READ_ALL, start, want, NULL);
        if (!rc)
            rc = runner_run(model, CA_BACKEND_GPU, vk, shape, 0, fire_rate, EDIT_WRITE, READ_ALL, start, soft, NULL);
        CHECK(rc == DLCA_OK, "%s: soft runs: %s", name, err_message());
        int bad = rc ? -2 : first_difference(want, soft, n, 1e-4);
        CHECK(bad == -1, "%s: soft runs on the CPU and the GPU differ after step %d", name, bad);
    }
    free(start), free(want), free(got), free(soft);
}

int main(void)
{
    vk_context vk;
    int rc = test_vk_context_init(&vk, -1), have_vk = rc == DLCA_OK;
    if (rc == DLCA_ERR_NODEV) {
        int skip = test_no_vulkan(test_name, err_message()); /* the CPU half still runs below */
        if (skip != 77) return skip;
    } else {
        CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    }
    for (int boundary = 0; boundary < 2; boundary++)
        for (int async = 0; async < 2; async++) {
            ca_model model;
            ca_shape shape = {2, 9, 70, (ca_boundary)boundary};
            double rate = async ? 0.6 : 1.0;
            if (hard_test_model(&model, 2, 2, 2, shape.boundary, rate, shape.height, shape.width, 1, SEED + 4u * (unsigned)boundary + (unsigned)async)) {
                CHECK(0, "model: %s", err_message());
                continue;
            }
            rng_state rng;
            rng_init(&rng, SEED, 9);
            hard_random_ops(&model, &rng, HARD_OPS_TWO_INPUT);
            char name[64];
            snprintf(name, sizeof name, "random 2-channel, %s, fire %.1f", ca_boundary_name(shape.boundary), rate);
            test_model(have_vk ? &vk : NULL, name, &model, shape, rate);
            ca_model_free(&model);
        }
    if (have_vk) {
        CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
        vk_context_free(&vk);
    }
    return test_finish(test_name);
}
