// fused_update_backward.glsl: the update layers' backward in fused_step_backward.comp, unrolled
// as fused_update_layers.glsl unrolls their forward, with each layer's reverse table and fanout
// as specialisation constants too (src/gpu/ca_gpu_fused.c ca_gpu_fused_constants).
//
// A layer's loads (its gate's parameters and S partial, its input's first reverse entries) are
// issued in the layer above it, once that layer's own parameters are in: the driver counts every
// global load on one scoreboard, so a wait for one load waits for all in flight, and a prefetch
// issued before a wait is waited for at once (docs/bench-notes.md, round 10).
// Needs, declared before: fused_update_layers.glsl, gate_backward, gather_inputs, partial,
// reverse_table; the includer declares lid, size, width, slot, db_at.
#ifndef DLCA_FUSED_UPDATE_BACKWARD_GLSL
#define DLCA_FUSED_UPDATE_BACKWARD_GLSL

// Per update layer u: where its padded reverse table starts (words) and its entries an input.
#define UPDATE_REVERSE_CONSTANTS(u, i0, i1)                        \
    layout(constant_id = i0) const uint update_reverse_##u = 0;    \
    layout(constant_id = i1) const uint update_fanout_##u = 0;
UPDATE_REVERSE_CONSTANTS(0, 234, 235)
UPDATE_REVERSE_CONSTANTS(1, 236, 237)
UPDATE_REVERSE_CONSTANTS(2, 238, 239)
UPDATE_REVERSE_CONSTANTS(3, 240, 241)
UPDATE_REVERSE_CONSTANTS(4, 242, 243)
UPDATE_REVERSE_CONSTANTS(5, 244, 245)
UPDATE_REVERSE_CONSTANTS(6, 246, 247)
UPDATE_REVERSE_CONSTANTS(7, 248, 249)
UPDATE_REVERSE_CONSTANTS(8, 250, 251)
UPDATE_REVERSE_CONSTANTS(9, 252, 253)
UPDATE_REVERSE_CONSTANTS(10, 254, 255)
UPDATE_REVERSE_CONSTANTS(11, 256, 257)
UPDATE_REVERSE_CONSTANTS(12, 258, 259)
UPDATE_REVERSE_CONSTANTS(13, 260, 261)
UPDATE_REVERSE_CONSTANTS(14, 262, 263)
UPDATE_REVERSE_CONSTANTS(15, 264, 265)
UPDATE_REVERSE_CONSTANTS(16, 266, 267)
UPDATE_REVERSE_CONSTANTS(17, 268, 269)
UPDATE_REVERSE_CONSTANTS(18, 270, 271)
UPDATE_REVERSE_CONSTANTS(19, 272, 273)
UPDATE_REVERSE_CONSTANTS(20, 274, 275)
UPDATE_REVERSE_CONSTANTS(21, 276, 277)
UPDATE_REVERSE_CONSTANTS(22, 278, 279)
UPDATE_REVERSE_CONSTANTS(23, 280, 281)
UPDATE_REVERSE_CONSTANTS(24, 282, 283)
UPDATE_REVERSE_CONSTANTS(25, 284, 285)
UPDATE_REVERSE_CONSTANTS(26, 286, 287)
UPDATE_REVERSE_CONSTANTS(27, 288, 289)
UPDATE_REVERSE_CONSTANTS(28, 290, 291)
UPDATE_REVERSE_CONSTANTS(29, 292, 293)
UPDATE_REVERSE_CONSTANTS(30, 294, 295)
UPDATE_REVERSE_CONSTANTS(31, 296, 297)

// Shared row where update layer u's activations are (the recompute writes them there).
#define UPDATE_ROWS_AT(u) ((pc.update_inputs + update_out_base_##u - update_out_base_0) * TILE_CELLS)

// Whether layer v's prefetch takes an input's second 4 reverse entries: on tiles of two (see
// gather_inputs), where it has more than 4.
#define UPDATE_OWN_EIGHT(v) (TILE_CELLS == 2u && update_fanout_##v > 4u)

// Layer v's loads for this invocation (n_in: the layer's inputs), tied by `after` to a value
// already waited for: its gate's parameters and S partial, its input's first 8 reverse entries
// (the gather then loads nothing for an input of up to 8 readers: its wait would cover the
// prefetch issued just before it). On tiles of two, invocations past the layer's gates or
// inputs load the last one's, unused: loads under a condition need a merge with the default
// afterwards, which the compiler puts right after the next barrier, waiting there for every load
// in flight. One-cell tiles keep the condition, which measured faster there
// (docs/bench-notes.md, round 11).
#define UPDATE_PREFETCH_GATE(v)                                                                          \
    if (TILE_CELLS == 2u || lid < update_n_out_##v) {                                                    \
        uint g = min(lid, update_n_out_##v - 1u);                                                        \
        p##v = UPDATE_PARAMS_AFTER(v, g, after);                                                         \
        acc##v = sums_so_far(partial[slot + update_out_base_##v + g + after]);                                        \
    }
#define UPDATE_PREFETCH_ENTRIES(v, n_in)                                                                 \
    if (update_fanout_##v > 0u && (TILE_CELLS == 2u || lid < (n_in))) {                                  \
        uint at = (update_reverse_##v + min(lid, (n_in) - 1u) * update_fanout_##v) / 4u + after;         \
        entries##v = reverse_table[at];                                                                  \
        if (UPDATE_OWN_EIGHT(v)) more##v = reverse_table[at + 1u];                                       \
    }
#define UPDATE_PREFETCH(v, n_in) UPDATE_PREFETCH_GATE(v) UPDATE_PREFETCH_ENTRIES(v, n_in)

// Layer u backward (its inputs n_in at in_at's rows; dy in gradient buffer 0 and dx into it): per
// gate S and the gradients into its inputs a (the layer's own rows, no longer needed) and b
// (buffer 1), then per input their sum (gather_inputs). PREFETCH: the next layer down's loads.
#define UPDATE_LAYER_BACKWARD(u, n_in, in_at, PREFETCH)                                                  \
    if (u < UPDATE_DEPTH) {                                                                              \
        if (u + 1u == UPDATE_DEPTH) {                                                                    \
            uint after = 0u;                                                                             \
            UPDATE_PREFETCH(u, n_in)                                                                     \
        }                                                                                                \
        uint da_at = UPDATE_ROWS_AT(u);                                                                  \
        if (lid < update_n_out_##u)                                                                      \
            gate_backward(p##u, acc##u, lid, slot + update_out_base_##u + lid, width, in_at, da_at, db_at); \
        if (update_n_out_##u > gl_WorkGroupSize.x) /* before the prefetch: its loads' wait covers all */ \
            for (uint g = lid + size; g < update_n_out_##u; g += size) {                                 \
                uint row = slot + update_out_base_##u + g;                                               \
                gate_backward(UPDATE_PARAMS(u, g), sums_so_far(partial[row]), g, row, width, in_at, da_at, db_at); \
            }                                                                                            \
        {                                                                                                \
            uint after = p##u.a >> 31; /* 0, once p##u.a is in */                                        \
            PREFETCH                                                                                     \
        }                                                                                                \
        barrier();                                                                                       \
        PROBE_MARK()                                                                                     \
        gather_inputs(n_in, update_fanout_##u, update_reverse_##u, entries##u, more##u,                  \
                      UPDATE_OWN_EIGHT(u) ? 8u : 4u, width, da_at, db_at);     \
        barrier();                                                                                       \
        PROBE_MARK()                                                                                     \
    }

// Layers 31 to 8, only in the kernels compiled for deep models (FUSED_UPDATE_SLOTS, CMakeLists.txt).
#if FUSED_UPDATE_SLOTS > 8
#define UPDATE_LAYERS_BACKWARD_PAST_8() \
    UPDATE_LAYER_BACKWARD(31, update_n_out_30, UPDATE_ROWS_AT(30), UPDATE_PREFETCH(30, update_n_out_29)) \
    UPDATE_LAYER_BACKWARD(30, update_n_out_29, UPDATE_ROWS_AT(29), UPDATE_PREFETCH(29, update_n_out_28)) \
    UPDATE_LAYER_BACKWARD(29, update_n_out_28, UPDATE_ROWS_AT(28), UPDATE_PREFETCH(28, update_n_out_27)) \
    UPDATE_LAYER_BACKWARD(28, update_n_out_27, UPDATE_ROWS_AT(27), UPDATE_PREFETCH(27, update_n_out_26)) \
    UPDATE_LAYER_BACKWARD(27, update_n_out_26, UPDATE_ROWS_AT(26), UPDATE_PREFETCH(26, update_n_out_25)) \
    UPDATE_LAYER_BACKWARD(26, update_n_out_25, UPDATE_ROWS_AT(25), UPDATE_PREFETCH(25, update_n_out_24)) \
    UPDATE_LAYER_BACKWARD(25, update_n_out_24, UPDATE_ROWS_AT(24), UPDATE_PREFETCH(24, update_n_out_23)) \
    UPDATE_LAYER_BACKWARD(24, update_n_out_23, UPDATE_ROWS_AT(23), UPDATE_PREFETCH(23, update_n_out_22)) \
    UPDATE_LAYER_BACKWARD(23, update_n_out_22, UPDATE_ROWS_AT(22), UPDATE_PREFETCH(22, update_n_out_21)) \
    UPDATE_LAYER_BACKWARD(22, update_n_out_21, UPDATE_ROWS_AT(21), UPDATE_PREFETCH(21, update_n_out_20)) \
    UPDATE_LAYER_BACKWARD(21, update_n_out_20, UPDATE_ROWS_AT(20), UPDATE_PREFETCH(20, update_n_out_19)) \
    UPDATE_LAYER_BACKWARD(20, update_n_out_19, UPDATE_ROWS_AT(19), UPDATE_PREFETCH(19, update_n_out_18)) \
    UPDATE_LAYER_BACKWARD(19, update_n_out_18, UPDATE_ROWS_AT(18), UPDATE_PREFETCH(18, update_n_out_17)) \
    UPDATE_LAYER_BACKWARD(18, update_n_out_17, UPDATE_ROWS_AT(17), UPDATE_PREFETCH(17, update_n_out_16)) \
    UPDATE_LAYER_BACKWARD(17, update_n_out_16, UPDATE_ROWS_AT(16), UPDATE_PREFETCH(16, update_n_out_15)) \
    UPDATE_LAYER_BACKWARD(16, update_n_out_15, UPDATE_ROWS_AT(15), UPDATE_PREFETCH(15, update_n_out_14)) \
    UPDATE_LAYER_BACKWARD(15, update_n_out_14, UPDATE_ROWS_AT(14), UPDATE_PREFETCH(14, update_n_out_13)) \
    UPDATE_LAYER_BACKWARD(14, update_n_out_13, UPDATE_ROWS_AT(13), UPDATE_PREFETCH(13, update_n_out_12)) \
    UPDATE_LAYER_BACKWARD(13, update_n_out_12, UPDATE_ROWS_AT(12), UPDATE_PREFETCH(12, update_n_out_11)) \
    UPDATE_LAYER_BACKWARD(12, update_n_out_11, UPDATE_ROWS_AT(11), UPDATE_PREFETCH(11, update_n_out_10)) \
    UPDATE_LAYER_BACKWARD(11, update_n_out_10, UPDATE_ROWS_AT(10), UPDATE_PREFETCH(10, update_n_out_9)) \
    UPDATE_LAYER_BACKWARD(10, update_n_out_9, UPDATE_ROWS_AT(9), UPDATE_PREFETCH(9, update_n_out_8)) \
    UPDATE_LAYER_BACKWARD(9, update_n_out_8, UPDATE_ROWS_AT(8), UPDATE_PREFETCH(8, update_n_out_7)) \
    UPDATE_LAYER_BACKWARD(8, update_n_out_7, UPDATE_ROWS_AT(7), UPDATE_PREFETCH(7, update_n_out_6))
#else
#define UPDATE_LAYERS_BACKWARD_PAST_8()
#endif

// The registers of every layer: its gate's parameters and S partial, its input's reverse entries.
#define UPDATE_BACKWARD_REGISTERS() \
        const gate_params none = gate_params(0u, 0u, vec4(0.0));                                         \
        gate_params p0 = none, p1 = none, p2 = none, p3 = none, p4 = none, p5 = none, p6 = none, p7 = none; \
        gate_params p8 = none, p9 = none, p10 = none, p11 = none, p12 = none, p13 = none, p14 = none, p15 = none; \
        gate_params p16 = none, p17 = none, p18 = none, p19 = none, p20 = none, p21 = none, p22 = none, p23 = none; \
        gate_params p24 = none, p25 = none, p26 = none, p27 = none, p28 = none, p29 = none, p30 = none, p31 = none; \
        vec4 acc0 = vec4(0.0), acc1 = vec4(0.0), acc2 = vec4(0.0), acc3 = vec4(0.0), acc4 = vec4(0.0), acc5 = vec4(0.0), acc6 = vec4(0.0), acc7 = vec4(0.0); \
        vec4 acc8 = vec4(0.0), acc9 = vec4(0.0), acc10 = vec4(0.0), acc11 = vec4(0.0), acc12 = vec4(0.0), acc13 = vec4(0.0), acc14 = vec4(0.0), acc15 = vec4(0.0); \
        vec4 acc16 = vec4(0.0), acc17 = vec4(0.0), acc18 = vec4(0.0), acc19 = vec4(0.0), acc20 = vec4(0.0), acc21 = vec4(0.0), acc22 = vec4(0.0), acc23 = vec4(0.0); \
        vec4 acc24 = vec4(0.0), acc25 = vec4(0.0), acc26 = vec4(0.0), acc27 = vec4(0.0), acc28 = vec4(0.0), acc29 = vec4(0.0), acc30 = vec4(0.0), acc31 = vec4(0.0); \
        uvec4 entries0 = uvec4(FUSED_NO_ENTRY), entries1 = uvec4(FUSED_NO_ENTRY), entries2 = uvec4(FUSED_NO_ENTRY), entries3 = uvec4(FUSED_NO_ENTRY), entries4 = uvec4(FUSED_NO_ENTRY), entries5 = uvec4(FUSED_NO_ENTRY), entries6 = uvec4(FUSED_NO_ENTRY), entries7 = uvec4(FUSED_NO_ENTRY); \
        uvec4 entries8 = uvec4(FUSED_NO_ENTRY), entries9 = uvec4(FUSED_NO_ENTRY), entries10 = uvec4(FUSED_NO_ENTRY), entries11 = uvec4(FUSED_NO_ENTRY), entries12 = uvec4(FUSED_NO_ENTRY), entries13 = uvec4(FUSED_NO_ENTRY), entries14 = uvec4(FUSED_NO_ENTRY), entries15 = uvec4(FUSED_NO_ENTRY); \
        uvec4 entries16 = uvec4(FUSED_NO_ENTRY), entries17 = uvec4(FUSED_NO_ENTRY), entries18 = uvec4(FUSED_NO_ENTRY), entries19 = uvec4(FUSED_NO_ENTRY), entries20 = uvec4(FUSED_NO_ENTRY), entries21 = uvec4(FUSED_NO_ENTRY), entries22 = uvec4(FUSED_NO_ENTRY), entries23 = uvec4(FUSED_NO_ENTRY); \
        uvec4 entries24 = uvec4(FUSED_NO_ENTRY), entries25 = uvec4(FUSED_NO_ENTRY), entries26 = uvec4(FUSED_NO_ENTRY), entries27 = uvec4(FUSED_NO_ENTRY), entries28 = uvec4(FUSED_NO_ENTRY), entries29 = uvec4(FUSED_NO_ENTRY), entries30 = uvec4(FUSED_NO_ENTRY), entries31 = uvec4(FUSED_NO_ENTRY); \
        uvec4 more0 = uvec4(FUSED_NO_ENTRY), more1 = uvec4(FUSED_NO_ENTRY), more2 = uvec4(FUSED_NO_ENTRY), more3 = uvec4(FUSED_NO_ENTRY), more4 = uvec4(FUSED_NO_ENTRY), more5 = uvec4(FUSED_NO_ENTRY), more6 = uvec4(FUSED_NO_ENTRY), more7 = uvec4(FUSED_NO_ENTRY); \
        uvec4 more8 = uvec4(FUSED_NO_ENTRY), more9 = uvec4(FUSED_NO_ENTRY), more10 = uvec4(FUSED_NO_ENTRY), more11 = uvec4(FUSED_NO_ENTRY), more12 = uvec4(FUSED_NO_ENTRY), more13 = uvec4(FUSED_NO_ENTRY), more14 = uvec4(FUSED_NO_ENTRY), more15 = uvec4(FUSED_NO_ENTRY); \
        uvec4 more16 = uvec4(FUSED_NO_ENTRY), more17 = uvec4(FUSED_NO_ENTRY), more18 = uvec4(FUSED_NO_ENTRY), more19 = uvec4(FUSED_NO_ENTRY), more20 = uvec4(FUSED_NO_ENTRY), more21 = uvec4(FUSED_NO_ENTRY), more22 = uvec4(FUSED_NO_ENTRY), more23 = uvec4(FUSED_NO_ENTRY); \
        uvec4 more24 = uvec4(FUSED_NO_ENTRY), more25 = uvec4(FUSED_NO_ENTRY), more26 = uvec4(FUSED_NO_ENTRY), more27 = uvec4(FUSED_NO_ENTRY), more28 = uvec4(FUSED_NO_ENTRY), more29 = uvec4(FUSED_NO_ENTRY), more30 = uvec4(FUSED_NO_ENTRY), more31 = uvec4(FUSED_NO_ENTRY);

// Every update layer backward, last to first.
#define UPDATE_LAYERS_BACKWARD()                                                                         \
    {                                                                                                    \
        UPDATE_BACKWARD_REGISTERS()                                                                      \
    UPDATE_LAYERS_BACKWARD_PAST_8() \
    UPDATE_LAYER_BACKWARD(7, update_n_out_6, UPDATE_ROWS_AT(6), UPDATE_PREFETCH(6, update_n_out_5)) \
    UPDATE_LAYER_BACKWARD(6, update_n_out_5, UPDATE_ROWS_AT(5), UPDATE_PREFETCH(5, update_n_out_4)) \
    UPDATE_LAYER_BACKWARD(5, update_n_out_4, UPDATE_ROWS_AT(4), UPDATE_PREFETCH(4, update_n_out_3)) \
    UPDATE_LAYER_BACKWARD(4, update_n_out_3, UPDATE_ROWS_AT(3), UPDATE_PREFETCH(3, update_n_out_2)) \
    UPDATE_LAYER_BACKWARD(3, update_n_out_2, UPDATE_ROWS_AT(2), UPDATE_PREFETCH(2, update_n_out_1)) \
    UPDATE_LAYER_BACKWARD(2, update_n_out_1, UPDATE_ROWS_AT(1), UPDATE_PREFETCH(1, update_n_out_0)) \
    UPDATE_LAYER_BACKWARD(1, update_n_out_0, UPDATE_ROWS_AT(0), UPDATE_PREFETCH(0, pc.update_inputs)) \
    UPDATE_LAYER_BACKWARD(0, pc.update_inputs, 0u, UPDATE_NO_LOADS) \
    }


#ifdef FUSED_MERGED_BACKWARD
// One phase a layer instead of two, for tiles of two whose update layers all fit the workgroup
// (src/gpu/ca_gpu_fused.c fused_ids): invocation i gathers the gradient of input i of layer u,
// which is the dy of gate i of layer u - 1, and runs that gate's backward at once, with dy in
// registers: no gradient round trip through shared memory and one barrier a layer instead of two
// (docs/bench-notes.md, round 12).

// Where layer u's gradients into its inputs b go: gradient buffers 1 and 0 in turn, so that a
// phase reads one layer's while it writes the next one's (layer 0's in buffer 1, since its
// gather writes buffer 0).
#define MERGED_DB_AT(u) grad_at((u) % 2u == 0u ? 1u : 0u)

// The last layer's gate pass on its own (dy: gradient buffer 0, the split's; a gate reads its
// own dy row before it writes its own db row, which may be the same). PREFETCH: the reverse
// entries of its inputs and the parameters of the layer below; next_width: the inputs the next
// phase gathers (LAYER_SYNC).
#define UPDATE_LAST_GATE_PASS(u, next_width, in_at, PREFETCH)                                            \
    if (u + 1u == UPDATE_DEPTH) {                                                                        \
        {                                                                                                \
            uint after = 0u;                                                                             \
            UPDATE_PREFETCH_GATE(u)                                                                      \
        }                                                                                                \
        if (lid < update_n_out_##u)                                                                      \
            gate_backward(p##u, acc##u, lid, slot + update_out_base_##u + lid, width, in_at, UPDATE_ROWS_AT(u), \
                          MERGED_DB_AT(u));                                                              \
        {                                                                                                \
            uint after = p##u.a >> 31;                                                                   \
            PREFETCH                                                                                     \
        }                                                                                                \
        LAYER_SYNC(update_n_out_##u, next_width)                                                         \
        PROBE_MARK()                                                                                     \
    }

// Layer u's gather and layer l = u - 1's gate pass in one phase: invocation lid sums input lid's
// gradient (gate lid of layer l: its dy) from layer u's da and db and runs that gate at once.
// next_width: the inputs the next phase gathers (layer l's, LAYER_SYNC).
#define UPDATE_MERGED_PHASE(u, l, next_width, l_in_at, PREFETCH)                                         \
    if (u < UPDATE_DEPTH) {                                                                              \
        if (lid < update_n_out_##l) {                                                                    \
            vec2 dy = input_gradient_sum(lid, update_fanout_##u, update_reverse_##u, true, entries##u, more##u, \
                                         UPDATE_OWN_EIGHT(u) ? 8u : 4u, UPDATE_ROWS_AT(u), MERGED_DB_AT(u)); \
            gate_backward_pair(p##l, acc##l, lid, slot + update_out_base_##l + lid, width, l_in_at,      \
                               UPDATE_ROWS_AT(l), MERGED_DB_AT(l), dy);                                  \
        }                                                                                                \
        {                                                                                                \
            uint after = p##l.a >> 31;                                                                   \
            PREFETCH                                                                                     \
        }                                                                                                \
        LAYER_SYNC(update_n_out_##l, next_width)                                                         \
        PROBE_MARK()                                                                                     \
    }

// Layer u (l = u - 1 below it, whose inputs, l_inputs of them, are at l_in_at) in the merged
// backward: its gate pass first where it is the last layer, then its gather with l's gate pass.
// PREFETCH: what the phase below needs (layer l's reverse entries, the gate parameters of the
// layer below l).
#define UPDATE_MERGED_LAYER(u, l, l_inputs, l_in_at, PREFETCH)                                           \
    UPDATE_LAST_GATE_PASS(u, update_n_out_##l, UPDATE_ROWS_AT(l), UPDATE_PREFETCH_ENTRIES(u, update_n_out_##l) UPDATE_PREFETCH_GATE(l)) \
    UPDATE_MERGED_PHASE(u, l, l_inputs, l_in_at, PREFETCH)

#if FUSED_UPDATE_SLOTS > 8
#define UPDATE_MERGED_PAST_8() \
    UPDATE_MERGED_LAYER(31, 30, update_n_out_29, UPDATE_ROWS_AT(29), UPDATE_PREFETCH_ENTRIES(30, update_n_out_29) UPDATE_PREFETCH_GATE(29)) \
    UPDATE_MERGED_LAYER(30, 29, update_n_out_28, UPDATE_ROWS_AT(28), UPDATE_PREFETCH_ENTRIES(29, update_n_out_28) UPDATE_PREFETCH_GATE(28)) \
    UPDATE_MERGED_LAYER(29, 28, update_n_out_27, UPDATE_ROWS_AT(27), UPDATE_PREFETCH_ENTRIES(28, update_n_out_27) UPDATE_PREFETCH_GATE(27)) \
    UPDATE_MERGED_LAYER(28, 27, update_n_out_26, UPDATE_ROWS_AT(26), UPDATE_PREFETCH_ENTRIES(27, update_n_out_26) UPDATE_PREFETCH_GATE(26)) \
    UPDATE_MERGED_LAYER(27, 26, update_n_out_25, UPDATE_ROWS_AT(25), UPDATE_PREFETCH_ENTRIES(26, update_n_out_25) UPDATE_PREFETCH_GATE(25)) \
    UPDATE_MERGED_LAYER(26, 25, update_n_out_24, UPDATE_ROWS_AT(24), UPDATE_PREFETCH_ENTRIES(25, update_n_out_24) UPDATE_PREFETCH_GATE(24)) \
    UPDATE_MERGED_LAYER(25, 24, update_n_out_23, UPDATE_ROWS_AT(23), UPDATE_PREFETCH_ENTRIES(24, update_n_out_23) UPDATE_PREFETCH_GATE(23)) \
    UPDATE_MERGED_LAYER(24, 23, update_n_out_22, UPDATE_ROWS_AT(22), UPDATE_PREFETCH_ENTRIES(23, update_n_out_22) UPDATE_PREFETCH_GATE(22)) \
    UPDATE_MERGED_LAYER(23, 22, update_n_out_21, UPDATE_ROWS_AT(21), UPDATE_PREFETCH_ENTRIES(22, update_n_out_21) UPDATE_PREFETCH_GATE(21)) \
    UPDATE_MERGED_LAYER(22, 21, update_n_out_20, UPDATE_ROWS_AT(20), UPDATE_PREFETCH_ENTRIES(21, update_n_out_20) UPDATE_PREFETCH_GATE(20)) \
    UPDATE_MERGED_LAYER(21, 20, update_n_out_19, UPDATE_ROWS_AT(19), UPDATE_PREFETCH_ENTRIES(20, update_n_out_19) UPDATE_PREFETCH_GATE(19)) \
    UPDATE_MERGED_LAYER(20, 19, update_n_out_18, UPDATE_ROWS_AT(18), UPDATE_PREFETCH_ENTRIES(19, update_n_out_18) UPDATE_PREFETCH_GATE(18)) \
    UPDATE_MERGED_LAYER(19, 18, update_n_out_17, UPDATE_ROWS_AT(17), UPDATE_PREFETCH_ENTRIES(18, update_n_out_17) UPDATE_PREFETCH_GATE(17)) \
    UPDATE_MERGED_LAYER(18, 17, update_n_out_16, UPDATE_ROWS_AT(16), UPDATE_PREFETCH_ENTRIES(17, update_n_out_16) UPDATE_PREFETCH_GATE(16)) \
    UPDATE_MERGED_LAYER(17, 16, update_n_out_15, UPDATE_ROWS_AT(15), UPDATE_PREFETCH_ENTRIES(16, update_n_out_15) UPDATE_PREFETCH_GATE(15)) \
    UPDATE_MERGED_LAYER(16, 15, update_n_out_14, UPDATE_ROWS_AT(14), UPDATE_PREFETCH_ENTRIES(15, update_n_out_14) UPDATE_PREFETCH_GATE(14)) \
    UPDATE_MERGED_LAYER(15, 14, update_n_out_13, UPDATE_ROWS_AT(13), UPDATE_PREFETCH_ENTRIES(14, update_n_out_13) UPDATE_PREFETCH_GATE(13)) \
    UPDATE_MERGED_LAYER(14, 13, update_n_out_12, UPDATE_ROWS_AT(12), UPDATE_PREFETCH_ENTRIES(13, update_n_out_12) UPDATE_PREFETCH_GATE(12)) \
    UPDATE_MERGED_LAYER(13, 12, update_n_out_11, UPDATE_ROWS_AT(11), UPDATE_PREFETCH_ENTRIES(12, update_n_out_11) UPDATE_PREFETCH_GATE(11)) \
    UPDATE_MERGED_LAYER(12, 11, update_n_out_10, UPDATE_ROWS_AT(10), UPDATE_PREFETCH_ENTRIES(11, update_n_out_10) UPDATE_PREFETCH_GATE(10)) \
    UPDATE_MERGED_LAYER(11, 10, update_n_out_9, UPDATE_ROWS_AT(9), UPDATE_PREFETCH_ENTRIES(10, update_n_out_9) UPDATE_PREFETCH_GATE(9)) \
    UPDATE_MERGED_LAYER(10, 9, update_n_out_8, UPDATE_ROWS_AT(8), UPDATE_PREFETCH_ENTRIES(9, update_n_out_8) UPDATE_PREFETCH_GATE(8)) \
    UPDATE_MERGED_LAYER(9, 8, update_n_out_7, UPDATE_ROWS_AT(7), UPDATE_PREFETCH_ENTRIES(8, update_n_out_7) UPDATE_PREFETCH_GATE(7)) \
    UPDATE_MERGED_LAYER(8, 7, update_n_out_6, UPDATE_ROWS_AT(6), UPDATE_PREFETCH_ENTRIES(7, update_n_out_6) UPDATE_PREFETCH_GATE(6))
#else
#define UPDATE_MERGED_PAST_8()
#endif

// Every update layer backward, last to first, one phase a layer; then layer 0's gather (the
// update input, which may be wider than the workgroup) into gradient buffer 0.
#define UPDATE_LAYERS_BACKWARD_MERGED()                                                                  \
    {                                                                                                    \
        UPDATE_BACKWARD_REGISTERS()                                                                      \
    UPDATE_MERGED_PAST_8() \
    UPDATE_MERGED_LAYER(7, 6, update_n_out_5, UPDATE_ROWS_AT(5), UPDATE_PREFETCH_ENTRIES(6, update_n_out_5) UPDATE_PREFETCH_GATE(5)) \
    UPDATE_MERGED_LAYER(6, 5, update_n_out_4, UPDATE_ROWS_AT(4), UPDATE_PREFETCH_ENTRIES(5, update_n_out_4) UPDATE_PREFETCH_GATE(4)) \
    UPDATE_MERGED_LAYER(5, 4, update_n_out_3, UPDATE_ROWS_AT(3), UPDATE_PREFETCH_ENTRIES(4, update_n_out_3) UPDATE_PREFETCH_GATE(3)) \
    UPDATE_MERGED_LAYER(4, 3, update_n_out_2, UPDATE_ROWS_AT(2), UPDATE_PREFETCH_ENTRIES(3, update_n_out_2) UPDATE_PREFETCH_GATE(2)) \
    UPDATE_MERGED_LAYER(3, 2, update_n_out_1, UPDATE_ROWS_AT(1), UPDATE_PREFETCH_ENTRIES(2, update_n_out_1) UPDATE_PREFETCH_GATE(1)) \
    UPDATE_MERGED_LAYER(2, 1, update_n_out_0, UPDATE_ROWS_AT(0), UPDATE_PREFETCH_ENTRIES(1, update_n_out_0) UPDATE_PREFETCH_GATE(0)) \
    UPDATE_MERGED_LAYER(1, 0, pc.update_inputs, 0u, UPDATE_PREFETCH_ENTRIES(0, pc.update_inputs)) \
    UPDATE_LAST_GATE_PASS(0, pc.update_inputs, 0u, UPDATE_PREFETCH_ENTRIES(0, pc.update_inputs)) \
    gather_inputs(pc.update_inputs, update_fanout_0, update_reverse_0, entries0, more0, UPDATE_OWN_EIGHT(0) ? 8u : 4u, \
                  width, UPDATE_ROWS_AT(0), MERGED_DB_AT(0));                                            \
    barrier();                                                                                           \
    PROBE_MARK()                                                                                         \
    }
#endif

#endif
