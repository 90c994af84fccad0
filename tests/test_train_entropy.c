/* test_train_entropy: the gate-entropy penalty (ca_config.entropy). Its weight follows the ramp
 * of ca_entropy_weight; the trainer's gradient with it is the gradient without it plus w times
 * the entropy's gradient, which is checked against central finite differences in double; the
 * soft loss the trainer reports is the task loss alone. On the GPU, training with the penalty
 * gives the CPU engine's logits within rounding, and not those of training without it. */
#include "ca_fixtures.h"
#include "ca_train.h"
#include "check.h"
#include "error.h"
#include "vk_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { GPU_STEPS = 3 };

/* H(softmax(z)) of one row of 16 logits, in nats. */
static double row_entropy(const double *z)
{
    double top = z[0], sum = 0.0, h = 0.0;
    for (int i = 1; i < GATE_OP_COUNT; i++) top = fmax(top, z[i]);
    for (int i = 0; i < GATE_OP_COUNT; i++) sum += exp(z[i] - top);
    for (int i = 0; i < GATE_OP_COUNT; i++) {
        double log_p = z[i] - top - log(sum);
        h -= exp(log_p) * log_p;
    }
    return h;
}

/* dH/dz_i = -p_i (log p_i + H). */
static void row_entropy_grad(const double *z, double *grad)
{
    double top = z[0], sum = 0.0, h = row_entropy(z);
    for (int i = 1; i < GATE_OP_COUNT; i++) top = fmax(top, z[i]);
    for (int i = 0; i < GATE_OP_COUNT; i++) sum += exp(z[i] - top);
    for (int i = 0; i < GATE_OP_COUNT; i++) {
        double log_p = z[i] - top - log(sum);
        grad[i] = -exp(log_p) * (log_p + h);
    }
}

static void check_weight_ramp(void)
{
    ca_config c;
    ca_config_preset(&c, "checkerboard");
    CHECK(c.entropy == 0.0 && c.entropy_from == CA_ENTROPY_FROM, "presets start without the penalty (%g from %g)",
          c.entropy, c.entropy_from);
    c.train_steps = 10, c.entropy = 2.0, c.entropy_from = 0.5;
    for (uint64_t s = 0; s < 5; s++) CHECK(ca_entropy_weight(&c, s) == 0.0, "no weight before the ramp (step %llu)",
                                           (unsigned long long)s);
    CHECK(fabs(ca_entropy_weight(&c, 5) - 0.4) < 1e-12 && fabs(ca_entropy_weight(&c, 7) - 1.2) < 1e-12 &&
              ca_entropy_weight(&c, 9) == 2.0,
          "linear from the ramp's first step to the last: %g %g %g", ca_entropy_weight(&c, 5), ca_entropy_weight(&c, 7),
          ca_entropy_weight(&c, 9));
    CHECK(ca_entropy_weight(&c, 40) == 2.0, "the full weight after the budget (a resumed run)");
    c.entropy_from = 0.0;
    CHECK(fabs(ca_entropy_weight(&c, 0) - 0.2) < 1e-12, "from 0: a tenth at the first step (%g)",
          ca_entropy_weight(&c, 0));
    c.entropy = 0.0;
    CHECK(ca_entropy_weight(&c, 9) == 0.0, "entropy 0 is off");
    c.entropy = -0.1;
    CHECK(ca_config_check(&c) != DLCA_OK && strstr(err_message(), "entropy") != NULL, "a negative weight is refused: %s",
          err_message());
    c.entropy = 1.0, c.entropy_from = 1.5;
    CHECK(ca_config_check(&c) != DLCA_OK && strstr(err_message(), "entropy_from") != NULL,
          "a start past the run is refused: %s", err_message());
}

/* The reference gradient itself, against central differences of row_entropy. */
static void check_reference_gradient(void)
{
    rng_state rng;
    rng_init(&rng, 5, 0);
    double z[GATE_OP_COUNT], grad[GATE_OP_COUNT], worst = 0.0;
    for (int row = 0; row < 8; row++) {
        random_logits(z, 1, 3.0, &rng);
        row_entropy_grad(z, grad);
        for (int i = 0; i < GATE_OP_COUNT; i++) {
            double keep = z[i], h = 1e-5;
            z[i] = keep + h;
            double up = row_entropy(z);
            z[i] = keep - h;
            double down = row_entropy(z);
            z[i] = keep;
            worst = fmax(worst, fabs((up - down) / (2.0 * h) - grad[i]));
        }
    }
    CHECK(worst < 1e-8, "dH/dz against central differences: largest error %.3g", worst);
}

/* One CPU step of `config` from `logits`: the reported soft loss and z's gradient. */
static int cpu_gradient(const ca_config *config, const float *logits, double *soft, float *grad)
{
    ca_model model;
    ca_trainer t;
    ca_options options = {.cpu_threads = 1, .cpu_reference = 1};
    if (ca_model_init(&model, config)) return DLCA_ERR;
    memcpy(model.logits, logits, model.gate_count * GATE_OP_COUNT * sizeof(float));
    int rc = ca_trainer_init(&t, &model, NULL, CA_BACKEND_CPU, NULL, &options);
    if (!rc) {
        rc = ca_trainer_step(&t, soft, NULL);
        if (!rc) memcpy(grad, tn_params_grad(&t.params), t.gate_values * sizeof(float));
        ca_trainer_free(&t);
    }
    ca_model_free(&model);
    return rc;
}

static void check_cpu_gradient(void)
{
    ca_config plain;
    tiny_config(&plain, CA_BOUNDARY_PERIODIC, 1.0, 2, 3);
    plain.train_steps = 1;
    ca_config with = plain;
    with.entropy = 0.5, with.entropy_from = 0.0; /* the whole weight at the only step */
    ca_model sizes;
    if (ca_model_init(&sizes, &plain)) {
        CHECK(0, "model: %s", err_message());
        return;
    }
    size_t gates = sizes.gate_count, n = gates * GATE_OP_COUNT;
    ca_model_free(&sizes);
    float *logits = malloc(n * sizeof(float)), *g_plain = malloc(n * sizeof(float)), *g_with = malloc(n * sizeof(float));
    double *z = malloc(n * sizeof(double));
    rng_state rng;
    rng_init(&rng, 11, 0);
    random_logits(z, gates, 2.0, &rng);
    for (size_t i = 0; i < n; i++) logits[i] = (float)z[i], z[i] = logits[i];
    double soft_plain = 0.0, soft_with = 0.0;
    int rc = cpu_gradient(&plain, logits, &soft_plain, g_plain) || cpu_gradient(&with, logits, &soft_with, g_with);
    CHECK(rc == DLCA_OK, "CPU steps: %s", err_message());
    if (!rc) {
        CHECK(soft_plain == soft_with, "the reported soft loss is the task loss: %.9g against %.9g", soft_with,
              soft_plain);
        double worst = 0.0, largest = 0.0, grad[GATE_OP_COUNT];
        for (size_t g = 0; g < gates; g++) {
            row_entropy_grad(z + g * GATE_OP_COUNT, grad);
            for (int i = 0; i < GATE_OP_COUNT; i++) {
                size_t k = g * GATE_OP_COUNT + (size_t)i;
                double added = (double)g_with[k] - (double)g_plain[k];
                worst = fmax(worst, fabs(added - with.entropy * grad[i]));
                largest = fmax(largest, fabs(with.entropy * grad[i]));
            }
        }
        CHECK(largest > 1e-2 && worst < 1e-5 * (1.0 + largest),
              "the gradient gains w dH/dz: largest error %.3g of terms up to %.3g", worst, largest);
    }
    free(logits), free(g_plain), free(g_with), free(z);
}

/* GPU_STEPS training steps of `config` from `logits`; the logits after them. */
static int train_logits(const ca_config *config, ca_backend backend, vk_context *vk, const float *logits, float *out,
                        double *soft)
{
    ca_model model;
    ca_trainer t;
    ca_options options = {.cpu_threads = 1, .cpu_reference = 1};
    if (ca_model_init(&model, config)) return DLCA_ERR;
    size_t n = model.gate_count * GATE_OP_COUNT;
    memcpy(model.logits, logits, n * sizeof(float));
    int rc = ca_trainer_init(&t, &model, NULL, backend, vk, &options);
    if (!rc) {
        for (int s = 0; !rc && s < GPU_STEPS; s++) rc = ca_trainer_step(&t, &soft[s], NULL);
        if (!rc) rc = ca_trainer_sync(&t);
        ca_trainer_free(&t);
    }
    if (!rc) memcpy(out, model.logits, n * sizeof(float));
    ca_model_free(&model);
    return rc;
}

static double largest_difference(const float *a, const float *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
    return worst;
}

static void check_gpu(vk_context *vk)
{
    ca_config with;
    small_preset(&with, "checkerboard");
    with.train_steps = GPU_STEPS, with.entropy = 4.0, with.entropy_from = 0.0;
    ca_config plain = with;
    plain.entropy = 0.0;
    ca_model sizes;
    if (ca_model_init(&sizes, &with)) {
        CHECK(0, "model: %s", err_message());
        return;
    }
    size_t gates = sizes.gate_count, n = gates * GATE_OP_COUNT;
    ca_model_free(&sizes);
    float *logits = malloc(n * sizeof(float)), *cpu = malloc(n * sizeof(float)), *gpu = malloc(n * sizeof(float)),
          *gpu_plain = malloc(n * sizeof(float));
    double *z = malloc(n * sizeof(double)), soft_cpu[GPU_STEPS], soft_gpu[GPU_STEPS], soft_plain[GPU_STEPS];
    rng_state rng;
    rng_init(&rng, 23, 0);
    peaked_logits(z, gates, &rng);
    for (size_t i = 0; i < n; i++) logits[i] = (float)z[i];
    int rc = train_logits(&with, CA_BACKEND_CPU, NULL, logits, cpu, soft_cpu) ||
             train_logits(&with, CA_BACKEND_GPU, vk, logits, gpu, soft_gpu) ||
             train_logits(&plain, CA_BACKEND_GPU, vk, logits, gpu_plain, soft_plain);
    CHECK(rc == DLCA_OK, "training on both engines: %s", err_message());
    if (!rc) {
        double parity = largest_difference(gpu, cpu, n), effect = largest_difference(gpu, gpu_plain, n);
        CHECK(parity < 1e-4, "GPU against CPU with the penalty: logits within %.3g", parity);
        CHECK(effect > 100.0 * parity && effect > 1e-3, "the penalty moves the GPU's logits by %.3g (rounding %.3g)",
              effect, parity);
        for (int s = 0; s < GPU_STEPS; s++)
            CHECK(fabs(soft_gpu[s] - soft_cpu[s]) <= 1e-5 * fabs(soft_cpu[s]), "step %d: GPU loss %.9g against %.9g",
                  s + 1, soft_gpu[s], soft_cpu[s]);
        CHECK(soft_gpu[0] == soft_plain[0], "the first step's reported loss is the task loss (%.9g, %.9g)", soft_gpu[0],
              soft_plain[0]);
    }
    free(logits), free(cpu), free(gpu), free(gpu_plain), free(z);
}

int main(void)
{
    check_weight_ramp();
    check_reference_gradient();
    check_cpu_gradient();
    vk_context vk;
    if (test_vk_context_init(&vk, -1) != DLCA_OK)
        return check_failed ? test_finish("test_train_entropy") : test_no_vulkan("test_train_entropy", err_message());
    check_gpu(&vk);
    vk_context_free(&vk);
    return test_finish("test_train_entropy");
}
