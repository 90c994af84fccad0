#version 450
// gate_coeff_grad.comp: S += sum over cells (and the channels that share a kernel) of
// dout * [1, a, b, ab], one workgroup per coefficient set, in a fixed strided order and a
// fixed tree: deterministic, no atomics (ca_cpu_layer.c: gate_coeff_grad). Sets are
// (kernel, gate) for perception layers, gates for update layers. moore != 0: the first
// perception layer, whose a is a neighbour and b the centre.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };    // [C][pitch]
layout(std430, binding = 1) readonly buffer block_buf { float block[]; };  // step block
layout(std430, binding = 2) readonly buffer dact_buf { float dact[]; };    // step gradients
layout(std430, binding = 3) readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 4) buffer sums_buf { vec4 sums[]; };              // S [gates]
layout(push_constant) uniform push_block { layer_push pc; };

shared vec4 part[gl_WorkGroupSize.x];

float read_input(uint i, uint unit, uint cell)
{
    if (i < pc.in_split) return grid[i * pc.pitch + cell];
    return block[(pc.in_base + unit * pc.in_stride + i - pc.in_split) * pc.pitch + cell];
}

void main()
{
    uint set = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, lid = gl_LocalInvocationID.x;
    uint k = set / pc.n_out, g = set % pc.n_out;
    vec4 acc = vec4(0.0);
    for (uint index = lid; index < pc.unit_channels * pc.cells; index += gl_WorkGroupSize.x) {
        uint ch = index / pc.cells, cell = index % pc.cells, unit = k * pc.unit_channels + ch;
        float a, b;
        if (pc.moore != 0) {
            uint j = wiring[pc.wiring_a + g];
            int at = shifted_cell(cell, pc.height, pc.width, pc.periodic, int(j / 3) - 1, int(j % 3) - 1);
            a = at < 0 ? 0.0 : grid[ch * pc.pitch + uint(at)];
            b = grid[ch * pc.pitch + cell];
        } else {
            a = read_input(wiring[pc.wiring_a + g], unit, cell);
            b = read_input(wiring[pc.wiring_b + g], unit, cell);
        }
        float dy = dact[(pc.out_base + unit * pc.out_stride + g) * pc.pitch + cell];
        acc += dy * vec4(1.0, a, b, a * b);
    }
    part[lid] = acc;
    barrier();
    for (uint half_size = gl_WorkGroupSize.x / 2; half_size > 0; half_size >>= 1) {
        if (lid < half_size) part[lid] += part[lid + half_size];
        barrier();
    }
    if (lid == 0) sums[pc.coeff_base + set] += part[0];
}
