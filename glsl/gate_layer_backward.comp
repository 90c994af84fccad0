#version 450
// gate_layer_backward.comp: input gradients of one gate layer, gathered through the reverse
// wiring in ascending (gate, slot) order: no atomics, the same bits every run (ca_cpu_layer.c:
// gate_layer_backward). Invocation (cell, unit * n_in + i). Grid inputs (i < in_split) add
// into dgrid, which already holds the kept part; block inputs are written.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };    // [C][pitch]
layout(std430, binding = 1) readonly buffer block_buf { float block[]; };  // step block
layout(std430, binding = 2) readonly buffer coeffs_buf { vec4 coeffs[]; }; // [gates]
layout(std430, binding = 3) readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 4) buffer dgrid_buf { float dgrid[]; };           // [C][pitch]
layout(std430, binding = 5) buffer dact_buf { float dact[]; };             // step gradients
layout(push_constant) uniform push_block { layer_push pc; };

float read_input(uint i, uint unit, uint cell)
{
    if (i < pc.in_split) return grid[i * pc.pitch + cell];
    return block[(pc.in_base + unit * pc.in_stride + i - pc.in_split) * pc.pitch + cell];
}

void main()
{
    uint cell = gl_GlobalInvocationID.x, i = gl_GlobalInvocationID.y % pc.n_in;
    uint unit = gl_GlobalInvocationID.y / pc.n_in;
    if (cell >= pc.cells) return;
    uint coeff_unit = pc.coeff_base + (unit / pc.unit_channels) * pc.coeff_stride;
    float sum = 0.0;
    for (uint e = wiring[pc.reverse_start + i]; e < wiring[pc.reverse_start + i + 1]; e++) {
        uint entry = wiring[pc.reverse_entry + e], g = entry >> 1;
        vec4 c = coeffs[coeff_unit + g];
        float dy = dact[(pc.out_base + unit * pc.out_stride + g) * pc.pitch + cell];
        if ((entry & 1u) == 0u)
            sum += dy * (c.y + c.w * read_input(wiring[pc.wiring_b + g], unit, cell));
        else
            sum += dy * (c.z + c.w * read_input(wiring[pc.wiring_a + g], unit, cell));
    }
    if (i < pc.in_split)
        dgrid[i * pc.pitch + cell] += sum;
    else
        dact[(pc.in_base + unit * pc.in_stride + i - pc.in_split) * pc.pitch + cell] = sum;
}
