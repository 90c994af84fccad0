/* ca_fast_kernel.c: plain C loops that GCC vectorises (no intrinsics, no fast-math: every sum
 * has a fixed order, so SSE and AVX2 builds give the same bits). */
#include "ca_fast_kernel.h"

#include <string.h>

/* On x86-64 Linux also build AVX2 copies and pick one at load time (ifunc), as hard_cpu does. */
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute)
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
        for (size_t i = 0; i < n; i++) y[i] = c0 + c1 * a[i] + b[i] * (c2 + c3 * a[i]);
    }
}

/* One S partial sum per lane (GCC/Clang vector extension: one AVX2 register, or two SSE ones).
 * Written as vectors because GCC will not vectorise a float sum without reassociating it. */
typedef float lane_vec __attribute__((vector_size(CA_FAST_LANES * sizeof(float))));
_Static_assert(CA_FAST_BLOCK % CA_FAST_LANES == 0, "a block row is whole lane vectors");

FAST_CLONES void ca_fast_ops_coeff_sums(float *lanes, const float *vals, const float *grads, const ca_fast_op *ops,
                                        size_t count, size_t n)
{
    const size_t vectors = n / CA_FAST_LANES;
    for (size_t k = 0; k < count; k++) {
        const lane_vec *dy = (const lane_vec *)ROW(grads, ops[k].out), *a = (const lane_vec *)ROW(vals, ops[k].a),
                       *b = (const lane_vec *)ROW(vals, ops[k].b);
        lane_vec *s = (lane_vec *)(lanes + (size_t)ops[k].gate * 4 * CA_FAST_LANES);
        lane_vec s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
        for (size_t v = 0; v < vectors; v++) {
            lane_vec g = dy[v], ga = g * a[v];
            s0 += g, s1 += ga, s2 += g * b[v], s3 += ga * b[v];
        }
        s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
    }
}

FAST_CLONES void ca_fast_inputs_backward(float *grads, const float *vals, const ca_fast_plan *plan, size_t first,
                                         size_t last, const float *coeffs, size_t n)
{
    for (size_t k = first; k < last; k++) {
        uint32_t row = plan->input_row[k];
        float *restrict d = ROW(grads, row);
        if (row >= plan->channels) memset(d, 0, n * sizeof *d);
        for (uint32_t e = plan->input_start[k]; e < plan->input_start[k + 1]; e++) {
            const ca_fast_entry *en = &plan->entries[e];
            const float *restrict dy = ROW(grads, en->out), *restrict other = ROW(vals, en->other);
            const float cs = coeffs[4 * (size_t)en->gate + en->slot], c3 = coeffs[4 * (size_t)en->gate + 3];
            for (size_t i = 0; i < n; i++) d[i] += dy[i] * (cs + c3 * other[i]);
        }
    }
}
