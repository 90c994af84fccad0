#version 450
// gate_sums_reduce.comp: S[gate] = the sum of the partial sums of the gate's activation rows
// (one row for an update gate, one per channel for a perception gate) over every chunk or slot
// (gate_backward.comp, fused_step_backward.comp). One workgroup per gate: each invocation adds
// a strided share in order, then a fixed tree: the same bits every run.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer partial_buf { vec4 partial[]; }; // [chunks][partial_rows]
layout(std430, binding = 1) readonly buffer rows_buf { uvec4 gate_rows[]; }; // first row, rows, stride
layout(std430, binding = 2) writeonly buffer sums_buf { vec4 sums[]; };      // S [gates]
layout(push_constant) uniform push_block { gate_sums_reduce_push pc; };

shared vec4 shares[gl_WorkGroupSize.x];

void main()
{
    uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, lid = gl_LocalInvocationID.x;
    if (g >= pc.gate_count) return; // the whole workgroup
    uvec4 rows = gate_rows[g];
    vec4 total = vec4(0.0);
    for (uint i = lid; i < rows.y * pc.chunks; i += gl_WorkGroupSize.x) {
        uint r = i / pc.chunks, chunk = i % pc.chunks;
        total += partial[chunk * pc.partial_rows + rows.x + r * rows.z];
    }
    shares[lid] = total;
    barrier();
    for (uint half_size = gl_WorkGroupSize.x / 2; half_size > 0; half_size /= 2) {
        if (lid < half_size) shares[lid] += shares[lid + half_size];
        barrier();
    }
    if (lid == 0) sums[g] = shares[0];
}
