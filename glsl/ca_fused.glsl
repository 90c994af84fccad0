// ca_fused.glsl: what the fused CA-step kernels share: the layer table and the way a layer
// finds its inputs (the same addressing as layer_push in common.glsl).
#ifndef DLCA_CA_FUSED_GLSL
#define DLCA_CA_FUSED_GLSL

const uint LAYER_FIELDS = 16;
const uint LAYER_MOORE = 0, LAYER_GATES = 1;

// One row of the layer table (src/ca_gpu_fused.c writes it, in forward order).
struct fused_layer {
    uint kind, n_in, n_out, units;
    uint unit_channels, in_split, in_base, in_stride;
    uint out_base, out_stride, coeff_base, coeff_stride;
    uint wiring_a, wiring_b, reverse_start, reverse_entry;
};

#endif
