#version 450
// reduce_sum.comp: out[out_index] = sum of values[0..count), by one workgroup in a fixed order
// (strided partial sums, then a tree), so the result is the same bits on every run.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer values_buf { float values[]; };
layout(std430, binding = 1) buffer out_buf { float sums[]; };
layout(push_constant) uniform push_block { reduce_push pc; };

shared float part[gl_WorkGroupSize.x];

void main()
{
    uint lid = gl_LocalInvocationID.x;
    float sum = 0.0;
    for (uint i = lid; i < pc.count; i += gl_WorkGroupSize.x) sum += values[i];
    part[lid] = sum;
    barrier();
    for (uint half_size = gl_WorkGroupSize.x / 2; half_size > 0; half_size >>= 1) {
        if (lid < half_size) part[lid] += part[lid + half_size];
        barrier();
    }
    if (lid == 0) sums[pc.out_index] = part[0];
}
