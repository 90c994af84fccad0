#version 450
// tn_clip_norm.comp: scales grads[0..count) by max_norm / (norm + 1e-6) when that is below 1,
// norm = sqrt(sumsq[0]) from tn_reduce.comp (mode 2), as tn_clip_grad_norm in src/tensor/tn_params.c.
// The norm never leaves the GPU, so clipping needs no host read.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer grads_buf { float grads[]; };
layout(std430, binding = 1) readonly buffer sumsq_buf { float sumsq[]; };
layout(push_constant) uniform push_block { tn_clip_push pc; };

void main()
{
    uint i = global_index();
    if (i >= pc.count) return;
    float scale = pc.max_norm / (sqrt(sumsq[0]) + 1e-6);
    if (scale < 1.0) grads[i] *= scale;
}
