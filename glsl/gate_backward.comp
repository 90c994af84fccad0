#version 450
// gate_backward.comp: the whole backward of one gate layer in one dispatch (ca_cpu_layer.c:
// gate_layer_backward + gate_coeff_grad), organised by output gate instead of by input:
//   dy    = this gate's output gradient: gathered from the next layer's slot gradients through
//           its reverse wiring in ascending (gate, slot) order (source 0), or for the last
//           update layer dL/dgrid_{t+1} through the fire mask (source 1; the kept part is
//           written back to dgrid);
//   slots = dy (c1 + c3 b) and dy (c2 + c3 a): what the gate sends to its inputs a and b,
//           stored for the layer below to gather (and grid_backward.comp for the grid);
//   S     = this chunk of cells' sum of dy [1, a, b, ab], reduced in a fixed tree and added to
//           its own slot partial[chunk][row]: every slot has one writer per dispatch and the
//           dispatches are ordered, so the sums are the same bits every run (no atomics);
//           gate_sums_reduce.comp adds the chunks (and the channels sharing a kernel) at the end.
// Workgroup (chunk, row): 64 lanes x per_thread cells of one activation row (unit, gate).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { float grid[]; };    // grid_t [C][pitch]
layout(std430, binding = 1) readonly buffer block_buf { float block[]; };  // step block
layout(std430, binding = 2) readonly buffer coeffs_buf { vec4 coeffs[]; }; // [gates]
layout(std430, binding = 3) readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 4) buffer dgrid_buf { float dgrid[]; };           // [C][pitch]
layout(std430, binding = 5) buffer slot_a_buf { float slot_a[]; };         // [step_rows][pitch]
layout(std430, binding = 6) buffer slot_b_buf { float slot_b[]; };         // [step_rows][pitch]
layout(std430, binding = 7) buffer partial_buf { vec4 partial[]; };        // [chunks][step_rows]
layout(push_constant) uniform push_block { gate_backward_push pc; };

shared vec4 part[gl_WorkGroupSize.x];

float read_input(uint i, uint unit, uint cell)
{
    if (i < pc.in_split) return grid[i * pc.pitch + cell];
    return block[(pc.in_base + unit * pc.in_stride + i - pc.in_split) * pc.pitch + cell];
}

void main()
{
    uint lid = gl_LocalInvocationID.x, chunk = gl_WorkGroupID.x, r = gl_WorkGroupID.y;
    uint unit = r / pc.n_out, g = r % pc.n_out, out_row = pc.out_base + unit * pc.out_stride + g;
    vec4 c = coeffs[pc.coeff_base + (unit / pc.unit_channels) * pc.coeff_stride + g];
    // The moore layer's a is kernel (unit / unit_channels)'s neighbour order, 8 a kernel.
    uint in_a = pc.moore != 0 ? wiring[pc.wiring_a + (unit / pc.unit_channels) * 8 + g] : wiring[pc.wiring_a + g];
    uint in_b = pc.moore != 0 ? 0u : wiring[pc.wiring_b + g];
    uint gather = pc.next_in_base + unit * pc.next_in_stride + g;
    uint next_row = pc.next_out_base + unit * pc.next_unit_stride;
    uint e_first = pc.source == 0 ? wiring[pc.next_start + gather] : 0u;
    uint e_end = pc.source == 0 ? wiring[pc.next_start + gather + 1] : 0u;
    vec4 acc = vec4(0.0);
    uint first = chunk * gl_WorkGroupSize.x * pc.per_thread;
    for (uint j = 0; j < pc.per_thread; j++) {
        uint cell = first + j * gl_WorkGroupSize.x + lid;
        if (cell >= pc.cells) break;
        float dy = 0.0;
        if (pc.source == 1) {
            float d = dgrid[g * pc.pitch + cell];
            bool fire = rng_fires(pc.stream, pc.step, cell, pc.threshold);
            dy = fire ? d : 0.0;
            dgrid[g * pc.pitch + cell] = fire ? 0.0 : d;
        } else {
            for (uint e = e_first; e < e_end; e++) {
                uint entry = wiring[pc.next_entry + e];
                uint at = (next_row + (entry >> 1)) * pc.pitch + cell;
                dy += (entry & 1u) == 0u ? slot_a[at] : slot_b[at];
            }
        }
        float a, b;
        if (pc.moore != 0) {
            uint row = (unit % pc.unit_channels) * pc.pitch;
            int at = shifted_cell(cell, pc.height, pc.width, pc.periodic, int(in_a / 3) - 1, int(in_a % 3) - 1);
            a = at < 0 ? 0.0 : grid[row + uint(at)];
            b = grid[row + cell];
        } else {
            a = read_input(in_a, unit, cell);
            b = read_input(in_b, unit, cell);
        }
        acc += dy * vec4(1.0, a, b, a * b);
        slot_a[out_row * pc.pitch + cell] = dy * (c.y + c.w * b);
        slot_b[out_row * pc.pitch + cell] = dy * (c.z + c.w * a);
    }
    // Fixed two-level tree: 8 lanes sum 8 each in order, then lane 0 sums the 8.
    part[lid] = acc;
    barrier();
    const uint group = gl_WorkGroupSize.x / 8;
    if (lid < 8) {
        vec4 s = part[lid * group];
        for (uint k = 1; k < group; k++) s += part[lid * group + k];
        part[lid * group] = s;
    }
    barrier();
    if (lid == 0) {
        vec4 s = part[0];
        for (uint k = 1; k < 8; k++) s += part[k * group];
        partial[chunk * pc.partial_rows + out_row] += s;
    }
}
