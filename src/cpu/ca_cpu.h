/* ca_cpu.h: the CPU reference engine in double precision, the oracle for every GPU kernel.
 * A rollout: ca_cpu_coefficients (or ca_cpu_set_coefficients), ca_cpu_forward (T steps, every
 * activation cached); then, from dL/d final grid in engine->dgrid, ca_cpu_backward (BPTT) leaves
 * S = dL/dcoefficients in coeff_grad. The loss and the gate softmax around it are the tensor
 * library's (src/train/ca_train.c). Deterministic. */
#ifndef DLCA_CA_CPU_H
#define DLCA_CA_CPU_H

#include "ca_cpu_layer.h"
#include "ca_model.h"

#include <stdint.h>

typedef struct {
    const ca_model *model;
    ca_shape shape;
    size_t cells;                         /* batch * H * W */
    /* One step block act[t] holds rows [perception layers][update layers]: */
    size_t perception_row[CA_MAX_LAYERS]; /* first row of perception layer l, [K][C][width] */
    size_t update_row[CA_MAX_LAYERS];     /* first row of update layer l, [width] */
    size_t step_rows;
    int steps;          /* the rollout's CA steps: T, or what ca_cpu_set_steps set (<= room) */
    int room;           /* the steps allocated: T + the config's window */
    double *grids;      /* [room+1][C][cells]: the grid before each step, and the final grid */
    double *act;        /* [room][step_rows][cells] */
    double *coeffs;     /* [gates][4] */
    double *coeff_grad; /* S: [gates][4] */
    double *dact;       /* [step_rows][cells]: gradients of one step's activations */
    double *dgrid;      /* [C][cells]: d loss / d grid_{t+1} before step t runs backward, d grid_t after */
    const double **in_rows; /* scratch row tables, as wide as the widest layer input */
    double **din_rows;
    uint32_t fire_stream, fire_threshold;
} ca_cpu;

/* Allocates an engine for `model` on `batch` samples of the model's grid (or `height` x `width`
 * when both are > 0, e.g. to run a trained rule on a bigger grid). */
int ca_cpu_init(ca_cpu *engine, const ca_model *model, int batch, int height, int width);

void ca_cpu_free(ca_cpu *engine);

/* Per-gate coefficients from `logits` ([gates][16]): soft c = M^T softmax(z), or hard = row argmax z. */
void ca_cpu_coefficients(ca_cpu *engine, const double *logits, int hard);

/* Sets the coefficients ([gates][4]) the next rollouts use, computed elsewhere (the trainer's
 * tensor graph). */
void ca_cpu_set_coefficients(ca_cpu *engine, const double *coefficients);

/* The grid at step t (0..steps): [C][cells]. Write the start state into ca_cpu_grid(engine, 0). */
double *ca_cpu_grid(const ca_cpu *engine, int t);

/* The next rollouts' CA steps, 1..T + window (a training round's length, ca_train.h). */
int ca_cpu_set_steps(ca_cpu *engine, int steps);

/* Fire-mask stream for the next rollout (async mode only; see rng_fires). */
void ca_cpu_set_fire_stream(ca_cpu *engine, uint32_t stream);

/* One CA step: grid_t -> grid_{t+1}, caching the step's activations. */
void ca_cpu_step_forward(ca_cpu *engine, int t);

/* Runs engine->steps steps from ca_cpu_grid(engine, 0). */
void ca_cpu_forward(ca_cpu *engine);

/* One step back: from engine->dgrid = dL/dgrid_{t+1} to dL/dgrid_t, adding into the coefficient sums S. */
void ca_cpu_step_backward(ca_cpu *engine, int t);

/* BPTT over all T steps from engine->dgrid (dL/d final grid, set by the caller); S is zeroed first. */
void ca_cpu_backward(ca_cpu *engine);

/* ca_cpu_backward where the loss also reads grids from..steps-1 (a window loss): once step t is
 * back (dgrid = dL/dgrid_t through the steps after it), for t >= from, block t - from of
 * `dwindow` ([steps - from][loss_channels][cells]: the grid's first rows) is added to dgrid.
 * dwindow NULL or from >= steps: ca_cpu_backward. */
void ca_cpu_backward_window(ca_cpu *engine, const double *dwindow, int from);

#endif
