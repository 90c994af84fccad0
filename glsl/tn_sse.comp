#version 450
// tn_sse.comp: the sum of squared errors in one dispatch, keeping what its backward needs:
// diff[i] = pred[i] - target[i] (dense, C order) and loss[loss_offset] = sum diff^2.
// `groups` workgroups (at most 256) walk grid-stride shares in a fixed order (compensated sums),
// reduce them in a fixed tree and leave one partial each in work[0 .. groups); the workgroup
// that takes the last ticket (work[256], an integer atomic) adds the partials in a fixed tree,
// writes the loss and clears the ticket for the next use. Which workgroup finishes last changes
// nothing: the result is the same bits on every run (no float atomics).
// meta: iterator over pred's shape (operands 0 diff, dense; 1 pred; 2 target).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "tn_push.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer diff_buf { float diff_v[]; };
layout(std430, binding = 1) readonly buffer pred_buf { float pred_v[]; };
layout(std430, binding = 2) readonly buffer target_buf { float target_v[]; };
layout(std430, binding = 3) readonly buffer meta_buf { int meta[]; };
layout(std430, binding = 4) coherent buffer work_buf { uint work[]; };
layout(std430, binding = 5) buffer loss_buf { float loss_v[]; };
layout(push_constant) uniform push_block { tn_sse_push pc; };

#include "tn_common.glsl"

const uint TN_SSE_TICKET = 256u; // TN_VK_SSE_GROUPS in src/tensor_vk/tn_vk_internal.h

shared float part[gl_WorkGroupSize.x];
shared bool last;

// The workgroup's sum of v, in a fixed tree order; every invocation gets it.
float group_sum(float v)
{
    uint lid = gl_LocalInvocationID.x;
    part[lid] = v;
    barrier();
    for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
        if (lid < h) part[lid] += part[lid + h];
        barrier();
    }
    float r = part[0];
    barrier();
    return r;
}

void main()
{
    uint lid = gl_LocalInvocationID.x, group = gl_WorkGroupID.x, size = gl_WorkGroupSize.x;
    precise float sum = 0.0, carry = 0.0;
    for (uint j = group * size + lid; j < pc.count; j += pc.groups * size) {
        ivec3 off = tn_iter_offsets(0u, j);
        float d = pred_v[off.y] - target_v[off.z];
        diff_v[off.x] = d;
        precise float y = d * d - carry;
        precise float t = sum + y;
        carry = (t - sum) - y;
        sum = t;
    }
    float total = group_sum(sum);
    if (lid == 0u) {
        work[group] = floatBitsToUint(total);
        memoryBarrierBuffer(); // the partial is visible before the ticket says so
        last = atomicAdd(work[TN_SSE_TICKET], 1u) == pc.groups - 1u;
    }
    barrier();
    if (!last) return; // uniform: `last` is shared
    memoryBarrierBuffer();
    float v = lid < pc.groups ? uintBitsToFloat(work[lid]) : 0.0;
    total = group_sum(v);
    if (lid == 0u) {
        loss_v[pc.loss_offset] = total;
        work[TN_SSE_TICKET] = 0u;
    }
}
