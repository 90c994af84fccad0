/* vk_command.h: command buffers from the context's pool, the few barriers compute work needs,
 * submit-and-wait with a hang timeout, and GPU timestamps in nanoseconds. */
#ifndef DLCA_VK_COMMAND_H
#define DLCA_VK_COMMAND_H

#include "vk_context.h"

/* Allocates a primary command buffer and begins it. It may be submitted more than once. */
int vk_cmd_begin(vk_context *vk, VkCommandBuffer *cmd);

/* Ends recording. */
int vk_cmd_end(VkCommandBuffer cmd);

/* Submits an ended command buffer and waits for it, at most vk->timeout_ns; a timeout is
 * reported as a hang and makes every later submission on this context fail. */
int vk_cmd_submit_wait(vk_context *vk, VkCommandBuffer cmd);

/* Command buffers submitted one at a time as they are recorded, spread over the context's first
 * `queues` queues (0, or more than it has: all; buffer i on queue i % queues, in order on each),
 * then waited for together: the GPU runs the first while the host records the next, and work
 * that shares no buffer (a population's members) may run side by side on the device. */
typedef struct {
    vk_context *vk;
    uint32_t queues;    /* queues used, round-robin */
    uint32_t submitted; /* command buffers submitted so far */
} vk_spread;

void vk_spread_begin(vk_context *vk, vk_spread *spread, uint32_t queues);

/* Submits an ended command buffer to the next queue, without waiting. */
int vk_spread_submit(vk_spread *spread, VkCommandBuffer cmd);

/* Waits for everything submitted (at most vk->timeout_ns; a timeout is a hang, as in
 * vk_cmd_submit_wait). Call it whenever anything was submitted, also after a failure, before
 * freeing the command buffers; nothing submitted: returns at once. */
int vk_spread_wait(vk_spread *spread);

/* Returns the command buffer to the pool; safe on VK_NULL_HANDLE. Not while it is pending. */
void vk_cmd_free(vk_context *vk, VkCommandBuffer cmd);

/* End + submit-and-wait + free: the usual way to run a one-off recording. On a hang the
 * buffer is still pending and is deliberately leaked. */
int vk_cmd_finish(vk_context *vk, VkCommandBuffer cmd);

/* Compute writes before -> compute reads/writes after (between dependent dispatches). */
void vk_cmd_barrier(VkCommandBuffer cmd);

/* Transfer writes (copy, fill) before -> compute reads/writes after. */
void vk_cmd_barrier_transfer_to_compute(VkCommandBuffer cmd);

/* Compute and transfer accesses before -> transfers (copies, fills) after. */
void vk_cmd_barrier_compute_to_transfer(VkCommandBuffer cmd);

/* Compute and transfer writes before -> host reads after the fence (mapped memory). */
void vk_cmd_barrier_to_host(VkCommandBuffer cmd);

/* Records a reset of timestamps [first, first+count); needed before they are written again. */
int vk_cmd_timestamps_reset(vk_context *vk, VkCommandBuffer cmd, uint32_t first, uint32_t count);

/* Records a timestamp into query `index` once all earlier commands finished.
 * A no-op on queues without timestamps (vk->timestamp_valid_bits == 0). */
int vk_cmd_timestamp(vk_context *vk, VkCommandBuffer cmd, uint32_t index);

/* Reads timestamps [first, first+count) of a completed submission as ns since an arbitrary
 * origin. Without timestamp support, fills zeros. An unwritten query is an error. */
int vk_timestamps_read(vk_context *vk, uint32_t first, uint32_t count, uint64_t *ns);

#endif
