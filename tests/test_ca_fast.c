/* test_ca_fast: the fast float engine against the double reference on small configs of every
 * preset's shape (periodic and zero, sync and async, 1- and 2-bit perception) and on grids of
 * several blocks: coefficients, every step's activations and grids, the loss and its gradient,
 * one step of backward (1e-4 of the largest magnitude), full BPTT logit and start-grid
 * gradients (1e-3); hard rollouts exactly. Determinism: two runs, 1/2/3 threads and cache
 * on/off all give identical bits. The trainer's CPU backend on either engine: the same losses. */
#include "ca_cpu.h"
#include "ca_fast.h"
#include "ca_fixtures.h"
#include "ca_task.h"
#include "ca_train.h"
#include "check.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>

/* The reference and the fast engine on the same model, logits, start and target. */
typedef struct {
    ca_model model;
    ca_cpu cpu;
    ca_fast fast;
    double *logits, *target, *values;
    size_t n_grid, gates;
} pair;

static int pair_init(pair *p, const ca_config *config, const ca_fast_options *options)
{
    memset(p, 0, sizeof *p);
    if (ca_model_init(&p->model, config) || ca_cpu_init(&p->cpu, &p->model, config->batch, 0, 0) ||
        ca_fast_init(&p->fast, &p->model, config->batch, 0, 0, options))
        return DLCA_ERR;
    p->gates = p->model.gate_count;
    p->n_grid = (size_t)config->channels * p->cpu.cells;
    size_t most = p->cpu.step_rows * p->cpu.cells;
    if (most < p->gates * 16) most = p->gates * 16;
    p->logits = malloc(p->gates * 16 * sizeof(double));
    p->target = malloc(p->n_grid * sizeof(double));
    p->values = malloc(most * sizeof(double));
    rng_state rng;
    rng_init(&rng, 31, 1);
    peaked_logits(p->logits, p->gates, &rng);
    for (size_t i = 0; i < p->gates * 16; i++) p->logits[i] = (float)p->logits[i];
    random_unit(p->target, p->n_grid, &rng);
    double *start = ca_cpu_grid(&p->cpu, 0);
    ca_task_start(config, p->cpu.shape, 31, start);
    for (size_t i = 0; i < p->n_grid; i++) start[i] = 0.8 * start[i] + 0.1; /* soft, not binary */
    for (size_t i = 0; i < p->n_grid; i++) ca_fast_grid(&p->fast, 0)[i] = (float)start[i];
    ca_cpu_set_fire_stream(&p->cpu, 4242), ca_fast_set_fire_stream(&p->fast, 4242);
    return DLCA_OK;
}

static void pair_free(pair *p)
{
    free(p->logits), free(p->target), free(p->values);
    ca_fast_free(&p->fast), ca_cpu_free(&p->cpu), ca_model_free(&p->model);
}

static double *widen(pair *p, const float *values, size_t n)
{
    for (size_t i = 0; i < n; i++) p->values[i] = values[i];
    return p->values;
}

static void compare(const char *what, const char *label, const double *got, const double *want, size_t n, double tol)
{
    double error = relative_error(got, want, n);
    CHECK(error <= tol, "%s: %s relative error %.3g > %.1g", label, what, error, tol);
}

static void check_forward(pair *p, const char *label)
{
    const ca_config *c = &p->model.config;
    size_t block = p->cpu.step_rows * p->cpu.cells;
    ca_cpu_coefficients(&p->cpu, p->logits, 0);
    ca_fast_coefficients(&p->fast, p->logits, 0);
    compare("coefficients", label, widen(p, p->fast.coeffs, p->gates * 4), p->cpu.coeffs, p->gates * 4, 1e-6);
    ca_cpu_forward(&p->cpu);
    ca_fast_forward(&p->fast);
    for (int t = 0; t < c->steps; t++) {
        char what[64];
        snprintf(what, sizeof what, "step %d activations", t);
        compare(what, label, widen(p, p->fast.act + (size_t)t * block, block), p->cpu.act + (size_t)t * block, block,
                1e-4);
        snprintf(what, sizeof what, "grid %d", t + 1);
        compare(what, label, widen(p, ca_fast_grid(&p->fast, t + 1), p->n_grid), ca_cpu_grid(&p->cpu, t + 1), p->n_grid,
                1e-4);
    }
}

static void check_backward(pair *p, const char *label)
{
    double cpu_loss = fixture_loss(&p->model, p->cpu.cells, ca_cpu_grid(&p->cpu, p->model.config.steps), p->target, NULL), fast_loss = fixture_loss_float(&p->model, p->fast.cells, ca_fast_grid(&p->fast, p->model.config.steps), p->target, NULL);
    CHECK_CLOSE(fast_loss, cpu_loss, 0.0, 1e-4, "%s: loss", label);
    fixture_loss(&p->model, p->cpu.cells, ca_cpu_grid(&p->cpu, p->model.config.steps), p->target, p->cpu.dgrid);
    fixture_loss_float(&p->model, p->fast.cells, ca_fast_grid(&p->fast, p->model.config.steps), p->target, p->fast.dgrid);
    compare("loss gradient", label, widen(p, p->fast.dgrid, p->n_grid), p->cpu.dgrid, p->n_grid, 1e-4);

    /* One step back from the loss. */
    int last = p->model.config.steps - 1;
    memset(p->cpu.coeff_grad, 0, p->gates * 4 * sizeof(double));
    ca_cpu_step_backward(&p->cpu, last);
    ca_fast_clear_coeff_grad(&p->fast);
    ca_fast_step_backward(&p->fast, last);
    ca_fast_coeff_grad(&p->fast, p->values);
    compare("one step's S", label, p->values, p->cpu.coeff_grad, p->gates * 4, 1e-4);
    compare("one step's grid gradient", label, widen(p, p->fast.dgrid, p->n_grid), p->cpu.dgrid, p->n_grid, 1e-4);

    /* Full BPTT from the loss again. */
    double *cpu_dlogits = malloc(p->gates * 16 * sizeof(double));
    fixture_loss(&p->model, p->cpu.cells, ca_cpu_grid(&p->cpu, p->model.config.steps), p->target, p->cpu.dgrid);
    ca_cpu_backward(&p->cpu);
    fixture_logits_gradient(&p->model, p->cpu.coeff_grad, p->logits, cpu_dlogits);
    fixture_loss_float(&p->model, p->fast.cells, ca_fast_grid(&p->fast, p->model.config.steps), p->target, p->fast.dgrid);
    ca_fast_backward(&p->fast);
    double *sums = malloc(p->gates * 4 * sizeof(double));
    ca_fast_coeff_grad(&p->fast, sums);
    fixture_logits_gradient(&p->model, sums, p->logits, p->values);
    free(sums);
    compare("BPTT logit gradient", label, p->values, cpu_dlogits, p->gates * 16, 1e-3);
    compare("BPTT start-grid gradient", label, widen(p, p->fast.dgrid, p->n_grid), p->cpu.dgrid, p->n_grid, 1e-3);

    /* BPTT with a window loss's gradient at grids 1..T-1 too (random blocks). */
    int steps = p->model.config.steps;
    if (steps >= 2) {
        size_t rows = (size_t)p->model.config.loss_channels * p->cpu.cells, n = (size_t)(steps - 1) * rows;
        double *dwindow = malloc(n * sizeof(double));
        float *dwindow_f = malloc(n * sizeof(float));
        rng_state rng;
        rng_init(&rng, 77, (uint64_t)steps);
        random_unit(dwindow, n, &rng);
        for (size_t i = 0; i < n; i++) dwindow[i] = dwindow_f[i] = (float)(dwindow[i] - 0.5);
        fixture_loss(&p->model, p->cpu.cells, ca_cpu_grid(&p->cpu, steps), p->target, p->cpu.dgrid);
        ca_cpu_backward_window(&p->cpu, dwindow, 1);
        fixture_loss_float(&p->model, p->fast.cells, ca_fast_grid(&p->fast, steps), p->target, p->fast.dgrid);
        ca_fast_backward_window(&p->fast, dwindow_f, 1);
        double *window_sums = malloc(p->gates * 4 * sizeof(double));
        ca_fast_coeff_grad(&p->fast, window_sums);
        compare("window BPTT S", label, window_sums, p->cpu.coeff_grad, p->gates * 4, 1e-3);
        compare("window BPTT start-grid gradient", label, widen(p, p->fast.dgrid, p->n_grid), p->cpu.dgrid, p->n_grid,
                1e-3);
        free(window_sums), free(dwindow), free(dwindow_f);
    }
    free(cpu_dlogits);
}

/* Hard gates on a binary start: both engines compute exact 0/1 values. */
static void check_hard(pair *p, const char *label)
{
    const ca_config *c = &p->model.config;
    double *start = ca_cpu_grid(&p->cpu, 0);
    ca_task_binarize(start, p->n_grid);
    for (size_t i = 0; i < p->n_grid; i++) ca_fast_grid(&p->fast, 0)[i] = (float)start[i];
    ca_cpu_coefficients(&p->cpu, p->logits, 1);
    ca_fast_coefficients(&p->fast, p->logits, 1);
    ca_cpu_forward(&p->cpu);
    ca_fast_forward(&p->fast);
    const double *want = ca_cpu_grid(&p->cpu, c->steps);
    const float *got = ca_fast_grid(&p->fast, c->steps);
    int same = 1;
    for (size_t i = 0; i < p->n_grid; i++) same &= (double)got[i] == want[i];
    CHECK(same, "%s: hard rollout equals the reference exactly", label);
    CHECK(fixture_loss_float(&p->model, p->fast.cells, ca_fast_grid(&p->fast, p->model.config.steps), p->target, NULL) == fixture_loss(&p->model, p->cpu.cells, ca_cpu_grid(&p->cpu, p->model.config.steps), p->target, NULL), "%s: hard loss", label);
}

/* One soft rollout and BPTT on the fast engine alone: final grid, start-grid gradient, dlogits. */
typedef struct {
    float *grid, *dgrid;
    double *dlogits;
} fast_result;

static int fast_run(const ca_config *config, const ca_fast_options *options, fast_result *r, size_t *blocks)
{
    pair p;
    if (pair_init(&p, config, options)) {
        pair_free(&p);
        return DLCA_ERR;
    }
    ca_fast_coefficients(&p.fast, p.logits, 0);
    ca_fast_forward(&p.fast);
    fixture_loss_float(&p.model, p.fast.cells, ca_fast_grid(&p.fast, p.model.config.steps), p.target, p.fast.dgrid);
    ca_fast_backward(&p.fast);
    r->grid = malloc(p.n_grid * sizeof(float)), r->dgrid = malloc(p.n_grid * sizeof(float));
    r->dlogits = malloc(p.gates * 16 * sizeof(double));
    memcpy(r->grid, ca_fast_grid(&p.fast, config->steps), p.n_grid * sizeof(float));
    memcpy(r->dgrid, p.fast.dgrid, p.n_grid * sizeof(float));
    double *sums = malloc(p.gates * 4 * sizeof(double));
    ca_fast_coeff_grad(&p.fast, sums);
    fixture_logits_gradient(&p.model, sums, p.logits, r->dlogits);
    free(sums);
    *blocks = p.fast.blocks;
    pair_free(&p);
    return DLCA_OK;
}

static void fast_result_free(fast_result *r) { free(r->grid), free(r->dgrid), free(r->dlogits); }

static int same_result(const fast_result *a, const fast_result *b, size_t n_grid, size_t n_logits)
{
    return memcmp(a->grid, b->grid, n_grid * sizeof(float)) == 0 && memcmp(a->dgrid, b->dgrid, n_grid * sizeof(float)) == 0 &&
           memcmp(a->dlogits, b->dlogits, n_logits * sizeof(double)) == 0;
}

/* The same bits for two runs, for 1, 2 and 3 threads, and with or without the cache. */
static void check_determinism(const ca_config *config, const char *label, size_t n_grid, size_t n_logits)
{
    static const ca_fast_options runs[] = {{1, 2}, {1, 2}, {1, 1}, {1, 3}, {0, 2}};
    static const char *const names[] = {"first run", "second run", "1 thread", "3 threads", "no cache"};
    fast_result results[5];
    size_t blocks = 0;
    for (int r = 0; r < 5; r++) {
        if (fast_run(config, &runs[r], &results[r], &blocks)) {
            CHECK(0, "%s determinism set-up: %s", label, err_message());
            for (int k = 0; k < r; k++) fast_result_free(&results[k]);
            return;
        }
    }
    for (int r = 1; r < 5; r++)
        CHECK(same_result(&results[0], &results[r], n_grid, n_logits), "%s: 2 threads and %s give identical bits (%zu blocks)",
              label, names[r], blocks);
    for (int r = 0; r < 5; r++) fast_result_free(&results[r]);
}

static void check_case(const ca_config *config, const char *label)
{
    pair p;
    if (pair_init(&p, config, NULL)) {
        CHECK(0, "%s set-up: %s", label, err_message());
        pair_free(&p);
        return;
    }
    check_forward(&p, label);
    check_backward(&p, label);
    check_hard(&p, label);
    printf("%s: %zu gates, %zu cells in %zu blocks on %d threads, compared\n", label, p.gates, p.cpu.cells, p.fast.blocks,
           p.fast.threads);
    size_t n_grid = p.n_grid, n_logits = p.gates * 16;
    pair_free(&p);
    check_determinism(config, label, n_grid, n_logits);
}

/* Soft and hard losses of `steps` training steps on the CPU backend. */
static int train_losses(const ca_config *config, int reference, int steps, double *soft, double *hard)
{
    ca_model model;
    ca_trainer trainer;
    ca_options options = {.cpu_reference = reference};
    if (ca_model_init(&model, config)) return DLCA_ERR;
    int rc = ca_trainer_init(&trainer, &model, NULL, CA_BACKEND_CPU, NULL, &options);
    if (!rc) {
        for (int s = 0; !rc && s < steps; s++) rc = ca_trainer_step(&trainer, &soft[s], &hard[s]);
        ca_trainer_free(&trainer);
    }
    ca_model_free(&model);
    return rc;
}

/* The trainer runs ca_fast by default and the double engine with options.cpu_reference. */
static void check_trainer(void)
{
    enum { STEPS = 6 };
    ca_config config;
    small_preset(&config, "checkerboard-async");
    config.height = config.width = 8, config.steps = 4;
    double soft[2][STEPS], hard[2][STEPS];
    int reference = train_losses(&config, 1, STEPS, soft[0], hard[0]);
    int fast = train_losses(&config, 0, STEPS, soft[1], hard[1]);
    CHECK(reference == DLCA_OK && fast == DLCA_OK, "trainer: %s", err_message());
    int differ = 0; /* float against double: the two engines really ran */
    for (int s = 0; reference == DLCA_OK && fast == DLCA_OK && s < STEPS; s++) {
        CHECK_CLOSE(soft[1][s], soft[0][s], 0.0, 1e-4, "trainer step %d: soft loss on ca_fast vs the reference", s);
        CHECK(hard[1][s] == hard[0][s], "trainer step %d: hard loss %g vs %g", s, hard[1][s], hard[0][s]);
        differ |= soft[1][s] != soft[0][s];
    }
    CHECK(differ, "the reference (double) and ca_fast (float) soft losses differ in the last bits somewhere");
}

int main(void)
{
    static const char *const presets[] = {"gol", "checkerboard", "checkerboard-async", "lizard", "image"};
    for (size_t i = 0; i < 5; i++) {
        ca_config config;
        small_preset(&config, presets[i]);
        check_case(&config, presets[i]);
    }
    for (int boundary = 0; boundary < 2; boundary++)
        for (int async = 0; async < 2; async++)
            for (int bits = 1; bits <= 2; bits++) {
                ca_config config;
                char label[64];
                tiny_config(&config, (ca_boundary)boundary, async ? 0.6 : 1.0, bits, 3);
                snprintf(label, sizeof label, "tiny %s %s %d-bit", ca_boundary_name(config.boundary),
                         async ? "async" : "sync", bits);
                check_case(&config, label);
                config.perception_wiring = CA_PERCEPTION_PER_KERNEL;
                snprintf(label, sizeof label, "tiny %s %s %d-bit, a moore order a kernel",
                         ca_boundary_name(config.boundary), async ? "async" : "sync", bits);
                check_case(&config, label);
            }
    /* Grids of several blocks, so neighbours and samples cross block and thread boundaries. */
    ca_config config;
    small_preset(&config, "gol");
    config.batch = 20; /* 180 cells: 4 blocks of 48 */
    check_case(&config, "gol, 20 boards");
    small_preset(&config, "checkerboard");
    config.height = config.width = 16, config.steps = 5; /* 512 cells: 8 blocks */
    check_case(&config, "checkerboard 16x16");
    small_preset(&config, "checkerboard-async");
    config.height = config.width = 14, config.batch = 1, config.steps = 5; /* 196 cells: 56, 56, 56, 28 */
    check_case(&config, "checkerboard-async 14x14");
    small_preset(&config, "lizard");
    config.height = config.width = 11, config.steps = 4; /* periodic, 242 cells */
    check_case(&config, "lizard 11x11");
    check_trainer();
    return test_finish("test_ca_fast");
}
