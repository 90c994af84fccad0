#version 450
// tn_sse_bwd.comp: the backward of tn_sse.comp in one dispatch from the difference it kept:
// gpred[i] = 2 g diff[i] and, when has_target, gtarget[i] = -gpred[i]; g = g_v[g_offset], the
// loss's gradient, read on the device (no host value). gpred and gtarget are dense from 0.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "tn_push.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer gpred_buf { float gpred_v[]; };
layout(std430, binding = 1) writeonly buffer gtarget_buf { float gtarget_v[]; };
layout(std430, binding = 2) readonly buffer diff_buf { float diff_v[]; };
layout(std430, binding = 3) readonly buffer g_buf { float g_v[]; };
layout(push_constant) uniform push_block { tn_sse_bwd_push pc; };

void main()
{
    uint i = global_index();
    if (i >= pc.count) return;
    float v = (2.0 * g_v[pc.g_offset]) * diff_v[pc.diff_offset + i];
    gpred_v[i] = v;
    if (pc.has_target != 0u) gtarget_v[i] = -v;
}
