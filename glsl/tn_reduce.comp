#version 450
// tn_reduce.comp: one workgroup per output element reduces its n_red input elements: mode 0
// sum, 2 sum of squares (clipping by norm), 1 max with the C-order index of the first maximum
// (so the gradient goes to one element, as on the CPU). Deterministic: each invocation walks a
// fixed stride of the elements (compensated sums), then a fixed tree; no atomics.
// meta: iterator over the outputs (operands 0 out, 1 a, 2 a's C-order index) at 0, iterator
// over one output's reduced elements (operands 0 a, 1 a's C-order index) at TN_ITER_WORDS.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer out_buf { float out_v[]; };
layout(std430, binding = 1) buffer arg_buf { int arg_v[]; }; // max only: [n_out] in C order of out
layout(std430, binding = 2) readonly buffer a_buf { float a_v[]; };
layout(std430, binding = 3) readonly buffer meta_buf { int meta[]; };
layout(push_constant) uniform push_block { tn_reduce_push pc; };

#include "tn_common.glsl"

shared float part[gl_WorkGroupSize.x];
shared int part_arg[gl_WorkGroupSize.x];

// (v2, a2) replaces (v1, a1) when larger, or equal and earlier; a < 0 means "no element"
bool better(float v2, int a2, float v1, int a1)
{
    return a2 >= 0 && (a1 < 0 || v2 > v1 || (v2 == v1 && a2 < a1));
}

void main()
{
    uint o = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (o >= pc.n_out) return; // the same for the whole group, so barriers stay uniform
    uint lid = gl_LocalInvocationID.x;
    bool is_max = pc.mode == 1u;
    ivec3 k = tn_iter_offsets(0u, o);
    precise float sum = 0.0, carry = 0.0;
    float best = 0.0;
    int arg = -1;
    // r rises, and with it the C-order index, so strict > keeps each invocation's first maximum
    for (uint r = lid; r < pc.n_red; r += gl_WorkGroupSize.x) {
        ivec3 e = tn_iter_offsets(TN_ITER_WORDS, r);
        float v = a_v[k.y + e.x];
        if (is_max) {
            if (arg < 0 || v > best) {
                best = v;
                arg = k.z + e.y;
            }
        } else {
            if (pc.mode == 2u) v *= v;
            precise float y = v - carry;
            precise float t = sum + y;
            carry = (t - sum) - y;
            sum = t;
        }
    }
    part[lid] = is_max ? best : sum;
    part_arg[lid] = arg;
    barrier();
    for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
        if (lid < h) {
            if (!is_max) {
                part[lid] += part[lid + h];
            } else if (better(part[lid + h], part_arg[lid + h], part[lid], part_arg[lid])) {
                part[lid] = part[lid + h];
                part_arg[lid] = part_arg[lid + h];
            }
        }
        barrier();
    }
    if (lid == 0u) {
        out_v[k.x] = part[0];
        if (is_max) arg_v[o] = part_arg[0];
    }
}
