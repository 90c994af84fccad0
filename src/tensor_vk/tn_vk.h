/* tn_vk.h: tn tensors on a Vulkan device (module prefix tn_vk_). A device object is made from a
 * caller's vk_context; several may exist at once (each with its own memory, command buffer and
 * pipelines). It is a tn_dev, so tn_to_device, tn_zeros_on, tn_params_to_device and the noise
 * ops take it directly. A device tensor's storage is a float32 region of a device-local
 * vk_buffer; kernels read and write strided views of it, so views need no copies.
 *
 * Execution. By default ops record their dispatches, each followed by a barrier, into a command
 * buffer of tn's own, submitted and waited for only when the host needs data (a download,
 * tn_get, tn_item, tn_to_cpu, max's argmax indices, a reported gradient norm, an optimizer
 * status), when it grows long, or by tn_vk_sync.
 * Between tn_vk_record_begin(dev, cmd) and tn_vk_record_end(dev) every op records into the
 * CALLER's command buffer instead (with the barriers it needs) and nothing is submitted: the
 * caller submits cmd once, waits for its fence, then calls tn_vk_retire(dev). Until then a host
 * read of device data fails with a message, and memory released in between (dead tensors,
 * per-op metadata) is neither reused nor freed. A recording needs no host read at all:
 * uploads, indices and step values travel in a host-visible arena that the commands copy from.
 *
 * Memory. Storages come from a caching allocator: a released buffer goes to a free list of its
 * size class (classes a quarter of a power of two apart) and is reused once the GPU is done with
 * it, so building the same graph every step creates no Vulkan buffer after the first step
 * (tn_vk_stats_get counts). tn_vk_wrap views a caller's buffer as a tensor; tn_vk_view gives
 * the buffer region of a tensor to bind in a caller's own dispatches.
 *
 * Only float32 lives on a device. Not thread-safe: use a device from one thread. */
#ifndef DLCA_TN_VK_H
#define DLCA_TN_VK_H

#include "tn_optim.h"
#include "tn_tensor.h"
#include "vk_buffer.h"
#include "vk_context.h"

#include <stdint.h>

/* A Vulkan tn device: a tn_dev whose backend is this module's. */
typedef tn_dev tn_vk;

/* How a device behaves; a zeroed struct (or NULL) gives the defaults. */
typedef struct {
    int sync_each;         /* submit and wait after every op (a debug switch that pins a failing
                              kernel to its op); ignored while recording into a caller's buffer */
    uint32_t max_recorded; /* own command buffer: submit after this many commands (0: 1024) */
    size_t arena_bytes;    /* size of an arena block for per-op metadata and uploads (0: 1 MiB) */
} tn_vk_options;

/* Counters of one device. */
typedef struct {
    long live_storages;        /* device storages alive (wraps included) */
    uint64_t buffers_created;  /* vk_buffer_create calls (storages, arena blocks, scratch): each is
                                  one vkAllocateMemory; a steady training loop adds none */
    uint64_t bytes_created;
    uint64_t buffers_reused;   /* storage allocations served from the free lists */
    uint64_t buffers_cached;   /* buffers in the free lists now */
    uint64_t submissions;      /* submissions of tn's own command buffer */
} tn_vk_stats;

/* A device on `vk` (which must outlive it). */
int tn_vk_open(tn_vk **dev, vk_context *vk, const tn_vk_options *options);

/* Waits for tn's own work and frees the device. Fails (and keeps it) while device tensors are
 * alive or recorded work is not retired. NULL is fine. */
int tn_vk_close(tn_vk *dev);

/* Submits tn's own recorded work and waits for it (not while recording for a caller). */
int tn_vk_sync(tn_vk *dev);

/* Ops record into `cmd` (begun by the caller, submitted by the caller) until tn_vk_record_end.
 * tn's own pending work is submitted and waited for first. A barrier is recorded first, so the
 * caller's earlier commands are visible to tn's. */
int tn_vk_record_begin(tn_vk *dev, VkCommandBuffer cmd);

/* Ends a recording: records a barrier making tn's writes visible to later commands and, after
 * the fence, to the host. The caller may begin another recording before retiring this one. */
int tn_vk_record_end(tn_vk *dev);

/* The caller's submissions of every ended recording have finished (after their fence): their
 * memory may be reused and host reads work again. */
int tn_vk_retire(tn_vk *dev);

/* The command buffer tn records into now (the caller's while recording, else tn's own), for an
 * engine recording its own dispatches between tn's ops (a custom function). Call tn_vk_barrier
 * after them. */
int tn_vk_command(tn_vk *dev, VkCommandBuffer *cmd);

/* Records tn's barrier (every compute and transfer write before -> every access after). */
int tn_vk_barrier(tn_vk *dev);

/* A float32 tensor of `shape` viewing buffer[offset_bytes ..) (caller's memory: tn never frees
 * it; it must outlive the tensor and every graph using it). offset_bytes must be a multiple of
 * 4 and the region inside the buffer. Not recorded: a leaf, or the output of a custom forward. */
tn_tensor *tn_vk_wrap(tn_vk *dev, vk_buffer *buffer, size_t offset_bytes, int ndim, const size_t *shape);

/* The buffer region holding a contiguous device tensor, to bind in another engine's dispatch:
 * out->offset = byte offset of the first element, out->size = numel * 4. Valid while t lives.
 * Fails for a CPU or non-contiguous tensor, and when the offset is not a multiple of the
 * device's minStorageBufferOffsetAlignment (bind vk_view_all(out->buffer) and index from
 * out->offset / 4 then, or give tn_params an align). */
int tn_vk_view(const tn_tensor *t, vk_view *out);

/* The device's counters. */
void tn_vk_stats_get(const tn_vk *dev, tn_vk_stats *out);

/* Frees the cached buffers no storage uses (not while work is in flight). */
int tn_vk_trim(tn_vk *dev);

/* The Vulkan device a tensor lives on, or NULL (CPU, or another backend). */
tn_vk *tn_vk_of(const tn_tensor *t);

#endif
