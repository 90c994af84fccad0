// fused_perception.glsl: the fused kernels' perception circuits (kernel k on channel ch of one
// cell: the moore gates, then the later perception layers).
//
// The circuits are tiny (width <= 8, depth <= FUSED_PERCEPTION_MAX) and the same for every
// cell, so their shape is specialisation constants (src/gpu/ca_gpu_fused.c ca_gpu_fused_constants) and
// the code below is unrolled by macros: every array index is a literal, and a wiring choice is a
// chain of selects on a value the whole dispatch shares, so the circuit's values, gradients and
// S sums stay in registers (an array indexed at run time would live in local memory:
// docs/bench-notes.md, round 3). The wiring itself is read from the wiring buffer, not
// specialised: then every seed of a shape runs the same compiled kernels, and a new seed starts
// from the pipeline cache instead of compiling its own (the selects cost more a step than the
// folded constants did, the compiles far more a run: docs/bench-notes.md, eighteenth round).
// Needs, declared before: pc (fused_push), grid, wiring, perception_coeff (ca_fused.glsl).
#ifndef DLCA_FUSED_PERCEPTION_GLSL
#define DLCA_FUSED_PERCEPTION_GLSL

const uint FUSED_PERCEPTION_MAX = 4; // perception layers; src/gpu/ca_gpu_plan.c falls back beyond it

// Ids 2-5 as in ca_gpu_fused_constants.
layout(constant_id = 2) const uint PERCEPTION_DEPTH = 1;
layout(constant_id = 3) const uint PERCEPTION_WIDTH_1 = 1;
layout(constant_id = 4) const uint PERCEPTION_WIDTH_2 = 1;
layout(constant_id = 5) const uint PERCEPTION_WIDTH_3 = 1;

// Input a (s = 0) or b (s = 1) of gate g of perception layer l >= 1, from the wiring buffer's
// first words (src/gpu/ca_gpu.c, upload_wiring).
#define WIRE(l, s, g) wiring[(l) * 16u + (s) * 8u + (g)]
// The neighbour j = 3 (dy + 1) + (dx + 1) that moore gate g of kernel k reads (b is the centre,
// 4): one order a kernel after those words (CA_GPU_PERCEPTION_WIRES), where a model whose
// kernels share one has it once a kernel, so the kernels read the same way either way.
#define MOORE_WIRE(k, g) wiring[64u + (k) * 8u + (g)]
// The moore rows of the backward hold a neighbour's gradients by direction slot: slot s is
// neighbour s for s < 4, s + 1 after the centre, so that the sums over kernels of gates that
// read the same neighbour share a row whichever gate of its kernel reads it.
#define MOORE_SLOT(j) ((j) - ((j) > 4u ? 1u : 0u))
#define SLOT_NEIGHBOUR(s) ((s) + ((s) >= 4u ? 1u : 0u))
#define WIDTH_0 8u
#define WIDTH_1 PERCEPTION_WIDTH_1
#define WIDTH_2 PERCEPTION_WIDTH_2
#define WIDTH_3 PERCEPTION_WIDTH_3
#define PREFIX_0 0u // gates of one kernel before layer l
#define PREFIX_1 8u
#define PREFIX_2 (8u + PERCEPTION_WIDTH_1)
#define PREFIX_3 (8u + PERCEPTION_WIDTH_1 + PERCEPTION_WIDTH_2)
#define HAS_GATE(l, g) (l < PERCEPTION_DEPTH && g < WIDTH_##l)
// Gates of one kernel's circuit.
#define PERCEPTION_GATES_PER_KERNEL                                                                      \
    (PERCEPTION_DEPTH == 1 ? PREFIX_1 : PERCEPTION_DEPTH == 2 ? PREFIX_2 : PERCEPTION_DEPTH == 3 ? PREFIX_3 \
                                                                                      : PREFIX_3 + WIDTH_3)

// Model gate of kernel k's gate g in layer l (the perception gates come first), and the step
// block row of unit `unit`'s (as ca_config_layout_rows).
#define GATE_INDEX(l, k, g) (pc.kernels * PREFIX_##l + (k) * WIDTH_##l + g)
#define UNIT_ROW(l, unit, g) (pc.kernels * pc.channels * PREFIX_##l + (unit) * WIDTH_##l + g)

// v[i] by selects (i the same in the whole dispatch, or a literal), without indexing at run time.
#define PICK8(v, i) ((i) == 0u ? v[0] : (i) == 1u ? v[1] : (i) == 2u ? v[2] : (i) == 3u ? v[3] : \
                     (i) == 4u ? v[4] : (i) == 5u ? v[5] : (i) == 6u ? v[6] : v[7])
#define PICK9(v, i) ((i) == 8u ? v[8] : PICK8(v, i))
// v[i] += x, i as for PICK8.
#define ADD8(v, i, x)                                      \
    {                                                      \
        float x_ = (x);                                    \
        if ((i) == 0u) v[0] += x_;                         \
        if ((i) == 1u) v[1] += x_;                         \
        if ((i) == 2u) v[2] += x_;                         \
        if ((i) == 3u) v[3] += x_;                         \
        if ((i) == 4u) v[4] += x_;                         \
        if ((i) == 5u) v[5] += x_;                         \
        if ((i) == 6u) v[6] += x_;                         \
        if ((i) == 7u) v[7] += x_;                         \
    }
#define EACH_GATE(M, l) M(l, 0) M(l, 1) M(l, 2) M(l, 3) M(l, 4) M(l, 5) M(l, 6) M(l, 7)
#define EACH_LAYER(M) M(0) M(1) M(2) M(3)

// The unit's values: pv[l][g] of perception layer l, gate g; nbr[j] the channel's 3x3
// neighbourhood (0 outside a zero boundary); its gradients dv and S sums sacc (backward).
float pv[FUSED_PERCEPTION_MAX][8];
float nbr[9];
float dv[FUSED_PERCEPTION_MAX][8];
vec4 sacc[FUSED_PERCEPTION_MAX][8];

// Channel ch's values at the cells `at` (neighbourhood_cells: 0 where -1), loaded
// unconditionally so that they go out together; from grid_t at GRID_BASE where the kernel binds
// every grid (the persistent backward sets grid_base per step).
#ifdef FUSED_PERSISTENT
uint grid_base = 0u;
#define GRID_BASE grid_base
#else
#define GRID_BASE 0u
#endif
#define LOAD_NEIGHBOUR(j) v[j] = grid[GRID_BASE + ch * pc.pitch + uint(max(at[j], 0))];
#define ZERO_OUTSIDE(j) v[j] = at[j] < 0 ? 0.0 : v[j];
float[9] neighbours_at(uint ch, int at[9])
{
    float v[9];
    LOAD_NEIGHBOUR(0) LOAD_NEIGHBOUR(1) LOAD_NEIGHBOUR(2) LOAD_NEIGHBOUR(3) LOAD_NEIGHBOUR(4)
    LOAD_NEIGHBOUR(5) LOAD_NEIGHBOUR(6) LOAD_NEIGHBOUR(7) LOAD_NEIGHBOUR(8)
    ZERO_OUTSIDE(0) ZERO_OUTSIDE(1) ZERO_OUTSIDE(2) ZERO_OUTSIDE(3) ZERO_OUTSIDE(4)
    ZERO_OUTSIDE(5) ZERO_OUTSIDE(6) ZERO_OUTSIDE(7) ZERO_OUTSIDE(8)
    return v;
}

// Channel ch's 3x3 neighbourhood of `cell` in grid_t.
float[9] neighbours_of(uint ch, uint cell)
{
    return neighbours_at(ch, neighbourhood_cells(cell, pc.height, pc.width, pc.periodic));
}

void load_neighbours(uint ch, uint cell) { nbr = neighbours_of(ch, cell); }

// Forward of kernel k's circuit on nbr into pv (ca_cpu_layer.c: moore_layer_forward, then
// gate_layer_forward per perception layer).
#define MOORE_FORWARD(l, g) \
    pv[0][g] = gate_eval(perception_coeff(GATE_INDEX(0, k, g)), PICK9(nbr, MOORE_WIRE(k, g)), nbr[4]);
#define GATE_FORWARD(l, g)                                                                               \
    if (HAS_GATE(l, g))                                                                                  \
        pv[l][g] = gate_eval(perception_coeff(GATE_INDEX(l, k, g)), PICK8(pv[l - 1], WIRE(l, 0, g)),     \
                             PICK8(pv[l - 1], WIRE(l, 1, g)));

void perception_forward(uint k)
{
    EACH_GATE(MOORE_FORWARD, 0)
    EACH_GATE(GATE_FORWARD, 1)
    EACH_GATE(GATE_FORWARD, 2)
    EACH_GATE(GATE_FORWARD, 3)
}

// Output j (< the last layer's width) of the circuit after perception_forward.
#define OUTPUT_OF(l) if (l + 1 == PERCEPTION_DEPTH) y = PICK8(pv[l], j);
float perception_output(uint j)
{
    float y = 0.0;
    EACH_LAYER(OUTPUT_OF)
    return y;
}

// Stores the circuit's outputs in shared rows `at`, `at` + row, ... (smem, declared by the
// includer before its use).
#define STORE_OUTPUT(at, j) if (j < perception_bits()) smem[(at) + j * TILE_CELLS] = perception_output(j);
#define STORE_OUTPUTS(at) EACH_GATE(STORE_OUTPUT, at)

// Bits a unit outputs: the last perception layer's width.
uint perception_bits()
{
    return PERCEPTION_DEPTH == 1 ? WIDTH_0 : PERCEPTION_DEPTH == 2 ? WIDTH_1 : PERCEPTION_DEPTH == 3 ? WIDTH_2 : WIDTH_3;
}

// Backward of layer l >= 1 of kernel k's circuit from dv[l] into dv[l - 1], S into sacc.
#define CLEAR_GRADIENT(l, g) dv[l][g] = 0.0;
#define GATE_BACKWARD(l, g)                                                                              \
    if (HAS_GATE(l, g)) {                                                                                \
        float a = PICK8(pv[l - 1], WIRE(l, 0, g)), b = PICK8(pv[l - 1], WIRE(l, 1, g)), d = dv[l][g];    \
        vec4 kc = perception_coeff(GATE_INDEX(l, k, g));                                                 \
        sacc[l][g] += d * vec4(1.0, a, b, a * b);                                                        \
        ADD8(dv[l - 1], WIRE(l, 0, g), d * (kc.y + kc.w * b))                                            \
        ADD8(dv[l - 1], WIRE(l, 1, g), d * (kc.z + kc.w * a))                                            \
    }
#define LAYER_BACKWARD(l)                                                                                \
    if (l < PERCEPTION_DEPTH) {                                                                          \
        EACH_GATE(CLEAR_GRADIENT, l - 1)                                                                 \
        EACH_GATE(GATE_BACKWARD, l)                                                                      \
    }

void perception_layers_backward(uint k)
{
    LAYER_BACKWARD(3)
    LAYER_BACKWARD(2)
    LAYER_BACKWARD(1)
}

#define CLEAR_SUM(l, g) sacc[l][g] = vec4(0.0);
#define CLEAR_SUMS(l) EACH_GATE(CLEAR_SUM, l)
void perception_clear_sums() { EACH_LAYER(CLEAR_SUMS) }

#endif
