/* test_tn_autograd.c: the tape's contract. backward() from a scalar and with a given output
 * gradient, accumulation over repeated backward calls, zero_grad, no-grad scopes, clear errors
 * (no history, non-scalar output, wrong gradient shape, non-leaf requires_grad), graphs that
 * outlive freed intermediates, a 20000-op chain, and gradients landing in the flat buffer. */
#include "check.h"
#include "error.h"
#include "tn_ops.h"
#include "tn_optim.h"

#include <string.h>

static tn_tensor *leaf(int ndim, const size_t *shape, const double *v)
{
    tn_tensor *t = tn_from_f64(TN_F64, ndim, shape, v);
    tn_set_requires_grad(t, 1);
    return t;
}

static void test_errors(void)
{
    tn_tensor *c = tn_from_f64(TN_F64, TN_SHAPE(1), (const double[]){3});
    tn_tensor *c2 = tn_mul(c, c);
    CHECK(tn_backward(c2) == DLCA_ERR && strstr(err_message(), "no autograd history"), "no history: %s", err_message());
    tn_tensor *x = leaf(TN_SHAPE(3), (const double[]){1, 2, 3});
    tn_tensor *y = tn_mul_scalar(x, 2.0);
    CHECK(tn_backward(y) == DLCA_ERR && strstr(err_message(), "not a scalar") && strstr(err_message(), "[3]"),
          "non-scalar: %s", err_message());
    tn_tensor *g2 = tn_zeros(TN_F64, TN_SHAPE(2));
    CHECK(tn_backward_grad(y, g2) == DLCA_ERR && strstr(err_message(), "output gradient of shape [2]"),
          "gradient shape: %s", err_message());
    CHECK(tn_set_requires_grad(y, 0) == DLCA_ERR && strstr(err_message(), "not a leaf"), "non-leaf: %s", err_message());
    CHECK(x->grad == NULL, "failed backward calls leave no gradient");
    tn_free(c), tn_free(c2), tn_free(x), tn_free(y), tn_free(g2);
}

static void test_given_gradient_and_accumulation(void)
{
    tn_tensor *x = leaf(TN_SHAPE(3), (const double[]){1, 2, 3});
    tn_tensor *y = tn_mul(x, x); /* dy/dx = 2x */
    tn_tensor *gy = tn_from_f64(TN_F64, TN_SHAPE(3), (const double[]){1, 10, 100});
    CHECK(tn_backward_grad(y, gy) == DLCA_OK, "backward_grad: %s", err_message());
    CHECK(tn_get(x->grad, 0) == 2 && tn_get(x->grad, 1) == 40 && tn_get(x->grad, 2) == 600, "given gradient");
    /* a second backward adds, as a training step with two losses would */
    CHECK(tn_backward_grad(y, gy) == DLCA_OK && tn_get(x->grad, 2) == 1200, "accumulates: %g", tn_get(x->grad, 2));
    tn_zero_grad(x);
    CHECK(tn_get(x->grad, 0) == 0 && tn_get(x->grad, 2) == 0, "zero_grad");
    tn_tensor *s = tn_sum(y);
    CHECK(tn_backward(s) == DLCA_OK && tn_get(x->grad, 1) == 4, "scalar backward after zero_grad");
    /* backward of a leaf itself */
    tn_tensor *w = leaf(TN_SHAPE(1), (const double[]){5});
    CHECK(tn_backward(w) == DLCA_OK && tn_get(w->grad, 0) == 1, "leaf backward seeds 1");
    tn_free(x), tn_free(y), tn_free(gy), tn_free(s), tn_free(w);
}

static void test_no_grad(void)
{
    tn_tensor *x = leaf(TN_SHAPE(2), (const double[]){1, 2});
    tn_no_grad_begin();
    tn_no_grad_begin();
    tn_tensor *a = tn_exp(x);
    tn_no_grad_end();
    tn_tensor *b = tn_exp(x);
    tn_no_grad_end();
    tn_tensor *c = tn_exp(x);
    CHECK(a && !a->requires_grad && !a->node, "no record in a nested scope");
    CHECK(b && !b->requires_grad && !b->node, "no record in the outer scope");
    CHECK(c && c->requires_grad && c->node && tn_grad_enabled(), "recording again after the scope");
    tn_tensor *d = tn_detach(c);
    CHECK(d && !d->node && !d->requires_grad && d->storage == c->storage, "detach shares data, drops history");
    tn_free(x), tn_free(a), tn_free(b), tn_free(c), tn_free(d);
}

/* The graph holds what it needs: intermediates freed before backward still contribute. */
static void test_freed_intermediates(void)
{
    tn_tensor *x = leaf(TN_SHAPE(2), (const double[]){0.5, -1});
    tn_tensor *h = tn_tanh(x);
    tn_tensor *h2 = tn_mul(h, x);
    tn_free(h);
    tn_tensor *s = tn_sum(h2);
    tn_free(h2);
    CHECK(tn_backward(s) == DLCA_OK, "backward: %s", err_message());
    for (size_t i = 0; i < 2; i++) {
        double v = tn_get(x, i), t = tanh(v);
        CHECK_CLOSE(tn_get(x->grad, i), t + v * (1 - t * t), 1e-15, 1e-15, "d(x tanh x)/dx[%zu]", i);
    }
    tn_free(s), tn_free(x);
}

/* A deep chain: backward and freeing must not recurse per op. */
static void test_long_chain(void)
{
    tn_tensor *x = leaf(TN_SHAPE(1), (const double[]){1});
    tn_tensor *y = tn_retain(x);
    for (int i = 0; i < 20000; i++) {
        tn_tensor *next = tn_mul_scalar(y, 1.0001);
        tn_free(y);
        y = next;
    }
    CHECK(tn_backward(y) == DLCA_OK, "backward: %s", err_message());
    CHECK_CLOSE(tn_get(x->grad, 0), pow(1.0001, 20000), 0, 1e-12, "chain rule over 20000 ops");
    tn_free(y), tn_free(x);
}

/* Parameters are views into one block: gradients land there, and zero_grad clears it. */
static void test_flat_buffer(void)
{
    tn_params p;
    CHECK(tn_params_init(&p, TN_F64) == DLCA_OK, "init");
    tn_tensor *w = tn_params_add(&p, TN_SHAPE(2, 2));
    tn_tensor *b = tn_params_add(&p, TN_SHAPE(2));
    CHECK(p.numel == 6 && w->storage == p.values->storage && b->offset == 4, "two params in one block");
    tn_write(w, (const double[]){1, 2, 3, 4});
    tn_write(b, (const double[]){0.5, -0.5});
    tn_tensor *x = tn_from_f64(TN_F64, TN_SHAPE(1, 2), (const double[]){1, 1});
    tn_tensor *xw = tn_matmul(x, w);
    tn_tensor *y = tn_add(xw, b);
    tn_tensor *s = tn_sum(y);
    CHECK(tn_backward(s) == DLCA_OK, "backward: %s", err_message());
    const double *g = tn_params_grad(&p), want[6] = {1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 6; i++) CHECK(g[i] == want[i], "flat grad %d = %g", i, g[i]);
    CHECK(((const double *)tn_params_data(&p))[3] == 4, "flat values");
    tn_params_zero_grad(&p);
    CHECK(g[0] == 0 && g[5] == 0, "zero_grad over the block");
    tn_free(x), tn_free(xw), tn_free(y), tn_free(s);
    tn_params_free(&p);
}

int main(void)
{
    test_errors();
    test_given_gradient_and_accumulation();
    test_no_grad();
    test_freed_intermediates();
    test_long_chain();
    test_flat_buffer();
    return test_finish("test_tn_autograd");
}
