#version 450
// logits_grad.comp: d loss / d logits from S per gate (logits_grad.glsl). One invocation per gate.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "logits_grad.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer logits_buf { float logits[]; }; // [gates][16]
layout(std430, binding = 1) readonly buffer sums_buf { vec4 sums[]; };      // S [gates]
layout(std430, binding = 2) writeonly buffer grad_buf { float dlogits[]; }; // [gates][16]
layout(push_constant) uniform push_block { logits_grad_push pc; };

void main()
{
    uint g = global_index();
    if (g >= pc.gate_count) return;
    float z[16], dz[16];
    for (uint i = 0; i < 16; i++) z[i] = logits[g * 16 + i];
    gate_logits_gradient(z, sums[g], dz);
    for (uint i = 0; i < 16; i++) dlogits[g * 16 + i] = dz[i];
}
