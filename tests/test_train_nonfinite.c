/* test_train_nonfinite: a NaN that enters training stops it at the step it happens, with the same
 * message on every engine: the CPU's fast and reference engines, and the GPU's per-layer, fused
 * and persistent kernels (one dispatch a step, and all steps in one dispatch on one workgroup).
 * The NaN is a poisoned logit before step 3, through the trainer's test seam; on the GPU the
 * persistent kernels' clamps would hide it from the loss, so the logits gradient catches it. */
#include "ca_fixtures.h"
#include "ca_train.h"
#include "check.h"
#include "error.h"
#include "vk_test.h"

#include <math.h>
#include <string.h>

enum { POISONED_STEP = 3 };

static int poison(void *context, uint64_t step, ca_model *model)
{
    (void)context;
    if (step != POISONED_STEP) return 0;
    model->logits[0] = NAN;
    return 1;
}

/* Trains until an error (or 5 steps); the message and the steps that succeeded. */
static void run(const char *label, const ca_config *config, ca_backend backend, vk_context *vk, ca_options options,
                char *message, size_t size)
{
    ca_model model;
    ca_trainer trainer;
    options.before_step = poison;
    message[0] = '\0';
    if (ca_model_init(&model, config)) {
        snprintf(message, size, "model: %s", err_message());
        return;
    }
    int rc = ca_trainer_init(&trainer, &model, NULL, backend, vk, &options);
    if (rc) {
        snprintf(message, size, "init: %s", err_message());
    } else {
        double soft, hard;
        int done = 0;
        while (done < 5 && ca_trainer_step(&trainer, &soft, &hard) == DLCA_OK) done++;
        snprintf(message, size, "%s", done < 5 ? err_message() : "no error in 5 steps");
        if (backend == CA_BACKEND_GPU && options.gpu.persistent == CA_GPU_ON)
            CHECK(trainer.gpu.plan.persistent_groups == 1 && trainer.gpu.persistent_gave_up == 0,
                  "%s: one workgroup ran every step in one dispatch (%u, gave up %u)", label,
                  trainer.gpu.plan.persistent_groups, trainer.gpu.persistent_gave_up);
        CHECK(done == POISONED_STEP - 1 && trainer.step == POISONED_STEP - 1,
              "%s: the steps before the poisoned one ran (%d), the poisoned one did not count (%llu)", label, done,
              (unsigned long long)trainer.step);
        ca_trainer_free(&trainer);
    }
    ca_model_free(&model);
    printf("%s: %s\n", label, message);
}

int main(void)
{
    ca_config config;
    small_preset(&config, "checkerboard");
    config.height = config.width = 4, config.batch = 1, config.steps = 4;
    const char *expected = "gradient is not finite at step 3";
    char message[512];
    ca_options cpu = {0};
    run("cpu fast", &config, CA_BACKEND_CPU, NULL, cpu, message, sizeof message);
    CHECK(strcmp(message, expected) == 0, "cpu fast: '%s'", message);
    cpu.cpu_reference = 1;
    run("cpu reference", &config, CA_BACKEND_CPU, NULL, cpu, message, sizeof message);
    CHECK(strcmp(message, expected) == 0, "cpu reference: '%s'", message);

    vk_context vk;
    if (test_vk_context_init(&vk, -1)) {
        int status = test_no_vulkan("test_train_nonfinite", err_message());
        return status == 77 ? test_finish("test_train_nonfinite") : status;
    }
    struct {
        const char *label;
        ca_gpu_options gpu;
    } paths[] = {
        {"gpu per-layer", {.fused = CA_GPU_OFF}},
        {"gpu fused", {.fused = CA_GPU_ON, .persistent = CA_GPU_OFF}},
        {"gpu persistent, a dispatch a step", {.fused = CA_GPU_ON, .persistent = CA_GPU_STEPWISE}},
        {"gpu persistent, one dispatch", {.fused = CA_GPU_ON, .persistent = CA_GPU_ON, .tile = 16, .tile_backward = 16}},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        ca_options options = {.gpu = paths[i].gpu};
        run(paths[i].label, &config, CA_BACKEND_GPU, &vk, options, message, sizeof message);
        CHECK(strcmp(message, expected) == 0, "%s: '%s'", paths[i].label, message);
    }
    vk_context_free(&vk);
    return test_finish("test_train_nonfinite");
}
