#version 450
// tn_optim.comp: one SGD (kind 0) or Adam (kind 1) update over a flat parameter buffer, as
// sgd_update / adam_update in src/tn_optim.c (PyTorch's rules): weight decay added to the
// gradient; SGD momentum buffer seeded with the raw gradient on the first step (first = 1),
// optional dampening and Nesterov; Adam with bias correction. AdamW runs adamw.comp instead.
// lr and the bias corrections (lr, 1 - beta1^t, 1 - beta2^t) come from the step buffer.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer params_buf { float params[]; };
layout(std430, binding = 1) readonly buffer grads_buf { float grads[]; };
layout(std430, binding = 2) buffer state1_buf { float state1[]; }; // SGD momentum buffer, Adam m
layout(std430, binding = 3) buffer state2_buf { float state2[]; }; // Adam v (SGD: unused)
layout(std430, binding = 4) readonly buffer step_buf { float step_values[]; };
layout(push_constant) uniform push_block { tn_optim_push pc; };

void main()
{
    uint i = global_index();
    if (i >= pc.count) return;
    float lr = step_values[0], p = params[i], g = grads[i] + pc.weight_decay * p;
    if (pc.kind == 0u) {
        if (pc.momentum != 0.0) {
            float buf = pc.first != 0u ? g : pc.momentum * state1[i] + (1.0 - pc.dampening) * g;
            state1[i] = buf;
            g = pc.nesterov != 0u ? g + pc.momentum * buf : buf;
        }
        params[i] = p - lr * g;
    } else {
        float m = pc.beta1 * state1[i] + (1.0 - pc.beta1) * g;
        float v = pc.beta2 * state2[i] + (1.0 - pc.beta2) * g * g;
        state1[i] = m;
        state2[i] = v;
        params[i] = p - lr * (m / step_values[1]) / (sqrt(v / step_values[2]) + pc.eps);
    }
}
