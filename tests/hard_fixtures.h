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

#include <stdio.h>
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
    c.pool_starts = 1, c.weight_decay = CA_WEIGHT_DECAY; /* every preset's */
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
    c.steps = steps, c.fire_rate = fire_rate, c.loss_channels = 1, c.init_logit = CA_INIT_LOGIT;
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

/* The float engine's hard step on neighbourhoods: each sample of a batch of 3x3 zero-boundary
 * grids holds one ([count][C][9] bits in hoods, bit j = neighbour j), and its centre cell's new
 * state is the circuit's output for it: out gets [count][C] bits. */
static inline int hard_float_hoods(ca_model *m, const uint8_t *hoods, int count, uint8_t *out)
{
    const ca_config *c = &m->config;
    ca_boundary saved = m->config.boundary;
    int steps = m->config.steps;
    ca_shape shape = {count, 3, 3, CA_BOUNDARY_ZERO};
    size_t cells = ca_shape_cells(shape), C = (size_t)c->channels;
    double *grids = malloc(2 * C * cells * sizeof(double));
    if (!grids) return err_set(DLCA_ERR_NOMEM, "out of memory");
    for (size_t s = 0; s < (size_t)count; s++)
        for (size_t ch = 0; ch < C; ch++)
            for (size_t j = 0; j < 9; j++) grids[ch * cells + s * 9 + j] = hoods[(s * C + ch) * 9 + j];
    m->config.boundary = CA_BOUNDARY_ZERO, m->config.steps = 1;
    int rc = hard_float_rollout(m, shape, grids, 0, grids);
    m->config.boundary = saved, m->config.steps = steps;
    for (size_t s = 0; !rc && s < (size_t)count; s++)
        for (size_t ch = 0; ch < C; ch++) out[s * C + ch] = grids[(C + ch) * cells + s * 9 + 4] > 0.5;
    free(grids);
    return rc;
}

/* Whether the shell finds `tool`. */
static inline int hard_have_tool(const char *tool)
{
    char command[256];
    snprintf(command, sizeof command, "command -v %s >/dev/null 2>&1", tool);
    return system(command) == 0;
}

/* Exit status of a test whose external tool is missing: a failure when DLCA_REQUIRE_TOOLS=1
 * (CI installs the tools), else 77, which ctest reports as skipped. */
static inline int hard_missing_tool(const char *test, const char *tool, const char *package)
{
    const char *required = getenv("DLCA_REQUIRE_TOOLS");
    fprintf(stderr, "%s: %s not found (Debian package %s)\n", test, tool, package);
    return required && required[0] == '1' ? 1 : 77;
}

#endif
