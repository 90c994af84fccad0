/* vk_buffer.c: buffer + memory creation, device-memory accounting, staged copies, fills. */
#include "vk_buffer.h"

#include <stdlib.h>
#include <string.h>

#include "vk_check.h"
#include "vk_command.h"

/* Copies larger than this go through the staging buffer in chunks. */
static const VkDeviceSize vk_staging_max = 64u << 20;
static const VkDeviceSize vk_staging_min = 4u << 20;

static double mib(VkDeviceSize bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* A memory type allowed by `bits` with all of `required`; one with `preferred` too if any. */
static int memory_type(const vk_context *vk, uint32_t bits, VkMemoryPropertyFlags required,
                       VkMemoryPropertyFlags preferred)
{
    int fallback = -1;
    for (uint32_t i = 0; i < vk->memory.memoryTypeCount; i++) {
        VkMemoryPropertyFlags flags = vk->memory.memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || (flags & required) != required) continue;
        if ((flags & preferred) == preferred) return (int)i;
        if (fallback < 0) fallback = (int)i;
    }
    return fallback;
}

/* Out-of-memory results name the size asked for; others go through vk_check_result. */
static int oom_check(const vk_context *vk, VkResult r, const char *call, const char *kind_name, VkDeviceSize bytes)
{
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        return err_set(DLCA_ERR, "out of %s memory for a %s buffer of %.1f MiB (%.1f MiB of device buffers already allocated)",
                       r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "GPU" : "host", kind_name, mib(bytes), mib(vk->device_bytes));
    return vk_check_result(r, call, __FILE__, __LINE__);
}

static VkDeviceSize max_allocation(const vk_context *vk)
{
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties2(vk->physical, &props);
    return m3.maxMemoryAllocationSize;
}

static int memory_allocate(vk_context *vk, vk_buffer *buf, const char *kind_name)
{
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->device, buf->buffer, &req);
    int type = buf->kind == VK_BUFFER_DEVICE
                   ? memory_type(vk, req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
                   : memory_type(vk, req.memoryTypeBits,
                                 VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                 VK_MEMORY_PROPERTY_HOST_CACHED_BIT); /* cached: fast readback */
    if (type < 0) return err_set(DLCA_ERR, "no memory type for a %s buffer on %s", kind_name, vk->props.deviceName);
    VkDeviceSize heap = vk->memory.memoryHeaps[vk->memory.memoryTypes[type].heapIndex].size;
    VkDeviceSize limit = max_allocation(vk);
    if (req.size > heap || (limit && req.size > limit))
        return err_set(DLCA_ERR, "%s buffer of %.1f MiB is larger than %s allows (heap %.1f MiB, one allocation at most %.1f MiB)",
                       kind_name, mib(buf->size), vk->props.deviceName, mib(heap), mib(limit));
    VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    VkResult r = vkAllocateMemory(vk->device, &alloc, NULL, &buf->memory);
    if (r != VK_SUCCESS) return oom_check(vk, r, "vkAllocateMemory", kind_name, buf->size);
    buf->allocated = req.size;
    if (buf->kind == VK_BUFFER_DEVICE) {
        vk->device_bytes += buf->allocated;
        if (vk->device_bytes > vk->peak_device_bytes) vk->peak_device_bytes = vk->device_bytes;
    }
    return DLCA_OK;
}

static int buffer_create(vk_context *vk, vk_buffer *buf, VkDeviceSize bytes, vk_buffer_kind kind)
{
    const char *kind_name = kind == VK_BUFFER_DEVICE ? "device" : "staging";
    if (bytes == 0) return err_set(DLCA_ERR, "a %s buffer of 0 bytes was asked for", kind_name);
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = bytes,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(vk->device, &info, NULL, &buf->buffer);
    if (r != VK_SUCCESS) return oom_check(vk, r, "vkCreateBuffer", kind_name, bytes);
    int rc = memory_allocate(vk, buf, kind_name);
    if (rc) return rc;
    VK_CHECK(vkBindBufferMemory(vk->device, buf->buffer, buf->memory, 0));
    if (kind == VK_BUFFER_STAGING) VK_CHECK(vkMapMemory(vk->device, buf->memory, 0, VK_WHOLE_SIZE, 0, &buf->mapped));
    return DLCA_OK;
}

int vk_buffer_create(vk_context *vk, vk_buffer *buf, VkDeviceSize bytes, vk_buffer_kind kind)
{
    memset(buf, 0, sizeof *buf);
    buf->kind = kind;
    buf->size = bytes;
    int rc = buffer_create(vk, buf, bytes, kind);
    if (rc) vk_buffer_free(vk, buf);
    return rc;
}

void vk_buffer_free(vk_context *vk, vk_buffer *buf)
{
    if (!buf) return;
    /* A submission that outlived its timeout may still be using the buffer (a slow device, not a
     * dead one: lavapipe on a long training step): freed under it, the driver crashed at exit. */
    if (vk->hung && buf->buffer && !vk->hung_drained) {
        vkDeviceWaitIdle(vk->device);
        vk->hung_drained = 1;
    }
    if (buf->mapped) vkUnmapMemory(vk->device, buf->memory);
    if (buf->buffer) vkDestroyBuffer(vk->device, buf->buffer, NULL);
    if (buf->memory) {
        vkFreeMemory(vk->device, buf->memory, NULL);
        /* Counted in memory_allocate right after vkAllocateMemory succeeded. */
        if (buf->kind == VK_BUFFER_DEVICE) vk->device_bytes -= buf->allocated;
    }
    memset(buf, 0, sizeof *buf);
}

int vk_view_inside(vk_view *view)
{
    if (!view->buffer || !view->buffer->buffer) return 0;
    VkDeviceSize total = view->buffer->size;
    if (view->offset > total || (view->size && view->size > total - view->offset)) return 0;
    if (!view->size) view->size = total - view->offset;
    return 1;
}

int vk_view_check(vk_view *view, const char *what)
{
    if (vk_view_inside(view)) return DLCA_OK;
    if (!view->buffer || !view->buffer->buffer) return err_set(DLCA_ERR, "%s: view of no buffer", what);
    return err_set(DLCA_ERR, "%s: view [%llu, +%llu) outside its buffer of %llu bytes", what,
                   (unsigned long long)view->offset, (unsigned long long)view->size,
                   (unsigned long long)view->buffer->size);
}

static int range_check(const vk_buffer *buf, VkDeviceSize offset, VkDeviceSize bytes, const char *what)
{
    if (offset > buf->size || bytes > buf->size - offset)
        return err_set(DLCA_ERR, "%s of %llu bytes at offset %llu overruns a buffer of %llu bytes", what,
                       (unsigned long long)bytes, (unsigned long long)offset, (unsigned long long)buf->size);
    return DLCA_OK;
}

/* The context's staging buffer, grown to hold min(bytes, vk_staging_max). */
static int staging_get(vk_context *vk, VkDeviceSize bytes, vk_buffer **out)
{
    VkDeviceSize want = bytes < vk_staging_max ? bytes : vk_staging_max;
    if (want < vk_staging_min) want = vk_staging_min;
    if (!vk->staging) {
        vk->staging = calloc(1, sizeof *vk->staging);
        if (!vk->staging) return err_set(DLCA_ERR_NOMEM, "out of host memory for the staging buffer");
    }
    if (vk->staging->size < want && vk->staging->size < bytes) {
        vk_buffer_free(vk, vk->staging);
        int rc = vk_buffer_create(vk, vk->staging, want, VK_BUFFER_STAGING);
        if (rc) return rc;
    }
    *out = vk->staging;
    return DLCA_OK;
}

/* One staged copy of `bytes` between staging[0..) and buf[offset..). */
static int staged_copy(vk_context *vk, const vk_buffer *staging, const vk_buffer *buf, VkDeviceSize offset,
                       VkDeviceSize bytes, int to_device)
{
    VkCommandBuffer cmd;
    int rc = vk_cmd_begin(vk, &cmd);
    if (rc) return rc;
    /* Orders the copy after earlier submissions' kernels and copies on this queue. */
    vk_cmd_barrier_compute_to_transfer(cmd);
    VkBufferCopy region = {
        .srcOffset = to_device ? 0 : offset,
        .dstOffset = to_device ? offset : 0,
        .size = bytes,
    };
    if (to_device) {
        vkCmdCopyBuffer(cmd, staging->buffer, buf->buffer, 1, &region);
        vk_cmd_barrier_transfer_to_compute(cmd); /* visible to later submissions' kernels */
    } else {
        vkCmdCopyBuffer(cmd, buf->buffer, staging->buffer, 1, &region);
        vk_cmd_barrier_to_host(cmd);
    }
    return vk_cmd_finish(vk, cmd);
}

int vk_buffer_upload(vk_context *vk, vk_buffer *buf, VkDeviceSize offset, const void *data, VkDeviceSize bytes)
{
    int rc = range_check(buf, offset, bytes, "upload");
    if (rc || bytes == 0) return rc;
    if (buf->mapped) {
        memcpy((char *)buf->mapped + offset, data, bytes);
        return DLCA_OK;
    }
    vk_buffer *staging = NULL;
    if ((rc = staging_get(vk, bytes, &staging))) return rc;
    for (VkDeviceSize done = 0; done < bytes && !rc;) {
        VkDeviceSize n = bytes - done < staging->size ? bytes - done : staging->size;
        memcpy(staging->mapped, (const char *)data + done, n);
        rc = staged_copy(vk, staging, buf, offset + done, n, 1);
        done += n;
    }
    return rc;
}

int vk_buffer_download(vk_context *vk, const vk_buffer *buf, VkDeviceSize offset, void *data, VkDeviceSize bytes)
{
    int rc = range_check(buf, offset, bytes, "download");
    if (rc || bytes == 0) return rc;
    if (buf->mapped) {
        memcpy(data, (const char *)buf->mapped + offset, bytes);
        return DLCA_OK;
    }
    vk_buffer *staging = NULL;
    if ((rc = staging_get(vk, bytes, &staging))) return rc;
    for (VkDeviceSize done = 0; done < bytes && !rc;) {
        VkDeviceSize n = bytes - done < staging->size ? bytes - done : staging->size;
        rc = staged_copy(vk, staging, buf, offset + done, n, 0);
        if (!rc) memcpy((char *)data + done, staging->mapped, n);
        done += n;
    }
    return rc;
}

int vk_buffer_fill(VkCommandBuffer cmd, vk_view view, uint32_t value)
{
    int rc = vk_view_check(&view, "fill");
    if (rc) return rc;
    if (view.offset % 4 || view.size % 4)
        return err_set(DLCA_ERR, "fill: offset %llu and size %llu must be multiples of 4",
                       (unsigned long long)view.offset, (unsigned long long)view.size);
    vkCmdFillBuffer(cmd, view.buffer->buffer, view.offset, view.size, value);
    return DLCA_OK;
}

int vk_buffer_fill_float(VkCommandBuffer cmd, vk_view view, float value)
{
    uint32_t bits;
    _Static_assert(sizeof bits == sizeof value, "float is 32 bits");
    memcpy(&bits, &value, sizeof bits);
    return vk_buffer_fill(cmd, view, bits);
}

int vk_buffer_zero(VkCommandBuffer cmd, vk_view view) { return vk_buffer_fill(cmd, view, 0); }
