/* ca_fast_kernel.c: plain C loops that GCC vectorises (no intrinsics, no fast-math: every sum
 * has a fixed order, so SSE and AVX2 builds give the same bits). */
#include "ca_fast_kernel.h"

/* On x86-64 Linux also build AVX2 copies and pick one at load time (ifunc), as hard_cpu does.
 * Not under ThreadSanitizer, whose instrumented ifunc resolvers run before it is set up. */
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute) && !defined(__SANITIZE_THREAD__)
#if __has_attribute(target_clones)
#define FAST_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef FAST_CLONES
#define FAST_CLONES
#endif

#define ROW(base, r) ((base) + (size_t)(r) * CA_FAST_BLOCK)

FAST_CLONES void ca_fast_ops_forward(float *vals, const ca_fast_op *ops, size_t count, const float *coeffs, size_t n)
{
    for (size_t k = 0; k < count; k++) {
        const float *c = coeffs + 4 * (size_t)ops[k].gate;
        const float c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
        const float *restrict a = ROW(vals, ops[k].a), *restrict b = ROW(vals, ops[k].b);
        float *restrict y = ROW(vals, ops[k].out);
        for (size_t i = 0; i < n; i++) { /* clamped as gates.h's gate_eval; NaN stays NaN */
            float v = c0 + c1 * a[i] + b[i] * (c2 + c3 * a[i]);
            v = v < 0.0f ? 0.0f : v;
            y[i] = v > 1.0f ? 1.0f : v;
        }
    }
}

/* Lane vectors (GCC/Clang vector extension: one AVX2 register, or two SSE ones). The S sums are
 * written as vectors because GCC will not vectorise a float sum without reassociating it. */
typedef float lane_vec __attribute__((vector_size(CA_FAST_LANES * sizeof(float))));
_Static_assert(CA_FAST_BLOCK % CA_FAST_LANES == 0, "a block row is whole lane vectors");

enum { PREFETCH_OPS = 4 };

/* One pass per op reads dy, a and b once for S and for both input gradients. */
FAST_CLONES void ca_fast_ops_backward(float *lanes, float *grads, const float *vals, const ca_fast_op *ops, size_t count,
                                      const float *coeffs, size_t n)
{
    const size_t vectors = n / CA_FAST_LANES;
    for (size_t k = 0; k < count; k++) {
        const float *c = coeffs + 4 * (size_t)ops[k].gate;
        const float c1 = c[1], c2 = c[2], c3 = c[3];
        const lane_vec *dy = (const lane_vec *)ROW(grads, ops[k].out), *a = (const lane_vec *)ROW(vals, ops[k].a),
                       *b = (const lane_vec *)ROW(vals, ops[k].b);
        lane_vec *da = (lane_vec *)ROW(grads, ops[k].a), *db = (lane_vec *)ROW(grads, ops[k].b);
        lane_vec *s = (lane_vec *)(lanes + (size_t)ops[k].gate * 4 * CA_FAST_LANES);
        if (k + PREFETCH_OPS < count) { /* S lanes of later ops: they come from L3 */
            const float *next = lanes + (size_t)ops[k + PREFETCH_OPS].gate * 4 * CA_FAST_LANES;
            __builtin_prefetch(next, 1), __builtin_prefetch(next + 2 * CA_FAST_LANES, 1);
        }
        lane_vec s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
        for (size_t v = 0; v < vectors; v++) {
            lane_vec g = dy[v], x = a[v], z = b[v], gx = g * x;
            s0 += g, s1 += gx, s2 += g * z, s3 += gx * z;
            da[v] += g * (c1 + c3 * z);
            db[v] += g * (c2 + c3 * x);
        }
        s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
    }
}
