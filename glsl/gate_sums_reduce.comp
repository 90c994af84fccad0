#version 450
// gate_sums_reduce.comp: S[gate] = the sum of gate_backward.comp's partial sums of the gate's
// activation rows (one row for an update gate, one per channel for a perception gate), channel
// by channel and chunk by chunk in order: the same bits every run. One invocation per gate.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer partial_buf { vec4 partial[]; }; // [chunks][partial_rows]
layout(std430, binding = 1) readonly buffer rows_buf { uvec4 gate_rows[]; }; // first row, rows, stride
layout(std430, binding = 2) writeonly buffer sums_buf { vec4 sums[]; };      // S [gates]
layout(push_constant) uniform push_block { gate_sums_reduce_push pc; };

void main()
{
    uint g = global_index();
    if (g >= pc.gate_count) return;
    uvec4 rows = gate_rows[g];
    vec4 total = vec4(0.0);
    for (uint r = 0; r < rows.y; r++)
        for (uint chunk = 0; chunk < pc.chunks; chunk++) total += partial[chunk * pc.partial_rows + rows.x + r * rows.z];
    sums[g] = total;
}
