/* ca_gpu_record.c: the GPU engine's views into its buffers and its recording helpers. */
#include "ca_gpu_internal.h"

#include "error.h"

vk_view ca_gpu_grid_region(const ca_gpu *e, int t)
{
    size_t bytes = (size_t)gpu_config_of(e)->channels * e->plan.pitch * sizeof(float);
    return vk_view_of((vk_buffer *)&e->grids, (size_t)t * bytes, bytes);
}

vk_view ca_gpu_target_region(const ca_gpu *e)
{
    return vk_view_of((vk_buffer *)&e->target, 0, (size_t)gpu_config_of(e)->loss_channels * e->plan.pitch * sizeof(float));
}

int ca_gpu_bind(ca_gpu *e, const vk_view *coeffs, const vk_view *dgrid, const vk_view *sums)
{
    size_t gates4 = e->model->gate_count * 4 * sizeof(float);
    size_t grid = (size_t)gpu_config_of(e)->channels * e->plan.pitch * sizeof(float);
    if ((coeffs && coeffs->size < gates4) || (sums && sums->size < gates4) || (dgrid && dgrid->size < grid))
        return err_set(DLCA_ERR, "ca_gpu_bind: a view smaller than the engine's buffer it stands for");
    e->coeffs_at = coeffs ? *coeffs : vk_view_all(&e->coeffs);
    e->dgrid_at = dgrid ? *dgrid : vk_view_all(&e->dgrid);
    e->sums_at = sums ? *sums : vk_view_all(&e->coeff_grad);
    return DLCA_OK;
}

int ca_gpu_load_output_gradient(ca_gpu *e, VkCommandBuffer cmd, vk_view rows, uint32_t n)
{
    size_t row = e->plan.pitch * sizeof(float), channels = (size_t)gpu_config_of(e)->channels;
    if (n == 0 || n > channels || rows.size < n * row)
        return err_set(DLCA_ERR, "ca_gpu_load_output_gradient: %u rows of %zu bytes from a view of %llu bytes", n, row,
                       (unsigned long long)rows.size);
    VkBufferCopy region = {rows.offset, e->dgrid_at.offset, n * row};
    vkCmdCopyBuffer(cmd, rows.buffer->buffer, e->dgrid_at.buffer->buffer, 1, &region);
    if (n < channels)
        vkCmdFillBuffer(cmd, e->dgrid_at.buffer->buffer, e->dgrid_at.offset + n * row, (channels - n) * row, 0);
    vk_cmd_barrier_transfer_to_compute(cmd);
    return DLCA_OK;
}

vk_view gpu_block_view(ca_gpu *e, int t)
{
    size_t offset;
    vk_buffer *buffer = ca_gpu_block_buffer(e, t, &offset);
    return vk_view_of(buffer, offset, e->step_rows * e->plan.pitch * sizeof(float));
}

vk_view gpu_slot_view(ca_gpu *e, int which)
{
    size_t half = e->step_rows * e->plan.pitch * sizeof(float);
    return vk_view_of(&e->scratch, (size_t)which * half, half);
}

vk_view gpu_moore_view(ca_gpu *e, int t) { return gpu_slot_view(e, t % 2); }

int gpu_dispatch(ca_gpu *e, VkCommandBuffer cmd, vk_pipeline_id id, const vk_view *views, uint32_t n_views,
                    const void *push, uint32_t push_size, uint32_t groups_x, uint32_t groups_y)
{
    int rc = vk_dispatch(e->vk, cmd, id, views, n_views, push, push_size, groups_x, groups_y, 1);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

/* Instrumentation (dlca bench): one timestamp, only when the engine profiles. */
int gpu_mark(ca_gpu *e, VkCommandBuffer cmd, ca_gpu_mark which)
{
    if (!e->profile) return DLCA_OK;
    if (which == CA_GPU_MARK_START && vk_cmd_timestamps_reset(e->vk, cmd, e->profile_first, CA_GPU_MARK_COUNT))
        return DLCA_ERR;
    return vk_cmd_timestamp(e->vk, cmd, e->profile_first + (uint32_t)which);
}

int gpu_fill(ca_gpu *e, VkCommandBuffer cmd, const gpu_fill_region *regions, int count)
{
    vk_push_buffer_fill push = {0};
    vk_view views[3];
    uint64_t most = 0;
    if (count < 1 || count > 3) return err_set(DLCA_ERR, "fill: %d regions (1 to 3)", count);
    for (int r = 0; r < 3; r++) {
        const gpu_fill_region *g = &regions[r < count ? r : 0];
        uint64_t words = (uint64_t)g->region.row_words * g->region.rows;
        uint64_t end = g->region.first + (uint64_t)g->region.row_pitch * (g->region.rows ? g->region.rows - 1 : 0) +
                       g->region.row_words;
        if (r < count && end * 4 > g->buffer->size)
            return err_set(DLCA_ERR, "fill: region %d ends at word %llu, past its buffer", r, (unsigned long long)end);
        views[r] = vk_view_all(g->buffer);
        if (r < count) push.region[r] = g->region;
        if (r < count && words > most) most = words;
    }
    uint32_t groups[3];
    const vk_pipeline_desc *desc = &vk_pipeline_descs[VK_PIPE_BUFFER_FILL];
    if (vk_groups_1d_local(e->vk, desc->name, desc->local_size_x, (most + 3) / 4, groups)) return DLCA_ERR;
    if (groups[1] > 1) return err_set(DLCA_ERR, "fill: %llu words in one region", (unsigned long long)most);
    return vk_dispatch(e->vk, cmd, VK_PIPE_BUFFER_FILL, views, 3, &push, sizeof push, groups[0] ? groups[0] : 1, 3, 1);
}

/* gate_sums_reduce.comp, no barrier of its own. */
int gpu_sums_reduce(ca_gpu *e, VkCommandBuffer cmd)
{
    vk_push_gate_sums_reduce push = {(uint32_t)e->model->gate_count, e->plan.fused ? e->plan.slots : e->plan.chunks,
                                     (uint32_t)e->step_rows};
    vk_view views[] = {vk_view_all(&e->sum_partials), vk_view_of(&e->layers, CA_GPU_GATE_ROWS_AT, 0),
                       e->sums_at};
    /* One workgroup per gate, as x times y workgroups. */
    uint32_t gates = (uint32_t)e->model->gate_count, max_x = e->vk->props.limits.maxComputeWorkGroupCount[0];
    uint32_t groups_x = gates < max_x ? gates : max_x;
    return vk_dispatch(e->vk, cmd, VK_PIPE_GATE_SUMS_REDUCE, views, 3, &push, sizeof push, groups_x,
                       (gates + groups_x - 1) / groups_x, 1);
}

vk_buffer *ca_gpu_block_buffer(ca_gpu *e, int t, size_t *offset)
{
    uint32_t block = e->plan.cache == CA_CACHE_FULL ? (uint32_t)t : 0;
    *offset = (size_t)(block % e->act_blocks) * e->step_rows * e->plan.pitch * sizeof(float);
    return &e->act[block / e->act_blocks];
}

/* Zeroes `count` buffers now, in one submission. */
int gpu_zero_now(ca_gpu *e, vk_buffer *const *buffers, int count)
{
    VkCommandBuffer cmd;
    if (vk_cmd_begin(e->vk, &cmd)) return DLCA_ERR;
    int rc = DLCA_OK;
    for (int i = 0; !rc && i < count; i++) rc = vk_buffer_zero(cmd, vk_view_all(buffers[i]));
    if (rc) {
        vk_cmd_free(e->vk, cmd);
        return rc;
    }
    return vk_cmd_finish(e->vk, cmd);
}

