// fused_update_layers.glsl: the update layers' forward in the fused kernels, unrolled, with
// each layer's shape and offsets as specialisation constants (src/gpu/ca_gpu_fused.c
// ca_gpu_fused_constants).
//
// As constants they are immediates; read from the uniform layer table, every layer would start
// with a load that the rest of the layer waits on (docs/bench-notes.md, round 8). Each layer's
// parameters are loaded into a register set of its own, a batch of 4 layers at a time (see
// UPDATE_LAYERS_FORWARD).
// Needs, declared before: pc, smem, wiring, coeffs, gate_params, update_gate_forward.
#ifndef DLCA_FUSED_UPDATE_LAYERS_GLSL
#define DLCA_FUSED_UPDATE_LAYERS_GLSL

// Update layers the kernel has code for: CA_MAX_LAYERS, or 8 in the copies that CMakeLists.txt
// compiles for shallower models (lavapipe, the CI's driver, compiles those in half the time).
#ifndef FUSED_UPDATE_SLOTS
#define FUSED_UPDATE_SLOTS 32
#endif

// Update layers (CA_MAX_LAYERS at most); then per layer u its width, where its wiring (inputs a
// and b) and coefficients start, and its first row in the step block (as the layer table).
layout(constant_id = 70) const uint UPDATE_DEPTH = 0;
#define UPDATE_LAYER_CONSTANTS(u, i0, i1, i2, i3, i4)                     \
    layout(constant_id = i0) const uint update_n_out_##u = 0;             \
    layout(constant_id = i1) const uint update_wiring_a_##u = 0;          \
    layout(constant_id = i2) const uint update_wiring_b_##u = 0;          \
    layout(constant_id = i3) const uint update_coeff_base_##u = 0;        \
    layout(constant_id = i4) const uint update_out_base_##u = 0;
UPDATE_LAYER_CONSTANTS(0, 71, 72, 73, 74, 75)
UPDATE_LAYER_CONSTANTS(1, 76, 77, 78, 79, 80)
UPDATE_LAYER_CONSTANTS(2, 81, 82, 83, 84, 85)
UPDATE_LAYER_CONSTANTS(3, 86, 87, 88, 89, 90)
UPDATE_LAYER_CONSTANTS(4, 91, 92, 93, 94, 95)
UPDATE_LAYER_CONSTANTS(5, 96, 97, 98, 99, 100)
UPDATE_LAYER_CONSTANTS(6, 101, 102, 103, 104, 105)
UPDATE_LAYER_CONSTANTS(7, 106, 107, 108, 109, 110)
UPDATE_LAYER_CONSTANTS(8, 111, 112, 113, 114, 115)
UPDATE_LAYER_CONSTANTS(9, 116, 117, 118, 119, 120)
UPDATE_LAYER_CONSTANTS(10, 121, 122, 123, 124, 125)
UPDATE_LAYER_CONSTANTS(11, 126, 127, 128, 129, 130)
UPDATE_LAYER_CONSTANTS(12, 131, 132, 133, 134, 135)
UPDATE_LAYER_CONSTANTS(13, 136, 137, 138, 139, 140)
UPDATE_LAYER_CONSTANTS(14, 141, 142, 143, 144, 145)
UPDATE_LAYER_CONSTANTS(15, 146, 147, 148, 149, 150)
UPDATE_LAYER_CONSTANTS(16, 151, 152, 153, 154, 155)
UPDATE_LAYER_CONSTANTS(17, 156, 157, 158, 159, 160)
UPDATE_LAYER_CONSTANTS(18, 161, 162, 163, 164, 165)
UPDATE_LAYER_CONSTANTS(19, 166, 167, 168, 169, 170)
UPDATE_LAYER_CONSTANTS(20, 171, 172, 173, 174, 175)
UPDATE_LAYER_CONSTANTS(21, 176, 177, 178, 179, 180)
UPDATE_LAYER_CONSTANTS(22, 181, 182, 183, 184, 185)
UPDATE_LAYER_CONSTANTS(23, 186, 187, 188, 189, 190)
UPDATE_LAYER_CONSTANTS(24, 191, 192, 193, 194, 195)
UPDATE_LAYER_CONSTANTS(25, 196, 197, 198, 199, 200)
UPDATE_LAYER_CONSTANTS(26, 201, 202, 203, 204, 205)
UPDATE_LAYER_CONSTANTS(27, 206, 207, 208, 209, 210)
UPDATE_LAYER_CONSTANTS(28, 211, 212, 213, 214, 215)
UPDATE_LAYER_CONSTANTS(29, 216, 217, 218, 219, 220)
UPDATE_LAYER_CONSTANTS(30, 221, 222, 223, 224, 225)
UPDATE_LAYER_CONSTANTS(31, 226, 227, 228, 229, 230)
// Past the last possible layer: what the last batch's loads name (never taken).
#define NO_LAYER_CONSTANTS(u) \
    const uint update_n_out_##u = 0, update_wiring_a_##u = 0, update_wiring_b_##u = 0, update_coeff_base_##u = 0;
NO_LAYER_CONSTANTS(32) NO_LAYER_CONSTANTS(33) NO_LAYER_CONSTANTS(34) NO_LAYER_CONSTANTS(35)

// Gate g's parameters in layer u; `after` (always 0) ties the loads to a value the includer
// has already waited for, so the compiler cannot issue them earlier (see UPDATE_LAYERS_FORWARD).
#define UPDATE_PARAMS_AFTER(u, g, after)                                                           \
    gate_params(wiring[update_wiring_a_##u + (g) + (after)], wiring[update_wiring_b_##u + (g) + (after)], \
                coeffs[update_coeff_base_##u + (g) + (after)])
#define UPDATE_PARAMS(u, g) UPDATE_PARAMS_AFTER(u, g, 0u)
#define UPDATE_LOAD(v) \
    if (v < UPDATE_DEPTH && lid < update_n_out_##v) p##v = UPDATE_PARAMS_AFTER(v, lid, after);
#define UPDATE_LOAD_BATCH(a, b, c, d) UPDATE_LOAD(a) UPDATE_LOAD(b) UPDATE_LOAD(c) UPDATE_LOAD(d)
#define UPDATE_NO_LOADS

// The barrier after a phase whose invocations at work (the first `width`) and the next phase's
// (the first `next_width`) are all in the first subgroup: that subgroup's own, since no other
// invocation writes or reads what they do (checkerboard's last 4 update layers, 8 to 32 gates).
// Needs GL_KHR_shader_subgroup_basic; subgroups are runs of consecutive invocations, as
// fused_step_backward.comp assumes for its sums.
// After the last layer the next phase's invocations are the includer's: all of them unless it
// defines UPDATE_LAST_NEXT_WIDTH (fused_step_backward.comp's persistent recompute: 0, none).
#ifndef UPDATE_LAST_NEXT_WIDTH
#define UPDATE_LAST_NEXT_WIDTH 0xffffffffu
#endif
#define LAYER_SYNC(width, next_width)                                                                \
    if ((width) <= gl_SubgroupSize && (next_width) <= gl_SubgroupSize)                               \
        subgroupBarrier();                                                                           \
    else                                                                                             \
        barrier();

// Layer u (of the update layers) forward on the tile, gate lid's parameters in p##u: the gates
// (any past the workgroup's size load theirs here), from in_at's rows into OUT_AT(u)'s (the
// includer's macro); in_at is then the layer's output. LOADS, once this gate's parameters are
// in, start the loads of a later batch of layers. v: the next layer (u + 1).
#define UPDATE_LAYER_FORWARD(u, v, LOADS)                                                            \
    if (u < UPDATE_DEPTH) {                                                                          \
        uint out_at = OUT_AT(u);                                                                     \
        if (lid < update_n_out_##u) update_gate_forward(p##u, lid, width, in_at, out_at);            \
        {                                                                                            \
            uint after = p##u.a >> 31; /* a row index: 0, but only once p##u.a is in */              \
            LOADS                                                                                    \
        }                                                                                            \
        if (update_n_out_##u > gl_WorkGroupSize.x) /* constants: no code for the usual layers */     \
            for (uint g = lid + size; g < update_n_out_##u; g += size)                               \
                update_gate_forward(UPDATE_PARAMS(u, g), g, width, in_at, out_at);                    \
        LAYER_SYNC(update_n_out_##u, v < UPDATE_DEPTH ? update_n_out_##v : UPDATE_LAST_NEXT_WIDTH)   \
        PROBE_MARK()                                                                                 \
        in_at = out_at;                                                                              \
    }

// Layers 8 on, only in the kernels compiled for deep models (FUSED_UPDATE_SLOTS, CMakeLists.txt).
#if FUSED_UPDATE_SLOTS > 8
#define UPDATE_LAYERS_FORWARD_PAST_8() \
    UPDATE_LAYER_FORWARD(8, 9, UPDATE_LOAD_BATCH(12, 13, 14, 15)) \
    UPDATE_LAYER_FORWARD(9, 10, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(10, 11, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(11, 12, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(12, 13, UPDATE_LOAD_BATCH(16, 17, 18, 19)) \
    UPDATE_LAYER_FORWARD(13, 14, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(14, 15, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(15, 16, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(16, 17, UPDATE_LOAD_BATCH(20, 21, 22, 23)) \
    UPDATE_LAYER_FORWARD(17, 18, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(18, 19, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(19, 20, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(20, 21, UPDATE_LOAD_BATCH(24, 25, 26, 27)) \
    UPDATE_LAYER_FORWARD(21, 22, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(22, 23, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(23, 24, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(24, 25, UPDATE_LOAD_BATCH(28, 29, 30, 31)) \
    UPDATE_LAYER_FORWARD(25, 26, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(26, 27, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(27, 28, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(28, 29, UPDATE_LOAD_BATCH(32, 33, 34, 35)) \
    UPDATE_LAYER_FORWARD(29, 30, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(30, 31, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(31, 32, UPDATE_NO_LOADS)
#else
#define UPDATE_LAYERS_FORWARD_PAST_8()
#endif

// Every update layer forward, starting from the update input at in_at (a uint the includer
// declares, with lid, size and width); each layer ends with a barrier.
//
// The parameters come in batches of 4 layers, each batch's loads started in the first layer of
// the batch before, after that layer's own parameters are in. NVIDIA's compiler counts every
// global load on one scoreboard, so waiting for one load waits for all in flight: a load issued
// one layer ahead would make every layer wait a whole load latency, while this way a wait covers
// only loads issued 4 layers before (the driver's code: docs/bench-notes.md, round 10).
#define UPDATE_LAYERS_FORWARD()                                                                         \
    {                                                                                                \
        const gate_params none = gate_params(0u, 0u, vec4(0.0));                                     \
        gate_params p0 = none, p1 = none, p2 = none, p3 = none, p4 = none, p5 = none, p6 = none,     \
                    p7 = none, p8 = none, p9 = none, p10 = none, p11 = none, p12 = none, p13 = none, \
                    p14 = none, p15 = none, p16 = none, p17 = none, p18 = none, p19 = none,          \
                    p20 = none, p21 = none, p22 = none, p23 = none, p24 = none, p25 = none,          \
                    p26 = none, p27 = none, p28 = none, p29 = none, p30 = none, p31 = none, p32 = none, \
                    p33 = none, p34 = none, p35 = none;                                              \
        {                                                                                            \
            uint after = 0u;                                                                         \
            UPDATE_LOAD_BATCH(0, 1, 2, 3)                                                            \
        }                                                                                            \
    UPDATE_LAYER_FORWARD(0, 1, UPDATE_LOAD_BATCH(4, 5, 6, 7)) \
    UPDATE_LAYER_FORWARD(1, 2, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(2, 3, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(3, 4, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(4, 5, UPDATE_LOAD_BATCH(8, 9, 10, 11)) \
    UPDATE_LAYER_FORWARD(5, 6, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(6, 7, UPDATE_NO_LOADS) \
    UPDATE_LAYER_FORWARD(7, 8, UPDATE_NO_LOADS) \
    UPDATE_LAYERS_FORWARD_PAST_8() \
    }

#endif
