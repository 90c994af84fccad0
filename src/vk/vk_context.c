/* vk_context.c: instance (+ validation messenger), device choice, compute queue, command
 * pool, fence and timestamp pool, in the plain order of a headless compute set-up. */
#include "vk_context.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vk_buffer.h"
#include "vk_check.h"
#include "vk_pipeline.h"

#define VK_VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"
#define VK_HINT_NODEV "hint: install mesa-vulkan-drivers for a CPU device, or use --device cpu"

/* The SPIR-V is built for --target-env vulkan1.2 (SPIR-V 1.5). */
enum { VK_API = VK_API_VERSION_1_2 };

static const uint64_t vk_default_timeout_ns = 120ull * 1000000000ull;

/* Every context's messages, so `dlca` can fail a run that saw any (see main.c). */
static int validation_messages;

int vk_validation_message_count(void) { return validation_messages; }

static VKAPI_ATTR VkBool32 VKAPI_CALL vk_debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                      VkDebugUtilsMessageTypeFlagsEXT types,
                                                      const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                      void *user)
{
    vk_context *vk = user;
    /* The layer reports from inside the calling API function, so no other thread races here. */
    vk->validation_errors++;
    validation_messages++;
    fprintf(stderr, "vulkan validation %s: %s\n",
            (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error" : "warning",
            data && data->pMessage ? data->pMessage : "(no message)");
    return VK_FALSE;
}

static VkDebugUtilsMessengerCreateInfoEXT messenger_info(vk_context *vk)
{
    return (VkDebugUtilsMessengerCreateInfoEXT){
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = vk_debug_callback,
        .pUserData = vk,
    };
}

static int layer_available(const char *name)
{
    uint32_t count = 0;
    if (vkEnumerateInstanceLayerProperties(&count, NULL) != VK_SUCCESS || count == 0) return 0;
    VkLayerProperties *layers = calloc(count, sizeof *layers);
    int found = 0;
    if (layers && vkEnumerateInstanceLayerProperties(&count, layers) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++) found = strcmp(layers[i].layerName, name) == 0;
    free(layers);
    return found;
}

static int instance_extension_available(const char *name)
{
    uint32_t count = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &count, NULL) != VK_SUCCESS || count == 0) return 0;
    VkExtensionProperties *exts = calloc(count, sizeof *exts);
    int found = 0;
    if (exts && vkEnumerateInstanceExtensionProperties(NULL, &count, exts) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++) found = strcmp(exts[i].extensionName, name) == 0;
    free(exts);
    return found;
}

static int instance_create(vk_context *vk, int validate)
{
    uint32_t loader = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion(&loader) != VK_SUCCESS || loader < VK_API)
        return err_set(DLCA_ERR_NODEV, "the Vulkan loader is version %u.%u, dlca needs 1.2 (%s)",
                       VK_API_VERSION_MAJOR(loader), VK_API_VERSION_MINOR(loader), VK_HINT_NODEV);
    if (validate && !layer_available(VK_VALIDATION_LAYER))
        return err_set(DLCA_ERR, "DLCA_VALIDATE=1 but %s is not installed (hint: install vulkan-validationlayers)",
                       VK_VALIDATION_LAYER);

    const char *extensions[2];
    uint32_t n_extensions = 0;
    VkInstanceCreateFlags flags = 0;
    if (validate) extensions[n_extensions++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    /* Lets MoltenVK-style portability drivers be listed; harmless elsewhere. */
    if (instance_extension_available(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        extensions[n_extensions++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    const char *layers[] = {VK_VALIDATION_LAYER};
    VkDebugUtilsMessengerCreateInfoEXT messenger = messenger_info(vk);
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "dlca",
        .applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0),
        .pEngineName = "dlca",
        .apiVersion = VK_API,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validate ? &messenger : NULL, /* also reports on vkCreate/DestroyInstance */
        .flags = flags,
        .pApplicationInfo = &app,
        .enabledLayerCount = validate ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = n_extensions,
        .ppEnabledExtensionNames = extensions,
    };
    VkResult r = vkCreateInstance(&info, NULL, &vk->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return err_set(DLCA_ERR_NODEV, "no Vulkan device found (%s)", VK_HINT_NODEV);
    VK_CHECK(r);
    vk->validate = validate;
    if (!validate) return DLCA_OK;

    PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
        vk->instance, "vkCreateDebugUtilsMessengerEXT");
    if (!create) return err_set(DLCA_ERR, "DLCA_VALIDATE=1 but vkCreateDebugUtilsMessengerEXT is missing");
    VK_CHECK(create(vk->instance, &messenger, NULL, &vk->messenger));
    return DLCA_OK;
}

/* All physical devices in enumeration order; *list is malloc'd. */
static int physical_devices(VkInstance instance, VkPhysicalDevice **list, uint32_t *count)
{
    *list = NULL;
    *count = 0;
    VK_CHECK(vkEnumeratePhysicalDevices(instance, count, NULL));
    if (*count == 0) return err_set(DLCA_ERR_NODEV, "no Vulkan device found (%s)", VK_HINT_NODEV);
    *list = calloc(*count, sizeof **list);
    if (!*list) return err_set(DLCA_ERR_NOMEM, "out of host memory listing Vulkan devices");
    int rc = VK_STATUS(vkEnumeratePhysicalDevices(instance, count, *list));
    if (rc) {
        free(*list);
        *list = NULL;
    }
    return rc;
}

const char *vk_device_type_name(VkPhysicalDeviceType type)
{
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

/* Auto choice order: discrete > integrated > virtual > cpu > other; devices below 1.2 never. */
static int device_rank(const VkPhysicalDeviceProperties *p)
{
    if (p->apiVersion < VK_API) return -1;
    switch (p->deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

static int contains_nocase(const char *text, const char *part)
{
    size_t n = strlen(part);
    for (; *text; text++) {
        size_t i = 0;
        while (i < n && text[i] && tolower((unsigned char)text[i]) == tolower((unsigned char)part[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

/* Index of the device `spec` names (see vk_context_init_spec), or -1. */
static int spec_match(const char *spec, const VkPhysicalDeviceProperties *props, uint32_t count)
{
    int best = -1;
    for (uint32_t i = 0; i < count; i++) {
        int rank = device_rank(&props[i]);
        if (!spec || !spec[0] || strcmp(spec, "auto") == 0) {
            if (rank >= 0 && (best < 0 || rank > device_rank(&props[best]))) best = (int)i;
        } else if (strcmp(spec, vk_device_type_name(props[i].deviceType)) == 0 ||
                   contains_nocase(props[i].deviceName, spec)) {
            return (int)i;
        }
    }
    return best;
}

static int is_index(const char *spec)
{
    if (!spec || !*spec) return 0;
    for (const char *c = spec; *c; c++)
        if (!isdigit((unsigned char)*c)) return 0;
    return 1;
}

/* A spec of digits as an index below `count`. Parsed whole: atoi would wrap "4294967296" to 0
 * and open a device nobody named. */
static int spec_index(const char *spec, uint32_t count, int *index)
{
    errno = 0;
    unsigned long long wanted = strtoull(spec, NULL, 10);
    if (errno == ERANGE || wanted >= count)
        return err_set(DLCA_ERR, "Vulkan device index %s out of range: %u device%s found (indices 0..%u; see `dlca devices`)",
                       spec, count, count == 1 ? "" : "s", count - 1);
    *index = (int)wanted;
    return DLCA_OK;
}

static int device_choose(vk_context *vk, const char *spec, int index)
{
    VkPhysicalDevice *list;
    uint32_t count;
    int rc = physical_devices(vk->instance, &list, &count);
    if (rc) return rc;
    VkPhysicalDeviceProperties *props = calloc(count, sizeof *props);
    if (!props) {
        free(list);
        return err_set(DLCA_ERR_NOMEM, "out of host memory listing Vulkan devices");
    }
    for (uint32_t i = 0; i < count; i++) vkGetPhysicalDeviceProperties(list[i], &props[i]);
    if (index < 0 && is_index(spec)) rc = spec_index(spec, count, &index);
    if (!rc && index < 0) {
        index = spec_match(spec, props, count);
        if (index < 0 && spec && spec[0] && strcmp(spec, "auto") != 0)
            rc = err_set(DLCA_ERR, "no Vulkan device matches \"%s\" (%u device%s; see `dlca devices`)", spec, count,
                         count == 1 ? "" : "s");
        else if (index < 0)
            rc = err_set(DLCA_ERR_NODEV, "no Vulkan 1.2 device found (%s)", VK_HINT_NODEV);
    } else if (!rc && (uint32_t)index >= count) {
        rc = err_set(DLCA_ERR, "Vulkan device index %d out of range: %u device%s found (indices 0..%u; see `dlca devices`)",
                     index, count, count == 1 ? "" : "s", count - 1);
    }
    if (!rc && props[index].apiVersion < VK_API)
        rc = err_set(DLCA_ERR, "Vulkan device %d (%s) supports Vulkan %u.%u, dlca needs 1.2", index,
                     props[index].deviceName, VK_API_VERSION_MAJOR(props[index].apiVersion),
                     VK_API_VERSION_MINOR(props[index].apiVersion));
    if (!rc) {
        vk->physical = list[index];
        vk->device_index = index;
        vk->props = props[index];
        vkGetPhysicalDeviceMemoryProperties(vk->physical, &vk->memory);
        VkPhysicalDeviceSubgroupProperties subgroup = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
        VkPhysicalDeviceProperties2 more = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &subgroup};
        vkGetPhysicalDeviceProperties2(vk->physical, &more);
        vk->subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                               (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    }
    free(props);
    free(list);
    return rc;
}

/* A compute family; with timestamps preferred, then one without graphics (less contention). */
static int queue_family_choose(vk_context *vk)
{
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &count, NULL);
    VkQueueFamilyProperties *families = calloc(count ? count : 1, sizeof *families);
    if (!families) return err_set(DLCA_ERR_NOMEM, "out of host memory listing queue families");
    vkGetPhysicalDeviceQueueFamilyProperties(vk->physical, &count, families);
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < count; i++) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || families[i].queueCount == 0) continue;
        int score = (families[i].timestampValidBits > 0 ? 2 : 0) + !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT);
        if (score > best_score) {
            best = (int)i;
            best_score = score;
        }
    }
    if (best >= 0) {
        vk->queue_family = (uint32_t)best;
        vk->timestamp_valid_bits = families[best].timestampValidBits;
        vk->queue_count = families[best].queueCount;
    }
    free(families);
    if (best < 0) return err_set(DLCA_ERR, "Vulkan device %s has no compute queue", vk->props.deviceName);
    return DLCA_OK;
}

static int device_extension_available(VkPhysicalDevice physical, const char *name)
{
    uint32_t count = 0;
    if (vkEnumerateDeviceExtensionProperties(physical, NULL, &count, NULL) != VK_SUCCESS || count == 0) return 0;
    VkExtensionProperties *exts = calloc(count, sizeof *exts);
    int found = 0;
    if (exts && vkEnumerateDeviceExtensionProperties(physical, NULL, &count, exts) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++) found = strcmp(exts[i].extensionName, name) == 0;
    free(exts);
    return found;
}

/* Whether the device lets a pipeline turn its buffer bounds checks off (VK_EXT_pipeline_robustness). */
static int pipeline_robustness_available(VkPhysicalDevice physical)
{
    if (!device_extension_available(physical, VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME)) return 0;
    VkPhysicalDevicePipelineRobustnessFeaturesEXT robustness = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT};
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &robustness};
    vkGetPhysicalDeviceFeatures2(physical, &features);
    return robustness.pipelineRobustness == VK_TRUE;
}

static int device_create(vk_context *vk, const vk_context_options *o)
{
    /* Push descriptors: see vk_pipeline.h for why they are required. */
    if (!device_extension_available(vk->physical, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME))
        return err_set(DLCA_ERR, "Vulkan device %s lacks %s, which dlca needs (hint: update the driver)",
                       vk->props.deviceName, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    const char *extensions[4 + VK_CLOCK_BINDINGS] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME}; /* + clocks */
    uint32_t extension_count = 1;
    const void *chain = NULL;
    /* Whether each pipeline came from the pipeline cache, for dlca bench's start-up report. */
    vk->creation_feedback = device_extension_available(vk->physical, VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
    if (vk->creation_feedback) extensions[extension_count++] = VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME;
    /* Diagnostics: registers, spills and the like of each compiled kernel, where the driver tells. */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR statistics = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pipelineExecutableInfo = VK_TRUE,
    };
    if (o->pipeline_stats) {
        const char *name = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
        vk->pipeline_statistics = device_extension_available(vk->physical, name);
        if (!vk->pipeline_statistics)
            fprintf(stderr, "pipeline statistics: %s lacks %s; none printed\n", vk->props.deviceName, name);
        else
            extensions[extension_count++] = name, chain = &statistics;
    }
    /* The NVIDIA driver checks every storage-buffer access against the buffer's size unless a
     * pipeline says not to (one compare a load). dlca's kernels keep their indices in bounds by
     * construction, and the GPU tests hold every kernel to the CPU engine. */
    VkPhysicalDevicePipelineRobustnessFeaturesEXT robustness = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT,
        .pNext = (void *)chain,
        .pipelineRobustness = VK_TRUE,
    };
    if (!o->robust && pipeline_robustness_available(vk->physical)) {
        vk->unchecked_buffers = 1;
        extensions[extension_count++] = VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME, chain = &robustness;
    }
#ifdef DLCA_CLOCKS
    /* The fused kernels' clock probes (glsl/fused_clocks.glsl) read the SM and the device clock. */
    VkPhysicalDeviceShaderClockFeaturesKHR clocks = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR,
        .pNext = (void *)chain,
        .shaderSubgroupClock = VK_TRUE,
        .shaderDeviceClock = VK_TRUE,
    };
    if (!device_extension_available(vk->physical, VK_KHR_SHADER_CLOCK_EXTENSION_NAME))
        return err_set(DLCA_ERR, "Vulkan device %s lacks %s, which a DLCA_CLOCKS build needs", vk->props.deviceName,
                       VK_KHR_SHADER_CLOCK_EXTENSION_NAME);
    extensions[extension_count++] = VK_KHR_SHADER_CLOCK_EXTENSION_NAME, chain = &clocks;
#endif
    /* Queues of one family share every buffer without ownership transfers; equal priorities. */
    uint32_t queues = vk->queue_count < VK_MAX_QUEUES ? vk->queue_count : VK_MAX_QUEUES;
    if (o->queues > 0 && (uint32_t)o->queues < queues) queues = (uint32_t)o->queues;
    vk->queue_count = queues;
    float priorities[VK_MAX_QUEUES];
    for (uint32_t i = 0; i < VK_MAX_QUEUES; i++) priorities[i] = 1.0f;
    VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = vk->queue_family,
        .queueCount = queues,
        .pQueuePriorities = priorities,
    };
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = extension_count,
        .ppEnabledExtensionNames = extensions,
        .pNext = chain,
    };
    VK_CHECK(vkCreateDevice(vk->physical, &info, NULL, &vk->device));
    for (uint32_t i = 0; i < queues; i++) vkGetDeviceQueue(vk->device, vk->queue_family, i, &vk->queues[i]);
    vk->queue = vk->queues[0];
    vk->cmd_push_descriptor_set =
        (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(vk->device, "vkCmdPushDescriptorSetKHR");
    if (!vk->cmd_push_descriptor_set) return err_set(DLCA_ERR, "vkCmdPushDescriptorSetKHR not found on %s", vk->props.deviceName);
    return DLCA_OK;
}

static int device_objects_create(vk_context *vk, const vk_context_options *o)
{
    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = vk->queue_family,
    };
    VK_CHECK(vkCreateCommandPool(vk->device, &pool, NULL, &vk->command_pool));
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_CHECK(vkCreateFence(vk->device, &fence, NULL, &vk->fence));
    for (uint32_t i = 0; i < vk->queue_count; i++) VK_CHECK(vkCreateFence(vk->device, &fence, NULL, &vk->queue_fences[i]));
    vk->timeout_ns = o->timeout_s > 0 ? (uint64_t)(o->timeout_s * 1e9) : vk_default_timeout_ns;
    vk->timestamp_period_ns = vk->props.limits.timestampPeriod;
    if (vk->timestamp_valid_bits == 0) return DLCA_OK; /* profiling reads zeros; nothing else changes */
    VkQueryPoolCreateInfo query = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = VK_TIMESTAMP_COUNT,
    };
    VK_CHECK(vkCreateQueryPool(vk->device, &query, NULL, &vk->timestamps));
    return DLCA_OK;
}

/* Wall clock in ms, for the start-up instrumentation. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static int context_init(vk_context *vk, const char *spec, int index, const vk_context_options *options)
{
    static const vk_context_options defaults = {0};
    const vk_context_options *o = options ? options : &defaults;
    memset(vk, 0, sizeof *vk);
    double start = now_ms();
    int rc = instance_create(vk, o->validate);
    double instance = now_ms();
    if (!rc) rc = device_choose(vk, spec, index);
    if (!rc) rc = queue_family_choose(vk);
    if (!rc) rc = device_create(vk, o);
    if (!rc) rc = device_objects_create(vk, o);
    double device = now_ms();
    if (!rc) vk_cache_open(vk, o->pipeline_cache); /* never fails the context (vk_cache.h) */
    vk->instance_ms = instance - start, vk->device_ms = device - instance, vk->cache_ms = now_ms() - device;
    if (rc) vk_context_free(vk); /* leaves the message set above */
    return rc;
}

int vk_context_init(vk_context *vk, int device_index, const vk_context_options *options)
{
    return context_init(vk, NULL, device_index, options);
}

int vk_context_init_spec(vk_context *vk, const char *spec, const vk_context_options *options)
{
    return context_init(vk, spec, -1, options);
}

void vk_context_free(vk_context *vk)
{
    if (!vk) return;
    if (vk->device) {
        vkDeviceWaitIdle(vk->device); /* best effort: a lost device still lets us destroy */
        vk_pipelines_free(vk);
        vk_cache_close(vk); /* saved when it grew; keeps the error message */
        if (vk->staging) {
            vk_buffer_free(vk, vk->staging);
            free(vk->staging);
        }
        if (vk->timestamps) vkDestroyQueryPool(vk->device, vk->timestamps, NULL);
        if (vk->fence) vkDestroyFence(vk->device, vk->fence, NULL);
        for (uint32_t i = 0; i < VK_MAX_QUEUES; i++)
            if (vk->queue_fences[i]) vkDestroyFence(vk->device, vk->queue_fences[i], NULL);
        if (vk->command_pool) vkDestroyCommandPool(vk->device, vk->command_pool, NULL);
        vkDestroyDevice(vk->device, NULL);
    }
    if (vk->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            vk->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(vk->instance, vk->messenger, NULL);
    }
    if (vk->instance) vkDestroyInstance(vk->instance, NULL);
    int errors = vk->validation_errors;
    memset(vk, 0, sizeof *vk);
    vk->validation_errors = errors;
}

static uint64_t device_local_bytes(VkPhysicalDevice physical)
{
    VkPhysicalDeviceMemoryProperties memory;
    vkGetPhysicalDeviceMemoryProperties(physical, &memory);
    uint64_t total = 0;
    for (uint32_t i = 0; i < memory.memoryHeapCount; i++)
        if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) total += memory.memoryHeaps[i].size;
    return total;
}

void vk_driver_describe(VkPhysicalDevice physical, char *text, size_t size)
{
    VkPhysicalDeviceDriverProperties driver = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &driver};
    vkGetPhysicalDeviceProperties2(physical, &props);
    if (driver.driverName[0])
        snprintf(text, size, "%.120s %.120s", driver.driverName, driver.driverInfo);
    else
        snprintf(text, size, "driver version 0x%08x", props.properties.driverVersion);
}

int vk_list_devices(FILE *out)
{
    vk_context vk;
    memset(&vk, 0, sizeof vk);
    VkPhysicalDevice *list = NULL;
    uint32_t count = 0;
    int rc = instance_create(&vk, 0);
    if (!rc) rc = physical_devices(vk.instance, &list, &count);
    for (uint32_t i = 0; !rc && i < count; i++) {
        VkPhysicalDeviceProperties p;
        char driver[256];
        vkGetPhysicalDeviceProperties(list[i], &p);
        vk_driver_describe(list[i], driver, sizeof driver);
        fprintf(out, "%u  %-40s  %-10s  %8llu MiB  Vulkan %u.%u.%u  %s\n", i, p.deviceName,
                vk_device_type_name(p.deviceType), (unsigned long long)(device_local_bytes(list[i]) >> 20),
                VK_API_VERSION_MAJOR(p.apiVersion), VK_API_VERSION_MINOR(p.apiVersion),
                VK_API_VERSION_PATCH(p.apiVersion), driver);
    }
    free(list);
    vk_context_free(&vk);
    return rc;
}
