/* tn_ops.h: differentiable ops and losses on tn_tensor. Each returns a new tensor the caller
 * frees (NULL with err_message() on failure, or when an input is NULL). Binary ops broadcast
 * as NumPy does. Inputs must share dtype and device. Negative dims count from the end. */
#ifndef DLCA_TN_OPS_H
#define DLCA_TN_OPS_H

#include "tn_tensor.h"

#include <stdint.h>

/* ---- elementwise (tn_ops_ew.c) ---- */

/* a + b, broadcasting. */
tn_tensor *tn_add(tn_tensor *a, tn_tensor *b);
/* a - b, broadcasting. */
tn_tensor *tn_sub(tn_tensor *a, tn_tensor *b);
/* a * b, broadcasting. */
tn_tensor *tn_mul(tn_tensor *a, tn_tensor *b);
/* a / b, broadcasting. */
tn_tensor *tn_div(tn_tensor *a, tn_tensor *b);
/* a ** b, broadcasting; the gradient in b needs a > 0. */
tn_tensor *tn_pow(tn_tensor *a, tn_tensor *b);
/* a + s. */
tn_tensor *tn_add_scalar(tn_tensor *a, double s);
/* a * s. */
tn_tensor *tn_mul_scalar(tn_tensor *a, double s);
/* a ** p for a constant exponent. */
tn_tensor *tn_pow_scalar(tn_tensor *a, double p);
/* -a. */
tn_tensor *tn_neg(tn_tensor *a);
/* e ** a. */
tn_tensor *tn_exp(tn_tensor *a);
/* Natural log. */
tn_tensor *tn_log(tn_tensor *a);
/* Square root. */
tn_tensor *tn_sqrt(tn_tensor *a);
/* |a|; gradient sign(a) (0 at 0). */
tn_tensor *tn_abs(tn_tensor *a);
/* min(max(a, lo), hi); gradient passes where lo <= a <= hi. */
tn_tensor *tn_clamp(tn_tensor *a, double lo, double hi);
/* max(a, 0); gradient 0 at 0. */
tn_tensor *tn_relu(tn_tensor *a);
/* 1 / (1 + e**-a), evaluated without overflow. */
tn_tensor *tn_sigmoid(tn_tensor *a);
/* tanh(a). */
tn_tensor *tn_tanh(tn_tensor *a);

/* ---- reductions, matmul, indexing, softmax (tn_ops_nn.c) ---- */

/* Sum of all elements, 0-d. */
tn_tensor *tn_sum(tn_tensor *a);
/* Sum over one dim; keepdim leaves it as extent 1. */
tn_tensor *tn_sum_dim(tn_tensor *a, int dim, int keepdim);
/* Mean of all elements, 0-d. */
tn_tensor *tn_mean(tn_tensor *a);
/* Mean over one dim. */
tn_tensor *tn_mean_dim(tn_tensor *a, int dim, int keepdim);
/* Maximum of all elements, 0-d; the gradient goes to the first argmax only. */
tn_tensor *tn_max(tn_tensor *a);
/* Maximum over one dim; the gradient goes to the first argmax of each slice only. */
tn_tensor *tn_max_dim(tn_tensor *a, int dim, int keepdim);
/* Index of the first maximum along `dim` for every other position, into out[numel / extent]
 * in C order of the remaining dims. Not differentiable. */
int tn_argmax_dim(tn_tensor *a, int dim, int64_t *out);

/* Matrix product with NumPy matmul rules: [..,n,k] x [..,k,m] -> [..,n,m], batch dims
 * broadcast; a 1-d operand is a row (left) or column (right) vector whose dim is dropped. */
tn_tensor *tn_matmul(tn_tensor *a, tn_tensor *b);

/* exp(a) / sum(exp(a)) along dim, shifted by the max so large inputs do not overflow. */
tn_tensor *tn_softmax(tn_tensor *a, int dim);
/* a - logsumexp(a) along dim, stable for any finite input. */
tn_tensor *tn_log_softmax(tn_tensor *a, int dim);

/* out[p] = a[p with coordinate `dim` replaced by index[p]] (torch.gather). `index` holds
 * numel(index_shape) entries in C order; index_shape has a->ndim dims and matches a's
 * shape except along `dim`. */
tn_tensor *tn_gather(tn_tensor *a, int dim, const int64_t *index, const size_t *index_shape);

/* The slices index[0..n) of a along dim (rows of a batch, embedding lookup). */
tn_tensor *tn_index_select(tn_tensor *a, int dim, const int64_t *index, size_t n);

/* ---- losses (tn_loss.c) ---- */

typedef enum {
    TN_REDUCE_NONE = 0, /* per-element (per-sample for cross_entropy/nll) losses */
    TN_REDUCE_MEAN = 1,
    TN_REDUCE_SUM = 2
} tn_reduction;

/* (pred - target)**2; shapes must match. */
tn_tensor *tn_mse_loss(tn_tensor *pred, tn_tensor *target, tn_reduction red);
/* |pred - target|; shapes must match. */
tn_tensor *tn_l1_loss(tn_tensor *pred, tn_tensor *target, tn_reduction red);
/* 0.5 d**2 where |d| <= delta, else delta (|d| - delta/2), d = pred - target (delta > 0). */
tn_tensor *tn_huber_loss(tn_tensor *pred, tn_tensor *target, double delta, tn_reduction red);
/* -log_softmax(logits)[i, labels[i]] for logits [N, C], labels[N] in [0, C). */
tn_tensor *tn_cross_entropy(tn_tensor *logits, const int64_t *labels, tn_reduction red);
/* -logp[i, labels[i]] for log-probabilities [N, C]. */
tn_tensor *tn_nll_loss(tn_tensor *logp, const int64_t *labels, tn_reduction red);

/* ---- the CA trainer's fused ops (tn_ops_fused.c): one kernel forward, one backward ---- */

/* softmax(z, -1) @ m for z [..., k] and a constant m [k, c] (m must not require grad): result
 * [..., c]. The gates' relaxed coefficients from their logits (z [gates, 16], m the [16, 4] op
 * matrix). The backward recomputes the softmax from z instead of keeping it. */
tn_tensor *tn_softmax_matmul(tn_tensor *z, tn_tensor *m);

/* One-hot of the first maximum along the last dim (ties: the lowest index), z's shape; no
 * gradient (the result has no history). tn_matmul(tn_argmax_onehot(z), m) gives hard gates. */
tn_tensor *tn_argmax_onehot(tn_tensor *z);

/* hard's values with soft's gradient: hard + soft - detach(soft) without the arithmetic (a view of
 * hard, no kernel). Shapes must match; hard gets no gradient. */
tn_tensor *tn_straight_through(tn_tensor *hard, tn_tensor *soft);

/* sum((pred - target)^2), 0-d. The forward kernel keeps pred - target, so the backward is one
 * kernel (gradients to pred and, when it requires grad, target). Shapes must match; any strides. */
tn_tensor *tn_sse_loss(tn_tensor *pred, tn_tensor *target);

/* Noise tensors on `dev` (NULL: the CPU) from a counter-based hash of (seed, stream, element
 * index in C order), so every device draws the same values: uniform in (0, 1) from 23 random
 * bits (exact in float: the same bits everywhere), and Gumbel -log(-log(u)) of the same u
 * (within rounding of the logs). Not recorded. */
tn_tensor *tn_uniform_noise(tn_dev *dev, tn_dtype dtype, int ndim, const size_t *shape, uint64_t seed,
                            uint32_t stream);
tn_tensor *tn_gumbel_noise(tn_dev *dev, tn_dtype dtype, int ndim, const size_t *shape, uint64_t seed,
                           uint32_t stream);

#endif
