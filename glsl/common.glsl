// common.glsl: shared by every kernel (#include "common.glsl" after #version 450).
// Holds the gate op matrix and the push-constant structs; both mirror C definitions that
// tests pin: GATE_OP_MATRIX == gate_op_matrix (src/core/gates.c), <kernel>_push ==
// vk_push_<kernel> (src/vk/vk_push.h, with _Static_assert on the size).
#ifndef DLCA_COMMON_GLSL
#define DLCA_COMMON_GLSL

const uint GATE_OP_COUNT = 16;
const uint GATE_COEFFS = 4;

// Row i = (m0, m1, m2, m3) of op i: op_i(a, b) = m0 + m1 a + m2 b + m3 ab.
const vec4 GATE_OP_MATRIX[16] = vec4[16](
    vec4(0, 0, 0, 0),   // FALSE
    vec4(0, 0, 0, 1),   // AND
    vec4(0, 1, 0, -1),  // A AND NOT B
    vec4(0, 1, 0, 0),   // A
    vec4(0, 0, 1, -1),  // NOT A AND B
    vec4(0, 0, 1, 0),   // B
    vec4(0, 1, 1, -2),  // XOR
    vec4(0, 1, 1, -1),  // OR
    vec4(1, -1, -1, 1), // NOR
    vec4(1, -1, -1, 2), // XNOR
    vec4(1, 0, -1, 0),  // NOT B
    vec4(1, 0, -1, 1),  // A OR NOT B
    vec4(1, -1, 0, 0),  // NOT A
    vec4(1, -1, 0, 1),  // NOT A OR B
    vec4(1, 0, 0, -1),  // NAND
    vec4(1, 0, 0, 0)    // TRUE
);

// Linear invocation index of a dispatch made by vk_dispatch_1d (x groups, then rows of y).
uint global_index()
{
    return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

// ---- push-constant structs (mirrors of src/vk/vk_push.h) ----

struct gate_coefficients_push {
    uint gate_count;
    uint hard;
};


// ---- the CA engine's shared pieces (mirrors of src/core/rng.h and src/core/ca_shape.c) ----

// lowbias32, as rng_hash32 in src/core/rng.h.
uint rng_hash32(uint x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// As rng_fires in src/core/rng.h: does `cell` fire at step t? threshold >= 2^24: always.
bool rng_fires(uint stream, uint t, uint cell, uint threshold)
{
    return (rng_hash32(rng_hash32(stream ^ rng_hash32(t)) ^ cell) >> 8) < threshold;
}

// The cell at offset (dy, dx) from `cell` in a batch of height x width planes, or -1 outside a
// zero boundary; as ca_shifted_cell in src/core/ca_shape.c. The offsets are neighbours' (-1, 0 or
// 1), so a periodic boundary wraps once at most: a compare, not a %, whose division sequence by
// a value known only at run time the fused kernels would run 9 times a cell.
int shifted_cell(uint cell, uint height, uint width, uint periodic, int dy, int dx)
{
    uint plane = height * width;
    uint b = cell / plane, yx = cell % plane;
    int y = int(yx / width) + dy, x = int(yx % width) + dx;
    if (periodic != 0) {
        y = y < 0 ? y + int(height) : (y >= int(height) ? y - int(height) : y);
        x = x < 0 ? x + int(width) : (x >= int(width) ? x - int(width) : x);
    } else if (y < 0 || y >= int(height) || x < 0 || x >= int(width)) {
        return -1;
    }
    return int(b * plane + uint(y) * width + uint(x));
}

// The cells of `cell`'s 3x3 neighbourhood, row-major (4: the cell itself), -1 outside a zero
// boundary: shifted_cell's 9 offsets from one division of the cell into (batch, row, column).
// Use it wherever several neighbours are needed: shifted_cell per offset repeats the division
// and the boundary branches each time, enough code to be most of the fused backward's first
// phase (docs/bench-notes.md, round 12).
int[9] neighbourhood_cells(uint cell, uint height, uint width, uint periodic)
{
    uint plane = height * width, b = cell / plane, yx = cell - b * plane, y = yx / width, x = yx - y * width;
    int row[3], column[3];
    for (int d = 0; d < 3; d++) {
        int r = int(y) + d - 1, c = int(x) + d - 1;
        bool r_out = r < 0 || r >= int(height), c_out = c < 0 || c >= int(width);
        r = r < 0 ? r + int(height) : (r >= int(height) ? r - int(height) : r);
        c = c < 0 ? c + int(width) : (c >= int(width) ? c - int(width) : c);
        row[d] = periodic == 0u && r_out ? -1 : int(b * plane) + r * int(width);
        column[d] = periodic == 0u && c_out ? -1 : c;
    }
    int at[9];
    for (int j = 0; j < 9; j++) at[j] = row[j / 3] < 0 || column[j % 3] < 0 ? -1 : row[j / 3] + column[j % 3];
    return at;
}

// y = c0 + c1 a + c2 b + c3 ab
// Clamped to [0, 1] as src/core/gates.h's gate_eval: rounding outside [0, 1] is amplified by the
// relaxed ops; gradients treat the clamp as the identity. Written as comparisons, which keep a
// NaN on lavapipe; NVIDIA's compiler makes them a saturation, which maps a NaN into [0, 1], so
// the trainer finds a NaN at the logits gradient instead (the optimizer's non-finite check).
float gate_eval(vec4 c, float a, float b)
{
    float y = c.x + c.y * a + c.z * b + c.w * a * b;
    return y < 0.0 ? 0.0 : (y > 1.0 ? 1.0 : y);
}

// Rows of `pitch` floats: row r, cell x lives at r * pitch + x (pitch >= cells, padded so
// that every row starts on an aligned boundary and a view of a step block is bindable).

// glsl/moore_forward.comp
struct moore_push {
    uint cells, pitch, height, width;
    uint periodic, channels, kernels, coeff_base;
    uint wiring_a;  // the moore layer's neighbour indices in the wiring buffer, 8 a kernel
    uint row;       // first row of the moore layer in the step block
};

// glsl/gate_layer_forward.comp.
// A layer of n_out gates applied to `units` blocks of rows (perception: one unit per (kernel,
// channel), all sharing the wiring; update: one unit). Input i of unit u is grid row i when
// i < in_split, else block row in_base + u * in_stride + (i - in_split). Output g of unit u is
// block row out_base + u * out_stride + g. Gate (u, g) uses coefficients
// coeff_base + (u / unit_channels) * coeff_stride + g.
struct layer_push {
    uint cells, pitch, n_in, n_out;
    uint units, unit_channels, in_split, in_base;
    uint in_stride, out_base, out_stride, coeff_base;
    uint coeff_stride, wiring_a, wiring_b, reverse_start;
    uint reverse_entry, moore, height, width;  // not read here: the host's layer description
    uint periodic;
};

// glsl/step_fire.comp
struct fire_push {
    uint cells, pitch, channels, proposed_row;
    uint stream, threshold, step;
};

// glsl/grid_add.comp
struct grid_add_push {
    uint n;
};

// glsl/buffer_fill.comp
struct buffer_fill_region {
    uint first, row_words, row_pitch, rows;
    uint value;
};
struct buffer_fill_push {
    buffer_fill_region region[3];
};

// glsl/hard_step.comp (src/hard/hard_gpu.c)
struct hard_step_push {
    uint invocations, words, rows, height;
    uint width, channels, n_instr, periodic;
    uint n_slots, stream, threshold, step;
};
// glsl/fused_step_forward.comp, fused_step_backward.comp, fused_grid_gather.comp: one CA step
// per dispatch; a workgroup owns a tile of cells (TILE_CELLS, a specialisation constant: in
// ca_fused.glsl) and walks the layer table.
// perception_layers: table rows 0.. that are perception; update_inputs: C + K*C*bits;
// max_width: the widest update input or layer; act_rows: backward's activation rows per cell;
// partial_rows: rows of S partials per workgroup; gather: add the neighbours' moore gradients;
// steps: the rollout's T; run_steps: how many steps a persistent kernel runs from `step`.
struct fused_push {
    uint cells, pitch, layer_count, height;
    uint width, periodic, channels, kernels;
    uint perception_layers, stream, threshold, step;
    uint partial_rows, gather, max_width, act_rows;
    uint update_inputs, steps, run_steps;
};

// glsl/task_round.comp
struct task_push {
    uint cells, pitch, height, width;
    uint channels, loss_channels, start, target;
    uint stream, periodic;
};

// ---- tn tensors on the device (mirrors of the vk_push_tn_* structs; see tn_common.glsl) ----
// glsl/tn_unary.comp, glsl/tn_binary.comp
struct tn_ew_push {
    uint op, count;
    float s0, s1;
};
// glsl/tn_reduce.comp
struct tn_reduce_push {
    uint n_out, n_red, mode;
};
// glsl/tn_matmul.comp
struct tn_matmul_push {
    uint n, k, m, batch;
};
// glsl/tn_softmax.comp
struct tn_softmax_push {
    uint lines, len, mode;
};
// glsl/tn_take.comp, glsl/tn_put_add.comp
struct tn_index_push {
    uint count, dst_offset, src_offset;
};
// glsl/tn_clip_norm.comp
struct tn_clip_push {
    uint count;
    float max_norm;
};
// glsl/gate_backward.comp: layer_push's addressing for a, b and the coefficients, plus where dy
// comes from (source 0: the next layer's slots at input next_in_base + unit * next_in_stride + g,
// rows next_out_base + unit * next_unit_stride + gate; source 1: dgrid through the fire mask).
struct gate_backward_push {
    uint cells, pitch, per_thread, partial_rows;
    uint n_out, unit_channels, coeff_base, coeff_stride;
    uint in_split, in_base, in_stride, out_base;
    uint out_stride, wiring_a, wiring_b, source;
    uint next_start, next_entry, next_in_base, next_in_stride;
    uint next_out_base, next_unit_stride, moore, height;
    uint width, periodic, stream, threshold;
    uint step;
};

// glsl/grid_backward.comp
struct grid_backward_push {
    uint cells, pitch, height, width;
    uint periodic, channels, kernels, wiring_a;
    uint moore_row, update_start, update_entry, update_row;
};

// glsl/gate_sums_reduce.comp
struct gate_sums_reduce_push {
    uint gate_count, chunks, partial_rows;
};

#endif
