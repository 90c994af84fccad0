/* test_train_pool: training for persistence. A round's kind (ca_task_round_steps): half growth
 * rounds of T steps, half persistence rounds of T + 1..T + window, from the pool where there is
 * one. The engines run a rollout of L steps in room for T + window exactly as an engine built for
 * T = L does (forward grids and S, bit for bit, on the double and the fast engine), and the double
 * engine's gradient at L matches central finite differences. The sample pool takes distinct
 * slots, leaves growth rounds the preset's starts and starts the others from its grids (the
 * farthest one from a start), erases a rectangle of the closest ones, and stores the final grids
 * of persistence rounds, and only theirs, as bits. A trainer with a pool, a window
 * and damage gives the same losses on the double engine, the fast one and the GPU (where there is
 * one), and the same again when run twice, whether each step measures the hard loss (the pool
 * keeps the hard circuit's grids) or every other one. The best circuit of such a run is one
 * measured on a persistence round before one measured on a growth round. */
#include "ca_cpu.h"
#include "ca_eval.h"
#include "ca_fast.h"
#include "ca_file.h"
#include "ca_fixtures.h"
#include "ca_pool.h"
#include "ca_target.h"
#include "ca_task.h"
#include "ca_train.h"
#include "ca_watch.h"
#include "check.h"
#include "error.h"
#include "vk_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_round_steps(void)
{
    ca_config c;
    small_preset(&c, "checkerboard");
    int from_pool = 1, steps;
    for (uint64_t r = 0; r < 50; r++) {
        steps = ca_task_round_steps(&c, r, &from_pool);
        CHECK(steps == c.steps && !from_pool, "no pool nor window: every round runs T from starts");
    }
    c.window = 5;
    int seen[6] = {0}, outside = 0, pooled = 0;
    for (uint64_t r = 0; r < 300; r++) {
        steps = ca_task_round_steps(&c, r, &from_pool);
        pooled += from_pool;
        if (steps < c.steps || steps > c.steps + 5) outside++;
        else seen[steps - c.steps]++;
        int again, pool_again;
        again = ca_task_round_steps(&c, r, &pool_again);
        CHECK(steps == again, "round %llu: the same length when drawn again", (unsigned long long)r);
    }
    CHECK(outside == 0 && pooled == 0, "window 5: every round runs T..T+5 steps (%d outside), none from a pool (%d)",
          outside, pooled);
    CHECK(seen[0] > 110 && seen[0] < 190, "window 5: half the rounds run T (%d of 300)", seen[0]);
    for (int u = 1; u <= 5; u++) CHECK(seen[u] > 12, "window 5: T + %d drawn %d times of 300", u, seen[u]);
    c.pool = 8, c.batch = 2;
    int growth_pooled = 0, long_fresh = 0;
    pooled = 0;
    for (uint64_t r = 0; r < 300; r++) {
        steps = ca_task_round_steps(&c, r, &from_pool);
        pooled += from_pool;
        growth_pooled += steps == c.steps && from_pool;
        long_fresh += steps > c.steps && !from_pool;
    }
    CHECK(pooled > 110 && pooled < 190 && growth_pooled == 0 && long_fresh == 0, "with a pool the longer rounds, and "
          "only they, start from it (%d of 300; %d of T, %d longer from starts)", pooled, growth_pooled, long_fresh);
    c.window = 0;
    pooled = 0;
    for (uint64_t r = 0; r < 300; r++) {
        steps = ca_task_round_steps(&c, r, &from_pool);
        pooled += from_pool;
        CHECK(steps == c.steps, "a pool without a window: every round runs T");
    }
    CHECK(pooled > 110 && pooled < 190, "a pool without a window: half the rounds from it (%d of 300)", pooled);
    ca_config other = c;
    other.seed = c.seed + 1, c.window = other.window = 5;
    int differ = 0;
    for (uint64_t r = 0; r < 20; r++) differ |= ca_task_round_steps(&c, r, &from_pool) != ca_task_round_steps(&other, r, &from_pool);
    CHECK(differ, "another seed draws other lengths");
}

/* ---- the engines at a round's length ---- */

typedef struct {
    ca_model model;
    ca_cpu cpu;
    ca_fast fast;
    double *logits, *target, *dgrid, *start;
    size_t cells, grid;
} length_case;

static int length_case_init(length_case *k, const ca_config *config, int steps)
{
    memset(k, 0, sizeof *k);
    if (ca_model_init(&k->model, config)) return DLCA_ERR;
    ca_fast_options fast = {.cache = 0, .threads = 2};
    if (ca_cpu_init(&k->cpu, &k->model, config->batch, 0, 0) ||
        ca_fast_init(&k->fast, &k->model, config->batch, 0, 0, &fast) || ca_cpu_set_steps(&k->cpu, steps) ||
        ca_fast_set_steps(&k->fast, steps))
        return DLCA_ERR;
    k->cells = k->cpu.cells, k->grid = (size_t)config->channels * k->cells;
    k->logits = malloc(k->model.gate_count * 16 * sizeof(double));
    k->target = malloc((size_t)config->loss_channels * k->cells * sizeof(double));
    k->start = malloc(k->grid * sizeof(double));
    k->dgrid = malloc(k->grid * sizeof(double));
    if (!k->logits || !k->target || !k->start || !k->dgrid) return DLCA_ERR;
    rng_state rng;
    rng_init(&rng, 99, 0);
    random_logits(k->logits, k->model.gate_count, 2.0, &rng);
    ca_shape shape = {config->batch, config->height, config->width, config->boundary};
    return ca_round_inputs(config, shape, 3, NULL, k->start, k->target);
}

static void length_case_free(length_case *k)
{
    ca_cpu_free(&k->cpu), ca_fast_free(&k->fast), ca_model_free(&k->model);
    free(k->logits), free(k->target), free(k->start), free(k->dgrid);
}

/* The double engine's loss at its steps, and with `sums` its S after BPTT. */
static double cpu_loss(length_case *k, double *sums)
{
    ca_cpu_coefficients(&k->cpu, k->logits, 0);
    memcpy(ca_cpu_grid(&k->cpu, 0), k->start, k->grid * sizeof(double));
    ca_cpu_set_fire_stream(&k->cpu, 5);
    ca_cpu_forward(&k->cpu);
    double loss = fixture_loss(&k->model, k->cells, ca_cpu_grid(&k->cpu, k->cpu.steps), k->target, sums ? k->dgrid : NULL);
    if (sums) {
        memcpy(k->cpu.dgrid, k->dgrid, k->grid * sizeof(double));
        ca_cpu_backward(&k->cpu);
        memcpy(sums, k->cpu.coeff_grad, k->model.gate_count * 4 * sizeof(double));
    }
    return loss;
}

/* The fast engine's final grid and S (into doubles). */
static void fast_run(length_case *k, double *grid, double *sums)
{
    ca_fast_coefficients(&k->fast, k->logits, 0);
    float *g0 = ca_fast_grid(&k->fast, 0);
    for (size_t i = 0; i < k->grid; i++) g0[i] = (float)k->start[i];
    ca_fast_set_fire_stream(&k->fast, 5);
    ca_fast_forward(&k->fast);
    const float *out = ca_fast_grid(&k->fast, k->fast.steps);
    float *dgrid = malloc(k->grid * sizeof(float));
    fixture_loss_float(&k->model, k->cells, out, k->target, dgrid);
    for (size_t i = 0; i < k->grid; i++) grid[i] = out[i];
    memcpy(k->fast.dgrid, dgrid, k->grid * sizeof(float));
    free(dgrid);
    ca_fast_backward(&k->fast);
    ca_fast_coeff_grad(&k->fast, sums);
}

static void check_engine_length(const char *preset)
{
    ca_config roomy;
    small_preset(&roomy, preset);
    roomy.height = roomy.width = 5, roomy.batch = 2, roomy.steps = 3, roomy.window = 4;
    ca_config exact = roomy;
    exact.steps = 5, exact.window = 0; /* L = 5 of room 7, against an engine built for T = 5 */
    length_case a, b;
    int rc = length_case_init(&a, &roomy, 5);
    if (!rc) rc = length_case_init(&b, &exact, 5);
    CHECK(rc == DLCA_OK, "%s: set-up: %s", preset, err_message());
    CHECK(ca_cpu_set_steps(&a.cpu, 8) != DLCA_OK && strstr(err_message(), "room for 1..7"), "%s: 8 steps of room 7 "
          "refused: %s", preset, err_message());
    if (!rc) {
        size_t n4 = a.model.gate_count * 4;
        double *sa = calloc(n4, sizeof(double)), *sb = calloc(n4, sizeof(double));
        double la = cpu_loss(&a, sa), lb = cpu_loss(&b, sb);
        CHECK(la == lb && memcmp(ca_cpu_grid(&a.cpu, 5), ca_cpu_grid(&b.cpu, 5), a.grid * sizeof(double)) == 0,
              "%s: the double engine's 5 steps of room 7 give the grid of T = 5 bit for bit", preset);
        CHECK(memcmp(sa, sb, n4 * sizeof(double)) == 0, "%s: ... and the same S", preset);
        double *ga = malloc(a.grid * sizeof(double)), *gb = malloc(a.grid * sizeof(double));
        fast_run(&a, ga, sa), fast_run(&b, gb, sb);
        CHECK(memcmp(ga, gb, a.grid * sizeof(double)) == 0 && memcmp(sa, sb, n4 * sizeof(double)) == 0,
              "%s: the fast engine's too (grid and S)", preset);
        /* finite differences of the double engine's loss at L = 5 in some logits */
        double *dz = malloc(a.model.gate_count * 16 * sizeof(double));
        cpu_loss(&a, sa);
        fixture_logits_gradient(&a.model, sa, a.logits, dz);
        double worst = 0.0, scale = 0.0;
        for (size_t i = 0; i < a.model.gate_count * 16; i += a.model.gate_count * 16 / 40 + 1) {
            double keep = a.logits[i];
            a.logits[i] = keep + 1e-6;
            double up = cpu_loss(&a, NULL);
            a.logits[i] = keep - 1e-6;
            double down = cpu_loss(&a, NULL);
            a.logits[i] = keep;
            double fd = (up - down) / 2e-6;
            worst = fmax(worst, fabs(fd - dz[i])), scale = fmax(scale, fabs(dz[i]));
        }
        CHECK(scale > 0.0 && worst <= 1e-6 * scale, "%s: the gradient at L = 5 of room 7 against finite differences "
              "(%.3g of %.3g)", preset, worst, scale);
        free(sa), free(sb), free(ga), free(gb), free(dz);
    }
    length_case_free(&a), length_case_free(&b);
}

/* ---- the pool ---- */

static ca_config pool_config(void)
{
    ca_config c;
    small_preset(&c, "checkerboard");
    c.height = c.width = 8, c.batch = 3, c.pool = 7, c.damage = 1, c.window = 2;
    return c;
}

/* Slot i of the pool: channel 0 the target (sample 0's) with its first i cells flipped, so
 * distance i; the other channels 1 wherever (cell + slot) is even, so no erased rectangle is
 * invisible. */
static void fill_by_distance(ca_pool *p, const double *target)
{
    const ca_config *c = &p->config;
    size_t grid = (size_t)c->channels * p->plane;
    for (int i = 0; i < c->pool; i++) {
        double *g = p->grids + (size_t)i * grid;
        for (size_t k = p->plane; k < grid; k++) g[k] = (double)((k + (size_t)i) % 2 == 0);
        for (size_t k = 0; k < p->plane; k++) g[k] = target[k];
        for (int k = 0; k < i; k++) g[k] = 1.0 - g[k];
    }
}

/* pool_starts 2 of a batch of 4: the two samples farthest from the target keep the preset's starts,
 * the two closest start from their pool grids (the closest erased in a rectangle, damage 1). */
static void check_pool_starts(void)
{
    ca_config c = pool_config();
    c.batch = 4, c.pool_starts = 2;
    CHECK(ca_config_check(&c) == DLCA_OK, "pool-starts 2 of a batch of 4 with damage 1: %s", err_message());
    ca_pool p;
    CHECK(ca_pool_init(&p, &c) == DLCA_OK, "pool: %s", err_message());
    size_t plane = (size_t)c.height * c.width, cells = (size_t)c.batch * plane, grid = (size_t)c.channels * plane;
    ca_shape shape = {c.batch, c.height, c.width, c.boundary};
    double *fresh = malloc(grid * c.batch * sizeof(double)), *target = malloc(cells * sizeof(double));
    double *start = malloc(grid * c.batch * sizeof(double));
    ca_round_inputs(&c, shape, 5, NULL, fresh, target);
    fill_by_distance(&p, target);
    memcpy(start, fresh, grid * c.batch * sizeof(double));
    CHECK(ca_pool_round(&p, 5, 1, target, start) == DLCA_OK, "pool round: %s", err_message());
    /* fill_by_distance: slot i is i cells from the target, so rank by slot */
    int rank[4];
    for (int b = 0; b < 4; b++) {
        rank[b] = 0;
        for (int o = 0; o < 4; o++) rank[b] += p.slot[o] < p.slot[b];
    }
    for (int b = 0; b < 4; b++) {
        int is_start = 1, is_pool = 1, differs = 0;
        for (int ch = 0; ch < c.channels; ch++)
            for (size_t k = 0; k < plane; k++) {
                double got = start[(size_t)ch * cells + (size_t)b * plane + k];
                double pooled = p.grids[(size_t)p.slot[b] * grid + (size_t)ch * plane + k];
                is_start &= got == fresh[(size_t)ch * cells + (size_t)b * plane + k];
                is_pool &= got == pooled || (rank[b] == 0 && got == 0.0);
                differs |= fresh[(size_t)ch * cells + (size_t)b * plane + k] != pooled;
            }
        if (rank[b] >= 2)
            CHECK(is_start && differs, "sample %d (slot %d, rank %d of 4 by distance) keeps the preset's start", b,
                  p.slot[b], rank[b]);
        else
            CHECK(is_pool && differs, "sample %d (slot %d, rank %d) starts from its pool grid%s", b, p.slot[b], rank[b],
                  rank[b] == 0 ? ", a rectangle erased" : "");
    }
    c.pool_starts = 3; /* damage 1 leaves 0..1 for it: batch - pool-starts */
    CHECK(ca_config_check(&c) == DLCA_OK, "pool-starts 3 of 4 with damage 1: %s", err_message());
    c.pool_starts = 4;
    CHECK(ca_config_check(&c) != DLCA_OK && strstr(err_message(), "pool-starts = 4 is outside 1..3"),
          "pool-starts = batch refused (no sample from the pool): %s", err_message());
    c.pool_starts = 3, c.damage = 2;
    CHECK(ca_config_check(&c) != DLCA_OK && strstr(err_message(), "damage = 2 is outside 0..1"),
          "damage beyond batch - pool-starts refused: %s", err_message());
    free(fresh), free(target), free(start);
    ca_pool_free(&p);
}

static void check_pool(void)
{
    ca_config c = pool_config();
    ca_pool p, q;
    CHECK(ca_pool_init(&p, &c) == DLCA_OK && ca_pool_init(&q, &c) == DLCA_OK, "pool: %s", err_message());
    size_t plane = (size_t)c.height * c.width, cells = (size_t)c.batch * plane, grid = (size_t)c.channels * plane;
    ca_shape shape = {c.batch, c.height, c.width, c.boundary};
    double *fresh = malloc(grid * c.batch * sizeof(double)), *target = malloc(cells * sizeof(double));
    double *start = malloc(grid * c.batch * sizeof(double)), *before = malloc(grid * (size_t)c.pool * sizeof(double));
    int bits = 1;
    for (size_t i = 0; i < grid * (size_t)c.pool; i++) bits &= p.grids[i] == 0.0 || p.grids[i] == 1.0;
    CHECK(bits && memcmp(p.grids, p.grids + grid, grid * sizeof(double)) != 0, "a new pool holds random start bits, "
          "not one grid repeated");
    ca_round_inputs(&c, shape, 11, NULL, fresh, target);
    fill_by_distance(&p, target);
    memcpy(before, p.grids, grid * (size_t)c.pool * sizeof(double));
    /* a growth round takes slots but leaves the start (the preset's) alone */
    memcpy(start, fresh, grid * c.batch * sizeof(double));
    CHECK(ca_pool_round(&p, 11, 0, target, start) == DLCA_OK, "growth round: %s", err_message());
    CHECK(memcmp(start, fresh, grid * c.batch * sizeof(double)) == 0 &&
              memcmp(before, p.grids, grid * (size_t)c.pool * sizeof(double)) == 0,
          "a growth round starts from the preset's starts and changes no pool grid");
    CHECK(ca_pool_round(&p, 11, 1, target, start) == DLCA_OK, "pool round: %s", err_message());
    int distinct = p.slot[0] != p.slot[1] && p.slot[0] != p.slot[2] && p.slot[1] != p.slot[2];
    CHECK(distinct && p.slot[0] >= 0 && p.slot[0] < 7 && p.slot[1] >= 0 && p.slot[1] < 7 && p.slot[2] >= 0 &&
              p.slot[2] < 7, "a round takes 3 distinct slots of 7 (%d %d %d)", p.slot[0], p.slot[1], p.slot[2]);
    int near = 0, far = 0;
    for (int b = 1; b < 3; b++) near = p.slot[b] < p.slot[near] ? b : near, far = p.slot[b] > p.slot[far] ? b : far;
    for (int b = 0; b < 3; b++) {
        if (b == far) {
            int kept = 1;
            for (int ch = 0; ch < c.channels; ch++)
                kept &= memcmp(start + (size_t)ch * cells + (size_t)b * plane, fresh + (size_t)ch * cells + (size_t)b * plane,
                               plane * sizeof(double)) == 0;
            CHECK(kept, "the sample farthest from the target (slot %d) starts from the preset's start", p.slot[b]);
            continue;
        }
        int damaged = 0, changed_outside = 0, min_y = 99, max_y = -1, min_x = 99, max_x = -1;
        for (int ch = 0; ch < c.channels; ch++)
            for (size_t k = 0; k < plane; k++) {
                double got = start[(size_t)ch * cells + (size_t)b * plane + k];
                double old = before[(size_t)p.slot[b] * grid + (size_t)ch * plane + k];
                if (got != old) {
                    if (got == 0.0) {
                        damaged++;
                        int y = (int)(k / (size_t)c.width), x = (int)(k % (size_t)c.width);
                        min_y = y < min_y ? y : min_y, max_y = y > max_y ? y : max_y;
                        min_x = x < min_x ? x : min_x, max_x = x > max_x ? x : max_x;
                    } else {
                        changed_outside++;
                    }
                }
            }
        if (b == near) {
            int h = max_y - min_y + 1, w = max_x - min_x + 1;
            CHECK(damaged > 0 && changed_outside == 0 && h >= 2 && h <= 4 && w >= 2 && w <= 4,
                  "the sample closest to the target (slot %d) has a rectangle of 2..4 x 2..4 cells erased (%d cells, "
                  "%dx%d, %d set)", p.slot[b], damaged, h, w, changed_outside);
        } else {
            CHECK(damaged == 0 && changed_outside == 0, "sample %d (slot %d) starts from its pool grid unchanged", b,
                  p.slot[b]);
        }
    }
    /* the final grids go back, as bits */
    double *final = malloc(grid * c.batch * sizeof(double));
    for (size_t i = 0; i < grid * c.batch; i++) final[i] = (double)(i % 7) / 6.0;
    ca_pool_store(&p, final);
    int stored = 1;
    for (int b = 0; b < 3; b++)
        for (int ch = 0; ch < c.channels; ch++)
            for (size_t k = 0; k < plane; k++)
                stored &= p.grids[(size_t)p.slot[b] * grid + (size_t)ch * plane + k] ==
                          (final[(size_t)ch * cells + (size_t)b * plane + k] > 0.5 ? 1.0 : 0.0);
    CHECK(stored, "the persistence round's final grids are stored in its slots, rounded to bits");
    memcpy(before, p.grids, grid * (size_t)c.pool * sizeof(double));
    ca_pool_round(&p, 12, 0, target, start);
    ca_pool_store(&p, final), ca_pool_store_f32(&p, (const float *)final, cells);
    CHECK(memcmp(before, p.grids, grid * (size_t)c.pool * sizeof(double)) == 0, "a growth round stores nothing");
    /* another pool of the same config draws the same slots; every slot is drawn over rounds */
    int same = 1, drawn[7] = {0};
    for (uint64_t r = 0; r < 40; r++) {
        ca_round_inputs(&c, shape, r, NULL, fresh, target);
        ca_pool_round(&p, r, (int)(r % 2), target, start), ca_pool_round(&q, r, (int)(r % 2), target, start);
        for (int b = 0; b < 3; b++) same &= p.slot[b] == q.slot[b], drawn[p.slot[b]]++;
    }
    CHECK(same, "two pools of one seed draw the same slots");
    for (int i = 0; i < 7; i++) CHECK(drawn[i] > 3, "slot %d drawn %d times in 40 rounds of 3", i, drawn[i]);
    ca_pool_free(&p), ca_pool_free(&q);
    free(fresh), free(target), free(start), free(before), free(final);
}

/* ---- the trainer ---- */

enum { STEPS = 6 };

/* STEPS steps; the hard loss measured on every `measure`-th step (else hard[s] is NAN): the pool
 * keeps the hard circuit's final grids on those, the soft rollout's on the others. */
static int train(const ca_config *config, ca_backend backend, vk_context *vk, int reference, int measure, double *soft,
                 double *hard)
{
    ca_model model;
    ca_trainer trainer;
    ca_options options = {.cpu_reference = reference, .cpu_threads = 2};
    if (ca_model_init(&model, config)) return DLCA_ERR;
    int rc = ca_trainer_init(&trainer, &model, NULL, backend, vk, &options);
    for (int s = 0; !rc && s < STEPS; s++) {
        hard[s] = NAN;
        rc = ca_trainer_step(&trainer, &soft[s], s % measure == 0 ? &hard[s] : NULL);
    }
    if (!rc || trainer.model) ca_trainer_free(&trainer);
    ca_model_free(&model);
    return rc;
}

static int same_hard(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static void check_trainer(vk_context *vk, int measure, ca_window_loss window_loss)
{
    ca_config c = pool_config();
    c.window_loss = window_loss;
    double soft[4][STEPS], hard[4][STEPS];
    int rc = train(&c, CA_BACKEND_CPU, NULL, 1, measure, soft[0], hard[0]) ||
             train(&c, CA_BACKEND_CPU, NULL, 0, measure, soft[1], hard[1]) ||
             train(&c, CA_BACKEND_CPU, NULL, 0, measure, soft[2], hard[2]);
    CHECK(rc == DLCA_OK, "trainer with a pool: %s", err_message());
    if (rc) return;
    for (int s = 0; s < STEPS; s++) {
        CHECK_CLOSE(soft[1][s], soft[0][s], 0.0, 1e-4, "step %d of every %d measured: soft loss, fast engine vs the "
                    "double one", s + 1, measure);
        CHECK(same_hard(hard[1][s], hard[0][s]), "step %d: hard loss %g vs %g", s + 1, hard[1][s], hard[0][s]);
        CHECK(soft[2][s] == soft[1][s] && same_hard(hard[2][s], hard[1][s]), "step %d: the same again when run twice",
              s + 1);
    }
    ca_config plain = c;
    plain.pool = plain.damage = 0, plain.window = 0, plain.window_loss = CA_WINDOW_LOSS_LAST;
    double plain_soft[STEPS], plain_hard[STEPS];
    int differ = 0;
    if (train(&plain, CA_BACKEND_CPU, NULL, 0, measure, plain_soft, plain_hard) == DLCA_OK)
        for (int s = 1; s < STEPS; s++) differ |= plain_soft[s] != soft[1][s];
    CHECK(differ, "the pool and window change what trains");
    if (window_loss == CA_WINDOW_LOSS_EVERY) {
        ca_config last = c;
        last.window_loss = CA_WINDOW_LOSS_LAST;
        double last_soft[STEPS], last_hard[STEPS];
        int window_rounds = 0, same_growth = 1;
        if (train(&last, CA_BACKEND_CPU, NULL, 0, measure, last_soft, last_hard) == DLCA_OK)
            for (int s = 0; s < STEPS; s++) {
                int from_pool, steps = ca_task_round_steps(&c, (uint64_t)s, &from_pool);
                window_rounds += steps > c.steps;
                /* the first persistence round changes every later step; growth rounds before it agree */
                if (window_rounds == 0) same_growth &= last_soft[s] == soft[1][s];
                else if (steps > c.steps && window_rounds == 1) differ = last_soft[s] != soft[1][s];
            }
        CHECK(window_rounds > 0 && same_growth && differ,
              "window-loss every: the rounds before the first persistence round train as 'last', that one not (%d "
              "persistence rounds)", window_rounds);
    }
    if (!vk) return;
    rc = train(&c, CA_BACKEND_GPU, vk, 0, measure, soft[3], hard[3]);
    CHECK(rc == DLCA_OK, "GPU trainer with a pool: %s", err_message());
    for (int s = 0; !rc && s < STEPS; s++) {
        CHECK_CLOSE(soft[3][s], soft[0][s], 0.0, 1e-3, "step %d of every %d measured: soft loss, GPU vs the double "
                    "engine", s + 1, measure);
        CHECK(same_hard(hard[3][s], hard[0][s]), "step %d: GPU hard loss %g vs %g", s + 1, hard[3][s], hard[0][s]);
    }
}

/* The best circuit's ranking (ca_watch.h): with a pool or a window, a circuit measured on a
 * persistence round ranks above one measured on a growth round, which a circuit that grows the
 * picture and does not hold it gets right; exact still ranks first. */
static void check_best_ranking(void)
{
    ca_config c;
    small_preset(&c, "checkerboard");
    int any = 0;
    for (uint64_t s = 0; s <= 50; s++) any |= ca_watch_round_persistence(&c, s);
    CHECK(!any, "no pool nor window: no step measures on a persistence round");
    c.window = 5;
    int agree = 1, kinds[2] = {0, 0};
    for (uint64_t s = 1; s <= 300; s++) {
        int from_pool, steps = ca_task_round_steps(&c, s - 1, &from_pool);
        int persistence = ca_watch_round_persistence(&c, s);
        agree &= persistence == (steps != c.steps);
        kinds[persistence]++;
    }
    CHECK(agree && kinds[0] > 0 && kinds[1] > 0 && !ca_watch_round_persistence(&c, 0),
          "window 5: step s measures on a persistence round when round s - 1 is longer than T (%d growth, %d "
          "persistence)", kinds[0], kinds[1]);
    ca_mark grown = {3, 0.0, 0.5, 0, 0, 0.0}, held = {9, 200.0, 90.0, 0, 1, 0.0};
    ca_mark held_better = {10, 150.0, 95.0, 0, 1, 0.0}, held_softer = {11, 150.0, 80.0, 0, 1, 0.0};
    ca_mark exact = {12, 0.0, 1.0, 1, 0, 0.0}, near = {13, 0.0, 9.0, 0, 1, 12.0}, nearer = {14, 0.0, 20.0, 0, 1, 3.0};
    CHECK(ca_mark_better(&held, &grown) && !ca_mark_better(&grown, &held),
          "a persistence round's 200 wrong cells rank above a growth round's 0");
    CHECK(ca_mark_better(&held_better, &held) && ca_mark_better(&held_softer, &held_better),
          "on rounds of one kind: fewer wrong cells, then the lower soft loss");
    CHECK(ca_mark_better(&nearer, &near) && !ca_mark_better(&near, &nearer) && ca_mark_better(&near, &held_softer),
          "no wrong cells, refused: fewer bits short of persisting first, whatever the soft loss");
    CHECK(ca_mark_better(&exact, &nearer) && !ca_mark_better(&nearer, &exact), "verified exact ranks first");
}

/* ca_eval_persists_bits, the shortfall the ranking uses: 0 for the shipped circuit that holds
 * its picture, and for one that dissolves at least the worst step's wrong bits that eval's
 * persists reports (so it counts every step, not the first wrong one) and at most every bit of
 * every step. */
static void check_persists_bits(void)
{
    const char *names[] = {"image-persist.dlca", "image.dlca"};
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/models/%s", DLCA_ASSET_DIR, names[i]);
        ca_model m;
        ca_target_image target;
        if (ca_file_load(path, &m, NULL, &target)) {
            CHECK(0, "%s: %s", names[i], err_message());
            continue;
        }
        double *image = ca_target_values(&target), bits = -1.0;
        ca_eval_context x = {&m, CA_BACKEND_CPU, NULL, image, 1};
        ca_check checks[CA_EVAL_MAX_CHECKS];
        int count = 0;
        x.pass_fail = 0;
        int rc = image ? ca_eval_persistence(&x, CA_EVAL_PERSISTS, checks, &count) : DLCA_ERR;
        x.pass_fail = 1;
        if (!rc) rc = ca_eval_persists_bits(&x, &bits);
        size_t step_bits = (size_t)m.config.loss_channels * m.config.height * m.config.width;
        double worst = count == 1 ? checks[0].error * (double)step_bits : -1.0;
        CHECK(!rc && count == 1, "%s: persists and its shortfall run: %s", names[i], rc ? err_message() : "");
        if (i == 0) CHECK(!rc && bits == 0.0 && checks[0].passed, "%s holds: 0 bits short (%g)", names[i], bits);
        else
            CHECK(!rc && bits >= worst && worst > 0.0 && bits > worst &&
                      bits <= (double)step_bits * (9 * m.config.steps + 1),
                  "%s dissolves: %g bits short over T..10T, more than its worst step's %g", names[i], bits, worst);
        free(image);
        ca_target_image_free(&target);
        ca_model_free(&m);
    }
}

int main(void)
{
    check_round_steps();
    check_best_ranking();
    check_persists_bits();
    check_engine_length("checkerboard");
    check_engine_length("checkerboard-async");
    check_pool();
    check_pool_starts();
    vk_context vk;
    if (test_vk_context_init(&vk, -1) != DLCA_OK) {
        check_trainer(NULL, 1, CA_WINDOW_LOSS_LAST), check_trainer(NULL, 2, CA_WINDOW_LOSS_LAST);
        check_trainer(NULL, 1, CA_WINDOW_LOSS_EVERY), check_trainer(NULL, 2, CA_WINDOW_LOSS_EVERY);
        int rc = test_finish("test_train_pool");
        return rc ? rc : test_no_vulkan("test_train_pool", err_message()); /* the GPU trainer is not compared */
    }
    check_trainer(&vk, 1, CA_WINDOW_LOSS_LAST), check_trainer(&vk, 2, CA_WINDOW_LOSS_LAST);
    check_trainer(&vk, 1, CA_WINDOW_LOSS_EVERY), check_trainer(&vk, 2, CA_WINDOW_LOSS_EVERY);
    vk_context_free(&vk);
    return test_finish("test_train_pool");
}
