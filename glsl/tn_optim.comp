#version 450
// tn_optim.comp: tn's one optimizer update in GLSL, the twin of cpu_update in
// src/tensor/tn_optim.c (PyTorch's rules), for SGD (kind 0: weight decay added to the gradient,
// momentum seeded with the raw gradient on the first applied step, dampening, Nesterov), Adam
// (kind 1) and AdamW (kind 2: p *= 1 - lr wd, decoupled) with bias correction; every gradient
// element first clamped to [-clip, clip] when clip > 0.
// Skipping (PyTorch GradScaler's found_inf): with n_flags > 0, glsl/tn_optim_check.comp left one
// flag word per workgroup in control[8 ..]; any set word skips the whole step. Deterministic:
// integer ORs, no float atomics.
// The step counters live on the device, so a skipped step does not advance the bias correction:
// control holds two records {applied, skipped} and step k reads record `parity` = k % 2 and
// writes the other (no invocation reads what another writes); invocation 0 also writes
// {applied, skipped, skipped this step} to `status`, host-visible memory the host reads after
// the fence (tn_optim_status_read).
// Bindings: params [count], grads [count], state ([count] SGD momentum, or m [count] then
// v [count]), control, status. Five, with a 40-byte push block: src/vk's table row TN_OPTIM
// names this shader too.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "tn_push.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer params_buf { float params[]; };
layout(std430, binding = 1) readonly buffer grads_buf { float grads[]; };
layout(std430, binding = 2) buffer state_buf { float state[]; };
layout(std430, binding = 3) buffer control_buf { uint control[]; };
layout(std430, binding = 4) writeonly buffer status_buf { uint status[]; };
layout(push_constant) uniform push_block { tn_optim_step_push pc; };

#define TN_NO_ITER
#include "tn_common.glsl"

shared uint flags_or;

void main()
{
    uint i = global_index();
    uint kind = pc.bits & 3u, nesterov = (pc.bits >> 2) & 1u, parity = (pc.bits >> 3) & 1u;
    uint n_flags = (pc.bits >> 8) & 0xffu;
    bool skip = false;
    if (n_flags > 0u) { // the same for every invocation: the barrier is uniform
        if (gl_LocalInvocationIndex == 0u) {
            uint f = 0u;
            for (uint k = 0u; k < n_flags; k++) f |= control[8u + k];
            flags_or = f;
        }
        barrier();
        skip = flags_or != 0u;
    }
    uint applied = control[parity * 4u], skipped = control[parity * 4u + 1u];
    uint applied_now = skip ? applied : applied + 1u, skipped_now = skip ? skipped + 1u : skipped;
    if (i == 0u) {
        uint other = (1u - parity) * 4u;
        control[other] = applied_now;
        control[other + 1u] = skipped_now;
        status[0] = applied_now;
        status[1] = skipped_now;
        status[2] = skip ? 1u : 0u;
    }
    if (skip || i >= pc.count) return;
    float p = params[i], g = grads[i], c = pc.clip;
    if (c > 0.0) g = g > c ? c : (g < -c ? -c : g); // comparisons: a NaN stays NaN, as on the CPU
    if (kind == 0u) {
        g += pc.weight_decay * p;
        if (pc.a != 0.0) {
            float buf = applied == 0u ? g : pc.a * state[i] + (1.0 - pc.b) * g;
            state[i] = buf;
            g = nesterov != 0u ? g + pc.a * buf : buf;
        }
        params[i] = p - pc.lr * g;
        return;
    }
    if (kind == 2u) p *= 1.0 - pc.lr * pc.weight_decay;
    else g += pc.weight_decay * p;
    // 1 - beta^t without the cancellation of 1 - pow(): t log(beta) is exact to a few ulp
    float t = float(applied_now);
    float correction1 = -tn_expm1(t * pc.log_beta1), correction2 = -tn_expm1(t * pc.log_beta2);
    float m = pc.a * state[i] + (1.0 - pc.a) * g;
    float v = pc.b * state[pc.count + i] + (1.0 - pc.b) * g * g;
    state[i] = m;
    state[pc.count + i] = v;
    params[i] = p - pc.lr * (m / correction1) / (sqrt(v / correction2) + pc.eps);
}
