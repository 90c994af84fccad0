/* test_train_hard_reuse: where every round is the same rollout (a seed-cell start, synchronous),
 * a step asked for the hard loss reuses the last measured one while the circuit's ops are
 * unchanged (ca_train.h, same_round). The losses must be those of running the hard rollout every
 * time, bit for bit, on the CPU engines, the GPU's paths and a GPU population; the reuse must
 * happen, and so must new measurements once ops change (the hard loss moves during the run);
 * logits written from outside (the test seam) are measured anew; a run whose rounds differ never
 * reuses. */
#include "ca_population.h"
#include "check.h"
#include "train_fixtures.h"
#include "vk_test.h"

#include <stdio.h>
#include <string.h>

enum { STEPS = 40, POKE_STEP = 25, MEMBERS = 2 };

/* A checkerboard target grown from a seed cell: the same rollout every round, with ops that
 * change while the test runs (changing_ops_config). */
static void same_round_config(ca_config *c)
{
    changing_ops_config(c, STEPS);
    c->batch = 1, c->start = CA_START_SEED_CELL, c->fire_rate = 1.0;
}

/* The test seam: at POKE_STEP every gate's logits are rotated by one op (rotate_ops). */
static int poke(void *context, uint64_t step, ca_model *model)
{
    (void)context;
    if (step != POKE_STEP) return 0;
    rotate_ops(model);
    return 1;
}

static int train(const ca_config *config, ca_backend backend, vk_context *vk, ca_options options, run_losses *out)
{
    options.before_step = poke;
    return train_losses(config, backend, vk, &options, out);
}

/* Runs `label` both ways and compares. */
static void check_path(const char *label, const ca_config *config, ca_backend backend, vk_context *vk, ca_options options)
{
    run_losses reuse, always;
    ca_options every = options;
    every.hard_rollout_always = 1;
    int rc = train(config, backend, vk, options, &reuse) || train(config, backend, vk, every, &always);
    CHECK(!rc, "%s: %s", label, err_message());
    if (rc) return;
    int same = 1, changes = 0;
    for (int s = 0; s < STEPS; s++) {
        if (reuse.soft[s] != always.soft[s] || reuse.hard[s] != always.hard[s]) {
            if (same) printf("%s: step %d: soft %.9g hard %g, rollout every time %.9g %g\n", label, s + 1, reuse.soft[s],
                             reuse.hard[s], always.soft[s], always.hard[s]);
            same = 0;
        }
        if (s && always.hard[s] != always.hard[s - 1]) changes++;
    }
    CHECK(same, "%s: the losses equal those of a hard rollout every step", label);
    CHECK(always.reused == 0, "%s: hard_rollout_always reused %llu", label, (unsigned long long)always.reused);
    CHECK(reuse.reused > 0 && reuse.reused < STEPS - 2, "%s: %llu of %d steps reused the hard loss", label,
          (unsigned long long)reuse.reused, STEPS);
    CHECK(changes >= 2, "%s: the hard loss changed %d times during the run (the test needs changes)", label, changes);
}

/* A population's members step through ca_trainer_step_record / _finish: each member's hard
 * losses equal its own run with a hard rollout every step. */
static void check_population(const ca_config *config, vk_context *vk)
{
    ca_population p;
    ca_options options = {.before_step = poke};
    double soft[MEMBERS], hard[MEMBERS];
    static run_losses got[MEMBERS];
    memset(&p, 0, sizeof p);
    int rc = ca_population_init(&p, config, MEMBERS, NULL, CA_BACKEND_GPU, vk, &options, 1);
    for (int s = 0; !rc && s < STEPS; s++) {
        rc = ca_population_step(&p, 1, soft, hard);
        for (int i = 0; !rc && i < MEMBERS; i++) got[i].soft[s] = soft[i], got[i].hard[s] = hard[i];
    }
    for (int i = 0; !rc && i < MEMBERS; i++) got[i].reused = p.members[i].trainer.hard_reused;
    CHECK(!rc, "population: %s", err_message());
    ca_population_free(&p);
    if (rc) return;
    for (int i = 0; i < MEMBERS; i++) {
        ca_config member = *config;
        member.seed = config->seed + (uint64_t)i;
        run_losses want;
        ca_options every = {.hard_rollout_always = 1};
        CHECK(!train(&member, CA_BACKEND_GPU, vk, every, &want), "member %d alone: %s", i, err_message());
        int same = 1;
        for (int s = 0; s < STEPS; s++) same &= got[i].soft[s] == want.soft[s] && got[i].hard[s] == want.hard[s];
        CHECK(same, "population member %d: the losses equal its run with a hard rollout every step", i);
        CHECK(got[i].reused > 0, "population member %d reused the hard loss (%llu steps)", i,
              (unsigned long long)got[i].reused);
    }
}

int main(void)
{
    ca_config config;
    same_round_config(&config);
    check_path("cpu fast", &config, CA_BACKEND_CPU, NULL, (ca_options){.cpu_threads = 1});
    check_path("cpu reference", &config, CA_BACKEND_CPU, NULL, (ca_options){.cpu_reference = 1});

    /* rounds that differ (random starts) are never reused */
    ca_config random = config;
    random.start = CA_START_RANDOM;
    run_losses r;
    CHECK(!train(&random, CA_BACKEND_CPU, NULL, (ca_options){.cpu_threads = 1}, &r) && r.reused == 0,
          "random starts: %llu steps reused the hard loss", (unsigned long long)r.reused);

    vk_context vk;
    if (test_vk_context_init(&vk, -1)) {
        int status = test_no_vulkan("test_train_hard_reuse", err_message());
        return status == 77 ? test_finish("test_train_hard_reuse") : status;
    }
    check_path("gpu per-layer", &config, CA_BACKEND_GPU, &vk, (ca_options){.gpu = {.fused = CA_GPU_OFF}});
    check_path("gpu fused", &config, CA_BACKEND_GPU, &vk, (ca_options){.gpu = {.fused = CA_GPU_ON, .persistent = CA_GPU_OFF}});
    check_path("gpu persistent", &config, CA_BACKEND_GPU, &vk, (ca_options){.gpu = {.fused = CA_GPU_ON, .persistent = CA_GPU_ON}});
    check_population(&config, &vk);
    vk_context_free(&vk);
    return test_finish("test_train_hard_reuse");
}
