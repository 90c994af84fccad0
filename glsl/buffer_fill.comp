#version 450
// buffer_fill.comp: words [first, first + count) of a buffer set to `value`, 4 words an
// invocation: vkCmdFillBuffer as a compute dispatch, so that it needs no transfer barriers and
// shares a barrier interval with other dispatches (src/gpu/ca_gpu_step.c: the persistent kernels'
// clears beside the gate coefficients).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer words_buf { uint words[]; };
layout(push_constant) uniform push_block { buffer_fill_push pc; };

void main()
{
    uint at = global_index() * 4u;
    for (uint k = 0; k < 4u; k++)
        if (at + k < pc.count) words[pc.first + at + k] = pc.value;
}
