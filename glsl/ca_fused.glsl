// ca_fused.glsl: what the fused CA-step kernels share: the layer table, the workgroup's shared
// memory, the update layers' forward gate, and (fused_perception.glsl) the perception circuits.
//
// A workgroup owns `tile` consecutive cells. Shared memory holds rows of `tile` floats (row r,
// tile cell c at r * tile + c), so the layers of a CA step never leave the workgroup. The
// perception circuits are small: one invocation runs a unit's circuit in registers, forward and
// backward, and only its outputs go to shared memory.
#ifndef DLCA_CA_FUSED_GLSL
#define DLCA_CA_FUSED_GLSL

// One row of the layer table (src/ca_gpu_step.c writes it, in forward order): the moore
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

// What every fused kernel binds first; the rest of its bindings follow from 4. Read-only
// tables are restrict so the compiler may use the read-only data path.
layout(std430, binding = 0) restrict readonly buffer grid_buf { float grid[]; };   // grid_t [C][pitch]
layout(std430, binding = 1) restrict readonly buffer coeffs_buf { vec4 coeffs[]; }; // [gates]
layout(std430, binding = 2) restrict readonly buffer wiring_buf { uint wiring[]; };
layout(std430, binding = 3) restrict readonly buffer layers_buf { fused_layer layers[]; }; // the layer table
layout(push_constant) uniform push_block { fused_push pc; };

#include "fused_perception.glsl"

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

#define NEIGHBOUR_GRADIENT(l, i)                                                                         \
    {                                                                                                    \
        uint j = WIRE(0, 0, i);                                                                          \
        int from = shifted_cell(cell, pc.height, pc.width, pc.periodic, 1 - int(j / 3), 1 - int(j % 3)); \
        if (from >= 0) sum += moore_in[(ch * 8 + i) * pc.pitch + uint(from)];                           \
    }

float neighbour_gradient(uint ch, uint cell)
{
    float sum = 0.0;
    EACH_GATE(NEIGHBOUR_GRADIENT, 0)
    return sum;
}
#endif

#endif
