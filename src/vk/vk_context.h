/* vk_context.h: the Vulkan instance, the chosen device and its compute queue, plus what
 * every other vk_ module shares: command pool, fence, timestamp pool, staging buffer,
 * pipelines and the device-memory counters. One context per process is the normal case. */
#ifndef DLCA_VK_CONTEXT_H
#define DLCA_VK_CONTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <vulkan/vulkan.h>

#include "vk_cache.h"

struct vk_pipeline;
struct vk_buffer;

enum { VK_TIMESTAMP_COUNT = 1024 }; /* queries in the context's timestamp pool */
enum { VK_MAX_QUEUES = 16 };        /* queues a context opens at most (vk_spread) */

/* Per-dispatch timestamps (dlca bench --kernels): while a context points at one, every dispatch it
 * records is followed by a timestamp at pool index first + count (up to `limit`), and its kernel's
 * name kept. The first one of a command buffer (count 0) resets the range first; the caller sets
 * count to 0 before each command buffer it times. A timestamp after a dispatch waits for the work
 * before it, so dispatches that would share a barrier interval run one after another. */
typedef struct {
    uint32_t first, limit, count;
    const char *names[VK_TIMESTAMP_COUNT];
} vk_dispatch_stamps;

typedef struct vk_context {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger; /* only with DLCA_VALIDATE=1 */
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;                  /* queues[0]: every submit-and-wait */
    uint32_t queue_family;
    VkQueue queues[VK_MAX_QUEUES];  /* the family's queues the context opened, for independent work
                                       that may run side by side (vk_spread) */
    VkFence queue_fences[VK_MAX_QUEUES];
    uint32_t queue_count;           /* >= 1 */
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
    const char *last_kernel;        /* the kernel recorded last, named when a submission hangs */
    vk_dispatch_stamps *dispatch_stamps; /* NULL, or timestamps after each dispatch (dlca bench --kernels) */
    int validate;                   /* validation layer on (vk_context_options) */
    int subgroup_shuffle;           /* compute shaders may shuffle within a subgroup (fused_step_backward.comp) */
    int pipeline_statistics;        /* print each pipeline's compiler statistics (vk_context_options,
                                       where VK_KHR_pipeline_executable_properties exists) */
    int unchecked_buffers;          /* pipelines ask for no bounds checks on storage and uniform
                                       buffers (VK_EXT_pipeline_robustness; unless options.robust) */
    int validation_errors;          /* warnings + errors reported by the layer; kept by vk_context_free */
    vk_cache cache;                 /* the persistent pipeline cache (vk_context_options.pipeline_cache) */
    int creation_feedback;          /* VK_EXT_pipeline_creation_feedback: the driver says what it found cached */
    /* Start-up instrumentation (dlca bench): vk_context_init's parts in ms, the instance; choosing
     * and creating the device with its pool, fence and queries; the cache's key and file. Then every
     * pipeline made so far (table, specialised, run-time SPIR-V), how many of them the driver found
     * in the pipeline cache (counted where creation_feedback), and the ms spent making them. */
    double instance_ms, device_ms, cache_ms;
    uint32_t pipelines_created, pipeline_cache_hits;
    double pipeline_ms;
} vk_context;

/* How a context is made; a zeroed struct (or NULL) gives the defaults. */
typedef struct {
    int validate;       /* the Khronos validation layers, every message counted (DLCA_VALIDATE=1) */
    int robust;         /* keep the driver's bounds checks on buffer accesses (DLCA_ROBUST=1) */
    int pipeline_stats; /* print what the driver reports of each compiled kernel (DLCA_PIPELINE_STATS=1) */
    double timeout_s;   /* a submission not finished after this long is reported as a hang; 0: 120 s */
    int queues;         /* queues to open, at most the family's and VK_MAX_QUEUES; 0: all of those
                           (DLCA_QUEUES=N) */
    /* The persistent pipeline cache's folder (vk_cache.h); "": none. src/cli/cli_env.c fills it:
     * DLCA_PIPELINE_CACHE=DIR, else $XDG_CACHE_HOME/dlca, else $HOME/.cache/dlca; off: "". */
    char pipeline_cache[VK_CACHE_FOLDER_MAX + 1];
} vk_context_options;

/* Opens device `device_index` (its position in `dlca devices`), or with device_index < 0 the
 * best one: discrete > integrated > virtual > cpu. Returns DLCA_ERR_NODEV (message with a hint)
 * when there is no loader or no device. */
int vk_context_init(vk_context *vk, int device_index, const vk_context_options *options);

/* Like vk_context_init with a device spec: NULL, "" or "auto"; an index ("0"); a type
 * ("discrete", "integrated", "virtual", "cpu"); or a case-insensitive part of the name. */
int vk_context_init_spec(vk_context *vk, const char *spec, const vk_context_options *options);

/* Destroys everything the context holds. Safe on a zeroed or partly initialised context;
 * leaves validation_errors so a test can check it after the layer's last reports. */
void vk_context_free(vk_context *vk);

/* Validation messages reported to any context of this process so far (0 without validation). */
int vk_validation_message_count(void);

/* Prints one line per device: index, name, type, device-local MiB, API version, driver.
 * Returns DLCA_ERR_NODEV when there is none. */
int vk_list_devices(FILE *out);

/* The driver's name and version as the driver reports them ("NVIDIA 580.159.04"). */
void vk_driver_describe(VkPhysicalDevice physical, char *text, size_t size);

/* "discrete", "integrated", "virtual", "cpu" or "other". */
const char *vk_device_type_name(VkPhysicalDeviceType type);

#endif
