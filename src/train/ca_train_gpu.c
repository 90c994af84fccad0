/* ca_train_gpu.c: the training step on the GPU. One command buffer, one submission: the engine
 * draws the round's start and target; optionally the hard circuit's rollout and loss; the soft
 * rollout, its loss and BPTT; AdamW. tn records its ops into the same command buffer
 * (tn_vk_record_begin), the engine its kernels between them (ca_rollout.c). The losses and
 * AdamW's status land in host-visible memory, read once the fence signals. */
#include "ca_train.h"

#include "ca_gpu_check.h"
#include "error.h"
#include "gates.h"
#include "rng.h"
#include "tn_ops.h"
#include "tn_vk.h"
#include "vk_command.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ca_trainer_gpu_hard_host_init(ca_trainer *t)
{
    const ca_config *c = &t->model->config;
    if (c->pool || c->window || t->options.check_stages || t->options.hard_on_host == CA_GPU_OFF) return DLCA_OK;
    double evals = (double)t->gpu.step_rows * (double)t->gpu.plan.cells * (double)c->steps;
    if (t->options.hard_on_host != CA_GPU_ON && evals < CA_HARD_HOST_MIN_EVALS) return DLCA_OK;
    size_t gates = t->model->gate_count, rows[2] = {gates, 1}, index_shape[2] = {GATE_OP_COUNT, 1};
    double index[GATE_OP_COUNT];
    for (int i = 0; i < GATE_OP_COUNT; i++) index[i] = i;
    t->host_ops = malloc(gates);
    if (!t->host_ops) return err_set(DLCA_ERR_NOMEM, "out of memory for the host's hard circuit");
    if (vk_buffer_create(t->vk, &t->ops_host, gates * sizeof(float), VK_BUFFER_STAGING)) return DLCA_ERR;
    t->ops_host_rows = tn_vk_wrap(t->dev, &t->ops_host, 0, 2, rows);
    tn_tensor *index_cpu = tn_from_f64(TN_F32, 2, index_shape, index);
    t->op_index = index_cpu ? tn_to_device(index_cpu, t->dev) : NULL;
    tn_free(index_cpu);
    if (!t->ops_host_rows || !t->op_index || ca_hard_host_init(&t->hard_host, t->model, t->image)) return DLCA_ERR;
    t->hard_on_host = 1;
    return DLCA_OK;
}

/* After the optimizer's step: z's ops into ops_host, for the next step's hard loss on the host;
 * *onehot their one-hot (NULL where the run does not measure on the host), which the comparison
 * with the measured circuit reads too (ca_trainer_ops_diff). */
static int record_ops_to_host(ca_trainer *t, tn_tensor **onehot)
{
    *onehot = NULL;
    if (!t->hard_on_host) return DLCA_OK;
    tn_no_grad_begin();
    *onehot = tn_argmax_onehot(t->params.params[0]);
    tn_tensor *ops = *onehot ? tn_matmul(*onehot, t->op_index) : NULL; /* exact: one 1 times k a row */
    int rc = ops ? tn_assign(t->ops_host_rows, ops) : DLCA_ERR;
    tn_no_grad_end();
    tn_free(ops);
    return rc;
}

/* The circuit in ops_host (z's ops, the last step wrote them) measured on the host while the GPU
 * runs the step; where same_round, its one-hot becomes measured_ops as a GPU rollout's would. */
static int start_hard_on_host(ca_trainer *t, ca_step_results *r)
{
    const float *ops = t->ops_host.mapped;
    for (size_t g = 0; g < t->model->gate_count; g++) {
        float op = ops[t->gpu.gate_row[g]];
        if (!(op >= 0.0f && op < (float)GATE_OP_COUNT))
            return err_set(DLCA_ERR, "the GPU's ops of step %llu: gate %zu has op %g", (unsigned long long)t->step, g,
                           (double)op);
        t->host_ops[g] = (uint8_t)op;
    }
    if (ca_hard_host_start(&t->hard_host, t->host_ops, t->step)) return DLCA_ERR;
    r->hard_on_host = 1;
    if (t->same_round) {
        tn_no_grad_begin();
        tn_tensor *onehot = tn_argmax_onehot(t->params.params[0]);
        tn_no_grad_end();
        if (!onehot) return DLCA_ERR;
        ca_trainer_measured_ops(t, onehot);
        tn_free(onehot);
    }
    return ca_trainer_snapshot(t);
}

/* The hard circuit's loss: the last one's where ca_trainer_hard_reusable says it is the same;
 * on the host where ops_host holds the circuit (start_hard_on_host); else its rollout here,
 * argmax gates, no gradient. Then the snapshot of the state the step starts from
 * (ca_trainer_snapshot). What the persistent forward polls is cleared first, without a barrier:
 * the next tn op's covers it. */
static int record_hard(ca_trainer *t, VkCommandBuffer cmd, ca_step_results *r)
{
    if (ca_trainer_hard_reusable(t)) { /* the circuit measured last, on the same round */
        r->hard_reused = 1;
        return ca_trainer_snapshot(t);
    }
    if (t->ops_host_valid) return start_hard_on_host(t, r);
    if (ca_gpu_clear_persistent(&t->gpu, cmd, 1, 0)) return DLCA_ERR;
    tn_no_grad_begin();
    tn_tensor *onehot = tn_argmax_onehot(t->params.params[0]);
    tn_tensor *c = onehot ? tn_matmul(onehot, t->op_matrix) : NULL;
    tn_tensor *out = c ? ca_rollout_apply(&t->rollout, c) : NULL;
    r->hard_loss = out ? ca_trainer_loss(out, r->target) : NULL;
    tn_no_grad_end();
    /* a persistent forward that gave up here makes AdamW skip the step too, which then runs again */
    ca_gpu_keep_forward_roll(&t->gpu, cmd);
    if (r->hard_loss) ca_trainer_measured_ops(t, onehot);
    tn_free(out), tn_free(c), tn_free(onehot);
    return r->hard_loss ? ca_trainer_snapshot(t) : DLCA_ERR;
}

/* The soft rollout, its loss, BPTT into z's gradient, and AdamW (skipped by tn when the gradient
 * is not finite or a persistent kernel gave up: its roll words are the optimizer's skip flag). */
static int record_soft(ca_trainer *t, VkCommandBuffer cmd, ca_step_results *r)
{
    if (ca_gpu_clear_persistent(&t->gpu, cmd, 1, 1)) return DLCA_ERR;
    tn_tensor *c = tn_softmax_matmul(t->params.params[0], t->op_matrix);
    tn_tensor *out = c ? ca_rollout_apply(&t->rollout, c) : NULL;
    r->soft_loss = out ? ca_trainer_round_loss(t, out, r->target) : NULL;
    tn_params_grad_replace(&t->params); /* z gets a gradient every step */
    int rc = r->soft_loss ? tn_backward_grad(r->soft_loss, t->loss_seed) : DLCA_ERR;
    tn_free(out), tn_free(c);
    if (rc) return rc;
    t->optim.lr = ca_trainer_learning_rate(t);
    if (tn_optim_step(&t->optim, &t->params) || ca_gpu_timestamp(&t->gpu, cmd, CA_GPU_MARK_END)) return DLCA_ERR;
    tn_tensor *onehot;
    rc = record_ops_to_host(t, &onehot);
    if (!rc) rc = ca_trainer_ops_diff(t, onehot, &r->ops_diff);
    tn_free(onehot);
    return rc;
}

/* The round's target tensor: the engine's target rows, or with a window loss their copies into
 * window_target_rows, once a grid of the window (after the round's target is drawn). */
static int record_target(ca_trainer *t, VkCommandBuffer cmd, ca_step_results *r)
{
    int grids = t->rollout.window_steps + 1;
    if (grids == 1) {
        r->target = tn_retain(t->target_rows);
        return DLCA_OK;
    }
    vk_view target = ca_gpu_target_region(&t->gpu);
    vk_cmd_barrier_compute_to_transfer(cmd);
    for (int k = 0; k < grids; k++) {
        VkBufferCopy region = {target.offset, (size_t)k * target.size, target.size};
        vkCmdCopyBuffer(cmd, target.buffer->buffer, t->window_target_rows.buffer, 1, &region);
    }
    vk_cmd_barrier_transfer_to_compute(cmd);
    size_t rows[2] = {(size_t)t->model->config.loss_channels * (size_t)grids, t->gpu.plan.pitch};
    r->target = tn_vk_wrap(t->dev, &t->window_target_rows, 0, 2, rows);
    return r->target ? DLCA_OK : DLCA_ERR;
}

static int record_step(ca_trainer *t, VkCommandBuffer cmd, int with_hard, ca_step_results *r)
{
    /* A pool's starts come from the host (ca_trainer_round), ahead of the step's submission; its
     * target is uploaded once (ca_trainer_init). */
    if (t->pool.grids && ca_gpu_upload_grid(&t->gpu, 0, t->start)) return DLCA_ERR;
    if (tn_vk_record_begin(t->dev, cmd)) return DLCA_ERR;
    int rc = ca_gpu_timestamp(&t->gpu, cmd, CA_GPU_MARK_START);
    if (!rc && !t->pool.grids) rc = ca_gpu_task_round(&t->gpu, cmd, t->step);
    if (!rc) rc = record_target(t, cmd, r);
    /* Every start is bits (the pool keeps bits), so the hard rollout starts from the same grid 0. */
    if (!rc && with_hard) rc = record_hard(t, cmd, r);
    /* a persistence round's pool keeps the hard circuit's final grids where the step measured
     * them, else the soft's; a growth round stores none (ca_pool.h), so copies none */
    int keep = t->pool.grids && t->pool.from_pool;
    if (!rc && with_hard && keep) rc = ca_gpu_grid_to_host(&t->gpu, cmd, t->gpu.steps, &t->pool_grid);
    if (!rc) rc = record_soft(t, cmd, r);
    if (!rc && !with_hard && keep) rc = ca_gpu_grid_to_host(&t->gpu, cmd, t->gpu.steps, &t->pool_grid);
    if (!rc) ca_gpu_roll_to_host(&t->gpu, cmd);
    int end = tn_vk_record_end(t->dev);
    return rc ? rc : end;
}

int ca_trainer_gpu_record(ca_trainer *t, VkCommandBuffer cmd, int with_hard, ca_step_results *r)
{
    ca_gpu_set_fire_stream(&t->gpu, rng_fire_stream(t->model->config.seed, t->step));
    return record_step(t, cmd, with_hard, r);
}

/* Submits the step and waits; tn may reuse what the step released once it ran. */
static int run_step(ca_trainer *t, int with_hard, ca_step_results *r)
{
    VkCommandBuffer cmd;
    if (vk_cmd_begin(t->vk, &cmd)) return DLCA_ERR;
    int rc = ca_trainer_gpu_record(t, cmd, with_hard, r);
    if (rc) {
        vk_cmd_free(t->vk, cmd);
        tn_vk_retire(t->dev);
        return rc;
    }
    rc = vk_cmd_finish(t->vk, cmd);
    int retired = tn_vk_retire(t->dev);
    return rc ? rc : retired;
}

/* The losses and AdamW's status of a step that ran (rc: how its recording and submission went). */
static int read_step(ca_trainer *t, int rc, ca_step_results *r, double *soft_loss, double *hard_loss)
{
    double host_wrong = 0.0;
    if (r->hard_on_host) { /* waited for whatever happened: its thread reads the trainer's model */
        int waited = ca_hard_host_wait(&t->hard_host, &host_wrong);
        if (!rc) rc = waited;
    }
    t->ops_host_valid = 0; /* until this step is known to have written them */
    tn_optim_status status = {0};
    if (!rc) rc = tn_optim_status_read(&t->optim, &status);
    if (!rc) {
        *soft_loss = tn_item(r->soft_loss);
        if (hard_loss && r->hard_reused) *hard_loss = t->measured_hard, t->hard_reused++;
        else if (hard_loss && r->hard_on_host)
            *hard_loss = t->measured_hard = ca_trainer_round_hard(t, host_wrong), t->hard_on_host_steps++;
        else if (hard_loss) *hard_loss = t->measured_hard = ca_trainer_round_hard(t, tn_item(r->hard_loss));
        if (r->ops_diff) t->ops_changed = tn_item(r->ops_diff) != 0.0;
    }
    tn_free(r->soft_loss), tn_free(r->hard_loss), tn_free(r->target), tn_free(r->ops_diff);
    r->soft_loss = r->hard_loss = r->target = r->ops_diff = NULL;
    r->hard_on_host = 0;
    if (rc) return rc;
    if (status.last_skipped) {
        /* Not every workgroup of a persistent kernel could run at once (too many tiles for the
         * device, or a busy one): AdamW skipped the step, which runs again one dispatch a CA
         * step, as every later one (dlca bench reports it). Otherwise the gradient was not
         * finite: as on the CPU, the run stops there. */
        if (!ca_gpu_persistent_gave_up(&t->gpu)) return ca_trainer_nonfinite(t, "gradient");
        ca_trainer_measured_ops(t, NULL); /* its hard rollout may have given up too */
        if (t->beside_others)
            t->beside_others = 0, t->crowded = 1; /* the device may hold them all when alone */
        else if (ca_gpu_persistent_off(&t->gpu))
            return DLCA_ERR;
        return ca_trainer_gpu_step(t, soft_loss, hard_loss);
    }
    t->ops_host_valid = t->hard_on_host;
    return isfinite(*soft_loss) ? DLCA_OK : ca_trainer_nonfinite(t, "loss");
}

/* The round's final grids, copied to the host by the step (record_step), back into the pool. */
static int store_pool(ca_trainer *t)
{
    if (t->pool.grids) ca_pool_store_f32(&t->pool, t->pool_grid.mapped, t->gpu.plan.pitch);
    return DLCA_OK;
}

int ca_trainer_gpu_finish(ca_trainer *t, int submitted, ca_step_results *r, double *soft_loss, double *hard_loss)
{
    int retired = tn_vk_retire(t->dev);
    int rc = read_step(t, submitted ? retired : DLCA_ERR, r, soft_loss, hard_loss);
    return rc ? rc : store_pool(t);
}

int ca_trainer_gpu_step(ca_trainer *t, double *soft_loss, double *hard_loss)
{
    if (t->options.check_stages) {
        if (hard_loss && ca_trainer_snapshot(t)) return DLCA_ERR;
        return ca_gpu_check_step(t, soft_loss, hard_loss);
    }
    ca_step_results r = {0};
    int rc = run_step(t, hard_loss != NULL, &r);
    rc = read_step(t, rc, &r, soft_loss, hard_loss);
    return rc ? rc : store_pool(t);
}
