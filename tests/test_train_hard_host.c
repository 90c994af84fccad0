/* test_train_hard_host: on the GPU a step asked for the hard loss measures it on the host
 * (ca_hard_host.h) from the ops the previous step copied out, while the GPU runs the step
 * (ca_train.h, hard_on_host). The losses must be those of the hard rollout on the GPU, bit for
 * bit, on rounds of random starts (a batch of two), of random fire masks (asynchronous), of one
 * seed-cell rollout (where the hard loss is also reused), through the GPU's paths and a
 * population; the host must measure nearly every step, the hard loss must change during the run,
 * and logits written from outside (the test seam) must be measured as written. By default only
 * rollouts of CA_HARD_HOST_MIN_EVALS gate evaluations or more go to the host. */
#include "ca_population.h"
#include "check.h"
#include "train_fixtures.h"
#include "vk_test.h"

#include <stdio.h>
#include <string.h>

enum { STEPS = 30, POKE_STEP = 17, MEMBERS = 2 };

/* The test seam: at POKE_STEP every gate's logits are rotated by one op (rotate_ops), so the
 * circuit the host last read is not z's. */
static int poke(void *context, uint64_t step, ca_model *model)
{
    (void)context;
    if (step != POKE_STEP) return 0;
    rotate_ops(model);
    return 1;
}

static int train(const ca_config *config, vk_context *vk, ca_options options, run_losses *out)
{
    options.before_step = poke;
    return train_losses(config, CA_BACKEND_GPU, vk, &options, out);
}

/* Whether two runs' losses are equal at every step (the first difference printed). */
static int same_losses(const char *label, const run_losses *a, const run_losses *b)
{
    for (int s = 0; s < STEPS; s++)
        if (a->soft[s] != b->soft[s] || a->hard[s] != b->hard[s]) {
            printf("%s: step %d: soft %.9g hard %g, on the GPU %.9g %g\n", label, s + 1, a->soft[s], a->hard[s],
                   b->soft[s], b->hard[s]);
            return 0;
        }
    return 1;
}

/* `label` with the hard loss on the host against on the GPU. `reused`: steps the host skips
 * because the trainer reuses the last hard loss (same_round). */
static void check_path(const char *label, const ca_config *config, vk_context *vk, ca_options options, int same_round)
{
    run_losses host, gpu;
    options.hard_on_host = CA_GPU_ON; /* the test's rollouts are below CA_HARD_HOST_MIN_EVALS */
    ca_options on_gpu = options;
    on_gpu.hard_on_host = CA_GPU_OFF;
    int rc = train(config, vk, options, &host) || train(config, vk, on_gpu, &gpu);
    CHECK(!rc, "%s: %s", label, err_message());
    if (rc) return;
    int changes = 0;
    for (int s = 1; s < STEPS; s++) changes += gpu.hard[s] != gpu.hard[s - 1];
    CHECK(same_losses(label, &host, &gpu), "%s: the losses equal those of the hard rollout on the GPU", label);
    CHECK(gpu.on_host == 0, "%s: hard_on_host off measured %llu steps on the host", label, (unsigned long long)gpu.on_host);
    /* step 1 and the poked step have no ops copied out: the GPU measures them */
    if (same_round)
        CHECK(host.on_host >= 3 && host.on_host <= STEPS - 2, "%s: %llu steps measured on the host", label,
              (unsigned long long)host.on_host);
    else
        CHECK(host.on_host == STEPS - 2, "%s: %llu of %d steps measured on the host", label,
              (unsigned long long)host.on_host, STEPS - 2);
    CHECK(changes >= 2, "%s: the hard loss changed %d times during the run (the test needs changes)", label, changes);
}

/* A population's members record and finish their steps side by side, each with a measurement of
 * its own on the host: each member's losses equal its run alone with the hard loss on the GPU. */
static void check_population(const ca_config *config, vk_context *vk)
{
    ca_population p;
    ca_options options = {.before_step = poke, .hard_on_host = CA_GPU_ON};
    double soft[MEMBERS], hard[MEMBERS];
    static run_losses got[MEMBERS];
    memset(&p, 0, sizeof p);
    int rc = ca_population_init(&p, config, MEMBERS, NULL, CA_BACKEND_GPU, vk, &options, 1);
    for (int s = 0; !rc && s < STEPS; s++) {
        rc = ca_population_step(&p, 1, soft, hard);
        for (int i = 0; !rc && i < MEMBERS; i++) got[i].soft[s] = soft[i], got[i].hard[s] = hard[i];
    }
    for (int i = 0; !rc && i < MEMBERS; i++) got[i].on_host = p.members[i].trainer.hard_on_host_steps;
    CHECK(!rc, "population: %s", err_message());
    ca_population_free(&p);
    if (rc) return;
    for (int i = 0; i < MEMBERS; i++) {
        ca_config member = *config;
        member.seed = config->seed + (uint64_t)i;
        run_losses want;
        CHECK(!train(&member, vk, (ca_options){.hard_on_host = CA_GPU_OFF}, &want), "member %d alone: %s", i, err_message());
        char label[64];
        snprintf(label, sizeof label, "population member %d", i);
        CHECK(same_losses(label, &got[i], &want), "%s: the losses equal its run alone, hard loss on the GPU", label);
        CHECK(got[i].on_host == STEPS - 2, "%s: %llu steps measured on the host", label,
              (unsigned long long)got[i].on_host);
    }
}

/* Whether a trainer of `config` with the default options measures on the host. */
static void check_default(const ca_config *config, vk_context *vk, int want)
{
    ca_model model;
    ca_trainer t;
    int rc = ca_model_init(&model, config), got = -1;
    if (!rc) rc = ca_trainer_init(&t, &model, NULL, CA_BACKEND_GPU, vk, NULL);
    if (!rc) got = t.hard_on_host, ca_trainer_free(&t);
    ca_model_free(&model);
    CHECK(!rc && got == want, "%dx%d x %d, T %d: hard_on_host %d by default, want %d (%s)", config->height,
          config->width, config->batch, config->steps, got, want, rc ? err_message() : "");
}

int main(void)
{
    vk_context vk;
    if (test_vk_context_init(&vk, -1)) {
        int status = test_no_vulkan("test_train_hard_host", err_message());
        return status == 77 ? test_finish("test_train_hard_host") : status;
    }
    ca_config random, async, seed;
    changing_ops_config(&random, STEPS); /* random starts, a batch of two */
    async = random;
    async.fire_rate = 0.5, async.batch = 1;
    seed = random;
    seed.start = CA_START_SEED_CELL, seed.batch = 1;
    ca_options fused = {.gpu = {.fused = CA_GPU_ON, .persistent = CA_GPU_OFF}};
    check_path("random starts, per-layer", &random, &vk, (ca_options){.gpu = {.fused = CA_GPU_OFF}}, 0);
    check_path("random starts, fused", &random, &vk, fused, 0);
    check_path("random starts, persistent", &random, &vk,
               (ca_options){.gpu = {.fused = CA_GPU_ON, .persistent = CA_GPU_ON}}, 0);
    check_path("asynchronous", &async, &vk, fused, 0);
    check_path("seed cell (reused)", &seed, &vk, fused, 1);
    check_population(&random, &vk);

    /* a pool's starts come from the host's pool: the GPU measures */
    ca_config pooled = seed;
    pooled.pool = 4, pooled.batch = 2;
    run_losses pool;
    CHECK(!train(&pooled, &vk, (ca_options){.hard_on_host = CA_GPU_ON}, &pool) && pool.on_host == 0,
          "pool: %llu steps on the host (%s)", (unsigned long long)pool.on_host, err_message());

    /* by default only rollouts of CA_HARD_HOST_MIN_EVALS gate evaluations or more: the test's
     * small one stays on the GPU, the checkerboard preset's (16x16 x 2, T 20) goes to the host */
    check_default(&random, &vk, 0);
    ca_config preset;
    ca_config_preset(&preset, "checkerboard");
    check_default(&preset, &vk, 1);
    vk_context_free(&vk);
    return test_finish("test_train_hard_host");
}
