#version 450
// grid_backward.comp: dL/dgrid_t from the slot gradients gate_backward.comp left (ca_cpu.c:
// ca_cpu_step_backward's last part). Per (cell, channel): the kept part already in dgrid, plus the
// first update layer's grid inputs (gathered through its reverse wiring in (gate, slot) order),
// plus the moore layer: the centre slot of the cell's own gates and the neighbour slot of the
// cells that read this one. Gathers only: no atomics, the same bits every run.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 1) readonly buffer slot_a_buf { float slot_a[]; }; // [step_rows][pitch]
layout(std430, binding = 2) readonly buffer slot_b_buf { float slot_b[]; }; // [step_rows][pitch]
layout(std430, binding = 3) buffer dgrid_buf { float dgrid[]; };            // [C][pitch]
layout(push_constant) uniform push_block { grid_backward_push pc; };

float slot_at(uint row, uint s, uint cell) { return s == 0u ? slot_a[row * pc.pitch + cell] : slot_b[row * pc.pitch + cell]; }

void main()
{
    uint cell = gl_GlobalInvocationID.x, ch = gl_GlobalInvocationID.y;
    if (cell >= pc.cells) return;
    float sum = 0.0;
    for (uint e = wiring[pc.update_start + ch]; e < wiring[pc.update_start + ch + 1]; e++) {
        uint entry = wiring[pc.update_entry + e];
        sum += slot_at(pc.update_row + (entry >> 1), entry & 1u, cell);
    }
    float d = dgrid[ch * pc.pitch + cell] + sum, moore = 0.0;
    for (uint k = 0; k < pc.kernels; k++)
        for (uint i = 0; i < 8; i++) {
            uint j = wiring[pc.wiring_a + k * 8 + i], row = pc.moore_row + (k * pc.channels + ch) * 8 + i;
            moore += slot_at(row, 1u, cell);
            int reader = shifted_cell(cell, pc.height, pc.width, pc.periodic, 1 - int(j / 3), 1 - int(j % 3));
            if (reader >= 0) moore += slot_at(row, 0u, uint(reader));
        }
    dgrid[ch * pc.pitch + cell] = d + moore;
}
