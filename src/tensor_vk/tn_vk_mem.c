/* tn_vk_mem.c: device memory of a tn_vk: the caching allocator behind storages, the arena for
 * per-op host data, the backend table's memory functions, and wrapping / viewing buffers shared
 * with another engine.
 *
 * The allocator: a storage of b bytes gets a buffer of its size class (classes from 256 bytes,
 * four to a power of two, so at most a quarter is wasted). A released buffer goes to its class's
 * free list at once when nothing is in flight, else to `deferred` until the next return to IDLE
 * (a sync, or tn_vk_retire): the GPU may still use it. The next allocation of the class takes it
 * from the list, so a training loop that builds the same graph every step stops creating Vulkan
 * buffers after its first step. tn_vk_trim gives the cached ones back. */
#include "tn_vk_internal.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* Uploads up to this size are recorded as copies from the arena (no submission); larger ones
 * outside a recording wait for tn's work and go through the context's staging buffer. */
static const size_t tn_vk_upload_inline = 4u << 20;

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* ---- blocks ---- */

/* The class of `bytes` and its size: 2^e (1 + q/4) for q in 0..3, from 256 bytes. */
static int size_class(size_t bytes, size_t *class_bytes)
{
    if (bytes < 256) bytes = 256;
    int e = 63 - __builtin_clzll((unsigned long long)bytes);
    size_t base = (size_t)1 << e, step = base / 4, q = (bytes - base + step - 1) / step;
    if (q == 4) {
        e++;
        base <<= 1;
        q = 0;
    }
    *class_bytes = base + q * (base / 4);
    int cls = (e - 8) * 4 + (int)q;
    return cls < TN_VK_CLASSES ? cls : -1;
}

static int block_create(tn_vk_device *d, size_t bytes, int host, int cls, tn_vk_block **out)
{
    tn_vk_block *b = calloc(1, sizeof *b);
    if (!b) return err_set(DLCA_ERR_NOMEM, "tn: out of memory");
    int rc = vk_buffer_create(d->vk, &b->buf, bytes, host ? VK_BUFFER_STAGING : VK_BUFFER_DEVICE);
    if (rc) {
        free(b);
        return rc;
    }
    b->cls = cls;
    d->stats.buffers_created++;
    d->stats.bytes_created += bytes;
    *out = b;
    return DLCA_OK;
}

int tn_vk__block_make(tn_vk_device *d, size_t bytes, int host, tn_vk_block **out)
{
    return block_create(d, align_up(bytes ? bytes : 4, 4), host, -1, out);
}

static void block_destroy(tn_vk_device *d, tn_vk_block *b)
{
    if (!b->external) vk_buffer_free(d->vk, &b->buf);
    free(b);
}

/* Into the free list of its class, or gone when it has none. */
static void block_cache(tn_vk_device *d, tn_vk_block *b)
{
    if (b->cls < 0 || b->external) {
        block_destroy(d, b);
        return;
    }
    b->next = d->free_list[b->cls];
    d->free_list[b->cls] = b;
    d->stats.buffers_cached++;
}

void tn_vk__block_release(tn_vk_device *d, tn_vk_block *b)
{
    if (b->external) { /* the caller's buffer: only our record of it goes */
        free(b);
        return;
    }
    if (d->mode == TN_VK_IDLE) {
        block_cache(d, b);
        return;
    }
    b->next = d->deferred;
    d->deferred = b;
    d->n_deferred++;
}

void tn_vk__recycle(tn_vk_device *d)
{
    while (d->deferred) {
        tn_vk_block *b = d->deferred;
        d->deferred = b->next;
        block_cache(d, b);
    }
    d->n_deferred = 0;
    while (d->arena_busy) {
        tn_vk_block *b = d->arena_busy;
        d->arena_busy = b->next;
        b->next = d->arena_spare;
        d->arena_spare = b;
    }
    d->arena_at = 0;
}

static void list_destroy(tn_vk_device *d, tn_vk_block **list)
{
    while (*list) {
        tn_vk_block *b = *list;
        *list = b->next;
        block_destroy(d, b);
    }
}

int tn_vk_trim(tn_vk *dev)
{
    tn_vk_device *d = tn_vk__device(dev, "tn_vk_trim");
    if (!d) return DLCA_ERR;
    if (d->mode != TN_VK_IDLE) return err_set(DLCA_ERR, "tn_vk_trim: work is in flight (sync or retire first)");
    for (int c = 0; c <= TN_VK_HOST_CLASS; c++) list_destroy(d, &d->free_list[c]);
    list_destroy(d, &d->arena_spare);
    d->stats.buffers_cached = 0;
    return DLCA_OK;
}

void tn_vk__free_all(tn_vk_device *d)
{
    tn_vk_trim(&d->base);
    list_destroy(d, &d->arena_busy);
    if (d->arena_cur) block_destroy(d, d->arena_cur);
    d->arena_cur = NULL;
}

/* ---- the arena ---- */

int tn_vk__arena(tn_vk_device *d, size_t bytes, vk_view *view, void **host)
{
    size_t align = (size_t)d->vk->props.limits.minStorageBufferOffsetAlignment;
    size_t need = align_up(bytes ? bytes : 4, 16);
    size_t at = align_up(d->arena_at, align < 16 ? 16 : align);
    int rc;
    if (d->arena_cur && at + need > d->arena_cur->buf.size && d->mode == TN_VK_OWN) {
        /* full: let the GPU consume tn's own work, then start over (no new memory) */
        if ((rc = tn_vk_sync(&d->base))) return rc;
        at = 0;
    }
    if (!d->arena_cur || at + need > d->arena_cur->buf.size) {
        /* a recording cannot submit: move on to a spare block, or a new one */
        if (d->arena_cur) {
            d->arena_cur->next = d->arena_busy;
            d->arena_busy = d->arena_cur;
            d->arena_cur = NULL;
        }
        for (tn_vk_block **s = &d->arena_spare; *s; s = &(*s)->next)
            if ((*s)->buf.size >= need) {
                d->arena_cur = *s;
                *s = (*s)->next;
                break;
            }
        if (!d->arena_cur) {
            size_t size = d->opt.arena_bytes;
            while (size < need) size *= 2;
            if ((rc = block_create(d, size, 1, -1, &d->arena_cur))) return rc;
        }
        at = 0;
    }
    d->arena_at = at + need;
    *view = vk_view_of(&d->arena_cur->buf, at, need);
    *host = (char *)d->arena_cur->buf.mapped + at;
    return DLCA_OK;
}

int tn_vk__host_scratch(tn_vk_device *d, size_t bytes, vk_buffer **buf)
{
    bytes = align_up(bytes ? bytes : 4, 4);
    if (d->host_scratch.size < bytes) {
        if (d->mode != TN_VK_IDLE) return err_set(DLCA_ERR, "tn: the host scratch cannot grow while work is in flight");
        vk_buffer_free(d->vk, &d->host_scratch);
        int rc = vk_buffer_create(d->vk, &d->host_scratch, align_up(bytes, 4096), VK_BUFFER_STAGING);
        if (rc) return rc;
        d->stats.buffers_created++;
        d->stats.bytes_created += d->host_scratch.size;
    }
    *buf = &d->host_scratch;
    return DLCA_OK;
}

/* ---- the backend table's memory functions ---- */

static int check_storage(const tn_storage *s)
{
    if (s->dtype != TN_F32)
        return err_set(DLCA_ERR, "tn: float64 tensors stay on the CPU (the Vulkan backend is float32 only)");
    if (s->numel > TN_VK_MAX_NUMEL)
        return err_set(DLCA_ERR, "tn: %zu elements exceed the device tensor limit of %zu", s->numel, TN_VK_MAX_NUMEL);
    return DLCA_OK;
}

/* A block for `numel` floats: [keep, numel) zeroed when `zero` (or when growing), [0, keep) copied
 * from old. */
static int block_for(tn_vk_device *d, size_t numel, int zero, const vk_buffer *old, size_t keep, tn_vk_block **out)
{
    size_t bytes = (numel ? numel : 1) * sizeof(float), class_bytes = bytes;
    int host = numel <= TN_VK_HOST_NUMEL;
    int cls = host ? TN_VK_HOST_CLASS : size_class(bytes, &class_bytes), rc = DLCA_OK;
    if (host) class_bytes = TN_VK_HOST_NUMEL * sizeof(float);
    tn_vk_block *b = cls >= 0 ? d->free_list[cls] : NULL;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    if ((zero || keep) && (rc = tn_vk__cmd(d, &cmd))) return rc; /* before taking a block: may fail */
    if (b) {
        d->free_list[cls] = b->next;
        d->stats.buffers_cached--;
        d->stats.buffers_reused++;
    } else if ((rc = block_create(d, class_bytes, host, cls, &b))) {
        return rc;
    }
    b->next = NULL;
    d->stats.live_storages++;
    *out = b;
    if (!zero && !keep) return DLCA_OK;
    if (keep) vkCmdCopyBuffer(cmd, old->buffer, b->buf.buffer, 1, &(VkBufferCopy){0, 0, keep * sizeof(float)});
    if (numel > keep)
        vkCmdFillBuffer(cmd, b->buf.buffer, keep * sizeof(float), (numel - keep) * sizeof(float), 0);
    return tn_vk__recorded(d);
}

int tn_vk__alloc(tn_storage *s, int zero)
{
    int rc = check_storage(s);
    return rc ? rc : block_for(tn_vk__dev(s), s->numel, zero, NULL, 0, (tn_vk_block **)&s->handle);
}

void tn_vk__release(tn_storage *s)
{
    tn_vk_block *b = s->handle;
    if (!b) return;
    tn_vk_device *d = tn_vk__dev(s);
    tn_vk__block_release(d, b);
    s->handle = NULL;
    d->stats.live_storages--;
}

int tn_vk__grow(tn_storage *s, size_t numel)
{
    tn_vk_block *b = NULL;
    tn_storage probe = *s;
    probe.numel = numel;
    int rc = check_storage(&probe);
    if (!rc) rc = block_for(tn_vk__dev(s), numel, 1, tn_vk__buffer(s), numel < s->numel ? numel : s->numel, &b);
    if (rc) return rc;
    tn_vk__release(s);
    s->handle = b;
    s->numel = numel;
    return DLCA_OK;
}

int tn_vk__upload(tn_storage *s, size_t off, const void *src, size_t n)
{
    tn_vk_device *d = tn_vk__dev(s);
    size_t bytes = n * sizeof(float);
    VkCommandBuffer cmd;
    vk_view view;
    void *host;
    if (n == 0) return DLCA_OK;
    if (bytes > tn_vk_upload_inline && (d->mode == TN_VK_IDLE || d->mode == TN_VK_OWN)) {
        /* large: wait for recorded work (it may write s), then stage */
        int rc = tn_vk_sync(&d->base);
        return rc ? rc : vk_buffer_upload(d->vk, tn_vk__buffer(s), off * sizeof(float), src, bytes);
    }
    int rc = tn_vk__arena(d, bytes, &view, &host);
    if (!rc) rc = tn_vk__cmd(d, &cmd);
    if (rc) return rc;
    memcpy(host, src, bytes);
    VkBufferCopy region = {view.offset, off * sizeof(float), bytes};
    vkCmdCopyBuffer(cmd, view.buffer->buffer, tn_vk__buffer(s)->buffer, 1, &region);
    return tn_vk__recorded(d);
}

int tn_vk__download(const tn_storage *s, size_t off, void *dst, size_t n)
{
    tn_vk_device *d = tn_vk__dev(s);
    if (n == 0) return DLCA_OK;
    int rc = tn_vk__host_read(d, "tn");
    if (rc) return rc;
    const vk_buffer *buf = tn_vk__buffer(s);
    if (buf->mapped) { /* a small host-visible block: read in place, after the work that wrote it */
        memcpy(dst, (const char *)buf->mapped + off * sizeof(float), n * sizeof(float));
        return DLCA_OK;
    }
    return vk_buffer_download(d->vk, buf, off * sizeof(float), dst, n * sizeof(float));
}

/* ---- sharing buffers with another engine ---- */

tn_tensor *tn_vk_wrap(tn_vk *dev, vk_buffer *buffer, size_t offset_bytes, int ndim, const size_t *shape)
{
    tn_vk_device *d = tn_vk__device(dev, "tn_vk_wrap");
    if (!d) return NULL;
    if (!buffer || !buffer->buffer) return err_set(DLCA_ERR, "tn_vk_wrap: no buffer"), NULL;
    if (ndim < 0 || ndim > TN_MAX_DIMS) return err_set(DLCA_ERR, "tn_vk_wrap: %d dims", ndim), NULL;
    size_t numel = tn__numel(ndim, shape), bytes = numel * sizeof(float);
    if (offset_bytes % sizeof(float) || offset_bytes > buffer->size || bytes > buffer->size - offset_bytes)
        return err_set(DLCA_ERR, "tn_vk_wrap: %zu floats at byte %zu do not fit a buffer of %llu bytes (or the offset "
                                 "is not a multiple of 4)", numel, offset_bytes, (unsigned long long)buffer->size), NULL;
    if (buffer->size / sizeof(float) > TN_VK_MAX_NUMEL)
        return err_set(DLCA_ERR, "tn_vk_wrap: a buffer above %zu floats", TN_VK_MAX_NUMEL), NULL;
    /* a CPU zero-element tensor gives the tensor and storage structs; the storage is then made
     * to describe the caller's buffer */
    size_t zero = 0;
    tn_tensor *t = tn__alloc(NULL, TN_F32, 1, &zero, 0);
    tn_vk_block *b = t ? calloc(1, sizeof *b) : NULL;
    if (!b) {
        tn_free(t);
        return err_set(DLCA_ERR_NOMEM, "tn_vk_wrap: out of memory"), NULL;
    }
    tn_storage *s = t->storage;
    tn_cpu_backend.release(s);
    *b = (tn_vk_block){.buf = *buffer, .cls = -1, .external = 1};
    s->data = NULL;
    s->handle = b;
    s->backend = &tn_vk_backend;
    s->dev = dev;
    s->device = TN_VULKAN;
    s->numel = buffer->size / sizeof(float);
    d->stats.live_storages++;
    ptrdiff_t stride[TN_MAX_DIMS], step = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        stride[i] = step;
        step *= (ptrdiff_t)shape[i];
    }
    tn_tensor *y = tn__view(t, ndim, shape, stride, offset_bytes / sizeof(float));
    tn_free(t);
    return y;
}

int tn_vk_view(const tn_tensor *t, vk_view *out)
{
    if (!t) return tn__null("tn_vk_view");
    if (!tn_vk_of(t)) return err_set(DLCA_ERR, "tn_vk_view: not a Vulkan tensor");
    if (!tn_is_contiguous(t)) return err_set(DLCA_ERR, "tn_vk_view: not contiguous (tn_contiguous first)");
    tn_vk_device *d = tn_vk__dev(t->storage);
    size_t align = (size_t)d->vk->props.limits.minStorageBufferOffsetAlignment, offset = t->offset * sizeof(float);
    *out = vk_view_of(tn_vk__buffer(t->storage), offset, tn_numel(t) * sizeof(float));
    if (align && offset % align)
        return err_set(DLCA_ERR, "tn_vk_view: byte offset %zu is not a multiple of minStorageBufferOffsetAlignment "
                                 "%zu (bind the whole buffer and index from offset / 4)", offset, align);
    return DLCA_OK;
}
