/* vk_command.c: command buffers, barriers, submit-and-wait, timestamps. */
#include "vk_command.h"

#include <string.h>

#include "vk_check.h"

int vk_cmd_begin(vk_context *vk, VkCommandBuffer *cmd)
{
    *cmd = VK_NULL_HANDLE;
    VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = vk->command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VK_CHECK(vkAllocateCommandBuffers(vk->device, &alloc, cmd));
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    int rc = VK_STATUS(vkBeginCommandBuffer(*cmd, &begin));
    if (rc) {
        vk_cmd_free(vk, *cmd);
        *cmd = VK_NULL_HANDLE;
    }
    return rc;
}

int vk_cmd_end(VkCommandBuffer cmd)
{
    VK_CHECK(vkEndCommandBuffer(cmd));
    return DLCA_OK;
}

/* Waits for `count` fences, at most vk->timeout_ns; a timeout marks the context hung. */
static int wait_fences(vk_context *vk, uint32_t count, const VkFence *fences)
{
    VkResult r = vkWaitForFences(vk->device, count, fences, VK_TRUE, vk->timeout_ns);
    if (r == VK_TIMEOUT) {
        vk->hung = 1;
        return err_set(DLCA_ERR, "GPU work did not finish within %.0f s on %s (the last kernel it recorded: %s); a "
                                 "hang, or a slow device: raise DLCA_TIMEOUT",
                       (double)vk->timeout_ns * 1e-9, vk->props.deviceName, vk->last_kernel ? vk->last_kernel : "none");
    }
    VK_CHECK(r);
    return DLCA_OK;
}

/* After a hang the queues are unusable: every later submission is refused. */
static int refuse_if_hung(const vk_context *vk)
{
    return vk->hung ? err_set(DLCA_ERR, "the Vulkan queue hung earlier; no further work can run") : DLCA_OK;
}

int vk_cmd_submit_wait(vk_context *vk, VkCommandBuffer cmd)
{
    if (refuse_if_hung(vk)) return DLCA_ERR;
    VK_CHECK(vkResetFences(vk->device, 1, &vk->fence));
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
    };
    VK_CHECK(vkQueueSubmit(vk->queue, 1, &submit, vk->fence));
    vk->submissions++; /* instrumentation for dlca bench */
    return wait_fences(vk, 1, &vk->fence);
}

void vk_spread_begin(vk_context *vk, vk_spread *spread, uint32_t queues)
{
    spread->vk = vk;
    spread->queues = queues == 0 || queues > vk->queue_count ? vk->queue_count : queues;
    spread->submitted = 0;
}

int vk_spread_submit(vk_spread *spread, VkCommandBuffer cmd)
{
    vk_context *vk = spread->vk;
    if (refuse_if_hung(vk)) return DLCA_ERR;
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
    };
    VK_CHECK(vkQueueSubmit(vk->queues[spread->submitted % spread->queues], 1, &submit, VK_NULL_HANDLE));
    spread->submitted++, vk->submissions++; /* instrumentation for dlca bench */
    return DLCA_OK;
}

int vk_spread_wait(vk_spread *spread)
{
    vk_context *vk = spread->vk;
    uint32_t used = spread->submitted < spread->queues ? spread->submitted : spread->queues;
    if (used == 0 || vk->hung) return DLCA_OK;
    /* A submission of no work with a fence: it signals once everything before it on its queue ran. */
    int rc = VK_STATUS(vkResetFences(vk->device, used, vk->queue_fences));
    for (uint32_t q = 0; q < used && !rc; q++) rc = VK_STATUS(vkQueueSubmit(vk->queues[q], 0, NULL, vk->queue_fences[q]));
    if (rc) {
        vkDeviceWaitIdle(vk->device); /* what was submitted must end before the caller frees it */
        return rc;
    }
    return wait_fences(vk, used, vk->queue_fences);
}

void vk_cmd_free(vk_context *vk, VkCommandBuffer cmd)
{
    if (cmd) vkFreeCommandBuffers(vk->device, vk->command_pool, 1, &cmd);
}

int vk_cmd_finish(vk_context *vk, VkCommandBuffer cmd)
{
    int rc = vk_cmd_end(cmd);
    if (!rc) rc = vk_cmd_submit_wait(vk, cmd);
    if (!vk->hung) vk_cmd_free(vk, cmd);
    return rc;
}

static void memory_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                           VkPipelineStageFlags dst_stage, VkAccessFlags dst_access)
{
    VkMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = src_access,
        .dstAccessMask = dst_access,
    };
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &barrier, 0, NULL, 0, NULL);
}

void vk_cmd_barrier(VkCommandBuffer cmd)
{
    memory_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

void vk_cmd_barrier_transfer_to_compute(VkCommandBuffer cmd)
{
    memory_barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

void vk_cmd_barrier_compute_to_transfer(VkCommandBuffer cmd)
{
    /* Source includes transfers too, so back-to-back copies into one region are ordered. */
    memory_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
}

void vk_cmd_barrier_to_host(VkCommandBuffer cmd)
{
    memory_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                   VK_ACCESS_HOST_READ_BIT);
}

static int timestamp_range(uint32_t first, uint32_t count)
{
    if (first > VK_TIMESTAMP_COUNT || count > VK_TIMESTAMP_COUNT - first)
        return err_set(DLCA_ERR, "timestamps [%u, %u) outside the pool of %d", first, first + count, VK_TIMESTAMP_COUNT);
    return DLCA_OK;
}

int vk_cmd_timestamps_reset(vk_context *vk, VkCommandBuffer cmd, uint32_t first, uint32_t count)
{
    int rc = timestamp_range(first, count);
    if (rc || !vk->timestamps || count == 0) return rc;
    vkCmdResetQueryPool(cmd, vk->timestamps, first, count);
    return DLCA_OK;
}

int vk_cmd_timestamp(vk_context *vk, VkCommandBuffer cmd, uint32_t index)
{
    int rc = timestamp_range(index, 1);
    if (rc || !vk->timestamps) return rc;
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vk->timestamps, index);
    return DLCA_OK;
}

int vk_timestamps_read(vk_context *vk, uint32_t first, uint32_t count, uint64_t *ns)
{
    int rc = timestamp_range(first, count);
    if (rc) return rc;
    if (!vk->timestamps) {
        memset(ns, 0, count * sizeof *ns);
        return DLCA_OK;
    }
    uint64_t mask = vk->timestamp_valid_bits >= 64 ? ~0ull : (1ull << vk->timestamp_valid_bits) - 1;
    for (uint32_t i = 0; i < count; i++) {
        /* One at a time with availability instead of WAIT: an unwritten query must not block. */
        uint64_t result[2] = {0, 0};
        VkResult r = vkGetQueryPoolResults(vk->device, vk->timestamps, first + i, 1, sizeof result, result,
                                           sizeof result, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        if (r == VK_NOT_READY || (r == VK_SUCCESS && !result[1]))
            return err_set(DLCA_ERR, "timestamp %u is not available (not written by a completed submission)", first + i);
        VK_CHECK(r);
        ns[i] = (uint64_t)((double)(result[0] & mask) * vk->timestamp_period_ns);
    }
    return DLCA_OK;
}
