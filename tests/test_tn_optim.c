/* test_tn_optim.c: optimizers against hand-computed steps (SGD, momentum, Nesterov, weight
 * decay; Adam bias correction at steps 1 and 2; AdamW decay decoupled from the gradient),
 * clipping by value and by global norm, and the four learning-rate schedules. */
#include "check.h"
#include "error.h"
#include "tn_optim.h"

#include <string.h>

static void test_sgd(void)
{
    double p[2] = {1.0, -2.0};
    const double g[2] = {0.5, 0.25};
    tn_optim o = tn_optim_sgd(0.1, 0.0, 0.0, 0);
    CHECK(tn_optim_step_flat(&o, TN_F64, p, g, 2) == DLCA_OK, "step: %s", err_message());
    CHECK_CLOSE(p[0], 0.95, 1e-15, 0, "plain sgd");
    CHECK_CLOSE(p[1], -2.025, 1e-15, 0, "plain sgd");
    tn_optim_free(&o);

    /* momentum 0.9: buf1 = g, p -= lr g; buf2 = 0.9 g + g, p -= lr 1.9 g */
    double q[1] = {1.0};
    const double gq[1] = {0.5};
    o = tn_optim_sgd(0.1, 0.9, 0.0, 0);
    tn_optim_step_flat(&o, TN_F64, q, gq, 1);
    CHECK_CLOSE(q[0], 0.95, 1e-15, 0, "momentum step 1");
    tn_optim_step_flat(&o, TN_F64, q, gq, 1);
    CHECK_CLOSE(q[0], 0.95 - 0.1 * 0.95, 1e-15, 0, "momentum step 2");
    tn_optim_free(&o);

    /* Nesterov: update g + 0.9 buf; step 1: 0.5 + 0.45, step 2: 0.5 + 0.9 * 0.95 */
    q[0] = 1.0;
    o = tn_optim_sgd(0.1, 0.9, 0.0, 1);
    tn_optim_step_flat(&o, TN_F64, q, gq, 1);
    CHECK_CLOSE(q[0], 1.0 - 0.1 * 0.95, 1e-15, 0, "nesterov step 1");
    tn_optim_step_flat(&o, TN_F64, q, gq, 1);
    CHECK_CLOSE(q[0], 0.905 - 0.1 * (0.5 + 0.9 * 0.95), 1e-15, 0, "nesterov step 2");
    tn_optim_free(&o);

    /* weight decay 0.01 adds 0.01 p to the gradient */
    q[0] = 2.0;
    o = tn_optim_sgd(0.1, 0.0, 0.01, 0);
    tn_optim_step_flat(&o, TN_F64, q, gq, 1);
    CHECK_CLOSE(q[0], 2.0 - 0.1 * (0.5 + 0.02), 1e-15, 0, "sgd weight decay");
    CHECK(tn_optim_step_flat(&o, TN_F64, q, gq, 2) == DLCA_ERR && strstr(err_message(), "state is for 1"),
          "size change: %s", err_message());
    tn_optim_free(&o);
    o = tn_optim_sgd(0.1, 0.0, 0.0, 1);
    CHECK(tn_optim_step_flat(&o, TN_F64, q, gq, 1) == DLCA_ERR && strstr(err_message(), "nesterov"),
          "nesterov without momentum: %s", err_message());
    tn_optim_free(&o);
}

static void test_adam(void)
{
    const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double p[1] = {1.0};
    tn_optim o = tn_optim_adam(lr, b1, b2, eps, 0.0);
    /* step 1: m = 0.1 g, v = 0.001 g^2; corrected m/(1-b1) = g, v/(1-b2) = g^2: a step of lr sign(g) */
    const double g1[1] = {0.5};
    tn_optim_step_flat(&o, TN_F64, p, g1, 1);
    CHECK_CLOSE(p[0], 1.0 - lr * 0.5 / (0.5 + eps), 1e-15, 0, "adam step 1 (bias corrected)");
    /* step 2 with g = -0.2 */
    const double g2[1] = {-0.2};
    double m = b1 * (1 - b1) * 0.5 + (1 - b1) * -0.2, v = b2 * (1 - b2) * 0.25 + (1 - b2) * 0.04;
    double mhat = m / (1 - b1 * b1), vhat = v / (1 - b2 * b2), want = p[0] - lr * mhat / (sqrt(vhat) + eps);
    tn_optim_step_flat(&o, TN_F64, p, g2, 1);
    CHECK_CLOSE(p[0], want, 1e-15, 1e-14, "adam step 2 (bias corrected)");
    CHECK(o.step == 2, "step count");
    tn_optim_free(&o);

    /* float32 buffers go through the same update */
    float pf[1] = {1.0f};
    const float gf[1] = {0.5f};
    o = tn_optim_adam(lr, b1, b2, eps, 0.0);
    tn_optim_step_flat(&o, TN_F32, pf, gf, 1);
    CHECK_CLOSE(pf[0], 0.9f, 1e-7, 0, "adam on float32");
    tn_optim_free(&o);
}

/* With a zero gradient AdamW only decays (p *= 1 - lr wd); Adam's coupled decay instead feeds
 * wd p through the moments and moves p by about lr. */
static void test_adamw_decoupled(void)
{
    const double lr = 0.1, wd = 0.5;
    double pw[1] = {2.0}, pa[1] = {2.0};
    const double zero[1] = {0.0}, g[1] = {0.3};
    tn_optim w = tn_optim_adamw(lr, 0.9, 0.999, 1e-8, wd), a = tn_optim_adam(lr, 0.9, 0.999, 1e-8, wd);
    tn_optim_step_flat(&w, TN_F64, pw, zero, 1);
    tn_optim_step_flat(&a, TN_F64, pa, zero, 1);
    CHECK_CLOSE(pw[0], 2.0 * (1 - lr * wd), 1e-15, 0, "adamw: decay only");
    CHECK_CLOSE(pa[0], 2.0 - lr, 1e-7, 0, "adam: decay through the gradient");
    /* with a gradient: decay first, then the plain Adam step (lr sign(g) at step 1) */
    double p[1] = {2.0};
    tn_optim w2 = tn_optim_adamw(lr, 0.9, 0.999, 1e-8, wd);
    tn_optim_step_flat(&w2, TN_F64, p, g, 1);
    CHECK_CLOSE(p[0], 2.0 * (1 - lr * wd) - lr * 0.3 / (0.3 + 1e-8), 1e-15, 0, "adamw step 1");
    tn_optim_free(&w), tn_optim_free(&a), tn_optim_free(&w2);
}

static void test_clipping(void)
{
    double g[3] = {3, 4, 0};
    double norm = tn_clip_grad_norm(TN_F64, g, 3, 1.0);
    CHECK_CLOSE(norm, 5.0, 1e-15, 0, "norm before clipping");
    CHECK_CLOSE(g[0], 0.6, 1e-6, 0, "scaled to norm 1");
    CHECK_CLOSE(sqrt(g[0] * g[0] + g[1] * g[1]), 1.0, 1e-6, 0, "clipped norm");
    double h[2] = {0.3, 0.4};
    tn_clip_grad_norm(TN_F64, h, 2, 1.0);
    CHECK(h[0] == 0.3 && h[1] == 0.4, "below the limit: untouched");
    float v[4] = {-3, -0.5f, 0.5f, 3};
    tn_clip_grad_value(TN_F32, v, 4, 1.0);
    CHECK(v[0] == -1 && v[1] == -0.5f && v[2] == 0.5f && v[3] == 1, "clip by value");
}

static void test_schedules(void)
{
    tn_lr_schedule s = tn_lr_step(0.1, 10, 0.5);
    CHECK_CLOSE(tn_lr_at(&s, 9), 0.1, 1e-15, 0, "step lr before the first decay");
    CHECK_CLOSE(tn_lr_at(&s, 25), 0.025, 1e-15, 0, "step lr after two decays");
    s = tn_lr_exponential(0.1, 0.9);
    CHECK_CLOSE(tn_lr_at(&s, 3), 0.1 * 0.729, 1e-15, 0, "exponential");
    s = tn_lr_cosine(0.1, 100, 0.001);
    CHECK_CLOSE(tn_lr_at(&s, 0), 0.1, 1e-15, 0, "cosine start");
    CHECK_CLOSE(tn_lr_at(&s, 50), 0.0505, 1e-15, 0, "cosine middle");
    CHECK_CLOSE(tn_lr_at(&s, 100), 0.001, 1e-15, 0, "cosine end");
    CHECK_CLOSE(tn_lr_at(&s, 150), 0.001, 1e-15, 0, "cosine holds eta_min");
    /* one-cycle, 100 steps, peak at step 29 (PyTorch's pct_start * total - 1) */
    s = tn_lr_one_cycle(1.0, 100, 0.3, 25.0, 1e4);
    CHECK_CLOSE(tn_lr_at(&s, 0), 0.04, 1e-15, 0, "one-cycle start = max / div_factor");
    CHECK_CLOSE(tn_lr_at(&s, 29), 1.0, 1e-15, 0, "one-cycle peak");
    CHECK_CLOSE(tn_lr_at(&s, 99), 0.04 / 1e4, 1e-15, 0, "one-cycle end");
    double rising = 1.0 + (0.04 - 1.0) / 2 * (1 + cos(3.14159265358979323846 * 14 / 29.0));
    CHECK_CLOSE(tn_lr_at(&s, 14), rising, 1e-15, 0, "one-cycle rising");
    CHECK(tn_lr_at(&s, 60) < 1.0 && tn_lr_at(&s, 60) > tn_lr_at(&s, 80), "one-cycle falling");
}

/* The optimizer runs over a tn_params block in one call. */
static void test_params_step(void)
{
    tn_params p;
    tn_params_init(&p, TN_F32);
    tn_tensor *a = tn_params_add(&p, TN_SHAPE(2)), *b = tn_params_add(&p, TN_SHAPE(1));
    tn_write(a, (const double[]){1, 2});
    tn_write(b, (const double[]){3});
    float *g = tn_params_grad(&p);
    g[0] = 1, g[1] = 2, g[2] = 3;
    tn_optim o = tn_optim_sgd(0.5, 0, 0, 0);
    CHECK(tn_optim_step(&o, &p) == DLCA_OK, "step over the block");
    CHECK(tn_get(a, 0) == 0.5 && tn_get(a, 1) == 1.0 && tn_get(b, 0) == 1.5, "every parameter moved");
    tn_optim_free(&o);
    tn_params_free(&p);
}

int main(void)
{
    test_sgd();
    test_adam();
    test_adamw_decoupled();
    test_clipping();
    test_schedules();
    test_params_step();
    return test_finish("test_tn_optim");
}
