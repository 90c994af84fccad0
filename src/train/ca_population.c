/* ca_population.c: members trained side by side (ca_population.h). */
#include "ca_population.h"

#include "error.h"
#include "vk_command.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int ca_population_init(ca_population *p, const ca_config *config, int count, const double *image, ca_backend backend,
                       vk_context *vk, const ca_options *options, int check_every)
{
    memset(p, 0, sizeof *p);
    if (count < 1) return err_set(DLCA_ERR, "a population needs at least one member, not %d", count);
    p->members = calloc((size_t)count, sizeof *p->members);
    if (!p->members) return err_set(DLCA_ERR_NOMEM, "out of memory for %d members", count);
    p->count = count, p->backend = backend, p->vk = vk, p->image = image;
    p->check_stages = options && options->check_stages;
    p->total = (uint64_t)config->train_steps;
    p->queues = backend == CA_BACKEND_GPU && vk ? vk->queue_count : 1;
    /* The members' fused pipelines are made together after the loop, on every core, instead of
     * one member after another (members of one shape share one set). */
    ca_options deferred = options ? *options : (ca_options){0};
    deferred.gpu.defer_pipelines = 1;
    if (backend == CA_BACKEND_GPU) options = &deferred;
    for (int i = 0; i < count; i++) {
        ca_member *m = &p->members[i];
        ca_config c = *config;
        c.seed = config->seed + (uint64_t)i;
        if (ca_model_init(&m->model, &c)) return ca_population_free(p), DLCA_ERR;
        if (ca_trainer_init(&m->trainer, &m->model, image, backend, vk, options)) {
            ca_model_free(&m->model);
            return ca_population_free(p), DLCA_ERR;
        }
        if (ca_watch_init(&m->watch, &m->model, image, check_every)) {
            ca_trainer_free(&m->trainer), ca_model_free(&m->model);
            return ca_population_free(p), DLCA_ERR;
        }
        m->ready = m->active = 1;
    }
    if (backend != CA_BACKEND_GPU) return DLCA_OK;
    ca_gpu **engines = malloc((size_t)count * sizeof *engines);
    if (!engines) return ca_population_free(p), err_set(DLCA_ERR_NOMEM, "out of memory for %d members", count);
    for (int i = 0; i < count; i++) engines[i] = &p->members[i].trainer.gpu;
    int rc = ca_gpu_create_pipelines(engines, count);
    free(engines);
    if (rc) ca_population_free(p);
    return rc;
}

void ca_population_free(ca_population *p)
{
    for (int i = 0; p->members && i < p->count; i++) {
        ca_member *m = &p->members[i];
        if (m->ready) ca_watch_free(&m->watch), ca_trainer_free(&m->trainer), ca_model_free(&m->model);
        free(m->rows);
    }
    free(p->members);
    memset(p, 0, sizeof *p);
}

/* Every active member's step: a command buffer each, submitted as soon as it is recorded and
 * spread over the device's queues (vk_spread), so that the GPU runs a member while the host
 * records the next, and members side by side where the device overlaps queues. */
static int gpu_step(ca_population *p, int measure, double *soft, double *hard)
{
    ca_step_results *results = calloc((size_t)p->count, sizeof *results);
    VkCommandBuffer *cmds = calloc((size_t)p->count, sizeof *cmds); /* member i's, NULL: none recorded */
    if (!results || !cmds) {
        free(results), free(cmds);
        return err_set(DLCA_ERR_NOMEM, "out of memory for %d members' results", p->count);
    }
    int rc = DLCA_OK;
    double start = wall_seconds();
    vk_spread spread;
    vk_spread_begin(p->vk, &spread, p->queues);
    for (int i = 0; !rc && i < p->count; i++) {
        if (!p->members[i].active) continue;
        rc = vk_cmd_begin(p->vk, &cmds[i]);
        if (rc) break;
        p->members[i].trainer.beside_others = p->queues > 1;
        /* a failed recording still ends its tn recording: it is retired too */
        rc = ca_trainer_step_record(&p->members[i].trainer, cmds[i], measure, &results[i]);
        if (!rc) rc = vk_cmd_end(cmds[i]);
        if (!rc) rc = vk_spread_submit(&spread, cmds[i]);
    }
    double recorded_at = wall_seconds();
    int waited = vk_spread_wait(&spread); /* also after a failure: what was submitted must end */
    if (!rc) rc = waited;
    int submitted = rc == DLCA_OK;
    p->record_ms = 1e3 * (recorded_at - start), p->run_ms = 1e3 * (wall_seconds() - recorded_at);
    for (int i = 0; i < p->count; i++) {
        if (!cmds[i]) continue;
        if (!p->vk->hung) vk_cmd_free(p->vk, cmds[i]);
        ca_trainer *t = &p->members[i].trainer;
        int done = ca_trainer_step_finish(t, submitted, &results[i], &soft[i], measure ? &hard[i] : NULL);
        if (t->crowded) p->queues = 1; /* its persistent kernels gave up beside the others */
        t->beside_others = t->crowded = 0;
        if (!rc) rc = done;
    }
    free(results), free(cmds);
    return rc;
}

static int cpu_step(ca_population *p, int measure, double *soft, double *hard)
{
    for (int i = 0; i < p->count; i++)
        if (p->members[i].active && ca_trainer_step(&p->members[i].trainer, &soft[i], measure ? &hard[i] : NULL))
            return DLCA_ERR;
    return DLCA_OK;
}

int ca_population_step(ca_population *p, int measure, double *soft, double *hard)
{
    if (p->backend == CA_BACKEND_GPU && !p->check_stages) return gpu_step(p, measure, soft, hard);
    return cpu_step(p, measure, soft, hard);
}

static int add_row(ca_member *m, uint64_t step, double seconds)
{
    if (m->row_count == m->row_capacity) {
        size_t capacity = m->row_capacity ? 2 * m->row_capacity : 64;
        ca_member_row *rows = realloc(m->rows, capacity * sizeof *rows);
        if (!rows) return err_set(DLCA_ERR_NOMEM, "out of memory for a member's log");
        m->rows = rows, m->row_capacity = capacity;
    }
    m->rows[m->row_count++] = (ca_member_row){step, m->soft, m->hard, seconds};
    return DLCA_OK;
}

/* What member m writes when it did not stop exact: its final circuit or its kept best. */
static int settle(ca_member *m, int keep_final)
{
    if (m->stopped_exact) {
        m->out = m->watch.best;
        return DLCA_OK;
    }
    if (ca_trainer_sync(&m->trainer)) return DLCA_ERR;
    ca_mark final;
    m->watch.keep_final = keep_final;
    if (ca_watch_final(&m->watch, &m->trainer, m->soft, &final, &m->use_best)) return DLCA_ERR;
    m->out = m->use_best ? m->watch.best : final;
    return DLCA_OK;
}

/* After step `step`: each member's measurement, the exact check, its row, and whether it stops. */
static int after_step(ca_population *p, const ca_population_run *run, uint64_t step, int measure, const double *soft,
                      const double *hard, double seconds, int *any_exact)
{
    for (int i = 0; i < p->count; i++) {
        ca_member *m = &p->members[i];
        if (!m->active) continue;
        int exact = 0;
        m->soft = soft[i];
        if (measure) {
            m->hard = hard[i], m->hard_step = step;
            if (ca_watch_step(&m->watch, &m->trainer, soft[i], hard[i], &exact)) return DLCA_ERR;
        }
        int logged = (run->every > 0 && step % (uint64_t)run->every == 0) || step == p->total;
        if ((logged || (exact && run->stop != CA_STOP_NONE)) && add_row(m, step, seconds)) return DLCA_ERR;
        m->stop_step = step, m->seconds = seconds;
        if (exact && run->stop != CA_STOP_NONE) m->stopped_exact = 1, m->active = run->stop != CA_STOP_EACH;
        *any_exact |= exact;
    }
    return DLCA_OK;
}

int ca_population_train(ca_population *p, const ca_population_run *run)
{
    double *soft = calloc((size_t)p->count, sizeof(double)), *hard = calloc((size_t)p->count, sizeof(double));
    int rc = soft && hard ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for %d members' losses", p->count);
    double start = wall_seconds();
    for (uint64_t step = 1; !rc && step <= p->total; step++) {
        int active = 0, any_exact = 0;
        for (int i = 0; i < p->count; i++) active += p->members[i].active;
        if (!active || (run->interrupt && *run->interrupt) || (run->cancel && atomic_load(run->cancel))) break;
        int measure = ca_watch_measures(&p->members[0].watch, step, p->total, run->every);
        rc = ca_population_step(p, measure, soft, hard);
        double seconds = run->seconds_offset + wall_seconds() - start;
        if (!rc) rc = after_step(p, run, step, measure, soft, hard, seconds, &any_exact);
        if (!rc && any_exact && run->stop == CA_STOP_FIRST)
            for (int i = 0; i < p->count; i++) p->members[i].active = 0;
        int shown = (run->every > 0 && step % (uint64_t)run->every == 0) || step == p->total;
        if (!rc && run->progress && (shown || any_exact)) run->progress(run->progress_context, p, step, seconds);
    }
    free(soft), free(hard);
    for (int i = 0; !rc && i < p->count; i++) {
        ca_member *m = &p->members[i];
        m->active = 0;
        /* A member that stopped beside an exact one logs its last step, as its single run would
         * (that step measured: another member's circuit was checked there). */
        int has_row = m->row_count > 0 && m->rows[m->row_count - 1].step == m->stop_step;
        if (m->stop_step > 0 && m->hard_step == m->stop_step && !has_row)
            rc = add_row(m, m->stop_step, m->seconds);
        if (!rc) rc = settle(m, run->keep_final);
    }
    return rc;
}

int ca_population_best(const ca_population *p)
{
    int best = 0;
    for (int i = 1; i < p->count; i++)
        if (ca_mark_better(&p->members[i].out, &p->members[best].out)) best = i;
    return best;
}

int ca_population_exact_count(const ca_population *p)
{
    int n = 0;
    for (int i = 0; i < p->count; i++) n += p->members[i].out.exact;
    return n;
}

int ca_population_save(ca_population *p, int i, const char *path, const ca_target_image *target)
{
    ca_member *m = &p->members[i];
    if (m->repaired) return ca_file_save(path, &m->model, NULL, target);
    ca_trainer *t = &m->trainer;
    uint64_t done = t->step;
    int rc = m->stopped_exact || m->use_best ? ca_watch_restore_best(&m->watch, t, &done) : ca_trainer_sync(t);
    ca_train_state state = {done, m->seconds, t->moment1, t->moment2, {0}, NULL};
    if (!rc) rc = ca_watch_save_best(&m->watch, t, &state.best);
    if (!rc) rc = ca_file_save(path, &m->model, &state, target);
    free(state.best.logits), free(state.best.moment1), free(state.best.moment2);
    return rc;
}
