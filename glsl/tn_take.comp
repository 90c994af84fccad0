#version 450
// tn_take.comp: out[dst_offset + p] = a[src_offset + idx[p]] for p < count, on dense storage
// (gather, index_select; src/tensor_vk/tn_vk_kernels.c). idx comes from the host per call.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer out_buf { float out_v[]; };
layout(std430, binding = 1) readonly buffer a_buf { float a_v[]; };
layout(std430, binding = 2) readonly buffer idx_buf { int idx[]; };
layout(push_constant) uniform push_block { tn_index_push pc; };

void main()
{
    uint p = global_index();
    if (p >= pc.count) return;
    out_v[pc.dst_offset + p] = a_v[pc.src_offset + uint(idx[p])];
}
