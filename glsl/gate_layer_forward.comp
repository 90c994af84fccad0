#version 450
// gate_layer_forward.comp: one gate layer for every unit and cell (ca_cpu_layer.c:
// gate_layer_forward). Invocation (cell, unit * n_out + g). See layer_push for the addressing.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };    // [C][pitch]
layout(std430, binding = 1) buffer block_buf { float block[]; };           // step block
layout(std430, binding = 2) readonly buffer coeffs_buf { vec4 coeffs[]; }; // [gates]
layout(std430, binding = 3) readonly buffer wiring_buf { uint wiring[]; };
layout(push_constant) uniform push_block { layer_push pc; };

float read_input(uint i, uint unit, uint cell)
{
    if (i < pc.in_split) return grid[i * pc.pitch + cell];
    return block[(pc.in_base + unit * pc.in_stride + i - pc.in_split) * pc.pitch + cell];
}

void main()
{
    uint cell = gl_GlobalInvocationID.x, g = gl_GlobalInvocationID.y % pc.n_out;
    uint unit = gl_GlobalInvocationID.y / pc.n_out;
    if (cell >= pc.cells) return;
    float a = read_input(wiring[pc.wiring_a + g], unit, cell);
    float b = read_input(wiring[pc.wiring_b + g], unit, cell);
    vec4 c = coeffs[pc.coeff_base + (unit / pc.unit_channels) * pc.coeff_stride + g];
    block[(pc.out_base + unit * pc.out_stride + g) * pc.pitch + cell] = gate_eval(c, a, b);
}
