/* ca_gpu_order.h: the order in which the GPU engine keeps each update layer's gates.
 *
 * The fused kernels run gate g of a layer on invocation g, which reads its two inputs from
 * shared-memory rows at random (the wiring), so the 16 invocations of a half-warp collide in the
 * same banks and wait for each other (docs/bench-notes.md, round 14). Gates of a layer
 * may be listed in any order without changing the model, so the engine lists them in one where a
 * half-warp's inputs fall in distinct banks where it can, and converts gate-indexed data (logits,
 * moments, gradients) between that order and the model's at its boundary. */
#ifndef DLCA_CA_GPU_ORDER_H
#define DLCA_CA_GPU_ORDER_H

#include "ca_model.h"

#include <stdint.h>

/* Banks a wiring is arranged for: the 16 lanes of a half-warp reading two floats each. */
#define CA_GPU_ORDER_BANKS 16

/* Builds `device`, `model` with the gates of each update layer but the last (whose outputs are
 * the cell's channels) reordered within their layer, and `row` [gate_count]: where each model gate
 * is in `device`. The device model's logits are the model's, reordered. */
int ca_gpu_order_model(const ca_model *model, ca_model *device, uint32_t *row);

/* Most inputs of one half-warp's gates (16 consecutive gates of a layer) that share a bank, summed
 * over inputs a and b and over the half-warps of every update layer: what the order reduces (2 a
 * half-warp at best; for tests and notes). */
size_t ca_gpu_order_conflicts(const ca_model *model);

#endif
