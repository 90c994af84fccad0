/* tn_cpu.c: the CPU backend, the reference every other backend is checked against. Each
 * kernel is written once: elements are loaded as double, combined in double (sums and dot
 * products accumulate in double) and rounded once on store to the tensor's dtype. Operands are
 * arbitrary strided views; a walker steps through the outer dims while the innermost dim runs
 * as a plain loop. */
#include "tn_internal.h"

#include "error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline double ld(const void *p, tn_dtype dt, ptrdiff_t i)
{
    return dt == TN_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static inline void st(void *p, tn_dtype dt, ptrdiff_t i, double v)
{
    if (dt == TN_F32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* ---- the walker: rows over all dims but the last, `inner` elements per row ---- */

#define WALK_MAX_OPS 3

typedef struct {
    int nd; /* outer dims */
    size_t shape[TN_MAX_DIMS], ctr[TN_MAX_DIMS];
    size_t rows, inner;
    int nop;
    ptrdiff_t st[WALK_MAX_OPS][TN_MAX_DIMS];
    ptrdiff_t inner_st[WALK_MAX_OPS];
    ptrdiff_t base[WALK_MAX_OPS]; /* element offset of the current row's first element */
} walk;

/* Walks `shape`; operand i has strides stride[i] and starts at element offset[i]. */
static void walk_init(walk *w, int ndim, const size_t *shape, int nop, const ptrdiff_t *const *stride,
                      const ptrdiff_t *offset)
{
    memset(w, 0, sizeof *w);
    w->nd = ndim > 0 ? ndim - 1 : 0;
    w->inner = ndim > 0 ? shape[ndim - 1] : 1;
    w->rows = 1;
    w->nop = nop;
    for (int d = 0; d < w->nd; d++) {
        w->shape[d] = shape[d];
        w->rows *= shape[d];
    }
    for (int i = 0; i < nop; i++) {
        for (int d = 0; d < w->nd; d++) w->st[i][d] = stride[i][d];
        w->inner_st[i] = ndim > 0 ? stride[i][ndim - 1] : 0;
        w->base[i] = offset[i];
    }
}

/* Walks `shape` over the given tensors' own strides and offsets. */
static void walk_tensors(walk *w, int ndim, const size_t *shape, int nop, const tn_tensor *const *t)
{
    const ptrdiff_t *stride[WALK_MAX_OPS];
    ptrdiff_t offset[WALK_MAX_OPS];
    for (int i = 0; i < nop; i++) {
        stride[i] = t[i]->stride;
        offset[i] = (ptrdiff_t)t[i]->offset;
    }
    walk_init(w, ndim, shape, nop, stride, offset);
}

static void walk_next(walk *w)
{
    for (int d = w->nd - 1; d >= 0; d--) {
        for (int i = 0; i < w->nop; i++) w->base[i] += w->st[i][d];
        if (++w->ctr[d] < w->shape[d]) return;
        for (int i = 0; i < w->nop; i++) w->base[i] -= w->st[i][d] * (ptrdiff_t)w->shape[d];
        w->ctr[d] = 0;
    }
}

/* Offset of element j of the current row for operand i. */
static inline ptrdiff_t at(const walk *w, int i, size_t j) { return w->base[i] + (ptrdiff_t)j * w->inner_st[i]; }

/* ---- memory ---- */

/* Always zero-filled: host memory is cheap to clear, and a kernel that missed an element would
 * otherwise read garbage only on some runs. */
static int cpu_alloc(tn_storage *s, int zero)
{
    s->data = calloc(s->numel ? s->numel : 1, tn__dtype_size(s->dtype));
    return s->data ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "tn: out of memory for %zu elements", s->numel);
}

static void cpu_release(tn_storage *s) { free(s->data); }

static int cpu_grow(tn_storage *s, size_t numel)
{
    size_t es = tn__dtype_size(s->dtype);
    void *data = realloc(s->data, (numel ? numel : 1) * es);
    if (!data) return err_set(DLCA_ERR_NOMEM, "tn: out of memory growing to %zu elements", numel);
    if (numel > s->numel) memset((char *)data + s->numel * es, 0, (numel - s->numel) * es);
    s->data = data;
    s->numel = numel;
    return DLCA_OK;
}

static int cpu_upload(tn_storage *s, size_t off, const void *src, size_t n)
{
    size_t es = tn__dtype_size(s->dtype);
    if (n) memcpy((char *)s->data + off * es, src, n * es);
    return DLCA_OK;
}

static int cpu_download(const tn_storage *s, size_t off, void *dst, size_t n)
{
    size_t es = tn__dtype_size(s->dtype);
    if (n) memcpy(dst, (const char *)s->data + off * es, n * es);
    return DLCA_OK;
}

/* ---- elementwise ---- */

static double unary_fn(tn_ufn fn, double x, double s0, double s1)
{
    switch (fn) {
    case TN_U_COPY: return x;
    case TN_U_NEG: return -x;
    case TN_U_EXP: return exp(x);
    case TN_U_LOG: return log(x);
    case TN_U_SQRT: return sqrt(x);
    case TN_U_ABS: return fabs(x);
    case TN_U_RELU: return x > 0 ? x : 0.0;
    /* split by sign so exp never overflows */
    case TN_U_SIGMOID: return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case TN_U_TANH: return tanh(x);
    case TN_U_CLAMP: return x < s0 ? s0 : x > s1 ? s1 : x;
    case TN_U_POWS: return pow(x, s0);
    case TN_U_ADDS: return x + s0;
    case TN_U_MULS: return x * s0;
    case TN_U_COUNT: break;
    }
    return NAN;
}

static double binary_fn(tn_bfn fn, double a, double b, double s0, double s1)
{
    switch (fn) {
    case TN_B_ADD: return a + b;
    case TN_B_SUB: return a - b;
    case TN_B_MUL: return a * b;
    case TN_B_DIV: return a / b;
    case TN_B_POW: return pow(a, b);
    case TN_B_RELU_BWD: return b > 0 ? a : 0.0;
    case TN_B_ABS_BWD: return b > 0 ? a : b < 0 ? -a : 0.0;
    case TN_B_CLAMP_BWD: return b >= s0 && b <= s1 ? a : 0.0;
    case TN_B_SIGMOID_BWD: return a * b * (1.0 - b);
    case TN_B_TANH_BWD: return a * (1.0 - b * b);
    case TN_B_SQRT_BWD: return a / (2.0 * b);
    case TN_B_POWS_BWD: return s0 == 0.0 ? 0.0 : a * s0 * pow(b, s0 - 1.0);
    case TN_B_COUNT: break;
    }
    return NAN;
}

static int cpu_fill(tn_tensor *out, double value)
{
    walk w;
    void *po = out->storage->data;
    walk_tensors(&w, out->ndim, out->shape, 1, (const tn_tensor *[]){out});
    for (size_t r = 0; r < w.rows; r++, walk_next(&w))
        for (size_t j = 0; j < w.inner; j++) st(po, out->dtype, at(&w, 0, j), value);
    return DLCA_OK;
}

static int cpu_unary(tn_ufn fn, double s0, double s1, tn_tensor *out, const tn_tensor *a)
{
    walk w;
    void *po = out->storage->data;
    const void *pa = a->storage->data;
    walk_tensors(&w, out->ndim, out->shape, 2, (const tn_tensor *[]){out, a});
    for (size_t r = 0; r < w.rows; r++, walk_next(&w))
        for (size_t j = 0; j < w.inner; j++)
            st(po, out->dtype, at(&w, 0, j), unary_fn(fn, ld(pa, a->dtype, at(&w, 1, j)), s0, s1));
    return DLCA_OK;
}

static int cpu_binary(tn_bfn fn, double s0, double s1, tn_tensor *out, const tn_tensor *a, const tn_tensor *b)
{
    walk w;
    void *po = out->storage->data;
    const void *pa = a->storage->data, *pb = b->storage->data;
    walk_tensors(&w, out->ndim, out->shape, 3, (const tn_tensor *[]){out, a, b});
    for (size_t r = 0; r < w.rows; r++, walk_next(&w))
        for (size_t j = 0; j < w.inner; j++) {
            double x = ld(pa, a->dtype, at(&w, 1, j)), y = ld(pb, b->dtype, at(&w, 2, j));
            st(po, out->dtype, at(&w, 0, j), binary_fn(fn, x, y, s0, s1));
        }
    return DLCA_OK;
}

/* ---- reductions: accumulate into a dense double buffer shaped like out ---- */

/* Walks a alongside acc, whose strides are dense over out's shape and 0 on reduced dims. */
static void walk_reduce(walk *w, const tn_tensor *out, const tn_tensor *a)
{
    ptrdiff_t acc_stride[TN_MAX_DIMS], dense = 1, zero = 0;
    for (int d = out->ndim - 1; d >= 0; d--) {
        acc_stride[d] = out->shape[d] == 1 ? 0 : dense;
        dense *= (ptrdiff_t)out->shape[d];
    }
    const ptrdiff_t *stride[2] = {a->stride, acc_stride};
    const ptrdiff_t offset[2] = {(ptrdiff_t)a->offset, zero};
    walk_init(w, a->ndim, a->shape, 2, stride, offset);
}

/* Writes dense C-order values into out's layout. */
static void store_dense(tn_tensor *out, const double *src)
{
    walk w;
    size_t i = 0;
    void *po = out->storage->data;
    walk_tensors(&w, out->ndim, out->shape, 1, (const tn_tensor *[]){out});
    for (size_t r = 0; r < w.rows; r++, walk_next(&w))
        for (size_t j = 0; j < w.inner; j++) st(po, out->dtype, at(&w, 0, j), src[i++]);
}

static int cpu_reduce_sum(tn_tensor *out, const tn_tensor *a)
{
    size_t n = tn__numel(out->ndim, out->shape);
    double *acc = calloc(n ? n : 1, sizeof *acc);
    const void *pa = a->storage->data;
    walk w;
    if (!acc) return err_set(DLCA_ERR_NOMEM, "sum: out of memory");
    walk_reduce(&w, out, a);
    for (size_t r = 0; r < w.rows; r++, walk_next(&w))
        for (size_t j = 0; j < w.inner; j++) acc[at(&w, 1, j)] += ld(pa, a->dtype, at(&w, 0, j));
    store_dense(out, acc);
    free(acc);
    return DLCA_OK;
}

static int cpu_reduce_max(tn_tensor *out, int64_t *arg, const tn_tensor *a)
{
    size_t n = tn__numel(out->ndim, out->shape), logical = 0;
    double *best = malloc((n ? n : 1) * sizeof *best);
    const void *pa = a->storage->data;
    walk w;
    if (!best) return err_set(DLCA_ERR_NOMEM, "max: out of memory");
    for (size_t i = 0; i < n; i++) arg[i] = -1;
    walk_reduce(&w, out, a);
    for (size_t r = 0; r < w.rows; r++, walk_next(&w))
        for (size_t j = 0; j < w.inner; j++, logical++) {
            ptrdiff_t k = at(&w, 1, j);
            double v = ld(pa, a->dtype, at(&w, 0, j));
            /* strict > keeps the first maximum, which gets the whole gradient */
            if (arg[k] < 0 || v > best[k]) {
                best[k] = v;
                arg[k] = (int64_t)logical;
            }
        }
    store_dense(out, best);
    free(best);
    return DLCA_OK;
}

/* ---- matmul ---- */

/* y += alpha x. Unrolled by four so -O2 (no loop vectorizer) still packs it into SIMD pairs. */
static void axpy(size_t m, double alpha, const double *restrict x, double *restrict y)
{
    size_t j = 0;
    for (; j + 4 <= m; j += 4) {
        y[j] += alpha * x[j];
        y[j + 1] += alpha * x[j + 1];
        y[j + 2] += alpha * x[j + 2];
        y[j + 3] += alpha * x[j + 3];
    }
    for (; j < m; j++) y[j] += alpha * x[j];
}

typedef struct {
    size_t n, k, m;
    ptrdiff_t sa[2], sb[2], so[2]; /* row/column strides of the last two dims */
} mm_dims;

/* One batch element: packs b into a dense double [k][m] block (skipped when the previous
 * batch element used the same b, as with a broadcast weight) and runs rows of a against it. */
static void matmul_one(const mm_dims *d, tn_tensor *out, ptrdiff_t ob, const tn_tensor *a, ptrdiff_t ab,
                       const tn_tensor *b, ptrdiff_t bb, double *bp, ptrdiff_t *packed, double *acc)
{
    const void *pa = a->storage->data, *pb = b->storage->data;
    void *po = out->storage->data;
    if (*packed != bb) {
        for (size_t p = 0; p < d->k; p++)
            for (size_t j = 0; j < d->m; j++)
                bp[p * d->m + j] = ld(pb, b->dtype, bb + (ptrdiff_t)p * d->sb[0] + (ptrdiff_t)j * d->sb[1]);
        *packed = bb;
    }
    for (size_t i = 0; i < d->n; i++) {
        memset(acc, 0, d->m * sizeof *acc);
        for (size_t p = 0; p < d->k; p++)
            axpy(d->m, ld(pa, a->dtype, ab + (ptrdiff_t)i * d->sa[0] + (ptrdiff_t)p * d->sa[1]), bp + p * d->m, acc);
        for (size_t j = 0; j < d->m; j++) st(po, out->dtype, ob + (ptrdiff_t)i * d->so[0] + (ptrdiff_t)j * d->so[1], acc[j]);
    }
}

static int cpu_matmul(tn_tensor *out, const tn_tensor *a, const tn_tensor *b)
{
    int nd = out->ndim;
    mm_dims d = {out->shape[nd - 2], a->shape[nd - 1], out->shape[nd - 1],
                 {a->stride[nd - 2], a->stride[nd - 1]}, {b->stride[nd - 2], b->stride[nd - 1]},
                 {out->stride[nd - 2], out->stride[nd - 1]}};
    double *bp = malloc((d.k * d.m + d.m + 1) * sizeof *bp);
    ptrdiff_t packed = -1;
    walk w;
    if (!bp) return err_set(DLCA_ERR_NOMEM, "matmul: out of memory");
    /* batch dims only: each walker position is one batch element */
    walk_tensors(&w, nd - 2, out->shape, 3, (const tn_tensor *[]){out, a, b});
    for (size_t r = 0; r < w.rows; r++, walk_next(&w))
        for (size_t j = 0; j < w.inner; j++)
            matmul_one(&d, out, at(&w, 0, j), a, at(&w, 1, j), b, at(&w, 2, j), bp, &packed, bp + d.k * d.m);
    free(bp);
    return DLCA_OK;
}

/* ---- softmax: each line along `dim` on its own ---- */

/* Walks every line start: the shape with extent 1 on dim. */
static size_t walk_lines(walk *w, int dim, int nop, const tn_tensor *const *t)
{
    size_t shape[TN_MAX_DIMS];
    memcpy(shape, t[0]->shape, sizeof shape);
    size_t len = shape[dim];
    shape[dim] = 1;
    walk_tensors(w, t[0]->ndim, shape, nop, t);
    return len;
}

static int cpu_softmax(int log_out, int dim, tn_tensor *out, const tn_tensor *a)
{
    walk w;
    size_t len = walk_lines(&w, dim, 2, (const tn_tensor *[]){out, a});
    ptrdiff_t so = out->stride[dim], sa = a->stride[dim];
    const void *pa = a->storage->data;
    void *po = out->storage->data;
    for (size_t r = 0; r < w.rows; r++, walk_next(&w))
        for (size_t j = 0; j < w.inner && len; j++) {
            ptrdiff_t o = at(&w, 0, j), i = at(&w, 1, j);
            double mx = ld(pa, a->dtype, i), sum = 0.0;
            for (size_t t = 1; t < len; t++) mx = fmax(mx, ld(pa, a->dtype, i + (ptrdiff_t)t * sa));
            /* shifting by the max keeps every exp in (0, 1] */
            for (size_t t = 0; t < len; t++) sum += exp(ld(pa, a->dtype, i + (ptrdiff_t)t * sa) - mx);
            double lse = log(sum);
            for (size_t t = 0; t < len; t++) {
                double x = ld(pa, a->dtype, i + (ptrdiff_t)t * sa) - mx;
                st(po, out->dtype, o + (ptrdiff_t)t * so, log_out ? x - lse : exp(x) / sum);
            }
        }
    return DLCA_OK;
}

/* softmax: gin = y (g - sum(g y)); log_softmax: gin = g - exp(y) sum(g) */
static int cpu_softmax_bwd(int log_out, int dim, tn_tensor *gin, const tn_tensor *y, const tn_tensor *g)
{
    walk w;
    size_t len = walk_lines(&w, dim, 3, (const tn_tensor *[]){gin, y, g});
    ptrdiff_t si = gin->stride[dim], sy = y->stride[dim], sg = g->stride[dim];
    const void *py = y->storage->data, *pg = g->storage->data;
    void *pi = gin->storage->data;
    for (size_t r = 0; r < w.rows; r++, walk_next(&w))
        for (size_t j = 0; j < w.inner; j++) {
            ptrdiff_t oi = at(&w, 0, j), oy = at(&w, 1, j), og = at(&w, 2, j);
            double dot = 0.0;
            for (size_t t = 0; t < len; t++) {
                double gv = ld(pg, g->dtype, og + (ptrdiff_t)t * sg);
                dot += log_out ? gv : gv * ld(py, y->dtype, oy + (ptrdiff_t)t * sy);
            }
            for (size_t t = 0; t < len; t++) {
                double gv = ld(pg, g->dtype, og + (ptrdiff_t)t * sg), yv = ld(py, y->dtype, oy + (ptrdiff_t)t * sy);
                st(pi, gin->dtype, oi + (ptrdiff_t)t * si, log_out ? gv - exp(yv) * dot : yv * (gv - dot));
            }
        }
    return DLCA_OK;
}

/* ---- indexing on dense tensors ---- */

static int cpu_take(tn_tensor *out, const tn_tensor *a, const int64_t *idx)
{
    size_t n = tn__numel(out->ndim, out->shape);
    const void *pa = a->storage->data;
    void *po = out->storage->data;
    for (size_t p = 0; p < n; p++)
        st(po, out->dtype, (ptrdiff_t)(out->offset + p), ld(pa, a->dtype, (ptrdiff_t)a->offset + idx[p]));
    return DLCA_OK;
}

static int cpu_put_add(tn_tensor *dst, const tn_tensor *src, const int64_t *idx)
{
    size_t n = tn__numel(src->ndim, src->shape);
    const void *ps = src->storage->data;
    void *pd = dst->storage->data;
    for (size_t p = 0; p < n; p++) {
        ptrdiff_t k = (ptrdiff_t)dst->offset + idx[p];
        st(pd, dst->dtype, k, ld(pd, dst->dtype, k) + ld(ps, src->dtype, (ptrdiff_t)(src->offset + p)));
    }
    return DLCA_OK;
}

const tn_backend tn_cpu_backend = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .release = cpu_release,
    .grow = cpu_grow,
    .upload = cpu_upload,
    .download = cpu_download,
    .fill = cpu_fill,
    .unary = cpu_unary,
    .binary = cpu_binary,
    .reduce_sum = cpu_reduce_sum,
    .reduce_max = cpu_reduce_max,
    .matmul = cpu_matmul,
    .softmax = cpu_softmax,
    .softmax_bwd = cpu_softmax_bwd,
    .take = cpu_take,
    .put_add = cpu_put_add,
    .softmax_matmul = tn__cpu_softmax_matmul,
    .softmax_matmul_bwd = tn__cpu_softmax_matmul_bwd,
    .argmax_onehot = tn__cpu_argmax_onehot,
    .sse = tn__cpu_sse,
    .sse_bwd = tn__cpu_sse_bwd,
    .noise = tn__cpu_noise,
    .optim_step = tn__cpu_optim_step,
    .optim_state_init = tn__cpu_optim_state_init,
    .optim_status = tn__cpu_optim_status,
    .optim_free = NULL, /* the state tensors are all there is */
    .clip_norm = tn__cpu_clip_norm,
};
