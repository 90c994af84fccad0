#version 450
// fused_step_backward.comp: one CA step of BPTT in one dispatch, except the moore layer's
// gradient into neighbouring cells (moore_backward.comp, next). A workgroup owns a tile of
// cells: it splits dL/dgrid_{t+1} by the fire mask, then per layer, last to first, adds the
// layer's S over its tile into its own row of partial sums (one thread per coefficient set,
// cells in order: deterministic, no atomics) and gathers the input gradients through the
// reverse wiring (ca_cpu.c: ca_step_backward).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "ca_fused.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };    // grid_t [C][pitch]
layout(std430, binding = 1) readonly buffer block_buf { float block[]; };  // step block
layout(std430, binding = 2) readonly buffer coeffs_buf { vec4 coeffs[]; }; // [gates]
layout(std430, binding = 3) readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 4) readonly buffer layers_buf { fused_layer layers[]; };
layout(std430, binding = 5) coherent buffer dgrid_buf { float dgrid[]; };  // [C][pitch]
layout(std430, binding = 6) coherent buffer dact_buf { float dact[]; };    // step gradients
layout(std430, binding = 7) buffer partial_buf { vec4 partial[]; };        // [tiles][gates] S
layout(push_constant) uniform push_block { fused_push pc; };

float read_input(fused_layer L, uint i, uint unit, uint cell)
{
    if (i < L.in_split) return grid[i * pc.pitch + cell];
    return block[(L.in_base + unit * L.in_stride + i - L.in_split) * pc.pitch + cell];
}

void sync_workgroup()
{
    memoryBarrierBuffer();
    barrier();
}

void split_by_fire(uint first, uint width)
{
    for (uint item = gl_LocalInvocationID.x; item < pc.channels * width; item += gl_WorkGroupSize.x) {
        uint cell = first + item % width, c = item / width;
        float d = dgrid[c * pc.pitch + cell];
        bool fire = rng_fires(pc.stream, pc.step, cell, pc.threshold);
        dact[(pc.proposed_row + c) * pc.pitch + cell] = fire ? d : 0.0;
        dgrid[c * pc.pitch + cell] = fire ? 0.0 : d;
    }
}

// This tile's share of S for every coefficient set of layer L: sets are (kernel, gate).
void layer_sums(fused_layer L, uint first, uint width)
{
    uint sets = L.units / L.unit_channels * L.n_out;
    for (uint set = gl_LocalInvocationID.x; set < sets; set += gl_WorkGroupSize.x) {
        uint k = set / L.n_out, g = set % L.n_out;
        vec4 acc = vec4(0.0);
        for (uint ch = 0; ch < L.unit_channels; ch++) {
            uint unit = k * L.unit_channels + ch, out_row = (L.out_base + unit * L.out_stride + g) * pc.pitch;
            for (uint cell = first; cell < first + width; cell++) {
                float a, b;
                if (L.kind == LAYER_MOORE) {
                    uint j = wiring[L.wiring_a + g];
                    int at = shifted_cell(cell, pc.height, pc.width, pc.periodic, int(j / 3) - 1, int(j % 3) - 1);
                    a = at < 0 ? 0.0 : grid[ch * pc.pitch + uint(at)];
                    b = grid[ch * pc.pitch + cell];
                } else {
                    a = read_input(L, wiring[L.wiring_a + g], unit, cell);
                    b = read_input(L, wiring[L.wiring_b + g], unit, cell);
                }
                acc += dact[out_row + cell] * vec4(1.0, a, b, a * b);
            }
        }
        partial[gl_WorkGroupID.x * pc.gate_count + L.coeff_base + set] += acc;
    }
}

// Input gradients of layer L: grid inputs add into dgrid, block inputs are written.
void layer_inputs(fused_layer L, uint first, uint width)
{
    uint items = L.units * L.n_in * width;
    for (uint item = gl_LocalInvocationID.x; item < items; item += gl_WorkGroupSize.x) {
        uint cell = first + item % width, i = item / width % L.n_in, unit = item / width / L.n_in;
        uint coeff_unit = L.coeff_base + (unit / L.unit_channels) * L.coeff_stride;
        float sum = 0.0;
        for (uint e = wiring[L.reverse_start + i]; e < wiring[L.reverse_start + i + 1]; e++) {
            uint entry = wiring[L.reverse_entry + e], g = entry >> 1;
            vec4 c = coeffs[coeff_unit + g];
            float dy = dact[(L.out_base + unit * L.out_stride + g) * pc.pitch + cell];
            if ((entry & 1u) == 0u)
                sum += dy * (c.y + c.w * read_input(L, wiring[L.wiring_b + g], unit, cell));
            else
                sum += dy * (c.z + c.w * read_input(L, wiring[L.wiring_a + g], unit, cell));
        }
        if (i < L.in_split)
            dgrid[i * pc.pitch + cell] += sum;
        else
            dact[(L.in_base + unit * L.in_stride + i - L.in_split) * pc.pitch + cell] = sum;
    }
}

void main()
{
    uint first = gl_WorkGroupID.x * pc.tile, width = min(pc.tile, pc.cells - first);
    split_by_fire(first, width);
    sync_workgroup();
    for (uint l = pc.layer_count; l-- > 0;) {
        fused_layer L = layers[l];
        layer_sums(L, first, width);
        if (L.kind != LAYER_MOORE) layer_inputs(L, first, width);
        sync_workgroup();
    }
}
