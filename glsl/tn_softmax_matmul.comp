#version 450
// tn_softmax_matmul.comp: one invocation per row of z [rows, k] (dense, from z_offset), m
// [k, c] dense from m_offset, c <= 16 (the host checks):
//   mode 0: out [rows, c] = softmax(z_row) m, computed as (sum_i e_i m_i) / (sum_i e_i) with
//           e_i = exp(z_i - max): one pass after the max, no probabilities stored;
//   mode 1: out [rows, k] = the gradient in z from g [rows, c]: p_i (sum_j g_j m_ij - g . y),
//           y = softmax(z_row) m recomputed (nothing saved between forward and backward);
//   mode 2: out [rows, k] = one-hot of the first maximum of z_row (hard gates; m, g unused).
// As tn__cpu_softmax_matmul* in src/tensor/tn_cpu_fused.c (double there, float here).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "tn_push.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer out_buf { float out_v[]; };
layout(std430, binding = 1) readonly buffer z_buf { float z_v[]; };
layout(std430, binding = 2) readonly buffer m_buf { float m_v[]; };
layout(std430, binding = 3) readonly buffer g_buf { float g_v[]; };
layout(push_constant) uniform push_block { tn_smm_push pc; };

#define TN_NO_ITER
#include "tn_common.glsl"

const uint TN_SMM_MAX_C = 16;

void main()
{
    uint r = global_index();
    if (r >= pc.rows) return;
    uint zo = pc.z_offset + r * pc.k;
    uint best = 0u;
    float mx = z_v[zo];
    for (uint i = 1u; i < pc.k; i++) {
        float v = z_v[zo + i];
        if (v > mx) { // strict: the lowest index wins ties
            mx = v;
            best = i;
        }
    }
    if (pc.mode == 2u) {
        for (uint i = 0u; i < pc.k; i++) out_v[pc.out_offset + r * pc.k + i] = i == best ? 1.0 : 0.0;
        return;
    }
    float total = 0.0, acc[TN_SMM_MAX_C];
    for (uint j = 0u; j < pc.c; j++) acc[j] = 0.0;
    for (uint i = 0u; i < pc.k; i++) {
        float e = tn_exp(z_v[zo + i] - mx);
        total += e;
        for (uint j = 0u; j < pc.c; j++) acc[j] += e * m_v[pc.m_offset + i * pc.c + j];
    }
    if (pc.mode == 0u) {
        for (uint j = 0u; j < pc.c; j++) out_v[pc.out_offset + r * pc.c + j] = acc[j] / total;
        return;
    }
    uint go = pc.g_offset + r * pc.c;
    float dot = 0.0;
    for (uint j = 0u; j < pc.c; j++) dot += g_v[go + j] * (acc[j] / total);
    for (uint i = 0u; i < pc.k; i++) {
        float gs = 0.0;
        for (uint j = 0u; j < pc.c; j++) gs += g_v[go + j] * m_v[pc.m_offset + i * pc.c + j];
        out_v[pc.out_offset + r * pc.k + i] = tn_exp(z_v[zo + i] - mx) / total * (gs - dot);
    }
}
