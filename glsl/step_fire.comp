#version 450
// step_fire.comp: the end of a CA step (ca_cpu.c: ca_cpu_step_forward): each cell takes the
// proposed state if it fires (always, in sync mode) and keeps grid_t otherwise.
// Invocation (cell, channel).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };   // grid_t [C][pitch]
layout(std430, binding = 1) readonly buffer block_buf { float block[]; }; // step block
layout(std430, binding = 2) writeonly buffer next_buf { float next_grid[]; }; // grid_{t+1}
layout(push_constant) uniform push_block { fire_push pc; };

void main()
{
    uint cell = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
    if (cell >= pc.cells) return;
    float proposed = block[(pc.proposed_row + c) * pc.pitch + cell];
    bool fire = rng_fires(pc.stream, pc.step, cell, pc.threshold);
    next_grid[c * pc.pitch + cell] = fire ? proposed : grid[c * pc.pitch + cell];
}
