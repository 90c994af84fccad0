// ca_fused.glsl: what the fused CA-step kernels share: the layer table, the workgroup's shared
// memory, the update layers' forward gate, and (fused_perception.glsl) the perception circuits.
//
// A workgroup owns `tile` consecutive cells. Shared memory holds rows of `tile` floats (row r,
// tile cell c at r * tile + c), so the layers of a CA step never leave the workgroup. The
// perception circuits are small: one invocation runs a unit's circuit in registers, forward and
// backward, and only its outputs go to shared memory.
#ifndef DLCA_CA_FUSED_GLSL
#define DLCA_CA_FUSED_GLSL

// One row of the layer table (src/gpu/ca_gpu_fused.c writes it, in forward order): the moore
// layer (kind 0), the later perception layers, then the update layers (kind 1). The kernels
// know a row's kind by its place and read only what they need. An update layer's reverse
// wiring is a table of `fanout` entries an input (gate * 2 + slot, or FUSED_NO_ENTRY), from a
// multiple of 4 words.
struct fused_layer {
    uint kind, n_in, n_out, units;
    uint unit_channels, in_split, in_base, in_stride;
    uint out_base, out_stride, coeff_base, coeff_stride;
    uint wiring_a, wiring_b, reverse_table, fanout;
};
const uint FUSED_NO_ENTRY = 0xffffffffu; // CA_GPU_NO_ENTRY
const uint FUSED_EMPTY = 0xffffffffu;    // CA_GPU_EMPTY: a NaN no kernel writes (fused_persistent.glsl)

// What every fused kernel binds first; the rest of its bindings follow from 4. Read-only
// tables are restrict so the compiler may use the read-only data path.
#ifdef FUSED_POLLED_GRID
// Every grid, [T + 1][C][pitch]: the persistent forward reads what other workgroups write during
// the dispatch, past the non-coherent caches (fused_persistent.glsl).
layout(std430, binding = 0) coherent volatile buffer grid_buf { float grid[]; };
#elif defined(FUSED_PERSISTENT)
layout(std430, binding = 0) restrict readonly buffer grid_buf { float grid[]; };   // [T + 1][C][pitch]
#else
layout(std430, binding = 0) restrict readonly buffer grid_buf { float grid[]; };   // grid_t [C][pitch]
#endif
layout(std430, binding = 1) restrict readonly buffer coeffs_buf { vec4 coeffs[]; }; // [gates]
layout(std430, binding = 2) restrict readonly buffer wiring_buf { uint wiring[]; };
layout(push_constant) uniform push_block { fused_push pc; };
#include "fused_clocks.glsl"

// Cells a tile in the forward and in the backward (src/gpu/ca_gpu_fused.c ca_gpu_fused_constants); each
// kernel defines TILE_CELLS as its own before including this file. Shared rows are TILE_CELLS
// floats. Keep it a constant, not a push constant: then row offsets fold into immediates, and
// the address arithmetic does not cost the backward the registers it needs to stay at or under
// 128 (docs/bench-notes.md, round 13).
layout(constant_id = 232) const uint FORWARD_TILE = 0;
layout(constant_id = 233) const uint BACKWARD_TILE = 0;

// The device's shared memory in floats less a small reserve (vk_shared_floats); the host sizes
// the tiles so that what a kernel carves out of smem fits.
layout(constant_id = 1) const uint SHARED_FLOATS = 2048;
shared float smem[SHARED_FLOATS];

// Coefficients of perception gate i (the model's first gates). A kernel that defines
// FUSED_STAGED_AT, the shared float where they start (4 a gate, from FUSED_STAGED_QUAD: a
// multiple of 4), reads the copy it staged there: inside these kernels every round of global
// loads is a long wait, and the circuits would otherwise pay one per layer (docs/bench-notes.md,
// round 5).
#ifdef FUSED_STAGED_AT
vec4 perception_coeff(uint i)
{
    uint at = (FUSED_STAGED_QUAD + i) * 4u;
    return vec4(smem[at], smem[at + 1u], smem[at + 2u], smem[at + 3u]);
}
#else
vec4 perception_coeff(uint i) { return coeffs[i]; }
#endif

#include "fused_perception.glsl"

// Channel ch's 3x3 neighbourhood of tile cell c, where a kernel that defines FUSED_NEIGHBOURS_AT
// (its first shared float) staged the tile's: 9 rows a channel, neighbour j at row ch * 9 + j.
#ifdef FUSED_NEIGHBOURS_AT
#define STAGED_NEIGHBOUR(j) v[j] = smem[FUSED_NEIGHBOURS_AT + (ch * 9u + j) * TILE_CELLS + c];
float[9] staged_neighbours(uint ch, uint c)
{
    float v[9];
    STAGED_NEIGHBOUR(0) STAGED_NEIGHBOUR(1) STAGED_NEIGHBOUR(2) STAGED_NEIGHBOUR(3) STAGED_NEIGHBOUR(4)
    STAGED_NEIGHBOUR(5) STAGED_NEIGHBOUR(6) STAGED_NEIGHBOUR(7) STAGED_NEIGHBOUR(8)
    return v;
}
#endif

// The layer table as a uniform block: every invocation reads the same row at once, which the
// constant cache serves without a per-workgroup copy in shared memory (a copy costs every
// dispatch a load round and a barrier; docs/bench-notes.md, round 4).
// std140 lays a row out as std430 does, 16 words at a stride of 64 bytes.
const uint FUSED_TABLE_MAX = FUSED_PERCEPTION_MAX + 32; // + CA_MAX_LAYERS update layers; CA_GPU_TABLE_ROWS
layout(std140, binding = 3) uniform layers_block { fused_layer table[FUSED_TABLE_MAX]; };

// What gate g of update layer L reads: its two inputs and its coefficients.
struct gate_params {
    uint a, b;
    vec4 k;
};

gate_params gate_params_of(fused_layer L, uint g)
{
    return gate_params(wiring[L.wiring_a + g], wiring[L.wiring_b + g], coeffs[L.coeff_base + g]);
}

// Gate g on the tile's cells: inputs from the rows at in_at, outputs to the rows at out_at. A
// tile of two (the default) loads all four inputs before either store: in a loop the compiler
// cannot tell a store from the next cell's loads apart, so it waits out each cell's loads in
// turn (docs/bench-notes.md, round 4). The tile is a constant so that the general loop is
// compiled only for tiles that run it, not beside every unrolled layer, where it triples the
// code and costs one-cell tiles' backward dozens of registers (round 10). The last tile may have
// one cell only; its second column is then scratch, computed and never read.
void update_gate_forward(gate_params p, uint g, uint width, uint in_at, uint out_at)
{
    if (TILE_CELLS == 2u) {
        uint a = in_at + p.a * 2u, b = in_at + p.b * 2u, y = out_at + g * 2u;
        float a0 = smem[a], a1 = smem[a + 1u], b0 = smem[b], b1 = smem[b + 1u];
        smem[y] = gate_eval(p.k, a0, b0);
        smem[y + 1u] = gate_eval(p.k, a1, b1);
        return;
    }
    for (uint c = 0; c < width; c++)
        smem[out_at + g * TILE_CELLS + c] = gate_eval(p.k, smem[in_at + p.a * TILE_CELLS + c], smem[in_at + p.b * TILE_CELLS + c]);
}

// The backward kernels' next two bindings, and the gradient that reaches `cell` of channel ch
// through its neighbours' moore gates: moore [C*8][pitch] holds, per cell p, channel and
// direction slot s (MOORE_SLOT), the gradient into input a of the moore gates that read
// neighbour SLOT_NEIGHBOUR(s), summed over kernels; it belongs to that neighbour of p, so cell q
// gathers row (ch, s) at q shifted back.
#ifdef FUSED_GRADIENT_BINDINGS
#ifdef FUSED_PERSISTENT
// The persistent backward: dgrid is read by other invocations of the workgroup at the next step,
// and moore holds every step's rows, [T][C*8][pitch], which neighbours' workgroups write during
// the dispatch (filled with FUSED_EMPTY first: fused_persistent.glsl); step t + 1's from
// moore_in_base. Bound twice: read as any buffer first (a cached line holds FUSED_EMPTY or the
// value, as each is written once, so a stale read only polls again), written and polled through
// moore_bits, past the caches.
layout(std430, binding = 4) coherent buffer dgrid_buf { float dgrid[]; };             // [C][pitch]
layout(std430, binding = 5) readonly buffer moore_buf { float moore_in[]; };
layout(std430, binding = 6) coherent volatile buffer moore_bits_buf { uint moore_bits[]; };
uint moore_in_base = 0u;
#define MOORE_IN(at) moore_in[moore_in_base + (at)]
// All 8 loaded first, then each polled while FUSED_EMPTY (one at a time would wait 8 load
// latencies in a row).
#define NEIGHBOUR_WAIT(l, i)                                                                       \
    while (floatBitsToUint(v[i]) == FUSED_EMPTY)                                                     \
        v[i] = uintBitsToFloat(                                                                    \
            moore_bits[moore_in_base + (ch * 8 + i) * pc.pitch + uint(max(at[8u - SLOT_NEIGHBOUR(i)], 0))]);
#else
layout(std430, binding = 4) buffer dgrid_buf { float dgrid[]; };             // [C][pitch]
layout(std430, binding = 5) readonly buffer moore_in_buf { float moore_in[]; }; // [C*8][pitch]
#define MOORE_IN(at) moore_in[at]
#define NEIGHBOUR_WAIT(l, i)
#endif

// The 8 loads are unconditional (cell 0's row where the neighbour is outside a zero boundary,
// then not added) so that they go out together: each one behind its own branch waited for the
// one before, 8 load latencies at the start of every backward dispatch. Slot i holds what was
// sent to neighbour j = SLOT_NEIGHBOUR(i) of a cell: `cell` gathers it from its neighbour 8 - j.
#define NEIGHBOUR_LOAD(l, i) v[i] = MOORE_IN((ch * 8 + i) * pc.pitch + uint(max(at[8u - SLOT_NEIGHBOUR(i)], 0)));
#define NEIGHBOUR_ADD(l, i) sum = at[8u - SLOT_NEIGHBOUR(i)] >= 0 ? sum + v[i] : sum;

// neighbour_gradient with `cell`'s neighbourhood_cells at hand.
float neighbour_gradient_at(uint ch, int at[9])
{
    float v[8], sum = 0.0;
    EACH_GATE(NEIGHBOUR_LOAD, 0)
    EACH_GATE(NEIGHBOUR_WAIT, 0)
    EACH_GATE(NEIGHBOUR_ADD, 0)
    return sum;
}

float neighbour_gradient(uint ch, uint cell)
{
    return neighbour_gradient_at(ch, neighbourhood_cells(cell, pc.height, pc.width, pc.periodic));
}
#endif

#endif
