/* test_tn_vk_fused.c: the fused ops and custom functions on Vulkan against the CPU reference
 * (float32 inputs, |gpu - cpu| <= 1e-5 |cpu| + 1e-6 for values and gradients): softmax(z) @ M
 * (the gates' op matrix on 300 gates, 3-d, transposed z), the sum of squared errors (strided
 * prediction, target with a gradient, 100000 elements across many workgroups), argmax one-hot,
 * straight-through, noise (uniform: the same bits; Gumbel within rounding of the log), and the
 * custom function y = a x^2 of test_tn_fused.c on the device. Dispatch counts: each fused op is
 * one dispatch forward and one backward; the SSE loss is the same bits on every run. With
 * DLCA_VALIDATE=1 any validation message fails the test. */
#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "gates.h"
#include "tn_function.h"
#include "tn_ops.h"
#include "tn_vk.h"
#include "vk_context.h"

#include <string.h>

#define RTOL 1e-5
#define ATOL 1e-6

static const char *test_name = "test_tn_vk_fused";
static vk_context vk;
static tn_vk *tdev;
static tn_rng rng;

static void compare_tol(const char *what, tn_tensor *cpu, tn_tensor *dev, double rtol, double atol)
{
    CHECK(cpu && dev, "%s: missing result: %s", what, err_message());
    if (!cpu || !dev) return;
    size_t n = tn_numel(cpu), bad = 0;
    CHECK(n == tn_numel(dev) && tn_vk_of(dev) == tdev, "%s: shapes or devices differ", what);
    if (n != tn_numel(dev)) return;
    double *c = malloc((n + 1) * sizeof *c), *g = malloc((n + 1) * sizeof *g);
    int rc = tn_read(cpu, c) | tn_read(dev, g);
    CHECK(rc == DLCA_OK, "%s: read: %s", what, err_message());
    for (size_t i = 0; rc == DLCA_OK && i < n; i++)
        if (!(fabs(g[i] - c[i]) <= atol + rtol * fabs(c[i])) && bad++ < 3)
            fprintf(stderr, "  %s[%zu]: gpu %.9g cpu %.9g\n", what, i, g[i], c[i]);
    CHECK(bad == 0, "%s: %zu of %zu elements differ", what, bad, n);
    free(c);
    free(g);
}

static void compare(const char *what, tn_tensor *cpu, tn_tensor *dev) { compare_tol(what, cpu, dev, RTOL, ATOL); }

/* ---- op cases: the same function on CPU and device inputs ---- */

static tn_tensor *m_cpu, *m_dev; /* the constant of the softmax_matmul cases: [16, 4] */
static tn_tensor *m5_cpu, *m5_dev, *m20_cpu, *m20_dev; /* [5, 3] and [20, 6] */

static tn_tensor *f_smm(tn_tensor **in, int on_dev) { return tn_softmax_matmul(in[0], on_dev ? m_dev : m_cpu); }

/* rows shorter than 16 (the device's invocation-a-logit path) and longer (invocation a row) */
static tn_tensor *f_smm5(tn_tensor **in, int on_dev) { return tn_softmax_matmul(in[0], on_dev ? m5_dev : m5_cpu); }
static tn_tensor *f_smm20(tn_tensor **in, int on_dev) { return tn_softmax_matmul(in[0], on_dev ? m20_dev : m20_cpu); }

static tn_tensor *f_smm_t(tn_tensor **in, int on_dev)
{
    tn_tensor *t = tn_transpose(in[0], 0, 1);
    tn_tensor *y = tn_softmax_matmul(t, on_dev ? m_dev : m_cpu);
    tn_free(t);
    return y;
}

static tn_tensor *f_sse(tn_tensor **in, int on_dev) { return tn_sse_loss(in[0], in[1]); }

static tn_tensor *f_sse_t(tn_tensor **in, int on_dev)
{
    tn_tensor *t = tn_transpose(in[0], 0, 1);
    tn_tensor *y = tn_sse_loss(t, in[1]);
    tn_free(t);
    return y;
}

/* straight-through of hard gates: forward argmax(z) @ M, gradient of softmax(z) @ M */
static tn_tensor *f_hard_gates(tn_tensor **in, int on_dev)
{
    tn_tensor *m = on_dev ? m_dev : m_cpu;
    tn_tensor *onehot = tn_argmax_onehot(in[0]);
    tn_tensor *hard = tn_matmul(onehot, m), *soft = tn_softmax_matmul(in[0], m);
    tn_tensor *y = tn_straight_through(hard, soft);
    tn_free(onehot), tn_free(hard), tn_free(soft);
    return y;
}

static tn_tensor *square_forward(void *ctx, tn_tensor **in, int n_in)
{
    tn_tensor *xx = tn_mul(in[1], in[1]);
    tn_tensor *y = tn_mul(in[0], xx);
    tn_free(xx);
    return y;
}

static int square_backward(void *ctx, tn_tensor **in, int n_in, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    int rc = DLCA_OK;
    if (gin[0]) {
        tn_tensor *xx = tn_mul(in[1], in[1]), *ga = tn_mul(g, xx);
        rc |= tn_assign(gin[0], ga);
        tn_free(xx), tn_free(ga);
    }
    if (gin[1]) {
        tn_tensor *ax = tn_mul(in[0], in[1]), *gx = tn_mul(g, ax), *gx2 = tn_mul_scalar(gx, 2.0);
        rc |= tn_assign(gin[1], gx2);
        tn_free(ax), tn_free(gx), tn_free(gx2);
    }
    return rc ? DLCA_ERR : DLCA_OK;
}

static const tn_function square_fn = {"square", square_forward, square_backward, NULL, 0};

/* the custom function on the device, the tn-op expression on the CPU */
static tn_tensor *f_square(tn_tensor **in, int on_dev)
{
    if (on_dev) return tn_apply(&square_fn, NULL, 2, in);
    tn_tensor *xx = tn_mul(in[1], in[1]);
    tn_tensor *y = tn_mul(in[0], xx);
    tn_free(xx);
    return y;
}

typedef struct {
    const char *name;
    tn_tensor *(*f)(tn_tensor **in, int on_dev);
    int n_in;
    int ndim[2];
    size_t shape[2][3];
    double lo, hi;
} op_case;

static const op_case cases[] = {
    {"softmax_matmul gates [300,16]", f_smm, 1, {2}, {{300, 16}}, -4, 4},
    {"softmax_matmul transposed z [16,40]", f_smm_t, 1, {2}, {{16, 40}}, -4, 4},
    {"softmax_matmul short rows [70,5]", f_smm5, 1, {2}, {{70, 5}}, -4, 4},
    {"softmax_matmul long rows [33,20]", f_smm20, 1, {2}, {{33, 20}}, -4, 4},
    {"sse_loss [30,7]", f_sse, 2, {2, 2}, {{30, 7}, {30, 7}}, -1, 1},
    {"sse_loss of 100000", f_sse, 2, {2, 2}, {{1000, 100}, {1000, 100}}, -1, 1},
    {"sse_loss transposed prediction", f_sse_t, 2, {2, 2}, {{9, 5}, {5, 9}}, -1, 1},
    {"hard gates straight-through [50,16]", f_hard_gates, 1, {2}, {{50, 16}}, -4, 4},
    {"custom y = a x^2 [6,7]", f_square, 2, {2, 2}, {{6, 7}, {6, 7}}, -2, 2},
};

static void run_case(const op_case *c)
{
    tn_tensor *cin[2] = {NULL}, *din[2] = {NULL};
    char what[160];
    for (int i = 0; i < c->n_in; i++) {
        cin[i] = tn_zeros(TN_F32, c->ndim[i], c->shape[i]);
        tn_fill_uniform(cin[i], &rng, c->lo, c->hi);
        din[i] = tn_to_device(cin[i], tdev);
        tn_set_requires_grad(cin[i], 1);
        tn_set_requires_grad(din[i], 1);
    }
    tn_tensor *yc = c->f(cin, 0), *yd = c->f(din, 1);
    snprintf(what, sizeof what, "%s: forward", c->name);
    compare(what, yc, yd);
    if (yc && yd) {
        tn_tensor *gc = tn_zeros(TN_F32, yc->ndim, yc->shape);
        tn_fill_uniform(gc, &rng, -1, 1);
        tn_tensor *gd = tn_to_device(gc, tdev);
        CHECK(tn_backward_grad(yc, gc) == DLCA_OK && tn_backward_grad(yd, gd) == DLCA_OK, "%s: backward: %s", c->name,
              err_message());
        for (int i = 0; i < c->n_in; i++) {
            snprintf(what, sizeof what, "%s: gradient of input %d", c->name, i);
            compare(what, cin[i]->grad, din[i]->grad);
        }
        tn_free(gc), tn_free(gd);
    }
    tn_free(yc), tn_free(yd);
    for (int i = 0; i < c->n_in; i++) tn_free(cin[i]), tn_free(din[i]);
}

/* ---- dispatch counts and determinism ---- */

static void test_dispatches(void)
{
    tn_tensor *zc = tn_zeros(TN_F32, TN_SHAPE(1000, 16));
    tn_fill_uniform(zc, &rng, -3, 3);
    tn_tensor *z = tn_to_device(zc, tdev);
    tn_set_requires_grad(z, 1);
    tn_tensor *gz = tn_zeros_on(tdev, TN_F32, TN_SHAPE(16));
    tn_tensor *t = tn_zeros_on(tdev, TN_F32, TN_SHAPE(1000, 4));
    CHECK(tn_vk_sync(tdev) == DLCA_OK, "sync");
    uint64_t d0 = vk.dispatches;
    tn_tensor *c = tn_softmax_matmul(z, m_dev);
    uint64_t d1 = vk.dispatches;
    tn_tensor *loss = tn_sse_loss(c, t);
    uint64_t d2 = vk.dispatches;
    CHECK(d1 - d0 == 1 && d2 - d1 == 1, "forward: softmax_matmul %llu, sse_loss %llu dispatches",
          (unsigned long long)(d1 - d0), (unsigned long long)(d2 - d1));
    /* backward: the seed 1 (a fill), sse's one, softmax_matmul's one, z's gradient (a fresh leaf
     * gradient takes the computed one without a copy) */
    CHECK(tn_backward(loss) == DLCA_OK, "backward: %s", err_message());
    uint64_t d3 = vk.dispatches;
    CHECK(d3 - d2 == 3, "backward: %llu dispatches (seed, sse, softmax_matmul)", (unsigned long long)(d3 - d2));
    float first = (float)tn_item(loss);
    int same = 1;
    for (int run = 0; run < 3; run++) {
        tn_tensor *again = tn_sse_loss(c, t);
        float v = (float)tn_item(again);
        same &= memcmp(&v, &first, sizeof v) == 0;
        tn_free(again);
    }
    CHECK(same, "sse_loss over 4000 values is the same bits on every run");
    tn_free(zc), tn_free(z), tn_free(gz), tn_free(t), tn_free(c), tn_free(loss);
}

static void test_noise(void)
{
    tn_tensor *uc = tn_uniform_noise(NULL, TN_F32, TN_SHAPE(300, 70), 99, 3);
    tn_tensor *ud = tn_uniform_noise(tdev, TN_F32, TN_SHAPE(300, 70), 99, 3);
    tn_tensor *gc = tn_gumbel_noise(NULL, TN_F32, TN_SHAPE(21000), 99, 3);
    tn_tensor *gd = tn_gumbel_noise(tdev, TN_F32, TN_SHAPE(21000), 99, 3);
    compare_tol("uniform noise: the same bits", uc, ud, 0, 0);
    /* -log(-log(u)) is near 0 at u = 1/e: an absolute bound there */
    compare_tol("Gumbel noise", gc, gd, 2e-6, 2e-6);
    tn_free(uc), tn_free(ud), tn_free(gc), tn_free(gd);
}

int main(void)
{
    int rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    printf("%s: %s, validation %s\n", test_name, vk.props.deviceName, vk.validate ? "on" : "off");
    rc = tn_vk_open(&tdev, &vk, NULL);
    CHECK(rc == DLCA_OK, "tn_vk_open: %s", err_message());
    if (rc) return test_finish(test_name);
    tn_rng_seed(&rng, 17);
    double mat[16 * 4];
    for (int op = 0; op < 16; op++)
        for (int k = 0; k < 4; k++) mat[op * 4 + k] = gate_op_matrix[op][k];
    m_cpu = tn_from_f64(TN_F32, TN_SHAPE(16, 4), mat);
    m_dev = tn_to_device(m_cpu, tdev);
    double m5[15], m20[120];
    for (int i = 0; i < 15; i++) m5[i] = 0.25 * (i % 7) - 0.6;
    for (int i = 0; i < 120; i++) m20[i] = 0.1 * (i % 13) - 0.55;
    m5_cpu = tn_from_f64(TN_F32, TN_SHAPE(5, 3), m5), m20_cpu = tn_from_f64(TN_F32, TN_SHAPE(20, 6), m20);
    m5_dev = tn_to_device(m5_cpu, tdev), m20_dev = tn_to_device(m20_cpu, tdev);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    test_dispatches();
    test_noise();
    tn_free(m_cpu), tn_free(m_dev), tn_free(m5_cpu), tn_free(m5_dev), tn_free(m20_cpu), tn_free(m20_dev);
    tn_vk_stats stats;
    tn_vk_stats_get(tdev, &stats);
    CHECK(stats.live_storages == 0, "%ld device storages leaked", stats.live_storages);
    CHECK(tn_vk_close(tdev) == DLCA_OK, "tn_vk_close: %s", err_message());
    CHECK(vk.device_bytes == 0, "%zu bytes of device buffers left", vk.device_bytes);
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    return test_finish(test_name);
}
