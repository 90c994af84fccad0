/* test_tn_optim.c: optimizers against hand-computed steps (SGD, momentum, Nesterov, weight
 * decay; Adam bias correction at steps 1 and 2; AdamW decay decoupled from the gradient),
 * clipping by value and by global norm, the learning-rate schedules and their warm-up, and the
 * step options: clip_value inside the update, skipping on a non-finite gradient or a flag word
 * (nothing changes, the bias correction does not advance), float32 state, and a run resumed
 * from saved state and step that continues the uninterrupted one bit for bit. */
#include "check.h"
#include "error.h"
#include "tn_ops.h"
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

/* tn_params_grad_replace: the next backward's gradient replaces whatever the buffer held (no
 * zero-fill, no add); the one after adds, as always. */
static void test_grad_replace(void)
{
    tn_params p;
    tn_params_init(&p, TN_F32);
    tn_tensor *a = tn_params_add(&p, TN_SHAPE(2));
    tn_write(a, (const double[]){1, 2});
    float *g = tn_params_grad(&p);
    g[0] = 100, g[1] = -100; /* stale */
    tn_params_grad_replace(&p);
    tn_tensor *m = tn_mul_scalar(a, 3.0), *y = m ? tn_sum(m) : NULL;
    CHECK(y && tn_backward(y) == DLCA_OK, "backward");
    CHECK(g[0] == 3.0f && g[1] == 3.0f, "replaced, not added: %g %g", g[0], g[1]);
    CHECK(tn_backward(y) == DLCA_OK && g[0] == 6.0f && g[1] == 6.0f, "a second backward adds: %g %g", g[0], g[1]);
    tn_free(y), tn_free(m);
    tn_params_free(&p);
}

/* y = sum(softmax(z) m) + sum(2 z), its two terms recorded in either order. */
static tn_tensor *two_consumers(tn_tensor *z, tn_tensor *m, int smm_last)
{
    tn_tensor *twice = smm_last ? tn_mul_scalar(z, 2.0) : NULL;
    tn_tensor *c = tn_softmax_matmul(z, m);
    if (!smm_last) twice = tn_mul_scalar(z, 2.0);
    tn_tensor *s1 = c ? tn_sum(c) : NULL, *s2 = twice ? tn_sum(twice) : NULL;
    tn_tensor *y = s1 && s2 ? tn_add(s1, s2) : NULL;
    tn_free(c), tn_free(twice), tn_free(s1), tn_free(s2);
    return y;
}

/* softmax_matmul's backward writes a stale parameter gradient in place (a destination, no copy
 * after it): the gradient equals a fresh leaf's bit for bit, whichever consumer of z runs first,
 * and the buffer stays the parameter's. */
static void test_grad_destination(void)
{
    double zv[8] = {0.3, -1, 2, 0.5, 1.5, 0.25, -0.75, 0}, mv[8] = {1, 0, 0, 1, 0.5, 0.5, -1, 2};
    for (int smm_last = 0; smm_last < 2; smm_last++) {
        tn_params p;
        tn_params_init(&p, TN_F32);
        tn_tensor *pad = tn_params_add(&p, TN_SHAPE(3)); /* z's gradient starts inside the block */
        tn_tensor *z = tn_params_add(&p, TN_SHAPE(2, 4));
        tn_tensor *fresh = tn_from_f64(TN_F32, 2, (const size_t[]){2, 4}, zv);
        tn_tensor *m = tn_from_f64(TN_F32, 2, (const size_t[]){4, 2}, mv);
        tn_write(pad, (const double[]){0, 0, 0});
        tn_write(z, zv);
        tn_set_requires_grad(fresh, 1);
        float *g = tn_params_grad(&p);
        for (int i = 0; i < 11; i++) g[i] = 1e6f; /* stale */
        tn_params_grad_replace(&p);
        tn_tensor *before = z->grad, *y = two_consumers(z, m, smm_last), *yf = two_consumers(fresh, m, smm_last);
        CHECK(y && yf && tn_backward(y) == DLCA_OK && tn_backward(yf) == DLCA_OK, "backward: %s", err_message());
        double want[8] = {0};
        int same = fresh->grad && tn_read(fresh->grad, want) == DLCA_OK && z->grad == before;
        for (int i = 0; same && i < 8; i++) same = (float)want[i] == g[3 + i];
        CHECK(same, "order %d: the gradient in place equals a fresh leaf's (%g vs %g)", smm_last, g[3], want[0]);
        CHECK(g[0] == 1e6f, "order %d: a parameter no op reached keeps its buffer as it was", smm_last);
        tn_free(y), tn_free(yf), tn_free(fresh), tn_free(m);
        tn_params_free(&p);
    }
}

/* clip_value inside the step = clipping first, then the step */
static void test_clip_value(void)
{
    double p1[3] = {1, 2, 3}, p2[3] = {1, 2, 3}, g[3] = {-5, 0.1, 7}, gc[3] = {-0.5, 0.1, 0.5};
    tn_optim a = tn_optim_adamw(0.01, 0.9, 0.999, 1e-8, 0.1), b = a;
    a.clip_value = 0.5;
    for (int k = 0; k < 3; k++) {
        tn_optim_step_flat(&a, TN_F64, p1, g, 3);
        tn_optim_step_flat(&b, TN_F64, p2, gc, 3);
    }
    CHECK(memcmp(p1, p2, sizeof p1) == 0 && g[0] == -5, "fused clip equals clipping first, gradients untouched");
    tn_optim_free(&a), tn_optim_free(&b);
}

/* A skipped step changes nothing and does not advance the bias correction (GradScaler). */
static void test_skip(void)
{
    double p[2] = {1, 2}, ref[2] = {1, 2};
    const double g[2] = {0.5, -0.25}, bad[2] = {0.5, NAN}, inf[2] = {INFINITY, 0};
    tn_optim o = tn_optim_adam(0.1, 0.9, 0.999, 1e-8, 0.0), r = o;
    o.skip_nonfinite = 1;
    tn_optim_status st;
    tn_optim_step_flat(&o, TN_F64, p, g, 2);
    tn_optim_step_flat(&r, TN_F64, ref, g, 2);
    double m0 = tn_get(o.state[0], 0);
    CHECK(tn_optim_step_flat(&o, TN_F64, p, bad, 2) == DLCA_OK && tn_optim_step_flat(&o, TN_F64, p, inf, 2) == DLCA_OK,
          "skipped steps succeed");
    CHECK(tn_optim_status_read(&o, &st) == DLCA_OK && st.applied == 1 && st.skipped == 2 && st.last_skipped,
          "status: applied %ld skipped %ld last %d", st.applied, st.skipped, st.last_skipped);
    CHECK(p[0] == ref[0] && p[1] == ref[1] && tn_get(o.state[0], 0) == m0 && o.step == 3, "nothing changed");
    tn_optim_step_flat(&o, TN_F64, p, g, 2);
    tn_optim_step_flat(&r, TN_F64, ref, g, 2);
    CHECK(p[0] == ref[0] && p[1] == ref[1] && !o.status.last_skipped, "the next step is step 2 of the unskipped run");
    tn_optim_free(&o), tn_optim_free(&r);

    /* the external flag: float32 storage holding uint32 words, masked */
    float fp[1] = {1.0f};
    const float fg[1] = {0.5f};
    tn_tensor *flag = tn_zeros(TN_F32, TN_SHAPE(2));
    uint32_t *words = tn_data(flag);
    o = tn_optim_sgd(0.1, 0.0, 0.0, 0);
    o.skip_flag = flag;
    o.skip_mask = 0x80000000u;
    words[1] = 0x80000000u; /* -0.0 as a float: the words are read as bits, not as values */
    tn_optim_step_flat(&o, TN_F32, fp, fg, 1);
    CHECK(fp[0] == 1.0f && o.status.skipped == 1, "flag set: skipped");
    words[1] = 0x7fffffffu; /* bits outside the mask */
    tn_optim_step_flat(&o, TN_F32, fp, fg, 1);
    CHECK(fp[0] == 0.95f && o.status.applied == 1, "flag clear under the mask: applied");
    tn_optim_free(&o);
    tn_free(flag);
}

/* float32 state rounds each moment on store, as a device and the CA model file keep them */
static void test_f32_state(void)
{
    double p64[4] = {1, -1, 0.5, 2}, p32[4] = {1, -1, 0.5, 2};
    const double g[4] = {0.3, -0.7, 1e-3, 2.5};
    tn_optim a = tn_optim_adamw(0.01, 0.9, 0.999, 1e-8, 0.01), b = a;
    b.state_dtype = TN_F32;
    for (int k = 0; k < 4; k++) {
        tn_optim_step_flat(&a, TN_F64, p64, g, 4);
        tn_optim_step_flat(&b, TN_F64, p32, g, 4);
    }
    CHECK(b.state[1]->dtype == TN_F32 && tn_get(b.state[1], 3) == (double)(float)tn_get(b.state[1], 3), "f32 moments");
    CHECK(fabs(p64[2] - p32[2]) < 1e-6 && p64[2] != p32[2], "close to the double-state run, not equal");
    tn_optim_free(&a), tn_optim_free(&b);
}

static void test_warmup(void)
{
    tn_lr_schedule s = tn_lr_with_warmup(tn_lr_cosine(0.1, 100, 0.0), 9);
    CHECK_CLOSE(tn_lr_at(&s, 0), 0.01, 1e-15, 0, "warm-up starts at f(0) / (warmup + 1)");
    CHECK_CLOSE(tn_lr_at(&s, 4), 0.05, 1e-15, 0, "warm-up is linear");
    CHECK_CLOSE(tn_lr_at(&s, 8), 0.09, 1e-15, 0, "last warm-up step");
    CHECK_CLOSE(tn_lr_at(&s, 9), 0.1, 1e-15, 0, "then the schedule from its step 0");
    CHECK_CLOSE(tn_lr_at(&s, 59), 0.05, 1e-15, 0, "cosine middle after the warm-up");
    s = tn_lr_with_warmup(tn_lr_constant(0.2), 3);
    CHECK(tn_lr_at(&s, 0) == 0.05 && tn_lr_at(&s, 3) == 0.2 && tn_lr_at(&s, 1000) == 0.2, "constant with warm-up");
    tn_lr_schedule all[5] = {tn_lr_constant(0.1), tn_lr_step(0.1, 7, 0.5), tn_lr_exponential(0.1, 0.97),
                             tn_lr_cosine(0.1, 40, 0.001), tn_lr_one_cycle(0.1, 40, 0.3, 25, 1e4)};
    for (int k = 0; k < 5; k++) {
        all[k] = tn_lr_with_warmup(all[k], 5);
        for (long t = 1; t < 50; t++) CHECK(isfinite(tn_lr_at(&all[k], t)) && tn_lr_at(&all[k], t) > 0, "lr %d", k);
    }
}

/* N steps in one run, and k steps + saved state + a fresh optimizer for the rest: the same bits. */
static void test_resume(void)
{
    enum { N = 20, K = 8, P = 5 };
    tn_lr_schedule lr = tn_lr_with_warmup(tn_lr_one_cycle(0.05, N, 0.3, 10, 100), 4);
    double full[P], part[P], g[P], saved_m[P], saved_v[P];
    tn_rng rng;
    for (int i = 0; i < P; i++) full[i] = part[i] = 0.1 * i - 0.2;
    tn_optim a = tn_optim_adamw(0, 0.9, 0.99, 1e-8, 0.01), b = a;
    a.clip_value = b.clip_value = 0.3;
    tn_rng_seed(&rng, 4);
    for (int t = 0; t < N; t++) {
        for (int i = 0; i < P; i++) g[i] = tn_rng_uniform(&rng) - 0.5 + (t == 11 && i == 2 ? INFINITY : 0);
        a.skip_nonfinite = 1;
        a.lr = tn_lr_at(&lr, a.step);
        tn_optim_step_flat(&a, TN_F64, full, g, P);
        if (t < K) {
            b.skip_nonfinite = 1;
            b.lr = tn_lr_at(&lr, b.step);
            tn_optim_step_flat(&b, TN_F64, part, g, P);
        }
        if (t == K - 1) { /* save, drop the optimizer, restore into a new one */
            tn_read(b.state[0], saved_m), tn_read(b.state[1], saved_v);
            long step = b.step, applied = b.status.applied;
            tn_optim_free(&b);
            b = tn_optim_adamw(0, 0.9, 0.99, 1e-8, 0.01);
            b.clip_value = 0.3;
            tn_params p; /* tn_optim_state_init wants a buffer: a CPU one of P elements */
            tn_params_init(&p, TN_F64);
            tn_params_add(&p, TN_SHAPE(P));
            CHECK(tn_optim_state_init(&b, &p, applied) == DLCA_OK, "state init: %s", err_message());
            tn_write(b.state[0], saved_m), tn_write(b.state[1], saved_v);
            b.step = step;
            tn_params_free(&p);
        }
        if (t >= K) {
            b.skip_nonfinite = 1;
            b.lr = tn_lr_at(&lr, b.step);
            tn_optim_step_flat(&b, TN_F64, part, g, P);
        }
    }
    CHECK(memcmp(full, part, sizeof full) == 0 && a.status.skipped == 1 && b.status.applied == a.status.applied,
          "resumed run equals the uninterrupted one (skipped %ld)", a.status.skipped);
    tn_optim_free(&a), tn_optim_free(&b);
}

int main(void)
{
    test_clip_value();
    test_skip();
    test_f32_state();
    test_warmup();
    test_resume();
    test_sgd();
    test_adam();
    test_adamw_decoupled();
    test_clipping();
    test_schedules();
    test_params_step();
    test_grad_replace();
    test_grad_destination();
    return test_finish("test_tn_optim");
}
