#version 450
// sums_reduce.comp: S[g] = sum over tiles of the fused backward's partial sums, tile by tile
// in order: the same bits every run. One invocation per gate.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer partial_buf { vec4 partial[]; }; // [tiles][gates]
layout(std430, binding = 1) writeonly buffer sums_buf { vec4 sums[]; };      // [gates]
layout(push_constant) uniform push_block { sums_reduce_push pc; };

void main()
{
    uint g = global_index();
    if (g >= pc.gate_count) return;
    vec4 total = vec4(0.0);
    for (uint tile = 0; tile < pc.tiles; tile++) total += partial[tile * pc.gate_count + g];
    sums[g] = total;
}
