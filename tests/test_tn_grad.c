/* test_tn_grad.c: finite-difference checks (float64, central, eps 1e-6, relative error < 1e-6)
 * for every differentiable op: elementwise with broadcasting ([3,1] + [3,5] and others), unary,
 * views, reductions, matmul (2-d, batched, broadcast batch, vectors), softmax, log_softmax,
 * gather and index_select, and a few composed graphs. */
#include "check.h"
#include "tn_fd.h"

#include <string.h>

/* ---- the functions under test: in[] are the inputs, ctx carries constant arguments ---- */

static tn_tensor *f_add(tn_tensor **in, void *c) { return tn_add(in[0], in[1]); }
static tn_tensor *f_sub(tn_tensor **in, void *c) { return tn_sub(in[0], in[1]); }
static tn_tensor *f_mul(tn_tensor **in, void *c) { return tn_mul(in[0], in[1]); }
static tn_tensor *f_div(tn_tensor **in, void *c) { return tn_div(in[0], in[1]); }
static tn_tensor *f_pow(tn_tensor **in, void *c) { return tn_pow(in[0], in[1]); }
static tn_tensor *f_add_scalar(tn_tensor **in, void *c) { return tn_add_scalar(in[0], 0.7); }
static tn_tensor *f_mul_scalar(tn_tensor **in, void *c) { return tn_mul_scalar(in[0], -1.3); }
static tn_tensor *f_pow_scalar(tn_tensor **in, void *c) { return tn_pow_scalar(in[0], 2.5); }
static tn_tensor *f_neg(tn_tensor **in, void *c) { return tn_neg(in[0]); }
static tn_tensor *f_exp(tn_tensor **in, void *c) { return tn_exp(in[0]); }
static tn_tensor *f_log(tn_tensor **in, void *c) { return tn_log(in[0]); }
static tn_tensor *f_sqrt(tn_tensor **in, void *c) { return tn_sqrt(in[0]); }
static tn_tensor *f_abs(tn_tensor **in, void *c) { return tn_abs(in[0]); }
static tn_tensor *f_clamp(tn_tensor **in, void *c) { return tn_clamp(in[0], -0.5, 0.5); }
static tn_tensor *f_relu(tn_tensor **in, void *c) { return tn_relu(in[0]); }
static tn_tensor *f_sigmoid(tn_tensor **in, void *c) { return tn_sigmoid(in[0]); }
static tn_tensor *f_tanh(tn_tensor **in, void *c) { return tn_tanh(in[0]); }

static tn_tensor *f_reshape(tn_tensor **in, void *c) { return tn_reshape(in[0], TN_SHAPE(2, TN_INFER)); }
static tn_tensor *f_transpose(tn_tensor **in, void *c) { return tn_transpose(in[0], 0, -1); }
static tn_tensor *f_permute(tn_tensor **in, void *c) { return tn_permute(in[0], (const int[]){2, 0, 1}); }
static tn_tensor *f_slice(tn_tensor **in, void *c) { return tn_slice(in[0], 1, 1, 5, 2); }
static tn_tensor *f_select(tn_tensor **in, void *c) { return tn_select(in[0], 0, 1); }
static tn_tensor *f_expand(tn_tensor **in, void *c) { return tn_expand(in[0], TN_SHAPE(2, 3, 4)); }

/* reshape of a transposed (non-contiguous) view takes the copying path */
static tn_tensor *f_reshape_copy(tn_tensor **in, void *c)
{
    tn_tensor *t = tn_transpose(in[0], 0, 1);
    tn_tensor *y = tn_reshape(t, TN_SHAPE(TN_INFER));
    tn_free(t);
    return y;
}

static tn_tensor *f_contiguous(tn_tensor **in, void *c)
{
    tn_tensor *t = tn_transpose(in[0], 0, 1);
    tn_tensor *y = tn_contiguous(t);
    tn_free(t);
    return y;
}

static tn_tensor *f_sum(tn_tensor **in, void *c) { return tn_sum(in[0]); }
static tn_tensor *f_sum_dim0(tn_tensor **in, void *c) { return tn_sum_dim(in[0], 0, 0); }
static tn_tensor *f_sum_dim1_keep(tn_tensor **in, void *c) { return tn_sum_dim(in[0], 1, 1); }
static tn_tensor *f_mean(tn_tensor **in, void *c) { return tn_mean(in[0]); }
static tn_tensor *f_mean_dim(tn_tensor **in, void *c) { return tn_mean_dim(in[0], -1, 0); }
static tn_tensor *f_mean_dim_keep(tn_tensor **in, void *c) { return tn_mean_dim(in[0], 1, 1); }
static tn_tensor *f_max(tn_tensor **in, void *c) { return tn_max(in[0]); }
static tn_tensor *f_max_dim0(tn_tensor **in, void *c) { return tn_max_dim(in[0], 0, 0); }
static tn_tensor *f_max_dim1_keep(tn_tensor **in, void *c) { return tn_max_dim(in[0], 1, 1); }

static tn_tensor *f_matmul(tn_tensor **in, void *c) { return tn_matmul(in[0], in[1]); }
static tn_tensor *f_softmax1(tn_tensor **in, void *c) { return tn_softmax(in[0], 1); }
static tn_tensor *f_softmax0(tn_tensor **in, void *c) { return tn_softmax(in[0], 0); }
static tn_tensor *f_log_softmax1(tn_tensor **in, void *c) { return tn_log_softmax(in[0], 1); }
static tn_tensor *f_log_softmax_last(tn_tensor **in, void *c) { return tn_log_softmax(in[0], -1); }

static tn_tensor *f_gather(tn_tensor **in, void *c)
{
    static const int64_t index[] = {2, 0, 0, 4, 1, 1, 3, 3, 0}; /* [3, 3], repeats included */
    return tn_gather(in[0], 1, index, (const size_t[]){3, 3});
}

static tn_tensor *f_index_select(tn_tensor **in, void *c)
{
    static const int64_t index[] = {2, 0, 2, 1};
    return tn_index_select(in[0], 0, index, 4);
}

/* x * x + x: a tensor used by two ops, gradients summed */
static tn_tensor *f_diamond(tn_tensor **in, void *c)
{
    tn_tensor *sq = tn_mul(in[0], in[0]);
    tn_tensor *y = tn_add(sq, in[0]);
    tn_free(sq);
    return y;
}

/* tanh(x W + b) then softmax: the shape of a small layer */
static tn_tensor *f_layer(tn_tensor **in, void *c)
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
    fd_fn f;
    int n_in;
    int ndim[3];
    size_t shape[3][4];
    double lo, hi; /* input range */
    int kinks;     /* avoid 0 and +-0.5 (abs, relu, clamp, max) */
} fd_case;

static const fd_case cases[] = {
    {"add [3,1]+[3,5]", f_add, 2, {2, 2}, {{3, 1}, {3, 5}}, -2, 2, 0},
    {"add [5]+[3,5]", f_add, 2, {1, 2}, {{5}, {3, 5}}, -2, 2, 0},
    {"add [2,1,4]+[3,1]", f_add, 2, {3, 2}, {{2, 1, 4}, {3, 1}}, -2, 2, 0},
    {"add []+[2,3]", f_add, 2, {0, 2}, {{0}, {2, 3}}, -2, 2, 0},
    {"sub [3,5]-[3,1]", f_sub, 2, {2, 2}, {{3, 5}, {3, 1}}, -2, 2, 0},
    {"mul [2,3,1]*[1,4]", f_mul, 2, {3, 2}, {{2, 3, 1}, {1, 4}}, -2, 2, 0},
    {"mul [3,4]*[3,4]", f_mul, 2, {2, 2}, {{3, 4}, {3, 4}}, -2, 2, 0},
    {"div [3,5]/[5]", f_div, 2, {2, 1}, {{3, 5}, {5}}, 0.5, 2, 0},
    {"div [1,4]/[3,1]", f_div, 2, {2, 2}, {{1, 4}, {3, 1}}, 0.5, 2, 0},
    {"pow [3,4]^[3,4]", f_pow, 2, {2, 2}, {{3, 4}, {3, 4}}, 0.5, 2, 0},
    {"pow [3,1]^[4]", f_pow, 2, {2, 1}, {{3, 1}, {4}}, 0.5, 2, 0},
    {"add_scalar", f_add_scalar, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"mul_scalar", f_mul_scalar, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"pow_scalar", f_pow_scalar, 1, {2}, {{3, 4}}, 0.2, 2, 0},
    {"neg", f_neg, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"exp", f_exp, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"log", f_log, 1, {2}, {{3, 4}}, 0.2, 3, 0},
    {"sqrt", f_sqrt, 1, {2}, {{3, 4}}, 0.2, 3, 0},
    {"abs", f_abs, 1, {2}, {{3, 4}}, -2, 2, 1},
    {"clamp", f_clamp, 1, {2}, {{4, 5}}, -1, 1, 1},
    {"relu", f_relu, 1, {2}, {{3, 4}}, -2, 2, 1},
    {"sigmoid", f_sigmoid, 1, {2}, {{3, 4}}, -4, 4, 0},
    {"tanh", f_tanh, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"reshape", f_reshape, 1, {3}, {{2, 3, 2}}, -2, 2, 0},
    {"reshape (copy)", f_reshape_copy, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"transpose", f_transpose, 1, {3}, {{2, 3, 4}}, -2, 2, 0},
    {"permute", f_permute, 1, {3}, {{2, 3, 4}}, -2, 2, 0},
    {"slice", f_slice, 1, {2}, {{3, 6}}, -2, 2, 0},
    {"select", f_select, 1, {3}, {{3, 2, 4}}, -2, 2, 0},
    {"expand", f_expand, 1, {2}, {{3, 1}}, -2, 2, 0},
    {"contiguous", f_contiguous, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"sum", f_sum, 1, {3}, {{2, 3, 4}}, -2, 2, 0},
    {"sum dim 0", f_sum_dim0, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"sum dim 1 keepdim", f_sum_dim1_keep, 1, {3}, {{2, 3, 4}}, -2, 2, 0},
    {"mean", f_mean, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"mean dim -1", f_mean_dim, 1, {3}, {{2, 3, 4}}, -2, 2, 0},
    {"mean dim 1 keepdim", f_mean_dim_keep, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"max", f_max, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"max dim 0", f_max_dim0, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"max dim 1 keepdim", f_max_dim1_keep, 1, {3}, {{2, 5, 3}}, -2, 2, 0},
    {"matmul [3,4]x[4,5]", f_matmul, 2, {2, 2}, {{3, 4}, {4, 5}}, -2, 2, 0},
    {"matmul [2,3,4]x[2,4,5]", f_matmul, 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}, -2, 2, 0},
    {"matmul [2,3,4]x[4,5]", f_matmul, 2, {3, 2}, {{2, 3, 4}, {4, 5}}, -2, 2, 0},
    {"matmul [2,1,3,4]x[3,4,2]", f_matmul, 2, {4, 3}, {{2, 1, 3, 4}, {3, 4, 2}}, -2, 2, 0},
    {"matmul [4]x[4,5]", f_matmul, 2, {1, 2}, {{4}, {4, 5}}, -2, 2, 0},
    {"matmul [3,4]x[4]", f_matmul, 2, {2, 1}, {{3, 4}, {4}}, -2, 2, 0},
    {"matmul [4]x[4]", f_matmul, 2, {1, 1}, {{4}, {4}}, -2, 2, 0},
    {"softmax dim 1", f_softmax1, 1, {2}, {{3, 5}}, -3, 3, 0},
    {"softmax dim 0", f_softmax0, 1, {2}, {{3, 5}}, -3, 3, 0},
    {"log_softmax dim 1", f_log_softmax1, 1, {2}, {{3, 5}}, -3, 3, 0},
    {"log_softmax dim -1 of 3-d", f_log_softmax_last, 1, {3}, {{2, 3, 4}}, -3, 3, 0},
    {"gather dim 1", f_gather, 1, {2}, {{3, 5}}, -2, 2, 0},
    {"index_select dim 0", f_index_select, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"diamond x*x+x", f_diamond, 1, {2}, {{3, 4}}, -2, 2, 0},
    {"layer softmax(tanh(xW+b))", f_layer, 3, {2, 2, 1}, {{4, 3}, {3, 5}, {5}}, -1, 1, 0},
};

static void run_case(const fd_case *c, tn_rng *rng)
{
    static const double kinks[] = {0.0, -0.5, 0.5};
    tn_tensor *in[3] = {NULL};
    for (int i = 0; i < c->n_in; i++)
        in[i] = fd_input(rng, c->ndim[i], c->shape[i], c->lo, c->hi, kinks, c->kinks ? 3 : 0);
    double worst = fd_check(c->name, c->f, NULL, c->n_in, in);
    printf("  %-28s worst relative error %.2e\n", c->name, worst);
    for (int i = 0; i < c->n_in; i++) tn_free(in[i]);
}

/* Only inputs that require grad get one; the others are constants. */
static void test_partial_requires_grad(tn_rng *rng)
{
    tn_tensor *in[2] = {fd_input(rng, TN_SHAPE(3, 1), -2, 2, NULL, 0), fd_input(rng, TN_SHAPE(3, 5), -2, 2, NULL, 0)};
    tn_set_requires_grad(in[1], 0);
    fd_check("mul, second input constant", f_mul, NULL, 2, in);
    CHECK(in[1]->grad == NULL, "a constant input got a gradient");
    tn_free(in[0]);
    tn_free(in[1]);
}

int main(void)
{
    tn_rng rng;
    tn_rng_seed(&rng, 42);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], &rng);
    test_partial_requires_grad(&rng);
    return test_finish("test_tn_grad");
}
