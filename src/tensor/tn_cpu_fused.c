/* tn_cpu_fused.c: the CPU kernels of the fused ops the CA trainer uses (softmax-matmul and its
 * backward, argmax one-hot, the sum of squared errors that keeps its difference, counter-based
 * noise) and the noise hash every backend shares. As in tn_cpu.c, elements are loaded as
 * double, combined in double and rounded once on store. */
#include "tn_internal.h"

#include "error.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline double ld(const tn_tensor *t, ptrdiff_t i)
{
    const void *p = t->storage->data;
    return t->dtype == TN_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static inline void st(tn_tensor *t, ptrdiff_t i, double v)
{
    void *p = t->storage->data;
    if (t->dtype == TN_F32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* Storage index of C-order element i of a strided view. */
static ptrdiff_t strided(const tn_tensor *t, size_t i)
{
    ptrdiff_t off = (ptrdiff_t)t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (ptrdiff_t)(i % t->shape[d]) * t->stride[d];
        i /= t->shape[d];
    }
    return off;
}

/* ---- softmax(z) m along the last dim ---- */

/* One row: p = softmax(z[zo .. zo+k)), y[j] = sum_i p_i m[i][j] into y[c]; returns nothing when
 * k is 0 (the row is then all zeros). */
static void smm_row(const tn_tensor *z, ptrdiff_t zo, size_t k, const tn_tensor *m, size_t c, double *p, double *y)
{
    double mx = -INFINITY, total = 0.0;
    for (size_t i = 0; i < k; i++) mx = fmax(mx, ld(z, zo + (ptrdiff_t)i));
    for (size_t i = 0; i < k; i++) total += (p[i] = exp(ld(z, zo + (ptrdiff_t)i) - mx));
    for (size_t i = 0; i < k; i++) p[i] /= total;
    for (size_t j = 0; j < c; j++) {
        double acc = 0.0;
        for (size_t i = 0; i < k; i++) acc += p[i] * ld(m, (ptrdiff_t)(m->offset + i * c + j));
        y[j] = acc;
    }
}

int tn__cpu_softmax_matmul(tn_tensor *out, const tn_tensor *z, const tn_tensor *m)
{
    size_t k = m->shape[0], c = m->shape[1], rows = k ? tn_numel(z) / k : 0;
    double *p = malloc((k + c + 1) * sizeof *p);
    if (!p) return err_set(DLCA_ERR_NOMEM, "softmax_matmul: out of memory");
    for (size_t r = 0; r < rows; r++) {
        smm_row(z, (ptrdiff_t)(z->offset + r * k), k, m, c, p, p + k);
        for (size_t j = 0; j < c; j++) st(out, (ptrdiff_t)(out->offset + r * c + j), p[k + j]);
    }
    free(p);
    return DLCA_OK;
}

/* gz_i = p_i (sum_j g_j m_ij - sum_j g_j y_j) */
int tn__cpu_softmax_matmul_bwd(tn_tensor *gz, const tn_tensor *z, const tn_tensor *m, const tn_tensor *g)
{
    size_t k = m->shape[0], c = m->shape[1], rows = k ? tn_numel(z) / k : 0;
    double *p = malloc((k + c + 1) * sizeof *p);
    if (!p) return err_set(DLCA_ERR_NOMEM, "softmax_matmul: out of memory");
    for (size_t r = 0; r < rows; r++) {
        double *y = p + k, dot = 0.0;
        smm_row(z, (ptrdiff_t)(z->offset + r * k), k, m, c, p, y);
        for (size_t j = 0; j < c; j++) dot += ld(g, (ptrdiff_t)(g->offset + r * c + j)) * y[j];
        for (size_t i = 0; i < k; i++) {
            double gs = 0.0;
            for (size_t j = 0; j < c; j++)
                gs += ld(g, (ptrdiff_t)(g->offset + r * c + j)) * ld(m, (ptrdiff_t)(m->offset + i * c + j));
            st(gz, (ptrdiff_t)(gz->offset + r * k + i), p[i] * (gs - dot));
        }
    }
    free(p);
    return DLCA_OK;
}

int tn__cpu_argmax_onehot(tn_tensor *out, const tn_tensor *z)
{
    size_t k = z->shape[z->ndim - 1], rows = k ? tn_numel(z) / k : 0;
    for (size_t r = 0; r < rows; r++) {
        size_t best = 0;
        ptrdiff_t zo = (ptrdiff_t)(z->offset + r * k);
        /* strict >: the lowest index wins ties, as the CA's hard gates choose */
        for (size_t i = 1; i < k; i++)
            if (ld(z, zo + (ptrdiff_t)i) > ld(z, zo + (ptrdiff_t)best)) best = i;
        for (size_t i = 0; i < k; i++) st(out, (ptrdiff_t)(out->offset + r * k + i), i == best ? 1.0 : 0.0);
    }
    return DLCA_OK;
}

/* ---- sum of squared errors ---- */

int tn__cpu_sse(tn_tensor *loss, tn_tensor *diff, const tn_tensor *pred, const tn_tensor *target)
{
    size_t n = tn_numel(pred);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = ld(pred, strided(pred, i)) - ld(target, strided(target, i));
        st(diff, (ptrdiff_t)(diff->offset + i), d);
        sum += d * d;
    }
    st(loss, (ptrdiff_t)loss->offset, sum);
    return DLCA_OK;
}

int tn__cpu_sse_bwd(tn_tensor *gpred, tn_tensor *gtarget, const tn_tensor *diff, const tn_tensor *g)
{
    size_t n = tn_numel(diff);
    double scale = 2.0 * ld(g, (ptrdiff_t)g->offset);
    for (size_t i = 0; i < n; i++) {
        double v = scale * ld(diff, (ptrdiff_t)(diff->offset + i));
        st(gpred, (ptrdiff_t)(gpred->offset + i), v);
        if (gtarget) st(gtarget, (ptrdiff_t)(gtarget->offset + i), -v);
    }
    return DLCA_OK;
}

/* ---- counter-based noise: rng_hash32 of src/core/rng.h, as the CA's fire masks ---- */

uint32_t tn__noise_key(uint64_t seed, uint32_t stream)
{
    return rng_hash32((uint32_t)seed ^ rng_hash32((uint32_t)(seed >> 32) ^ rng_hash32(stream + 0x9e3779b9u)));
}

uint32_t tn__noise_bits(uint32_t key, uint32_t index) { return rng_hash32(key ^ rng_hash32(index)); }

double tn__noise_value(tn_noise_kind kind, uint32_t bits)
{
    /* the top 23 bits and a half: uniform in (0, 1), never 0 or 1, and 24 significant bits, so
     * exact in float: every device computes the Gumbel value from the same u */
    double u = ((double)(bits >> 9) + 0.5) * 0x1.0p-23;
    return kind == TN_NOISE_GUMBEL ? -log(-log(u)) : u;
}

int tn__cpu_noise(tn_tensor *out, tn_noise_kind kind, uint32_t key)
{
    size_t n = tn_numel(out);
    for (size_t i = 0; i < n; i++)
        st(out, (ptrdiff_t)(out->offset + i), tn__noise_value(kind, tn__noise_bits(key, (uint32_t)i)));
    return DLCA_OK;
}
