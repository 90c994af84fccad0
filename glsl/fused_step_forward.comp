#version 450
// fused_step_forward.comp: a whole CA step in one dispatch (ca_cpu.c: ca_step_forward). A
// workgroup owns a tile of cells and runs every layer on it, one after the other, with a
// workgroup barrier between layers: cells of one step depend on each other only through
// grid_t, which the previous dispatch finished. Then the fire mask writes grid_{t+1}.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "ca_fused.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };    // grid_t [C][pitch]
layout(std430, binding = 1) coherent buffer block_buf { float block[]; };  // step block
layout(std430, binding = 2) readonly buffer coeffs_buf { vec4 coeffs[]; }; // [gates]
layout(std430, binding = 3) readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 4) readonly buffer layers_buf { fused_layer layers[]; };
layout(std430, binding = 5) writeonly buffer next_buf { float next_grid[]; }; // grid_{t+1}
layout(push_constant) uniform push_block { fused_push pc; };

float read_input(fused_layer L, uint i, uint unit, uint cell)
{
    if (i < L.in_split) return grid[i * pc.pitch + cell];
    return block[(L.in_base + unit * L.in_stride + i - L.in_split) * pc.pitch + cell];
}

float moore_gate(fused_layer L, uint g, uint unit, uint cell)
{
    uint row = (unit % pc.channels) * pc.pitch, j = wiring[L.wiring_a + g];
    int at = shifted_cell(cell, pc.height, pc.width, pc.periodic, int(j / 3) - 1, int(j % 3) - 1);
    float a = at < 0 ? 0.0 : grid[row + uint(at)];
    return gate_eval(coeffs[L.coeff_base + (unit / L.unit_channels) * L.coeff_stride + g], a, grid[row + cell]);
}

float layer_gate(fused_layer L, uint g, uint unit, uint cell)
{
    float a = read_input(L, wiring[L.wiring_a + g], unit, cell), b = read_input(L, wiring[L.wiring_b + g], unit, cell);
    return gate_eval(coeffs[L.coeff_base + (unit / L.unit_channels) * L.coeff_stride + g], a, b);
}

void main()
{
    uint first = gl_WorkGroupID.x * pc.tile, lid = gl_LocalInvocationID.x;
    uint width = min(pc.tile, pc.cells - first);
    for (uint l = 0; l < pc.layer_count; l++) {
        fused_layer L = layers[l];
        uint items = L.units * L.n_out * width;
        for (uint item = lid; item < items; item += gl_WorkGroupSize.x) {
            uint cell = first + item % width, g = item / width % L.n_out, unit = item / width / L.n_out;
            float y = L.kind == LAYER_MOORE ? moore_gate(L, g, unit, cell) : layer_gate(L, g, unit, cell);
            block[(L.out_base + unit * L.out_stride + g) * pc.pitch + cell] = y;
        }
        memoryBarrierBuffer();
        barrier();
    }
    for (uint item = lid; item < pc.channels * width; item += gl_WorkGroupSize.x) {
        uint cell = first + item % width, c = item / width;
        bool fire = rng_fires(pc.stream, pc.step, cell, pc.threshold);
        float proposed = block[(pc.proposed_row + c) * pc.pitch + cell];
        next_grid[c * pc.pitch + cell] = fire ? proposed : grid[c * pc.pitch + cell];
    }
}
