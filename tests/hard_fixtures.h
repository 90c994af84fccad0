/* hard_fixtures.h: random hard models and the float engine's hard rollout, shared by the
 * tests of the hard circuit, the bit-packed engines and the exporters. */
#ifndef DLCA_HARD_FIXTURES_H
#define DLCA_HARD_FIXTURES_H

#include "ca_cpu.h"
#include "ca_model.h"
#include "ca_task.h"
#include "error.h"
#include "gates.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

/* Which ops random gates get. */
typedef enum {
    HARD_OPS_ALL,       /* any of the 16: many constants and wires, so pruning has work */
    HARD_OPS_TWO_INPUT, /* only the 10 ops that read both inputs: circuits that stay alive */
    HARD_OPS_SPARSE     /* mostly pass-through A (the init), a quarter random */
} hard_ops_mode;

/* A model with C channels, K kernels, 1- or 2-bit perception and unique update layers halving
 * down to C: small, but every path of the engines (per-channel perception, update input order)
 * is exercised. The grid is height x width with the given boundary. */
static inline int hard_test_model(ca_model *m, int channels, int kernels, int bits, ca_boundary boundary,
                                  double fire_rate, int height, int width, int steps, uint64_t seed)
{
    ca_config c;
    memset(&c, 0, sizeof c);
    strcpy(c.preset, "hard-test");
    c.height = height, c.width = width, c.boundary = boundary;
    c.channels = channels, c.kernels = kernels;
    c.perception_depth = bits == 2 ? 3 : 4;
    const int widths[4] = {8, 4, 2, 1};
    for (int i = 0; i < c.perception_depth; i++) c.perception_widths[i] = widths[i];
    int n_in = channels + kernels * channels * bits, w = (n_in + 1) / 2 + 2;
    if (w > n_in * (n_in - 1) / 2) w = n_in * (n_in - 1) / 2;
    c.update_widths[c.update_depth++] = w;
    while (w > 2 * channels) c.update_widths[c.update_depth++] = w = (w + 1) / 2;
    c.update_widths[c.update_depth++] = channels;
    c.update_wiring = WIRING_UNIQUE;
    c.steps = steps, c.fire_rate = fire_rate, c.loss_channels = 1;
    c.start = CA_START_RANDOM, c.target = CA_TARGET_CHECKERBOARD;
    c.batch = 2, c.train_steps = 1, c.learning_rate = 0.05, c.seed = seed;
    return ca_model_init(m, &c);
}

/* Sets every gate's logits so that its argmax is a random op of `mode` (noise below it). */
static inline void hard_random_ops(ca_model *m, rng_state *rng, hard_ops_mode mode)
{
    static const int two_input[10] = {GATE_AND, GATE_A_AND_NOT_B, GATE_NOT_A_AND_B, GATE_XOR, GATE_OR,
                                      GATE_NOR, GATE_XNOR, GATE_A_OR_NOT_B, GATE_NOT_A_OR_B, GATE_NAND};
    for (size_t g = 0; g < m->gate_count; g++) {
        float *z = m->logits + g * GATE_OP_COUNT;
        for (int i = 0; i < GATE_OP_COUNT; i++) z[i] = (float)rng_uniform(rng);
        int op = (int)rng_below(rng, GATE_OP_COUNT);
        if (mode == HARD_OPS_TWO_INPUT) op = two_input[rng_below(rng, 10)];
        if (mode == HARD_OPS_SPARSE && rng_below(rng, 4) != 0) op = GATE_A;
        z[op] = 5.0f;
    }
}

/* Random 0/1 start grid [C][cells]. */
static inline void hard_random_grid(double *grid, size_t n, rng_state *rng)
{
    for (size_t i = 0; i < n; i++) grid[i] = (double)(rng_next(rng) >> 63);
}

/* The float engine's hard rollout of m's config.steps steps on `shape` from `start`:
 * grids gets [T+1][C][cells]. */
static inline int hard_float_rollout(const ca_model *m, ca_shape shape, const double *start, uint32_t stream,
                                     double *grids)
{
    ca_cpu engine;
    int rc = ca_cpu_init(&engine, m, shape.batch, shape.height, shape.width);
    if (rc) return rc;
    double *logits = malloc(m->gate_count * GATE_OP_COUNT * sizeof(double));
    if (!logits) {
        ca_cpu_free(&engine);
        return err_set(DLCA_ERR_NOMEM, "out of memory");
    }
    ca_model_logits_to_double(m, logits);
    ca_cpu_coefficients(&engine, logits, 1);
    size_t n = (size_t)m->config.channels * engine.cells;
    memcpy(ca_cpu_grid(&engine, 0), start, n * sizeof(double));
    ca_cpu_set_fire_stream(&engine, stream);
    ca_cpu_forward(&engine);
    memcpy(grids, ca_cpu_grid(&engine, 0), ((size_t)m->config.steps + 1) * n * sizeof(double));
    free(logits);
    ca_cpu_free(&engine);
    return DLCA_OK;
}

#endif
