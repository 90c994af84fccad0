/* tn_fd.h: finite-difference gradient checks for the tn tests (include after check.h).
 * The checked scalar is L = sum(f(inputs) * w) with fixed random weights w in [0.5, 1.5], so
 * every output element contributes with its own weight. Gradients from backward are compared
 * with central differences in float64 (eps 1e-6) element by element; the error measure is
 * |analytic - numeric| / max(1, |analytic|, |numeric|) and must stay below 1e-6. */
#ifndef DLCA_TN_FD_H
#define DLCA_TN_FD_H

#include "error.h"
#include "tn_ops.h"

#define FD_EPS 1e-6
#define FD_TOL 1e-6

typedef tn_tensor *(*fd_fn)(tn_tensor **in, void *ctx);

/* L for the current input values, without recording. */
static double fd_loss(fd_fn f, tn_tensor **in, void *ctx, tn_tensor *w)
{
    tn_tensor *y = f(in, ctx);
    tn_tensor *p = tn_mul(y, w);
    tn_tensor *s = tn_sum(p);
    double v = s ? tn_item(s) : NAN;
    tn_free(y);
    tn_free(p);
    tn_free(s);
    return v;
}

static double fd_rel_err(double a, double n)
{
    double scale = fmax(1.0, fmax(fabs(a), fabs(n)));
    return fabs(a - n) / scale;
}

/* Runs the check for the inputs that require grad and returns the worst error. */
static double fd_check(const char *name, fd_fn f, void *ctx, int n_in, tn_tensor **in)
{
    tn_rng rng;
    tn_rng_seed(&rng, 1234);
    for (int i = 0; i < n_in; i++) tn_zero_grad(in[i]);
    tn_tensor *y = f(in, ctx);
    CHECK(y != NULL, "%s: forward failed: %s", name, err_message());
    if (!y) return INFINITY;
    tn_tensor *w = tn_zeros(TN_F64, y->ndim, y->shape);
    tn_fill_uniform(w, &rng, 0.5, 1.5);
    tn_tensor *p = tn_mul(y, w);
    tn_tensor *loss = tn_sum(p);
    int status = tn_backward(loss);
    CHECK(status == DLCA_OK, "%s: backward failed: %s", name, err_message());
    tn_free(y);
    tn_free(p);
    tn_free(loss);

    double worst = 0.0, worst_a = 0.0, worst_n = 0.0;
    int worst_in = -1;
    size_t worst_el = 0;
    tn_no_grad_begin();
    for (int i = 0; status == DLCA_OK && i < n_in; i++) {
        if (!in[i]->requires_grad) continue;
        CHECK(in[i]->grad != NULL, "%s: input %d got no gradient", name, i);
        for (size_t e = 0; in[i]->grad && e < tn_numel(in[i]); e++) {
            double v = tn_get(in[i], e);
            tn_set(in[i], e, v + FD_EPS);
            double lp = fd_loss(f, in, ctx, w);
            tn_set(in[i], e, v - FD_EPS);
            double lm = fd_loss(f, in, ctx, w);
            tn_set(in[i], e, v);
            double num = (lp - lm) / (2 * FD_EPS), an = tn_get(in[i]->grad, e);
            double err = fd_rel_err(an, num);
            if (!(err <= worst)) { /* also catches NaN */
                worst = isnan(err) ? INFINITY : err;
                worst_a = an, worst_n = num, worst_in = i, worst_el = e;
            }
        }
    }
    tn_no_grad_end();
    CHECK(worst < FD_TOL, "%s: gradient error %.3g at input %d element %zu (analytic %.12g, numeric %.12g)", name,
          worst, worst_in, worst_el, worst_a, worst_n);
    tn_free(w);
    return worst;
}

/* A float64 leaf of `shape` with values uniform in [lo, hi), requiring grad. Values closer than
 * 0.02 to any of kinks[0..n_kinks) are redrawn, so non-smooth ops are checked off their kinks. */
static tn_tensor *fd_input(tn_rng *rng, int ndim, const size_t *shape, double lo, double hi, const double *kinks,
                           int n_kinks)
{
    tn_tensor *t = tn_zeros(TN_F64, ndim, shape);
    for (size_t e = 0; t && e < tn_numel(t); e++) {
        double v;
        int near;
        do {
            v = lo + (hi - lo) * tn_rng_uniform(rng);
            near = 0;
            for (int k = 0; k < n_kinks; k++) near |= fabs(v - kinks[k]) < 0.02;
        } while (near);
        tn_set(t, e, v);
    }
    tn_set_requires_grad(t, 1);
    return t;
}

#endif
