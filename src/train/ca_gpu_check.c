/* ca_gpu_check.c: stage-by-stage GPU training step against the CPU engine. */
#include "ca_gpu_check.h"

#include "ca_task.h"
#include "error.h"
#include "vk_command.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The state a check needs: the CPU twin and scratch for downloads. */
typedef struct {
    ca_trainer *t;
    ca_cpu cpu;
    double *logits, *values;
} checker;

typedef int (*stage_fn)(checker *k, VkCommandBuffer cmd, int arg);

static int submit(checker *k, stage_fn stage, int arg)
{
    VkCommandBuffer cmd;
    if (vk_cmd_begin(k->t->vk, &cmd)) return DLCA_ERR;
    if (stage(k, cmd, arg)) return vk_cmd_free(k->t->vk, cmd), DLCA_ERR;
    vk_cmd_barrier_to_host(cmd);
    return vk_cmd_finish(k->t->vk, cmd);
}

/* The largest |cpu[i]|. */
static double largest(const double *cpu, size_t n)
{
    double scale = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(cpu[i]));
    return scale;
}

/* Worst |gpu - cpu| against the largest |cpu| or `floor`, whichever is larger. */
static int compare_floor(const char *stage, int step, const double *gpu, const double *cpu, size_t n, double tolerance,
                         double floor)
{
    double worst = 0.0, scale = fmax(floor, largest(cpu, n));
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs(gpu[i] - cpu[i]);
        if (diff > worst || isnan(diff)) worst = diff, at = i;
    }
    double relative = scale > 0.0 ? worst / scale : worst;
    if (relative <= tolerance) return DLCA_OK;
    return err_set(DLCA_ERR, "stage check: %s (CA step %d) differs from the CPU engine: element %zu is %.9g, "
                             "the CPU says %.9g (relative error %.3g > %.1g)",
                   stage, step, at, gpu[at], cpu[at], relative, tolerance);
}

static int compare(const char *stage, int step, const double *gpu, const double *cpu, size_t n, double tolerance)
{
    return compare_floor(stage, step, gpu, cpu, n, tolerance, 0.0);
}

static int stage_round(checker *k, VkCommandBuffer cmd, int arg)
{
    (void)arg;
    return ca_gpu_task_round(&k->t->gpu, cmd, k->t->step);
}
static int stage_coefficients(checker *k, VkCommandBuffer cmd, int hard)
{
    return ca_gpu_coefficients(&k->t->gpu, cmd, hard);
}
static int stage_forward(checker *k, VkCommandBuffer cmd, int t) { return ca_gpu_step_forward(&k->t->gpu, cmd, t); }
static int stage_loss(checker *k, VkCommandBuffer cmd, int slot) { return ca_gpu_loss(&k->t->gpu, cmd, (uint32_t)slot); }
static int stage_zero_sums(checker *k, VkCommandBuffer cmd, int arg)
{
    (void)arg;
    return ca_gpu_sums_zero(&k->t->gpu, cmd);
}
static int stage_backward(checker *k, VkCommandBuffer cmd, int t)
{
    return ca_gpu_step_backward(&k->t->gpu, cmd, t) || ca_gpu_sums_finish(&k->t->gpu, cmd);
}
static int stage_logits(checker *k, VkCommandBuffer cmd, int arg)
{
    (void)arg;
    return ca_gpu_logits_gradient(&k->t->gpu, cmd);
}
static int stage_adamw(checker *k, VkCommandBuffer cmd, int arg)
{
    (void)arg;
    return ca_gpu_adamw(&k->t->gpu, cmd, &k->t->adamw);
}

/* The CPU rollout of this round (soft or hard) with each forward stage compared on the way. */
static int check_rollout(checker *k, int hard)
{
    ca_trainer *t = k->t;
    const ca_config *c = &t->model->config;
    if (submit(k, stage_coefficients, hard)) return DLCA_ERR;
    ca_cpu_coefficients(&k->cpu, k->logits, hard);
    ca_gpu_read_gate_values(&t->gpu, &t->gpu.coeffs, 4, k->values);
    if (compare(hard ? "hard coefficients" : "coefficients", 0, k->values, k->cpu.coeffs, t->model->gate_count * 4, 1e-4))
        return DLCA_ERR;
    for (int step = 0; step < c->steps; step++) {
        if (submit(k, stage_forward, step)) return DLCA_ERR;
        ca_cpu_step_forward(&k->cpu, step);
        if (ca_gpu_download_grid(&t->gpu, step + 1, k->values)) return DLCA_ERR;
        if (compare("forward grid", step, k->values, ca_cpu_grid(&k->cpu, step + 1),
                    (size_t)c->channels * k->cpu.cells, hard ? 0.0 : 1e-3))
            return DLCA_ERR;
    }
    if (submit(k, stage_loss, hard)) return DLCA_ERR;
    double loss = ca_cpu_loss_forward(&k->cpu, t->target), gpu_loss = ((const float *)t->gpu.losses.mapped)[hard];
    return compare(hard ? "hard loss" : "loss", c->steps, &gpu_loss, &loss, 1, 1e-3);
}

static int check_backward(checker *k)
{
    ca_trainer *t = k->t;
    const ca_config *c = &t->model->config;
    size_t gates = t->model->gate_count;
    ca_cpu_loss_backward(&k->cpu, t->target);
    if (ca_gpu_download_dgrid(&t->gpu, k->values) ||
        compare("loss gradient", c->steps, k->values, k->cpu.dgrid, (size_t)c->channels * k->cpu.cells, 1e-3))
        return DLCA_ERR;
    if (submit(k, stage_zero_sums, 0)) return DLCA_ERR;
    memset(k->cpu.coeff_grad, 0, gates * 4 * sizeof(double));
    /* Grid gradients fade going back (checkerboard after one AdamW step: 3e-9 at step 4 of 20),
     * and there float32 keeps few digits of them; they are measured against a thousandth of
     * the loss gradient's scale at least, which is what they could still add to S. */
    size_t n_grid = (size_t)c->channels * k->cpu.cells;
    double grid_floor = 1e-3 * largest(k->cpu.dgrid, n_grid);
    for (int step = c->steps - 1; step >= 0; step--) {
        if (submit(k, stage_backward, step)) return DLCA_ERR;
        ca_cpu_step_backward(&k->cpu, step);
        if (ca_gpu_read_gate_values(&t->gpu, &t->gpu.coeff_grad, 4, k->values) ||
            compare("backward S", step, k->values, k->cpu.coeff_grad, gates * 4, 1e-3))
            return DLCA_ERR;
        if (ca_gpu_download_dgrid(&t->gpu, k->values) ||
            compare_floor("backward grid gradient", step, k->values, k->cpu.dgrid, n_grid, 1e-3, grid_floor))
            return DLCA_ERR;
    }
    if (submit(k, stage_logits, 0)) return DLCA_ERR;
    double *cpu = malloc(gates * 16 * sizeof(double));
    if (!cpu) return err_set(DLCA_ERR_NOMEM, "out of memory");
    ca_cpu_logits_gradient(&k->cpu, k->logits, cpu);
    int rc = ca_gpu_read_gate_values(&t->gpu, &t->gpu.dlogits, 16, k->values);
    if (!rc) rc = compare("logit gradient", 0, k->values, cpu, gates * 16, 1e-3);
    free(cpu);
    return rc;
}

/* AdamW on the GPU against the same update in double from the GPU's own gradient and moments. */
static int check_adamw(checker *k)
{
    ca_trainer *t = k->t;
    size_t n = t->model->gate_count * 16;
    float *m = malloc(n * sizeof(float)), *v = malloc(n * sizeof(float)), *grad = malloc(n * sizeof(float));
    float *after = malloc(n * sizeof(float));
    double *want = malloc(n * sizeof(double));
    int rc = m && v && grad && after && want ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory");
    if (!rc) rc = ca_gpu_download_gate_rows(&t->gpu, &t->gpu.moment1, 16, m);
    if (!rc) rc = ca_gpu_download_gate_rows(&t->gpu, &t->gpu.moment2, 16, v);
    if (!rc) rc = ca_gpu_download_gate_rows(&t->gpu, &t->gpu.dlogits, 16, grad);
    if (!rc) rc = submit(k, stage_adamw, 0);
    if (!rc) rc = ca_gpu_download_logits(&t->gpu, after);
    const ca_adamw *a = &t->adamw;
    double step = (double)t->step + 1.0;
    for (size_t i = 0; !rc && i < n; i++) {
        double g = fmax(-a->clip, fmin(a->clip, (double)grad[i]));
        double mi = a->beta1 * m[i] + (1.0 - a->beta1) * g, vi = a->beta2 * v[i] + (1.0 - a->beta2) * g * g;
        double p = k->logits[i] * (1.0 - (double)a->learning_rate * a->weight_decay);
        want[i] = p - a->learning_rate * (mi / (1.0 - pow(a->beta1, step))) /
                          (sqrt(vi / (1.0 - pow(a->beta2, step))) + a->eps);
        k->values[i] = after[i];
    }
    if (!rc) rc = compare("AdamW", 0, k->values, want, n, 1e-5);
    free(m), free(v), free(grad), free(after), free(want);
    return rc;
}

static int check_all(checker *k, int with_hard)
{
    ca_trainer *t = k->t;
    const ca_config *c = &t->model->config;
    ca_shape shape = {c->batch, c->height, c->width, c->boundary};
    size_t n_grid = (size_t)c->channels * k->cpu.cells;
    if (submit(k, stage_round, 0) || ca_round_inputs(c, shape, t->step, t->image, t->start, t->target)) return DLCA_ERR;
    memcpy(ca_cpu_grid(&k->cpu, 0), t->start, n_grid * sizeof(double));
    if (ca_gpu_download_grid(&t->gpu, 0, k->values) || compare("round start", 0, k->values, t->start, n_grid, 0.0))
        return DLCA_ERR;
    ca_cpu_set_fire_stream(&k->cpu, t->gpu.fire_stream);
    if (with_hard && check_rollout(k, 1)) return DLCA_ERR;
    if (check_rollout(k, 0) || check_backward(k)) return DLCA_ERR;
    ca_gpu_set_adamw_step(&t->gpu, &t->adamw, t->step + 1);
    return check_adamw(k);
}

int ca_gpu_check_step(ca_trainer *t, int with_hard)
{
    checker k = {.t = t};
    const ca_model *m = t->model;
    size_t n_values = m->gate_count * 16, block = (size_t)m->config.channels * t->gpu.plan.cells;
    float *logits = malloc(m->gate_count * 16 * sizeof(float));
    k.logits = malloc(m->gate_count * 16 * sizeof(double));
    k.values = malloc((n_values > block ? n_values : block) * sizeof(double));
    int rc = logits && k.logits && k.values ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for the stage check");
    if (!rc) rc = ca_gpu_download_logits(&t->gpu, logits);
    for (size_t i = 0; !rc && i < n_values; i++) k.logits[i] = logits[i];
    if (!rc) rc = ca_cpu_init(&k.cpu, m, m->config.batch, 0, 0);
    if (!rc) rc = check_all(&k, with_hard);
    ca_cpu_free(&k.cpu);
    free(logits), free(k.logits), free(k.values);
    return rc;
}
