/* train_fixtures.h: short training runs that the hard-loss tests compare step by step. */
#ifndef DLCA_TRAIN_FIXTURES_H
#define DLCA_TRAIN_FIXTURES_H

#include "ca_fixtures.h"
#include "ca_train.h"

enum { TRAIN_FIXTURE_MAX_STEPS = 64 };

/* A small checkerboard (4x4 from random starts, T 3) whose gates leave pass-through within a few
 * steps (a small init logit, lr 0.1), so that ops and the hard loss change while a test of
 * `steps` steps runs. */
static inline void changing_ops_config(ca_config *c, int steps)
{
    small_preset(c, "checkerboard");
    c->height = c->width = 4, c->steps = 3;
    c->init_logit = 0.5, c->learning_rate = 0.1, c->train_steps = steps;
}

/* Rotates every gate's logits by one op: every op changes, while the optimizer's own steps are
 * small (what the tests' seams do once, to write z from outside). */
static inline void rotate_ops(ca_model *model)
{
    for (size_t g = 0; g < model->gate_count; g++) {
        float *l = model->logits + g * GATE_OP_COUNT, first = l[0];
        memmove(l, l + 1, (GATE_OP_COUNT - 1) * sizeof(float));
        l[GATE_OP_COUNT - 1] = first;
    }
}

/* Every step's losses of a run, and how its hard losses were had. */
typedef struct {
    double soft[TRAIN_FIXTURE_MAX_STEPS], hard[TRAIN_FIXTURE_MAX_STEPS];
    uint64_t reused, on_host; /* ca_trainer.hard_reused, hard_on_host_steps */
} run_losses;

/* config->train_steps steps of a new model of `config`, the hard loss asked every step. */
static inline int train_losses(const ca_config *config, ca_backend backend, vk_context *vk,
                               const ca_options *options, run_losses *out)
{
    if (config->train_steps > TRAIN_FIXTURE_MAX_STEPS) return err_set(DLCA_ERR, "train_losses: too many steps");
    ca_model model;
    ca_trainer t;
    if (ca_model_init(&model, config)) return DLCA_ERR;
    int rc = ca_trainer_init(&t, &model, NULL, backend, vk, options);
    for (int s = 0; !rc && s < config->train_steps; s++) rc = ca_trainer_step(&t, &out->soft[s], &out->hard[s]);
    if (!rc) out->reused = t.hard_reused, out->on_host = t.hard_on_host_steps, ca_trainer_free(&t);
    ca_model_free(&model);
    return rc;
}

#endif
