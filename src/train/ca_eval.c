/* ca_eval.c: evaluation of trained models: losses, Life accuracy, gates, generalisation. */
#include "ca_eval.h"

#include "ca_memory.h"
#include "ca_task.h"
#include "error.h"
#include "rng.h"
#include "tn_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most ca_eval_settles keeps of states: it looks over fewer steps rather than more memory. */
#define SETTLE_BYTES ((size_t)256 << 20)

/* A hard (or soft) runner of one or more samples at height x width, with a fire rate. */
static int open_runner(const ca_eval_context *x, ca_runner *r, int batch, int height, int width, int hard, double rate,
                       uint64_t seed)
{
    return ca_runner_init(r, x->model, x->backend, x->vk, batch, height, width, hard, rate, seed);
}

static int run_steps(ca_runner *r, int steps)
{
    for (int t = 0; t < steps; t++)
        if (ca_runner_step(r)) return DLCA_ERR;
    return DLCA_OK;
}

/* The trainer's loss (tn_sse_loss, in double) of the grid's loss channels against target
 * [loss_channels][cells]. */
static int grid_loss(const ca_runner *r, const double *target, double *loss)
{
    size_t rows[2] = {(size_t)r->view.config.loss_channels, ca_shape_cells(r->shape)};
    tn_tensor *pred = tn_from_f64(TN_F64, 2, rows, r->grid), *want = tn_from_f64(TN_F64, 2, rows, target);
    tn_tensor *sum = pred && want ? tn_sse_loss(pred, want) : NULL;
    if (sum) *loss = tn_item(sum);
    tn_free(sum), tn_free(pred), tn_free(want);
    return sum ? DLCA_OK : DLCA_ERR;
}

static int task_loss(const ca_eval_context *x, int hard, double *loss)
{
    const ca_config *c = &x->model->config;
    ca_runner r;
    if (open_runner(x, &r, c->batch, c->height, c->width, hard, c->fire_rate, c->seed)) return DLCA_ERR;
    r.read_channels = c->loss_channels;
    double *target = malloc((size_t)c->loss_channels * ca_shape_cells(r.shape) * sizeof(double));
    int rc = target ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for the target");
    if (!rc) rc = ca_round_inputs(c, r.shape, 0, x->image, r.grid, target);
    if (!rc) rc = ca_runner_grid_changed(&r);
    if (!rc) rc = run_steps(&r, c->steps);
    if (!rc) rc = grid_loss(&r, target, loss);
    free(target);
    ca_runner_free(&r);
    return rc;
}

int ca_eval_losses(const ca_eval_context *x, double *soft, double *hard)
{
    return task_loss(x, 0, soft) || task_loss(x, 1, hard);
}

int ca_eval_life_accuracy(const ca_eval_context *x, double *accuracy)
{
    ca_runner r;
    if (x->model->config.channels != 1) return err_set(DLCA_ERR, "Life accuracy needs a 1-channel model");
    if (open_runner(x, &r, 512, 3, 3, 1, 1.0, 1)) return DLCA_ERR;
    double next[512 * 9];
    for (int b = 0; b < 512; b++) ca_task_board(r.grid, r.shape, b, b);
    ca_task_life_step(next, r.grid, r.shape);
    int rc = ca_runner_grid_changed(&r), right = 0;
    if (!rc) rc = ca_runner_step(&r);
    for (int b = 0; !rc && b < 512; b++) right += r.grid[b * 9 + 4] == next[b * 9 + 4];
    *accuracy = right / 512.0;
    ca_runner_free(&r);
    return rc;
}

void ca_eval_gate_histogram(const ca_model *m, int histogram[16], size_t *active)
{
    memset(histogram, 0, 16 * sizeof(int));
    *active = 0;
    for (size_t g = 0; g < m->gate_count; g++) {
        int op = ca_model_gate_op(m, g);
        histogram[op]++;
        *active += op != GATE_A && op != GATE_B;
    }
}

static void add_check(ca_check *checks, int *count, const char *name, double error)
{
    ca_check *c = &checks[(*count)++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->error = error;
    c->passed = error == 0.0;
}

/* Fraction of cells whose channel 0 differs from `expected` [cells]. */
static double wrong_fraction(const ca_runner *r, const double *expected)
{
    size_t cells = ca_shape_cells(r->shape);
    return (double)ca_task_wrong_bits(r->grid, expected, cells) / (double)cells;
}

/* The learned rule against Life itself on a 128x128 soup, and a glider's full lap on 32x32. */
static int life_checks(const ca_eval_context *x, ca_check *checks, int *count)
{
    ca_runner r;
    if (open_runner(x, &r, 1, 128, 128, 1, 1.0, 7)) return DLCA_ERR;
    double *expected = malloc(128 * 128 * sizeof(double));
    rng_state rng;
    rng_init(&rng, 7, 0);
    for (size_t i = 0; i < 128 * 128; i++) r.grid[i] = (double)(rng_next(&rng) >> 63);
    double worst = 0.0;
    int rc = expected ? ca_runner_grid_changed(&r) : err_set(DLCA_ERR_NOMEM, "out of memory");
    for (int t = 0; !rc && t < 64; t++) {
        ca_task_life_step(expected, r.grid, r.shape);
        rc = ca_runner_step(&r);
        double error = rc ? 1.0 : wrong_fraction(&r, expected);
        worst = error > worst ? error : worst;
    }
    ca_runner_free(&r);
    free(expected);
    if (rc) return rc;
    add_check(checks, count, "Life on a 128x128 soup, 64 steps", worst);
    if (open_runner(x, &r, 1, 32, 32, 1, 1.0, 7)) return DLCA_ERR;
    static const int glider[5][2] = {{0, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}};
    double moved[32 * 32] = {0};
    for (int i = 0; i < 5; i++) {
        r.grid[(glider[i][0] + 4) * 32 + glider[i][1] + 4] = 1.0;
        moved[(glider[i][0] + 12) * 32 + glider[i][1] + 12] = 1.0;
    }
    rc = ca_runner_grid_changed(&r);
    if (!rc) rc = run_steps(&r, 32); /* a glider moves one cell diagonally every 4 steps */
    if (!rc) add_check(checks, count, "a glider travels 8 cells in 32 steps (32x32 torus)", wrong_fraction(&r, moved));
    ca_runner_free(&r);
    return rc;
}

/* Grows the pattern at height x width from the preset's start, optionally damages a square
 * and grows on, and compares channel 0..loss-1 with the target pattern. */
static int pattern_check(const ca_eval_context *x, ca_check *checks, int *count, const char *name, int size,
                         int steps, double rate, int damage, int heal_steps)
{
    const ca_config *c = &x->model->config;
    ca_runner r;
    if (open_runner(x, &r, 1, size, size, 1, rate, 11)) return DLCA_ERR;
    r.read_channels = c->loss_channels; /* full writes and paint only: the rest may go stale */
    size_t cells = ca_shape_cells(r.shape);
    double *target = malloc((size_t)c->loss_channels * cells * sizeof(double));
    int rc = target ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory");
    if (!rc) rc = ca_round_inputs(c, r.shape, 0, NULL, r.grid, target);
    if (!rc) rc = ca_runner_grid_changed(&r);
    if (!rc) rc = run_steps(&r, steps);
    if (!rc && damage) {
        ca_runner_paint(&r, (size - damage) / 2, (size - damage) / 2, damage, damage, 0.0);
        rc = run_steps(&r, heal_steps);
    }
    if (!rc) add_check(checks, count, name, wrong_fraction(&r, target));
    free(target);
    ca_runner_free(&r);
    return rc;
}

/* The synchronous checkerboard's grid larger than the training one: its side and steps. */
enum { WIDE_SIZE = 64, WIDE_STEPS = 80 };

static int has_torus(const ca_config *c, const double *image)
{
    return c->loss_channels == 1 && c->target == CA_TARGET_IMAGE && image;
}

static int is_sync_checkerboard(const ca_config *c)
{
    return c->target == CA_TARGET_CHECKERBOARD && c->fire_rate >= 1.0;
}

int ca_eval_has_wide(const ca_config *c, const double *image) { return has_torus(c, image) || is_sync_checkerboard(c); }

/* The border the sweeps found enough: 2 off cells on every side. */
enum { TORUS_BORDER = 2 };

int ca_eval_torus_note(const ca_config *c, const double *image, char *note, size_t size)
{
    if (!has_torus(c, image) || c->boundary != CA_BOUNDARY_PERIODIC) return 0;
    int border = -1;
    for (int y = 0; y < c->height; y++)
        for (int x = 0; x < c->width; x++) {
            if (image[(size_t)y * (size_t)c->width + (size_t)x] <= 0.5) continue;
            int ys = y < c->height - 1 - y ? y : c->height - 1 - y, xs = x < c->width - 1 - x ? x : c->width - 1 - x;
            int d = ys < xs ? ys : xs;
            if (border < 0 || d < border) border = d;
        }
    if (border < 0 || border >= TORUS_BORDER) return 0;
    int more = 2 * (TORUS_BORDER - border);
    snprintf(note, size,
             "the picture %s the %dx%d grid's edge: on a periodic grid it can grow leaning on its wrapped copy, "
             "which eval's %dx%d torus lacks; a grid %d cells larger (--grid %dx%d) gives it a border of %d",
             border == 0 ? "reaches" : "comes within a cell of", c->height, c->width, 2 * c->height, 2 * c->width,
             more, c->height + more, c->width + more, TORUS_BORDER);
    return 1;
}

/* The lizard's torus (ca_eval_wide). */
static int torus_rollout(const ca_config *c, const double *image, ca_eval_rollout *r)
{
    int size = 2 * c->height, offset = size / 2 - c->height / 2;
    r->shape = (ca_shape){1, size, size, CA_BOUNDARY_PERIODIC};
    r->steps = c->steps;
    size_t cells = ca_shape_cells(r->shape);
    r->start = malloc((size_t)c->channels * cells * sizeof(double));
    r->target = malloc(cells * sizeof(double));
    if (!r->start || !r->target) return ca_eval_rollout_free(r), err_set(DLCA_ERR_NOMEM, "out of memory for the torus");
    if (ca_task_start(c, r->shape, 0, r->start)) return ca_eval_rollout_free(r), DLCA_ERR;
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            int ty = y - offset, tx = x - offset, inside = ty >= 0 && ty < c->height && tx >= 0 && tx < c->width;
            double want = inside ? image[(size_t)ty * (size_t)c->width + (size_t)tx] : 0.0;
            r->target[(size_t)y * (size_t)size + (size_t)x] = want;
        }
    return DLCA_OK;
}

/* The synchronous checkerboard's 64x64 grid after 80 steps (ca_eval_wide), as pattern_check runs it. */
static int checkerboard_rollout(const ca_config *c, ca_eval_rollout *r)
{
    r->shape = (ca_shape){1, WIDE_SIZE, WIDE_SIZE, c->boundary};
    r->steps = WIDE_STEPS;
    size_t cells = ca_shape_cells(r->shape);
    r->start = malloc((size_t)c->channels * cells * sizeof(double));
    r->target = malloc((size_t)c->loss_channels * cells * sizeof(double));
    if (!r->start || !r->target)
        return ca_eval_rollout_free(r), err_set(DLCA_ERR_NOMEM, "out of memory for the %dx%d grid", WIDE_SIZE, WIDE_SIZE);
    if (ca_round_inputs(c, r->shape, 0, NULL, r->start, r->target)) return ca_eval_rollout_free(r), DLCA_ERR;
    return DLCA_OK;
}

int ca_eval_wide(const ca_config *c, const double *image, ca_eval_rollout *r)
{
    memset(r, 0, sizeof *r);
    if (has_torus(c, image)) return torus_rollout(c, image, r);
    return is_sync_checkerboard(c) ? checkerboard_rollout(c, r) : DLCA_OK;
}

void ca_eval_rollout_free(ca_eval_rollout *r)
{
    free(r->start), free(r->target);
    r->start = r->target = NULL;
}

/* The lizard grown from a centre seed on a torus of twice the grid's side (40x40 for its 20x20)
 * must match the target around the seed and leave the rest empty. */
static int lizard_check(const ca_eval_context *x, ca_check *checks, int *count)
{
    const ca_config *c = &x->model->config;
    ca_eval_rollout torus;
    ca_runner r;
    if (!has_torus(c, x->image)) return DLCA_OK;
    if (ca_eval_wide(c, x->image, &torus)) return DLCA_ERR;
    int size = torus.shape.height;
    if (open_runner(x, &r, 1, size, size, 1, c->fire_rate, 11)) return ca_eval_rollout_free(&torus), DLCA_ERR;
    r.read_channels = 1; /* channel 0 is all it reads */
    memcpy(r.grid, torus.start, (size_t)c->channels * ca_shape_cells(r.shape) * sizeof(double));
    int rc = ca_runner_grid_changed(&r);
    if (!rc) rc = run_steps(&r, torus.steps);
    size_t wrong = 0;
    for (size_t i = 0; !rc && i < ca_shape_cells(r.shape); i++) wrong += (r.grid[i] > 0.5) != (torus.target[i] > 0.5);
    char name[64];
    snprintf(name, sizeof name, "lizard grows on a %dx%d torus", size, size);
    if (!rc) add_check(checks, count, name, (double)wrong / ((double)size * size));
    ca_runner_free(&r);
    ca_eval_rollout_free(&torus);
    return rc;
}

/* The picture presets: the hard circuit grows the target exactly at the training size. */
static int picture_check(const ca_eval_context *x, ca_check *checks, int *count)
{
    const ca_config *c = &x->model->config;
    double hard;
    if (task_loss(x, 1, &hard)) return DLCA_ERR;
    char name[96];
    snprintf(name, sizeof name, "grows the %dx%d target in %d steps (hard)", c->height, c->width, c->steps);
    add_check(checks, count, name, hard / ((double)c->loss_channels * c->height * c->width * c->batch));
    return DLCA_OK;
}

/* Keeps the larger of *most and one run's bytes: a runner and what the check holds beside it. */
static void keep_most(double *most, const ca_eval_context *x, int batch, int height, int width, int hard, double beside)
{
    double bytes = ca_memory_runner(x->model, x->backend, x->vk, batch, height, width, hard) + beside;
    if (bytes > *most) *most = bytes;
}

double ca_eval_memory(const ca_eval_context *x)
{
    const ca_config *c = &x->model->config;
    double most = 0.0, loss = c->loss_channels, task = (double)c->batch * c->height * c->width;
    for (int hard = 0; hard < 2; hard++) keep_most(&most, x, c->batch, c->height, c->width, hard, loss * task * 8.0);
    if (c->target == CA_TARGET_LIFE) {
        keep_most(&most, x, 512, 3, 3, 1, 0.0);
        keep_most(&most, x, 1, 128, 128, 1, 128.0 * 128.0 * 8.0);
        keep_most(&most, x, 1, 32, 32, 1, 0.0);
    } else if (c->target == CA_TARGET_CHECKERBOARD) {
        int size = c->fire_rate >= 1.0 ? 64 : 30;
        keep_most(&most, x, 1, size, size, 1, loss * size * size * 8.0);
    } else if (x->image && c->loss_channels == 1) {
        keep_most(&most, x, 1, 2 * c->height, 2 * c->width, 1, 0.0);
    }
    /* ca_eval_settles beside a hard runner of one grid: its states, hashes and per-step flags */
    double words = ceil((double)c->channels * c->height * c->width / 64.0);
    double steps = (double)CA_EVAL_SETTLE_TIMES_T * c->steps + 1.0, states = steps * words * 8.0;
    if (states > (double)SETTLE_BYTES) states = (double)SETTLE_BYTES;
    keep_most(&most, x, 1, c->height, c->width, 1, states + steps * 9.0 + c->steps + loss * c->height * c->width * 8.0);
    return most + (x->image ? loss * c->height * c->width * 8.0 : 0.0);
}

/* The loss channels' bits that differ from target [loss_channels][cells], and their count. */
static size_t loss_wrong_bits(const ca_runner *r, const double *target, size_t *bits)
{
    *bits = (size_t)r->view.config.loss_channels * ca_shape_cells(r->shape);
    return ca_task_wrong_bits(r->grid, target, *bits);
}

/* The persistence rollouts' start: one sample of training round 0 on the training grid, hard, at
 * step 0, and its target [loss_channels][cells] (malloc'd). On success the caller frees both; on
 * failure nothing is left open. */
static int open_persistence_rollout(const ca_eval_context *x, ca_runner *r, double **target)
{
    const ca_config *c = &x->model->config;
    if (open_runner(x, r, 1, c->height, c->width, 1, c->fire_rate, c->seed)) return DLCA_ERR;
    *target = malloc((size_t)c->loss_channels * ca_shape_cells(r->shape) * sizeof(double));
    int rc = *target ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for the target");
    if (!rc) rc = ca_round_inputs(c, r->shape, 0, x->image, r->grid, *target);
    if (!rc) rc = ca_runner_grid_changed(r);
    if (rc) free(*target), ca_runner_free(r);
    return rc;
}

/* One sample of training round 0 on the training grid, hard, stepped `before` steps and, with
 * `erase`, its top-left quarter erased; then `after` steps, whose wrong fractions give the
 * largest (worst) and smallest (best), and (sum, unless NULL) the wrong bits summed over steps
 * `before` to `before + after` (without `erase`; pass_fail is not applied to a sum). */
static int persistence_run(const ca_eval_context *x, int before, int erase, int after, double *worst, double *best,
                           double *sum)
{
    const ca_config *c = &x->model->config;
    ca_runner r;
    double *target;
    if (open_persistence_rollout(x, &r, &target)) return DLCA_ERR;
    r.read_channels = c->loss_channels; /* edited by paint only */
    int rc = run_steps(&r, before);
    if (!rc && erase) ca_runner_paint(&r, 0, 0, c->width / 2, c->height / 2, 0.0);
    *worst = 0.0, *best = 1.0;
    size_t bits = 1;
    if (sum) *sum = 0.0;
    if (!rc && !erase) {
        size_t wrong = loss_wrong_bits(&r, target, &bits); /* step `before` itself */
        *worst = *best = (double)wrong / (double)bits;
        if (sum) *sum = (double)wrong;
    }
    for (int t = 0; !rc && t < after; t++) {
        /* pass_fail: a wrong step fails persists, a right one passes regrows */
        if (!sum && x->pass_fail && (erase ? *best == 0.0 : *worst > 0.0)) break;
        rc = ca_runner_step(&r);
        size_t wrong = rc ? 0 : loss_wrong_bits(&r, target, &bits);
        double fraction = rc ? 1.0 : (double)wrong / (double)bits;
        *worst = fraction > *worst ? fraction : *worst, *best = fraction < *best ? fraction : *best;
        if (sum) *sum += (double)wrong;
    }
    free(target);
    ca_runner_free(&r);
    return rc;
}

int ca_eval_has_persistence(const ca_eval_context *x)
{
    const ca_config *c = &x->model->config;
    return c->target != CA_TARGET_LIFE && (c->target != CA_TARGET_IMAGE || x->image);
}

int ca_eval_persistence(const ca_eval_context *x, int which, ca_check *checks, int *count)
{
    const ca_config *c = &x->model->config;
    int T = c->steps;
    double worst, best;
    char name[96];
    if (!ca_eval_has_persistence(x)) return DLCA_OK;
    if (which & CA_EVAL_PERSISTS) {
        if (persistence_run(x, T, 0, 9 * T, &worst, &best, NULL)) return DLCA_ERR;
        snprintf(name, sizeof name, "persists: exact at every step from T to 10T (%d to %d)", T, 10 * T);
        add_check(checks, count, name, worst);
    }
    if ((which & CA_EVAL_REGROWS) && !(x->pass_fail && *count > 0 && !checks[*count - 1].passed)) {
        if (persistence_run(x, 2 * T, 1, 2 * T, &worst, &best, NULL)) return DLCA_ERR;
        snprintf(name, sizeof name, "regrows a quarter erased at step 2T within 2T steps (%d + %d)", 2 * T, 2 * T);
        add_check(checks, count, name, best);
    }
    return DLCA_OK;
}

int ca_eval_persists_bits(const ca_eval_context *x, double *bits)
{
    const ca_config *c = &x->model->config;
    double worst, best;
    *bits = 0.0;
    if (!ca_eval_has_persistence(x)) return DLCA_OK;
    return persistence_run(x, c->steps, 0, 9 * c->steps, &worst, &best, bits);
}

/* state[t] of `words` words: the grid's bits (rounded at 0.5), every channel. */
static void pack_state(const ca_runner *r, uint64_t *state, size_t words)
{
    size_t n = r->grid_values;
    memset(state, 0, words * sizeof *state);
    for (size_t i = 0; i < n; i++)
        if (r->grid[i] > 0.5) state[i / 64] |= 1ull << (i % 64);
}

static uint64_t state_hash(const uint64_t *state, size_t words)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the words */
    for (size_t i = 0; i < words; i++) h = (h ^ state[i]) * 1099511628211ull;
    return h;
}

int ca_eval_settles(const ca_eval_context *x, int most, ca_eval_settle *s)
{
    const ca_config *c = &x->model->config;
    int T = c->steps;
    memset(s, 0, sizeof *s);
    s->applies = ca_eval_has_persistence(x) && c->fire_rate >= 1.0;
    if (!s->applies || most < 1) return DLCA_OK;
    ca_runner r;
    double *target;
    if (open_persistence_rollout(x, &r, &target)) return DLCA_ERR;
    size_t words = (r.grid_values + 63) / 64, bits;
    if ((size_t)most + 1 > SETTLE_BYTES / (words * sizeof(uint64_t))) most = (int)(SETTLE_BYTES / (words * 8)) - 1;
    uint64_t *states = malloc((size_t)(most + 1) * words * sizeof(uint64_t));
    uint64_t *hash = malloc((size_t)(most + 1) * sizeof(uint64_t));
    uint8_t *wrong = calloc((size_t)most + (size_t)T + 1, 1); /* per step, to T + most at most */
    int rc = states && hash && wrong ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for %d steps of states", most);
    /* Step t's state is compared with every earlier one (by hash, then in full) until one repeats;
     * from then the rollout goes on to T + period - 1 at least, so that steps T..end hold a whole
     * cycle. */
    int end = most;
    for (int t = 0; !rc && t <= end; t++) {
        if (t > 0 && (rc = ca_runner_step(&r))) break;
        if (!s->repeats) {
            uint64_t *state = states + (size_t)t * words;
            pack_state(&r, state, words), hash[t] = state_hash(state, words);
            for (int u = 0; u < t && !s->repeats; u++)
                if (hash[u] == hash[t] && memcmp(states + (size_t)u * words, state, words * sizeof *state) == 0) {
                    s->repeats = 1, s->from = u, s->period = t - u;
                    end = T + s->period - 1 > t - 1 ? T + s->period - 1 : t - 1;
                }
        }
        if (t >= T && t <= end) wrong[t] = loss_wrong_bits(&r, target, &bits) > 0;
    }
    if (!rc && s->repeats) {
        int cycle = s->from > T ? s->from : T; /* the cycle's steps from T on: cycle..cycle + period - 1 */
        s->last = end, s->right_from = T;
        for (int t = T; t <= end; t++) {
            s->wrong_steps += wrong[t];
            if (wrong[t]) s->right_from = t + 1;
            if (t >= cycle && t < cycle + s->period) s->cycle_wrong += wrong[t];
        }
    }
    s->most = most;
    free(states), free(hash), free(wrong), free(target);
    ca_runner_free(&r);
    return rc;
}

int ca_eval_trained_persistence(const ca_config *c)
{
    return (c->pool > 0 || c->window > 0 ? CA_EVAL_PERSISTS : 0) | (c->damage > 0 ? CA_EVAL_REGROWS : 0);
}

static int generalisation_checks(const ca_eval_context *x, ca_check *checks, int *count)
{
    const ca_config *c = &x->model->config;
    if (c->target == CA_TARGET_LIFE) return life_checks(x, checks, count);
    if (is_sync_checkerboard(c)) /* the first as ca_eval_wide's rollout */
        return pattern_check(x, checks, count, "checkerboard on 64x64 after 80 steps", WIDE_SIZE, WIDE_STEPS, 1.0, 0,
                             0) ||
               pattern_check(x, checks, count, "heals a zeroed 20x20 centre (64x64, 80 + 80 steps)", WIDE_SIZE,
                             WIDE_STEPS, 1.0, 20, 80);
    /* 30x30 (15 squares a side, like the 7 of 14x14): every corner square has the same colour,
     * so a pattern anchored at any corner must match the target. */
    if (c->target == CA_TARGET_CHECKERBOARD)
        return pattern_check(x, checks, count, "async inference (fire rate 0.6) on 30x30, 100 steps", 30, 100,
                             c->fire_rate, 0, 0) ||
               pattern_check(x, checks, count, "async survives a zeroed 8x8 centre (30x30, 100 + 100 steps)", 30,
                             100, c->fire_rate, 8, 100);
    if (picture_check(x, checks, count)) return DLCA_ERR;
    return c->loss_channels == 1 ? lizard_check(x, checks, count) : DLCA_OK;
}

int ca_eval_checks(const ca_eval_context *x, ca_check *checks, int *count)
{
    *count = 0;
    if (generalisation_checks(x, checks, count)) return DLCA_ERR;
    for (int i = 0; x->pass_fail && i < *count; i++)
        if (!checks[i].passed) return DLCA_OK;
    return ca_eval_persistence(x, ca_eval_trained_persistence(&x->model->config), checks, count);
}
