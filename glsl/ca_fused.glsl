// ca_fused.glsl: what the fused CA-step kernels share: the layer table, the workgroup's shared
// memory, and one perception unit (kernel k on channel ch of one cell) computed in registers.
//
// A workgroup owns `tile` consecutive cells. Shared memory holds rows of `tile` floats (row r,
// tile cell c at r * tile + c), so the layers of a CA step never leave the workgroup. The
// perception circuits are small (width <= 8, depth <= FUSED_PERCEPTION_MAX): one invocation
// runs a unit's circuit in private arrays, forward and backward, and only its outputs go to
// shared memory.
#ifndef DLCA_CA_FUSED_GLSL
#define DLCA_CA_FUSED_GLSL

const uint FUSED_PERCEPTION_MAX = 4; // perception layers; src/ca_gpu.c falls back beyond it

// One row of the layer table (src/ca_gpu_step.c writes it, in forward order): the moore
// layer (kind 0), the later perception layers, then the update layers (kind 1). The kernels
// know a row's kind by its place and read only what they need.
struct fused_layer {
    uint kind, n_in, n_out, units;
    uint unit_channels, in_split, in_base, in_stride;
    uint out_base, out_stride, coeff_base, coeff_stride;
    uint wiring_a, wiring_b, reverse_start, reverse_entry;
};

// What every fused kernel binds first; the rest of its bindings follow from 4. Read-only
// tables are restrict so the compiler may use the read-only data path.
layout(std430, binding = 0) restrict readonly buffer grid_buf { float grid[]; };   // grid_t [C][pitch]
layout(std430, binding = 1) restrict readonly buffer coeffs_buf { vec4 coeffs[]; }; // [gates]
layout(std430, binding = 2) restrict readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 3) restrict readonly buffer layers_buf { fused_layer layers[]; }; // the layer table
layout(push_constant) uniform push_block { fused_push pc; };

// The layer table in shared memory (load_table), so a layer's fields are one shared load away;
// its FUSED_TABLE_MAX * 16 floats are within VK_SHARED_RESERVED_BYTES.
const uint FUSED_TABLE_MAX = FUSED_PERCEPTION_MAX + 32; // + CA_MAX_LAYERS update layers
shared fused_layer table[FUSED_TABLE_MAX];

// The device's shared memory in floats less what small arrays like the table may take
// (vk_shared_floats); the host sizes the tiles so that what a kernel carves out of smem fits.
layout(constant_id = 1) const uint SHARED_FLOATS = 2048;
shared float smem[SHARED_FLOATS];

void load_table()
{
    for (uint l = gl_LocalInvocationID.x; l < pc.layer_count; l += gl_WorkGroupSize.x) table[l] = layers[l];
    barrier();
}

// Activations of the unit being run: pv[l][g] for perception layer l, gate g; nbr[j] the
// channel's 3x3 neighbourhood (j = 3 * (dy + 1) + (dx + 1), 0 outside a zero boundary).
// Indexed by the wiring, so private memory rather than registers: select chains that keep
// them in registers measured slower on an H100 (tools/BENCH_NOTES.md).
float pv[FUSED_PERCEPTION_MAX][8];
float nbr[9];

void load_neighbours(uint ch, uint cell)
{
    for (uint j = 0; j < 9; j++) {
        int at = shifted_cell(cell, pc.height, pc.width, pc.periodic, int(j / 3) - 1, int(j % 3) - 1);
        float value = grid[ch * pc.pitch + uint(max(at, 0))]; // loaded unconditionally: in range
        nbr[j] = at < 0 ? 0.0 : value;
    }
}

// Forward of kernel k's perception circuit on nbr into pv (ca_cpu_layer.c: moore_layer_forward,
// then gate_layer_forward per perception layer). Table row 0 is the moore layer: gate g reads
// neighbour wiring_a[g] and the centre.
void perception_forward(uint k)
{
    fused_layer M = table[0];
    for (uint g = 0; g < 8; g++)
        pv[0][g] = gate_eval(coeffs[M.coeff_base + k * M.coeff_stride + g], nbr[wiring[M.wiring_a + g]], nbr[4]);
    for (uint l = 1; l < pc.perception_layers; l++) {
        fused_layer L = table[l];
        for (uint g = 0; g < L.n_out; g++)
            pv[l][g] = gate_eval(coeffs[L.coeff_base + k * L.coeff_stride + g], pv[l - 1][wiring[L.wiring_a + g]],
                                 pv[l - 1][wiring[L.wiring_b + g]]);
    }
}

// Output j of the last perception layer after perception_forward.
float perception_output(uint j) { return pv[pc.perception_layers - 1][j]; }

// The update layers' gate for output g of table row L, on tile cell c: inputs from shared rows
// starting at `in_at`.
float update_gate(fused_layer L, uint g, uint c, uint in_at)
{
    float a = smem[in_at + wiring[L.wiring_a + g] * pc.tile + c], b = smem[in_at + wiring[L.wiring_b + g] * pc.tile + c];
    return gate_eval(coeffs[L.coeff_base + g], a, b);
}

// The backward kernels' next two bindings, and the gradient that reaches `cell` of channel ch
// through its neighbours' moore gates: moore [C*8][pitch] holds, per cell p, channel and moore
// gate i, the gradient into input a summed over kernels; it belongs to the cell gate i reads
// (p shifted by the gate's direction), so cell q gathers row (ch, i) at q shifted back.
#ifdef FUSED_GRADIENT_BINDINGS
layout(std430, binding = 4) buffer dgrid_buf { float dgrid[]; };             // [C][pitch]
layout(std430, binding = 5) readonly buffer moore_in_buf { float moore_in[]; }; // [C*8][pitch]

float neighbour_gradient(uint ch, uint cell)
{
    fused_layer M = layers[0]; // global: fused_grid_gather.comp has no table
    float sum = 0.0;
    for (uint i = 0; i < 8; i++) {
        uint j = wiring[M.wiring_a + i];
        int from = shifted_cell(cell, pc.height, pc.width, pc.periodic, 1 - int(j / 3), 1 - int(j % 3));
        if (from >= 0) sum += moore_in[(ch * 8 + i) * pc.pitch + uint(from)];
    }
    return sum;
}
#endif

#endif
