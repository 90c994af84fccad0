/* test_ca_gpu_persistent: what the trainer does when a persistent fused kernel cannot run every
 * workgroup at once. On lavapipe (a CPU driver that runs a few workgroups at a time) the kernels'
 * roll call closes, AdamW skips the step, and the trainer runs it again one dispatch a CA step:
 * the model after training is the one a run without persistent kernels gives, bit for bit, and
 * the engine says it gave up. On a GPU that holds them all, the two runs agree within float
 * rounding. The kernels' results themselves are checked against the CPU engine by test_ca_gpu
 * and test_ca_gpu_shapes (--persistent step in CMakeLists.txt, and on the GPU machine); here,
 * run one dispatch a step (CA_GPU_STEPWISE), the trainer's way of recording them too: what
 * they poll cleared beside the gate coefficients (src/gpu/ca_gpu_step.c). Every step measures
 * the hard loss too, whose rollout is a forward alone: its giving up is kept past the soft
 * rollout's clear (ca_gpu_keep_forward_roll), so the step runs again instead of going on with a
 * NaN hard loss, and the hard losses are the single runs' exactly. */
#include "ca_fixtures.h"
#include "ca_population.h"
#include "ca_train.h"
#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "vk_command.h"
#include "vk_context.h"

#include <math.h>
#include <stdlib.h>

enum { STEPS = 3 };

typedef struct {
    float *logits;
    double loss[STEPS], hard[STEPS];
    uint32_t groups, tiles, gave_up;
} run_result;

/* STEPS training steps on the GPU from the config's seed, with the persistent kernels `mode` and
 * fused tiles of `tile` cells (0: automatic). */
static int train(vk_context *vk, const ca_config *config, ca_gpu_choice mode, uint32_t tile, run_result *r)
{
    ca_model model;
    ca_trainer trainer;
    ca_options options = {.gpu = {.persistent = mode, .tile = tile, .tile_backward = tile}};
    if (ca_model_init(&model, config)) return DLCA_ERR;
    int rc = ca_trainer_init(&trainer, &model, NULL, CA_BACKEND_GPU, vk, &options);
    if (!rc) {
        r->groups = trainer.gpu.plan.persistent_groups, r->tiles = trainer.gpu.plan.tiles;
        for (int s = 0; !rc && s < STEPS; s++) rc = ca_trainer_step(&trainer, &r->loss[s], &r->hard[s]);
        r->gave_up = trainer.gpu.persistent_gave_up;
        if (!rc) rc = ca_trainer_sync(&trainer);
        ca_trainer_free(&trainer);
    }
    size_t n = model.gate_count * GATE_OP_COUNT;
    r->logits = malloc(n * sizeof(float));
    if (r->logits) memcpy(r->logits, model.logits, n * sizeof(float));
    ca_model_free(&model);
    return rc || !r->logits ? DLCA_ERR : DLCA_OK;
}

/* The persistent kernels as they run on a GPU, every CA step of the forward and of BPTT in one
 * dispatch, with the roll call and the waits, on a device of any size: a grid small enough for
 * one workgroup to hold whole (tiles of all 16 cells), so even a CPU driver runs them. The same
 * training as without them, within rounding. */
static void check_one_workgroup(vk_context *vk, const ca_config *base)
{
    ca_config config = *base;
    config.height = config.width = 4, config.batch = 1;
    run_result off = {0}, on = {0};
    int rc = train(vk, &config, CA_GPU_OFF, 16, &off);
    if (!rc) rc = train(vk, &config, CA_GPU_ON, 16, &on);
    CHECK(rc == DLCA_OK, "one workgroup: %s", err_message());
    if (!rc) {
        CHECK(on.groups == 1 && on.gave_up == 0, "one workgroup holds the 4x4 grid and runs persistently (%u "
              "workgroups, gave up %u)", on.groups, on.gave_up);
        ca_model sizes;
        size_t n = ca_model_init(&sizes, &config) == DLCA_OK ? sizes.gate_count * GATE_OP_COUNT : 0;
        ca_model_free(&sizes);
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)on.logits[i] - (double)off.logits[i]));
        CHECK(n > 0 && worst < 1e-4, "one workgroup: the logits of the run without within rounding (%.3g)", worst);
        for (int s = 0; s < STEPS; s++)
            CHECK(fabs(on.loss[s] - off.loss[s]) <= 1e-5 * fabs(off.loss[s]), "one workgroup, step %d: loss %.9g "
                  "against %.9g", s + 1, on.loss[s], off.loss[s]);
    }
    free(off.logits), free(on.logits);
}

/* A population spread over queues (ca_population.queues): a member whose persistent kernels give
 * up beside the others runs its step again alone with them kept, and the population keeps to one
 * queue from then on. On lavapipe (one queue, which vk_spread uses for any spread
 * asked) every member gives up beside the others and alone: one queue after the first step, and
 * each member's model is its single run's without persistent kernels, bit for bit. */
static void check_population_crowded(vk_context *vk, const ca_config *config, const run_result *alone, size_t n)
{
    enum { MEMBERS = 2 };
    ca_population p;
    ca_options options = {.gpu = {.persistent = CA_GPU_ON}};
    int rc = ca_population_init(&p, config, MEMBERS, NULL, CA_BACKEND_GPU, vk, &options, 1);
    CHECK(rc == DLCA_OK, "a population of %d: %s", MEMBERS, err_message());
    if (rc) return;
    p.queues = 2; /* as on a device of two queues or more */
    double soft[MEMBERS], hard[MEMBERS];
    uint32_t queues_after_first = 0;
    for (int s = 0; !rc && s < STEPS; s++) {
        rc = ca_population_step(&p, 1, soft, hard);
        if (s == 0) queues_after_first = p.queues;
        for (int i = 0; !rc && i < MEMBERS; i++) {
            CHECK(fabs(soft[i] - alone[i].loss[s]) <= 1e-5 * fabs(alone[i].loss[s]), "member %d, step %d: loss %.9g "
                  "against its single run's %.9g", i, s + 1, soft[i], alone[i].loss[s]);
            CHECK(hard[i] == alone[i].hard[s], "member %d, step %d: hard loss %.9g against its single run's %.9g", i,
                  s + 1, hard[i], alone[i].hard[s]);
        }
    }
    CHECK(rc == DLCA_OK, "the population's steps: %s", err_message());
    int cpu = vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU, gave_up = 0;
    for (int i = 0; !rc && i < MEMBERS; i++) {
        ca_trainer *t = &p.members[i].trainer;
        rc = ca_trainer_sync(t);
        CHECK(t->beside_others == 0 && t->crowded == 0, "member %d: the step's flags are cleared (%d, %d)", i,
              t->beside_others, t->crowded);
        gave_up += t->gpu.persistent_gave_up != 0;
        if (rc) break;
        double worst = 0.0;
        for (size_t k = 0; k < n; k++) worst = fmax(worst, fabs((double)p.members[i].model.logits[k] - alone[i].logits[k]));
        if (t->gpu.persistent_gave_up)
            CHECK(memcmp(p.members[i].model.logits, alone[i].logits, n * sizeof(float)) == 0, "member %d: its "
                  "single run's logits, bit for bit (largest difference %.3g)", i, worst);
        else
            CHECK(worst < 1e-4, "member %d: its single run's logits within rounding (%.3g)", i, worst);
    }
    if (cpu) {
        CHECK(gave_up == MEMBERS, "on a CPU driver every member's kernels give up alone too (%d)", gave_up);
        CHECK(queues_after_first == 1 && p.queues == 1, "after members gave up beside the others the population "
              "keeps to one queue (%u after the first step, %u now)", queues_after_first, p.queues);
    }
    printf("%s: a population asked to spread over 2 queues ends on %u\n", vk->props.deviceName, p.queues);
    ca_population_free(&p);
}

/* The trainer's hard rollout is a forward alone, and the soft rollout's clear comes after it: a
 * persistent forward that gave up there must still be seen (ca_gpu_keep_forward_roll), or the step
 * goes on with a NaN hard loss. Where the kernels give up (a CPU driver's 64 tiles), the roll
 * words read after the soft's clear say so with the copy, and without it do not. */
static void check_kept_forward_roll(vk_context *vk, const ca_config *config)
{
    ca_model model;
    if (ca_model_init(&model, config)) {
        CHECK(0, "a model: %s", err_message());
        return;
    }
    ca_gpu_options options = {.persistent = CA_GPU_ON};
    int seen[2] = {-1, -1};
    for (int keep = 0; keep < 2; keep++) {
        ca_gpu e;
        VkCommandBuffer cmd;
        int rc = ca_gpu_init(&e, vk, &model, config->batch, 0, 0, &options);
        if (!rc) rc = vk_cmd_begin(vk, &cmd);
        if (!rc) {
            rc = ca_gpu_coefficients(&e, cmd, 1); /* clears what the forward polls */
            if (!rc) rc = ca_gpu_forward(&e, cmd);
            if (!rc && keep) ca_gpu_keep_forward_roll(&e, cmd);
            if (!rc) rc = ca_gpu_clear_persistent(&e, cmd, 1, 1);
            if (!rc) vk_cmd_barrier(cmd), ca_gpu_roll_to_host(&e, cmd);
            int done = vk_cmd_finish(vk, cmd);
            if (!rc) rc = done;
        }
        CHECK(rc == DLCA_OK, "a forward and the soft's clear (keep %d): %s", keep, err_message());
        if (!rc) seen[keep] = ca_gpu_persistent_gave_up(&e);
        ca_gpu_free(&e);
    }
    if (vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
        CHECK(seen[1] == 1 && seen[0] == 0, "a forward that gave up is seen after the next clear with its roll kept "
              "(%d), and not without (%d)", seen[1], seen[0]);
    else
        CHECK(seen[1] == seen[0] && seen[1] >= 0, "a forward that ran is the same with its roll kept (%d, %d)", seen[1],
              seen[0]);
    ca_model_free(&model);
}

int main(void)
{
    vk_context vk;
    if (test_vk_context_init(&vk, -1) != DLCA_OK) return test_no_vulkan("test_ca_gpu_persistent", err_message());
    ca_config config;
    small_preset(&config, "checkerboard");
    config.height = config.width = 8; /* 64 tiles at batch 2: more than lavapipe runs at once */
    ca_model sizes;
    if (ca_model_init(&sizes, &config)) return 1;
    size_t n = sizes.gate_count * GATE_OP_COUNT;
    ca_model_free(&sizes);

    run_result off = {0}, on = {0}, stepwise = {0};
    int rc = train(&vk, &config, CA_GPU_OFF, 0, &off);
    CHECK(rc == DLCA_OK, "training without persistent kernels: %s", err_message());
    if (!rc) rc = train(&vk, &config, CA_GPU_ON, 0, &on);
    CHECK(rc == DLCA_OK, "training with persistent kernels: %s", err_message());
    if (!rc) rc = train(&vk, &config, CA_GPU_STEPWISE, 0, &stepwise);
    CHECK(rc == DLCA_OK, "training with persistent kernels a dispatch a step: %s", err_message());
    if (!rc) {
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)stepwise.logits[i] - (double)off.logits[i]));
        CHECK(stepwise.groups == 64 && stepwise.gave_up == 0, "a dispatch a step runs on any device (gave up: %u)",
              stepwise.gave_up);
        CHECK(worst < 1e-4, "a dispatch a step: the same logits as without within rounding: largest difference %.3g",
              worst);
        for (int s = 0; s < STEPS; s++)
            CHECK(fabs(stepwise.loss[s] - off.loss[s]) <= 1e-5 * fabs(off.loss[s]),
                  "a dispatch a step, step %d: loss %.9g against %.9g", s + 1, stepwise.loss[s], off.loss[s]);
    }
    if (!rc) {
        CHECK(off.groups == 0, "persistent off plans none (%u workgroups)", off.groups);
        CHECK(on.groups == on.tiles && on.tiles == 64, "persistent on plans a workgroup a forward tile: %u of %u",
              on.groups, on.tiles);
        int cpu = vk.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
        if (cpu) CHECK(on.gave_up == on.tiles, "on a CPU driver the kernels give up (%u)", on.gave_up);
        printf("%s: the persistent kernels %s\n", vk.props.deviceName, on.gave_up ? "gave up" : "ran");
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)on.logits[i] - (double)off.logits[i]));
        if (on.gave_up)
            CHECK(memcmp(on.logits, off.logits, n * sizeof(float)) == 0, "the step run again: the same logits "
                  "as without (largest difference %.3g)", worst);
        else
            CHECK(worst < 1e-4, "the same logits as without within rounding: largest difference %.3g", worst);
        for (int s = 0; s < STEPS; s++)
            CHECK(fabs(on.loss[s] - off.loss[s]) <= 1e-5 * fabs(off.loss[s]), "step %d: loss %.9g against %.9g", s + 1,
                  on.loss[s], off.loss[s]);
    }
    run_result second = {0};
    ca_config next = config;
    next.seed = config.seed + 1;
    int second_rc = rc ? rc : train(&vk, &next, CA_GPU_OFF, 0, &second);
    CHECK(second_rc == DLCA_OK, "training seed %llu without persistent kernels: %s", (unsigned long long)next.seed,
          err_message());
    if (!second_rc) check_population_crowded(&vk, &config, (run_result[2]){off, second}, n);
    free(off.logits), free(on.logits), free(stepwise.logits), free(second.logits);
    check_one_workgroup(&vk, &config);
    ca_config per_kernel = config; /* the backward's moore rows by direction, waited for by neighbours */
    per_kernel.perception_wiring = CA_PERCEPTION_PER_KERNEL;
    check_one_workgroup(&vk, &per_kernel);
    check_kept_forward_roll(&vk, &config);
    vk_context_free(&vk);
    return test_finish("test_ca_gpu_persistent");
}
