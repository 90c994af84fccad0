/* test_tn_vk_linreg.c: integration. The linear regression of test_tn_linreg.c (y = 2x + 3 from
 * 256 noisy samples, autograd, SGD with momentum, 300 steps) runs on the CPU and on Vulkan from
 * the same data and initial weight: both recover weight and bias within 0.05, and the two loss
 * curves agree within 1e-4 relative at every step. A second Vulkan run gives the same loss bits
 * at every step (deterministic kernels). With DLCA_VALIDATE=1 any validation message fails. */
#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "tn_ops.h"
#include "tn_optim.h"
#include "tn_vk.h"
#include "vk_context.h"

#include <string.h>

#define SAMPLES 256
#define STEPS 300

static const char *test_name = "test_tn_vk_linreg";

typedef struct {
    double loss[STEPS];
    double w, b;
} run_result;

/* Trains on the CPU (dev NULL) or on the device; returns DLCA_OK or the first error. */
static int train(tn_vk *vk, run_result *r)
{
    tn_rng rng;
    double xs[SAMPLES], ys[SAMPLES];
    tn_rng_seed(&rng, 99);
    for (int i = 0; i < SAMPLES; i++) {
        xs[i] = -2.0 + 4.0 * tn_rng_uniform(&rng);
        ys[i] = 2.0 * xs[i] + 3.0 + 0.1 * tn_rng_normal(&rng);
    }
    tn_tensor *xh = tn_from_f64(TN_F32, TN_SHAPE(SAMPLES, 1), xs);
    tn_tensor *yh = tn_from_f64(TN_F32, TN_SHAPE(SAMPLES, 1), ys);
    tn_tensor *x = vk ? tn_to_device(xh, vk) : tn_retain(xh);
    tn_tensor *y = vk ? tn_to_device(yh, vk) : tn_retain(yh);
    tn_params p;
    tn_params_init(&p, TN_F32);
    tn_tensor *w = tn_params_add(&p, TN_SHAPE(1, 1)), *b = tn_params_add(&p, TN_SHAPE(1));
    tn_fill_normal(w, &rng, 0.0, 0.1); /* on the CPU, so both runs start from the same weight */
    int status = x && y && w && b ? DLCA_OK : DLCA_ERR;
    if (status == DLCA_OK && vk) status = tn_params_to_device(&p, vk);
    tn_optim opt = tn_optim_sgd(0.05, 0.9, 0.0, 0);
    for (int step = 0; status == DLCA_OK && step < STEPS; step++) {
        tn_tensor *xw = tn_matmul(x, w);
        tn_tensor *pred = tn_add(xw, b);
        tn_tensor *loss = tn_mse_loss(pred, y, TN_REDUCE_MEAN);
        tn_params_zero_grad(&p);
        status = loss ? tn_backward(loss) : DLCA_ERR;
        if (status == DLCA_OK) status = tn_optim_step(&opt, &p);
        r->loss[step] = loss ? tn_item(loss) : NAN; /* the one host read per step */
        tn_free(xw);
        tn_free(pred);
        tn_free(loss);
    }
    r->w = tn_get(w, 0);
    r->b = tn_get(b, 0);
    tn_optim_free(&opt);
    tn_params_free(&p);
    tn_free(x), tn_free(y), tn_free(xh), tn_free(yh);
    return status;
}

int main(void)
{
    static run_result cpu, gpu, again;
    vk_context vk;
    int rc = train(NULL, &cpu);
    CHECK(rc == DLCA_OK, "cpu training: %s", err_message());
    CHECK(fabs(cpu.w - 2.0) < 0.05 && fabs(cpu.b - 3.0) < 0.05, "cpu: w %.4f b %.4f", cpu.w, cpu.b);

    rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    tn_vk *dev = NULL;
    rc = tn_vk_open(&dev, &vk, NULL);
    CHECK(rc == DLCA_OK, "tn_vk_open: %s", err_message());
    rc = rc ? rc : train(dev, &gpu);
    CHECK(rc == DLCA_OK, "vulkan training: %s", err_message());
    CHECK(train(dev, &again) == DLCA_OK, "second vulkan training: %s", err_message());
    printf("%s: %s: cpu w = %.4f b = %.4f mse %.5f; vulkan w = %.4f b = %.4f mse %.5f\n", test_name,
           vk.props.deviceName, cpu.w, cpu.b, cpu.loss[STEPS - 1], gpu.w, gpu.b, gpu.loss[STEPS - 1]);
    CHECK(fabs(gpu.w - 2.0) < 0.05, "vulkan weight %.4f", gpu.w);
    CHECK(fabs(gpu.b - 3.0) < 0.05, "vulkan bias %.4f", gpu.b);
    CHECK(gpu.loss[STEPS - 1] < 0.02, "vulkan final mse %.4f should be near the noise variance 0.01", gpu.loss[STEPS - 1]);
    double worst = 0;
    int worst_step = 0;
    for (int s = 0; s < STEPS; s++) {
        double rel = fabs(gpu.loss[s] - cpu.loss[s]) / fabs(cpu.loss[s]);
        if (!(rel <= worst)) worst = rel, worst_step = s;
    }
    printf("%s: loss curves differ by at most %.2e relative (step %d)\n", test_name, worst, worst_step);
    CHECK(worst <= 1e-4, "loss curves differ by %.3g relative at step %d (cpu %.9g, vulkan %.9g)", worst, worst_step,
          cpu.loss[worst_step], gpu.loss[worst_step]);
    CHECK(memcmp(gpu.loss, again.loss, sizeof gpu.loss) == 0, "two vulkan runs give the same losses bit for bit");
    CHECK(tn_vk_close(dev) == DLCA_OK, "tn_vk_close: %s", err_message());
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    return test_finish(test_name);
}
