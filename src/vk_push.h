/* vk_push.h: push-constant structs of every kernel, defined once here and mirrored field by
 * field in glsl/common.glsl (C vk_push_<kernel> == GLSL <kernel>_push). Only 4-byte scalars, so
 * the C layout equals the std430 push-constant layout; _Static_assert pins each size. */
#ifndef DLCA_VK_PUSH_H
#define DLCA_VK_PUSH_H

#include <stdint.h>

/* glsl/gate_coefficients.comp */
typedef struct {
    uint32_t gate_count; /* gates to convert; logits [gate_count][16] -> coeffs [gate_count][4] */
    uint32_t hard;       /* 1: argmax row of M instead of M^T softmax(z) */
} vk_push_gate_coefficients;
_Static_assert(sizeof(vk_push_gate_coefficients) == 8, "mirror of gate_coefficients_push in glsl/common.glsl");

#endif
