/* test_tn_vk_optim.c: optimizer steps and clipping on Vulkan against the CPU. The same
 * parameter buffer (three parameters, 1190 elements) lives on both devices and gets the same
 * random gradients; after each of five steps of every optimizer (SGD plain, with momentum, with
 * dampening, Nesterov with weight decay; Adam with and without weight decay; AdamW: all of them
 * glsl/tn_optim.comp) the parameters agree within |gpu - cpu| <= 1e-5 |cpu| + 1e-6. Also clipping
 * by value (one dispatch) and by global norm (the norm itself too), zero_grad, and the errors of
 * tn_params_to_device and of mixing CPU and device optimizer state. The step options against
 * the CPU's: clip_value fused into the update, float32 state, skipping on a non-finite gradient
 * and on a masked flag word in a caller's buffer (nothing changes, the counters in host-visible
 * memory say so, the bias correction does not advance), one dispatch a step (two with a skip
 * check), and a device state initialised from a CPU run's moments that continues it. With
 * DLCA_VALIDATE=1 any validation message fails the test. */
#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "tn_ops.h"
#include "tn_optim.h"
#include "tn_vk.h"
#include "vk_buffer.h"
#include "vk_context.h"

#include <string.h>

#define RTOL 1e-5
#define ATOL 1e-6

static const char *test_name = "test_tn_vk_optim";
static vk_context vk;
static tn_vk *tdev;

/* Compares a CPU and a device tensor of one shape; prints the first mismatches. */
static void compare(const char *what, tn_tensor *cpu, tn_tensor *dev)
{
    size_t n = tn_numel(cpu), bad = 0;
    double *c = malloc((n + 1) * sizeof *c), *g = malloc((n + 1) * sizeof *g);
    int rc = c && g && dev->device == TN_VULKAN ? tn_read(cpu, c) | tn_read(dev, g) : DLCA_ERR;
    CHECK(rc == DLCA_OK, "%s: read: %s", what, err_message());
    for (size_t i = 0; rc == DLCA_OK && i < n; i++) {
        if (fabs(g[i] - c[i]) <= ATOL + RTOL * fabs(c[i])) continue;
        if (bad++ < 3) fprintf(stderr, "  %s[%zu]: gpu %.9g cpu %.9g\n", what, i, g[i], c[i]);
    }
    CHECK(bad == 0, "%s: %zu of %zu elements differ", what, bad, n);
    free(c);
    free(g);
}

/* The same parameters from the same seed. */
static void make_params(tn_params *p)
{
    tn_rng rng;
    tn_rng_seed(&rng, 5);
    tn_params_init(p, TN_F32);
    tn_tensor *w = tn_params_add(p, TN_SHAPE(37, 5)), *b = tn_params_add(p, TN_SHAPE(5));
    tn_tensor *e = tn_params_add(p, TN_SHAPE(1000));
    tn_fill_uniform(w, &rng, -1, 1);
    tn_fill_uniform(b, &rng, -1, 1);
    tn_fill_uniform(e, &rng, -1, 1);
}

/* The same random gradients into both buffers' gradient blocks. */
static void set_grads(tn_params *cpu, tn_params *dev, tn_rng *rng, double scale)
{
    double *g = malloc(cpu->numel * sizeof *g);
    for (size_t i = 0; g && i < cpu->numel; i++) g[i] = scale * (2.0 * tn_rng_uniform(rng) - 1.0);
    CHECK(g && tn_write(cpu->grads, g) == DLCA_OK && tn_write(dev->grads, g) == DLCA_OK, "set gradients: %s",
          err_message());
    free(g);
}

static void run_optimizer(const char *name, tn_optim config)
{
    tn_params pc, pd;
    tn_rng rng;
    char what[128];
    tn_rng_seed(&rng, 11);
    make_params(&pc);
    make_params(&pd);
    int rc = tn_params_to_device(&pd, tdev);
    CHECK(rc == DLCA_OK && pd.values->device == TN_VULKAN && pd.params[0]->grad->device == TN_VULKAN,
          "tn_params_to_device: %s", err_message());
    tn_optim oc = config, od = config;
    for (int step = 0; rc == DLCA_OK && step < 5; step++) {
        set_grads(&pc, &pd, &rng, 1.0);
        rc = tn_optim_step(&oc, &pc) | tn_optim_step(&od, &pd);
        CHECK(rc == DLCA_OK, "%s step %d: %s", name, step, err_message());
        snprintf(what, sizeof what, "%s step %d", name, step);
        compare(what, pc.values, pd.values);
    }
    CHECK(od.step == 5 && od.state[0] && tn_vk_of(od.state[0]) == tdev, "%s: state on the device, %ld steps", name,
          od.step);
    /* an optimizer whose state is on the device cannot step a CPU buffer */
    CHECK(tn_optim_step(&od, &pc) == DLCA_ERR && strstr(err_message(), "device"), "%s: state mix-up: %s", name,
          err_message());
    tn_optim_free(&oc);
    tn_optim_free(&od);
    tn_params_free(&pc);
    tn_params_free(&pd);
}

static void test_optimizers(void)
{
    tn_optim damp = tn_optim_sgd(0.05, 0.8, 0.0, 0);
    damp.dampening = 0.3;
    run_optimizer("sgd", tn_optim_sgd(0.1, 0.0, 0.0, 0));
    run_optimizer("sgd momentum", tn_optim_sgd(0.05, 0.9, 0.0, 0));
    run_optimizer("sgd momentum dampening", damp);
    run_optimizer("sgd nesterov weight decay", tn_optim_sgd(0.05, 0.9, 0.01, 1));
    run_optimizer("adam", tn_optim_adam(0.01, 0.9, 0.999, 1e-8, 0.0));
    run_optimizer("adam weight decay", tn_optim_adam(0.01, 0.8, 0.99, 1e-6, 0.1));
    run_optimizer("adamw", tn_optim_adamw(0.01, 0.9, 0.999, 1e-8, 0.05));
    tn_optim bad = tn_optim_sgd(0.1, 0.0, 0.0, 1);
    tn_params pd;
    make_params(&pd);
    tn_params_to_device(&pd, tdev);
    CHECK(tn_optim_step(&bad, &pd) == DLCA_ERR && strstr(err_message(), "nesterov"), "nesterov without momentum: %s",
          err_message());
    tn_optim_free(&bad);
    tn_params_free(&pd);
}

static void test_clipping(void)
{
    tn_params pc, pd;
    tn_rng rng;
    tn_rng_seed(&rng, 3);
    make_params(&pc);
    make_params(&pd);
    tn_params_to_device(&pd, tdev);

    set_grads(&pc, &pd, &rng, 1.0);
    tn_vk_sync(tdev);
    uint64_t d0 = vk.dispatches;
    CHECK(tn_params_clip_grad_value(&pc, 0.3) == DLCA_OK && tn_params_clip_grad_value(&pd, 0.3) == DLCA_OK,
          "clip by value: %s", err_message());
    CHECK(vk.dispatches - d0 == 1, "clip by value is one dispatch (%llu)", (unsigned long long)(vk.dispatches - d0));
    compare("clip by value", pc.grads, pd.grads);

    double nc = 0, nd = 0;
    set_grads(&pc, &pd, &rng, 1.0);
    CHECK(tn_params_clip_grad_norm(&pc, 1.5, &nc) == DLCA_OK && tn_params_clip_grad_norm(&pd, 1.5, &nd) == DLCA_OK,
          "clip by norm: %s", err_message());
    CHECK_CLOSE(nd, nc, 0, RTOL, "global norm before clipping");
    CHECK(nc > 1.5, "the norm %g is above the limit, so clipping acted", nc);
    compare("clip by norm", pc.grads, pd.grads);
    CHECK(tn_params_clip_grad_norm(&pc, 1.0, NULL) == DLCA_OK && tn_params_clip_grad_norm(&pd, 1.0, NULL) == DLCA_OK,
          "clip without reading the norm: %s", err_message());
    compare("clip by norm, norm not read", pc.grads, pd.grads);
    CHECK(tn_params_clip_grad_norm(&pd, 1e3, &nd) == DLCA_OK && fabs(nd - 1.0) < 1e-5, "clipped norm %g", nd);
    compare("below the limit: untouched", pc.grads, pd.grads);

    tn_params_zero_grad(&pd);
    tn_tensor *s = tn_sum(pd.grads);
    CHECK(s && tn_item(s) == 0.0 && tn_get(pd.grads, 77) == 0.0, "zero_grad on the device");
    tn_free(s);
    tn_params_free(&pc);
    tn_params_free(&pd);
}

/* Moving a buffer while another tensor views its blocks would leave that view behind. */
static void test_move_errors(void)
{
    tn_params p;
    make_params(&p);
    tn_tensor *view = tn_transpose(p.params[0], 0, 1);
    CHECK(tn_params_to_device(&p, tdev) == DLCA_ERR && strstr(err_message(), "other tensors"), "stray view: %s",
          err_message());
    tn_free(view);
    double first = tn_get(p.params[0], 3), last = tn_get(p.params[2], 999);
    CHECK(tn_params_to_device(&p, tdev) == DLCA_OK && p.params[2]->device == TN_VULKAN, "move after the view is gone");
    CHECK(tn_get(p.params[0], 3) == first && tn_get(p.params[2], 999) == last, "values survive the move");
    /* adding after the move grows the device blocks: old values kept, the new parameter zeroed */
    tn_tensor *extra = tn_params_add(&p, TN_SHAPE(2, 3));
    CHECK(extra && extra->device == TN_VULKAN && extra->grad->device == TN_VULKAN && p.numel == 1196,
          "add on the device: %s", err_message());
    CHECK(tn_get(p.params[0], 3) == first && tn_get(p.params[2], 999) == last && tn_get(extra, 5) == 0.0,
          "grown blocks keep their values");
    CHECK(tn_set(extra, 5, 1.25) == DLCA_OK && tn_get(extra, 5) == 1.25 && tn_get(p.values, 1195) == 1.25,
          "the new parameter views the end of the block");
    tn_params_free(&p);
    tn_params p64;
    tn_params_init(&p64, TN_F64);
    tn_params_add(&p64, TN_SHAPE(3));
    CHECK(tn_params_to_device(&p64, tdev) == DLCA_ERR && strstr(err_message(), "float32"), "float64: %s",
          err_message());
    tn_params_free(&p64);
}

/* Sets every gradient of both buffers from g, with `poison` (NaN) at element 7 when asked. */
static void put_grads(tn_params *pc, tn_params *pd, const double *g, int poison)
{
    double *h = malloc(pc->numel * sizeof *h);
    memcpy(h, g, pc->numel * sizeof *h);
    if (poison) h[7] = NAN;
    tn_write(pc->grads, h);
    tn_write(pd->grads, h);
    free(h);
}

static void test_options(void)
{
    tn_params pc, pd;
    tn_rng rng;
    tn_rng_seed(&rng, 9);
    make_params(&pc);
    make_params(&pd);
    tn_params_to_device(&pd, tdev);
    size_t n = pc.numel;
    double *g = malloc(n * sizeof *g);
    tn_optim oc = tn_optim_adamw(0.01, 0.9, 0.999, 1e-8, 0.05), od;
    oc.clip_value = 0.4;
    oc.skip_nonfinite = 1;
    oc.state_dtype = TN_F32;
    od = oc;
    /* the external flag: two uint32 words in a caller's buffer, read through a wrap */
    uint32_t words[2] = {0, 0};
    vk_buffer flag_buf;
    vk_buffer_create(&vk, &flag_buf, sizeof words, VK_BUFFER_DEVICE);
    vk_buffer_upload(&vk, &flag_buf, 0, words, sizeof words);
    tn_tensor *flag_cpu = tn_zeros(TN_F32, TN_SHAPE(2)), *flag_dev = tn_vk_wrap(tdev, &flag_buf, 0, TN_SHAPE(2));
    oc.skip_flag = flag_cpu;
    od.skip_flag = flag_dev;
    oc.skip_mask = od.skip_mask = 0x80000000u;
    for (int step = 0; step < 8; step++) {
        for (size_t i = 0; i < n; i++) g[i] = 2.0 * tn_rng_uniform(&rng) - 1.0;
        int poison = step == 3, flagged = step == 5;
        words[1] = flagged ? 0x80000001u : 1u; /* bit 0 is outside the mask */
        memcpy(tn_data(flag_cpu), words, sizeof words);
        vk_buffer_upload(&vk, &flag_buf, 0, words, sizeof words);
        put_grads(&pc, &pd, g, poison);
        tn_vk_sync(tdev);
        uint64_t d0 = vk.dispatches;
        CHECK(tn_optim_step(&oc, &pc) == DLCA_OK && tn_optim_step(&od, &pd) == DLCA_OK, "step %d: %s", step,
              err_message());
        CHECK(vk.dispatches - d0 == 2, "a guarded step is two dispatches (%llu)", (unsigned long long)(vk.dispatches - d0));
        char what[64];
        snprintf(what, sizeof what, "options step %d", step);
        compare(what, pc.values, pd.values);
        tn_optim_status sc, sd;
        CHECK(tn_optim_status_read(&oc, &sc) == DLCA_OK && tn_optim_status_read(&od, &sd) == DLCA_OK, "status");
        CHECK(sd.applied == sc.applied && sd.skipped == sc.skipped && sd.last_skipped == (poison || flagged) &&
              sc.last_skipped == sd.last_skipped, "step %d: device applied %ld skipped %ld last %d, cpu %ld %ld %d",
              step, sd.applied, sd.skipped, sd.last_skipped, sc.applied, sc.skipped, sc.last_skipped);
    }
    compare("float32 moments m", oc.state[0], od.state[0]);
    compare("float32 moments v", oc.state[1], od.state[1]);
    /* an unguarded step is one dispatch */
    od.skip_nonfinite = 0, od.skip_flag = NULL;
    tn_vk_sync(tdev);
    uint64_t d0 = vk.dispatches;
    tn_optim_step(&od, &pd);
    CHECK(vk.dispatches - d0 == 1, "an unguarded step is one dispatch (%llu)", (unsigned long long)(vk.dispatches - d0));

    /* resume on the device from the CPU run's moments and counters */
    tn_optim r = tn_optim_adamw(0.01, 0.9, 0.999, 1e-8, 0.05);
    r.clip_value = 0.4;
    tn_params pr;
    make_params(&pr);
    double *vals = malloc(n * sizeof *vals), *mom = malloc(n * sizeof *mom);
    tn_read(pc.values, vals);
    tn_write(pr.values, vals);
    tn_params_to_device(&pr, tdev);
    CHECK(tn_optim_state_init(&r, &pr, oc.status.applied) == DLCA_OK, "state init: %s", err_message());
    tn_read(oc.state[0], mom), tn_write(r.state[0], mom);
    tn_read(oc.state[1], mom), tn_write(r.state[1], mom);
    oc.skip_nonfinite = 0, oc.skip_flag = NULL;
    for (int step = 0; step < 3; step++) {
        for (size_t i = 0; i < n; i++) g[i] = 2.0 * tn_rng_uniform(&rng) - 1.0;
        put_grads(&pc, &pr, g, 0);
        CHECK(tn_optim_step(&oc, &pc) == DLCA_OK && tn_optim_step(&r, &pr) == DLCA_OK, "resumed step: %s", err_message());
        compare("resumed on the device", pc.values, pr.values);
    }
    free(vals), free(mom), free(g);
    tn_optim_free(&oc), tn_optim_free(&od), tn_optim_free(&r);
    tn_params_free(&pc), tn_params_free(&pd), tn_params_free(&pr);
    tn_free(flag_cpu), tn_free(flag_dev);
    tn_vk_sync(tdev);
    vk_buffer_free(&vk, &flag_buf);
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
    test_optimizers();
    test_clipping();
    test_move_errors();
    test_options();
    tn_vk_stats stats;
    tn_vk_stats_get(tdev, &stats);
    CHECK(stats.live_storages == 0, "%ld device storages leaked", stats.live_storages);
    CHECK(tn_vk_close(tdev) == DLCA_OK, "tn_vk_close: %s", err_message());
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    return test_finish(test_name);
}
