/* tn_ops_fused.c: the ops the CA trainer runs every step, each one kernel forward and one
 * backward on a device: softmax(z) @ M (the gates' coefficients from their logits), the sum of
 * squared errors whose forward keeps the difference its backward needs, the argmax one-hot of
 * hard gates, the straight-through combination (a view: no kernel at all), and counter-based
 * noise that every device draws alike. */
#include "tn_internal.h"
#include "tn_ops.h"

#include "error.h"

/* ---- softmax(z, -1) @ m ---- */

static int softmax_matmul_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    tn_tensor *z = n->in[0], *m = n->in[1];
    tn_tensor *gc = tn_contiguous(g);
    tn_tensor *dest = gin[0]; /* written whole: a stale leaf gradient serves (tn_backward_fn) */
    tn_tensor *gz = !gc ? NULL : dest ? dest : tn__empty_like(z, z->ndim, z->shape);
    int status = gz ? tn__backend_of(z)->softmax_matmul_bwd(gz, z, m, gc) : DLCA_ERR;
    tn_free(gc);
    if (status != DLCA_OK) {
        if (gz != dest) tn_free(gz);
        return DLCA_ERR;
    }
    gin[0] = gz;
    return DLCA_OK;
}

tn_tensor *tn_softmax_matmul(tn_tensor *z, tn_tensor *m)
{
    char sz[96], sm[96];
    size_t shape[TN_MAX_DIMS];
    if (!z || !m) return tn__null("softmax_matmul"), NULL;
    if (tn__check_pair("softmax_matmul", z, m) != DLCA_OK) return NULL;
    if (z->ndim < 1 || m->ndim != 2 || z->shape[z->ndim - 1] != m->shape[0])
        return err_set(DLCA_ERR, "softmax_matmul: z %s and m %s do not match ([..., k] and [k, c])",
                       tn_shape_str(z, sz, sizeof sz), tn_shape_str(m, sm, sizeof sm)), NULL;
    if (m->requires_grad)
        return err_set(DLCA_ERR, "softmax_matmul: m is a constant (its gradient is not computed); detach it"), NULL;
    for (int d = 0; d < z->ndim; d++) shape[d] = z->shape[d];
    shape[z->ndim - 1] = m->shape[1];
    /* the kernels read dense rows; views of dense tensors cost nothing here */
    tn_tensor *zc = tn_contiguous(z), *mc = zc ? tn_contiguous(m) : NULL;
    tn_tensor *y = mc ? tn__empty_like(z, z->ndim, shape) : NULL;
    if (y && tn__backend_of(z)->softmax_matmul(y, zc, mc) != DLCA_OK) {
        tn_free(y);
        y = NULL;
    }
    /* the node keeps the dense operands: the backward recomputes the softmax from them */
    y = tn__record(y, &(tn_node){.op = "softmax_matmul", .backward = softmax_matmul_bwd, .n_in = 2, .in = {zc, mc},
                                     .destinations = 1u});
    tn_free(zc);
    tn_free(mc);
    return y;
}

/* ---- argmax one-hot ---- */

tn_tensor *tn_argmax_onehot(tn_tensor *z)
{
    if (!z) return tn__null("argmax_onehot"), NULL;
    if (z->ndim < 1) return err_set(DLCA_ERR, "argmax_onehot: z is 0-d"), NULL;
    tn_tensor *zc = tn_contiguous(z);
    tn_tensor *y = zc ? tn__empty_like(z, z->ndim, z->shape) : NULL;
    if (y && tn__backend_of(z)->argmax_onehot(y, zc) != DLCA_OK) {
        tn_free(y);
        y = NULL;
    }
    tn_free(zc);
    return y; /* not recorded: a choice has no gradient */
}

/* ---- straight-through ---- */

static int pass_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    gin[0] = tn_retain(g);
    return DLCA_OK;
}

tn_tensor *tn_straight_through(tn_tensor *hard, tn_tensor *soft)
{
    if (!hard || !soft) return tn__null("straight_through"), NULL;
    if (tn__check_pair("straight_through", hard, soft) != DLCA_OK ||
        tn__check_shape("straight_through", hard, soft) != DLCA_OK)
        return NULL;
    /* hard's values without a copy; the only recorded input is soft, so hard gets no gradient */
    tn_tensor *y = tn__view(hard, hard->ndim, hard->shape, hard->stride, hard->offset);
    return tn__record(y, &(tn_node){.op = "straight_through", .backward = pass_bwd, .n_in = 1, .in = {soft}});
}

/* ---- sum of squared errors ---- */

/* darg unused; saved = pred - target (dense), in = {pred, target} */
static int sse_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    tn_tensor *pred = n->in[0], *target = n->in[1], *diff = n->saved;
    tn_tensor *gp = tn__empty_like(diff, diff->ndim, diff->shape);
    tn_tensor *gt = gp && target->requires_grad ? tn__empty_like(diff, diff->ndim, diff->shape) : NULL;
    int status = gp && (gt || !target->requires_grad) ? tn__backend_of(diff)->sse_bwd(gp, gt, diff, g) : DLCA_ERR;
    if (status != DLCA_OK) {
        tn_free(gp);
        tn_free(gt);
        return DLCA_ERR;
    }
    if (pred->requires_grad) gin[0] = gp;
    else tn_free(gp);
    gin[1] = gt;
    return DLCA_OK;
}

tn_tensor *tn_sse_loss(tn_tensor *pred, tn_tensor *target)
{
    if (!pred || !target) return tn__null("sse_loss"), NULL;
    if (tn__check_pair("sse_loss", pred, target) != DLCA_OK || tn__check_shape("sse_loss", pred, target) != DLCA_OK)
        return NULL;
    tn_tensor *diff = tn__empty_like(pred, pred->ndim, pred->shape);
    tn_tensor *loss = diff ? tn__empty_like(pred, 0, NULL) : NULL;
    if (loss && tn__backend_of(pred)->sse(loss, diff, pred, target) != DLCA_OK) {
        tn_free(loss);
        loss = NULL;
    }
    if (!loss) {
        tn_free(diff);
        return NULL;
    }
    return tn__record(loss, &(tn_node){.op = "sse_loss", .backward = sse_bwd, .n_in = 2, .in = {pred, target},
                                       .saved = diff});
}

/* ---- noise ---- */

static tn_tensor *noise(tn_dev *dev, tn_noise_kind kind, tn_dtype dtype, int ndim, const size_t *shape,
                        uint64_t seed, uint32_t stream)
{
    tn_tensor *y = tn__alloc(dev, dtype, ndim, shape, 0);
    if (!y) return NULL;
    if (tn_numel(y) > UINT32_MAX) {
        tn_free(y);
        return err_set(DLCA_ERR, "noise: more than 2^32 elements (the index is 32 bits)"), NULL;
    }
    if (tn__backend_of(y)->noise(y, kind, tn__noise_key(seed, stream)) != DLCA_OK) {
        tn_free(y);
        return NULL;
    }
    return y;
}

tn_tensor *tn_uniform_noise(tn_dev *dev, tn_dtype dtype, int ndim, const size_t *shape, uint64_t seed,
                            uint32_t stream)
{
    return noise(dev, TN_NOISE_UNIFORM, dtype, ndim, shape, seed, stream);
}

tn_tensor *tn_gumbel_noise(tn_dev *dev, tn_dtype dtype, int ndim, const size_t *shape, uint64_t seed,
                           uint32_t stream)
{
    return noise(dev, TN_NOISE_GUMBEL, dtype, ndim, shape, seed, stream);
}
