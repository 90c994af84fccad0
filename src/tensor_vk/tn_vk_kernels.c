/* tn_vk_kernels.c: the Vulkan backend table: every kernel of tn_internal.h is one dispatch of a
 * glsl/tn_*.comp shader over strided views, recorded into the device's current command buffer
 * (the fused ops' kernels are in tn_vk_fused.c, the optimizer's in tn_vk_optim.c). Shapes and
 * strides reach the shader as an iterator in the arena (layout in glsl/tn_common.glsl). Dims
 * that every operand steps through as one are merged first, so the shader's index arithmetic
 * stays short. Reductions and the scatter-add are deterministic: fixed-order trees and one
 * owner per output, never float atomics. */
#include "tn_vk_internal.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(TN_U_COUNT == 13, "unary op codes are mirrored in glsl/tn_common.glsl");
_Static_assert(TN_B_COUNT == 12, "binary op codes are mirrored in glsl/tn_common.glsl");

enum {
    TN_VK_FILL = 64, /* unary op code: out = s0 */
    ITER_OPS = 3,
    ITER_WORDS = 1 + TN_MAX_DIMS + ITER_OPS * (1 + TN_MAX_DIMS),
    MATMUL_TILE = 16 /* glsl/tn_matmul.comp */
};
_Static_assert(ITER_WORDS == 36, "TN_ITER_WORDS in glsl/tn_common.glsl");

/* ---- the strided iterator ---- */

typedef struct {
    int ndim;
    size_t shape[TN_MAX_DIMS];
    ptrdiff_t stride[ITER_OPS][TN_MAX_DIMS];
    ptrdiff_t offset[ITER_OPS];
} iter;

/* An iterator over `shape` for nop operands (stride[k], offset[k]) that visits elements in C
 * order. Extent-1 dims are dropped; a dim merges into the one before it when every operand
 * steps through the pair as one (outer stride == inner stride * inner extent). */
static void iter_init(iter *it, int ndim, const size_t *shape, int nop, const ptrdiff_t *const *stride,
                      const ptrdiff_t *offset)
{
    memset(it, 0, sizeof *it);
    for (int k = 0; k < nop; k++) it->offset[k] = offset[k];
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        int n = it->ndim, merge = n > 0;
        for (int k = 0; merge && k < nop; k++) merge = it->stride[k][n - 1] == stride[k][d] * (ptrdiff_t)shape[d];
        if (merge) {
            it->shape[n - 1] *= shape[d];
        } else {
            it->shape[n] = shape[d];
            it->ndim++;
        }
        for (int k = 0; k < nop; k++) it->stride[k][it->ndim - 1] = stride[k][d];
    }
}

/* iter_init over tensors' own strides and offsets. */
static void iter_tensors(iter *it, int ndim, const size_t *shape, int nop, const tn_tensor *const *t)
{
    const ptrdiff_t *stride[ITER_OPS];
    ptrdiff_t offset[ITER_OPS];
    for (int k = 0; k < nop; k++) {
        stride[k] = t[k]->stride;
        offset[k] = (ptrdiff_t)t[k]->offset;
    }
    iter_init(it, ndim, shape, nop, stride, offset);
}

static int fits_i32(ptrdiff_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* Writes the iterator's ITER_WORDS words (see tn_common.glsl). */
static int iter_write(const iter *it, int32_t *w)
{
    memset(w, 0, ITER_WORDS * sizeof *w);
    w[0] = it->ndim;
    for (int d = 0; d < it->ndim; d++) {
        if (it->shape[d] > INT32_MAX) return err_set(DLCA_ERR, "tn: extent %zu too large for the device", it->shape[d]);
        w[1 + d] = (int32_t)it->shape[d];
    }
    for (int k = 0; k < ITER_OPS; k++) {
        int32_t *op = w + 1 + TN_MAX_DIMS + k * (1 + TN_MAX_DIMS);
        if (!fits_i32(it->offset[k])) return err_set(DLCA_ERR, "tn: offset too large for the device");
        op[0] = (int32_t)it->offset[k];
        for (int d = 0; d < it->ndim; d++) {
            if (!fits_i32(it->stride[k][d])) return err_set(DLCA_ERR, "tn: stride too large for the device");
            op[1 + d] = (int32_t)it->stride[k][d];
        }
    }
    return DLCA_OK;
}

/* The arena block of one op: `iters` iterators, then `extra` words at words[iters * ITER_WORDS]. */
static int meta_alloc(tn_vk_device *d, int iters, size_t extra, vk_view *view, int32_t **words)
{
    return tn_vk__arena(d, ((size_t)iters * ITER_WORDS + extra) * sizeof(int32_t), view, (void **)words);
}

int tn_vk__iter_meta(tn_vk_device *d, int ndim, const size_t *shape, int nop, const tn_tensor *const *t,
                     vk_view *meta)
{
    iter it;
    int32_t *w;
    iter_tensors(&it, ndim, shape, nop, t);
    int rc = meta_alloc(d, 1, 0, meta, &w);
    return rc ? rc : iter_write(&it, w);
}

/* ---- elementwise ---- */

/* out = f(a[, b]) over out's shape; a and b already have it (broadcast views). */
static int ew_dispatch(tn_vk_pipe id, uint32_t op, double s0, double s1, tn_tensor *out, const tn_tensor *a,
                       const tn_tensor *b)
{
    size_t n = tn_numel(out);
    iter it;
    vk_view meta;
    int32_t *w;
    if (n == 0) return DLCA_OK;
    if (n > UINT32_MAX) return err_set(DLCA_ERR, "tn: %zu elements in one op exceed the device's index range", n);
    tn_vk_device *d = tn_vk__dev(out->storage);
    iter_tensors(&it, out->ndim, out->shape, b ? 3 : 2, (const tn_tensor *[]){out, a, b});
    int rc = meta_alloc(d, 1, 0, &meta, &w);
    if (!rc) rc = iter_write(&it, w);
    if (rc) return rc;
    vk_push_tn_ew push = {op, (uint32_t)n, (float)s0, (float)s1};
    vk_view views[4] = {tn_vk__view(out), tn_vk__view(a), b ? tn_vk__view(b) : meta, meta};
    return tn_vk__dispatch_1d(d, id, views, b ? 4 : 3, &push, sizeof push, n);
}

static int vk_fill(tn_tensor *out, double value)
{
    return ew_dispatch(TN_VK_PIPE_UNARY, TN_VK_FILL, value, 0, out, out, NULL);
}

static int vk_unary(tn_ufn fn, double s0, double s1, tn_tensor *out, const tn_tensor *a)
{
    return ew_dispatch(TN_VK_PIPE_UNARY, (uint32_t)fn, s0, s1, out, a, NULL);
}

static int vk_binary(tn_bfn fn, double s0, double s1, tn_tensor *out, const tn_tensor *a, const tn_tensor *b)
{
    return ew_dispatch(TN_VK_PIPE_BINARY, (uint32_t)fn, s0, s1, out, a, b);
}

/* ---- reductions: one workgroup per output element ---- */

int tn_vk__reduce(int mode, tn_tensor *out, const tn_tensor *a, vk_buffer *arg)
{
    size_t n_out = tn_numel(out), n_a = tn_numel(a), n_red = n_out ? n_a / n_out : 0;
    size_t red_shape[TN_MAX_DIMS];
    ptrdiff_t dense[TN_MAX_DIMS], step = 1, zero3[ITER_OPS] = {0};
    iter kept, red;
    vk_view meta;
    int32_t *w;
    uint32_t gx, gy;
    tn_vk_device *d = tn_vk__dev(out->storage);
    if (n_out == 0) return DLCA_OK;
    if (n_red == 0) return vk_fill(out, 0.0); /* the empty sum */
    for (int dim = a->ndim - 1; dim >= 0; dim--) { /* a's C-order index, for the argmax */
        dense[dim] = step;
        step *= (ptrdiff_t)a->shape[dim];
        red_shape[dim] = out->shape[dim] == a->shape[dim] ? 1 : a->shape[dim];
    }
    const ptrdiff_t *ks[ITER_OPS] = {out->stride, a->stride, dense}, *rs[ITER_OPS] = {a->stride, dense, dense};
    iter_init(&kept, a->ndim, out->shape, 3, ks, (const ptrdiff_t[]){(ptrdiff_t)out->offset, (ptrdiff_t)a->offset, 0});
    iter_init(&red, a->ndim, red_shape, 2, rs, zero3);
    if (n_out > UINT32_MAX || n_red > UINT32_MAX) return err_set(DLCA_ERR, "tn: reduction too large for the device");
    int rc = tn_vk__groups_2d(d, n_out, &gx, &gy);
    if (!rc) rc = meta_alloc(d, 2, 0, &meta, &w);
    if (!rc) rc = iter_write(&kept, w);
    if (!rc) rc = iter_write(&red, w + ITER_WORDS);
    if (rc) return rc;
    vk_push_tn_reduce push = {(uint32_t)n_out, (uint32_t)n_red, (uint32_t)mode};
    vk_view views[4] = {tn_vk__view(out), arg ? vk_view_all(arg) : tn_vk__view(out), tn_vk__view(a), meta};
    return tn_vk__dispatch(d, TN_VK_PIPE_REDUCE, views, 4, &push, sizeof push, gx, gy, 1);
}

static int vk_reduce_sum(tn_tensor *out, const tn_tensor *a) { return tn_vk__reduce(TN_VK_REDUCE_SUM, out, a, NULL); }

/* The argmax indices are host data (the tape keeps them), so max waits for the GPU: it fails
 * while recording into a caller's command buffer (tn_argmax_onehot needs no host read). */
static int vk_reduce_max(tn_tensor *out, int64_t *arg, const tn_tensor *a)
{
    size_t n = tn_numel(out);
    tn_vk_device *d = tn_vk__dev(out->storage);
    vk_buffer *scratch = NULL;
    int rc = tn_vk__host_read(d, "max"); /* first: the scratch may grow only while idle */
    if (!rc) rc = tn_vk__host_scratch(d, n * sizeof(int32_t), &scratch);
    if (!rc) rc = tn_vk__reduce(TN_VK_REDUCE_MAX, out, a, scratch);
    if (!rc) rc = tn_vk__host_read(d, "max");
    for (size_t i = 0; !rc && i < n; i++) arg[i] = ((const int32_t *)scratch->mapped)[i];
    return rc;
}

/* ---- matmul ---- */

static int vk_matmul(tn_tensor *out, const tn_tensor *a, const tn_tensor *b)
{
    int nd = out->ndim;
    size_t n = out->shape[nd - 2], k = a->shape[nd - 1], m = out->shape[nd - 1], batch = tn__numel(nd - 2, out->shape);
    tn_vk_device *d = tn_vk__dev(out->storage);
    const uint32_t *max = d->vk->props.limits.maxComputeWorkGroupCount;
    size_t gx = (m + MATMUL_TILE - 1) / MATMUL_TILE, gy = (n + MATMUL_TILE - 1) / MATMUL_TILE;
    iter it;
    vk_view meta;
    int32_t *w;
    if (tn_numel(out) == 0) return DLCA_OK;
    if (k == 0) return vk_fill(out, 0.0); /* the empty sum */
    if (gx > max[0] || gy > max[1] || k > INT32_MAX || batch > UINT32_MAX)
        return err_set(DLCA_ERR, "matmul: [%zu,%zu] x [%zu,%zu] is too large for one dispatch", n, k, k, m);
    iter_tensors(&it, nd - 2, out->shape, 3, (const tn_tensor *[]){out, a, b});
    int rc = meta_alloc(d, 1, 6, &meta, &w);
    if (!rc) rc = iter_write(&it, w);
    const ptrdiff_t rows_cols[6] = {out->stride[nd - 2], out->stride[nd - 1], a->stride[nd - 2],
                                    a->stride[nd - 1],   b->stride[nd - 2],   b->stride[nd - 1]};
    for (int i = 0; !rc && i < 6; i++) {
        if (!fits_i32(rows_cols[i])) rc = err_set(DLCA_ERR, "matmul: stride too large for the device");
        else w[ITER_WORDS + i] = (int32_t)rows_cols[i];
    }
    if (rc) return rc;
    vk_push_tn_matmul push = {(uint32_t)n, (uint32_t)k, (uint32_t)m, (uint32_t)batch};
    vk_view views[4] = {tn_vk__view(out), tn_vk__view(a), tn_vk__view(b), meta};
    uint32_t gz = batch < max[2] ? (uint32_t)batch : max[2]; /* the shader loops over the rest */
    return tn_vk__dispatch(d, TN_VK_PIPE_MATMUL, views, 4, &push, sizeof push, (uint32_t)gx, (uint32_t)gy, gz);
}

/* ---- softmax: one workgroup per line along dim ---- */

/* mode 0/1: out = (log_)softmax(x); 2/3: out = its backward from y = x and g. */
static int softmax_dispatch(uint32_t mode, int dim, tn_tensor *out, const tn_tensor *x, const tn_tensor *g)
{
    size_t shape[TN_MAX_DIMS], len = out->shape[dim], lines = len ? tn_numel(out) / len : 0;
    iter it;
    vk_view meta;
    int32_t *w;
    uint32_t gx, gy;
    tn_vk_device *d = tn_vk__dev(out->storage);
    if (lines == 0) return DLCA_OK;
    memcpy(shape, out->shape, sizeof shape);
    shape[dim] = 1;
    iter_tensors(&it, out->ndim, shape, 3, (const tn_tensor *[]){out, x, g});
    int rc = lines > UINT32_MAX || len > UINT32_MAX ? err_set(DLCA_ERR, "softmax: too large for the device") : DLCA_OK;
    if (!rc) rc = tn_vk__groups_2d(d, lines, &gx, &gy);
    if (!rc) rc = meta_alloc(d, 1, 3, &meta, &w);
    if (!rc) rc = iter_write(&it, w);
    const tn_tensor *ops[3] = {out, x, g};
    for (int k = 0; !rc && k < 3; k++) {
        if (!fits_i32(ops[k]->stride[dim])) rc = err_set(DLCA_ERR, "softmax: stride too large for the device");
        else w[ITER_WORDS + k] = (int32_t)ops[k]->stride[dim];
    }
    if (rc) return rc;
    vk_push_tn_softmax push = {(uint32_t)lines, (uint32_t)len, mode};
    vk_view views[4] = {tn_vk__view(out), tn_vk__view(x), tn_vk__view(g), meta};
    return tn_vk__dispatch(d, TN_VK_PIPE_SOFTMAX, views, 4, &push, sizeof push, gx, gy, 1);
}

static int vk_softmax(int log, int dim, tn_tensor *out, const tn_tensor *a)
{
    return softmax_dispatch(log ? 1 : 0, dim, out, a, a);
}

static int vk_softmax_bwd(int log, int dim, tn_tensor *gin, const tn_tensor *y, const tn_tensor *g)
{
    return softmax_dispatch(log ? 3 : 2, dim, gin, y, g);
}

/* ---- indexing on dense tensors ---- */

static int vk_take(tn_tensor *out, const tn_tensor *a, const int64_t *idx)
{
    size_t n = tn_numel(out);
    vk_view list;
    int32_t *w;
    tn_vk_device *d = tn_vk__dev(out->storage);
    if (n == 0) return DLCA_OK;
    int rc = tn_vk__arena(d, n * sizeof *w, &list, (void **)&w);
    if (rc) return rc;
    for (size_t p = 0; p < n; p++) w[p] = (int32_t)idx[p]; /* < numel(a) <= TN_VK_MAX_NUMEL */
    vk_push_tn_index push = {(uint32_t)n, (uint32_t)out->offset, (uint32_t)a->offset};
    vk_view views[3] = {tn_vk__view(out), tn_vk__view(a), list};
    return tn_vk__dispatch_1d(d, TN_VK_PIPE_TAKE, views, 3, &push, sizeof push, n);
}

typedef struct {
    int64_t dst;
    size_t pos;
} dst_pos;

static int by_dst_then_pos(const void *pa, const void *pb)
{
    const dst_pos *a = pa, *b = pb;
    if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Groups sources by destination (see glsl/tn_put_add.comp) so each destination has one owner. */
static int vk_put_add(tn_tensor *dst, const tn_tensor *src, const int64_t *idx)
{
    size_t n = tn_numel(src), u = 0;
    vk_view csr;
    int32_t *w;
    tn_vk_device *d = tn_vk__dev(dst->storage);
    if (n == 0) return DLCA_OK;
    dst_pos *order = malloc(n * sizeof *order);
    if (!order) return err_set(DLCA_ERR_NOMEM, "put_add: out of memory");
    for (size_t p = 0; p < n; p++) order[p] = (dst_pos){idx[p], p};
    qsort(order, n, sizeof *order, by_dst_then_pos);
    for (size_t p = 0; p < n; p++) u += p == 0 || order[p].dst != order[p - 1].dst;
    int rc = tn_vk__arena(d, (2 * u + 1 + n) * sizeof *w, &csr, (void **)&w);
    if (!rc) {
        int32_t *dests = w, *starts = w + u, *list = w + 2 * u + 1;
        size_t k = 0;
        for (size_t p = 0; p < n; p++) {
            if (p == 0 || order[p].dst != order[p - 1].dst) {
                dests[k] = (int32_t)order[p].dst;
                starts[k++] = (int32_t)p;
            }
            list[p] = (int32_t)order[p].pos;
        }
        starts[u] = (int32_t)n;
        vk_push_tn_index push = {(uint32_t)u, (uint32_t)dst->offset, (uint32_t)src->offset};
        vk_view views[3] = {tn_vk__view(dst), tn_vk__view(src), csr};
        rc = tn_vk__dispatch_1d(d, TN_VK_PIPE_PUT_ADD, views, 3, &push, sizeof push, u);
    }
    free(order);
    return rc;
}

const tn_backend tn_vk_backend = {
    .name = "vulkan",
    .alloc = tn_vk__alloc,
    .release = tn_vk__release,
    .grow = tn_vk__grow,
    .upload = tn_vk__upload,
    .download = tn_vk__download,
    .fill = vk_fill,
    .unary = vk_unary,
    .binary = vk_binary,
    .reduce_sum = vk_reduce_sum,
    .reduce_max = vk_reduce_max,
    .matmul = vk_matmul,
    .softmax = vk_softmax,
    .softmax_bwd = vk_softmax_bwd,
    .take = vk_take,
    .put_add = vk_put_add,
    .softmax_matmul = tn_vk__softmax_matmul,
    .softmax_matmul_bwd = tn_vk__softmax_matmul_bwd,
    .argmax_onehot = tn_vk__argmax_onehot,
    .sse = tn_vk__sse,
    .sse_bwd = tn_vk__sse_bwd,
    .noise = tn_vk__noise,
    .optim_step = tn_vk__optim_step,
    .optim_state_init = tn_vk__optim_state_init,
    .optim_status = tn_vk__optim_status,
    .optim_free = tn_vk__optim_free,
    .clip_norm = tn_vk__clip_norm,
};
