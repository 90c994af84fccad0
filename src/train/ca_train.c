/* ca_train.c: the trainer on the tensor library: its set-up, the CPU step, resume and sync (the
 * GPU step is ca_train_gpu.c). */
#include "ca_train.h"

#include "ca_exact.h"
#include "ca_task.h"
#include "error.h"
#include "gates.h"
#include "rng.h"
#include "tn_ops.h"
#include "tn_vk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* AdamW as the paper trains: beta2 0.99 matters; each gradient element clipped to [-100, 100]. */
enum { CA_CLIP = 100 };
static const double ca_beta1 = 0.9, ca_beta2 = 0.99, ca_eps = 1e-8;

int ca_round_inputs(const ca_config *c, ca_shape shape, uint64_t round, const double *image, double *start,
                    double *target)
{
    if (ca_task_start(c, shape, round, start)) return DLCA_ERR;
    return ca_task_target(c, shape, start, image, target);
}

tn_lr_schedule ca_lr_schedule_of(const ca_config *c)
{
    double lr = c->learning_rate, final = c->lr_final;
    long after = c->train_steps - c->warmup > 1 ? c->train_steps - c->warmup : 1;
    tn_lr_schedule s;
    switch (c->lr_schedule) {
    case CA_LR_STEP: s = tn_lr_step(lr, after / 3 > 0 ? after / 3 : 1, sqrt(final)); break;
    case CA_LR_EXP: s = tn_lr_exponential(lr, pow(final, 1.0 / (double)after)); break;
    case CA_LR_COSINE: s = tn_lr_cosine(lr, after, lr * final); break;
    /* from lr / 25 up to lr over 30% of the steps, then down to lr x lr_final */
    case CA_LR_ONECYCLE: s = tn_lr_one_cycle(lr, after, 0.3, 25.0, final > 0.0 ? 1.0 / (25.0 * final) : 1e4); break;
    default: s = tn_lr_constant(lr); break;
    }
    return c->warmup > 0 ? tn_lr_with_warmup(s, c->warmup) : s;
}

double ca_trainer_learning_rate(const ca_trainer *t)
{
    tn_lr_schedule s = ca_lr_schedule_of(&t->model->config);
    return tn_lr_at(&s, (long)t->step);
}

/* The logits (or moments) of the model, [gates][16] floats in its gate order, into tensor `to`
 * (z or an AdamW moment), in the engine's order on the GPU. */
static int write_gate_rows(ca_trainer *t, tn_tensor *to, const float *from)
{
    size_t n = t->gate_values, numel = tn_numel(to);
    double *model = t->scratch, *engine = t->scratch + numel;
    memset(model, 0, numel * sizeof(double));
    for (size_t i = 0; i < n; i++) model[i] = from[i];
    if (t->backend != CA_BACKEND_GPU) return tn_write(to, model);
    memset(engine, 0, numel * sizeof(double));
    ca_gpu_rows_to_engine(&t->gpu, GATE_OP_COUNT, model, engine);
    return tn_write(to, engine);
}

/* The inverse of write_gate_rows. */
static int read_gate_rows(ca_trainer *t, const tn_tensor *from, float *to)
{
    size_t numel = tn_numel(from);
    double *engine = t->scratch, *model = t->scratch + numel;
    if (tn_read(from, engine)) return DLCA_ERR;
    if (t->backend == CA_BACKEND_GPU) ca_gpu_rows_to_model(&t->gpu, GATE_OP_COUNT, engine, model);
    else model = engine;
    for (size_t i = 0; i < t->gate_values; i++) to[i] = (float)model[i];
    return DLCA_OK;
}

/* The fast engine keeps no activations: backward recomputes each step from its grid. */
static int cpu_engine_init(ca_trainer *t)
{
    const ca_config *c = &t->model->config;
    const ca_fast_options options = {.cache = 0, .threads = t->options.cpu_threads};
    if (t->options.cpu_reference) {
        t->rollout.cpu = &t->cpu;
        return ca_cpu_init(&t->cpu, t->model, c->batch, 0, 0);
    }
    t->rollout.fast = &t->fast;
    return ca_fast_init(&t->fast, t->model, c->batch, 0, 0, &options);
}

/* The GPU engine, tn's device on the same context, and the engine's buffers tn reads. */
static int gpu_engine_init(ca_trainer *t)
{
    const ca_config *c = &t->model->config;
    if (ca_gpu_init(&t->gpu, t->vk, t->model, c->batch, 0, 0, &t->options.gpu)) return DLCA_ERR;
    if (t->image && ca_gpu_upload_image(&t->gpu, t->image)) return DLCA_ERR;
    if (tn_vk_open(&t->dev, t->vk, NULL)) return DLCA_ERR;
    vk_view target = ca_gpu_target_region(&t->gpu);
    size_t rows[2] = {(size_t)c->loss_channels, t->gpu.plan.pitch}, words = CA_GPU_ROLL_WORDS;
    t->target_rows = tn_vk_wrap(t->dev, target.buffer, target.offset, 2, rows);
    t->roll_words = tn_vk_wrap(t->dev, &t->gpu.roll, 0, 1, &words);
    t->rollout.gpu = &t->gpu, t->rollout.dev = t->dev;
    if (c->pool) {
        /* A pool's target is every round's (ca_config_check: not Life's, the one target that
         * depends on the start): uploaded once; the starts come from the host each round. */
        ca_shape shape = {c->batch, c->height, c->width, c->boundary};
        if (vk_buffer_create(t->vk, &t->pool_grid, (size_t)c->channels * t->gpu.plan.pitch * sizeof(float),
                             VK_BUFFER_STAGING) ||
            ca_round_inputs(c, shape, 0, t->image, t->start, t->target) || ca_gpu_upload_target(&t->gpu, t->target))
            return DLCA_ERR;
    }
    return t->target_rows && t->roll_words ? DLCA_OK : DLCA_ERR;
}

/* A window loss's room: on the CPU the rollout's rows and the repeated target; on the GPU their
 * buffers (the engine made first: the pitch is its). */
static int window_init(ca_trainer *t)
{
    const ca_config *c = &t->model->config;
    size_t grids = (size_t)c->window + 1, cells = (size_t)c->batch * (size_t)c->height * (size_t)c->width;
    size_t n = grids * (size_t)c->loss_channels * cells;
    if (t->backend == CA_BACKEND_GPU) {
        size_t bytes = grids * (size_t)c->loss_channels * t->gpu.plan.pitch * sizeof(float);
        if (vk_buffer_create(t->vk, &t->window_rows, bytes, VK_BUFFER_DEVICE) ||
            vk_buffer_create(t->vk, &t->window_target_rows, bytes, VK_BUFFER_DEVICE))
            return DLCA_ERR;
        t->rollout.window_rows = &t->window_rows;
        return DLCA_OK;
    }
    t->window_target = malloc(n * sizeof(double));
    t->rollout.window = malloc(n * sizeof(double));
    t->rollout.window_f = malloc(n * sizeof(float));
    if (!t->window_target || !t->rollout.window || !t->rollout.window_f)
        return err_set(DLCA_ERR_NOMEM, "out of memory for a window loss over %zu grids of %zu cells", grids, cells);
    return DLCA_OK;
}

/* Room for two snapshots of z and the moments, on the engine's device, made once: a step that
 * records a copy into them allocates nothing. */
static int snapshots_init(ca_trainer *t)
{
    const tn_tensor *z = t->params.params[0], *m = t->optim.state[0]; /* the moments are flat */
    ca_snapshot *both[2] = {&t->measured, &t->kept};
    for (int i = 0; i < 2; i++) {
        ca_snapshot *s = both[i];
        s->z = tn_zeros_on(t->dev, TN_F32, z->ndim, z->shape);
        s->moment1 = tn_zeros_on(t->dev, TN_F32, m->ndim, m->shape);
        s->moment2 = tn_zeros_on(t->dev, TN_F32, m->ndim, m->shape);
        if (!s->z || !s->moment1 || !s->moment2) return DLCA_ERR;
    }
    return DLCA_OK;
}

static void snapshot_free(ca_snapshot *s) { tn_free(s->z), tn_free(s->moment1), tn_free(s->moment2); }

int ca_trainer_snapshot(ca_trainer *t)
{
    ca_snapshot *s = &t->measured;
    s->step = t->step + 1;
    return tn_assign(s->z, t->params.params[0]) || tn_assign(s->moment1, t->optim.state[0]) ||
                   tn_assign(s->moment2, t->optim.state[1])
               ? DLCA_ERR
               : DLCA_OK;
}

int ca_trainer_hard_reusable(const ca_trainer *t) { return t->measured_ops && !t->ops_changed; }

void ca_trainer_measured_ops(ca_trainer *t, tn_tensor *onehot)
{
    tn_free(t->measured_ops);
    t->measured_ops = onehot && t->same_round ? tn_retain(onehot) : NULL;
    t->ops_changed = !t->measured_ops;
}

int ca_trainer_ops_diff(ca_trainer *t, tn_tensor *onehot, tn_tensor **diff)
{
    *diff = NULL;
    if (!t->same_round || !t->measured_ops) return DLCA_OK;
    tn_no_grad_begin();
    tn_tensor *ops = onehot ? tn_retain(onehot) : tn_argmax_onehot(t->params.params[0]);
    *diff = ops ? tn_sse_loss(ops, t->measured_ops) : NULL; /* an exact count of 0s and 1s */
    tn_no_grad_end();
    tn_free(ops);
    return *diff ? DLCA_OK : DLCA_ERR;
}

/* z is written from the model's logits: what was measured says nothing about its ops. */
static int write_z(ca_trainer *t)
{
    ca_trainer_measured_ops(t, NULL);
    t->ops_host_valid = 0;
    return write_gate_rows(t, t->params.params[0], t->model->logits);
}

void ca_trainer_keep_measured(ca_trainer *t)
{
    ca_snapshot kept = t->kept;
    t->kept = t->measured, t->measured = kept;
}

int ca_trainer_read_snapshot(ca_trainer *t, const ca_snapshot *s, float *logits, float *moment1, float *moment2)
{
    if (logits && read_gate_rows(t, s->z, logits)) return DLCA_ERR;
    if (moment1 && read_gate_rows(t, s->moment1, moment1)) return DLCA_ERR;
    return moment2 ? read_gate_rows(t, s->moment2, moment2) : DLCA_OK;
}

int ca_trainer_set_kept(ca_trainer *t, uint64_t step, const float *logits, const float *moment1, const float *moment2)
{
    t->kept.step = step;
    return write_gate_rows(t, t->kept.z, logits) || write_gate_rows(t, t->kept.moment1, moment1) ||
                   write_gate_rows(t, t->kept.moment2, moment2)
               ? DLCA_ERR
               : DLCA_OK;
}

/* z [gates][16] and M [16][4] on the engine's device, AdamW's state beside z. */
static int tensors_init(ca_trainer *t)
{
    size_t z_shape[2] = {t->model->gate_count, GATE_OP_COUNT}, m_shape[2] = {GATE_OP_COUNT, GATE_COEFFS};
    double m[GATE_OP_COUNT * GATE_COEFFS];
    for (int i = 0; i < GATE_OP_COUNT; i++)
        for (int k = 0; k < GATE_COEFFS; k++) m[i * GATE_COEFFS + k] = gate_op_matrix[i][k];
    if (tn_params_init(&t->params, TN_F32)) return DLCA_ERR;
    t->params.align = 64; /* an engine may bind it by itself (tn_vk_view) */
    tn_tensor *z = tn_params_add(&t->params, 2, z_shape);
    tn_tensor *m_cpu = tn_from_f64(TN_F32, 2, m_shape, m);
    if (!z || !m_cpu) return tn_free(m_cpu), DLCA_ERR;
    t->op_matrix = t->dev ? tn_to_device(m_cpu, t->dev) : tn_retain(m_cpu);
    tn_tensor *one = tn_scalar(TN_F32, 1.0);
    t->loss_seed = one && t->dev ? tn_to_device(one, t->dev) : tn_retain(one);
    tn_free(m_cpu), tn_free(one);
    if (!t->op_matrix || !t->loss_seed || (t->dev && tn_params_to_device(&t->params, t->dev))) return DLCA_ERR;
    const ca_config *c = &t->model->config;
    t->optim = tn_optim_adamw(c->learning_rate, ca_beta1, ca_beta2, ca_eps, c->weight_decay);
    t->optim.clip_value = CA_CLIP;
    t->optim.skip_nonfinite = 1;
    t->optim.state_dtype = TN_F32; /* as the model file keeps the moments */
    if (t->roll_words) t->optim.skip_flag = t->roll_words, t->optim.skip_mask = CA_GPU_ROLL_CLOSED;
    if (tn_optim_state_init(&t->optim, &t->params, 0)) return DLCA_ERR;
    if (snapshots_init(t)) return DLCA_ERR;
    return write_z(t);
}

int ca_trainer_init(ca_trainer *t, ca_model *model, const double *image, ca_backend backend, vk_context *vk,
                    const ca_options *options)
{
    const ca_config *c = &model->config;
    memset(t, 0, sizeof *t);
    if (options) t->options = *options;
    t->model = model, t->backend = backend, t->image = image, t->vk = vk;
    t->gate_values = model->gate_count * GATE_OP_COUNT;
    if (c->target == CA_TARGET_IMAGE && !image)
        return err_set(DLCA_ERR, "preset '%s' trains towards a picture: give --target PNG", c->preset);
    if (c->pool && t->options.check_stages)
        return err_set(DLCA_ERR, "--check-stages compares the GPU's own round draws with the CPU's: not with a pool");
    if (c->window_loss == CA_WINDOW_LOSS_EVERY && t->options.check_stages)
        return err_set(DLCA_ERR, "--check-stages compares the final grid's loss: not with window-loss = every");
    size_t cells = (size_t)c->batch * (size_t)c->height * (size_t)c->width, grid = (size_t)c->channels * cells;
    size_t room = 2 * (t->gate_values + 64) > grid ? 2 * (t->gate_values + 64) : grid;
    t->moment1 = calloc(t->gate_values, sizeof(float));
    t->moment2 = calloc(t->gate_values, sizeof(float));
    t->start = malloc(grid * sizeof(double));
    t->target = malloc((size_t)c->loss_channels * cells * sizeof(double));
    t->scratch = malloc(room * sizeof(double));
    t->rollout.scratch = t->scratch;
    if (!t->moment1 || !t->moment2 || !t->start || !t->target || !t->scratch) {
        ca_trainer_free(t);
        double mib = (double)(c->channels + c->loss_channels) * (double)cells * sizeof(double) / (1024.0 * 1024.0);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the trainer: %.0f MiB for a batch of %d grids of %dx%d", mib,
                       c->batch, c->height, c->width);
    }
    int rc = c->pool ? ca_pool_init(&t->pool, c) : DLCA_OK;
    if (!rc) rc = backend == CA_BACKEND_GPU ? gpu_engine_init(t) : cpu_engine_init(t);
    if (!rc && c->window_loss == CA_WINDOW_LOSS_EVERY) rc = window_init(t);
    if (!rc) rc = tensors_init(t);
    t->same_round = ca_exact_one_rollout(c) && !c->pool && !c->window && !t->options.hard_rollout_always;
    if (!rc && backend == CA_BACKEND_GPU) rc = ca_trainer_gpu_hard_host_init(t);
    if (rc) ca_trainer_free(t);
    return rc;
}

void ca_trainer_free(ca_trainer *t)
{
    snapshot_free(&t->measured), snapshot_free(&t->kept);
    tn_free(t->measured_ops);
    ca_hard_host_free(&t->hard_host);
    free(t->host_ops);
    tn_free(t->ops_host_rows), tn_free(t->op_index);
    if (t->ops_host.buffer) vk_buffer_free(t->vk, &t->ops_host);
    tn_optim_free(&t->optim);
    tn_params_free(&t->params);
    tn_free(t->op_matrix), tn_free(t->loss_seed), tn_free(t->target_rows), tn_free(t->roll_words);
    if (t->pool_grid.buffer) vk_buffer_free(t->vk, &t->pool_grid);
    if (t->window_rows.buffer) vk_buffer_free(t->vk, &t->window_rows);
    if (t->window_target_rows.buffer) vk_buffer_free(t->vk, &t->window_target_rows);
    free(t->window_target), free(t->rollout.window), free(t->rollout.window_f);
    if (t->dev) tn_vk_close(t->dev);
    free(t->moment1), free(t->moment2), free(t->start), free(t->target), free(t->scratch);
    ca_pool_free(&t->pool);
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
    tn_optim_free(&t->optim);
    if (tn_optim_state_init(&t->optim, &t->params, (long)step)) return DLCA_ERR;
    t->optim.step = (long)step;
    return write_gate_rows(t, t->optim.state[0], moment1) || write_gate_rows(t, t->optim.state[1], moment2)
               ? DLCA_ERR
               : write_z(t);
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
    return changed ? write_z(t) : DLCA_OK;
}

/* The CPU engine's start grid for the round. */
static void cpu_start(ca_trainer *t)
{
    size_t n = (size_t)t->model->config.channels * (t->options.cpu_reference ? t->cpu.cells : t->fast.cells);
    if (t->options.cpu_reference) {
        memcpy(ca_cpu_grid(&t->cpu, 0), t->start, n * sizeof(double));
        return;
    }
    float *grid = ca_fast_grid(&t->fast, 0);
    for (size_t i = 0; i < n; i++) grid[i] = (float)t->start[i];
}

tn_tensor *ca_trainer_loss(tn_tensor *out, tn_tensor *target) { return tn_sse_loss(out, target); }

tn_tensor *ca_trainer_round_loss(const ca_trainer *t, tn_tensor *out, tn_tensor *target)
{
    tn_tensor *sse = ca_trainer_loss(out, target);
    if (!sse || t->rollout.window_steps == 0) return sse;
    tn_tensor *mean = tn_mul_scalar(sse, 1.0 / (t->rollout.window_steps + 1));
    tn_free(sse);
    return mean;
}

double ca_trainer_round_hard(const ca_trainer *t, double wrong_bits)
{
    return wrong_bits / (double)(t->rollout.window_steps + 1);
}

/* The CPU's target tensor for the round: its target, once a grid of the window. */
static tn_tensor *cpu_round_target(ca_trainer *t)
{
    const ca_config *c = &t->model->config;
    size_t cells = (size_t)c->batch * (size_t)c->height * (size_t)c->width, block = (size_t)c->loss_channels * cells;
    size_t grids = (size_t)t->rollout.window_steps + 1, rows[2] = {(size_t)c->loss_channels * grids, cells};
    if (grids == 1) return tn_from_f64(TN_F32, 2, rows, t->target);
    for (size_t k = 0; k < grids; k++) memcpy(t->window_target + k * block, t->target, block * sizeof(double));
    return tn_from_f64(TN_F32, 2, rows, t->window_target);
}

/* The hard circuit's loss on the round: argmax gates, no gradient; or the last one's, where
 * ca_trainer_hard_reusable says it is the same. */
static int cpu_hard_loss(ca_trainer *t, tn_tensor *target, double *hard_loss)
{
    if (ca_trainer_hard_reusable(t)) {
        *hard_loss = t->measured_hard;
        t->hard_reused++;
        return DLCA_OK;
    }
    tn_no_grad_begin();
    tn_tensor *onehot = tn_argmax_onehot(t->params.params[0]);
    tn_tensor *c = onehot ? tn_matmul(onehot, t->op_matrix) : NULL;
    tn_tensor *out = c ? ca_rollout_apply(&t->rollout, c) : NULL;
    tn_tensor *loss = out ? ca_trainer_loss(out, target) : NULL;
    tn_no_grad_end();
    if (loss) *hard_loss = t->measured_hard = ca_trainer_round_hard(t, tn_item(loss));
    if (loss) ca_trainer_measured_ops(t, onehot);
    tn_free(loss), tn_free(out), tn_free(c), tn_free(onehot);
    return loss ? DLCA_OK : DLCA_ERR;
}

/* Whether the optimizer's step changed an op of the measured circuit (ca_trainer_ops_diff). */
static int cpu_ops_changed(ca_trainer *t)
{
    tn_tensor *diff;
    int rc = ca_trainer_ops_diff(t, NULL, &diff);
    if (diff) t->ops_changed = tn_item(diff) != 0.0;
    tn_free(diff);
    return rc;
}

/* The soft rollout, its loss and gradient; then AdamW, unless the gradient or loss is not finite. */
static int cpu_soft_step(ca_trainer *t, tn_tensor *target, double *soft_loss)
{
    tn_tensor *c = tn_softmax_matmul(t->params.params[0], t->op_matrix);
    tn_tensor *out = c ? ca_rollout_apply(&t->rollout, c) : NULL;
    tn_tensor *loss = out ? ca_trainer_round_loss(t, out, target) : NULL;
    int rc = loss ? DLCA_OK : DLCA_ERR;
    if (!rc) {
        *soft_loss = tn_item(loss);
        tn_params_grad_replace(&t->params); /* z gets a gradient every step */
        rc = tn_backward_grad(loss, t->loss_seed);
    }
    tn_free(loss), tn_free(out), tn_free(c);
    if (rc) return rc;
    const float *grad = tn_params_grad(&t->params);
    for (size_t i = 0; i < t->gate_values; i++)
        if (!isfinite(grad[i])) return ca_trainer_nonfinite(t, "gradient");
    if (!isfinite(*soft_loss)) return ca_trainer_nonfinite(t, "loss");
    t->optim.lr = ca_trainer_learning_rate(t);
    return tn_optim_step(&t->optim, &t->params);
}

/* The engine's final grid into the round's pool slots (ca_pool.h). */
static void cpu_store_pool(ca_trainer *t)
{
    if (!t->pool.grids) return;
    if (t->options.cpu_reference) ca_pool_store(&t->pool, ca_cpu_grid(&t->cpu, t->cpu.steps));
    else ca_pool_store_f32(&t->pool, ca_fast_grid(&t->fast, t->fast.steps), t->fast.cells);
}

static int cpu_step(ca_trainer *t, double *soft_loss, double *hard_loss)
{
    const ca_config *c = &t->model->config;
    uint32_t stream = rng_fire_stream(c->seed, t->step);
    if (t->options.cpu_reference)
        ca_cpu_set_fire_stream(&t->cpu, stream);
    else
        ca_fast_set_fire_stream(&t->fast, stream);
    cpu_start(t);
    tn_tensor *target = cpu_round_target(t);
    int rc = target ? DLCA_OK : DLCA_ERR;
    if (!rc && hard_loss) rc = cpu_hard_loss(t, target, hard_loss) || ca_trainer_snapshot(t);
    if (!rc && hard_loss) cpu_store_pool(t); /* the hard circuit's final grids */
    if (!rc) rc = cpu_soft_step(t, target, soft_loss);
    if (!rc) rc = cpu_ops_changed(t);
    tn_free(target);
    if (!rc && !hard_loss) cpu_store_pool(t); /* the soft rollout's */
    return rc;
}

int ca_trainer_round(ca_trainer *t)
{
    const ca_config *c = &t->model->config;
    ca_shape shape = {c->batch, c->height, c->width, c->boundary};
    int from_pool = 0, steps = ca_task_round_steps(c, t->step, &from_pool);
    int rc = t->backend == CA_BACKEND_GPU ? ca_gpu_set_steps(&t->gpu, steps)
             : t->options.cpu_reference  ? ca_cpu_set_steps(&t->cpu, steps)
                                         : ca_fast_set_steps(&t->fast, steps);
    /* Without a pool the GPU draws the round itself (ca_gpu_task_round): nothing to make here. */
    int on_host = t->backend == CA_BACKEND_CPU || t->pool.grids;
    if (!rc && on_host) rc = ca_round_inputs(c, shape, t->step, t->image, t->start, t->target);
    if (!rc && t->pool.grids) rc = ca_pool_round(&t->pool, t->step, from_pool, t->target, t->start);
    t->rollout.window_steps = c->window_loss == CA_WINDOW_LOSS_EVERY ? steps - c->steps : 0;
    return rc;
}

int ca_trainer_step(ca_trainer *t, double *soft_loss, double *hard_loss)
{
    if (before_step(t) || ca_trainer_round(t)) return DLCA_ERR;
    int rc = t->backend == CA_BACKEND_GPU ? ca_trainer_gpu_step(t, soft_loss, hard_loss) : cpu_step(t, soft_loss, hard_loss);
    if (!rc) t->step++;
    return rc;
}

int ca_trainer_step_record(ca_trainer *t, VkCommandBuffer cmd, int with_hard, ca_step_results *r)
{
    memset(r, 0, sizeof *r);
    return before_step(t) || ca_trainer_round(t) ? DLCA_ERR : ca_trainer_gpu_record(t, cmd, with_hard, r);
}

int ca_trainer_step_finish(ca_trainer *t, int submitted, ca_step_results *r, double *soft_loss, double *hard_loss)
{
    int rc = ca_trainer_gpu_finish(t, submitted, r, soft_loss, hard_loss);
    if (!rc) t->step++;
    return rc;
}

int ca_trainer_sync(ca_trainer *t)
{
    return read_gate_rows(t, t->params.params[0], t->model->logits) ||
                   read_gate_rows(t, t->optim.state[0], t->moment1) || read_gate_rows(t, t->optim.state[1], t->moment2)
               ? DLCA_ERR
               : DLCA_OK;
}
