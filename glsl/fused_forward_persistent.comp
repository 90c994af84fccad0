#version 450
// fused_forward_persistent.comp: the whole forward rollout, T CA steps, in one dispatch; each
// step of each tile as fused_step_forward.comp computes it. Workgroup w keeps tiles w, w + P,
// ... (P workgroups) for every step, and a tile's step t starts as soon as its neighbourhoods in
// grid_t are written (fused_persistent.glsl: how it knows, and why it may wait).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"
#define FUSED_POLLED_GRID
#define TILE_CELLS FORWARD_TILE
// Shared rows (of `tile` floats): the update layers' two buffers (max_width rows each, the
// update input in the first), then the tile's 3x3 neighbourhoods (9 C rows).
#define FUSED_NEIGHBOURS_AT (2u * pc.max_width * TILE_CELLS)
#include "ca_fused.glsl"
#include "fused_update_layers.glsl"

layout(local_size_x_id = 0) in;

#define ROLL_BINDING 4
#include "fused_persistent.glsl"

// A grid value another workgroup may still be computing (or this one, a tile-step earlier).
float grid_value(uint at)
{
    float v = grid[at];
    while (floatBitsToUint(v) == FUSED_EMPTY) v = grid[at];
    return v;
}

// Step s of the tile of cells from `first`: grid_s's neighbourhoods into shared memory, the
// perception circuits and update layers from there, grid_{s+1} of its cells out.
void tile_forward(uint s, uint first)
{
    uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x;
    uint width = TILE_CELLS == 1u ? 1u : min(TILE_CELLS, pc.cells - first);
    uint units = pc.kernels * pc.channels, bits = perception_bits();
    uint now = s * pc.channels * pc.pitch, next = now + pc.channels * pc.pitch;
    for (uint item = lid; item < 9u * pc.channels * width; item += size) {
        uint c = item % width, j = (item / width) % 9u, ch = item / (9u * width);
        int at = shifted_cell(first + c, pc.height, pc.width, pc.periodic, int(j / 3u) - 1, int(j % 3u) - 1);
        smem[FUSED_NEIGHBOURS_AT + (ch * 9u + j) * TILE_CELLS + c] = at < 0 ? 0.0 : grid_value(now + ch * pc.pitch + uint(at));
    }
    barrier();
    // Update input: the cell's C channels (its neighbourhoods' centres), then every unit's outputs.
    for (uint item = lid; item < pc.channels * width; item += size) {
        uint c = item % width, ch = item / width;
        smem[ch * TILE_CELLS + c] = smem[FUSED_NEIGHBOURS_AT + (ch * 9u + 4u) * TILE_CELLS + c];
    }
    for (uint item = lid; item < units * width; item += size) {
        uint c = item % width, unit = item / width;
        nbr = staged_neighbours(unit % pc.channels, c);
        perception_forward(unit / pc.channels);
        uint at = (pc.channels + unit * bits) * TILE_CELLS + c;
        STORE_OUTPUTS(at)
    }
    barrier();
    uint in_at = 0;
#define OUT_AT(u) ((u) % 2u == 0u ? pc.max_width * TILE_CELLS : 0u)
    UPDATE_LAYERS_FORWARD()
    for (uint item = lid; item < pc.channels * width; item += size) {
        uint c = item % width, ch = item / width, cell = first + c;
        bool fire = rng_fires(pc.stream, s, cell, pc.threshold);
        float old = smem[FUSED_NEIGHBOURS_AT + (ch * 9u + 4u) * TILE_CELLS + c];
        float value = fire ? smem[in_at + ch * TILE_CELLS + c] : old;
        grid[next + ch * pc.pitch + cell] = publish(value);
    }
    barrier(); // the next tile-step stages over these rows
}

void main()
{
    uint tiles = (pc.cells + TILE_CELLS - 1u) / TILE_CELLS;
    if (gl_LocalInvocationID.x == 0u) roll_arrive(0u);
    // Steps pc.step to pc.step + pc.run_steps - 1 (0 to T - 1; one at a time where the host runs
    // them stepwise).
    for (uint n = 0u; n < pc.run_steps; n++) {
        uint s = pc.step + n;
        // The first step's grid is whole before the dispatch: the roll's wait overlaps it.
        if (n == 1u && !roll_complete(0u)) return;
        for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) tile_forward(s, tile * TILE_CELLS);
    }
}
