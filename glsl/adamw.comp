#version 450
// adamw.comp: one AdamW step over a flat parameter buffer: clip each gradient element to
// [-clip, clip] (clip 0: no clipping), then PyTorch's AdamW: p *= 1 - lr wd; m, v moments;
// p -= lr m_hat / (sqrt(v_hat) + eps). lr and the bias corrections are read from `step`
// (lr, 1 - beta1^t, 1 - beta2^t, and the bits of the step number t), written by the host before
// each submission, so one recorded command buffer serves every step.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer params_buf { float params[]; };
#ifdef ADAMW_FROM_SUMS
// Compiled with ADAMW_FROM_SUMS (logits_adamw, the CA trainer's): the parameters are gate
// logits, each one's gradient computed from its gate's S as logits_grad.comp does (and kept for
// the checks), in the same dispatch: one dispatch boundary less a training step. Each of a
// gate's 16 invocations computes all 16 (cheap) and keeps its own: an invocation that updated
// all 16 waited for each element's stores before the next one's loads (the buffers may alias).
// A logit whose gradient is not finite keeps its value, and the step's number goes into the
// host-visible word losses[NONFINITE_SLOT] (atomicMax: the same result whatever the order), so
// the host stops the run naming the step, as the CPU engines do.
#include "logits_grad.glsl"
layout(std430, binding = 1) readonly buffer sums_buf { vec4 sums[]; };      // S [gates]
layout(std430, binding = 6) writeonly buffer grad_buf { float dlogits[]; }; // [gates][16]
layout(std430, binding = 7) buffer losses_buf { uint losses[]; };         // host-visible
const uint NONFINITE_SLOT = 63u; // CA_GPU_NONFINITE_SLOT (src/gpu/ca_gpu.h)
#else
layout(std430, binding = 1) readonly buffer grads_buf { float grads[]; };
#endif
layout(std430, binding = 2) buffer m_buf { float moment1[]; };
layout(std430, binding = 3) buffer v_buf { float moment2[]; };
layout(std430, binding = 4) readonly buffer step_buf { float step_values[]; };
layout(push_constant) uniform push_block { adamw_push pc; };
#ifdef ADAMW_GUARDED
// Compiled with ADAMW_GUARDED (adamw_guarded and logits_adamw, the CA trainer's): the
// persistent fused kernels' roll calls (fused_persistent.glsl). One that closed left this
// step's gradients unfinished, so the step changes nothing and the host runs it again without
// them.
layout(std430, binding = 5) readonly buffer roll_buf { uint roll[]; };
#endif

// Parameter i's step with gradient g.
void adamw_update(uint i, float g)
{
    float lr = step_values[0], correction1 = step_values[1], correction2 = step_values[2];
    if (pc.clip > 0.0) g = clamp(g, -pc.clip, pc.clip);
    float m = pc.beta1 * moment1[i] + (1.0 - pc.beta1) * g;
    float v = pc.beta2 * moment2[i] + (1.0 - pc.beta2) * g * g;
    moment1[i] = m;
    moment2[i] = v;
    float p = params[i] * (1.0 - lr * pc.weight_decay);
    params[i] = p - lr * (m / correction1) / (sqrt(v / correction2) + pc.eps);
}

bool step_skipped()
{
#ifdef ADAMW_GUARDED
    return ((roll[0] | roll[1]) & 0x80000000u) != 0u; // CA_GPU_ROLL_CLOSED
#else
    return false;
#endif
}

void main()
{
    uint i = global_index();
#ifdef ADAMW_FROM_SUMS
    // A gate's 16 invocations share a workgroup (64 wide, src/vk_pipeline.h): all read the 16
    // logits before any writes its own.
    bool live = i < pc.count && !step_skipped();
    float g = 0.0;
    if (live) {
        uint gate = i / 16u;
        float z[16], dz[16];
        for (uint k = 0; k < 16; k++) z[k] = params[gate * 16u + k];
        gate_logits_gradient(z, sums[gate], dz);
        g = dz[i % 16u];
        dlogits[i] = g;
    }
    barrier();
    if (live && (isnan(g) || isinf(g))) {
        atomicMax(losses[NONFINITE_SLOT], floatBitsToUint(step_values[3]));
        live = false;
    }
    if (live) adamw_update(i, g);
#else
    if (i < pc.count && !step_skipped()) adamw_update(i, grads[i]);
#endif
}
