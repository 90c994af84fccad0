/* test_ca_clamp: every engine keeps soft activations in [0, 1]. Exact arithmetic never leaves
 * [0, 1], but float rounding can, and outside it the relaxed ops amplify: a trained lizard on
 * the GPU went from -3e-6 to NaN in 10 CA steps before gate_eval clamped. Here the start grid is
 * pushed out of range on purpose (values in [-0.3, 1.3]) and strongly non-linear ops (XOR,
 * XNOR, AND, NAND) are chosen; one soft step must land every cell in [0, 1] on the double
 * engine, the float CPU engine and the GPU, while a NaN logit still gives NaN cells on the CPU
 * engines. (A GPU driver may compile the clamp's comparisons into a saturation that maps NaN into
 * [0, 1]: NVIDIA's does. Training catches a NaN at the logits gradient on every engine instead:
 * test_train_nonfinite.) */
#include "ca_fast.h"
#include "ca_runner.h"
#include "check.h"
#include "vk_test.h"
#include "hard_fixtures.h"
#include "vk_context.h"

#include <math.h>
#include <stdio.h>

static const char *test_name = "test_ca_clamp";

enum { H = 6, W = 7, BATCH = 2, SEED = 77 };

/* Logits that pick one of the non-linear ops per gate (p about 0.9999: out-of-range inputs
 * stay out of range through the layers, as rounding errors would). */
static void nonlinear_logits(ca_model *m, rng_state *rng)
{
    static const int ops[4] = {GATE_XOR, GATE_XNOR, GATE_AND, GATE_NAND};
    for (size_t g = 0; g < m->gate_count; g++) {
        float *z = m->logits + g * GATE_OP_COUNT;
        for (int i = 0; i < GATE_OP_COUNT; i++) z[i] = (float)rng_uniform(rng);
        z[ops[rng_below(rng, 4)]] = 12.0f;
    }
}

/* Cells outside [0, 1] (NaN counts as outside). */
static size_t out_of_range(const double *grid, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += !(grid[i] >= 0.0 && grid[i] <= 1.0);
    return bad;
}

static int runner_step(const ca_model *m, ca_backend backend, vk_context *vk, const double *start, double *out)
{
    ca_runner r;
    int rc = ca_runner_init(&r, m, backend, vk, BATCH, H, W, 0, 1.0, SEED);
    if (rc) return rc;
    memcpy(r.grid, start, r.grid_values * sizeof(double));
    rc = ca_runner_step(&r);
    memcpy(out, r.grid, r.grid_values * sizeof(double));
    ca_runner_free(&r);
    return rc;
}

static int fast_step(const ca_model *m, const double *start, double *out, size_t n)
{
    ca_fast e;
    int rc = ca_fast_init(&e, m, BATCH, H, W, NULL);
    if (rc) return rc;
    double *logits = malloc(m->gate_count * GATE_OP_COUNT * sizeof(double));
    if (!logits) return ca_fast_free(&e), err_set(DLCA_ERR_NOMEM, "out of memory");
    ca_model_logits_to_double(m, logits);
    ca_fast_coefficients(&e, logits, 0);
    for (size_t i = 0; i < n; i++) ca_fast_grid(&e, 0)[i] = (float)start[i];
    ca_fast_step_forward(&e, 0);
    for (size_t i = 0; i < n; i++) out[i] = ca_fast_grid(&e, 1)[i];
    free(logits);
    ca_fast_free(&e);
    return DLCA_OK;
}

/* One step of each engine from `start`: cells out of range, per engine (-1: engine absent). */
static void step_all(const ca_model *m, vk_context *vk, const double *start, size_t n, long bad[3])
{
    double *out = malloc(n * sizeof(double));
    if (!out) return;
    bad[0] = runner_step(m, CA_BACKEND_CPU, NULL, start, out) ? -2 : (long)out_of_range(out, n);
    bad[1] = fast_step(m, start, out, n) ? -2 : (long)out_of_range(out, n);
    bad[2] = !vk ? -1 : runner_step(m, CA_BACKEND_GPU, vk, start, out) ? -2 : (long)out_of_range(out, n);
    free(out);
}

int main(void)
{
    vk_context vk;
    int rc = test_vk_context_init(&vk, -1), have_vk = rc == DLCA_OK;
    if (rc == DLCA_ERR_NODEV) {
        int skip = test_no_vulkan(test_name, err_message()); /* the CPU engines still run */
        if (skip != 77) return skip;
    } else {
        CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    }
    static const char *engine[3] = {"CPU double", "CPU float", "GPU"};
    ca_model m;
    rng_state rng;
    rng_init(&rng, SEED, 1);
    rc = hard_test_model(&m, 2, 2, 2, CA_BOUNDARY_PERIODIC, 1.0, H, W, 1, SEED);
    CHECK(rc == DLCA_OK, "model: %s", err_message());
    if (rc) return test_finish(test_name);
    nonlinear_logits(&m, &rng);
    size_t n = (size_t)m.config.channels * BATCH * H * W;
    double *start = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) start[i] = -0.3 + 1.6 * rng_uniform(&rng);
    long bad[3];
    step_all(&m, have_vk ? &vk : NULL, start, n, bad);
    for (int k = 0; k < 3; k++) {
        if (bad[k] == -1) continue;
        CHECK(bad[k] == 0, "%s: %ld of %zu cells outside [0, 1] after one step from an out-of-range grid", engine[k],
              bad[k], n);
        if (bad[k] == 0) printf("%-10s all %zu cells in [0, 1]\n", engine[k], n);
    }
    m.logits[3] = NAN; /* gate 0: its output, and what reads it, must be NaN, not clamped away */
    step_all(&m, have_vk ? &vk : NULL, start, n, bad);
    for (int k = 0; k < 2; k++) /* the CPU engines */
        if (bad[k] != -1) CHECK(bad[k] > 0, "%s: a NaN logit was clamped into range", engine[k]);
    free(start);
    ca_model_free(&m);
    if (have_vk) {
        CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
        vk_context_free(&vk);
    }
    return test_finish(test_name);
}
