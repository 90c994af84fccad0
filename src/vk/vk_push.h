/* vk_push.h: push-constant structs of every kernel, defined once here and mirrored field by
 * field in glsl/common.glsl (C vk_push_<kernel> == GLSL <kernel>_push). Only 4-byte scalars, so
 * the C layout equals the std430 push-constant layout; _Static_assert pins each size. */
#ifndef DLCA_VK_PUSH_H
#define DLCA_VK_PUSH_H

#include <stdint.h>

/* glsl/gate_coefficients.comp */
typedef struct {
    uint32_t gate_count; /* gates to convert; logits [gate_count][16] -> coeffs [gate_count][4] */
    uint32_t hard;       /* 1: argmax row of M instead of M^T softmax(z) */
} vk_push_gate_coefficients;
_Static_assert(sizeof(vk_push_gate_coefficients) == 8, "mirror of gate_coefficients_push in glsl/common.glsl");

/* The CA engine's kernels address activations as rows of `pitch` floats (row r, cell x at
 * r * pitch + x); pitch >= cells is padded so every step block starts aligned. */

/* glsl/moore_forward.comp */
typedef struct {
    uint32_t cells, pitch, height, width;
    uint32_t periodic, channels, kernels, coeff_base;
    uint32_t wiring_a; /* offset of the moore layer's neighbour indices in the wiring buffer, 8 a kernel */
    uint32_t row;      /* first row of the moore layer in the step block */
} vk_push_moore;
_Static_assert(sizeof(vk_push_moore) == 40, "mirror of moore_push in glsl/common.glsl");

/* glsl/gate_layer_forward.comp: a layer of n_out gates over `units` blocks of rows;
 * common.glsl's layer_push says how rows are found. The host also describes every layer with it
 * (the backward's and the fused layer table's fields come from it: reverse wiring, moore). */
typedef struct {
    uint32_t cells, pitch, n_in, n_out;
    uint32_t units, unit_channels, in_split, in_base;
    uint32_t in_stride, out_base, out_stride, coeff_base;
    uint32_t coeff_stride, wiring_a, wiring_b, reverse_start;
    uint32_t reverse_entry, moore, height, width;
    uint32_t periodic;
} vk_push_layer;
_Static_assert(sizeof(vk_push_layer) == 84, "mirror of layer_push in glsl/common.glsl");

/* glsl/step_fire.comp */
typedef struct {
    uint32_t cells, pitch, channels, proposed_row;
    uint32_t stream, threshold, step;
} vk_push_fire;
_Static_assert(sizeof(vk_push_fire) == 28, "mirror of fire_push in glsl/common.glsl");

/* glsl/hard_step.comp: one step of the bit-packed hard engine (src/hard/hard_gpu.h), one invocation
 * per 32-bit word of a row */
typedef struct {
    uint32_t invocations, words, rows, height; /* invocations = rows * words; rows = batch * height */
    uint32_t width, channels, n_instr, periodic;
    uint32_t n_slots, stream, threshold, step;
} vk_push_hard_step;
_Static_assert(sizeof(vk_push_hard_step) == 48, "mirror of hard_step_push in glsl/common.glsl");

/* glsl/fused_step_forward.comp, fused_step_backward.comp, fused_grid_gather.comp,
 * fused_forward_persistent.comp (fields in glsl/common.glsl) */
typedef struct {
    uint32_t cells, pitch, layer_count, height;
    uint32_t width, periodic, channels, kernels;
    uint32_t perception_layers, stream, threshold, step;
    uint32_t partial_rows, gather, max_width, act_rows;
    uint32_t update_inputs, steps, run_steps;
} vk_push_fused;
_Static_assert(sizeof(vk_push_fused) == 76, "mirror of fused_push in glsl/common.glsl");

/* glsl/grid_add.comp: rows[i] += add[i], i < n */
typedef struct {
    uint32_t n;
} vk_push_grid_add;
_Static_assert(sizeof(vk_push_grid_add) == 4, "mirror of grid_add_push in glsl/common.glsl");

/* glsl/buffer_fill.comp: up to three regions of rows of words, each set to its value */
typedef struct {
    uint32_t first, row_words, row_pitch, rows;
    uint32_t value;
} vk_fill_region;
typedef struct {
    vk_fill_region region[3];
} vk_push_buffer_fill;
_Static_assert(sizeof(vk_push_buffer_fill) == 60, "mirror of buffer_fill_push in glsl/common.glsl");

/* glsl/task_round.comp: start and target kinds are ca_start / ca_target values */
typedef struct {
    uint32_t cells, pitch, height, width;
    uint32_t channels, loss_channels, start, target;
    uint32_t stream, periodic;
} vk_push_task;
_Static_assert(sizeof(vk_push_task) == 40, "mirror of task_push in glsl/common.glsl");

/* ---- tn tensors on the device (src/tensor/tn_vk_kernels.c, tn_vk_optim.c); shapes and strides
 * travel in a metadata buffer, see glsl/tn_common.glsl ---- */

/* glsl/tn_unary.comp, glsl/tn_binary.comp: op is a tn_ufn / tn_bfn (src/tensor/tn_internal.h) or
 * TN_VK_FILL; count elements */
typedef struct {
    uint32_t op, count;
    float s0, s1;
} vk_push_tn_ew;
_Static_assert(sizeof(vk_push_tn_ew) == 16, "mirror of tn_ew_push in glsl/common.glsl");

/* glsl/tn_reduce.comp: n_out outputs of n_red elements each; mode 0 sum, 1 max, 2 sum of squares */
typedef struct {
    uint32_t n_out, n_red, mode;
} vk_push_tn_reduce;
_Static_assert(sizeof(vk_push_tn_reduce) == 12, "mirror of tn_reduce_push in glsl/common.glsl");

/* glsl/tn_matmul.comp: [batch][n][k] x [batch][k][m] */
typedef struct {
    uint32_t n, k, m, batch;
} vk_push_tn_matmul;
_Static_assert(sizeof(vk_push_tn_matmul) == 16, "mirror of tn_matmul_push in glsl/common.glsl");

/* glsl/tn_softmax.comp: mode 0 softmax, 1 log_softmax, 2 and 3 their backward */
typedef struct {
    uint32_t lines, len, mode;
} vk_push_tn_softmax;
_Static_assert(sizeof(vk_push_tn_softmax) == 12, "mirror of tn_softmax_push in glsl/common.glsl");

/* glsl/tn_take.comp, glsl/tn_put_add.comp: offsets in elements into the bound storages */
typedef struct {
    uint32_t count, dst_offset, src_offset;
} vk_push_tn_index;
_Static_assert(sizeof(vk_push_tn_index) == 12, "mirror of tn_index_push in glsl/common.glsl");

/* glsl/tn_optim.comp: kind 0 SGD, 1 Adam; lr and bias corrections come from a step buffer */
/* glsl/tn_clip_norm.comp */
typedef struct {
    uint32_t count;
    float max_norm;
} vk_push_tn_clip;
_Static_assert(sizeof(vk_push_tn_clip) == 8, "mirror of tn_clip_push in glsl/common.glsl");

/* glsl/gate_backward.comp: one gate layer's backward (S partials, slot gradients); dy from the
 * next layer's slots (source 0) or from dgrid through the fire mask (source 1) */
typedef struct {
    uint32_t cells, pitch, per_thread, partial_rows;
    uint32_t n_out, unit_channels, coeff_base, coeff_stride;
    uint32_t in_split, in_base, in_stride, out_base;
    uint32_t out_stride, wiring_a, wiring_b, source;
    uint32_t next_start, next_entry, next_in_base, next_in_stride;
    uint32_t next_out_base, next_unit_stride, moore, height;
    uint32_t width, periodic, stream, threshold;
    uint32_t step;
} vk_push_gate_backward;
_Static_assert(sizeof(vk_push_gate_backward) == 116, "mirror of gate_backward_push in glsl/common.glsl");

/* glsl/grid_backward.comp */
typedef struct {
    uint32_t cells, pitch, height, width;
    uint32_t periodic, channels, kernels, wiring_a;
    uint32_t moore_row, update_start, update_entry, update_row;
} vk_push_grid_backward;
_Static_assert(sizeof(vk_push_grid_backward) == 48, "mirror of grid_backward_push in glsl/common.glsl");

/* glsl/gate_sums_reduce.comp */
typedef struct {
    uint32_t gate_count, chunks, partial_rows;
} vk_push_gate_sums_reduce;
_Static_assert(sizeof(vk_push_gate_sums_reduce) == 12, "mirror of gate_sums_reduce_push in glsl/common.glsl");

#endif
