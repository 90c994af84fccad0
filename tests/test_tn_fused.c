/* test_tn_fused.c: the CA trainer's fused ops and custom functions on the CPU. Finite
 * differences (float64, tn_fd.h) for softmax(z) @ M (dense, 3-d, transposed z, the gates' op
 * matrix), the sum of squared errors (both inputs, strided prediction) and a custom function
 * y = a x^2 written by hand; the custom function and softmax_matmul also against the same
 * expression built from tn ops; straight-through against hard + soft - detach(soft); argmax
 * one-hot values and ties; the custom function's release callback and gradient buffers; noise:
 * the counter-based hash by hand, streams, ranges and moments. */
#include "check.h"
#include "error.h"
#include "gates.h"
#include "rng.h"
#include "tn_fd.h"
#include "tn_function.h"

#include <string.h>

static tn_tensor *m_const; /* the constant matrix of the softmax_matmul cases */

static tn_tensor *f_smm(tn_tensor **in, void *c) { return tn_softmax_matmul(in[0], m_const); }

static tn_tensor *f_smm_transposed(tn_tensor **in, void *c)
{
    tn_tensor *t = tn_transpose(in[0], 0, 1);
    tn_tensor *y = tn_softmax_matmul(t, m_const);
    tn_free(t);
    return y;
}

static tn_tensor *f_sse(tn_tensor **in, void *c) { return tn_sse_loss(in[0], in[1]); }

static tn_tensor *f_sse_strided(tn_tensor **in, void *c)
{
    tn_tensor *t = tn_transpose(in[0], 0, 1);
    tn_tensor *y = tn_sse_loss(t, in[1]);
    tn_free(t);
    return y;
}

/* ---- a custom function: y = a x^2, forward and backward by hand with tn ops ---- */

typedef struct {
    int forwards, backwards, releases;
} square_ctx;

static tn_tensor *square_forward(void *ctx, tn_tensor **in, int n_in)
{
    square_ctx *c = ctx;
    c->forwards++;
    tn_tensor *xx = tn_mul(in[1], in[1]);
    tn_tensor *y = tn_mul(in[0], xx);
    tn_free(xx);
    return y;
}

/* ga = g x^2, gx = 2 a x g: written into the preallocated gradients with tn_assign */
static int square_backward(void *ctx, tn_tensor **in, int n_in, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    square_ctx *c = ctx;
    int rc = DLCA_OK;
    c->backwards++;
    if (gin[0]) {
        tn_tensor *xx = tn_mul(in[1], in[1]);
        tn_tensor *ga = tn_mul(g, xx);
        rc |= tn_assign(gin[0], ga);
        tn_free(xx), tn_free(ga);
    }
    if (gin[1]) {
        tn_tensor *ax = tn_mul(in[0], in[1]);
        tn_tensor *gx = tn_mul(g, ax);
        tn_tensor *gx2 = tn_mul_scalar(gx, 2.0);
        rc |= tn_assign(gin[1], gx2);
        tn_free(ax), tn_free(gx), tn_free(gx2);
    }
    return rc ? DLCA_ERR : DLCA_OK;
}

static void square_release(void *ctx) { ((square_ctx *)ctx)->releases++; }

static const tn_function square_fn = {"square", square_forward, square_backward, square_release, 0};
static const tn_function square_fn_overwrites = {"square", square_forward, square_backward, NULL,
                                                 TN_FUNCTION_OVERWRITES_GRADS};

static square_ctx fd_ctx;

static tn_tensor *f_square(tn_tensor **in, void *c) { return tn_apply(&square_fn, &fd_ctx, 2, in); }

static tn_tensor *f_square_ops(tn_tensor **in, void *c)
{
    tn_tensor *xx = tn_mul(in[1], in[1]);
    tn_tensor *y = tn_mul(in[0], xx);
    tn_free(xx);
    return y;
}

/* ---- finite differences ---- */

static void test_gradients(void)
{
    tn_rng rng;
    tn_rng_seed(&rng, 21);
    /* the gates' op matrix [16, 4] */
    double mat[16 * 4];
    for (int op = 0; op < 16; op++)
        for (int k = 0; k < 4; k++) mat[op * 4 + k] = gate_op_matrix[op][k];
    m_const = tn_from_f64(TN_F64, TN_SHAPE(16, 4), mat);
    tn_tensor *z = fd_input(&rng, TN_SHAPE(5, 16), -2, 2, NULL, 0);
    fd_check("softmax_matmul gates [5,16]x[16,4]", f_smm, NULL, 1, &z);
    tn_free(z), tn_free(m_const);

    m_const = tn_zeros(TN_F64, TN_SHAPE(8, 3));
    tn_fill_uniform(m_const, &rng, -1, 1);
    z = fd_input(&rng, TN_SHAPE(2, 3, 8), -3, 3, NULL, 0);
    fd_check("softmax_matmul [2,3,8]x[8,3]", f_smm, NULL, 1, &z);
    tn_free(z);
    z = fd_input(&rng, TN_SHAPE(8, 4), -3, 3, NULL, 0);
    fd_check("softmax_matmul of a transposed z", f_smm_transposed, NULL, 1, &z);
    tn_free(z);

    tn_tensor *in[2] = {fd_input(&rng, TN_SHAPE(4, 6), -1, 1, NULL, 0), fd_input(&rng, TN_SHAPE(4, 6), -1, 1, NULL, 0)};
    fd_check("sse_loss", f_sse, NULL, 2, in);
    tn_free(in[1]);
    in[1] = fd_input(&rng, TN_SHAPE(6, 4), -1, 1, NULL, 0);
    fd_check("sse_loss of a transposed prediction", f_sse_strided, NULL, 2, in);
    tn_free(in[0]), tn_free(in[1]);

    in[0] = fd_input(&rng, TN_SHAPE(3, 4), -2, 2, NULL, 0);
    in[1] = fd_input(&rng, TN_SHAPE(3, 4), -2, 2, NULL, 0);
    fd_check("custom y = a x^2", f_square, NULL, 2, in);
    CHECK(fd_ctx.forwards > 1 && fd_ctx.backwards == 1, "forwards %d, backwards %d", fd_ctx.forwards, fd_ctx.backwards);
    CHECK(fd_ctx.releases == fd_ctx.forwards, "every forward's context released once: %d of %d", fd_ctx.releases,
          fd_ctx.forwards);
    tn_free(in[0]), tn_free(in[1]);
    tn_free(m_const);
}

/* The custom function and the same expression from tn ops give the same values and gradients. */
static void test_custom_against_ops(void)
{
    tn_rng rng;
    tn_rng_seed(&rng, 5);
    for (int variant = 0; variant < 2; variant++) {
        const tn_function *fn = variant ? &square_fn_overwrites : &square_fn;
        square_ctx ctx = {0};
        tn_tensor *a = fd_input(&rng, TN_SHAPE(2, 5), -2, 2, NULL, 0), *x = fd_input(&rng, TN_SHAPE(2, 5), -2, 2, NULL, 0);
        tn_tensor *a2 = tn_detach(a), *x2 = tn_detach(x);
        tn_set_requires_grad(a2, 1), tn_set_requires_grad(x2, 1);
        tn_tensor *y = tn_apply(fn, &ctx, 2, (tn_tensor *[]){a, x});
        tn_tensor *y2 = f_square_ops((tn_tensor *[]){a2, x2}, NULL);
        tn_tensor *s = tn_sum(y), *s2 = tn_sum(y2);
        CHECK(y && y->requires_grad && y->node, "custom output recorded");
        CHECK(tn_backward(s) == DLCA_OK && tn_backward(s2) == DLCA_OK, "backward: %s", err_message());
        for (size_t i = 0; i < 10; i++) {
            CHECK(tn_get(y, i) == tn_get(y2, i), "value %zu", i);
            CHECK(tn_get(a->grad, i) == tn_get(a2->grad, i) && tn_get(x->grad, i) == tn_get(x2->grad, i), "grad %zu", i);
        }
        tn_free(a), tn_free(x), tn_free(a2), tn_free(x2), tn_free(y2), tn_free(s), tn_free(s2);
        CHECK(ctx.releases == 0, "the graph still lives (y)");
        tn_free(y);
        CHECK(ctx.releases == (variant ? 0 : 1), "release once the graph is gone: %d", ctx.releases);
    }
    /* only x needs a gradient: gin[0] stays NULL; no input requires grad: nothing is recorded */
    square_ctx ctx = {0};
    tn_tensor *a = tn_full(TN_F64, TN_SHAPE(3), 2.0), *x = fd_input(&rng, TN_SHAPE(3), 1, 2, NULL, 0);
    tn_tensor *y = tn_apply(&square_fn, &ctx, 2, (tn_tensor *[]){a, x});
    tn_tensor *s = tn_sum(y);
    CHECK(tn_backward(s) == DLCA_OK && a->grad == NULL && x->grad && tn_get(x->grad, 1) == 4.0 * tn_get(x, 1),
          "partial gradients: %s", err_message());
    tn_free(s), tn_free(y);
    tn_set_requires_grad(x, 0);
    y = tn_apply(&square_fn, &ctx, 2, (tn_tensor *[]){a, x});
    CHECK(y && !y->node && ctx.releases == 2, "not recorded, released at once (%d)", ctx.releases);
    tn_free(y);
    CHECK(tn_apply(&square_fn, &ctx, 2, (tn_tensor *[]){a, NULL}) == NULL && strstr(err_message(), "NULL"),
          "NULL input: %s", err_message());
    CHECK(tn_apply(&square_fn, &ctx, 9, (tn_tensor *[]){a, x, a, x, a, x, a, x, a}) == NULL &&
          strstr(err_message(), "inputs"), "too many inputs: %s", err_message());
    tn_free(a), tn_free(x);
}

/* softmax_matmul against softmax then matmul */
static void test_smm_against_ops(void)
{
    tn_rng rng;
    tn_rng_seed(&rng, 8);
    tn_tensor *z = fd_input(&rng, TN_SHAPE(7, 16), -4, 4, NULL, 0), *z2 = tn_detach(z);
    tn_tensor *m = tn_zeros(TN_F64, TN_SHAPE(16, 4));
    tn_fill_uniform(m, &rng, -1, 1);
    tn_set_requires_grad(z2, 1);
    tn_tensor *y = tn_softmax_matmul(z, m), *p = tn_softmax(z2, -1), *y2 = tn_matmul(p, m);
    tn_tensor *w = tn_zeros(TN_F64, TN_SHAPE(7, 4));
    tn_fill_uniform(w, &rng, -1, 1);
    CHECK(tn_backward_grad(y, w) == DLCA_OK && tn_backward_grad(y2, w) == DLCA_OK, "backward: %s", err_message());
    double worst = 0;
    for (size_t i = 0; i < 28; i++) worst = fmax(worst, fabs(tn_get(y, i) - tn_get(y2, i)));
    for (size_t i = 0; i < 7 * 16; i++) worst = fmax(worst, fabs(tn_get(z->grad, i) - tn_get(z2->grad, i)));
    CHECK(worst < 1e-14, "fused and composed differ by %g", worst);
    tn_set_requires_grad(m, 1);
    CHECK(tn_softmax_matmul(z, m) == NULL && strstr(err_message(), "constant"), "m requiring grad: %s", err_message());
    tn_tensor *bad = tn_zeros(TN_F64, TN_SHAPE(15, 4));
    CHECK(tn_softmax_matmul(z, bad) == NULL && strstr(err_message(), "do not match"), "shapes: %s", err_message());
    tn_free(z), tn_free(z2), tn_free(m), tn_free(y), tn_free(p), tn_free(y2), tn_free(w), tn_free(bad);
}

static void test_straight_through_and_onehot(void)
{
    tn_tensor *z = tn_from_f64(TN_F64, TN_SHAPE(3, 4), (const double[]){0, 3, 1, 3, -1, -2, -0.5, -3, 7, 7, 7, 7});
    tn_tensor *hard = tn_argmax_onehot(z);
    const double want[12] = {0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0}; /* ties: the lowest index */
    int ok = hard && !hard->node && !hard->requires_grad;
    for (size_t i = 0; ok && i < 12; i++) ok = tn_get(hard, i) == want[i];
    CHECK(ok, "argmax one-hot: first maxima, no history");
    tn_set_requires_grad(z, 1);
    tn_tensor *soft = tn_softmax(z, -1);
    tn_tensor *st = tn_straight_through(hard, soft);
    tn_tensor *ds = tn_detach(soft), *a = tn_add(hard, soft), *ref = tn_sub(a, ds);
    tn_tensor *w = tn_from_f64(TN_F64, TN_SHAPE(3, 4), (const double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    double worst = 0;
    for (size_t i = 0; i < 12; i++) worst = fmax(worst, fabs(tn_get(st, i) - tn_get(ref, i)));
    CHECK(worst < 1e-15 && tn_get(st, 1) == 1.0 && st->storage == hard->storage, "st values are hard's (%g)", worst);
    CHECK(tn_backward_grad(st, w) == DLCA_OK, "st backward: %s", err_message());
    double g1[12];
    tn_read(z->grad, g1);
    tn_zero_grad(z);
    CHECK(tn_backward_grad(ref, w) == DLCA_OK, "reference backward: %s", err_message());
    worst = 0;
    for (size_t i = 0; i < 12; i++) worst = fmax(worst, fabs(g1[i] - tn_get(z->grad, i)));
    CHECK(worst < 1e-15, "st gradient = gradient of hard + soft - detach(soft) (%g)", worst);
    tn_tensor *other = tn_zeros(TN_F64, TN_SHAPE(4, 3));
    CHECK(tn_straight_through(hard, other) == NULL && strstr(err_message(), "differ"), "shapes: %s", err_message());
    tn_free(z), tn_free(hard), tn_free(soft), tn_free(st), tn_free(ds), tn_free(a), tn_free(ref), tn_free(w);
    tn_free(other);
}

static void test_noise(void)
{
    const uint64_t seed = 0x123456789abcdefULL;
    const uint32_t stream = 7;
    tn_tensor *u = tn_uniform_noise(NULL, TN_F64, TN_SHAPE(200, 50), seed, stream);
    tn_tensor *u2 = tn_uniform_noise(NULL, TN_F32, TN_SHAPE(200, 50), seed, stream);
    tn_tensor *v = tn_uniform_noise(NULL, TN_F64, TN_SHAPE(10000), seed, stream + 1);
    tn_tensor *g = tn_gumbel_noise(NULL, TN_F64, TN_SHAPE(10000), seed, stream);
    CHECK(u && u2 && v && g && !u->node, "noise tensors: %s", err_message());
    /* by hand: key from (seed, stream), bits h(key ^ h(i)), u from the top 23 bits */
    uint32_t key = rng_hash32((uint32_t)seed ^ rng_hash32((uint32_t)(seed >> 32) ^ rng_hash32(stream + 0x9e3779b9u)));
    int by_hand = 1, same_float = 1, streams_differ = 0, in_range = 1;
    double mean = 0, gmean = 0;
    for (uint32_t i = 0; i < 10000; i++) {
        uint32_t bits = rng_hash32(key ^ rng_hash32(i));
        double want = ((double)(bits >> 9) + 0.5) / 8388608.0, got = tn_get(u, i);
        by_hand &= got == want;
        same_float &= (float)got == got && got == tn_get(u2, i);
        streams_differ += got != tn_get(v, i);
        in_range &= got > 0 && got < 1;
        mean += got / 10000;
        gmean += tn_get(g, i) / 10000;
        by_hand &= fabs(tn_get(g, i) + log(-log(want))) < 1e-12;
    }
    CHECK(by_hand, "noise is the counter-based hash of (seed, stream, index)");
    CHECK(same_float, "float32 noise holds the same values");
    CHECK(streams_differ > 9990, "another stream differs (%d of 10000)", streams_differ);
    CHECK(in_range && fabs(mean - 0.5) < 0.01, "uniform in (0, 1), mean %g", mean);
    CHECK(fabs(gmean - 0.5772156649) < 0.03, "Gumbel mean %g (Euler's gamma)", gmean);
    tn_free(u), tn_free(u2), tn_free(v), tn_free(g);
}

int main(void)
{
    test_gradients();
    test_custom_against_ops();
    test_smm_against_ops();
    test_straight_through_and_onehot();
    test_noise();
    return test_finish("test_tn_fused");
}
