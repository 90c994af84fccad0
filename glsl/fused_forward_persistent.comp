#version 450
// fused_forward_persistent.comp: the whole forward rollout, T CA steps, in one dispatch; each
// step of each tile as fused_step_forward.comp computes it. Workgroup w keeps tiles w, w + P,
// ... (P workgroups) for every step, and a tile's step t starts as soon as its neighbourhoods in
// grid_t are written: the host fills grids 1..T with FUSED_EMPTY first, so a value is its own
// flag, and a reader polls it until it is something else. No fence, no counter, no barrier
// across workgroups: a dispatch boundary costs ~2 us on an H100, such a wait ~0.8
// (tools/BENCH_NOTES.md, fifteenth round).
//
// Waiting on another workgroup is safe only while it runs. Every workgroup takes a ticket when
// it starts (roll) and none polls before all P have theirs; if they do not all come within
// ROLL_POLLS reads (the device cannot hold them at once), the roll closes, every workgroup
// stops, and the host sees ROLL_CLOSED (src/ca_gpu_step.c) and runs one dispatch a step.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"
#define FUSED_PERSISTENT
#define TILE_CELLS FORWARD_TILE
// Shared rows (of `tile` floats): the update layers' two buffers (max_width rows each, the
// update input in the first), then the tile's 3x3 neighbourhoods (9 C rows).
#define FUSED_NEIGHBOURS_AT (2u * pc.max_width * TILE_CELLS)
#include "ca_fused.glsl"
#include "fused_update_layers.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 4) coherent volatile buffer roll_buf { uint roll; }; // zeroed by the host

const uint FUSED_EMPTY = 0xffffffffu; // CA_GPU_EMPTY: a NaN no gate writes (see publish)
const uint ROLL_CLOSED = 0x80000000u;
const uint ROLL_POLLS = 4096u;
const uint ROLL_WAITING = 0u, ROLL_ALL_HERE = 1u, ROLL_GAVE_UP = 2u;
shared uint roll_state;

// Invocation 0, after its ticket: whether all P workgroups took theirs. Past ROLL_POLLS reads it
// closes the roll, unless the last came meanwhile; once closed with fewer than P it stays so
// (arrivals after it see the bit), so every workgroup reaches the same answer.
uint roll_wait()
{
    for (uint n = 0u; n < ROLL_POLLS + gl_NumWorkGroups.x + 2u; n++) {
        uint r = roll;
        if ((r & ROLL_CLOSED) != 0u) return ROLL_GAVE_UP;
        if (r == gl_NumWorkGroups.x) return ROLL_ALL_HERE;
        if (n >= ROLL_POLLS && atomicCompSwap(roll, r, r | ROLL_CLOSED) == r) return ROLL_GAVE_UP;
    }
    return ROLL_GAVE_UP;
}

// A grid value another workgroup may still be computing (or this one, a tile-step earlier).
float grid_value(uint at)
{
    float v = grid[at];
    while (floatBitsToUint(v) == FUSED_EMPTY) v = grid[at];
    return v;
}

// What a cell's new state is stored as: any NaN with FUSED_EMPTY's bits as another NaN, so that
// a reader never waits for a value that was written.
float publish(float v) { return floatBitsToUint(v) == FUSED_EMPTY ? uintBitsToFloat(0x7fffffffu) : v; }

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
        grid[next + ch * pc.pitch + cell] = publish(fire ? smem[in_at + ch * TILE_CELLS + c] : old);
    }
    barrier(); // the next tile-step stages over these rows
}

void main()
{
    uint tiles = (pc.cells + TILE_CELLS - 1u) / TILE_CELLS;
    if (gl_LocalInvocationID.x == 0u) roll_state = (atomicAdd(roll, 1u) & ROLL_CLOSED) != 0u ? ROLL_GAVE_UP : ROLL_WAITING;
    for (uint s = 0u; s < pc.steps; s++) {
        // Step 0 reads only grid_0, which the host wrote: the roll's wait overlaps it.
        if (s == 1u) {
            if (gl_LocalInvocationID.x == 0u && roll_state == ROLL_WAITING) roll_state = roll_wait();
            barrier();
            if (roll_state != ROLL_ALL_HERE) return;
        }
        for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) tile_forward(s, tile * TILE_CELLS);
    }
}
