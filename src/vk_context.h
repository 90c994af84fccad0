/* vk_context.h: the Vulkan instance, the chosen device and its compute queue, plus what
 * every other vk_ module shares: command pool, fence, timestamp pool, staging buffer,
 * pipelines and the device-memory counters. One context per process is the normal case. */
#ifndef DLCA_VK_CONTEXT_H
#define DLCA_VK_CONTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <vulkan/vulkan.h>

struct vk_pipeline;
struct vk_buffer;

enum { VK_TIMESTAMP_COUNT = 1024 }; /* queries in the context's timestamp pool */

typedef struct vk_context {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger; /* only with DLCA_VALIDATE=1 */
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    int device_index; /* index in vkEnumeratePhysicalDevices order, as `dlca devices` prints */
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory;
    VkCommandPool command_pool;
    VkFence fence;                  /* reused by every submit-and-wait */
    uint64_t timeout_ns;            /* a submission running longer counts as a hang */
    int hung;                       /* a submission timed out: the queue is unusable */
    int hung_drained;               /* ... and the device was waited for before freeing buffers */
    VkQueryPool timestamps;         /* VK_NULL_HANDLE when the queue has no timestamps */
    uint32_t timestamp_valid_bits;  /* 0: timestamp writes are no-ops and read back as 0 */
    double timestamp_period_ns;     /* ns per timestamp tick */
    PFN_vkCmdPushDescriptorSetKHR cmd_push_descriptor_set;
    struct vk_pipeline *pipelines;  /* created on first use, see vk_pipeline.h */
    struct vk_specialized *specialized; /* vk_pipeline_create_specialized's pipelines, shared */
    struct vk_buffer *staging;      /* host-visible bounce buffer for uploads and downloads */
    size_t device_bytes;            /* bytes of device-local buffers alive now */
    size_t peak_device_bytes;       /* highest device_bytes so far */
    uint64_t dispatches;            /* instrumentation (dlca bench): vk_dispatch calls recorded so far */
    uint64_t submissions;           /* instrumentation (dlca bench): queue submissions so far */
    int validate;                   /* validation layer on (DLCA_VALIDATE=1) */
    int subgroup_shuffle;           /* compute shaders may shuffle within a subgroup (fused_step_backward.comp) */
    int pipeline_statistics;        /* print each pipeline's compiler statistics (DLCA_PIPELINE_STATS=1,
                                       where VK_KHR_pipeline_executable_properties exists) */
    int unchecked_buffers;          /* pipelines ask for no bounds checks on storage and uniform
                                       buffers (VK_EXT_pipeline_robustness; DLCA_ROBUST=1 keeps them) */
    int validation_errors;          /* warnings + errors reported by the layer; kept by vk_context_free */
} vk_context;

/* Opens device `device_index` (its position in `dlca devices`), or with device_index < 0 the
 * best one: discrete > integrated > virtual > cpu. (The environment's DLCA_DEVICE is read by
 * the commands' device choice, ca_backend_open, not here.)
 * Returns DLCA_ERR_NODEV (message with a hint) when there is no loader or no device. */
int vk_context_init(vk_context *vk, int device_index);

/* Like vk_context_init with a device spec: NULL, "" or "auto"; an index ("0"); a type
 * ("discrete", "integrated", "virtual", "cpu"); or a case-insensitive part of the name. */
int vk_context_init_spec(vk_context *vk, const char *spec);

/* Destroys everything the context holds. Safe on a zeroed or partly initialised context;
 * leaves validation_errors so a test can check it after the layer's last reports. */
void vk_context_free(vk_context *vk);

/* Validation messages reported to any context of this process so far (0 without DLCA_VALIDATE=1). */
int vk_validation_message_count(void);

/* Prints one line per device: index, name, type, device-local MiB, API version.
 * Returns DLCA_ERR_NODEV when there is none. */
int vk_list_devices(FILE *out);

/* "discrete", "integrated", "virtual", "cpu" or "other". */
const char *vk_device_type_name(VkPhysicalDeviceType type);

#endif
