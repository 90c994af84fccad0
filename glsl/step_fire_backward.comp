#version 450
// step_fire_backward.comp: splits dL/dgrid_{t+1} between the proposed state (cells that fired)
// and the kept grid_t, in place (ca_cpu.c: async_backward). Invocation (cell, channel).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer dgrid_buf { float dgrid[]; };          // [C][pitch]
layout(std430, binding = 1) writeonly buffer dact_buf { float dact[]; };  // step gradients
layout(push_constant) uniform push_block { fire_push pc; };

void main()
{
    uint cell = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
    if (cell >= pc.cells) return;
    float d = dgrid[c * pc.pitch + cell];
    bool fire = rng_fires(pc.stream, pc.step, cell, pc.threshold);
    dact[(pc.proposed_row + c) * pc.pitch + cell] = fire ? d : 0.0;
    dgrid[c * pc.pitch + cell] = fire ? 0.0 : d;
}
