/* test_ca_determinism: the same seed gives the same wiring, start states, rollout and gradient
 * bit for bit; another seed gives other wiring and start states. */
#include "ca_cpu.h"
#include "ca_fixtures.h"
#include "ca_task.h"
#include "check.h"
#include "error.h"

#include <stdlib.h>

typedef struct {
    ca_model model;
    double *final_grid, *dlogits, loss;
} run_result;

static int run_once(run_result *r, uint64_t seed)
{
    ca_config config;
    tiny_config(&config, CA_BOUNDARY_ZERO, 0.6, 2, 3);
    config.seed = seed;
    ca_cpu engine;
    if (ca_model_init(&r->model, &config) || ca_cpu_init(&engine, &r->model, 2, 0, 0)) return DLCA_ERR;
    size_t gates = r->model.gate_count, n_grid = (size_t)config.channels * engine.cells;
    double *logits = malloc(gates * 16 * sizeof(double)), *target = malloc(n_grid * sizeof(double));
    rng_state rng;
    rng_init(&rng, seed, 77);
    random_logits(logits, gates, 2.0, &rng);
    ca_cpu_coefficients(&engine, logits, 0);
    ca_task_start(&config, engine.shape, 5, ca_cpu_grid(&engine, 0));
    ca_task_target(&config, engine.shape, ca_cpu_grid(&engine, 0), NULL, target);
    ca_cpu_set_fire_stream(&engine, rng_fire_stream(seed, 5));
    ca_cpu_forward(&engine);
    r->loss = fixture_loss(&r->model, engine.cells, ca_cpu_grid(&engine, config.steps), target, engine.dgrid);
    ca_cpu_backward(&engine);
    r->dlogits = malloc(gates * 16 * sizeof(double));
    r->final_grid = malloc(n_grid * sizeof(double));
    fixture_logits_gradient(&r->model, engine.coeff_grad, logits, r->dlogits);
    memcpy(r->final_grid, ca_cpu_grid(&engine, config.steps), n_grid * sizeof(double));
    free(logits), free(target);
    ca_cpu_free(&engine);
    return DLCA_OK;
}

static int same_wiring(const ca_model *a, const ca_model *b)
{
    int same = 1;
    for (int l = 0; l < a->config.update_depth; l++) {
        size_t n = (size_t)a->update[l].n_out * sizeof(int);
        same &= memcmp(a->update[l].input_a, b->update[l].input_a, n) == 0;
        same &= memcmp(a->update[l].input_b, b->update[l].input_b, n) == 0;
    }
    same &= memcmp(a->perception[0].input_a, b->perception[0].input_a, 8 * sizeof(int)) == 0;
    return same;
}

static void free_result(run_result *r)
{
    free(r->final_grid), free(r->dlogits);
    ca_model_free(&r->model);
}

int main(void)
{
    run_result first, second, other;
    if (run_once(&first, 1234) || run_once(&second, 1234) || run_once(&other, 4321)) {
        CHECK(0, "set-up: %s", err_message());
        return test_finish("test_ca_determinism");
    }
    size_t n_grid = 2 * 2 * 12, n_logits = first.model.gate_count * 16;
    CHECK(same_wiring(&first.model, &second.model), "same seed, same wiring");
    CHECK(memcmp(first.final_grid, second.final_grid, n_grid * sizeof(double)) == 0, "same seed, same final grid");
    CHECK(memcmp(first.dlogits, second.dlogits, n_logits * sizeof(double)) == 0, "same seed, same gradient bits");
    CHECK(first.loss == second.loss, "same loss %.17g vs %.17g", first.loss, second.loss);
    CHECK(!same_wiring(&first.model, &other.model), "another seed, other wiring");
    CHECK(memcmp(first.final_grid, other.final_grid, n_grid * sizeof(double)) != 0, "another seed, other rollout");

    uint32_t stream = rng_fire_stream(1234, 5), fired = 0, threshold = rng_fire_threshold(0.6);
    for (uint32_t cell = 0; cell < 100000; cell++) fired += (uint32_t)rng_fires(stream, 3, cell, threshold);
    CHECK(fired > 59000 && fired < 61000, "fire rate 0.6 fires %u of 100000 cells", fired);
    CHECK(rng_fire_stream(1234, 5) != rng_fire_stream(1234, 6), "rounds draw different masks");
    free_result(&first), free_result(&second), free_result(&other);
    return test_finish("test_ca_determinism");
}
