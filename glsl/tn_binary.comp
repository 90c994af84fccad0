#version 450
// tn_binary.comp: out = f(a, b; s0, s1) elementwise over strided views (src/tensor_vk/tn_vk_kernels.c),
// f by op code (tn_bfn). a and b are already broadcast to out's shape (stride 0 on broadcast
// dims). Iterator operands: 0 out, 1 a, 2 b. out may alias a or b element for element.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer out_buf { float out_v[]; };
layout(std430, binding = 1) readonly buffer a_buf { float a_v[]; };
layout(std430, binding = 2) readonly buffer b_buf { float b_v[]; };
layout(std430, binding = 3) readonly buffer meta_buf { int meta[]; };
layout(push_constant) uniform push_block { tn_ew_push pc; };

#include "tn_common.glsl"

void main()
{
    uint i = global_index();
    if (i >= pc.count) return;
    ivec3 off = tn_iter_offsets(0u, i);
    out_v[off.x] = tn_binary_fn(pc.op, a_v[off.y], b_v[off.z], pc.s0, pc.s1);
}
