/* test_tn_vk_ops.c: every tn op on Vulkan against the CPU reference. For each case the same
 * float32 inputs run on both devices; the outputs and, after backward with one random output
 * gradient, every input's gradient must agree element by element within
 * |gpu - cpu| <= RTOL |cpu| + ATOL. Cases cover broadcasting, strided views (transposed,
 * sliced, expanded operands), reductions over one dim / all dims / large counts, matmul with
 * ragged tiles, batches and transposed operands, softmax on large inputs, gather with repeated
 * indices, and every loss. A kernel lab sweeps exp / log / tanh / sigmoid / sqrt / pow over
 * their range with a pure relative tolerance. Also: device copies and their gradients,
 * mixed-device and float64 errors, determinism, leak checks. With DLCA_VALIDATE=1 any
 * validation message fails the test. */
#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "tn_ops.h"
#include "tn_vk.h"
#include "vk_context.h"

#include <stdint.h>
#include <string.h>

#define RTOL 1e-5
#define ATOL 1e-6

static const char *test_name = "test_tn_vk_ops";
static vk_context vk;
static tn_vk *tdev;
static tn_rng rng;
static double worst_seen; /* largest |gpu - cpu| / (RTOL |cpu| + ATOL) over all checks */

/* Compares a CPU and a device tensor of one shape; prints the first mismatches. */
static void compare_tol(const char *what, tn_tensor *cpu, tn_tensor *dev, double rtol, double atol)
{
    CHECK(cpu && dev, "%s: missing result: %s", what, err_message());
    if (!cpu || !dev) return;
    int same = cpu->ndim == dev->ndim && dev->device == TN_VULKAN && cpu->device == TN_CPU;
    for (int d = 0; same && d < cpu->ndim; d++) same = cpu->shape[d] == dev->shape[d];
    CHECK(same, "%s: shapes or devices differ", what);
    if (!same) return;
    size_t n = tn_numel(cpu), bad = 0;
    double *c = malloc((n + 1) * sizeof *c), *g = malloc((n + 1) * sizeof *g);
    int rc = c && g ? tn_read(cpu, c) | tn_read(dev, g) : DLCA_ERR;
    CHECK(rc == DLCA_OK, "%s: read: %s", what, err_message());
    for (size_t i = 0; rc == DLCA_OK && i < n; i++) {
        double lim = atol + rtol * fabs(c[i]), err = fabs(g[i] - c[i]);
        if (!(err <= lim) && bad++ < 3) fprintf(stderr, "  %s[%zu]: gpu %.9g cpu %.9g\n", what, i, g[i], c[i]);
        if (err / lim > worst_seen) worst_seen = err / lim;
    }
    CHECK(bad == 0, "%s: %zu of %zu elements differ", what, bad, n);
    free(c);
    free(g);
}

static void compare(const char *what, tn_tensor *cpu, tn_tensor *dev) { compare_tol(what, cpu, dev, RTOL, ATOL); }

/* ---- the ops under test ---- */

typedef tn_tensor *(*op_fn)(tn_tensor **in);

static tn_tensor *f_add(tn_tensor **in) { return tn_add(in[0], in[1]); }
static tn_tensor *f_sub(tn_tensor **in) { return tn_sub(in[0], in[1]); }
static tn_tensor *f_mul(tn_tensor **in) { return tn_mul(in[0], in[1]); }
static tn_tensor *f_div(tn_tensor **in) { return tn_div(in[0], in[1]); }
static tn_tensor *f_pow(tn_tensor **in) { return tn_pow(in[0], in[1]); }
static tn_tensor *f_add_scalar(tn_tensor **in) { return tn_add_scalar(in[0], 0.7); }
static tn_tensor *f_mul_scalar(tn_tensor **in) { return tn_mul_scalar(in[0], -1.3); }
static tn_tensor *f_pow_scalar(tn_tensor **in) { return tn_pow_scalar(in[0], 2.5); }
static tn_tensor *f_pow_int(tn_tensor **in) { return tn_pow_scalar(in[0], 3.0); } /* negative bases too */
static tn_tensor *f_neg(tn_tensor **in) { return tn_neg(in[0]); }
static tn_tensor *f_exp(tn_tensor **in) { return tn_exp(in[0]); }
static tn_tensor *f_log(tn_tensor **in) { return tn_log(in[0]); }
static tn_tensor *f_sqrt(tn_tensor **in) { return tn_sqrt(in[0]); }
static tn_tensor *f_abs(tn_tensor **in) { return tn_abs(in[0]); }
static tn_tensor *f_clamp(tn_tensor **in) { return tn_clamp(in[0], -0.5, 0.5); }
static tn_tensor *f_relu(tn_tensor **in) { return tn_relu(in[0]); }
static tn_tensor *f_sigmoid(tn_tensor **in) { return tn_sigmoid(in[0]); }
static tn_tensor *f_tanh(tn_tensor **in) { return tn_tanh(in[0]); }

static tn_tensor *f_reshape(tn_tensor **in) { return tn_reshape(in[0], TN_SHAPE(2, TN_INFER)); }
static tn_tensor *f_transpose(tn_tensor **in) { return tn_transpose(in[0], 0, -1); }
static tn_tensor *f_permute(tn_tensor **in) { return tn_permute(in[0], (const int[]){2, 0, 1}); }
static tn_tensor *f_slice(tn_tensor **in) { return tn_slice(in[0], 1, 1, 5, 2); }
static tn_tensor *f_select(tn_tensor **in) { return tn_select(in[0], 0, 1); }
static tn_tensor *f_expand(tn_tensor **in) { return tn_expand(in[0], TN_SHAPE(2, 3, 4)); }

/* a binary op and a reshape on transposed (non-contiguous) operands */
static tn_tensor *f_mul_transposed(tn_tensor **in)
{
    tn_tensor *t = tn_transpose(in[0], 0, 1);
    tn_tensor *y = tn_mul(t, in[1]);
    tn_free(t);
    return y;
}

static tn_tensor *f_reshape_copy(tn_tensor **in)
{
    tn_tensor *t = tn_transpose(in[0], 0, 1);
    tn_tensor *y = tn_reshape(t, TN_SHAPE(TN_INFER));
    tn_free(t);
    return y;
}

/* sliced with a step, then exp: an elementwise kernel on a strided view with an offset */
static tn_tensor *f_exp_slice(tn_tensor **in)
{
    tn_tensor *s = tn_slice(in[0], 1, 1, 7, 3);
    tn_tensor *y = tn_exp(s);
    tn_free(s);
    return y;
}

static tn_tensor *f_sum(tn_tensor **in) { return tn_sum(in[0]); }
static tn_tensor *f_sum_dim0(tn_tensor **in) { return tn_sum_dim(in[0], 0, 0); }
static tn_tensor *f_sum_dim1_keep(tn_tensor **in) { return tn_sum_dim(in[0], 1, 1); }
static tn_tensor *f_mean(tn_tensor **in) { return tn_mean(in[0]); }
static tn_tensor *f_mean_dim(tn_tensor **in) { return tn_mean_dim(in[0], -1, 0); }
static tn_tensor *f_mean_dim_keep(tn_tensor **in) { return tn_mean_dim(in[0], 1, 1); }
static tn_tensor *f_max(tn_tensor **in) { return tn_max(in[0]); }
static tn_tensor *f_max_dim0(tn_tensor **in) { return tn_max_dim(in[0], 0, 0); }
static tn_tensor *f_max_dim1_keep(tn_tensor **in) { return tn_max_dim(in[0], 1, 1); }

static tn_tensor *f_sum_transposed(tn_tensor **in)
{
    tn_tensor *t = tn_transpose(in[0], 0, 2);
    tn_tensor *y = tn_sum_dim(t, 1, 0);
    tn_free(t);
    return y;
}

static tn_tensor *f_matmul(tn_tensor **in) { return tn_matmul(in[0], in[1]); }

/* a^T b with a stored [k, n]: the kernel reads a through swapped strides */
static tn_tensor *f_matmul_at(tn_tensor **in)
{
    tn_tensor *t = tn_transpose(in[0], 0, 1);
    tn_tensor *y = tn_matmul(t, in[1]);
    tn_free(t);
    return y;
}

static tn_tensor *f_softmax1(tn_tensor **in) { return tn_softmax(in[0], 1); }
static tn_tensor *f_softmax0(tn_tensor **in) { return tn_softmax(in[0], 0); }
static tn_tensor *f_log_softmax1(tn_tensor **in) { return tn_log_softmax(in[0], 1); }
static tn_tensor *f_log_softmax_mid(tn_tensor **in) { return tn_log_softmax(in[0], 1); }

/* logits far from zero: stable only when shifted by the max */
static tn_tensor *f_softmax_large(tn_tensor **in)
{
    tn_tensor *big = tn_mul_scalar(in[0], 400.0);
    tn_tensor *y = tn_log_softmax(big, -1);
    tn_free(big);
    return y;
}

static tn_tensor *f_gather(tn_tensor **in)
{
    static const int64_t index[] = {2, 0, 0, 4, 1, 1, 3, 3, 0}; /* [3, 3], repeats included */
    return tn_gather(in[0], 1, index, (const size_t[]){3, 3});
}

static tn_tensor *f_index_select(tn_tensor **in)
{
    static const int64_t index[] = {2, 0, 2, 1, 2};
    return tn_index_select(in[0], 0, index, 5);
}

static const int64_t labels[8] = {3, 0, 4, 4, 1, 2, 0, 3};

static tn_tensor *f_mse(tn_tensor **in) { return tn_mse_loss(in[0], in[1], TN_REDUCE_MEAN); }
static tn_tensor *f_mse_none(tn_tensor **in) { return tn_mse_loss(in[0], in[1], TN_REDUCE_NONE); }
static tn_tensor *f_l1(tn_tensor **in) { return tn_l1_loss(in[0], in[1], TN_REDUCE_SUM); }
static tn_tensor *f_huber(tn_tensor **in) { return tn_huber_loss(in[0], in[1], 0.4, TN_REDUCE_MEAN); }
static tn_tensor *f_cross_entropy(tn_tensor **in) { return tn_cross_entropy(in[0], labels, TN_REDUCE_MEAN); }
static tn_tensor *f_cross_entropy_none(tn_tensor **in) { return tn_cross_entropy(in[0], labels, TN_REDUCE_NONE); }

static tn_tensor *f_nll(tn_tensor **in)
{
    tn_tensor *logp = tn_log_softmax(in[0], 1);
    tn_tensor *y = tn_nll_loss(logp, labels, TN_REDUCE_SUM);
    tn_free(logp);
    return y;
}

/* softmax(tanh(x W + b)): the shape of a small layer */
static tn_tensor *f_layer(tn_tensor **in)
{
    tn_tensor *xw = tn_matmul(in[0], in[1]);
    tn_tensor *h = tn_add(xw, in[2]);
    tn_tensor *a = tn_tanh(h);
    tn_tensor *y = tn_softmax(a, -1);
    tn_free(xw);
    tn_free(h);
    tn_free(a);
    return y;
}

/* ---- the table ---- */

typedef struct {
    const char *name;
    op_fn f;
    int n_in;
    int ndim[3];
    size_t shape[3][4];
    double lo, hi; /* input range */
} op_case;

static const op_case cases[] = {
    {"add [3,1]+[3,5]", f_add, 2, {2, 2}, {{3, 1}, {3, 5}}, -2, 2},
    {"add [5]+[3,5]", f_add, 2, {1, 2}, {{5}, {3, 5}}, -2, 2},
    {"add [2,1,4]+[3,1]", f_add, 2, {3, 2}, {{2, 1, 4}, {3, 1}}, -2, 2},
    {"add []+[2,3]", f_add, 2, {0, 2}, {{0}, {2, 3}}, -2, 2},
    {"add [300,33]+[33]", f_add, 2, {2, 1}, {{300, 33}, {33}}, -2, 2},
    {"sub [3,5]-[3,1]", f_sub, 2, {2, 2}, {{3, 5}, {3, 1}}, -2, 2},
    {"mul [2,3,1]*[1,4]", f_mul, 2, {3, 2}, {{2, 3, 1}, {1, 4}}, -2, 2},
    {"mul [5,3]^T*[3,5]", f_mul_transposed, 2, {2, 2}, {{5, 3}, {3, 5}}, -2, 2},
    {"div [3,5]/[5]", f_div, 2, {2, 1}, {{3, 5}, {5}}, 0.5, 2},
    {"div [1,4]/[3,1]", f_div, 2, {2, 2}, {{1, 4}, {3, 1}}, 0.5, 2},
    {"pow [3,4]^[3,4]", f_pow, 2, {2, 2}, {{3, 4}, {3, 4}}, 0.5, 2},
    {"pow [3,1]^[4]", f_pow, 2, {2, 1}, {{3, 1}, {4}}, 0.5, 2},
    {"add_scalar", f_add_scalar, 1, {2}, {{3, 4}}, -2, 2},
    {"mul_scalar", f_mul_scalar, 1, {2}, {{3, 4}}, -2, 2},
    {"pow_scalar 2.5", f_pow_scalar, 1, {2}, {{3, 4}}, 0.2, 2},
    {"pow_scalar 3 (negative bases)", f_pow_int, 1, {2}, {{3, 4}}, -2, 2},
    {"neg", f_neg, 1, {2}, {{3, 4}}, -2, 2},
    {"exp", f_exp, 1, {2}, {{30, 40}}, -10, 10},
    {"exp of a stepped slice", f_exp_slice, 1, {2}, {{4, 9}}, -2, 2},
    {"log", f_log, 1, {2}, {{30, 40}}, 0.01, 50},
    {"sqrt", f_sqrt, 1, {2}, {{30, 40}}, 0.01, 50},
    {"abs", f_abs, 1, {2}, {{3, 4}}, -2, 2},
    {"clamp", f_clamp, 1, {2}, {{4, 5}}, -1, 1},
    {"relu", f_relu, 1, {2}, {{3, 4}}, -2, 2},
    {"sigmoid", f_sigmoid, 1, {2}, {{30, 40}}, -20, 20},
    {"tanh", f_tanh, 1, {2}, {{30, 40}}, -6, 6},
    {"reshape", f_reshape, 1, {3}, {{2, 3, 2}}, -2, 2},
    {"reshape (copy)", f_reshape_copy, 1, {2}, {{3, 4}}, -2, 2},
    {"transpose", f_transpose, 1, {3}, {{2, 3, 4}}, -2, 2},
    {"permute", f_permute, 1, {3}, {{2, 3, 4}}, -2, 2},
    {"slice", f_slice, 1, {2}, {{3, 6}}, -2, 2},
    {"select", f_select, 1, {3}, {{3, 2, 4}}, -2, 2},
    {"expand", f_expand, 1, {2}, {{3, 1}}, -2, 2},
    {"sum", f_sum, 1, {3}, {{2, 3, 4}}, 0.5, 2},
    {"sum of 20000", f_sum, 1, {2}, {{500, 40}}, 0.5, 2},
    {"sum dim 0", f_sum_dim0, 1, {2}, {{300, 7}}, 0.5, 2},
    {"sum dim 1 keepdim", f_sum_dim1_keep, 1, {3}, {{2, 3, 4}}, 0.5, 2},
    {"sum dim of a transposed view", f_sum_transposed, 1, {3}, {{3, 4, 5}}, 0.5, 2},
    {"mean", f_mean, 1, {2}, {{3, 4}}, 0.5, 2},
    {"mean dim -1", f_mean_dim, 1, {3}, {{2, 3, 4}}, 0.5, 2},
    {"mean dim 1 keepdim", f_mean_dim_keep, 1, {2}, {{3, 4}}, 0.5, 2},
    {"max", f_max, 1, {2}, {{30, 40}}, -2, 2},
    {"max dim 0", f_max_dim0, 1, {2}, {{300, 4}}, -2, 2},
    {"max dim 1 keepdim", f_max_dim1_keep, 1, {3}, {{2, 5, 3}}, -2, 2},
    {"matmul [3,4]x[4,5]", f_matmul, 2, {2, 2}, {{3, 4}, {4, 5}}, 0.1, 1},
    {"matmul [37,50]x[50,29]", f_matmul, 2, {2, 2}, {{37, 50}, {50, 29}}, 0.1, 1},
    {"matmul [2,3,4]x[2,4,5]", f_matmul, 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}, 0.1, 1},
    {"matmul [2,3,4]x[4,5]", f_matmul, 2, {3, 2}, {{2, 3, 4}, {4, 5}}, 0.1, 1},
    {"matmul [2,1,3,4]x[3,4,2]", f_matmul, 2, {4, 3}, {{2, 1, 3, 4}, {3, 4, 2}}, 0.1, 1},
    {"matmul [20,17]^T x [20,18]", f_matmul_at, 2, {2, 2}, {{20, 17}, {20, 18}}, 0.1, 1},
    {"matmul [4]x[4,5]", f_matmul, 2, {1, 2}, {{4}, {4, 5}}, 0.1, 1},
    {"matmul [3,4]x[4]", f_matmul, 2, {2, 1}, {{3, 4}, {4}}, 0.1, 1},
    {"matmul [4]x[4]", f_matmul, 2, {1, 1}, {{4}, {4}}, 0.1, 1},
    {"softmax dim 1", f_softmax1, 1, {2}, {{3, 5}}, -3, 3},
    {"softmax dim 0", f_softmax0, 1, {2}, {{300, 5}}, -3, 3},
    {"log_softmax dim 1", f_log_softmax1, 1, {2}, {{7, 100}}, -3, 3},
    {"log_softmax dim 1 of 3-d", f_log_softmax_mid, 1, {3}, {{2, 3, 4}}, -3, 3},
    {"log_softmax of 400x", f_softmax_large, 1, {2}, {{4, 6}}, -3, 3},
    {"gather dim 1", f_gather, 1, {2}, {{3, 5}}, -2, 2},
    {"index_select dim 0", f_index_select, 1, {2}, {{3, 4}}, -2, 2},
    {"mse_loss mean", f_mse, 2, {2, 2}, {{8, 3}, {8, 3}}, -2, 2},
    {"mse_loss none", f_mse_none, 2, {2, 2}, {{8, 3}, {8, 3}}, -2, 2},
    {"l1_loss sum", f_l1, 2, {2, 2}, {{8, 3}, {8, 3}}, -2, 2},
    {"huber_loss mean", f_huber, 2, {2, 2}, {{8, 3}, {8, 3}}, -1, 1},
    {"cross_entropy mean", f_cross_entropy, 1, {2}, {{8, 5}}, -3, 3},
    {"cross_entropy none", f_cross_entropy_none, 1, {2}, {{8, 5}}, -3, 3},
    {"nll_loss sum", f_nll, 1, {2}, {{8, 5}}, -3, 3},
    {"layer softmax(tanh(xW+b))", f_layer, 3, {2, 2, 1}, {{16, 24}, {24, 10}, {10}}, -1, 1},
};

static void run_case(const op_case *c)
{
    tn_tensor *cin[3] = {NULL}, *din[3] = {NULL};
    char what[160];
    for (int i = 0; i < c->n_in; i++) {
        cin[i] = tn_zeros(TN_F32, c->ndim[i], c->shape[i]);
        tn_fill_uniform(cin[i], &rng, c->lo, c->hi);
        din[i] = tn_to_device(cin[i], tdev);
        tn_set_requires_grad(cin[i], 1);
        tn_set_requires_grad(din[i], 1);
    }
    tn_tensor *yc = c->f(cin), *yd = c->f(din);
    snprintf(what, sizeof what, "%s: forward", c->name);
    compare(what, yc, yd);
    if (yc && yd) {
        tn_tensor *gc = tn_zeros(TN_F32, yc->ndim, yc->shape);
        tn_fill_uniform(gc, &rng, -1, 1);
        tn_tensor *gd = tn_to_device(gc, tdev);
        int rc = tn_backward_grad(yc, gc);
        CHECK(rc == DLCA_OK, "%s: cpu backward: %s", c->name, err_message());
        rc = tn_backward_grad(yd, gd);
        CHECK(rc == DLCA_OK, "%s: vulkan backward: %s", c->name, err_message());
        for (int i = 0; i < c->n_in; i++) {
            snprintf(what, sizeof what, "%s: gradient of input %d", c->name, i);
            compare(what, cin[i]->grad, din[i]->grad);
        }
        tn_free(gc);
        tn_free(gd);
    }
    tn_free(yc);
    tn_free(yd);
    for (int i = 0; i < c->n_in; i++) {
        tn_free(cin[i]);
        tn_free(din[i]);
    }
}

/* ---- kernel lab: the float functions over their range, pure relative tolerance ---- */

static void lab(const char *name, op_fn f, const double *x, size_t n)
{
    tn_tensor *c = tn_from_f64(TN_F32, 1, &n, x);
    tn_tensor *d = tn_to_device(c, tdev);
    tn_tensor *yc = f(&c), *yd = f(&d);
    /* 1e-37: exp and sigmoid results below the smallest normal float may flush to zero */
    compare_tol(name, yc, yd, RTOL, 1e-37);
    tn_free(c), tn_free(d), tn_free(yc), tn_free(yd);
}

static void test_functions(void)
{
    enum { N = 4001 };
    static double x[N];
    for (int i = 0; i < N; i++) x[i] = -87.0 + 175.0 * i / (N - 1);
    lab("lab exp [-87, 88]", f_exp, x, N);
    for (int i = 0; i < N; i++) x[i] = -80.0 + 160.0 * i / (N - 1);
    lab("lab sigmoid [-80, 80]", f_sigmoid, x, N);
    for (int i = 0; i < N; i++) x[i] = (i % 2 ? -1 : 1) * pow(10.0, -8.0 + 9.1 * (i / 2) / (N / 2));
    lab("lab tanh +-[1e-8, 12.6]", f_tanh, x, N);
    lab("lab exp +-[1e-8, 12.6]", f_exp, x, N);
    for (int i = 0; i < N; i++) x[i] = pow(10.0, -37.0 + 75.0 * i / (N - 1));
    lab("lab log [1e-37, 1e38]", f_log, x, N);
    lab("lab sqrt [1e-37, 1e38]", f_sqrt, x, N);
    for (int i = 0; i < N; i++) x[i] = 0.9 + 0.2 * i / (N - 1);
    lab("lab log [0.9, 1.1]", f_log, x, N);
    for (int i = 0; i < N; i++) x[i] = pow(10.0, -2.0 + 4.0 * i / (N - 1));
    lab("lab pow x^2.5 [0.01, 100]", f_pow_scalar, x, N);
    for (int i = 0; i < N; i++) x[i] = -50.0 + 100.0 * i / (N - 1);
    lab("lab pow x^3 [-50, 50]", f_pow_int, x, N);
}

/* ---- copies, errors, determinism ---- */

static void test_copies_and_errors(void)
{
    double v[6] = {1, -2, 3.5, 4, -5, 6.25}, back[6] = {0};
    tn_tensor *c = tn_from_f64(TN_F32, TN_SHAPE(2, 3), v);
    tn_tensor *d = tn_to_device(c, tdev);
    CHECK(d && d->device == TN_VULKAN && d->storage->data == NULL, "tn_to_device makes a device tensor");
    tn_tensor *t = tn_transpose(d, 0, 1);
    tn_tensor *h = tn_to_cpu(t); /* strided device view -> dense CPU copy */
    CHECK(h && h->device == TN_CPU && tn_is_contiguous(h), "tn_to_cpu makes a dense CPU tensor");
    CHECK(tn_read(h, back) == DLCA_OK && back[1] == 4 && back[2] == -2 && back[5] == 6.25, "transposed copy back");
    CHECK(tn_get(t, 3) == -5.0 && tn_get(t, 4) == 3.5, "tn_get of a device view: %g %g", tn_get(t, 3), tn_get(t, 4));
    CHECK(tn_set(d, 0, 9.0) == DLCA_OK && tn_get(d, 0) == 9.0, "tn_set and tn_get on the device");

    tn_tensor *mixed = tn_add(c, d);
    CHECK(mixed == NULL && strstr(err_message(), "different devices") && strstr(err_message(), "tn_to_device"),
          "mixing devices is an error: %s", err_message());
    tn_tensor *m2 = tn_matmul(c, d);
    CHECK(m2 == NULL && strstr(err_message(), "different devices"), "matmul across devices: %s", err_message());
    tn_tensor *c64 = tn_zeros(TN_F64, TN_SHAPE(2));
    tn_tensor *d64 = tn_to_device(c64, tdev);
    CHECK(d64 == NULL && strstr(err_message(), "float32"), "float64 stays on the CPU: %s", err_message());

    /* the copies are differentiable: d/dx sum(to_cpu(to_device(x) * 2)) = 2 on the CPU leaf */
    tn_tensor *x = tn_from_f64(TN_F32, TN_SHAPE(2, 3), v);
    tn_set_requires_grad(x, 1);
    tn_tensor *xd = tn_to_device(x, tdev);
    tn_tensor *y = tn_mul_scalar(xd, 2.0);
    tn_tensor *yh = tn_to_cpu(y);
    tn_tensor *s = tn_sum(yh);
    CHECK(s && tn_backward(s) == DLCA_OK, "backward through the copies: %s", err_message());
    CHECK(x->grad && x->grad->device == TN_CPU && tn_get(x->grad, 4) == 2.0, "gradient reaches the CPU leaf");
    CHECK(tn_vk_close(tdev) == DLCA_ERR && strstr(err_message(), "still alive"), "tn_vk_close with live tensors: %s",
          err_message());
    tn_free(x), tn_free(xd), tn_free(y), tn_free(yh), tn_free(s), tn_free(c64), tn_free(mixed), tn_free(m2);
    tn_free(c), tn_free(d), tn_free(t), tn_free(h);
    err_clear();
}

/* Reductions use fixed orders: the same input gives the same bits. */
static void test_determinism(void)
{
    tn_tensor *c = tn_zeros(TN_F32, TN_SHAPE(1000, 37));
    tn_fill_uniform(c, &rng, -1, 1);
    tn_tensor *d = tn_to_device(c, tdev);
    float first = 0;
    int same = 1;
    for (int run = 0; run < 3; run++) {
        tn_tensor *s = tn_sum(d);
        float v = (float)tn_item(s);
        if (run == 0) first = v;
        same &= memcmp(&v, &first, sizeof v) == 0;
        tn_free(s);
    }
    CHECK(same, "sum of 37000 values is the same bits on every run");
    tn_free(c), tn_free(d);
}

int main(void)
{
    int rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    printf("%s: %s, validation %s\n", test_name, vk.props.deviceName, vk.validate ? "on" : "off");
    /* DLCA_TN_SYNC=1: submit and wait after every op, pinning a failing kernel to its op */
    const char *sync = getenv("DLCA_TN_SYNC");
    tn_vk_options options = {.sync_each = sync && sync[0] == '1'};
    rc = tn_vk_open(&tdev, &vk, &options);
    CHECK(rc == DLCA_OK, "tn_vk_open: %s", err_message());
    if (rc) return test_finish(test_name);
    tn_rng_seed(&rng, 7);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    test_functions();
    test_copies_and_errors();
    test_determinism();
    printf("%s: worst error %.3f of the tolerance (RTOL %g, ATOL %g)\n", test_name, worst_seen, RTOL, ATOL);
    tn_vk_stats stats;
    tn_vk_stats_get(tdev, &stats);
    CHECK(stats.live_storages == 0, "%ld device storages leaked", stats.live_storages);
    CHECK(tn_vk_close(tdev) == DLCA_OK, "tn_vk_close: %s", err_message());
    CHECK(vk.device_bytes == 0, "%zu bytes of device buffers left", vk.device_bytes);
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    return test_finish(test_name);
}
