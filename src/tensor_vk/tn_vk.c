/* tn_vk.c: the device object: opening and closing it, its modes (tn's own command buffer, or
 * recording into a caller's), submission, barriers, the dispatch helpers and tn's pipeline
 * table. Memory is in tn_vk_mem.c, the kernels in tn_vk_kernels.c, tn_vk_fused.c and
 * tn_vk_optim.c. */
#include "tn_vk_internal.h"

#include "error.h"
#include "vk_check.h"
#include "vk_command.h"

#include <stdlib.h>
#include <string.h>

/* A submission is made after this many recorded commands (unless the options say otherwise), or
 * this many buffers waiting to be reused, so memory held by dead intermediates stays bounded. */
enum { TN_VK_MAX_RECORDED = 1024, TN_VK_MAX_DEFERRED = 512 };

static const vk_pipeline_desc tn_vk_pipe_descs[TN_VK_PIPE_COUNT] = {
#define TN_VK_PIPE_DESC(id, shader, push, bindings, local) {#shader, sizeof(push), bindings, local},
    TN_VK_PIPELINE_LIST(TN_VK_PIPE_DESC)
#undef TN_VK_PIPE_DESC
};

tn_vk_device *tn_vk__device(tn_vk *dev, const char *op)
{
    if (!dev || dev->backend != &tn_vk_backend) {
        err_set(DLCA_ERR, "%s: %s is not a Vulkan tn device (tn_vk_open makes one)", op, dev ? "this device" : "NULL");
        return NULL;
    }
    return (tn_vk_device *)dev;
}

tn_vk *tn_vk_of(const tn_tensor *t)
{
    return t && t->storage->backend == &tn_vk_backend ? t->storage->dev : NULL;
}

int tn_vk_open(tn_vk **dev, vk_context *vk, const tn_vk_options *options)
{
    *dev = NULL;
    if (!vk || !vk->device) return err_set(DLCA_ERR, "tn_vk_open: no Vulkan context");
    tn_vk_device *d = calloc(1, sizeof *d);
    if (!d) return err_set(DLCA_ERR_NOMEM, "tn_vk_open: out of memory");
    d->base = (tn_dev){.backend = &tn_vk_backend, .kind = TN_VULKAN};
    d->vk = vk;
    if (options) d->opt = *options;
    if (!d->opt.max_recorded) d->opt.max_recorded = TN_VK_MAX_RECORDED;
    if (!d->opt.arena_bytes) d->opt.arena_bytes = (size_t)1 << 20;
    *dev = &d->base;
    return DLCA_OK;
}

int tn_vk_close(tn_vk *dev)
{
    if (!dev) return DLCA_OK;
    tn_vk_device *d = tn_vk__device(dev, "tn_vk_close");
    if (!d) return DLCA_ERR;
    if (d->mode == TN_VK_RECORDING || d->mode == TN_VK_PENDING)
        return err_set(DLCA_ERR, "tn_vk_close: recorded work is not retired (tn_vk_record_end, submit, wait, "
                                 "tn_vk_retire first)");
    int rc = tn_vk_sync(dev);
    if (d->stats.live_storages > 0)
        return err_set(DLCA_ERR, "tn_vk_close: %ld device storages are still alive (tn_free them first)",
                       d->stats.live_storages);
    tn_vk__recycle(d);
    if (d->sse_work) tn_vk__block_release(d, d->sse_work);
    tn_vk__free_all(d);
    vk_buffer_free(d->vk, &d->host_scratch);
    for (int i = 0; i < TN_VK_PIPE_COUNT; i++) vk_pipeline_destroy(d->vk, &d->pipes[i]);
    if (d->own && !d->vk->hung) vk_cmd_free(d->vk, d->own); /* after a hang it may still be pending */
    free(d);
    return rc;
}

/* ---- modes and submission ---- */

int tn_vk_sync(tn_vk *dev)
{
    tn_vk_device *d = tn_vk__device(dev, "tn_vk_sync");
    if (!d) return DLCA_ERR;
    if (d->mode == TN_VK_RECORDING || d->mode == TN_VK_PENDING)
        return err_set(DLCA_ERR, "tn_vk_sync: tn is recording into a caller's command buffer (%s)",
                       d->mode == TN_VK_RECORDING ? "tn_vk_record_end it first" : "tn_vk_retire it after its fence");
    if (d->mode == TN_VK_IDLE) return DLCA_OK;
    vk_cmd_barrier_to_host(d->own);
    int rc = vk_cmd_end(d->own);
    if (!rc) rc = vk_cmd_submit_wait(d->vk, d->own);
    d->stats.submissions++;
    d->recorded = 0;
    d->mode = TN_VK_IDLE;
    if (d->vk->hung) {
        /* the GPU may still run the buffer: leak it and everything it used rather than reuse them */
        d->own = VK_NULL_HANDLE;
        d->deferred = NULL;
        d->n_deferred = 0;
        d->arena_busy = d->arena_cur = NULL;
        return rc ? rc : err_set(DLCA_ERR, "tn_vk_sync: the device hung");
    }
    tn_vk__recycle(d);
    return rc;
}

/* Begins tn's own command buffer: allocated once, then reset for each use. */
static int own_begin(tn_vk_device *d)
{
    if (!d->own) return vk_cmd_begin(d->vk, &d->own);
    VK_CHECK(vkResetCommandBuffer(d->own, 0));
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VK_CHECK(vkBeginCommandBuffer(d->own, &begin));
    return DLCA_OK;
}

static const char *pending_message = "recorded work is not retired (submit the caller's command buffer, wait "
                                     "for its fence, then tn_vk_retire)";

int tn_vk__cmd(tn_vk_device *d, VkCommandBuffer *cmd)
{
    if (d->mode == TN_VK_PENDING) return err_set(DLCA_ERR, "tn: %s", pending_message);
    if (d->mode == TN_VK_IDLE) {
        int rc = own_begin(d);
        if (rc) return rc;
        d->cmd = d->own;
        d->mode = TN_VK_OWN;
    }
    *cmd = d->cmd;
    return DLCA_OK;
}

/* Every write (kernel, copy, fill) before -> every read or write after; with `host`, host reads
 * after the fence too. */
static void barrier_all(VkCommandBuffer cmd, int host)
{
    VkMemoryBarrier b = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT | (host ? VK_ACCESS_HOST_READ_BIT : 0),
    };
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd, stages, stages | (host ? VK_PIPELINE_STAGE_HOST_BIT : 0), 0, 1, &b, 0, NULL, 0, NULL);
}

int tn_vk__recorded(tn_vk_device *d)
{
    barrier_all(d->cmd, 0);
    if (d->mode != TN_VK_OWN) return DLCA_OK; /* a caller's buffer: never submitted by tn */
    d->recorded++;
    if (d->opt.sync_each || d->recorded >= d->opt.max_recorded || d->n_deferred >= TN_VK_MAX_DEFERRED)
        return tn_vk_sync(&d->base);
    return DLCA_OK;
}

int tn_vk__host_read(tn_vk_device *d, const char *op)
{
    if (d->mode == TN_VK_RECORDING)
        return err_set(DLCA_ERR, "%s: a host read of device data while recording into a caller's command buffer: "
                                 "the data exists only once that buffer ran (tn_vk_record_end, submit, wait, "
                                 "tn_vk_retire, then read)", op);
    if (d->mode == TN_VK_PENDING) return err_set(DLCA_ERR, "%s: %s", op, pending_message);
    return tn_vk_sync(&d->base);
}

int tn_vk_record_begin(tn_vk *dev, VkCommandBuffer cmd)
{
    tn_vk_device *d = tn_vk__device(dev, "tn_vk_record_begin");
    if (!d) return DLCA_ERR;
    if (!cmd) return err_set(DLCA_ERR, "tn_vk_record_begin: no command buffer");
    if (d->mode == TN_VK_RECORDING) return err_set(DLCA_ERR, "tn_vk_record_begin: already recording");
    int rc = d->mode == TN_VK_OWN ? tn_vk_sync(dev) : DLCA_OK;
    if (rc) return rc;
    d->cmd = cmd;
    d->mode = TN_VK_RECORDING;
    barrier_all(cmd, 0);
    return DLCA_OK;
}

int tn_vk_record_end(tn_vk *dev)
{
    tn_vk_device *d = tn_vk__device(dev, "tn_vk_record_end");
    if (!d) return DLCA_ERR;
    if (d->mode != TN_VK_RECORDING) return err_set(DLCA_ERR, "tn_vk_record_end: not recording");
    barrier_all(d->cmd, 1);
    d->cmd = VK_NULL_HANDLE;
    d->mode = TN_VK_PENDING;
    return DLCA_OK;
}

int tn_vk_retire(tn_vk *dev)
{
    tn_vk_device *d = tn_vk__device(dev, "tn_vk_retire");
    if (!d) return DLCA_ERR;
    if (d->mode == TN_VK_RECORDING)
        return err_set(DLCA_ERR, "tn_vk_retire: still recording (tn_vk_record_end, submit and wait first)");
    if (d->mode != TN_VK_PENDING) return DLCA_OK;
    d->mode = TN_VK_IDLE;
    tn_vk__recycle(d);
    return DLCA_OK;
}

int tn_vk_command(tn_vk *dev, VkCommandBuffer *cmd)
{
    tn_vk_device *d = tn_vk__device(dev, "tn_vk_command");
    return d ? tn_vk__cmd(d, cmd) : DLCA_ERR;
}

int tn_vk_barrier(tn_vk *dev)
{
    VkCommandBuffer cmd;
    tn_vk_device *d = tn_vk__device(dev, "tn_vk_barrier");
    int rc = d ? tn_vk__cmd(d, &cmd) : DLCA_ERR;
    return rc ? rc : tn_vk__recorded(d);
}

void tn_vk_stats_get(const tn_vk *dev, tn_vk_stats *out)
{
    const tn_vk_device *d = (const tn_vk_device *)dev;
    *out = d->stats;
}

/* ---- dispatch ---- */

/* Pipeline `id` of this device, created on first use from the embedded SPIR-V. */
static int pipe_get(tn_vk_device *d, tn_vk_pipe id, const vk_pipeline **out)
{
    vk_pipeline *p = &d->pipes[id];
    if (!p->pipeline) {
        const vk_pipeline_desc *desc = &tn_vk_pipe_descs[id];
        const vk_shader_code *code = vk_shader_find(desc->name);
        if (!code) return err_set(DLCA_ERR, "tn: no embedded shader glsl/%s.comp", desc->name);
        int rc = vk_pipeline_create_spirv(d->vk, desc, code->code, code->size, p);
        if (rc) return rc;
    }
    *out = p;
    return DLCA_OK;
}

int tn_vk__dispatch(tn_vk_device *d, tn_vk_pipe id, const vk_view *views, uint32_t n_views, const void *push,
                    uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz)
{
    VkCommandBuffer cmd;
    const vk_pipeline *p = NULL;
    int rc = pipe_get(d, id, &p);
    if (!rc) rc = tn_vk__cmd(d, &cmd);
    if (!rc)
        rc = vk_dispatch_pipeline(d->vk, cmd, p, &tn_vk_pipe_descs[id], views, n_views, push, push_size, gx, gy, gz);
    return rc ? rc : tn_vk__recorded(d);
}

int tn_vk__dispatch_1d(tn_vk_device *d, tn_vk_pipe id, const vk_view *views, uint32_t n_views, const void *push,
                       uint32_t push_size, uint64_t count)
{
    uint32_t groups[3];
    const vk_pipeline_desc *desc = &tn_vk_pipe_descs[id];
    int rc = vk_groups_1d_local(d->vk, desc->name, desc->local_size_x, count, groups);
    if (rc || count == 0) return rc;
    return tn_vk__dispatch(d, id, views, n_views, push, push_size, groups[0], groups[1], groups[2]);
}

int tn_vk__groups_2d(tn_vk_device *d, uint64_t count, uint32_t *gx, uint32_t *gy)
{
    uint64_t max = d->vk->props.limits.maxComputeWorkGroupCount[0];
    uint64_t x = count < max ? count : max, y = x ? (count + x - 1) / x : 1;
    if (y > d->vk->props.limits.maxComputeWorkGroupCount[1])
        return err_set(DLCA_ERR, "tn: %llu workgroups exceed the device's grid", (unsigned long long)count);
    *gx = (uint32_t)x;
    *gy = (uint32_t)y;
    return DLCA_OK;
}
