#version 450
// tn_put_add.comp: dst[idx[p]] += src[p] (the backward of gather and max) without atomics: the
// host groups the sources by destination, so one invocation owns each distinct destination and
// adds its sources in ascending p, the order of the CPU loop; repeated indices are exact and
// the result is the same bits on every run.
// csr (count = distinct destinations U): [0, U) destination indices, [U, 2U] where each one's
// sources start in the list at [2U + 1, ...) of source positions.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer dst_buf { float dst_v[]; };
layout(std430, binding = 1) readonly buffer src_buf { float src_v[]; };
layout(std430, binding = 2) readonly buffer csr_buf { int csr[]; };
layout(push_constant) uniform push_block { tn_index_push pc; };

void main()
{
    uint u = global_index();
    if (u >= pc.count) return;
    uint d = pc.dst_offset + uint(csr[u]), list = 2u * pc.count + 1u;
    float v = dst_v[d];
    for (int j = csr[pc.count + u]; j < csr[pc.count + u + 1u]; j++) v += src_v[pc.src_offset + uint(csr[list + uint(j)])];
    dst_v[d] = v;
}
