#version 450
// grid_add.comp: rows[i] += add[i] for i < n, one float an invocation. A window loss's gradient
// at grid t added into the engine's dgrid between two steps of BPTT (src/gpu/ca_gpu_step.c):
// dgrid's first rows are the loss channels, so the rows to add are one contiguous run.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer rows_buf { float rows[]; };
layout(std430, binding = 1) restrict readonly buffer add_buf { float add[]; };
layout(push_constant) uniform push_block { grid_add_push pc; };

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) rows[i] += add[i];
}
