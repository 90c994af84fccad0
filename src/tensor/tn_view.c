/* tn_view.c: differentiable views that share storage (reshape, transpose/permute, slice,
 * select, expand) and contiguous/detach. Each op has a "raw" part that only computes the
 * view, reused by its backward to address the same elements of a gradient buffer. */
#include "tn_internal.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* Scatters g into zeros shaped like in, at the elements that `view` picks from in. */
typedef tn_tensor *(*view_fn)(tn_tensor *base, const tn_node *n);

static int scatter_into_zeros(const tn_node *n, tn_tensor *g, view_fn view, tn_tensor **gin)
{
    tn_tensor *in = n->in[0];
    tn_tensor *z = tn__zeros_like(in, in->ndim, in->shape);
    tn_tensor *v = z ? view(z, n) : NULL;
    int status = v ? tn__backend_of(z)->unary(TN_U_COPY, 0, 0, v, g) : DLCA_ERR;
    tn_free(v);
    if (status != DLCA_OK) {
        tn_free(z);
        return status;
    }
    gin[0] = z;
    return DLCA_OK;
}

/* ---- reshape ---- */

static int reshape_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    gin[0] = tn_reshape(g, n->in[0]->ndim, n->in[0]->shape);
    return gin[0] ? DLCA_OK : DLCA_ERR;
}

/* Copies shape into out, replacing one TN_INFER extent so the element count stays numel. */
static int resolve_shape(const tn_tensor *t, int ndim, const size_t *shape, size_t *out)
{
    char a[96], b[96];
    int infer = -1;
    size_t known = 1, numel = tn_numel(t);
    if (ndim < 0 || ndim > TN_MAX_DIMS) return err_set(DLCA_ERR, "reshape: %d dims (at most %d)", ndim, TN_MAX_DIMS);
    for (int d = 0; d < ndim; d++) {
        out[d] = shape[d];
        if (shape[d] != TN_INFER) known *= shape[d];
        else if (infer >= 0) return err_set(DLCA_ERR, "reshape: more than one TN_INFER extent");
        else infer = d;
    }
    if (infer >= 0) out[infer] = known ? numel / known : 0;
    if (tn__numel(ndim, out) != numel)
        return err_set(DLCA_ERR, "reshape: cannot view %s (%zu elements) as %s", tn_shape_str(t, a, sizeof a),
                       numel, tn__shape_text(ndim, out, b, sizeof b));
    return DLCA_OK;
}

tn_tensor *tn_reshape(tn_tensor *t, int ndim, const size_t *shape)
{
    size_t s[TN_MAX_DIMS];
    ptrdiff_t st[TN_MAX_DIMS], stride = 1;
    if (!t) return tn__null("reshape"), NULL;
    if (resolve_shape(t, ndim, shape, s) != DLCA_OK) return NULL;
    /* a dense C-order block can take any shape; anything else is copied first */
    tn_tensor *base = tn_is_contiguous(t) ? tn_retain(t) : tn__unary("reshape", TN_U_COPY, 0, 0, t);
    if (!base) return NULL;
    for (int d = ndim - 1; d >= 0; d--) {
        st[d] = stride;
        stride *= (ptrdiff_t)s[d];
    }
    tn_tensor *y = tn__view(base, ndim, s, st, base->offset);
    tn_free(base);
    return tn__record(y, &(tn_node){.op = "reshape", .backward = reshape_bwd, .n_in = 1, .in = {t}});
}

/* ---- permute / transpose ---- */

static tn_tensor *permute_raw(tn_tensor *t, const int *perm)
{
    size_t s[TN_MAX_DIMS];
    ptrdiff_t st[TN_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        s[d] = t->shape[perm[d]];
        st[d] = t->stride[perm[d]];
    }
    return tn__view(t, t->ndim, s, st, t->offset);
}

static int permute_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    int inverse[TN_MAX_DIMS];
    for (int d = 0; d < out->ndim; d++) inverse[n->iarg[d]] = d;
    gin[0] = permute_raw(g, inverse);
    return gin[0] ? DLCA_OK : DLCA_ERR;
}

tn_tensor *tn_permute(tn_tensor *t, const int *perm)
{
    tn_node proto = {.op = "permute", .backward = permute_bwd, .n_in = 1, .in = {t}};
    int seen[TN_MAX_DIMS] = {0};
    if (!t) return tn__null("permute"), NULL;
    for (int d = 0; d < t->ndim; d++) {
        int p = tn__norm_dim("permute", perm[d], t->ndim);
        if (p < 0) return NULL;
        if (seen[p]++) return err_set(DLCA_ERR, "permute: dim %d appears twice", p), NULL;
        proto.iarg[d] = p;
    }
    return tn__record(permute_raw(t, proto.iarg), &proto);
}

tn_tensor *tn_transpose(tn_tensor *t, int dim0, int dim1)
{
    int perm[TN_MAX_DIMS];
    if (!t) return tn__null("transpose"), NULL;
    int a = tn__norm_dim("transpose", dim0, t->ndim), b = a < 0 ? -1 : tn__norm_dim("transpose", dim1, t->ndim);
    if (b < 0) return NULL;
    for (int d = 0; d < t->ndim; d++) perm[d] = d == a ? b : d == b ? a : d;
    return tn_permute(t, perm);
}

/* ---- slice / select ---- */

/* iarg = {dim, start, stop, step} (checked by the caller); sizes fit int by the range check */
static tn_tensor *slice_raw(tn_tensor *t, const tn_node *n)
{
    int dim = n->iarg[0];
    size_t start = (size_t)n->iarg[1], stop = (size_t)n->iarg[2], step = (size_t)n->iarg[3];
    size_t s[TN_MAX_DIMS];
    ptrdiff_t st[TN_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        s[d] = t->shape[d];
        st[d] = t->stride[d];
    }
    s[dim] = (stop - start + step - 1) / step;
    st[dim] = t->stride[dim] * (ptrdiff_t)step;
    return tn__view(t, t->ndim, s, st, (size_t)((ptrdiff_t)t->offset + (ptrdiff_t)start * t->stride[dim]));
}

static int slice_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    return scatter_into_zeros(n, g, slice_raw, gin);
}

static int slice_args(const char *op, tn_tensor *t, int dim, size_t start, size_t stop, size_t step, tn_node *n)
{
    int d = tn__norm_dim(op, dim, t->ndim);
    if (d < 0) return DLCA_ERR;
    if (step < 1 || start > stop || stop > t->shape[d] || stop > 0x7fffffff || step > 0x7fffffff)
        return err_set(DLCA_ERR, "%s: range [%zu, %zu) step %zu invalid for dim %d of extent %zu", op, start, stop,
                       step, d, t->shape[d]);
    n->iarg[0] = d;
    n->iarg[1] = (int)start;
    n->iarg[2] = (int)stop;
    n->iarg[3] = (int)step;
    return DLCA_OK;
}

tn_tensor *tn_slice(tn_tensor *t, int dim, size_t start, size_t stop, size_t step)
{
    tn_node proto = {.op = "slice", .backward = slice_bwd, .n_in = 1, .in = {t}};
    if (!t) return tn__null("slice"), NULL;
    if (slice_args("slice", t, dim, start, stop, step, &proto) != DLCA_OK) return NULL;
    return tn__record(slice_raw(t, &proto), &proto);
}

/* slice_raw of one element, then the sliced dim dropped */
static tn_tensor *select_raw(tn_tensor *t, const tn_node *n)
{
    tn_tensor *s = slice_raw(t, n);
    if (!s) return NULL;
    for (int d = n->iarg[0]; d + 1 < s->ndim; d++) {
        s->shape[d] = s->shape[d + 1];
        s->stride[d] = s->stride[d + 1];
    }
    s->ndim--;
    return s;
}

static int select_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    return scatter_into_zeros(n, g, select_raw, gin);
}

tn_tensor *tn_select(tn_tensor *t, int dim, size_t index)
{
    tn_node proto = {.op = "select", .backward = select_bwd, .n_in = 1, .in = {t}};
    if (!t) return tn__null("select"), NULL;
    if (t->ndim == 0) return err_set(DLCA_ERR, "select: tensor is 0-d"), NULL;
    int d = tn__norm_dim("select", dim, t->ndim);
    if (d < 0) return NULL;
    if (index >= t->shape[d])
        return err_set(DLCA_ERR, "select: index %zu out of range for dim %d of extent %zu", index, d, t->shape[d]), NULL;
    if (slice_args("select", t, d, index, index + 1, 1, &proto) != DLCA_OK) return NULL;
    return tn__record(select_raw(t, &proto), &proto);
}

/* ---- expand ---- */

static int expand_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    gin[0] = tn__sum_to(g, n->in[0]->ndim, n->in[0]->shape);
    return gin[0] ? DLCA_OK : DLCA_ERR;
}

tn_tensor *tn_expand(tn_tensor *t, int ndim, const size_t *shape)
{
    size_t s[TN_MAX_DIMS];
    int ns;
    char a[96], b[96];
    if (!t) return tn__null("expand"), NULL;
    /* t broadcasts to shape exactly when broadcasting the two gives shape back */
    if (ndim < t->ndim || ndim > TN_MAX_DIMS || tn_broadcast_shape(t->ndim, t->shape, ndim, shape, &ns, s) != DLCA_OK ||
        memcmp(s, shape, sizeof(size_t) * (size_t)ndim) != 0)
        return err_set(DLCA_ERR, "expand: cannot broadcast %s to %s", tn_shape_str(t, a, sizeof a),
                       tn__shape_text(ndim, shape, b, sizeof b)), NULL;
    tn_tensor v;
    tn__expanded(&v, t, ndim, shape);
    tn_tensor *y = tn__view(t, ndim, shape, v.stride, t->offset);
    return tn__record(y, &(tn_node){.op = "expand", .backward = expand_bwd, .n_in = 1, .in = {t}});
}

/* ---- contiguous / detach ---- */

static int identity_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    gin[0] = tn_retain(g);
    return DLCA_OK;
}

tn_tensor *tn_contiguous(tn_tensor *t)
{
    if (!t) return tn__null("contiguous"), NULL;
    if (tn_is_contiguous(t)) return tn_retain(t);
    tn_tensor *y = tn__unary("contiguous", TN_U_COPY, 0, 0, t);
    return tn__record(y, &(tn_node){.op = "contiguous", .backward = identity_bwd, .n_in = 1, .in = {t}});
}

tn_tensor *tn_detach(tn_tensor *t)
{
    if (!t) return tn__null("detach"), NULL;
    return tn__view(t, t->ndim, t->shape, t->stride, t->offset);
}
