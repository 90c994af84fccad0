#version 450
// tn_optim_check.comp: the skip decision of tn_optim.comp's step, before it: workgroup w leaves
// control[8 + w] != 0 when an element of its grid-stride share of grads is NaN or infinite
// (check != 0; exponent bits all set, a test no fast-math compiler folds away), and workgroup 0
// also when the caller's flag words, masked, have a bit set. A fixed tree within each workgroup,
// no atomics: every run leaves the same words. Every workgroup writes its word each step, so
// nothing needs clearing.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "tn_push.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grads_buf { float grads[]; };
layout(std430, binding = 1) readonly buffer flag_buf { uint flag_words[]; };
layout(std430, binding = 2) buffer control_buf { uint control[]; };
layout(push_constant) uniform push_block { tn_optim_check_push pc; };

shared uint bad[gl_WorkGroupSize.x];

void main()
{
    uint lid = gl_LocalInvocationID.x, group = gl_WorkGroupID.x, size = gl_WorkGroupSize.x;
    uint b = 0u;
    if (pc.check != 0u)
        for (uint j = group * size + lid; j < pc.count; j += gl_NumWorkGroups.x * size)
            b |= (floatBitsToUint(grads[j]) & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
    if (group == 0u)
        for (uint j = lid; j < pc.flag_words; j += size) b |= (flag_words[pc.flag_offset + j] & pc.mask) != 0u ? 1u : 0u;
    bad[lid] = b;
    barrier();
    for (uint h = size / 2u; h > 0u; h >>= 1) {
        if (lid < h) bad[lid] |= bad[lid + h];
        barrier();
    }
    if (lid == 0u) control[8u + group] = bad[0];
}
