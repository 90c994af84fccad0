/* tn_mlp.h: a two-layer MLP classifier (in -> hidden ReLU -> classes) on IDX image data,
 * trained with Adam and cross-entropy on minibatches, on the CPU or on any tn device
 * (mlp_to_device). Header-only, shared by tools/fashion_mnist.c and the tests, so the tests
 * train exactly what the tool trains. Seeded: the same seed gives the same weights, batch order
 * and accuracy. */
#ifndef DLCA_TN_MLP_H
#define DLCA_TN_MLP_H

#include "error.h"
#include "tn_idx.h"
#include "tn_ops.h"
#include "tn_optim.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    tn_params params; /* w1 [in, hidden], b1 [hidden], w2 [hidden, classes], b2 [classes] */
    tn_tensor *w1, *b1, *w2, *b2;
    size_t in, hidden, classes;
    tn_dev *dev; /* where the parameters and batches live (NULL: the CPU) */
} mlp;

/* PyTorch's Linear init: weights and biases uniform in +-1/sqrt(fan_in). */
static inline int mlp_init(mlp *m, size_t in, size_t hidden, size_t classes, uint64_t seed)
{
    tn_rng rng;
    tn_rng_seed(&rng, seed);
    m->in = in, m->hidden = hidden, m->classes = classes, m->dev = NULL;
    if (tn_params_init(&m->params, TN_F32) != DLCA_OK) return DLCA_ERR;
    m->w1 = tn_params_add(&m->params, TN_SHAPE(in, hidden));
    m->b1 = tn_params_add(&m->params, TN_SHAPE(hidden));
    m->w2 = tn_params_add(&m->params, TN_SHAPE(hidden, classes));
    m->b2 = tn_params_add(&m->params, TN_SHAPE(classes));
    if (!m->b2) return DLCA_ERR;
    double r1 = 1.0 / sqrt((double)in), r2 = 1.0 / sqrt((double)hidden);
    tn_fill_uniform(m->w1, &rng, -r1, r1);
    tn_fill_uniform(m->b1, &rng, -r1, r1);
    tn_fill_uniform(m->w2, &rng, -r2, r2);
    return tn_fill_uniform(m->b2, &rng, -r2, r2);
}

static inline void mlp_free(mlp *m) { tn_params_free(&m->params); }

/* Moves the parameters to `dev`; batches follow them there. */
static inline int mlp_to_device(mlp *m, tn_dev *dev)
{
    if (tn_params_to_device(&m->params, dev) != DLCA_OK) return DLCA_ERR;
    m->dev = dev;
    return DLCA_OK;
}

/* logits [n, classes] for x [n, in] */
static inline tn_tensor *mlp_forward(mlp *m, tn_tensor *x)
{
    tn_tensor *xw = tn_matmul(x, m->w1);
    tn_tensor *h = tn_add(xw, m->b1);
    tn_tensor *a = tn_relu(h);
    tn_tensor *aw = tn_matmul(a, m->w2);
    tn_tensor *logits = tn_add(aw, m->b2);
    tn_free(xw);
    tn_free(h);
    tn_free(a);
    tn_free(aw);
    return logits;
}

/* Fashion-MNIST pixel mean and standard deviation (of value / 255): standardised inputs keep
 * the first layer's pre-activations near unit scale, which speeds up early training. */
#define MLP_PIXEL_MEAN 0.2860f
#define MLP_PIXEL_STD 0.3530f

/* Rows items[0..n) of the images as x [n, pixels], standardised, on the model's device; labels
 * into y[n]. */
static inline tn_tensor *mlp_batch(const mlp *m, const tn_idx *images, const tn_idx *labels, const size_t *items, size_t n,
                            int64_t *y)
{
    size_t pixels = images->count / images->dims[0];
    float *x = malloc(n * pixels * sizeof *x);
    if (!x) return err_set(DLCA_ERR_NOMEM, "mlp: out of memory for a batch"), NULL;
    const unsigned char *src = images->data;
    for (size_t i = 0; i < n; i++) {
        for (size_t p = 0; p < pixels; p++)
            x[i * pixels + p] = ((float)src[items[i] * pixels + p] / 255.0f - MLP_PIXEL_MEAN) / MLP_PIXEL_STD;
        y[i] = ((const unsigned char *)labels->data)[items[i]];
    }
    tn_tensor *t = tn_from_f32(TN_F32, TN_SHAPE(n, pixels), x);
    free(x);
    if (!t || !m->dev) return t;
    tn_tensor *d = tn_to_device(t, m->dev);
    tn_free(t);
    return d;
}

/* One step on one batch: forward, loss, backward, Adam. Returns the loss or NAN. */
static inline double mlp_step(mlp *m, tn_optim *opt, const tn_idx *images, const tn_idx *labels, const size_t *items, size_t n)
{
    int64_t y[1024];
    if (n > 1024) return err_set(DLCA_ERR, "mlp: batch above 1024"), NAN;
    tn_tensor *x = mlp_batch(m, images, labels, items, n, y);
    tn_tensor *logits = x ? mlp_forward(m, x) : NULL;
    tn_tensor *loss = tn_cross_entropy(logits, y, TN_REDUCE_MEAN);
    tn_params_zero_grad(&m->params);
    double value = loss && tn_backward(loss) == DLCA_OK && tn_optim_step(opt, &m->params) == DLCA_OK ? tn_item(loss) : NAN;
    tn_free(x);
    tn_free(logits);
    tn_free(loss);
    return value;
}

/* One pass over order[0..n) shuffled with rng, in batches, the learning rate set from `lr`
 * (NULL: keep opt->lr) at every step; returns the mean loss or NAN. */
static inline double mlp_epoch(mlp *m, tn_optim *opt, const tn_lr_schedule *lr, const tn_idx *images, const tn_idx *labels,
                        size_t *order, size_t n, size_t batch, tn_rng *rng)
{
    double total = 0.0;
    size_t steps = 0;
    tn_rng_shuffle(rng, order, n);
    for (size_t i = 0; i < n; i += batch, steps++) {
        if (lr) opt->lr = tn_lr_at(lr, opt->step);
        double l = mlp_step(m, opt, images, labels, order + i, n - i < batch ? n - i : batch);
        if (isnan(l)) return NAN;
        total += l;
    }
    return total / (double)(steps ? steps : 1);
}

/* Fraction of the first n items classified correctly (no-grad, batches of 500), or -1. */
static inline double mlp_accuracy(mlp *m, const tn_idx *images, const tn_idx *labels, size_t n)
{
    size_t items[500], correct = 0;
    int64_t y[500], pred[500];
    int ok = 1;
    tn_no_grad_begin();
    for (size_t i = 0; ok && i < n; i += 500) {
        size_t b = n - i < 500 ? n - i : 500;
        for (size_t k = 0; k < b; k++) items[k] = i + k;
        tn_tensor *x = mlp_batch(m, images, labels, items, b, y);
        tn_tensor *logits = x ? mlp_forward(m, x) : NULL;
        ok = logits && tn_argmax_dim(logits, 1, pred) == DLCA_OK;
        for (size_t k = 0; ok && k < b; k++) correct += pred[k] == y[k];
        tn_free(x);
        tn_free(logits);
    }
    tn_no_grad_end();
    return ok ? (double)correct / (double)n : -1.0;
}

#endif
