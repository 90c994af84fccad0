/* tn_vk.c: the tn device's state: the bound context, the open command buffer that ops record
 * into, the host-visible arena for per-op metadata, buffers waiting for the GPU to finish
 * before they are freed, the backend's memory functions, and tn_to_device / tn_to_cpu. */
#include "tn_vk_internal.h"

#include "error.h"
#include "vk_command.h"

#include <stdlib.h>
#include <string.h>

/* A submission is made after this many recorded commands, or this many buffers waiting to be
 * freed, so memory held by dead intermediates stays bounded. */
enum { TN_VK_MAX_RECORDED = 1024, TN_VK_MAX_GARBAGE = 512 };
static const size_t tn_vk_arena_min = 1u << 20;
/* Uploads up to this size are recorded as copies from the arena (no submission). */
static const size_t tn_vk_upload_inline = 4u << 20;

static struct {
    vk_context *vk;
    VkCommandBuffer cmd; /* open recording, or VK_NULL_HANDLE */
    uint32_t recorded;
    int sync_each;       /* DLCA_TN_SYNC=1 */
    vk_buffer arena;     /* host-visible, mapped */
    size_t arena_used;
    vk_buffer *garbage;  /* freed after the next wait */
    size_t n_garbage, cap_garbage;
    long live;           /* device storages alive */
} tv;

vk_context *tn_vk__context(const char *op)
{
    if (!tv.vk) err_set(DLCA_ERR, "%s: no Vulkan context is bound to tn (tn_vk_init or tn_to_device first)", op);
    return tv.vk;
}

long tn_vk_live_storages(void) { return tv.live; }

int tn_vk_init(vk_context *vk)
{
    if (!vk) return err_set(DLCA_ERR, "tn_vk_init: no context");
    if (tv.vk == vk) return DLCA_OK;
    if (tv.vk) return err_set(DLCA_ERR, "tn_vk_init: another Vulkan context is bound to tn (tn_vk_free it first)");
    const char *sync = getenv("DLCA_TN_SYNC");
    tv.vk = vk;
    tv.sync_each = sync && sync[0] == '1';
    return DLCA_OK;
}

/* ---- deferred frees ---- */

static void garbage_free_all(void)
{
    for (size_t i = 0; i < tv.n_garbage; i++) vk_buffer_free(tv.vk, &tv.garbage[i]);
    tv.n_garbage = 0;
}

/* Frees *buf now when no recorded work can use it, else after the next wait. */
static void buffer_release(vk_buffer *buf)
{
    if (!tv.cmd) {
        vk_buffer_free(tv.vk, buf);
        return;
    }
    if (tv.n_garbage == tv.cap_garbage) {
        size_t cap = tv.cap_garbage ? 2 * tv.cap_garbage : 64;
        vk_buffer *g = realloc(tv.garbage, cap * sizeof *g);
        if (!g) { /* no room to defer: wait for the GPU instead, then free */
            tn_vk_sync();
            vk_buffer_free(tv.vk, buf);
            return;
        }
        tv.garbage = g;
        tv.cap_garbage = cap;
    }
    tv.garbage[tv.n_garbage++] = *buf;
    memset(buf, 0, sizeof *buf);
}

/* ---- recording and submission ---- */

int tn_vk_sync(void)
{
    if (!tv.vk) return DLCA_OK;
    int rc = DLCA_OK;
    if (tv.cmd) {
        vk_cmd_barrier_to_host(tv.cmd);
        rc = vk_cmd_finish(tv.vk, tv.cmd);
        tv.cmd = VK_NULL_HANDLE;
    }
    tv.recorded = 0;
    tv.arena_used = 0;
    /* after a hang the GPU may still use the buffers: leak them rather than free under it */
    if (!tv.vk->hung) garbage_free_all();
    return rc;
}

int tn_vk__cmd(VkCommandBuffer *cmd)
{
    if (!tn_vk__context("tn")) return DLCA_ERR;
    if (!tv.cmd) {
        int rc = vk_cmd_begin(tv.vk, &tv.cmd);
        if (rc) return rc;
    }
    *cmd = tv.cmd;
    return DLCA_OK;
}

/* Every write (kernel, copy, fill) before -> every read or write after. */
static void barrier_all(VkCommandBuffer cmd)
{
    VkMemoryBarrier b = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &b, 0, NULL, 0, NULL);
}

int tn_vk__recorded(void)
{
    barrier_all(tv.cmd);
    tv.recorded++;
    if (tv.sync_each || tv.recorded >= TN_VK_MAX_RECORDED || tv.n_garbage >= TN_VK_MAX_GARBAGE) return tn_vk_sync();
    return DLCA_OK;
}

int tn_vk__dispatch(vk_pipeline_id id, const vk_view *views, uint32_t n_views, const void *push,
                    uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz)
{
    VkCommandBuffer cmd;
    int rc = tn_vk__cmd(&cmd);
    if (!rc) rc = vk_dispatch(tv.vk, cmd, id, views, n_views, push, push_size, gx, gy, gz);
    return rc ? rc : tn_vk__recorded();
}

int tn_vk__dispatch_1d(vk_pipeline_id id, const vk_view *views, uint32_t n_views, const void *push,
                       uint32_t push_size, uint64_t count)
{
    uint32_t groups[3];
    if (!tn_vk__context("tn")) return DLCA_ERR;
    int rc = vk_groups_1d(tv.vk, id, count, groups);
    if (rc || count == 0) return rc;
    return tn_vk__dispatch(id, views, n_views, push, push_size, groups[0], groups[1], groups[2]);
}

int tn_vk__groups_2d(uint64_t count, uint32_t *gx, uint32_t *gy)
{
    uint64_t max = tv.vk->props.limits.maxComputeWorkGroupCount[0];
    uint64_t x = count < max ? count : max, y = x ? (count + x - 1) / x : 1;
    if (y > tv.vk->props.limits.maxComputeWorkGroupCount[1])
        return err_set(DLCA_ERR, "tn: %llu workgroups exceed the device's grid", (unsigned long long)count);
    *gx = (uint32_t)x;
    *gy = (uint32_t)y;
    return DLCA_OK;
}

/* ---- the arena ---- */

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

int tn_vk__arena(size_t bytes, vk_view *view, void **host)
{
    if (!tn_vk__context("tn")) return DLCA_ERR;
    size_t align = (size_t)tv.vk->props.limits.minStorageBufferOffsetAlignment;
    size_t need = align_up(bytes ? bytes : 4, 16);
    size_t at = align_up(tv.arena_used, align < 16 ? 16 : align);
    int rc = DLCA_OK;
    if (tv.arena.buffer && at + need > tv.arena.size) { /* full: let the GPU consume it, then reuse */
        if ((rc = tn_vk_sync())) return rc;
        at = 0;
    }
    if (!tv.arena.buffer || need > tv.arena.size) {
        size_t size = tn_vk_arena_min;
        while (size < need) size *= 2;
        if ((rc = tn_vk_sync())) return rc;
        vk_buffer_free(tv.vk, &tv.arena);
        if ((rc = vk_buffer_create(tv.vk, &tv.arena, size, VK_BUFFER_STAGING))) return rc;
        at = 0;
    }
    tv.arena_used = at + need;
    *view = vk_view_of(&tv.arena, at, need);
    *host = (char *)tv.arena.mapped + at;
    return DLCA_OK;
}

/* ---- scratch buffers the host reads ---- */

int tn_vk__scratch(size_t bytes, vk_buffer **buf)
{
    if (!tn_vk__context("tn")) return DLCA_ERR;
    *buf = calloc(1, sizeof **buf);
    if (!*buf) return err_set(DLCA_ERR_NOMEM, "tn: out of memory");
    int rc = vk_buffer_create(tv.vk, *buf, align_up(bytes ? bytes : 4, 4), VK_BUFFER_STAGING);
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

void tn_vk__scratch_free(vk_buffer *buf)
{
    if (!buf) return;
    buffer_release(buf);
    free(buf);
}

/* ---- memory functions of the backend table ---- */

static int check_storage(const tn_storage *s)
{
    if (s->dtype != TN_F32)
        return err_set(DLCA_ERR, "tn: float64 tensors stay on the CPU (the Vulkan backend is float32 only)");
    if (s->numel > TN_VK_MAX_NUMEL)
        return err_set(DLCA_ERR, "tn: %zu elements exceed the device tensor limit of %zu", s->numel, TN_VK_MAX_NUMEL);
    return tn_vk__context("tn") ? DLCA_OK : DLCA_ERR;
}

/* A device buffer for `numel` floats with [keep, numel) zeroed and [0, keep) copied from old. */
static int buffer_make(size_t numel, const vk_buffer *old, size_t keep, vk_buffer **out)
{
    VkCommandBuffer cmd;
    vk_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return err_set(DLCA_ERR_NOMEM, "tn: out of memory");
    size_t bytes = (numel ? numel : 1) * sizeof(float);
    int rc = vk_buffer_create(tv.vk, buf, bytes, VK_BUFFER_DEVICE);
    if (!rc) rc = tn_vk__cmd(&cmd);
    if (rc) {
        vk_buffer_free(tv.vk, buf);
        free(buf);
        return rc;
    }
    if (keep) vkCmdCopyBuffer(cmd, old->buffer, buf->buffer, 1, &(VkBufferCopy){0, 0, keep * sizeof(float)});
    vkCmdFillBuffer(cmd, buf->buffer, keep * sizeof(float), VK_WHOLE_SIZE, 0);
    tv.live++;
    *out = buf;
    return tn_vk__recorded();
}

int tn_vk__alloc(tn_storage *s)
{
    int rc = check_storage(s);
    return rc ? rc : buffer_make(s->numel, NULL, 0, (vk_buffer **)&s->handle);
}

void tn_vk__release(tn_storage *s)
{
    vk_buffer *buf = tn_vk__buffer(s);
    if (!buf) return;
    buffer_release(buf);
    free(buf);
    s->handle = NULL;
    tv.live--;
}

int tn_vk__grow(tn_storage *s, size_t numel)
{
    vk_buffer *buf = NULL, *old = tn_vk__buffer(s);
    size_t keep = numel < s->numel ? numel : s->numel;
    tn_storage probe = *s;
    probe.numel = numel;
    int rc = check_storage(&probe);
    if (!rc) rc = buffer_make(numel, old, keep, &buf);
    if (rc) return rc;
    tn_vk__release(s);
    s->handle = buf;
    s->numel = numel;
    return DLCA_OK;
}

int tn_vk__upload(tn_storage *s, size_t off, const void *src, size_t n)
{
    size_t bytes = n * sizeof(float);
    VkCommandBuffer cmd;
    vk_view view;
    void *host;
    if (n == 0) return DLCA_OK;
    if (bytes > tn_vk_upload_inline) { /* large: wait for recorded work (it may write s), then stage */
        int rc = tn_vk_sync();
        return rc ? rc : vk_buffer_upload(tv.vk, tn_vk__buffer(s), off * sizeof(float), src, bytes);
    }
    int rc = tn_vk__arena(bytes, &view, &host);
    if (!rc) rc = tn_vk__cmd(&cmd);
    if (rc) return rc;
    memcpy(host, src, bytes);
    VkBufferCopy region = {view.offset, off * sizeof(float), bytes};
    vkCmdCopyBuffer(cmd, tv.arena.buffer, tn_vk__buffer(s)->buffer, 1, &region);
    return tn_vk__recorded();
}

int tn_vk__download(const tn_storage *s, size_t off, void *dst, size_t n)
{
    if (n == 0) return DLCA_OK;
    int rc = tn_vk_sync();
    return rc ? rc : vk_buffer_download(tv.vk, tn_vk__buffer(s), off * sizeof(float), dst, n * sizeof(float));
}

int tn_vk_free(void)
{
    if (!tv.vk) return DLCA_OK;
    int rc = tn_vk_sync();
    if (tv.live > 0)
        return err_set(DLCA_ERR, "tn_vk_free: %ld device storages are still alive (tn_free them first)", tv.live);
    vk_buffer_free(tv.vk, &tv.arena);
    free(tv.garbage);
    memset(&tv, 0, sizeof tv);
    return rc;
}

/* ---- explicit copies ---- */

static int to_cpu_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    gin[0] = tn_to_device(g, tv.vk);
    return gin[0] ? DLCA_OK : DLCA_ERR;
}

static int to_device_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    gin[0] = tn_to_cpu(g);
    return gin[0] ? DLCA_OK : DLCA_ERR;
}

tn_tensor *tn_to_device(tn_tensor *t, vk_context *vk)
{
    if (!t) return tn__null("tn_to_device"), NULL;
    if (tn_vk_init(vk) != DLCA_OK) return NULL;
    if (t->device == TN_VULKAN) return tn_retain(t);
    if (t->dtype != TN_F32)
        return err_set(DLCA_ERR, "tn_to_device: only float32 tensors go to the device (this one is float64)"), NULL;
    /* the CPU side is made dense first, so one contiguous upload covers it */
    tn_tensor *c = tn_is_contiguous(t) ? tn_retain(t) : tn__unary("tn_to_device", TN_U_COPY, 0, 0, t);
    tn_tensor *y = c ? tn__alloc(TN_F32, TN_VULKAN, t->ndim, t->shape) : NULL;
    if (y && tn_vk__upload(y->storage, 0, tn_data(c), tn_numel(t)) != DLCA_OK) {
        tn_free(y);
        y = NULL;
    }
    tn_free(c);
    return tn__record(y, &(tn_node){.op = "tn_to_device", .backward = to_device_bwd, .n_in = 1, .in = {t}});
}

tn_tensor *tn_to_cpu(tn_tensor *t)
{
    if (!t) return tn__null("tn_to_cpu"), NULL;
    if (t->device == TN_CPU) return tn_retain(t);
    tn_tensor *c = tn_is_contiguous(t) ? tn_retain(t) : tn__unary("tn_to_cpu", TN_U_COPY, 0, 0, t);
    tn_tensor *y = c ? tn__alloc(t->dtype, TN_CPU, t->ndim, t->shape) : NULL;
    if (y && tn_vk__download(c->storage, c->offset, tn_data(y), tn_numel(t)) != DLCA_OK) {
        tn_free(y);
        y = NULL;
    }
    tn_free(c);
    return tn__record(y, &(tn_node){.op = "tn_to_cpu", .backward = to_cpu_bwd, .n_in = 1, .in = {t}});
}
