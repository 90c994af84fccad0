/* ca_exact.c: the exact-circuit check (ca_exact.h). */
#include "ca_exact.h"

#include "ca_eval.h"
#include "ca_task.h"
#include "error.h"
#include "hard_cpu.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hard circuit on the training rounds' shape, and room for a round's grids. */
typedef struct {
    const ca_model *model;
    const double *image;
    ca_shape shape;
    hard_cpu engine;
    double *grid, *target;
    int ready;
} round_runner;

static void runner_free(round_runner *r)
{
    if (r->ready) hard_cpu_free(&r->engine);
    free(r->grid), free(r->target);
    memset(r, 0, sizeof *r);
}

static int runner_init(round_runner *r, const ca_model *model, const double *image, int batch)
{
    const ca_config *c = &model->config;
    memset(r, 0, sizeof *r);
    r->model = model, r->image = image;
    r->shape = (ca_shape){batch, c->height, c->width, c->boundary};
    size_t cells = ca_shape_cells(r->shape);
    r->grid = malloc((size_t)c->channels * cells * sizeof(double));
    r->target = malloc((size_t)c->loss_channels * cells * sizeof(double));
    if (!r->grid || !r->target) {
        runner_free(r);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the exact check's grids");
    }
    hard_netlist net;
    if (hard_circuit_build(&net, model, NULL)) return runner_free(r), DLCA_ERR;
    int rc = hard_cpu_init(&r->engine, &net, r->shape, c->fire_rate);
    hard_netlist_free(&net);
    r->ready = rc == DLCA_OK;
    if (rc) runner_free(r);
    return rc;
}

/* Wrong bits of the loss channels after T hard steps of round `round`, as the trainer draws it. */
static int runner_wrong(round_runner *r, uint64_t round, double *wrong)
{
    const ca_config *c = &r->model->config;
    size_t n = (size_t)c->loss_channels * ca_shape_cells(r->shape);
    if (ca_round_inputs(c, r->shape, round, r->image, r->grid, r->target)) return DLCA_ERR;
    hard_cpu_pack(&r->engine, r->grid);
    hard_cpu_set_fire_stream(&r->engine, rng_fire_stream(c->seed, round));
    hard_cpu_run(&r->engine, 0, c->steps);
    hard_cpu_unpack(&r->engine, r->grid);
    *wrong = (double)ca_task_wrong_bits(r->grid, r->target, n);
    return DLCA_OK;
}

int ca_exact_round_wrong(const ca_model *model, const double *image, uint64_t round, double *wrong)
{
    round_runner r;
    if (runner_init(&r, model, image, model->config.batch)) return DLCA_ERR;
    int rc = runner_wrong(&r, round, wrong);
    runner_free(&r);
    return rc;
}

static int life_boards(const ca_model *model, ca_exact_result *result)
{
    ca_eval_context context = {model, CA_BACKEND_CPU, NULL, NULL, 1};
    double accuracy;
    if (ca_eval_life_accuracy(&context, &accuracy)) return DLCA_ERR;
    int wrong = (int)(512.0 - accuracy * 512.0 + 0.5);
    result->exact = wrong == 0;
    if (wrong) snprintf(result->why, sizeof result->why, "wrong on %d of the 512 boards", wrong);
    return DLCA_OK;
}

/* No fire masks and a start no round draws: the target (the picture, the checkerboard, or Life's
 * of that start) is the same every round too. */
int ca_exact_one_rollout(const ca_config *c)
{
    return c->fire_rate >= 1.0 && (c->start == CA_START_ZEROS || c->start == CA_START_SEED_CELL);
}

static int unseen_rounds(const ca_model *model, const double *image, ca_exact_result *result)
{
    round_runner r;
    int same = ca_exact_one_rollout(&model->config), rounds = same ? 1 : CA_EXACT_ROUNDS;
    if (runner_init(&r, model, image, same ? 1 : model->config.batch)) return DLCA_ERR;
    int rc = DLCA_OK;
    result->exact = 1;
    for (uint64_t k = 0; !rc && result->exact && k < (uint64_t)rounds; k++) {
        double wrong;
        rc = runner_wrong(&r, CA_EXACT_FIRST_ROUND + k, &wrong);
        if (!rc && wrong > 0.0) {
            result->exact = 0;
            snprintf(result->why, sizeof result->why, "%.0f wrong cell bits on unseen round %llu", wrong,
                     (unsigned long long)(CA_EXACT_FIRST_ROUND + k));
        }
    }
    runner_free(&r);
    return rc;
}

static int eval_checks(const ca_model *model, const double *image, ca_exact_result *result)
{
    ca_eval_context context = {model, CA_BACKEND_CPU, NULL, image, 1};
    ca_check checks[CA_EVAL_MAX_CHECKS];
    int count = 0;
    if (ca_eval_checks(&context, checks, &count)) return DLCA_ERR;
    for (int i = 0; i < count; i++)
        if (!checks[i].passed) {
            result->exact = 0, result->eval_check = 1;
            snprintf(result->why, sizeof result->why, "fails dlca eval's check '%s' (%.3g wrong)", checks[i].name,
                     checks[i].error);
            return DLCA_OK;
        }
    return DLCA_OK;
}

int ca_exact_check(const ca_model *model, const double *image, ca_exact_result *result)
{
    const ca_config *c = &model->config;
    memset(result, 0, sizeof *result);
    if (c->target == CA_TARGET_LIFE && c->channels == 1) return life_boards(model, result);
    if (unseen_rounds(model, image, result)) return DLCA_ERR;
    return result->exact ? eval_checks(model, image, result) : DLCA_OK;
}
