#version 450
// tn_noise.comp: out[offset + i] = the noise of element i (tn__noise_value in
// src/tensor/tn_cpu_fused.c): uniform in (0, 1) from the top 23 bits of tn_noise_bits(key, i),
// the same float as the CPU's, or Gumbel -log(-log(u)) of it (kind 1).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "tn_push.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer out_buf { float out_v[]; };
layout(push_constant) uniform push_block { tn_noise_push pc; };

#define TN_NO_ITER
#include "tn_common.glsl"

void main()
{
    uint i = global_index();
    if (i >= pc.count) return;
    float u = tn_noise_uniform(tn_noise_bits(pc.key, i));
    out_v[pc.offset + i] = pc.kind == 1u ? -tn_log(-tn_log(u)) : u;
}
