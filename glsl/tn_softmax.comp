#version 450
// tn_softmax.comp: one workgroup per line along the softmax dim. mode 0 softmax, 1 log_softmax
// (both shifted by the line's max, so every exp is in (0, 1]); mode 2 softmax backward
// gin = y (g - sum(g y)), mode 3 log_softmax backward gin = g - exp(y) sum(g), as tn_cpu.c.
// Bindings: out (or gin), x (a, or the forward output y), g (backward only), meta.
// meta: iterator over line starts (operands 0 out, 1 x, 2 g), then each operand's stride along
// the line at [36], [37], [38].
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer out_buf { float out_v[]; };
layout(std430, binding = 1) readonly buffer x_buf { float x_v[]; };
layout(std430, binding = 2) readonly buffer g_buf { float g_v[]; };
layout(std430, binding = 3) readonly buffer meta_buf { int meta[]; };
layout(push_constant) uniform push_block { tn_softmax_push pc; };

#include "tn_common.glsl"

shared float part[gl_WorkGroupSize.x];

// The group's max or sum of v, in a fixed tree order.
float group_reduce(float v, bool is_max)
{
    uint lid = gl_LocalInvocationID.x;
    part[lid] = v;
    barrier();
    for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
        if (lid < h) part[lid] = is_max ? max(part[lid], part[lid + h]) : part[lid] + part[lid + h];
        barrier();
    }
    float r = part[0];
    barrier(); // part is reused by the next call
    return r;
}

void main()
{
    uint line = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (line >= pc.lines) return; // uniform per group
    uint lid = gl_LocalInvocationID.x, step = gl_WorkGroupSize.x;
    ivec3 base = tn_iter_offsets(0u, line);
    int so = meta[36], sx = meta[37], sg = meta[38];
    if (pc.mode < 2u) {
        float mx = -tn_inf();
        for (uint t = lid; t < pc.len; t += step) mx = max(mx, x_v[base.y + int(t) * sx]);
        mx = group_reduce(mx, true);
        float sum = 0.0;
        for (uint t = lid; t < pc.len; t += step) sum += tn_exp(x_v[base.y + int(t) * sx] - mx);
        sum = group_reduce(sum, false);
        float lse = tn_log(sum);
        for (uint t = lid; t < pc.len; t += step) {
            float d = x_v[base.y + int(t) * sx] - mx;
            out_v[base.x + int(t) * so] = pc.mode == 1u ? d - lse : tn_exp(d) / sum;
        }
    } else {
        bool log_out = pc.mode == 3u;
        float dot = 0.0;
        for (uint t = lid; t < pc.len; t += step) {
            float g = g_v[base.z + int(t) * sg];
            dot += log_out ? g : g * x_v[base.y + int(t) * sx];
        }
        dot = group_reduce(dot, false);
        for (uint t = lid; t < pc.len; t += step) {
            float g = g_v[base.z + int(t) * sg], y = x_v[base.y + int(t) * sx];
            out_v[base.x + int(t) * so] = log_out ? g - tn_exp(y) * dot : y * (g - dot);
        }
    }
}
