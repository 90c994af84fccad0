/* ca_gpu_check.c: the GPU training step stage by stage against the CPU engine in double. The
 * stages run as tn's own submissions (tn_vk_sync after each) and the engine's CA steps one
 * submission each, so a wrong kernel is pinned to its stage and CA step. */
#include "ca_gpu_check.h"

#include "ca_task.h"
#include "error.h"
#include "gates.h"
#include "rng.h"
#include "tn_ops.h"
#include "tn_vk.h"
#include "vk_command.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The state a check needs: the CPU twin, the GPU step's tensors, scratch for downloads. */
typedef struct {
    ca_trainer *t;
    ca_cpu cpu;
    double *logits, *values, *want;
    tn_tensor *c, *out, *grad_out, *sums; /* GPU */
} checker;

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

/* A GPU tensor of gate rows ([gates][width], the engine's order) into k->values in the model's. */
static int read_gate_rows(checker *k, const tn_tensor *t, size_t width)
{
    double *engine = k->want;
    if (tn_read(t, engine)) return DLCA_ERR;
    ca_gpu_rows_to_model(&k->t->gpu, width, engine, k->values);
    return DLCA_OK;
}

/* One CA step of the engine, recorded and submitted on its own. */
static int engine_step(checker *k, int backward, int step)
{
    ca_gpu *e = &k->t->gpu;
    VkCommandBuffer cmd;
    if (vk_cmd_begin(k->t->vk, &cmd)) return DLCA_ERR;
    int rc = backward ? ca_gpu_step_backward(e, cmd, step) || ca_gpu_sums_finish(e, cmd) : ca_gpu_step_forward(e, cmd, step);
    if (rc) return vk_cmd_free(k->t->vk, cmd), DLCA_ERR;
    vk_cmd_barrier_to_host(cmd);
    return vk_cmd_finish(k->t->vk, cmd);
}

/* The round's start and target drawn on the GPU, against the CPU's. */
static int check_round(checker *k)
{
    ca_trainer *t = k->t;
    const ca_config *c = &t->model->config;
    ca_shape shape = {c->batch, c->height, c->width, c->boundary};
    size_t n_grid = (size_t)c->channels * k->cpu.cells;
    VkCommandBuffer cmd;
    if (vk_cmd_begin(t->vk, &cmd)) return DLCA_ERR;
    if (ca_gpu_task_round(&t->gpu, cmd, t->step)) return vk_cmd_free(t->vk, cmd), DLCA_ERR;
    if (vk_cmd_finish(t->vk, cmd) || ca_round_inputs(c, shape, t->step, t->image, t->start, t->target)) return DLCA_ERR;
    memcpy(ca_cpu_grid(&k->cpu, 0), t->start, n_grid * sizeof(double));
    ca_cpu_set_fire_stream(&k->cpu, rng_fire_stream(c->seed, t->step));
    ca_gpu_set_fire_stream(&t->gpu, rng_fire_stream(c->seed, t->step));
    return ca_gpu_download_grid(&t->gpu, 0, k->values) || compare("round start", 0, k->values, t->start, n_grid, 0.0);
}

/* The coefficients (tn on the GPU), the rollout a CA step at a time, the loss (tn on both). */
static int check_forward(checker *k, int hard, double *loss)
{
    ca_trainer *t = k->t;
    const ca_config *c = &t->model->config;
    size_t gates = t->model->gate_count, n_grid = (size_t)c->channels * k->cpu.cells;
    tn_tensor *onehot = hard ? tn_argmax_onehot(t->params.params[0]) : NULL;
    k->c = hard ? (onehot ? tn_matmul(onehot, t->op_matrix) : NULL) : tn_softmax_matmul(t->params.params[0], t->op_matrix);
    tn_free(onehot);
    vk_view coeffs;
    if (!k->c || tn_vk_sync(t->dev) || read_gate_rows(k, k->c, 4) || tn_vk_view(k->c, &coeffs) ||
        ca_gpu_bind(&t->gpu, &coeffs, NULL, NULL))
        return DLCA_ERR;
    ca_cpu_coefficients(&k->cpu, k->logits, hard);
    if (compare(hard ? "hard coefficients" : "coefficients", 0, k->values, k->cpu.coeffs, gates * 4, 1e-4)) return DLCA_ERR;
    for (int step = 0; step < t->gpu.steps; step++) {
        if (engine_step(k, 0, step)) return DLCA_ERR;
        ca_cpu_step_forward(&k->cpu, step);
        if (ca_gpu_download_grid(&t->gpu, step + 1, k->values) ||
            compare("forward grid", step, k->values, ca_cpu_grid(&k->cpu, step + 1), n_grid, hard ? 0.0 : 1e-3))
            return DLCA_ERR;
    }
    /* the loss channels of the final grid, as the rollout gives them (ca_rollout.h) */
    vk_view grid = ca_gpu_grid_region(&t->gpu, t->gpu.steps);
    size_t shape[2] = {(size_t)c->loss_channels, t->gpu.plan.pitch}, rows[2] = {(size_t)c->loss_channels, k->cpu.cells};
    size_t given = rows[0] * rows[1];
    tn_tensor *gpu_grid = tn_vk_wrap(t->dev, grid.buffer, grid.offset, 2, shape);
    k->out = gpu_grid ? tn_detach(gpu_grid) : NULL;
    tn_free(gpu_grid);
    if (!k->out || tn_set_requires_grad(k->out, 1)) return DLCA_ERR;
    tn_tensor *gpu_loss = ca_trainer_loss(k->out, t->target_rows);
    tn_tensor *cpu_out = tn_from_f64(TN_F64, 2, rows, ca_cpu_grid(&k->cpu, t->gpu.steps));
    if (cpu_out && tn_set_requires_grad(cpu_out, 1)) tn_free(cpu_out), cpu_out = NULL;
    tn_tensor *cpu_target = tn_from_f64(TN_F64, 2, rows, t->target);
    tn_tensor *cpu_loss = cpu_out && cpu_target ? ca_trainer_loss(cpu_out, cpu_target) : NULL;
    int rc = gpu_loss && cpu_loss ? DLCA_OK : DLCA_ERR;
    double gpu_value = rc ? 0.0 : tn_item(gpu_loss), cpu_value = rc ? 0.0 : tn_item(cpu_loss);
    if (!rc) rc = compare(hard ? "hard loss" : "loss", t->gpu.steps, &gpu_value, &cpu_value, 1, 1e-3);
    /* dL/dgrid_T on both: the GPU's for its BPTT (k->out's gradient), the CPU's into its engine */
    if (!rc && !hard) rc = tn_backward(gpu_loss) || tn_backward(cpu_loss);
    if (!rc && !hard) {
        k->grad_out = tn_retain(k->out->grad);
        rc = tn_read(cpu_out->grad, k->cpu.dgrid);
        memset(k->cpu.dgrid + given, 0, (n_grid - given) * sizeof(double));
    }
    *loss = cpu_value;
    tn_free(gpu_loss), tn_free(cpu_loss), tn_free(cpu_out), tn_free(cpu_target);
    return rc;
}

/* BPTT a CA step at a time: S and the grid gradient after each, then the logits gradient. */
static int check_backward(checker *k)
{
    ca_trainer *t = k->t;
    const ca_config *c = &t->model->config;
    size_t gates = t->model->gate_count, n_grid = (size_t)c->channels * k->cpu.cells, four[2] = {gates, 4};
    vk_view coeffs, rows, sums;
    VkCommandBuffer cmd;
    k->sums = tn_zeros_on(t->dev, TN_F32, 2, four);
    if (!k->sums || tn_vk_sync(t->dev) || tn_vk_view(k->c, &coeffs) || tn_vk_view(k->grad_out, &rows) ||
        tn_vk_view(k->sums, &sums) || ca_gpu_bind(&t->gpu, &coeffs, NULL, &sums))
        return DLCA_ERR;
    if (vk_cmd_begin(t->vk, &cmd)) return DLCA_ERR;
    if (ca_gpu_load_output_gradient(&t->gpu, cmd, rows, (uint32_t)c->loss_channels) || ca_gpu_sums_zero(&t->gpu, cmd))
        return vk_cmd_free(t->vk, cmd), DLCA_ERR;
    if (vk_cmd_finish(t->vk, cmd)) return DLCA_ERR;
    memset(k->cpu.coeff_grad, 0, gates * 4 * sizeof(double));
    /* Grid gradients fade going back (checkerboard after one AdamW step: 3e-9 at step 4 of 20),
     * and there float32 keeps few digits of them; they are measured against a thousandth of
     * the loss gradient's scale at least, which is what they could still add to S. */
    double grid_floor = 1e-3 * largest(k->cpu.dgrid, n_grid);
    for (int step = t->gpu.steps - 1; step >= 0; step--) {
        if (engine_step(k, 1, step)) return DLCA_ERR;
        ca_cpu_step_backward(&k->cpu, step);
        if (read_gate_rows(k, k->sums, 4) || compare("backward S", step, k->values, k->cpu.coeff_grad, gates * 4, 1e-3))
            return DLCA_ERR;
        if (ca_gpu_download_dgrid(&t->gpu, k->values) ||
            compare_floor("backward grid gradient", step, k->values, k->cpu.dgrid, n_grid, 1e-3, grid_floor))
            return DLCA_ERR;
    }
    tn_params_zero_grad(&t->params);
    if (tn_backward_grad(k->c, k->sums) || read_gate_rows(k, t->params.grads, 16)) return DLCA_ERR;
    for (size_t g = 0; g < gates; g++)
        gate_logits_backward(k->want + g * 16, k->logits + g * 16, k->cpu.coeff_grad + 4 * g);
    return compare("logit gradient", 0, k->values, k->want, gates * 16, 1e-3);
}

/* AdamW on the GPU against tn's AdamW on the CPU, in double, from the GPU's gradient and moments. */
static int check_adamw(checker *k)
{
    ca_trainer *t = k->t;
    size_t n = t->gate_values, shape[2] = {t->model->gate_count, 16};
    tn_params twin;
    tn_optim cpu = tn_optim_adamw(ca_trainer_learning_rate(t), t->optim.beta1, t->optim.beta2, t->optim.eps,
                                  t->optim.weight_decay);
    cpu.clip_value = t->optim.clip_value;
    int rc = tn_params_init(&twin, TN_F64);
    tn_tensor *z = rc ? NULL : tn_params_add(&twin, 2, shape);
    if (!z) rc = DLCA_ERR;
    double *grad = tn_params_grad(&twin);
    if (!rc) rc = tn_write(z, k->logits) || read_gate_rows(k, t->params.grads, 16);
    if (!rc) memcpy(grad, k->values, n * sizeof(double));
    if (!rc) rc = tn_optim_state_init(&cpu, &twin, (long)t->step);
    if (!rc) rc = read_gate_rows(k, t->optim.state[0], 16) || tn_write(cpu.state[0], k->values);
    if (!rc) rc = read_gate_rows(k, t->optim.state[1], 16) || tn_write(cpu.state[1], k->values);
    t->optim.lr = ca_trainer_learning_rate(t);
    if (!rc) rc = tn_optim_step(&cpu, &twin) || tn_optim_step(&t->optim, &t->params) || tn_vk_sync(t->dev);
    if (!rc) rc = read_gate_rows(k, t->params.params[0], 16) || tn_read(z, k->want);
    if (!rc) rc = compare("AdamW", 0, k->values, k->want, n, 1e-5);
    tn_optim_free(&cpu);
    tn_params_free(&twin);
    return rc;
}

static void checker_release(checker *k)
{
    tn_free(k->c), tn_free(k->out), tn_free(k->grad_out), tn_free(k->sums);
    k->c = k->out = k->grad_out = k->sums = NULL;
}

int ca_gpu_check_step(ca_trainer *t, double *soft_loss, double *hard_loss)
{
    checker k = {.t = t};
    const ca_model *m = t->model;
    size_t n = m->gate_count * 16 + 64, block = (size_t)m->config.channels * t->gpu.plan.pitch;
    k.logits = malloc(n * sizeof(double));
    k.values = malloc((n > block ? n : block) * sizeof(double));
    k.want = malloc((n > block ? n : block) * sizeof(double));
    int rc = k.logits && k.values && k.want ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for the stage check");
    if (!rc) rc = read_gate_rows(&k, t->params.params[0], 16);
    if (!rc) memcpy(k.logits, k.values, m->gate_count * 16 * sizeof(double));
    if (!rc) rc = ca_cpu_init(&k.cpu, m, m->config.batch, 0, 0) || ca_cpu_set_steps(&k.cpu, t->gpu.steps);
    if (!rc) rc = check_round(&k);
    if (!rc && hard_loss) rc = check_forward(&k, 1, hard_loss);
    checker_release(&k);
    if (!rc) rc = check_forward(&k, 0, soft_loss);
    if (!rc) rc = check_backward(&k);
    if (!rc) rc = check_adamw(&k);
    checker_release(&k);
    ca_gpu_bind(&t->gpu, NULL, NULL, NULL);
    ca_cpu_free(&k.cpu);
    free(k.logits), free(k.values), free(k.want);
    return rc;
}
