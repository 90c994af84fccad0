#version 450
// logits_grad.comp: d loss / d logits from S per gate (gates.c: gate_logits_backward):
// dp = M S, dz_i = p_i (dp_i - sum_j p_j dp_j). One invocation per gate.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer logits_buf { float logits[]; }; // [gates][16]
layout(std430, binding = 1) readonly buffer sums_buf { vec4 sums[]; };      // S [gates]
layout(std430, binding = 2) writeonly buffer grad_buf { float dlogits[]; }; // [gates][16]
layout(push_constant) uniform push_block { logits_grad_push pc; };

void main()
{
    uint g = global_index();
    if (g >= pc.gate_count) return;
    float p[16], dp[16], top = logits[g * 16], total = 0.0, mean = 0.0;
    for (uint i = 1; i < 16; i++) top = max(top, logits[g * 16 + i]);
    for (uint i = 0; i < 16; i++) total += (p[i] = exp(logits[g * 16 + i] - top));
    vec4 s = sums[g];
    for (uint i = 0; i < 16; i++) {
        p[i] /= total;
        dp[i] = dot(GATE_OP_MATRIX[i], s);
        mean += p[i] * dp[i];
    }
    for (uint i = 0; i < 16; i++) dlogits[g * 16 + i] = p[i] * (dp[i] - mean);
}
