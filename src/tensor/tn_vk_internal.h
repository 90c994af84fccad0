/* tn_vk_internal.h: what tn_vk.c (binding, memory, recording), tn_vk_kernels.c (the backend
 * table) and tn_vk_optim.c (parameters, optimizers, clipping) share.
 *
 * Recording rules: a kernel gets the open command buffer with tn_vk__dispatch*, which records
 * the dispatch and a barrier after it. Per-op host data (shapes and strides, indices, step
 * values) goes into the arena, a host-visible buffer bound directly as a storage buffer and
 * valid until the next submission; an op takes all its arena space in ONE tn_vk__arena call,
 * because a later call may submit and reuse the space. */
#ifndef DLCA_TN_VK_INTERNAL_H
#define DLCA_TN_VK_INTERNAL_H

#include "tn_internal.h"
#include "tn_vk.h"
#include "vk_buffer.h"
#include "vk_pipeline.h"

#include <stdint.h>

/* Largest device tensor: offsets and strides travel as int32, elements as 4 bytes. */
#define TN_VK_MAX_NUMEL ((size_t)1 << 30)

/* The memory functions of the backend table (tn_vk.c); upload and download are in elements. */
int tn_vk__alloc(tn_storage *s);
void tn_vk__release(tn_storage *s);
int tn_vk__grow(tn_storage *s, size_t numel);
int tn_vk__upload(tn_storage *s, size_t off, const void *src, size_t n);
int tn_vk__download(const tn_storage *s, size_t off, void *dst, size_t n);

/* The bound context, or NULL with a message naming `op`. */
vk_context *tn_vk__context(const char *op);

/* The device buffer behind a device storage. */
static inline vk_buffer *tn_vk__buffer(const tn_storage *s) { return (vk_buffer *)s->handle; }

/* The whole buffer of a tensor's storage, for one binding (shaders add the element offset). */
static inline vk_view tn_vk__view(const tn_tensor *t) { return vk_view_all(tn_vk__buffer(t->storage)); }

/* `bytes` of host-visible scratch: *view binds it, *host writes it (before recording). */
int tn_vk__arena(size_t bytes, vk_view *view, void **host);

/* The open command buffer, begun on demand. */
int tn_vk__cmd(VkCommandBuffer *cmd);

/* After a command was recorded: a barrier so later commands see its writes, and a submission
 * when the buffer is long (or DLCA_TN_SYNC=1). */
int tn_vk__recorded(void);

/* vk_dispatch / vk_dispatch_1d into the open command buffer, then tn_vk__recorded. */
int tn_vk__dispatch(vk_pipeline_id id, const vk_view *views, uint32_t n_views, const void *push,
                    uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz);
int tn_vk__dispatch_1d(vk_pipeline_id id, const vk_view *views, uint32_t n_views, const void *push,
                       uint32_t push_size, uint64_t count);

/* Workgroups for `count` groups' worth of work as x times y (x up to the device limit). */
int tn_vk__groups_2d(uint64_t count, uint32_t *gx, uint32_t *gy);

/* A host-visible buffer for a kernel's output the host reads after tn_vk_sync (argmax indices);
 * free it with tn_vk__scratch_free (deferred while work is pending). */
int tn_vk__scratch(size_t bytes, vk_buffer **buf);
void tn_vk__scratch_free(vk_buffer *buf);

/* Records the reduction of a into out (a's ndim, extent 1 on reduced dims; see
 * glsl/tn_reduce.comp). For max, arg (host-visible) gets int32 C-order indices into a of the
 * first maxima, in C order of out. */
enum { TN_VK_REDUCE_SUM = 0, TN_VK_REDUCE_MAX = 1, TN_VK_REDUCE_SUMSQ = 2 };
int tn_vk__reduce(int mode, tn_tensor *out, const tn_tensor *a, vk_buffer *arg);

#endif
