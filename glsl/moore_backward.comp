#version 450
// moore_backward.comp: gradient through the first perception layer into the grid
// (ca_cpu_layer.c: moore_layer_backward): per (cell, channel), the centre slot of the cell's
// own gates plus the neighbour slot of the cells that read this one, gathered, no atomics.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };    // [C][pitch]
layout(std430, binding = 1) readonly buffer coeffs_buf { vec4 coeffs[]; }; // [gates]
layout(std430, binding = 2) readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 3) readonly buffer dact_buf { float dact[]; };    // step gradients
layout(std430, binding = 4) buffer dgrid_buf { float dgrid[]; };           // [C][pitch]
layout(push_constant) uniform push_block { moore_push pc; };

void main()
{
    uint cell = gl_GlobalInvocationID.x, ch = gl_GlobalInvocationID.y;
    if (cell >= pc.cells) return;
    uint row = ch * pc.pitch;
    float sum = 0.0;
    for (uint k = 0; k < pc.kernels; k++)
        for (uint i = 0; i < 8; i++) {
            uint j = wiring[pc.wiring_a + i], out_row = (pc.row + (k * pc.channels + ch) * 8 + i) * pc.pitch;
            vec4 c = coeffs[pc.coeff_base + k * 8 + i];
            int at = shifted_cell(cell, pc.height, pc.width, pc.periodic, int(j / 3) - 1, int(j % 3) - 1);
            float a = at < 0 ? 0.0 : grid[row + uint(at)];
            sum += dact[out_row + cell] * (c.z + c.w * a);
            int reader = shifted_cell(cell, pc.height, pc.width, pc.periodic, 1 - int(j / 3), 1 - int(j % 3));
            if (reader >= 0) sum += dact[out_row + uint(reader)] * (c.y + c.w * grid[row + uint(reader)]);
        }
    dgrid[row + cell] += sum;
}
