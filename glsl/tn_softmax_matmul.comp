#version 450
// tn_softmax_matmul.comp: one invocation per row (or per logit, below) of z [rows, k] (dense,
// from z_offset), m [k, c] dense from m_offset, c <= 16 (the host checks):
//   mode 0: out [rows, c] = softmax(z_row) m, computed as (sum_i e_i m_i) / (sum_i e_i) with
//           e_i = exp(z_i - max): one pass after the max, no probabilities stored;
//   mode 1: out [rows, k] = the gradient in z from g [rows, c]: p_i (sum_j g_j m_ij - g . y),
//           y = softmax(z_row) m recomputed (nothing saved between forward and backward);
//   mode 2: out [rows, k] = one-hot of the first maximum of z_row (hard gates; m, g unused).
// As tn__cpu_softmax_matmul* in src/tensor/tn_cpu_fused.c (double there, float here).
//
// Rows of k <= 16 (lanes = 16, the gates' 16 ops) take an invocation a logit: the row's loads
// coalesce and a few thousand rows fill the GPU, where an invocation a row leaves most of it idle
// and waits on one long chain of loads and exps per row (an H100 took 13-16 us for 3040 gates that
// way). The lanes of a row share its values through shared memory, and every sum runs over i in
// order, as on the invocation-a-row path and the CPU.
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
const uint SMM_LANES = 16;                 // the host's TN_VK_SMM_LANES
const uint SMM_SHARED = 16 * TN_SMM_MAX_C; // m in shared memory when k * c fits
const uint SMM_GROUP_MAX = 1024;           // local_size_x at most (lanes path)

shared float m_s[SMM_SHARED];
shared float row_s[SMM_GROUP_MAX];

// m[i][j], from shared memory where it fits.
float m_at(uint i, uint j, bool shared_m)
{
    return shared_m ? m_s[i * pc.c + j] : m_v[pc.m_offset + i * pc.c + j];
}

// lanes == SMM_LANES (k <= 16, modes 0 and 1; m in shared memory): invocation t holds logit
// i = t % 16 of row t / 16. Every invocation reaches the barriers (they are uniform); those past
// the rows hold nothing.
void row_in_lanes(uint t)
{
    uint r = t / SMM_LANES, i = t % SMM_LANES, base = gl_LocalInvocationIndex - i;
    bool mine = r < pc.rows && i < pc.k;
    float z = mine ? z_v[pc.z_offset + r * pc.k + i] : 0.0;
    row_s[gl_LocalInvocationIndex] = z;
    barrier();
    float mx = row_s[base];
    for (uint q = 1u; q < pc.k; q++) {
        float v = row_s[base + q];
        if (v > mx) mx = v; // as the other path: a NaN never wins
    }
    barrier(); // every lane has read the logits: the row's room takes the exps
    float e = mine ? tn_exp(z - mx) : 0.0;
    row_s[gl_LocalInvocationIndex] = e;
    barrier();
    if (r >= pc.rows) return;
    float total = 0.0;
    for (uint q = 0u; q < pc.k; q++) total += row_s[base + q];
    if (pc.mode == 0u) {
        if (i >= pc.c) return;
        float a = 0.0;
        for (uint q = 0u; q < pc.k; q++) a += row_s[base + q] * m_s[q * pc.c + i];
        out_v[pc.out_offset + r * pc.c + i] = a / total;
        return;
    }
    uint go = pc.g_offset + r * pc.c;
    float dot = 0.0;
    for (uint j = 0u; j < pc.c; j++) {
        float a = 0.0;
        for (uint q = 0u; q < pc.k; q++) a += row_s[base + q] * m_s[q * pc.c + j];
        dot += g_v[go + j] * (a / total);
    }
    if (!mine) return;
    float gs = 0.0;
    for (uint j = 0u; j < pc.c; j++) gs += g_v[go + j] * m_s[i * pc.c + j];
    out_v[pc.out_offset + r * pc.k + i] = e / total * (gs - dot);
}

void main()
{
    uint r = global_index();
    bool shared_m = pc.mode != 2u && pc.k * pc.c <= SMM_SHARED;
    if (shared_m) { // the same for every invocation: the barrier is uniform
        for (uint i = gl_LocalInvocationIndex; i < pc.k * pc.c; i += gl_WorkGroupSize.x) m_s[i] = m_v[pc.m_offset + i];
        barrier();
    }
    if (pc.lanes == SMM_LANES) {
        row_in_lanes(r);
        return;
    }
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
        for (uint j = 0u; j < pc.c; j++) acc[j] += e * m_at(i, j, shared_m);
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
        for (uint j = 0u; j < pc.c; j++) gs += g_v[go + j] * m_at(i, j, shared_m);
        out_v[pc.out_offset + r * pc.k + i] = tn_exp(z_v[zo + i] - mx) / total * (gs - dot);
    }
}
