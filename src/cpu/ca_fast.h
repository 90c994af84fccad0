/* ca_fast.h: the fast CPU engine: ca_cpu's functions in float32 on threads. Same activation
 * layout ([T][rows][cells]) and fire masks as the double reference, which stays the oracle;
 * results agree with it within float rounding (tests/test_ca_fast.c).
 * Cells are cut into fixed blocks (by the cell count alone); a thread runs whole blocks
 * through all layers of a step, so a block's rows stay in cache. Each block keeps its own
 * partial sums S, added in block order at the end: the same bits for any thread count. */
#ifndef DLCA_CA_FAST_H
#define DLCA_CA_FAST_H

#include "ca_shape.h"
#include "ca_fast_plan.h"
#include "ca_model.h"

#include <stdint.h>

typedef struct ca_fast_pool ca_fast_pool;

typedef struct {
    int cache;   /* 1: forward keeps every step's activations in act (for tests and inspection);
                    0: no act; backward recomputes a step from its grid (less memory traffic) */
    int threads; /* 0: the online cores */
} ca_fast_options;

typedef struct {
    const ca_model *model;
    ca_shape shape;
    size_t cells;                         /* batch * H * W */
    size_t perception_row[CA_MAX_LAYERS]; /* rows as in ca_cpu */
    size_t update_row[CA_MAX_LAYERS];
    size_t step_rows;
    int steps, room;    /* the rollout's CA steps and the steps allocated, as in ca_cpu */
    float *grids;       /* [room+1][C][cells] */
    float *act;         /* [room][step_rows][cells], NULL without cache */
    float *coeffs;      /* [gates][4] */
    float *coeff_lanes; /* S partial sums per block: [blocks][gates][4][CA_FAST_LANES] */
    float *dgrid;       /* [C][cells], as ca_cpu's */
    float *dneighbour;  /* [2][C][8][cells]: d loss / d (cell's value read as neighbour d), by step parity */
    float *scratch;     /* per thread: values, then gradients, [plan.rows][CA_FAST_BLOCK] each */
    ca_fast_plan plan;
    size_t blocks, block_cells; /* blocks of block_cells cells (the last may be shorter) */
    ca_fast_pool *pool;
    int threads, cache;
    uint32_t fire_stream, fire_threshold;
} ca_fast;

/* Allocates an engine for `model` on `batch` samples of the model's grid (or height x width
 * when both are > 0). options NULL: cache on, default threads. */
int ca_fast_init(ca_fast *engine, const ca_model *model, int batch, int height, int width, const ca_fast_options *options);

void ca_fast_free(ca_fast *engine);

/* Per-gate coefficients from `logits` ([gates][16]), computed in double and stored as float. */
void ca_fast_coefficients(ca_fast *engine, const double *logits, int hard);

/* Sets the coefficients ([gates][4]) the next rollouts use, computed elsewhere (the trainer's
 * tensor graph), rounded to float as the engine keeps them. */
void ca_fast_set_coefficients(ca_fast *engine, const double *coefficients);

/* The grid at step t (0..steps): [C][cells]. Write the start state into ca_fast_grid(engine, 0). */
float *ca_fast_grid(const ca_fast *engine, int t);

/* The next rollouts' CA steps, 1..T + window, as ca_cpu_set_steps. */
int ca_fast_set_steps(ca_fast *engine, int steps);

/* Fire-mask stream for the next rollout (async mode only; see rng_fires). */
void ca_fast_set_fire_stream(ca_fast *engine, uint32_t stream);

/* One CA step: grid_t -> grid_{t+1}. */
void ca_fast_step_forward(ca_fast *engine, int t);

/* Runs engine->steps steps from ca_fast_grid(engine, 0). */
void ca_fast_forward(ca_fast *engine);

/* One step back: dgrid from d/d grid_{t+1} to d/d grid_t, adding into S. */
void ca_fast_step_backward(ca_fast *engine, int t);

/* BPTT over all engine->steps steps from engine->dgrid (dL/d final grid, set by the caller); S is zeroed first. */
void ca_fast_backward(ca_fast *engine);

/* ca_fast_backward with a window loss's gradient at grids from..steps-1, as ca_cpu_backward_window. */
void ca_fast_backward_window(ca_fast *engine, const float *dwindow, int from);

/* S = 0. */
void ca_fast_clear_coeff_grad(ca_fast *engine);

/* S summed over blocks and lanes in a fixed order: coeff_grad [gates][4]. */
void ca_fast_coeff_grad(const ca_fast *engine, double *coeff_grad);

#endif
