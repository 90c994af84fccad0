#version 450
// moore_forward.comp: the first perception layer (ca_cpu_layer.c: moore_layer_forward).
// Invocation (cell, unit = k*C + c): the 8 gates of kernel k on channel c's neighbourhood.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };      // [C][pitch]
layout(std430, binding = 1) readonly buffer coeffs_buf { vec4 coeffs[]; };   // [gates]
layout(std430, binding = 2) readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 3) writeonly buffer block_buf { float block[]; };   // step block
layout(push_constant) uniform push_block { moore_push pc; };

void main()
{
    uint cell = gl_GlobalInvocationID.x, unit = gl_GlobalInvocationID.y;
    if (cell >= pc.cells) return;
    uint k = unit / pc.channels, row = (unit % pc.channels) * pc.pitch;
    float centre = grid[row + cell];
    for (uint i = 0; i < 8; i++) {
        uint j = wiring[pc.wiring_a + k * 8 + i];
        int at = shifted_cell(cell, pc.height, pc.width, pc.periodic, int(j / 3) - 1, int(j % 3) - 1);
        float a = at < 0 ? 0.0 : grid[row + uint(at)];
        block[(pc.row + unit * 8 + i) * pc.pitch + cell] = gate_eval(coeffs[pc.coeff_base + k * 8 + i], a, centre);
    }
}
