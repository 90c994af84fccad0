#version 450
// gate_coefficients.comp: per gate, c = M^T softmax(z) (or the argmax row of M when hard).
// logits: [gate_count][16], coeffs: [gate_count][4]. One invocation per gate.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer logits_buf { float logits[]; };
layout(std430, binding = 1) writeonly buffer coeffs_buf { float coeffs[]; };
layout(push_constant) uniform push_block { gate_coefficients_push pc; };

void main()
{
    uint g = global_index();
    if (g >= pc.gate_count) return;
    float z[16];
    uint best = 0;
    for (uint i = 0; i < GATE_OP_COUNT; i++) {
        z[i] = logits[g * GATE_OP_COUNT + i];
        if (z[i] > z[best]) best = i; // strict: lowest index wins ties
    }
    vec4 c;
    if (pc.hard != 0) {
        c = GATE_OP_MATRIX[best];
    } else {
        // Max-shifted softmax: exp never overflows, and the largest term is exactly 1.
        float top = z[best], total = 0.0;
        vec4 acc = vec4(0.0);
        for (uint i = 0; i < GATE_OP_COUNT; i++) {
            float e = exp(z[i] - top);
            total += e;
            acc += e * GATE_OP_MATRIX[i];
        }
        c = acc / total;
    }
    for (uint k = 0; k < GATE_COEFFS; k++) coeffs[g * GATE_COEFFS + k] = c[k];
}
