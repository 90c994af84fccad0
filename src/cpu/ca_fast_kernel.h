/* ca_fast_kernel.h: the fast engine's hot loops over one block of cells. A block is a set of
 * rows of CA_FAST_BLOCK floats each (rows numbered as in ca_fast_plan.h); `n` is the number of
 * cells computed, a multiple of CA_FAST_LANES (padding cells hold zeros and zero gradients). */
#ifndef DLCA_CA_FAST_KERNEL_H
#define DLCA_CA_FAST_KERNEL_H

#include "ca_fast_plan.h"

#include <stddef.h>

enum {
    CA_FAST_LANES = 8, /* explicit partial sums per S value: a fixed summation order that vectorises */
    CA_FAST_BLOCK = 64 /* the widest block: 256 bytes per row, so a layer's rows stay in L1/L2 */
};

/* vals[op.out] = c0 + c1 a + c2 b + c3 ab for ops[0 .. count). coeffs: [gates][4]. */
void ca_fast_ops_forward(float *vals, const ca_fast_op *ops, size_t count, const float *coeffs, size_t n);

/* Backward of ops[0 .. count), in order: S partial sums lanes[op.gate][q][lane] += the sum over
 * cells = lane (mod CA_FAST_LANES) of dy [1, a, b, ab] with dy = grads[op.out], and
 * grads[op.a] += dy (c1 + c3 b), grads[op.b] += dy (c2 + c3 a). lanes: [gates][4][CA_FAST_LANES].
 * Rows and lanes are 32-byte aligned (the engine allocates them with aligned_alloc). */
void ca_fast_ops_backward(float *lanes, float *grads, const float *vals, const ca_fast_op *ops, size_t count,
                          const float *coeffs, size_t n);

#endif
