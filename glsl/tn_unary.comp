#version 450
// tn_unary.comp: out = f(a; s0, s1) elementwise over strided views (src/tensor_vk/tn_vk_kernels.c), f by
// op code (tn_ufn, or TN_VK_FILL which ignores a). Iterator operands: 0 out, 1 a. out may
// alias a element for element (in-place scaling).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer out_buf { float out_v[]; };
layout(std430, binding = 1) readonly buffer a_buf { float a_v[]; };
layout(std430, binding = 2) readonly buffer meta_buf { int meta[]; };
layout(push_constant) uniform push_block { tn_ew_push pc; };

#include "tn_common.glsl"

void main()
{
    uint i = global_index();
    if (i >= pc.count) return;
    ivec3 off = tn_iter_offsets(0u, i);
    float x = pc.op == TN_VK_FILL ? 0.0 : a_v[off.y];
    out_v[off.x] = tn_unary_fn(pc.op, x, pc.s0, pc.s1);
}
