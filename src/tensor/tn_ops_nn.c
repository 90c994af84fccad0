/* tn_ops_nn.c: reductions (sum, mean, max), matmul, softmax / log_softmax and indexing
 * (gather, index_select) with their backward passes. Reductions keep the reduced dims as
 * extent 1 inside (the kernels' contract) and drop them with a view when keepdim is 0. */
#include "tn_internal.h"
#include "tn_ops.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* ---- reductions ---- */

/* a reduced over the dims with mask[d] != 0, keeping them as extent 1. For max, *arg gets
 * the argmax list (caller frees). */
static tn_tensor *reduce_keep(const char *op, tn_tensor *a, const int *mask, int is_max, int64_t **arg)
{
    size_t shape[TN_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++) {
        if (is_max && mask[d] && a->shape[d] == 0) return err_set(DLCA_ERR, "%s: reducing an empty dim", op), NULL;
        shape[d] = mask[d] ? 1 : a->shape[d];
    }
    const tn_backend *be = tn__backend_of(a);
    tn_tensor *y = tn__empty_like(a, a->ndim, shape);
    if (!y) return NULL;
    int status;
    if (is_max) {
        *arg = malloc((tn_numel(y) ? tn_numel(y) : 1) * sizeof **arg);
        status = *arg ? be->reduce_max(y, *arg, a) : err_set(DLCA_ERR_NOMEM, "%s: out of memory", op);
    } else {
        status = be->reduce_sum(y, a);
    }
    if (status != DLCA_OK) {
        tn_free(y);
        if (is_max) free(*arg);
        return NULL;
    }
    return y;
}

/* y (dense, keepdim shape) without the masked dims, as a view. */
static tn_tensor *squeeze_raw(tn_tensor *y, const int *mask)
{
    size_t shape[TN_MAX_DIMS];
    ptrdiff_t stride[TN_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < y->ndim; d++) {
        if (mask[d]) continue;
        shape[nd] = y->shape[d];
        stride[nd++] = y->stride[d];
    }
    return tn__view(y, nd, shape, stride, y->offset);
}

tn_tensor *tn__sum_to(tn_tensor *g, int ndim, const size_t *shape)
{
    int mask[TN_MAX_DIMS] = {0}, any = 0, lead = g->ndim - ndim;
    for (int d = 0; d < g->ndim; d++) {
        mask[d] = d < lead || (shape[d - lead] == 1 && g->shape[d] != 1);
        any |= mask[d];
    }
    if (!any) return tn_retain(g);
    tn_tensor *keep = reduce_keep("sum_to", g, mask, 0, NULL);
    if (!keep) return NULL;
    /* dense, so the target shape is a plain view */
    tn_tensor *y = tn_reshape(keep, ndim, shape);
    tn_free(keep);
    return y;
}

/* Gradient of sum/mean: g broadcast back over the reduced dims, times darg[0]. */
static int sum_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    tn_tensor *in = n->in[0], keep = *g;
    if (g->ndim != in->ndim) { /* keepdim was 0: put the reduced dims back as extent 1 */
        for (int d = 0, src = 0; d < in->ndim; d++) {
            keep.shape[d] = n->iarg[d] ? 1 : g->shape[src];
            keep.stride[d] = n->iarg[d] ? 0 : g->stride[src++];
        }
        keep.ndim = in->ndim;
    }
    tn_tensor wide;
    tn__expanded(&wide, &keep, in->ndim, in->shape);
    gin[0] = n->darg[0] == 1.0 ? tn__view(g, in->ndim, in->shape, wide.stride, g->offset)
                               : tn__unary("mean", TN_U_MULS, n->darg[0], 0, &wide);
    return gin[0] ? DLCA_OK : DLCA_ERR;
}

/* Gradient of max: g to the recorded argmax positions, zero elsewhere. */
static int max_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    tn_tensor *in = n->in[0];
    tn_tensor *z = tn__zeros_like(in, in->ndim, in->shape);
    tn_tensor *gc = tn_contiguous(g);
    int status = z && gc ? tn__backend_of(z)->put_add(z, gc, n->idx) : DLCA_ERR;
    tn_free(gc);
    if (status != DLCA_OK) {
        tn_free(z);
        return DLCA_ERR;
    }
    gin[0] = z;
    return DLCA_OK;
}

/* kind: 0 sum, 1 mean, 2 max; dim < 0 with all != 0 reduces every dim. */
static tn_tensor *reduce_op(const char *op, int kind, tn_tensor *a, int all, int dim, int keepdim)
{
    tn_node proto = {.op = op, .backward = kind == 2 ? max_bwd : sum_bwd, .n_in = 1, .in = {a}, .darg = {1.0}};
    if (!a) return tn__null(op), NULL;
    int d = all ? -1 : tn__norm_dim(op, dim, a->ndim);
    if (!all && d < 0) return NULL;
    size_t count = 1;
    for (int e = 0; e < a->ndim; e++) {
        proto.iarg[e] = all || e == d;
        if (proto.iarg[e]) count *= a->shape[e];
    }
    if (kind == 1) proto.darg[0] = 1.0 / (double)count;
    tn_tensor *y = reduce_keep(op, a, proto.iarg, kind == 2, &proto.idx);
    if (y && kind == 1 && tn__backend_of(y)->unary(TN_U_MULS, proto.darg[0], 0, y, y) != DLCA_OK) {
        tn_free(y);
        y = NULL;
    }
    if (!y) return NULL;
    proto.n_idx = kind == 2 ? tn_numel(y) : 0;
    if (!keepdim) {
        tn_tensor *s = squeeze_raw(y, proto.iarg);
        tn_free(y);
        y = s;
    }
    return tn__record(y, &proto);
}

tn_tensor *tn_sum(tn_tensor *a) { return reduce_op("sum", 0, a, 1, 0, 0); }
tn_tensor *tn_sum_dim(tn_tensor *a, int dim, int keepdim) { return reduce_op("sum", 0, a, 0, dim, keepdim); }
tn_tensor *tn_mean(tn_tensor *a) { return reduce_op("mean", 1, a, 1, 0, 0); }
tn_tensor *tn_mean_dim(tn_tensor *a, int dim, int keepdim) { return reduce_op("mean", 1, a, 0, dim, keepdim); }
tn_tensor *tn_max(tn_tensor *a) { return reduce_op("max", 2, a, 1, 0, 0); }
tn_tensor *tn_max_dim(tn_tensor *a, int dim, int keepdim) { return reduce_op("max", 2, a, 0, dim, keepdim); }

int tn_argmax_dim(tn_tensor *a, int dim, int64_t *out)
{
    int mask[TN_MAX_DIMS] = {0};
    int64_t *arg = NULL;
    if (!a) return tn__null("argmax");
    int d = tn__norm_dim("argmax", dim, a->ndim);
    if (d < 0) return DLCA_ERR;
    mask[d] = 1;
    tn_tensor *y = reduce_keep("argmax", a, mask, 1, &arg);
    if (!y) return DLCA_ERR;
    size_t inner = tn__numel(a->ndim - d - 1, a->shape + d + 1), n = tn_numel(y);
    /* arg is a C-order index into a; its coordinate along d is what the caller wants */
    for (size_t i = 0; i < n; i++) out[i] = (int64_t)(((size_t)arg[i] / inner) % a->shape[d]);
    free(arg);
    tn_free(y);
    return DLCA_OK;
}

/* ---- matmul ---- */

static int matmul_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    for (int i = 0; i < 2; i++) {
        if (!n->in[i]->requires_grad) continue;
        /* da = g b^T, db = a^T g, then summed over broadcast batch dims */
        tn_tensor *other = tn_transpose(n->in[1 - i], -1, -2);
        tn_tensor *p = i == 0 ? tn_matmul(g, other) : tn_matmul(other, g);
        tn_free(other);
        gin[i] = p ? tn__sum_to(p, n->in[i]->ndim, n->in[i]->shape) : NULL;
        tn_free(p);
        if (!gin[i]) return DLCA_ERR;
    }
    return DLCA_OK;
}

static tn_tensor *matmul_nd(tn_tensor *a, tn_tensor *b)
{
    char sa[96], sb[96];
    size_t shape[TN_MAX_DIMS], ashape[TN_MAX_DIMS], bshape[TN_MAX_DIMS];
    int nb, na = a->ndim, nbb = b->ndim;
    size_t n = a->shape[na - 2], k = a->shape[na - 1], m = b->shape[nbb - 1];
    if (b->shape[nbb - 2] != k ||
        tn_broadcast_shape(na - 2, a->shape, nbb - 2, b->shape, &nb, shape) != DLCA_OK || nb + 2 > TN_MAX_DIMS)
        return err_set(DLCA_ERR, "matmul: shapes %s and %s do not match", tn_shape_str(a, sa, sizeof sa),
                       tn_shape_str(b, sb, sizeof sb)), NULL;
    memcpy(ashape, shape, sizeof(size_t) * (size_t)nb);
    memcpy(bshape, shape, sizeof(size_t) * (size_t)nb);
    ashape[nb] = n, ashape[nb + 1] = k;
    bshape[nb] = k, bshape[nb + 1] = m;
    shape[nb] = n, shape[nb + 1] = m;
    const tn_backend *be = tn__backend_of(a);
    tn_tensor *y = tn__empty_like(a, nb + 2, shape);
    tn_tensor av, bv;
    tn__expanded(&av, a, nb + 2, ashape);
    tn__expanded(&bv, b, nb + 2, bshape);
    if (y && be->matmul(y, &av, &bv) != DLCA_OK) {
        tn_free(y);
        y = NULL;
    }
    return tn__record(y, &(tn_node){.op = "matmul", .backward = matmul_bwd, .n_in = 2, .in = {a, b}});
}

/* NumPy's rule for vectors: promote to a matrix, multiply, drop the added dim. */
static tn_tensor *matmul_vec(tn_tensor *a, tn_tensor *b)
{
    size_t sa[2] = {1, a->shape[0]}, sb[2] = {b->shape[0], 1}, shape[TN_MAX_DIMS];
    tn_tensor *a2 = a->ndim == 1 ? tn_reshape(a, 2, sa) : tn_retain(a);
    tn_tensor *b2 = b->ndim == 1 ? tn_reshape(b, 2, sb) : tn_retain(b);
    tn_tensor *y = a2 && b2 ? matmul_nd(a2, b2) : NULL;
    tn_free(a2);
    tn_free(b2);
    if (!y) return NULL;
    int nd = 0;
    for (int d = 0; d < y->ndim; d++) {
        if ((a->ndim == 1 && d == y->ndim - 2) || (b->ndim == 1 && d == y->ndim - 1)) continue;
        shape[nd++] = y->shape[d];
    }
    tn_tensor *r = tn_reshape(y, nd, shape);
    tn_free(y);
    return r;
}

tn_tensor *tn_matmul(tn_tensor *a, tn_tensor *b)
{
    if (!a || !b) return tn__null("matmul"), NULL;
    if (tn__check_pair("matmul", a, b) != DLCA_OK) return NULL;
    if (a->ndim == 0 || b->ndim == 0) return err_set(DLCA_ERR, "matmul: 0-d operand; use tn_mul"), NULL;
    if (a->ndim == 1 || b->ndim == 1) return matmul_vec(a, b);
    return matmul_nd(a, b);
}

/* ---- softmax ---- */

/* iarg = {dim, log} */
static int softmax_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    tn_tensor *z = tn__empty_like(out, out->ndim, out->shape);
    if (z && tn__backend_of(z)->softmax_bwd(n->iarg[1], n->iarg[0], z, out, g) != DLCA_OK) {
        tn_free(z);
        z = NULL;
    }
    gin[0] = z;
    return z ? DLCA_OK : DLCA_ERR;
}

static tn_tensor *softmax_op(const char *op, tn_tensor *a, int dim, int log)
{
    if (!a) return tn__null(op), NULL;
    int d = tn__norm_dim(op, dim, a->ndim);
    if (d < 0) return NULL;
    const tn_backend *be = tn__backend_of(a);
    tn_tensor *y = tn__empty_like(a, a->ndim, a->shape);
    if (y && be->softmax(log, d, y, a) != DLCA_OK) {
        tn_free(y);
        y = NULL;
    }
    return tn__record(y, &(tn_node){.op = op, .backward = softmax_bwd, .n_in = 1, .in = {a}, .iarg = {d, log}});
}

tn_tensor *tn_softmax(tn_tensor *a, int dim) { return softmax_op("softmax", a, dim, 0); }
tn_tensor *tn_log_softmax(tn_tensor *a, int dim) { return softmax_op("log_softmax", a, dim, 1); }

/* ---- gather / index_select ---- */

static int take_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    return max_bwd(n, out, g, gin); /* same scatter: g into zeros at the recorded indices */
}

/* For each element of the output shape (C order), the C-order index into a of the element it
 * reads: the output's coordinates with the one along `dim` replaced by index[...]. With
 * per_element the index list has one entry per output element, else one per position on dim. */
static int64_t *flat_indices(const char *op, const tn_tensor *a, int dim, const size_t *oshape,
                             const int64_t *index, int per_element)
{
    size_t n = tn__numel(a->ndim, oshape), coord[TN_MAX_DIMS] = {0}, cstride[TN_MAX_DIMS];
    int64_t *flat = malloc((n ? n : 1) * sizeof *flat);
    if (!flat) return err_set(DLCA_ERR_NOMEM, "%s: out of memory", op), NULL;
    for (int d = 0; d < a->ndim; d++) cstride[d] = tn__numel(a->ndim - d - 1, a->shape + d + 1);
    for (size_t p = 0; p < n; p++) {
        int64_t ix = index[per_element ? p : coord[dim]];
        if (ix < 0 || (size_t)ix >= a->shape[dim]) {
            free(flat);
            return err_set(DLCA_ERR, "%s: index %lld out of range for dim %d of extent %zu", op, (long long)ix, dim,
                           a->shape[dim]), NULL;
        }
        size_t off = 0;
        for (int d = 0; d < a->ndim; d++) off += (d == dim ? (size_t)ix : coord[d]) * cstride[d];
        flat[p] = (int64_t)off;
        for (int d = a->ndim - 1; d >= 0 && ++coord[d] == oshape[d]; d--) coord[d] = 0;
    }
    return flat;
}

static tn_tensor *take_op(const char *op, tn_tensor *a, const size_t *oshape, int64_t *flat)
{
    tn_node proto = {.op = op, .backward = take_bwd, .n_in = 1, .in = {a}, .idx = flat};
    proto.n_idx = tn__numel(a->ndim, oshape);
    const tn_backend *be = tn__backend_of(a);
    tn_tensor *ac = tn_contiguous(a);
    tn_tensor *y = ac ? tn__empty_like(a, a->ndim, oshape) : NULL;
    if (y && be->take(y, ac, flat) != DLCA_OK) {
        tn_free(y);
        y = NULL;
    }
    tn_free(ac);
    return tn__record(y, &proto);
}

tn_tensor *tn_gather(tn_tensor *a, int dim, const int64_t *index, const size_t *index_shape)
{
    char sa[96], si[96];
    if (!a) return tn__null("gather"), NULL;
    int d = tn__norm_dim("gather", dim, a->ndim);
    if (d < 0) return NULL;
    for (int e = 0; e < a->ndim; e++)
        if (e != d && index_shape[e] != a->shape[e])
            return err_set(DLCA_ERR, "gather: index shape %s must match %s except along dim %d",
                           tn__shape_text(a->ndim, index_shape, si, sizeof si), tn_shape_str(a, sa, sizeof sa), d), NULL;
    int64_t *flat = flat_indices("gather", a, d, index_shape, index, 1);
    return flat ? take_op("gather", a, index_shape, flat) : NULL;
}

tn_tensor *tn_index_select(tn_tensor *a, int dim, const int64_t *index, size_t n)
{
    size_t shape[TN_MAX_DIMS];
    if (!a) return tn__null("index_select"), NULL;
    int d = tn__norm_dim("index_select", dim, a->ndim);
    if (d < 0) return NULL;
    memcpy(shape, a->shape, sizeof shape);
    shape[d] = n;
    int64_t *flat = flat_indices("index_select", a, d, shape, index, 0);
    return flat ? take_op("index_select", a, shape, flat) : NULL;
}
