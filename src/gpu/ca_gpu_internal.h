/* ca_gpu_internal.h: what the GPU engine's files share and its users do not see. Calls between
 * the files go one way: ca_gpu.c (lifetime and memory) and ca_gpu_step.c (the recording API) call
 * the fused path (ca_gpu_fused.c), which builds on the per-layer path's layer descriptions
 * (ca_gpu_layered.c); all of them record through ca_gpu_record.c. */
#ifndef DLCA_CA_GPU_INTERNAL_H
#define DLCA_CA_GPU_INTERNAL_H

#include "ca_gpu.h"
#include "vk_command.h"
#include "vk_pipeline.h"

static inline const ca_config *gpu_config_of(const ca_gpu *e) { return &e->model->config; }

/* Workgroups of 64 covering the cells. */
static inline uint32_t gpu_cell_groups(const ca_gpu *e) { return (e->plan.cells + 63) / 64; }

/* ---- ca_gpu_record.c ---- */

/* Step block t (in its buffer). */
vk_view gpu_block_view(ca_gpu *e, int t);

/* The backward scratch, as the path that runs uses it. Per-layer: the slot gradients that
 * gate_backward.comp writes for input a (which = 0) or b (1), row r holding what row r's gate
 * sends there. Fused: step t's moore gradients to neighbours ([C*8][pitch]), in alternate halves
 * so that step t - 1 reads step t's while writing its own. */
vk_view gpu_slot_view(ca_gpu *e, int which);
vk_view gpu_moore_view(ca_gpu *e, int t);

/* vk_dispatch, then a compute barrier: every dispatch of the engine reads what the one before wrote. */
int gpu_dispatch(ca_gpu *e, VkCommandBuffer cmd, vk_pipeline_id id, const vk_view *views, uint32_t n_views,
                 const void *push, uint32_t push_size, uint32_t groups_x, uint32_t groups_y);

/* One instrumentation timestamp (dlca bench), only when the engine profiles. */
int gpu_mark(ca_gpu *e, VkCommandBuffer cmd, ca_gpu_mark which);

/* A region of a buffer to fill: rows of words (vk_push.h's vk_fill_region). */
typedef struct {
    vk_buffer *buffer;
    vk_fill_region region;
} gpu_fill_region;

/* Regions [0, count) (1 to 3) set to their values in one buffer_fill.comp dispatch, no barrier. */
int gpu_fill(ca_gpu *e, VkCommandBuffer cmd, const gpu_fill_region *regions, int count);

/* Zeroes `count` buffers now, in one submission of its own. */
int gpu_zero_now(ca_gpu *e, vk_buffer *const *buffers, int count);

/* S = the sum of the partials (gate_sums_reduce.comp), no barrier of its own. */
int gpu_sums_reduce(ca_gpu *e, VkCommandBuffer cmd);

/* ---- ca_gpu_layered.c ---- */

/* The layers as the kernels describe them: the moore layer, perception layer l >= 1, update layer l. */
vk_push_moore gpu_moore_push(const ca_gpu *e);
vk_push_layer gpu_perception_push(const ca_gpu *e, int l);
vk_push_layer gpu_update_push(const ca_gpu *e, int l);

/* One CA step forward, and its backward (S into the chunk partials), one dispatch a layer. */
int gpu_layered_forward(ca_gpu *e, VkCommandBuffer cmd, int t);
int gpu_layered_backward(ca_gpu *e, VkCommandBuffer cmd, int t);

/* ---- ca_gpu_fused.c ---- */

/* The clock buffer as the fused step kernels' last binding, in DLCA_CLOCKS builds (after a
 * view list's last entry, with no comma before it: `{a, b GPU_CLOCKS_VIEW(e)}`). */
#ifdef DLCA_CLOCKS
#define GPU_CLOCKS_VIEW(e) , vk_view_all(&(e)->clocks)
#else
#define GPU_CLOCKS_VIEW(e)
#endif

/* The layer table into the layers buffer (after the wiring: it names the reverse tables). */
int gpu_upload_layers(ca_gpu *e);

/* The fused pipelines specialised to this model, once. */
int gpu_create_fused_pipelines(ca_gpu *e);

/* What the next persistent forward and/or backward polls, set to empty, in one dispatch without
 * a barrier of its own. */
int gpu_clear(ca_gpu *e, VkCommandBuffer cmd, int forward, int backward);

/* One fused CA step forward; all T in one dispatch. */
int gpu_fused_forward(ca_gpu *e, VkCommandBuffer cmd, int t);
int gpu_persistent_forward(ca_gpu *e, VkCommandBuffer cmd);

/* One fused BPTT step (`gather`: dgrid completed from step t + 1 first); dgrid_t completed after
 * it; all T steps in one dispatch; the end of BPTT (S summed, dgrid_0 completed). */
int gpu_fused_backward(ca_gpu *e, VkCommandBuffer cmd, int t, int gather);
int gpu_fused_grid_gather(ca_gpu *e, VkCommandBuffer cmd, int t);
/* The persistent backward's steps `last` down to 0: in one dispatch, or one a step where the plan
 * runs it stepwise. */
int gpu_persistent_backward(ca_gpu *e, VkCommandBuffer cmd, int last);
/* The persistent backward's steps `step` down to step + 1 - count in one dispatch (clearing what
 * it polls first where `step` is the last, unless cleared already). */
int gpu_persistent_backward_steps(ca_gpu *e, VkCommandBuffer cmd, int step, int count);
int gpu_fused_backward_end(ca_gpu *e, VkCommandBuffer cmd);

#endif
