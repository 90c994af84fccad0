/* ca_gpu_step.c: recording the CA step, loss, BPTT and AdamW on the GPU, mirroring ca_cpu.c.
 * Every dispatch is followed by a compute barrier: each reads what the one before wrote. */
#include "ca_gpu_internal.h"

#include "error.h"
#include "gates.h"
#include "rng.h"

#include <math.h>
#include <string.h>

_Static_assert(CA_START_BOARDS == 0 && CA_START_RANDOM == 1 && CA_START_ZEROS == 2 && CA_START_SEED_CELL == 3,
               "start kinds as task_round.comp numbers them");
_Static_assert(CA_TARGET_LIFE == 0 && CA_TARGET_CHECKERBOARD == 1 && CA_TARGET_IMAGE == 2,
               "target kinds as task_round.comp numbers them");

int ca_gpu_task_round(ca_gpu *e, VkCommandBuffer cmd, uint64_t round)
{
    const ca_config *c = gpu_config_of(e);
    if (c->start == CA_START_BOARDS && (e->shape.height != 3 || e->shape.width != 3))
        return err_set(DLCA_ERR, "board starts need a 3x3 grid, not %dx%d", e->shape.height, e->shape.width);
    vk_push_task push = {e->plan.cells, e->plan.pitch, (uint32_t)e->shape.height, (uint32_t)e->shape.width,
                         (uint32_t)c->channels, (uint32_t)c->loss_channels, (uint32_t)c->start, (uint32_t)c->target,
                         rng_task_stream(c->seed, round), e->shape.boundary == CA_BOUNDARY_PERIODIC};
    vk_view views[] = {ca_gpu_grid_region(e, 0), vk_view_all(&e->target), vk_view_all(&e->image)};
    return vk_dispatch_1d(e->vk, cmd, VK_PIPE_TASK_ROUND, views, 3, &push, sizeof push,
                          (uint64_t)c->channels * e->plan.cells);
}

/* The clears beside the coefficients' dispatch: one barrier interval instead of three a rollout
 * (docs/bench-notes.md, sixteenth round). */
int ca_gpu_coefficients(ca_gpu *e, VkCommandBuffer cmd, int hard)
{
    if (gpu_mark(e, cmd, CA_GPU_MARK_START)) return DLCA_ERR;
    int forward = e->plan.fused && e->plan.persistent_groups;
    int backward = e->plan.fused && e->plan.persistent_backward && !hard;
    if ((forward || backward) && gpu_clear(e, cmd, forward, backward)) return DLCA_ERR;
    vk_push_gate_coefficients push = {(uint32_t)e->model->gate_count, hard ? 1u : 0u};
    vk_view views[] = {vk_view_all(&e->logits), e->coeffs_at};
    int rc = vk_dispatch_1d(e->vk, cmd, VK_PIPE_GATE_COEFFICIENTS, views, 2, &push, sizeof push, e->model->gate_count);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

int ca_gpu_step_forward(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    e->cleared_forward = 0; /* it writes a grid the persistent forward would poll */
    return e->plan.fused ? gpu_fused_forward(e, cmd, t) : gpu_layered_forward(e, cmd, t);
}

int ca_gpu_forward(ca_gpu *e, VkCommandBuffer cmd)
{
    if (e->plan.fused && e->plan.persistent_groups) {
        if (gpu_persistent_forward(e, cmd)) return DLCA_ERR;
    } else {
        for (int t = 0; t < e->steps; t++)
            if (ca_gpu_step_forward(e, cmd, t)) return DLCA_ERR;
    }
    return gpu_mark(e, cmd, CA_GPU_MARK_FORWARD_END);
}

/* ---- the per-layer path's backward: one gate_backward dispatch per layer, last to first, each
 * gathering its output gradient from the slot gradients of the layer after it; then one
 * grid_backward. S goes into per-chunk partials, summed once by ca_gpu_sums_finish. ---- */

int ca_gpu_sums_zero(ca_gpu *e, VkCommandBuffer cmd)
{
    vk_cmd_barrier_compute_to_transfer(cmd);
    int rc = vk_buffer_zero(cmd, vk_view_all(&e->sum_partials));
    vk_cmd_barrier_transfer_to_compute(cmd);
    return rc;
}

int ca_gpu_sums_finish(ca_gpu *e, VkCommandBuffer cmd)
{
    int rc = gpu_sums_reduce(e, cmd);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

int ca_gpu_step_backward(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    if (e->plan.fused) /* recomputes the step itself, whatever the cache */
        return gpu_fused_backward(e, cmd, t, 0) || gpu_fused_grid_gather(e, cmd, t) ? DLCA_ERR : DLCA_OK;
    if (e->plan.cache == CA_CACHE_CHECKPOINT && ca_gpu_step_forward(e, cmd, t)) return DLCA_ERR;
    return gpu_layered_backward(e, cmd, t);
}

int ca_gpu_backward(ca_gpu *e, VkCommandBuffer cmd) { return ca_gpu_backward_window(e, cmd, NULL, e->steps); }

/* dgrid's first loss_channels rows += block k of dwindow: between two steps of BPTT, where dgrid
 * holds what the next step reads of dL/dgrid_t (all of it per layer; its own part fused, the
 * neighbours' still to gather: the window gradient is the cell's own). */
static int add_window_block(ca_gpu *e, VkCommandBuffer cmd, const vk_view *dwindow, int k)
{
    size_t bytes = (size_t)gpu_config_of(e)->loss_channels * e->plan.pitch * sizeof(float);
    vk_view views[] = {vk_view_of(e->dgrid_at.buffer, e->dgrid_at.offset, bytes),
                       vk_view_of(dwindow->buffer, dwindow->offset + (size_t)k * bytes, bytes)};
    vk_push_grid_add push = {(uint32_t)(bytes / sizeof(float))};
    int rc = vk_dispatch_1d(e->vk, cmd, VK_PIPE_GRID_ADD, views, 2, &push, sizeof push, push.n);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

int ca_gpu_backward_window(ca_gpu *e, VkCommandBuffer cmd, const vk_view *dwindow, int from)
{
    int steps = e->steps;
    if (!dwindow || from >= steps) from = steps;
    else if (from < 1 || dwindow->size < (size_t)(steps - from) * gpu_config_of(e)->loss_channels * e->plan.pitch * sizeof(float))
        return err_set(DLCA_ERR, "ca_gpu_backward_window: a window from step %d of %d in a view of %llu bytes", from,
                       steps, (unsigned long long)dwindow->size);
    if (gpu_mark(e, cmd, CA_GPU_MARK_BACKWARD_START)) return DLCA_ERR;
    /* The persistent kernel runs its steps in one dispatch: a window needs it one dispatch a step
     * (the steps before the window's first may still run together). */
    if (e->plan.fused && e->plan.persistent_backward) {
        int rc = DLCA_OK;
        for (int t = steps - 1; !rc && t >= from; t--)
            rc = gpu_persistent_backward_steps(e, cmd, t, 1) || add_window_block(e, cmd, dwindow, t - from);
        if (!rc) rc = gpu_persistent_backward(e, cmd, from - 1);
        if (rc || gpu_fused_backward_end(e, cmd)) return DLCA_ERR;
        return gpu_mark(e, cmd, CA_GPU_MARK_BACKWARD_END);
    }
    if (ca_gpu_sums_zero(e, cmd)) return DLCA_ERR;
    for (int t = steps - 1; t >= 0; t--) {
        /* Fused: each step completes the one before it, so one dispatch a step, and one gather
         * after step 0. */
        int rc = e->plan.fused ? gpu_fused_backward(e, cmd, t, t + 1 < steps) : ca_gpu_step_backward(e, cmd, t);
        if (!rc && t >= from) rc = add_window_block(e, cmd, dwindow, t - from);
        if (rc) return DLCA_ERR;
    }
    if (e->plan.fused ? gpu_fused_backward_end(e, cmd) : ca_gpu_sums_finish(e, cmd)) return DLCA_ERR;
    return gpu_mark(e, cmd, CA_GPU_MARK_BACKWARD_END);
}

int ca_gpu_copy_loss_rows(ca_gpu *e, VkCommandBuffer cmd, int from, vk_view to)
{
    size_t row = e->plan.pitch * sizeof(float), rows = (size_t)gpu_config_of(e)->loss_channels * row;
    if (from < 0 || from > e->steps || to.size < (size_t)(e->steps - from + 1) * rows)
        return err_set(DLCA_ERR, "ca_gpu_copy_loss_rows: grids %d..%d into a view of %llu bytes", from, e->steps,
                       (unsigned long long)to.size);
    vk_cmd_barrier_compute_to_transfer(cmd);
    for (int t = from; t <= e->steps; t++) {
        vk_view grid = ca_gpu_grid_region(e, t);
        VkBufferCopy region = {grid.offset, to.offset + (size_t)(t - from) * rows, rows};
        vkCmdCopyBuffer(cmd, e->grids.buffer, to.buffer->buffer, 1, &region);
    }
    vk_cmd_barrier_transfer_to_compute(cmd);
    return DLCA_OK;
}

/* After the AdamW dispatch: its barrier, the end mark, and the roll calls for the host. */
void ca_gpu_roll_to_host(ca_gpu *e, VkCommandBuffer cmd)
{
    if (!e->plan.fused || !e->plan.persistent_groups) return;
    vk_cmd_barrier_compute_to_transfer(cmd);
    VkBufferCopy region = {0, 0, CA_GPU_ROLL_WORDS * sizeof(uint32_t)};
    vkCmdCopyBuffer(cmd, e->roll.buffer, e->roll_host.buffer, 1, &region);
}

void ca_gpu_keep_forward_roll(ca_gpu *e, VkCommandBuffer cmd)
{
    if (!e->plan.fused || !e->plan.persistent_groups) return;
    vk_cmd_barrier_compute_to_transfer(cmd);
    VkBufferCopy region = {CA_GPU_ROLL_FORWARD * sizeof(uint32_t), CA_GPU_ROLL_KEPT * sizeof(uint32_t),
                           sizeof(uint32_t)};
    vkCmdCopyBuffer(cmd, e->roll.buffer, e->roll.buffer, 1, &region);
    vk_cmd_barrier_transfer_to_compute(cmd);
}

int ca_gpu_grid_to_host(ca_gpu *e, VkCommandBuffer cmd, int t, vk_buffer *host)
{
    vk_view grid = ca_gpu_grid_region(e, t);
    if (host->size < grid.size)
        return err_set(DLCA_ERR, "a grid of %llu bytes into a buffer of %llu", (unsigned long long)grid.size,
                       (unsigned long long)host->size);
    vk_cmd_barrier_compute_to_transfer(cmd);
    VkBufferCopy region = {grid.offset, 0, grid.size};
    vkCmdCopyBuffer(cmd, grid.buffer->buffer, host->buffer, 1, &region);
    vk_cmd_barrier_transfer_to_compute(cmd);
    return DLCA_OK;
}

int ca_gpu_clear_persistent(ca_gpu *e, VkCommandBuffer cmd, int forward, int backward)
{
    forward = forward && e->plan.fused && e->plan.persistent_groups;
    backward = backward && e->plan.fused && e->plan.persistent_backward;
    return forward || backward ? gpu_clear(e, cmd, forward, backward) : DLCA_OK;
}

int ca_gpu_timestamp(ca_gpu *e, VkCommandBuffer cmd, ca_gpu_mark which) { return gpu_mark(e, cmd, which); }

