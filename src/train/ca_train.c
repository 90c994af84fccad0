/* ca_train.c: the training step on either engine, and AdamW for the CPU path. */
#include "ca_train.h"

#include "ca_task.h"
#include "error.h"
#include "gates.h"
#include "rng.h"
#include "vk_command.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ca_adamw ca_adamw_default(const ca_config *config)
{
    return (ca_adamw){.learning_rate = (float)config->learning_rate, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
                      .weight_decay = 1e-2f, .clip = 100.0f};
}

int ca_round_inputs(const ca_config *c, ca_shape shape, uint64_t round, const double *image, double *start,
                    double *target)
{
    if (ca_task_start(c, shape, round, start)) return DLCA_ERR;
    return ca_task_target(c, shape, start, image, target);
}

/* The fast engine keeps no activations: backward recomputes each step from its grid. */
static int cpu_engine_init(ca_trainer *t)
{
    const ca_config *c = &t->model->config;
    const ca_fast_options options = {.cache = 0, .threads = t->options.cpu_threads};
    if (t->options.cpu_reference) return ca_cpu_init(&t->cpu, t->model, c->batch, 0, 0);
    return ca_fast_init(&t->fast, t->model, c->batch, 0, 0, &options);
}

int ca_trainer_init(ca_trainer *t, ca_model *model, const double *image, ca_backend backend, vk_context *vk,
                    const ca_options *options)
{
    const ca_config *c = &model->config;
    memset(t, 0, sizeof *t);
    if (options) t->options = *options;
    t->model = model, t->backend = backend, t->image = image, t->vk = vk;
    t->adamw = ca_adamw_default(c);
    t->gate_values = model->gate_count * GATE_OP_COUNT;
    if (c->target == CA_TARGET_IMAGE && !image)
        return err_set(DLCA_ERR, "preset '%s' trains towards a picture: give --target PNG", c->preset);
    size_t cells = (size_t)c->batch * (size_t)c->height * (size_t)c->width;
    t->moment1 = calloc(t->gate_values, sizeof(float));
    t->moment2 = calloc(t->gate_values, sizeof(float));
    t->start = malloc((size_t)c->channels * cells * sizeof(double));
    t->target = malloc((size_t)c->loss_channels * cells * sizeof(double));
    if (!t->moment1 || !t->moment2 || !t->start || !t->target) {
        ca_trainer_free(t);
        double mib = (double)(c->channels + c->loss_channels) * (double)cells * sizeof(double) / (1024.0 * 1024.0);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the trainer: %.0f MiB for a batch of %d grids of %dx%d", mib,
                       c->batch, c->height, c->width);
    }
    int rc;
    if (backend == CA_BACKEND_GPU) {
        rc = ca_gpu_init(&t->gpu, vk, model, c->batch, 0, 0, &t->options.gpu);
        if (!rc && image) rc = ca_gpu_upload_image(&t->gpu, image);
    } else {
        rc = cpu_engine_init(t);
        t->logits = malloc(t->gate_values * sizeof(double));
        t->dlogits = malloc(t->gate_values * sizeof(double));
        if (!rc && (!t->logits || !t->dlogits)) rc = err_set(DLCA_ERR_NOMEM, "out of memory for the trainer");
    }
    if (rc) ca_trainer_free(t);
    return rc;
}

void ca_trainer_free(ca_trainer *t)
{
    free(t->moment1), free(t->moment2), free(t->start), free(t->target), free(t->logits), free(t->dlogits);
    if (t->backend == CA_BACKEND_GPU)
        ca_gpu_free(&t->gpu);
    else if (t->options.cpu_reference)
        ca_cpu_free(&t->cpu);
    else
        ca_fast_free(&t->fast);
    memset(t, 0, sizeof *t);
}

int ca_trainer_resume(ca_trainer *t, uint64_t step, const float *moment1, const float *moment2)
{
    t->step = step;
    memcpy(t->moment1, moment1, t->gate_values * sizeof(float));
    memcpy(t->moment2, moment2, t->gate_values * sizeof(float));
    if (t->backend != CA_BACKEND_GPU) return DLCA_OK;
    if (ca_gpu_upload_logits(&t->gpu, t->model->logits, 0)) return DLCA_ERR;
    if (ca_gpu_upload_gate_rows(&t->gpu, &t->gpu.moment1, GATE_OP_COUNT, moment1)) return DLCA_ERR;
    return ca_gpu_upload_gate_rows(&t->gpu, &t->gpu.moment2, GATE_OP_COUNT, moment2);
}

int ca_trainer_resume_steps(const char *path, uint64_t done, long long wanted, int *train_steps)
{
    if (wanted > 0 && (uint64_t)wanted <= done)
        return err_set(DLCA_ERR, "--steps %lld: %s has already done %llu steps: give --steps N > %llu", wanted, path,
                       (unsigned long long)done, (unsigned long long)done);
    if (wanted <= 0 && done >= (uint64_t)*train_steps)
        return err_set(DLCA_ERR, "%s: already trained %llu of %d steps: give --steps N > %llu to train further", path,
                       (unsigned long long)done, *train_steps, (unsigned long long)done);
    if (wanted > 0) *train_steps = (int)wanted;
    return DLCA_OK;
}

/* AdamW on float parameters and moments, computed in double, as adamw.comp does in float. */
static void adamw_cpu(ca_trainer *t, const double *grad)
{
    const ca_adamw *a = &t->adamw;
    double correction1 = 1.0 - pow(a->beta1, (double)t->step), correction2 = 1.0 - pow(a->beta2, (double)t->step);
    float *param = t->model->logits;
    for (size_t i = 0; i < t->gate_values; i++) {
        double g = fmax(-a->clip, fmin(a->clip, grad[i]));
        double m = a->beta1 * (double)t->moment1[i] + (1.0 - a->beta1) * g;
        double v = a->beta2 * (double)t->moment2[i] + (1.0 - a->beta2) * g * g;
        t->moment1[i] = (float)m, t->moment2[i] = (float)v;
        double p = (double)param[i] * (1.0 - (double)a->learning_rate * a->weight_decay);
        param[i] = (float)(p - a->learning_rate * (m / correction1) / (sqrt(v / correction2) + a->eps));
    }
}

static double cpu_reference_rollout(ca_trainer *t, int hard)
{
    ca_cpu *e = &t->cpu;
    size_t n_grid = (size_t)t->model->config.channels * e->cells;
    ca_cpu_coefficients(e, t->logits, hard);
    memcpy(ca_cpu_grid(e, 0), t->start, n_grid * sizeof(double));
    if (hard) ca_task_binarize(ca_cpu_grid(e, 0), n_grid);
    ca_cpu_forward(e);
    return ca_cpu_loss_forward(e, t->target);
}

static double fast_rollout(ca_trainer *t, int hard)
{
    ca_fast *e = &t->fast;
    size_t n_grid = (size_t)t->model->config.channels * e->cells;
    float *grid = ca_fast_grid(e, 0);
    ca_fast_coefficients(e, t->logits, hard);
    for (size_t i = 0; i < n_grid; i++) {
        double value = t->start[i];
        if (hard) ca_task_binarize(&value, 1); /* binarised in double, as for the reference */
        grid[i] = (float)value;
    }
    ca_fast_forward(e);
    return ca_fast_loss_forward(e, t->target);
}

static double cpu_rollout(ca_trainer *t, int hard)
{
    return t->options.cpu_reference ? cpu_reference_rollout(t, hard) : fast_rollout(t, hard);
}

/* BPTT of the last (soft) rollout into t->dlogits. */
static void cpu_gradient(ca_trainer *t)
{
    if (t->options.cpu_reference) {
        ca_cpu_loss_backward(&t->cpu, t->target);
        ca_cpu_backward(&t->cpu);
        ca_cpu_logits_gradient(&t->cpu, t->logits, t->dlogits);
        return;
    }
    ca_fast_loss_backward(&t->fast, t->target);
    ca_fast_backward(&t->fast);
    ca_fast_logits_gradient(&t->fast, t->logits, t->dlogits);
}

static int cpu_step(ca_trainer *t, double *soft_loss, double *hard_loss)
{
    ca_model_logits_to_double(t->model, t->logits);
    if (hard_loss) *hard_loss = cpu_rollout(t, 1);
    *soft_loss = cpu_rollout(t, 0);
    cpu_gradient(t);
    for (size_t i = 0; i < t->gate_values; i++)
        if (!isfinite(t->dlogits[i])) return ca_trainer_nonfinite(t, "gradient");
    if (!isfinite(*soft_loss)) return ca_trainer_nonfinite(t, "loss");
    t->step++;
    adamw_cpu(t, t->dlogits);
    return DLCA_OK;
}

int ca_trainer_nonfinite(const ca_trainer *t, const char *what)
{
    return err_set(DLCA_ERR, "%s is not finite at step %llu", what, (unsigned long long)t->step + 1);
}

/* The test seam of ca_options, before step t->step + 1. */
static int before_step(ca_trainer *t)
{
    if (!t->options.before_step) return DLCA_OK;
    int changed = t->options.before_step(t->options.before_step_context, t->step + 1, t->model);
    if (changed < 0) return DLCA_ERR;
    if (changed && t->backend == CA_BACKEND_GPU) return ca_gpu_upload_logits(&t->gpu, t->model->logits, 0);
    return DLCA_OK;
}

int ca_trainer_step(ca_trainer *t, double *soft_loss, double *hard_loss)
{
    const ca_config *c = &t->model->config;
    if (before_step(t)) return DLCA_ERR;
    ca_shape shape = {c->batch, c->height, c->width, c->boundary};
    uint32_t stream = rng_fire_stream(c->seed, t->step);
    int rc;
    if (t->backend == CA_BACKEND_GPU) {
        /* The GPU draws the round's start and target itself (task_round.comp). */
        ca_gpu_set_fire_stream(&t->gpu, stream);
        rc = ca_trainer_gpu_step(t, soft_loss, hard_loss);
    } else {
        rc = ca_round_inputs(c, shape, t->step, t->image, t->start, t->target);
        if (t->options.cpu_reference)
            ca_cpu_set_fire_stream(&t->cpu, stream);
        else
            ca_fast_set_fire_stream(&t->fast, stream);
        if (!rc) rc = cpu_step(t, soft_loss, hard_loss);
    }
    return rc;
}

int ca_trainer_sync(ca_trainer *t)
{
    if (t->backend != CA_BACKEND_GPU) return DLCA_OK;
    if (ca_gpu_download_logits(&t->gpu, t->model->logits)) return DLCA_ERR;
    if (ca_gpu_download_gate_rows(&t->gpu, &t->gpu.moment1, GATE_OP_COUNT, t->moment1)) return DLCA_ERR;
    return ca_gpu_download_gate_rows(&t->gpu, &t->gpu.moment2, GATE_OP_COUNT, t->moment2);
}
