/* tn_loss.c: losses composed from differentiable ops, so their gradients come from the tape
 * and the finite-difference checks of the ops cover them. cross_entropy goes through
 * log_softmax, which shifts by the row max, so logits of 1e4 stay finite. */
#include "tn_internal.h"
#include "tn_ops.h"

#include "error.h"

/* Applies the reduction to per-element losses (consumed). */
static tn_tensor *reduce(tn_tensor *loss, tn_reduction red)
{
    if (!loss || red == TN_REDUCE_NONE) return loss;
    tn_tensor *r = red == TN_REDUCE_SUM ? tn_sum(loss) : tn_mean(loss);
    tn_free(loss);
    return r;
}

static int same_shape(const char *op, const tn_tensor *a, const tn_tensor *b)
{
    char sa[96], sb[96];
    if (!a || !b) return tn__null(op);
    int same = a->ndim == b->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = a->shape[d] == b->shape[d];
    if (same) return tn__check_pair(op, a, b);
    return err_set(DLCA_ERR, "%s: prediction %s and target %s differ in shape", op, tn_shape_str(a, sa, sizeof sa),
                   tn_shape_str(b, sb, sizeof sb));
}

static int valid_reduction(const char *op, tn_reduction red)
{
    if (red == TN_REDUCE_NONE || red == TN_REDUCE_MEAN || red == TN_REDUCE_SUM) return DLCA_OK;
    return err_set(DLCA_ERR, "%s: unknown reduction %d", op, (int)red);
}

/* The summed and mean forms are tn_sse_loss (the one squared-error loss, with its fused kernels);
 * only the per-element form is composed here. */
tn_tensor *tn_mse_loss(tn_tensor *pred, tn_tensor *target, tn_reduction red)
{
    if (same_shape("mse_loss", pred, target) != DLCA_OK || valid_reduction("mse_loss", red) != DLCA_OK) return NULL;
    if (red != TN_REDUCE_NONE) {
        tn_tensor *sum = tn_sse_loss(pred, target);
        if (!sum || red == TN_REDUCE_SUM) return sum;
        tn_tensor *mean = tn_mul_scalar(sum, 1.0 / (double)(tn_numel(pred) ? tn_numel(pred) : 1));
        tn_free(sum);
        return mean;
    }
    tn_tensor *d = tn_sub(pred, target);
    tn_tensor *sq = tn_mul(d, d);
    tn_free(d);
    return sq;
}

tn_tensor *tn_l1_loss(tn_tensor *pred, tn_tensor *target, tn_reduction red)
{
    if (same_shape("l1_loss", pred, target) != DLCA_OK || valid_reduction("l1_loss", red) != DLCA_OK) return NULL;
    tn_tensor *d = tn_sub(pred, target);
    tn_tensor *a = tn_abs(d);
    tn_free(d);
    return reduce(a, red);
}

tn_tensor *tn_huber_loss(tn_tensor *pred, tn_tensor *target, double delta, tn_reduction red)
{
    if (same_shape("huber_loss", pred, target) != DLCA_OK || valid_reduction("huber_loss", red) != DLCA_OK)
        return NULL;
    if (!(delta > 0)) return err_set(DLCA_ERR, "huber_loss: delta %g must be > 0", delta), NULL;
    /* with c = min(|d|, delta): 0.5 c^2 + delta (|d| - c) is 0.5 d^2 inside, delta (|d| - delta/2) outside */
    tn_tensor *d = tn_sub(pred, target);
    tn_tensor *a = tn_abs(d);
    tn_tensor *c = tn_clamp(a, 0.0, delta);
    tn_tensor *c2 = tn_mul(c, c);
    tn_tensor *quad = tn_mul_scalar(c2, 0.5);
    tn_tensor *excess = tn_sub(a, c);
    tn_tensor *lin = tn_mul_scalar(excess, delta);
    tn_tensor *loss = tn_add(quad, lin);
    tn_free(d);
    tn_free(a);
    tn_free(c);
    tn_free(c2);
    tn_free(quad);
    tn_free(excess);
    tn_free(lin);
    return reduce(loss, red);
}

tn_tensor *tn_nll_loss(tn_tensor *logp, const int64_t *labels, tn_reduction red)
{
    char s[96];
    if (!logp) return tn__null("nll_loss"), NULL;
    if (valid_reduction("nll_loss", red) != DLCA_OK) return NULL;
    if (logp->ndim != 2)
        return err_set(DLCA_ERR, "nll_loss: input %s must be [N, C]", tn_shape_str(logp, s, sizeof s)), NULL;
    size_t n = logp->shape[0], classes = logp->shape[1], shape[2] = {n, 1};
    for (size_t i = 0; i < n; i++)
        if (labels[i] < 0 || (size_t)labels[i] >= classes)
            return err_set(DLCA_ERR, "nll_loss: label %lld of row %zu out of range [0, %zu)", (long long)labels[i], i,
                           classes), NULL;
    tn_tensor *picked = tn_gather(logp, 1, labels, shape);
    tn_tensor *flat = tn_reshape(picked, 1, &n);
    tn_tensor *loss = tn_neg(flat);
    tn_free(picked);
    tn_free(flat);
    return reduce(loss, red);
}

tn_tensor *tn_cross_entropy(tn_tensor *logits, const int64_t *labels, tn_reduction red)
{
    char s[96];
    if (!logits) return tn__null("cross_entropy"), NULL;
    if (logits->ndim != 2)
        return err_set(DLCA_ERR, "cross_entropy: logits %s must be [N, C]", tn_shape_str(logits, s, sizeof s)), NULL;
    tn_tensor *logp = tn_log_softmax(logits, 1);
    tn_tensor *loss = tn_nll_loss(logp, labels, red);
    tn_free(logp);
    return loss;
}
