// common.glsl: shared by every kernel (#include "common.glsl" after #version 450).
// Holds the gate op matrix and the push-constant structs; both mirror C definitions that
// tests pin: GATE_OP_MATRIX == gate_op_matrix (src/gates.c), <kernel>_push ==
// vk_push_<kernel> (src/vk_push.h, with _Static_assert on the size).
#ifndef DLCA_COMMON_GLSL
#define DLCA_COMMON_GLSL

const uint GATE_OP_COUNT = 16;
const uint GATE_COEFFS = 4;

// Row i = (m0, m1, m2, m3) of op i: op_i(a, b) = m0 + m1 a + m2 b + m3 ab.
const vec4 GATE_OP_MATRIX[16] = vec4[16](
    vec4(0, 0, 0, 0),   // FALSE
    vec4(0, 0, 0, 1),   // AND
    vec4(0, 1, 0, -1),  // A AND NOT B
    vec4(0, 1, 0, 0),   // A
    vec4(0, 0, 1, -1),  // NOT A AND B
    vec4(0, 0, 1, 0),   // B
    vec4(0, 1, 1, -2),  // XOR
    vec4(0, 1, 1, -1),  // OR
    vec4(1, -1, -1, 1), // NOR
    vec4(1, -1, -1, 2), // XNOR
    vec4(1, 0, -1, 0),  // NOT B
    vec4(1, 0, -1, 1),  // A OR NOT B
    vec4(1, -1, 0, 0),  // NOT A
    vec4(1, -1, 0, 1),  // NOT A OR B
    vec4(1, 0, 0, -1),  // NAND
    vec4(1, 0, 0, 0)    // TRUE
);

// Linear invocation index of a dispatch made by vk_dispatch_1d (x groups, then rows of y).
uint global_index()
{
    return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

// ---- push-constant structs (mirrors of src/vk_push.h) ----

struct gate_coefficients_push {
    uint gate_count;
    uint hard;
};

#endif
