#version 450
// fused_step_forward.comp: a whole CA step in one dispatch (ca_cpu.c: ca_cpu_step_forward). A
// workgroup owns `tile` cells: each invocation runs perception units (kernel, channel, cell) in
// registers and leaves their outputs in shared memory, the update layers then go layer by layer
// between two shared buffers, and the fire mask writes grid_{t+1}. Cells of one step depend on
// each other only through grid_t, which the previous dispatch finished. Nothing else is kept:
// fused_step_backward.comp recomputes the step.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"
#ifdef FUSED_CLOCKS
#define PROBE_BINDING 5 // fused_clocks.glsl
#define PROBE_KERNEL 0u
#endif
#define TILE_CELLS FORWARD_TILE
#include "ca_fused.glsl"
#include "fused_update_layers.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 4) writeonly buffer next_buf { float next_grid[]; }; // grid_{t+1} [C][pitch]

void main()
{
    uint first = gl_WorkGroupID.x * TILE_CELLS, lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x;
    // A one-cell tile as a constant, so that the cell loops compile to straight code (as in
    // fused_step_backward.comp, where the unrolled layers otherwise carried them all).
    uint width = TILE_CELLS == 1u ? 1u : min(TILE_CELLS, pc.cells - first);
    PROBE_START()
    uint units = pc.kernels * pc.channels, bits = perception_bits();
    // Update input: the cell's C channels, then every unit's perception outputs.
    for (uint item = lid; item < pc.channels * width; item += size) {
        uint c = item % width, ch = item / width;
        smem[ch * TILE_CELLS + c] = grid[ch * pc.pitch + first + c];
    }
    PROBE_AFTER(smem[0])
    for (uint item = lid; item < units * width; item += size) {
        uint c = item % width, unit = item / width, k = unit / pc.channels;
        load_neighbours(unit % pc.channels, first + c);
        perception_forward(k);
        uint at = (pc.channels + unit * bits) * TILE_CELLS + c;
        STORE_OUTPUTS(at)
    }
    PROBE_AFTER(smem[pc.channels * TILE_CELLS])
    barrier();
    PROBE_MARK()
    // The update layers, one invocation a gate, between two shared buffers.
    uint in_at = 0;
#define OUT_AT(u) ((u) % 2u == 0u ? pc.max_width * TILE_CELLS : 0u)
    UPDATE_LAYERS_FORWARD()
    // The last layer's C outputs are in_at's rows now: the proposed state.
    for (uint item = lid; item < pc.channels * width; item += size) {
        uint c = item % width, ch = item / width, cell = first + c;
        bool fire = rng_fires(pc.stream, pc.step, cell, pc.threshold);
        next_grid[ch * pc.pitch + cell] = fire ? smem[in_at + ch * TILE_CELLS + c] : grid[ch * pc.pitch + cell];
    }
    PROBE_END()
}
