#version 450
// loss_grad.comp: dL/dgrid = 2 (grid - target) on the loss channels, 0 elsewhere
// (ca_cpu.c: ca_cpu_loss_backward), and each workgroup's sum of squared errors, reduced in a
// fixed tree order, for reduce_sum.comp (ca_cpu_loss_forward). One invocation per (channel, cell).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "loss_terms.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };     // final grid [C][pitch]
layout(std430, binding = 1) readonly buffer target_buf { float target[]; }; // [loss_channels][pitch]
layout(std430, binding = 2) writeonly buffer dgrid_buf { float dgrid[]; };  // [C][pitch]
layout(std430, binding = 3) writeonly buffer partial_buf { float partials[]; };
layout(push_constant) uniform push_block { loss_push pc; };

shared float part[gl_WorkGroupSize.x];

void main()
{
    uint index = global_index(), lid = gl_LocalInvocationID.x;
    float squared = 0.0;
    if (index < pc.channels * pc.cells) {
        uint c = index / pc.cells, at = c * pc.pitch + index % pc.cells;
        vec2 terms = c < pc.loss_channels ? loss_terms(grid[at], target[at]) : vec2(0.0);
        dgrid[at] = terms.x;
        squared = terms.y;
    }
    part[lid] = squared;
    barrier();
    for (uint half_size = gl_WorkGroupSize.x / 2; half_size > 0; half_size >>= 1) {
        if (lid < half_size) part[lid] += part[lid + half_size];
        barrier();
    }
    if (lid == 0) partials[gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x] = part[0];
}
