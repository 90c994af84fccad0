/* test_tn_loss.c: losses. Finite-difference checks of mse, l1, huber, cross_entropy and nll
 * under each reduction (none / mean / sum); values against hand computation; cross_entropy
 * stays finite and exact for logits of 1e4; bad labels and shapes give clear errors. */
#include "check.h"
#include "tn_fd.h"

#include <string.h>

static const int64_t labels[4] = {2, 0, 4, 1};

typedef struct {
    tn_reduction red;
} loss_ctx;

static tn_tensor *f_mse(tn_tensor **in, void *c) { return tn_mse_loss(in[0], in[1], ((loss_ctx *)c)->red); }
static tn_tensor *f_l1(tn_tensor **in, void *c) { return tn_l1_loss(in[0], in[1], ((loss_ctx *)c)->red); }
static tn_tensor *f_huber(tn_tensor **in, void *c) { return tn_huber_loss(in[0], in[1], 0.7, ((loss_ctx *)c)->red); }
static tn_tensor *f_ce(tn_tensor **in, void *c) { return tn_cross_entropy(in[0], labels, ((loss_ctx *)c)->red); }
static tn_tensor *f_nll(tn_tensor **in, void *c) { return tn_nll_loss(in[0], labels, ((loss_ctx *)c)->red); }

static const char *red_name(tn_reduction r) { return r == TN_REDUCE_NONE ? "none" : r == TN_REDUCE_MEAN ? "mean" : "sum"; }

/* pred and target both require grad; the huber/l1 differences avoid their kinks. */
static void fd_pair(const char *name, fd_fn f, tn_rng *rng)
{
    for (int r = 0; r < 3; r++) {
        loss_ctx ctx = {(tn_reduction)r};
        char label[64];
        tn_tensor *target = fd_input(rng, TN_SHAPE(3, 4), -1, 1, NULL, 0);
        tn_tensor *pred = fd_input(rng, TN_SHAPE(3, 4), -2, 2, NULL, 0);
        /* move any |pred - target| that sits near 0 or near the huber delta 0.7 */
        for (size_t e = 0; e < 12; e++) {
            double d = tn_get(pred, e) - tn_get(target, e), ad = fabs(d);
            if (ad < 0.05 || fabs(ad - 0.7) < 0.05) tn_set(pred, e, tn_get(target, e) + (d < 0 ? -0.3 : 0.3));
        }
        snprintf(label, sizeof label, "%s %s", name, red_name(ctx.red));
        double worst = fd_check(label, f, &ctx, 2, (tn_tensor *[]){pred, target});
        printf("  %-24s worst relative error %.2e\n", label, worst);
        tn_free(pred);
        tn_free(target);
    }
}

static void fd_class(const char *name, fd_fn f, tn_rng *rng)
{
    for (int r = 0; r < 3; r++) {
        loss_ctx ctx = {(tn_reduction)r};
        char label[64];
        tn_tensor *x = fd_input(rng, TN_SHAPE(4, 5), -3, 3, NULL, 0);
        snprintf(label, sizeof label, "%s %s", name, red_name(ctx.red));
        double worst = fd_check(label, f, &ctx, 1, &x);
        printf("  %-24s worst relative error %.2e\n", label, worst);
        tn_free(x);
    }
}

static void test_values(void)
{
    tn_tensor *p = tn_from_f64(TN_F64, TN_SHAPE(4), (const double[]){1, 2, 3, -1});
    tn_tensor *t = tn_from_f64(TN_F64, TN_SHAPE(4), (const double[]){0, 2, 5, 1});
    /* differences 1, 0, -2, -2 */
    tn_tensor *mse = tn_mse_loss(p, t, TN_REDUCE_MEAN), *l1 = tn_l1_loss(p, t, TN_REDUCE_SUM);
    tn_tensor *hub = tn_huber_loss(p, t, 1.0, TN_REDUCE_NONE);
    CHECK_CLOSE(tn_item(mse), 9.0 / 4.0, 1e-15, 0, "mse mean");
    CHECK_CLOSE(tn_item(l1), 5.0, 1e-15, 0, "l1 sum");
    CHECK(hub && hub->ndim == 1 && hub->shape[0] == 4, "huber none keeps the shape");
    const double want_hub[4] = {0.5, 0, 1.5, 1.5};
    for (size_t i = 0; hub && i < 4; i++) CHECK_CLOSE(tn_get(hub, i), want_hub[i], 1e-15, 0, "huber element %zu", i);
    tn_free(mse);
    tn_free(l1);
    tn_free(hub);
    tn_free(p);
    tn_free(t);
}

/* log-softmax by hand: the loss for label k is logsumexp(x) - x_k. */
static void test_cross_entropy_values(void)
{
    const double x[6] = {1, 2, 3, -1, 0, 1};
    const int64_t y[2] = {2, 0};
    tn_tensor *logits = tn_from_f64(TN_F64, TN_SHAPE(2, 3), x);
    tn_tensor *ce = tn_cross_entropy(logits, y, TN_REDUCE_NONE);
    double l0 = log(exp(1) + exp(2) + exp(3)) - 3, l1 = log(exp(-1) + exp(0) + exp(1)) + 1;
    CHECK(ce && ce->ndim == 1 && ce->shape[0] == 2, "cross_entropy none is per sample");
    CHECK_CLOSE(tn_get(ce, 0), l0, 1e-14, 1e-14, "ce row 0");
    CHECK_CLOSE(tn_get(ce, 1), l1, 1e-14, 1e-14, "ce row 1");
    tn_tensor *mean = tn_cross_entropy(logits, y, TN_REDUCE_MEAN);
    CHECK_CLOSE(tn_item(mean), (l0 + l1) / 2, 1e-14, 1e-14, "ce mean");
    tn_free(mean);
    tn_free(ce);
    tn_free(logits);
}

/* Logits of 1e4: a naive exp overflows; the shifted form gives exact values and gradients. */
static void test_cross_entropy_stable(void)
{
    for (int dt = 0; dt < 2; dt++) {
        const double x[6] = {1e4, 0, -1e4, 1e4, 1e4, -1e4};
        const int64_t y[2] = {1, 0};
        tn_tensor *logits = tn_from_f64((tn_dtype)dt, TN_SHAPE(2, 3), x);
        tn_set_requires_grad(logits, 1);
        tn_tensor *ce = tn_cross_entropy(logits, y, TN_REDUCE_NONE);
        tn_tensor *sum = tn_sum(ce);
        CHECK(tn_backward(sum) == DLCA_OK, "backward: %s", err_message());
        CHECK_CLOSE(tn_get(ce, 0), 1e4, 0, 1e-12, "row 0: label logit 1e4 below the max");
        CHECK_CLOSE(tn_get(ce, 1), log(2.0), 1e-6, 1e-6, "row 1: two equal maxima");
        /* gradient = softmax - onehot */
        const double want[6] = {1, -1, 0, -0.5, 0.5, 0};
        for (size_t i = 0; logits->grad && i < 6; i++)
            CHECK_CLOSE(tn_get(logits->grad, i), want[i], 1e-6, 0, "dtype %d grad %zu", dt, i);
        tn_free(sum);
        tn_free(ce);
        tn_free(logits);
    }
}

static void test_errors(void)
{
    tn_tensor *x = tn_zeros(TN_F64, TN_SHAPE(2, 3)), *v = tn_zeros(TN_F64, TN_SHAPE(3));
    const int64_t bad[2] = {0, 3};
    CHECK(tn_cross_entropy(x, bad, TN_REDUCE_MEAN) == NULL && strstr(err_message(), "out of range"),
          "label 3 of 3 classes: %s", err_message());
    CHECK(tn_cross_entropy(v, bad, TN_REDUCE_MEAN) == NULL && strstr(err_message(), "[N, C]"),
          "1-d logits: %s", err_message());
    CHECK(tn_mse_loss(x, v, TN_REDUCE_MEAN) == NULL && strstr(err_message(), "differ in shape"),
          "shape mismatch: %s", err_message());
    CHECK(tn_huber_loss(x, x, 0.0, TN_REDUCE_MEAN) == NULL && strstr(err_message(), "delta"), "delta 0: %s",
          err_message());
    CHECK(tn_l1_loss(x, x, (tn_reduction)7) == NULL && strstr(err_message(), "reduction"), "bad reduction: %s",
          err_message());
    tn_free(x);
    tn_free(v);
}

int main(void)
{
    tn_rng rng;
    tn_rng_seed(&rng, 7);
    fd_pair("mse", f_mse, &rng);
    fd_pair("l1", f_l1, &rng);
    fd_pair("huber", f_huber, &rng);
    fd_class("cross_entropy", f_ce, &rng);
    fd_class("nll", f_nll, &rng);
    test_values();
    test_cross_entropy_values();
    test_cross_entropy_stable();
    test_errors();
    return test_finish("test_tn_loss");
}
