/* ca_fixtures.h: tiny models and random inputs shared by the CA engine tests. */
#ifndef DLCA_CA_FIXTURES_H
#define DLCA_CA_FIXTURES_H

#include "ca_config.h"
#include "ca_model.h"
#include "gates.h"
#include "error.h"
#include "rng.h"
#include "tn_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* C = 2, K = 2, a 3x4 grid, perception [8,4,2] (bits = 2) or [8,4,2,1] (bits = 1),
 * update [6,4,2]: small enough for finite differences over every logit. */
static inline void tiny_config(ca_config *c, ca_boundary boundary, double fire_rate, int bits, int steps)
{
    memset(c, 0, sizeof *c);
    strcpy(c->preset, "tiny");
    c->height = 3, c->width = 4, c->boundary = boundary;
    c->channels = 2, c->kernels = 2;
    c->perception_depth = bits == 2 ? 3 : 4;
    int widths[4] = {8, 4, 2, 1};
    for (int i = 0; i < c->perception_depth; i++) c->perception_widths[i] = widths[i];
    c->update_depth = 3;
    c->update_widths[0] = 6, c->update_widths[1] = 4, c->update_widths[2] = 2;
    c->update_wiring = WIRING_UNIQUE;
    c->steps = steps, c->fire_rate = fire_rate, c->loss_channels = 1, c->init_logit = CA_INIT_LOGIT;
    c->start = CA_START_RANDOM, c->target = CA_TARGET_CHECKERBOARD;
    c->batch = 2, c->train_steps = 10, c->learning_rate = 0.05, c->seed = 7;
    c->pool_starts = 1, c->weight_decay = CA_WEIGHT_DECAY; /* every preset's */
}

/* A preset's shape scaled down: at most 3 kernels, 6 channels, narrower update layers, a
 * small grid; what every engine-against-engine test runs. */
static inline void small_preset(ca_config *c, const char *name)
{
    ca_config_preset(c, name);
    int channels = c->channels > 6 ? 6 : c->channels;
    if (c->kernels > 3) c->kernels = 3;
    c->channels = channels;
    if (c->loss_channels > channels) c->loss_channels = channels;
    static const int one_channel[] = {6, 4, 2, 1}, several[] = {24, 12, 0};
    const int *widths = channels == 1 ? one_channel : several;
    c->update_depth = channels == 1 ? 4 : 3;
    for (int l = 0; l < c->update_depth; l++) c->update_widths[l] = widths[l] ? widths[l] : channels;
    if (c->height > 3) c->height = 5, c->width = 6;
    c->steps = 3, c->batch = 2;
}

/* Logits uniform in [-spread, spread). Small spreads give well-mixed soft gates; deep rollouts
 * need larger ones, since a well-mixed gate passes almost no gradient to its inputs. */
static inline void random_logits(double *logits, size_t gates, double spread, rng_state *rng)
{
    for (size_t i = 0; i < gates * GATE_OP_COUNT; i++) logits[i] = spread * (2.0 * rng_uniform(rng) - 1.0);
}

/* Each gate leans to one random op (logit 5 against noise in [-1, 1)), p ~ 0.9: a soft version
 * of a boolean circuit, so gradients survive a many-layer, many-step rollout. */
static inline void peaked_logits(double *logits, size_t gates, rng_state *rng)
{
    random_logits(logits, gates, 1.0, rng);
    for (size_t g = 0; g < gates; g++) logits[g * GATE_OP_COUNT + rng_below(rng, GATE_OP_COUNT)] += 5.0;
}

static inline void random_unit(double *values, size_t n, rng_state *rng)
{
    for (size_t i = 0; i < n; i++) values[i] = rng_uniform(rng);
}

/* max |a - b| / max |b|: error relative to the largest magnitude; infinite where either holds a NaN. */
static inline double relative_error(const double *got, const double *want, size_t n)
{
    double worst = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs(got[i] - want[i]);
        if (isnan(diff)) return INFINITY; /* a NaN on either side is never close */
        if (diff > worst) worst = diff;
        if (fabs(want[i]) > scale) scale = fabs(want[i]);
    }
    return scale > 0.0 ? worst / scale : worst;
}

/* The trainer's loss of a final grid [C][cells] (tn_sse_loss of its loss channels against
 * target [loss_channels][cells], in double) and, with dgrid != NULL, its gradient [C][cells]
 * (zero off the loss channels): what the engines' tests backpropagate. */
static inline double fixture_loss(const ca_model *m, size_t cells, const double *grid, const double *target,
                                  double *dgrid)
{
    const ca_config *c = &m->config;
    size_t shape[2] = {(size_t)c->channels, cells}, rows[2] = {(size_t)c->loss_channels, cells};
    tn_tensor *out = tn_from_f64(TN_F64, 2, shape, grid), *want = tn_from_f64(TN_F64, 2, rows, target);
    tn_set_requires_grad(out, 1);
    tn_tensor *pred = tn_slice(out, 0, 0, (size_t)c->loss_channels, 1);
    tn_tensor *loss = tn_sse_loss(pred, want);
    double value = tn_item(loss);
    if (dgrid && tn_backward(loss) == DLCA_OK) tn_read(out->grad, dgrid);
    tn_free(loss), tn_free(pred), tn_free(out), tn_free(want);
    return value;
}

/* fixture_loss of a float grid (the fast engine's), with a float gradient. */
static inline double fixture_loss_float(const ca_model *m, size_t cells, const float *grid, const double *target,
                                        float *dgrid)
{
    size_t n = (size_t)m->config.channels * cells;
    double *g = malloc(n * sizeof(double)), *d = dgrid ? malloc(n * sizeof(double)) : NULL;
    for (size_t i = 0; i < n; i++) g[i] = grid[i];
    double loss = fixture_loss(m, cells, g, target, d);
    for (size_t i = 0; d && i < n; i++) dgrid[i] = (float)d[i];
    free(g), free(d);
    return loss;
}

/* dL/dlogits [gates][16] from S [gates][4]: every gate's softmax backward (gates.c). */
static inline void fixture_logits_gradient(const ca_model *m, const double *sums, const double *logits, double *dlogits)
{
    for (size_t g = 0; g < m->gate_count; g++)
        gate_logits_backward(dlogits + g * GATE_OP_COUNT, logits + g * GATE_OP_COUNT, sums + 4 * g);
}

#endif
