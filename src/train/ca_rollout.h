/* ca_rollout.h: a CA rollout as one differentiable function of the tensor library (tn_apply), the
 * way a custom op is in any autograd. Its input is the gate coefficients c [gates][4] (a tensor on
 * the engine's device: the CPU, or the GPU's tn_vk); its output the final grid's loss channels,
 * [loss_channels][cells] on the CPU, [loss_channels][pitch] on the GPU (a view of the engine's
 * grids, the pitch padding 0), or with a window those of several grids; its backward takes their gradient (the other channels' is 0) and
 * gives dL/dc = S by backpropagation through time in the engine.
 * The start grid and the fire masks are the engine's, set by the trainer for the round. tn never
 * learns what a cell is; the engine keeps its kernels (per-layer, fused, persistent). */
#ifndef DLCA_CA_ROLLOUT_H
#define DLCA_CA_ROLLOUT_H

#include "ca_cpu.h"
#include "ca_fast.h"
#include "ca_gpu.h"
#include "tn_tensor.h"

typedef struct {
    ca_cpu *cpu;   /* exactly one of the three engines */
    ca_fast *fast;
    ca_gpu *gpu;
    tn_dev *dev;   /* the GPU's tn device (tn_vk) */
    double *scratch; /* CPU: room for max(gates * 4, C * cells) doubles */
    /* A window loss: the output holds, before the final grid's rows, those of the window_steps
     * grids before it (grids steps - window_steps .. steps, one block of [loss_channels][cells or
     * pitch] each), and backward adds each block's gradient where BPTT passes its grid.
     * 0: the final grid's alone. */
    int window_steps;
    double *window;    /* CPU: room for (window_steps + 1) * loss_channels * cells doubles */
    float *window_f;   /* the fast engine: as many floats */
    vk_buffer *window_rows; /* GPU: room for (window_steps + 1) * loss_channels * pitch floats */
} ca_rollout;

/* The rollout of the engine's start grid with coefficients `c`: the final grid's loss channels,
 * recorded for backward when c requires a gradient (tn_apply). On the GPU the engine's dispatches
 * go into the command buffer tn records into. NULL with a message on failure. */
tn_tensor *ca_rollout_apply(ca_rollout *rollout, tn_tensor *c);

#endif
