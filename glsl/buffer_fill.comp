#version 450
// buffer_fill.comp: up to three regions, one a binding, each `rows` rows of `row_words` words
// `row_pitch` apart from word `first`, set to the region's value; workgroup row y fills region
// y, 4 words an invocation. vkCmdFillBuffer as a compute dispatch, with rows, so that it needs no
// transfer barriers, shares a barrier interval with other dispatches (the persistent kernels'
// clears, src/gpu/ca_gpu_fused.c) and leaves the pitch padding of grid rows alone (it stays 0,
// so losses may read whole rows).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer words0_buf { uint words0[]; };
layout(std430, binding = 1) writeonly buffer words1_buf { uint words1[]; };
layout(std430, binding = 2) writeonly buffer words2_buf { uint words2[]; };
layout(push_constant) uniform push_block { buffer_fill_push pc; };

void main()
{
    uint r = gl_WorkGroupID.y;
    buffer_fill_region g = pc.region[r];
    uint total = g.row_words * g.rows, at = gl_GlobalInvocationID.x * 4u;
    for (uint k = 0; k < 4u; k++) {
        uint w = at + k;
        if (w >= total) return;
        uint to = g.first + (w / g.row_words) * g.row_pitch + w % g.row_words;
        if (r == 0u) words0[to] = g.value;
        else if (r == 1u) words1[to] = g.value;
        else words2[to] = g.value;
    }
}
