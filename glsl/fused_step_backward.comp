#version 450
// fused_step_backward.comp: one CA step of BPTT in one dispatch (ca_cpu.c: ca_cpu_step_backward).
// A workgroup owns `tile` cells and keeps everything in shared memory:
//   0. the tile's 3x3 neighbourhoods in grid_t and the perception coefficients, staged once for
//      the perception circuits of 2 and 4;
//   1. dL/dgrid_{t+1} of its cells: its own part (dgrid) plus what the neighbours' moore gates
//      sent (moore_in, written by step t+1's dispatch), split by the fire mask;
//   2. the step's update activations, recomputed from grid_t (the forward keeps nothing);
//   3. the update layers backward, last to first: per gate, S into this workgroup's partial
//      rows and its two input gradients into shared scratch; then per input, their sum through
//      the padded reverse table (no atomics: the same bits every run). Compiled with
//      FUSED_MERGED_BACKWARD (as fused_step_backward_merged), an input's sum and the backward of
//      the gate below it share one phase (fused_update_backward.glsl);
//   4. per perception unit, in registers, the circuit again and its backward; S summed over
//      channels within the subgroup, into the partial rows of (kernel, the first of them); the
//      moore gates' neighbour gradients summed over kernels into moore_out for step t-1's
//      dispatch (fused_grid_gather.comp after step 0);
//   5. dgrid of its cells: the kept part, the update input's grid rows and the moore centres.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
#define FUSED_GRADIENT_BINDINGS
#if defined(FUSED_CLOCKS) && !defined(FUSED_PERSISTENT)
#define PROBE_BINDING 8 // fused_clocks.glsl
#define PROBE_KERNEL 1u
#endif
// Shared rows (of `tile` floats): act_rows of activations (update input, then every update
// layer; reused for the perception scratch), two gradient buffers of max_width rows, the kept
// part of dgrid (C rows), and the tile's 3x3 neighbourhoods (9 C rows); then, staged once, the
// perception gates' coefficients (4 floats a gate).
#define FUSED_NEIGHBOURS_BASE ((pc.act_rows + 2u * pc.max_width + pc.channels) * TILE_CELLS)
// In quads (of 4 floats: the coefficients' first is 16-byte aligned, so that a gate's come in one
// shared load).
#define FUSED_STAGED_QUAD ((FUSED_NEIGHBOURS_BASE + 9u * pc.channels * TILE_CELLS + 3u) / 4u)
#define FUSED_STAGED_AT (FUSED_STAGED_QUAD * 4u)
#define TILE_CELLS BACKWARD_TILE
#ifdef FUSED_PERSISTENT
#define UPDATE_LAST_NEXT_WIDTH 0u // see tile_backward
// The persistent kernel's steps use two neighbourhood buffers in turn, the second after the
// coefficients: step t - 1's are loaded into one while step t reads the other (see
// prefetch_neighbourhoods; src/gpu/ca_gpu_plan.c plans the room).
uint step_now = 0u;
#define FUSED_NEIGHBOURS_ALT (FUSED_STAGED_AT + 4u * pc.kernels * PERCEPTION_GATES_PER_KERNEL)
#define FUSED_NEIGHBOURS_OF(t) (((t) & 1u) != 0u ? FUSED_NEIGHBOURS_ALT : FUSED_NEIGHBOURS_BASE)
#define FUSED_NEIGHBOURS_AT FUSED_NEIGHBOURS_OF(step_now)
#else
#define FUSED_NEIGHBOURS_AT FUSED_NEIGHBOURS_BASE
#endif
#include "ca_fused.glsl"
#include "fused_update_layers.glsl"
#include "fused_update_backward.glsl"

layout(local_size_x_id = 0) in;

#ifdef FUSED_PERSISTENT
// Compiled with FUSED_PERSISTENT (as fused_step_backward_persistent and the merged one): every
// step of BPTT in one dispatch, a workgroup keeping its tiles for all of them, as
// fused_forward_persistent.comp does the forward. A tile's step t waits for the moore rows its
// neighbours sent at step t + 1 (fused_persistent.glsl); step t's go to moore_out_base, through
// moore_bits (binding 6, ca_fused.glsl).
#define ROLL_BINDING 8
#include "fused_persistent.glsl"
uint moore_out_base = 0u;
bool prefetch_next = false; // stage step t - 1's neighbourhoods during step t
bool gather_now = false;
#define MOORE_OUT(at, value) moore_bits[moore_out_base + (at)] = floatBitsToUint(publish(value));
#define STEP_NOW step_now
#else
layout(std430, binding = 6) writeonly buffer moore_out_buf { float moore_out[]; }; // [C*8][pitch]
#define MOORE_OUT(at, value) moore_out[at] = value;
#define STEP_NOW pc.step
#endif
layout(std430, binding = 7) buffer partial_buf { vec4 partial[]; };               // [workgroups][partial_rows]
#ifdef FUSED_PERSISTENT
// BPTT's first step (t = T - 1) stores its S partials instead of adding to them, so that nothing
// zeroes them first: a fill of the whole buffer costs every training step its size in memory
// traffic (docs/bench-notes.md, round 16). The rows that no workgroup writes (perception rows
// past a cluster's first lane) stay zero from when the buffer was made (src/gpu/ca_gpu.c). A
// select on a loaded value, not a load under a condition (see UPDATE_PREFETCH_GATE) nor a load
// from a zero row: the zero row cost the backward the registers that let two of its workgroups
// share an SM, and checkerboard's persistent kernels no longer fit (round 16).
bool sums_started = false;
vec4 sums_so_far(vec4 loaded) { return sums_started ? loaded : vec4(0.0); }
#else
vec4 sums_so_far(vec4 loaded) { return loaded; }
#endif
// The wiring buffer again, 4 words a load: the update layers' padded reverse tables.
layout(std430, binding = 2) restrict readonly buffer reverse_table_buf { uvec4 reverse_table[]; };

// Whether there are fewer workgroups (S partial slots) than tiles (src/gpu/ca_gpu_plan.c caps
// them so that the partials stay bounded). A constant, so that a workgroup a tile compiles
// without the loop: with it the backward needs more than the 128 registers at which two of its
// workgroups still share an SM (docs/bench-notes.md, round 9).
layout(constant_id = 231) const bool SHARED_SLOTS = false;

uint grad_at(uint which) { return (pc.act_rows + which * pc.max_width) * TILE_CELLS; }
uint keep_at() { return (pc.act_rows + 2 * pc.max_width) * TILE_CELLS; }

// dL/dgrid_{t+1} of channel ch of `cell`: its own part plus, where there is a step t + 1, what
// the neighbours' moore gates sent (loaded either way, so that the loads need no branch).
float incoming_gradient(uint ch, uint cell, int at[9])
{
#ifdef FUSED_PERSISTENT
    // Step T - 1 has no step after it, whose rows would never come: it loads its own step's
    // (moore_in_base is then moore_out_base's) and does not wait for them.
    float d = dgrid[ch * pc.pitch + cell], v[8];
    EACH_GATE(NEIGHBOUR_LOAD, 0)
    if (!gather_now) return d;
    EACH_GATE(NEIGHBOUR_WAIT, 0)
    float sum = d;
    EACH_GATE(NEIGHBOUR_ADD, 0)
    return sum;
#else
    float d = dgrid[ch * pc.pitch + cell], sent = neighbour_gradient_at(ch, at);
    return pc.gather != 0 ? d + sent : d;
#endif
}

// Tile cell c of channel ch: its neighbourhood v staged, its incoming gradient d split by the
// fire mask into the update's part (gradient buffer 0) and the kept part.
void stage_neighbourhood(uint ch, uint c, float v[9])
{
    for (uint j = 0; j < 9; j++) smem[FUSED_NEIGHBOURS_AT + (ch * 9u + j) * TILE_CELLS + c] = v[j];
}

void split_gradient(uint ch, uint c, uint cell, float d)
{
    bool fire = rng_fires(pc.stream, STEP_NOW, cell, pc.threshold);
    smem[grad_at(0) + ch * TILE_CELLS + c] = fire ? d : 0.0;
    smem[keep_at() + ch * TILE_CELLS + c] = fire ? 0.0 : d;
}

void stage_cell(uint ch, uint c, uint cell, float v[9], float d)
{
    stage_neighbourhood(ch, c, v);
    split_gradient(ch, c, cell, d);
}

void stage_coefficients(uint i, vec4 k)
{
    uint at = (FUSED_STAGED_QUAD + i) * 4u;
    smem[at] = k.x, smem[at + 1u] = k.y, smem[at + 2u] = k.z, smem[at + 3u] = k.w;
}

// Stages in shared memory what the perception circuits read, recompute and backward alike (the
// tile's neighbourhoods in grid_t, the perception gates' coefficients), and splits the tile's
// incoming gradient. An invocation's first item of each issues every load before its first
// store (those past the items load the last one's, unused): as loops one after the other they
// would wait four load latencies in a row (docs/bench-notes.md, round 11). The barrier that makes
// them visible is the caller's.
void stage_tile(uint first, uint width)
{
    uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x;
    uint items = pc.channels * width, gates = pc.kernels * PERCEPTION_GATES_PER_KERNEL;
    uint item = min(lid, items - 1u), c = item % width, ch = item / width;
    int at[9] = neighbourhood_cells(first + c, pc.height, pc.width, pc.periodic);
    float v[9] = neighbours_at(ch, at);
    float d = incoming_gradient(ch, first + c, at);
    vec4 k = coeffs[min(lid, gates - 1u)];
    if (lid < items) stage_cell(ch, c, first + c, v, d);
    if (lid < gates) stage_coefficients(lid, k);
    for (item = lid + size; item < items; item += size) {
        c = item % width, ch = item / width;
        at = neighbourhood_cells(first + c, pc.height, pc.width, pc.periodic);
        stage_cell(ch, c, first + c, neighbours_at(ch, at), incoming_gradient(ch, first + c, at));
    }
    for (uint i = lid + size; i < gates; i += size) stage_coefficients(i, coeffs[i]);
}

#ifdef FUSED_PERSISTENT
// The persistent backward stages in parts: the coefficients once; grid_t's neighbourhoods (for
// the first step here, for the others during the step before: prefetch_neighbourhoods); and
// after the recompute the incoming gradient, which waits for the neighbours' step t + 1: a
// workgroup recomputes its step while its neighbours finish theirs, so that its wait is mostly
// over when it polls.
void stage_inputs(uint first, uint width)
{
    uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x;
    uint items = pc.channels * width, gates = pc.kernels * PERCEPTION_GATES_PER_KERNEL;
    uint item = min(lid, items - 1u), c = item % width, ch = item / width;
    float v[9] = neighbours_of(ch, first + c);
    vec4 k = coeffs[min(lid, gates - 1u)];
    if (lid < items) stage_neighbourhood(ch, c, v);
    if (lid < gates) stage_coefficients(lid, k);
    for (item = lid + size; item < items; item += size) {
        c = item % width, ch = item / width;
        stage_neighbourhood(ch, c, neighbours_of(ch, first + c));
    }
    for (uint i = lid + size; i < gates; i += size) stage_coefficients(i, coeffs[i]);
}

// Step t's neighbourhoods of the tile into their buffer, by the invocations from `from` (those
// past the perception units during the perception backward of step t + 1: their loads' wait
// overlaps it). grid_t is whole: the forward's dispatch finished it.
void prefetch_neighbourhoods(uint first, uint width, uint t, uint from)
{
    uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x, at = FUSED_NEIGHBOURS_OF(t);
    grid_base = t * pc.channels * pc.pitch;
    for (uint item = lid - from; lid >= from && item < pc.channels * width; item += size - from) {
        uint c = item % width, ch = item / width;
        float v[9] = neighbours_of(ch, first + c);
        for (uint j = 0; j < 9; j++) smem[at + (ch * 9u + j) * TILE_CELLS + c] = v[j];
    }
}

// By the invocations past the first subgroup, which have no gates in the recompute's narrow last
// layers: their loads overlap those layers.
void stage_gradient(uint first, uint width)
{
    uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x, skip = gl_SubgroupSize < size ? gl_SubgroupSize : 0u;
    for (uint item = lid - skip; lid >= skip && item < pc.channels * width; item += size - skip) {
        uint c = item % width, ch = item / width;
        int at[9] = neighbourhood_cells(first + c, pc.height, pc.width, pc.periodic);
        split_gradient(ch, c, first + c, incoming_gradient(ch, first + c, at));
    }
}
#endif

void recompute_forward(uint first, uint width)
{
    uint units = pc.kernels * pc.channels, bits = perception_bits();
    // The cell's own channels: the centres of its staged neighbourhoods (no global load round).
    for (uint item = gl_LocalInvocationID.x; item < pc.channels * width; item += gl_WorkGroupSize.x) {
        uint c = item % width, ch = item / width;
        smem[ch * TILE_CELLS + c] = smem[FUSED_NEIGHBOURS_AT + (ch * 9u + 4u) * TILE_CELLS + c];
    }
    for (uint item = gl_LocalInvocationID.x; item < units * width; item += gl_WorkGroupSize.x) {
        uint c = item % width, unit = item / width;
        nbr = staged_neighbours(unit % pc.channels, c);
        perception_forward(unit / pc.channels);
        uint at = (pc.channels + unit * bits) * TILE_CELLS + c;
        STORE_OUTPUTS(at)
    }
    barrier();
    PROBE_MARK()
    // The update layers as in fused_step_forward.comp, each into its own rows.
    uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x, in_at = 0;
#define OUT_AT(u) UPDATE_ROWS_AT(u)
    UPDATE_LAYERS_FORWARD()
}

// gate_backward (below) on a tile of two, with the gate's dy in both cells at hand.
void gate_backward_pair(gate_params p, vec4 acc, uint g, uint row, uint width, uint in_at, uint da_at, uint db_at, vec2 d)
{
    uint a = in_at + p.a * 2u, b = in_at + p.b * 2u, own = g * 2u;
    float a0 = smem[a], a1 = smem[a + 1u], b0 = smem[b], b1 = smem[b + 1u];
    acc += d.x * vec4(1.0, a0, b0, a0 * b0);
    if (width == 2u) acc += d.y * vec4(1.0, a1, b1, a1 * b1); // else column 1 is scratch
    smem[da_at + own] = d.x * (p.k.y + p.k.w * b0);
    smem[da_at + own + 1u] = d.y * (p.k.y + p.k.w * b1);
    smem[db_at + own] = d.x * (p.k.z + p.k.w * a0);
    smem[db_at + own + 1u] = d.y * (p.k.z + p.k.w * a1);
    partial[row] = acc;
}

// Gate g of an update layer backward on the tile's cells (p: its parameters; acc: its S so far,
// kept in this workgroup's partial row `row`): S, and the gradients into its inputs a (da_at's
// rows) and b (db_at's rows).
void gate_backward(gate_params p, vec4 acc, uint g, uint row, uint width, uint in_at, uint da_at, uint db_at)
{
    uint dy_at = grad_at(0);
    if (TILE_CELLS == 2u) { // as update_gate_forward: every load before the first store
        uint dy = dy_at + g * 2u;
        gate_backward_pair(p, acc, g, row, width, in_at, da_at, db_at, vec2(smem[dy], smem[dy + 1u]));
        return;
    }
    for (uint c = 0; c < width; c++) {
        float a = smem[in_at + p.a * TILE_CELLS + c], b = smem[in_at + p.b * TILE_CELLS + c], dy = smem[dy_at + g * TILE_CELLS + c];
        acc += dy * vec4(1.0, a, b, a * b);
        smem[da_at + g * TILE_CELLS + c] = dy * (p.k.y + p.k.w * b);
        smem[db_at + g * TILE_CELLS + c] = dy * (p.k.z + p.k.w * a);
    }
    partial[row] = acc;
}

// What the 4 reverse entries `entry` add to the two cells' gradient sums of an input, from
// da_at's and db_at's rows (a tile of two).
vec2 reader_sums(uvec4 entry, vec2 sum, uint da_at, uint db_at)
{
    for (uint q = 0; q < 4; q++)
        if (entry[q] != FUSED_NO_ENTRY) {
            uint from = ((entry[q] & 1u) == 0u ? da_at : db_at) + (entry[q] >> 1) * 2u;
            sum += vec2(smem[from], smem[from + 1u]);
        }
    return sum;
}

// Input i's gradient on a tile of two (fanout reverse entries from table_at; the first `owned`,
// 4 or 8, in own0 and own1 where the caller has them, else loaded) into gradient buffer 0,
// summed in the reverse table's order (no atomics: the same bits every run).
vec2 input_gradient_sum(uint i, uint fanout, uint table_at, bool own, uvec4 own0, uvec4 own1, uint owned, uint da_at,
                        uint db_at)
{
    vec2 sum = vec2(0.0);
    for (uint j = 0; j < fanout; j += 4)
        sum = reader_sums(own && j < owned ? (j == 0u ? own0 : own1) : reverse_table[(table_at + i * fanout + j) / 4], sum,
                          da_at, db_at);
    return sum;
}

void input_gradient(uint i, uint fanout, uint table_at, bool own, uvec4 own0, uvec4 own1, uint owned, uint da_at,
                    uint db_at)
{
    vec2 sum = input_gradient_sum(i, fanout, table_at, own, own0, own1, owned, da_at, db_at);
    uint dy_at = grad_at(0);
    smem[dy_at + i * 2u] = sum.x, smem[dy_at + i * 2u + 1u] = sum.y;
}

// Every input of an update layer (n_in of them) its gradient. On a tile of two, this
// invocation's input lid from the `owned` entries prefetched with its layer (no load for up to 8
// readers, so no wait that would also cover the next layer's prefetch, issued just before), any
// further input (past the workgroup's size) loading its own. Other tiles take the plain loop
// below, which measured faster on one-cell tiles than the path above (docs/bench-notes.md,
// round 10).
void gather_inputs(uint n_in, uint fanout, uint table_at, uvec4 own0, uvec4 own1, uint owned, uint width, uint da_at,
                   uint db_at)
{
    uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x, dy_at = grad_at(0);
    if (TILE_CELLS == 2u) {
        if (lid < n_in) input_gradient(lid, fanout, table_at, true, own0, own1, owned, da_at, db_at);
        for (uint i = lid + size; i < n_in; i += size) input_gradient(i, fanout, table_at, false, own0, own1, owned, da_at, db_at);
        return;
    }
    for (uint i = lid; i < n_in; i += size) {
        uint row = dy_at + i * TILE_CELLS;
        for (uint c = 0; c < width; c++) smem[row + c] = 0.0;
        for (uint j = 0; j < fanout; j += 4) {
            uvec4 entry = i == lid && j == 0 ? own0 : reverse_table[(table_at + i * fanout + j) / 4];
            for (uint c = 0; c < width; c++) {
                float sum = smem[row + c];
                for (uint q = 0; q < 4; q++)
                    if (entry[q] != FUSED_NO_ENTRY)
                        sum += smem[((entry[q] & 1u) == 0u ? da_at : db_at) + (entry[q] >> 1) * TILE_CELLS + c];
                smem[row + c] = sum;
            }
        }
    }
}

// The moore gates' backward of kernel k on nbr, their dy read from the scratch rows (slot of
// the gate's neighbour, unit) where perception_units_backward left them: S into sacc[0], the
// neighbour gradients into the same rows, the centre's into row (8, unit).
#define MOORE_BACKWARD(l, g)                                                                             \
    {                                                                                                    \
        uint j = MOORE_WIRE(k, g), at = (MOORE_SLOT(j) * units + unit) * TILE_CELLS + c;                 \
        float a = PICK9(nbr, j), d = smem[at];                                                           \
        vec4 kc = perception_coeff(GATE_INDEX(0, k, g));                                                 \
        sacc[0][g] += d * vec4(1.0, a, nbr[4], a * nbr[4]);                                              \
        smem[at] = d * (kc.y + kc.w * nbr[4]);                                                           \
        centre += d * (kc.z + kc.w * a);                                                                 \
    }

void moore_backward(uint k, uint unit, uint c)
{
    uint units = pc.kernels * pc.channels;
    float centre = 0.0;
    EACH_GATE(MOORE_BACKWARD, 0)
    smem[(8 * units + unit) * TILE_CELLS + c] = centre;
}

// dv of the circuit's outputs: gradient buffer 0's rows C + unit * bits + j.
#define OUTPUT_GRADIENT(l, j) dv[l][j] = j < perception_bits() ? smem[at + j * TILE_CELLS] : 0.0;
#define OUTPUT_GRADIENTS(l)                                                                              \
    if (l + 1 == PERCEPTION_DEPTH) EACH_GATE(OUTPUT_GRADIENT, l)

// The moore gates' dy into the scratch rows (slot of the gate's neighbour, unit).
#define MOORE_GRADIENT(l, g) smem[(MOORE_SLOT(MOORE_WIRE(k, g)) * units + unit) * TILE_CELLS + c] = dv[0][g];

// S of the unit's gates of layer l summed over `lanes` units in a row (channels of one kernel,
// neighbours in a subgroup), so that only the first of them adds it into its partial rows (the
// others stay 0 for gate_sums_reduce.comp): a read-modify-write of every unit's own rows would be
// most of the perception backward's time, in latency and L2 traffic (docs/bench-notes.md, round
// 11). A butterfly of shuffles: the same sums in the same order every run. One step of it for
// every gate of the layers at hand at a time (SUM_LANES(SHUFFLE_SUMS(1) ...)), so that a step's
// shuffles go out together: a loop per gate waits out each shuffle in turn (round 12).
#define SHUFFLE_SUM(l, g) if (HAS_GATE(l, g)) sacc[l][g] += subgroupShuffleXor(sacc[l][g], o);
#define SHUFFLE_SUMS(l) EACH_GATE(SHUFFLE_SUM, l)
#define SUM_LANES(LAYERS) for (uint o = 1u; o < lanes; o *= 2u) { LAYERS }
// Every row of the layers at hand loaded (LOAD_SUMS) before the first is stored (STORE_SUMS):
// added one row at a time, each load would wait for the store before it (the compiler cannot
// tell the rows apart), a whole load latency a gate.
#define LOAD_SUM(l, g) if (HAS_GATE(l, g)) sacc[l][g] += sums_so_far(partial[base + UNIT_ROW(l, unit, g)]);
#define STORE_SUM(l, g) if (HAS_GATE(l, g)) partial[base + UNIT_ROW(l, unit, g)] = sacc[l][g];
#define LOAD_SUMS(l) if (first_lane) { EACH_GATE(LOAD_SUM, l) }
#define STORE_SUMS(l) if (first_lane) { EACH_GATE(STORE_SUM, l) }

// One step of add_moore_sums: lanes o apart swap halves of the `half` * 2 gates they hold; each
// keeps one half (the upper if its bit o is set), with the other lane's sums of it added.
#define HALVE_MOORE_SUMS(o, half)                                                                        \
    if (lanes > o) {                                                                                     \
        bool up = (unit & o) != 0u;                                                                      \
        for (uint i = 0u; i < half; i++) {                                                               \
            vec4 send = up ? sacc[0][i] : sacc[0][i + half], keep = up ? sacc[0][i + half] : sacc[0][i]; \
            sacc[0][i] = keep + subgroupShuffleXor(send, o);                                             \
        }                                                                                                \
        gate += up ? half : 0u, count = half;                                                            \
    }

// The moore gates' S (sacc[0]) summed over the `lanes` units of this one's cluster, then added
// into the partial rows of the cluster's first unit. By recursive halving, not a butterfly: a
// lane ends with the sums of 8 / lanes of the 8 gates (1 from 8 lanes on, whose 8-lane groups
// are then summed), 28 shuffles instead of 96 at 8 lanes, and the lanes store a row each. Only
// on one-cell tiles (image, lizard): on tiles of two it takes the backward past 128 registers
// (docs/bench-notes.md, rounds 11-13).
void add_moore_sums(uint unit, uint lanes, uint base)
{
    uint gate = 0u, count = 8u;
    HALVE_MOORE_SUMS(1u, 4u) HALVE_MOORE_SUMS(2u, 2u) HALVE_MOORE_SUMS(4u, 1u)
    for (uint o = 8u; o < lanes; o *= 2u) sacc[0][0] += subgroupShuffleXor(sacc[0][0], o);
    if ((unit & (lanes - 1u)) >= 8u) return;
    uint row = base + UNIT_ROW(0, unit & ~(lanes - 1u), gate);
    for (uint m = 0u; m < 8u; m++) // every load before the first store, as LOAD_SUMS
        if (m < count) sacc[0][m] += sums_so_far(partial[row + m]);
    for (uint m = 0u; m < 8u; m++)
        if (m < count) partial[row + m] = sacc[0][m];
}

// One invocation per unit (kernel, channel), over the tile's cells, in two passes so that
// fewer values are live at once (registers, not local memory): the circuit forward and the
// layers after the moore gates backward, then the moore gates backward. Neighbourhoods and
// coefficients come from shared memory (stage_tile).
void perception_units_backward(uint width)
{
    uint units = pc.kernels * pc.channels, bits = perception_bits();
    uint base = gl_WorkGroupID.x * pc.partial_rows;
    // The largest power of two that divides C, within a subgroup: whole clusters of a kernel's
    // channels, all active together (units is a multiple of it). Subgroups are assumed to be
    // runs of consecutive invocations, as on every driver this has met. Not where workgroups of
    // two-cell tiles share slots: there the sums take the tile loop past 128 registers
    // (docs/bench-notes.md, round 11).
    bool sum_over_lanes = !(SHARED_SLOTS && TILE_CELLS != 1u);
    uint lanes = sum_over_lanes ? min(pc.channels & (0u - pc.channels), gl_SubgroupSize) : 1u;
    for (uint unit = gl_LocalInvocationID.x; unit < units; unit += gl_WorkGroupSize.x) {
        uint k = unit / pc.channels, ch = unit % pc.channels;
        bool first_lane = ch % lanes == 0u;
        perception_clear_sums();
        PROBE_AFTER_IF(unit == 0u, smem[FUSED_NEIGHBOURS_AT] + smem[FUSED_STAGED_AT])
        for (uint c = 0; c < width; c++) {
            nbr = staged_neighbours(ch, c);
            perception_forward(k);
            PROBE_AFTER_IF(unit == 0u, pv[2][1])
            uint at = grad_at(0) + (pc.channels + unit * bits) * TILE_CELLS + c;
            EACH_LAYER(OUTPUT_GRADIENTS)
            perception_layers_backward(k);
            EACH_GATE(MOORE_GRADIENT, 0)
            PROBE_AFTER_IF(unit == 0u, dv[0][7] + dv[0][0])
        }
        SUM_LANES(SHUFFLE_SUMS(1) SHUFFLE_SUMS(2) SHUFFLE_SUMS(3))
        LOAD_SUMS(1) LOAD_SUMS(2) LOAD_SUMS(3)
        STORE_SUMS(1) STORE_SUMS(2) STORE_SUMS(3)
        PROBE_MARK_IF(unit == 0u)
        for (uint c = 0; c < width; c++) {
            nbr = staged_neighbours(ch, c);
            moore_backward(k, unit, c);
        }
        PROBE_AFTER_IF(unit == 0u, smem[(8 * units + unit) * TILE_CELLS + 1])
        if (TILE_CELLS == 1u) { // on tiles of two it takes the backward past 128 registers
            add_moore_sums(unit, lanes, base);
        } else {
            SUM_LANES(SHUFFLE_SUMS(0))
            LOAD_SUMS(0)
            STORE_SUMS(0)
        }
    }
    PROBE_MARK()
    barrier();
    PROBE_MARK()
}

// One invocation per (cell, channel, sum): sums 0-7 the moore gradients of direction slot i over
// the kernels into moore_out, sum 8 dgrid (the kept part, the update input's grid row, the moore
// centres).
void finish_grid(uint first, uint width)
{
    uint units = pc.kernels * pc.channels;
    for (uint item = gl_LocalInvocationID.x; item < 9 * pc.channels * width; item += gl_WorkGroupSize.x) {
        uint c = item % width, ch = (item / width) % pc.channels, i = item / (width * pc.channels), cell = first + c;
        float sum = 0.0;
        for (uint k = 0; k < pc.kernels; k++) sum += smem[(i * units + k * pc.channels + ch) * TILE_CELLS + c];
        if (i < 8)
            MOORE_OUT((ch * 8 + i) * pc.pitch + cell, sum)
        else
            dgrid[ch * pc.pitch + cell] = sum + smem[keep_at() + ch * TILE_CELLS + c] + smem[grad_at(0) + ch * TILE_CELLS + c];
    }
}

// One tile's backward step, the tile of cells from `first`.
void tile_backward(uint first)
{
    // A one-cell tile as a constant, so that the cell loops compile to straight code (the
    // unrolled layers would otherwise carry them all: image's backward binary doubled).
    uint width = TILE_CELLS == 1u ? 1u : min(TILE_CELLS, pc.cells - first);
#ifdef FUSED_PERSISTENT
    // The neighbourhoods are staged (main, or the step before). The recompute's last layer syncs
    // only the first subgroup where it fits it (UPDATE_LAST_NEXT_WIDTH): the others stage the
    // gradient meanwhile.
    recompute_forward(first, width);
    stage_gradient(first, width);
    barrier();
#else
    stage_tile(first, width);
    barrier();
    PROBE_MARK()
    recompute_forward(first, width); // ends with a barrier
#endif
    uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x, db_at = grad_at(1);
    uint slot = gl_WorkGroupID.x * pc.partial_rows; // this workgroup's S partial rows
#ifdef FUSED_MERGED_BACKWARD
    UPDATE_LAYERS_BACKWARD_MERGED()
#else
    UPDATE_LAYERS_BACKWARD()
#endif
#ifdef FUSED_PERSISTENT
    uint units = pc.kernels * pc.channels;
    if (prefetch_next) prefetch_neighbourhoods(first, width, step_now - 1u, units < size ? units : 0u);
#endif
    perception_units_backward(width);
    finish_grid(first, width);
}

#ifdef FUSED_PERSISTENT
// Steps pc.step down to pc.step + 1 - pc.run_steps (T - 1 to 0; one at a time where the host
// runs them stepwise), this workgroup's tile in each: the host runs this kernel only where every
// tile has an S partial slot of its own, which takes all its steps, each row read and written by
// one invocation (program order). dgrid's rows go from one invocation to another between steps:
// a workgroup-scope barrier makes them visible (a device-scope one would wait for every store in
// flight, the S partials' too).
void main()
{
    uint grid_rows = pc.channels * pc.pitch, first = gl_WorkGroupID.x * TILE_CELLS;
    if (gl_LocalInvocationID.x == 0u) roll_arrive(1u);
    step_now = pc.step, grid_base = pc.step * grid_rows;
    stage_inputs(first, TILE_CELLS == 1u ? 1u : min(TILE_CELLS, pc.cells - first));
    barrier();
    for (uint n = 0u; n < pc.run_steps; n++) {
        uint t = pc.step - n;
        // The first step waits for nothing: the roll's wait overlaps it.
        if (n == 1u && !roll_complete(1u)) return;
        step_now = t, gather_now = t + 1u < pc.steps, prefetch_next = n + 1u < pc.run_steps;
        sums_started = gather_now;
        grid_base = t * grid_rows, moore_out_base = t * 8u * grid_rows;
        moore_in_base = gather_now ? moore_out_base + 8u * grid_rows : moore_out_base;
        tile_backward(first);
        groupMemoryBarrier();
        barrier();
    }
}
#else
// With shared slots a workgroup takes tile gl_WorkGroupID.x, then every gl_NumWorkGroups.x-th
// tile after it in turn, all adding into its one slot: each partial row is read and written by
// the same invocation, so program order is all they need.
void main()
{
    PROBE_START()
    if (!SHARED_SLOTS) {
        tile_backward(gl_WorkGroupID.x * TILE_CELLS);
        PROBE_END()
        return;
    }
    uint tiles = (pc.cells + TILE_CELLS - 1u) / TILE_CELLS;
    for (uint t = gl_WorkGroupID.x; t < tiles; t += gl_NumWorkGroups.x) {
        if (t != gl_WorkGroupID.x) barrier(); // the tile before still reads shared memory
        tile_backward(t * TILE_CELLS);
    }
}
#endif
