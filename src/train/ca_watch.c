/* ca_watch.c: the hard loss, the exact check and the best circuit of a run (ca_watch.h). */
#include "ca_watch.h"

#include "ca_eval.h"
#include "ca_task.h"
#include "error.h"
#include "gates.h"

#include <stdlib.h>
#include <string.h>

int ca_watch_init(ca_watch *w, const ca_model *model, const double *image, int check_every)
{
    memset(w, 0, sizeof *w);
    w->check_every = check_every > 0 ? check_every : 1;
    w->image = image;
    w->logits = malloc(model->gate_count * GATE_OP_COUNT * sizeof(float));
    w->ops = malloc(model->gate_count);
    w->inexact_ops = malloc(model->gate_count);
    if (!w->logits || !w->ops || !w->inexact_ops) {
        ca_watch_free(w);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the exact check's logits");
    }
    w->view = *model;
    w->view.logits = w->logits;
    return DLCA_OK;
}

void ca_watch_free(ca_watch *w)
{
    free(w->logits), free(w->ops), free(w->inexact_ops);
    memset(w, 0, sizeof *w);
}

int ca_watch_measures(const ca_watch *w, uint64_t step, uint64_t total, long long every)
{
    return step % (uint64_t)w->check_every == 0 || (every > 0 && step % (uint64_t)every == 0) || step == total;
}

int ca_watch_round_persistence(const ca_config *config, uint64_t step)
{
    int from_pool = 0;
    if (step == 0) return 0;
    int steps = ca_task_round_steps(config, step - 1, &from_pool);
    return from_pool || steps != config->steps;
}

/* 1 when a ranks above b, -1 below, 0 when tied, on everything but the soft loss. */
static int mark_order(const ca_mark *a, const ca_mark *b)
{
    if (a->exact != b->exact) return a->exact > b->exact ? 1 : -1;
    if (a->persistence != b->persistence) return a->persistence > b->persistence ? 1 : -1;
    if (a->wrong != b->wrong) return a->wrong < b->wrong ? 1 : -1;
    if (a->shortfall != b->shortfall) return a->shortfall < b->shortfall ? 1 : -1;
    return 0;
}

int ca_mark_better(const ca_mark *a, const ca_mark *b)
{
    int order = mark_order(a, b);
    return order ? order > 0 : a->soft < b->soft;
}

/* The circuit in w->logits' wrong bits over steps T..10T where the run trains to hold its picture
 * (ca_mark.shortfall), else 0. */
static int shortfall(const ca_watch *w, double *bits)
{
    *bits = 0.0;
    if (!(ca_eval_trained_persistence(&w->view.config) & CA_EVAL_PERSISTS)) return DLCA_OK;
    ca_eval_context context = {&w->view, CA_BACKEND_CPU, NULL, w->image, 1};
    return ca_eval_persists_bits(&context, bits);
}

int ca_watch_check(ca_watch *w, uint64_t step, int *exact, double *short_bits)
{
    double ignored;
    if (!short_bits) short_bits = &ignored;
    size_t gates = w->view.gate_count;
    for (size_t g = 0; g < gates; g++) {
        double z[GATE_OP_COUNT];
        for (int i = 0; i < GATE_OP_COUNT; i++) z[i] = w->logits[g * GATE_OP_COUNT + (size_t)i];
        w->ops[g] = (unsigned char)gate_argmax(z);
    }
    *short_bits = 0.0;
    if (w->have_inexact_ops && memcmp(w->ops, w->inexact_ops, gates) == 0) {
        *exact = 0;
        w->inexact++;
        *short_bits = w->inexact_shortfall;
        return DLCA_OK;
    }
    ca_exact_result result;
    if (ca_exact_check(&w->view, w->image, &result)) return DLCA_ERR;
    w->checks++;
    *exact = result.exact;
    if (!result.exact) {
        if (w->inexact++ == 0) w->first_inexact = result, w->first_inexact_step = step;
        memcpy(w->inexact_ops, w->ops, gates);
        w->have_inexact_ops = 1;
        if (shortfall(w, short_bits)) return DLCA_ERR;
        w->inexact_shortfall = *short_bits;
    }
    return DLCA_OK;
}

int ca_watch_step(ca_watch *w, ca_trainer *t, double soft, double hard, int *exact)
{
    int persistence = ca_watch_round_persistence(&t->model->config, t->measured.step);
    ca_mark mark = {t->measured.step, hard, soft, 0, persistence, 0.0};
    *exact = 0;
    if (hard == 0.0 && w->exact_step == 0) {
        if (ca_trainer_read_snapshot(t, &t->measured, w->logits, NULL, NULL) ||
            ca_watch_check(w, mark.step, exact, &mark.shortfall))
            return DLCA_ERR;
        if (*exact) w->exact_step = mark.step;
        mark.exact = *exact;
    }
    if (w->best.step == 0 || ca_mark_better(&mark, &w->best)) {
        ca_trainer_keep_measured(t);
        w->best = mark;
    }
    return DLCA_OK;
}

int ca_watch_final(ca_watch *w, ca_trainer *t, double last_soft, ca_mark *final, int *use_best)
{
    *final = (ca_mark){t->step, 0.0, last_soft, 0, ca_watch_round_persistence(&t->model->config, t->step), 0.0};
    *use_best = 0;
    if (t->step == 0) return DLCA_OK;
    /* The last step's round, which its measurement (a step before) used too. */
    if (ca_exact_round_wrong(t->model, w->image, t->step - 1, &final->wrong)) return DLCA_ERR;
    if (final->wrong == 0.0) {
        memcpy(w->logits, t->model->logits, t->model->gate_count * GATE_OP_COUNT * sizeof(float));
        if (ca_watch_check(w, t->step, &final->exact, &final->shortfall)) return DLCA_ERR;
        if (final->exact && w->exact_step == 0) w->exact_step = t->step;
    }
    /* The final circuit's soft loss is not known: the best must rank strictly above it without one. */
    *use_best = !w->keep_final && w->best.step > 0 && mark_order(&w->best, final) > 0;
    return DLCA_OK;
}

int ca_watch_save_best(ca_watch *w, ca_trainer *t, ca_best_state *best)
{
    memset(best, 0, sizeof *best);
    if (w->best.step == 0) return DLCA_OK;
    size_t n = t->gate_values;
    best->logits = malloc(n * sizeof(float));
    best->moment1 = malloc(n * sizeof(float));
    best->moment2 = malloc(n * sizeof(float));
    if (!best->logits || !best->moment1 || !best->moment2) {
        free(best->logits), free(best->moment1), free(best->moment2);
        memset(best, 0, sizeof *best);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the best circuit");
    }
    best->step = w->best.step, best->exact_step = w->exact_step;
    best->wrong = w->best.wrong, best->soft = w->best.soft, best->exact = w->best.exact;
    return ca_trainer_read_snapshot(t, &t->kept, best->logits, best->moment1, best->moment2);
}

int ca_watch_resume(ca_watch *w, ca_trainer *t, const ca_best_state *best)
{
    w->exact_step = best->exact_step;
    if (best->step == 0) return DLCA_OK;
    w->best = (ca_mark){best->step, best->wrong, best->soft, best->exact,
                        ca_watch_round_persistence(&t->model->config, best->step), 0.0};
    /* A file keeps no shortfall: it follows from the best's logits. */
    if (best->wrong == 0.0 && !best->exact) {
        memcpy(w->logits, best->logits, t->model->gate_count * GATE_OP_COUNT * sizeof(float));
        if (shortfall(w, &w->best.shortfall)) return DLCA_ERR;
    }
    return ca_trainer_set_kept(t, best->step, best->logits, best->moment1, best->moment2);
}

int ca_watch_restore_best(ca_watch *w, ca_trainer *t, uint64_t *steps_done)
{
    if (w->best.step == 0) return err_set(DLCA_ERR, "no circuit was measured");
    *steps_done = w->best.step - 1;
    return ca_trainer_read_snapshot(t, &t->kept, t->model->logits, t->moment1, t->moment2);
}
