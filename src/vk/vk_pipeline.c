/* vk_pipeline.c: pipelines from the table in vk_pipeline.h, created in one place (the table's,
 * SPIR-V given at run time, and specialised ones, shared and compiled on threads). */
#include "vk_pipeline.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vk_check.h"

const vk_pipeline_desc vk_pipeline_descs[VK_PIPE_COUNT] = {
#define VK_PIPELINE_DESC(id, shader, push, bindings, local) \
    [VK_PIPE_##id] = {#shader, (uint32_t)sizeof(push), bindings, local},
    VK_PIPELINE_LIST(VK_PIPELINE_DESC)
#undef VK_PIPELINE_DESC
};

/* SPIR-V opcodes, decorations and storage classes the interface check reads. */
enum { SPV_OP_DECORATE = 71, SPV_OP_VARIABLE = 59, SPV_DECORATION_BINDING = 33, SPV_DECORATION_SET = 34,
       SPV_STORAGE_UNIFORM = 2, SPV_STORAGE_PUSH_CONSTANT = 9, SPV_MAGIC = 0x07230203 };

/* Checks the shader declares exactly bindings 0..n-1 of set 0, and a push block iff push_size > 0,
 * so a C table row and its GLSL cannot drift apart silently; sets p->uniform_bindings from the
 * bindings' storage classes (a uniform block is class Uniform; a buffer block StorageBuffer, as
 * in the SPIR-V 1.3 and later that the build and hard_spirv.c make). */
static int spirv_interface_check(const vk_shader_code *code, const vk_pipeline_desc *desc, vk_pipeline *p)
{
    const uint32_t *w = code->code;
    size_t n = code->size / 4;
    uint64_t bindings = 0;
    uint32_t bound_ids[VK_MAX_BINDINGS] = {0}, bound_at[VK_MAX_BINDINGS] = {0}, bound = 0;
    int push_blocks = 0, other_set = 0;
    if (n < 5 || w[0] != SPV_MAGIC) return err_set(DLCA_ERR, "shader %s: not SPIR-V", desc->name);
    for (size_t i = 5; i < n;) {
        uint32_t words = w[i] >> 16, op = w[i] & 0xffff;
        if (words == 0 || i + words > n) return err_set(DLCA_ERR, "shader %s: truncated SPIR-V", desc->name);
        if (op == SPV_OP_DECORATE && words >= 4 && w[i + 2] == SPV_DECORATION_BINDING) {
            bindings |= w[i + 3] < 64 ? 1ull << w[i + 3] : 1ull << 63;
            if (bound < VK_MAX_BINDINGS) bound_ids[bound] = w[i + 1], bound_at[bound++] = w[i + 3];
        }
        if (op == SPV_OP_DECORATE && words >= 4 && w[i + 2] == SPV_DECORATION_SET && w[i + 3] != 0) other_set = 1;
        if (op == SPV_OP_VARIABLE && words >= 4 && w[i + 3] == SPV_STORAGE_PUSH_CONSTANT) push_blocks++;
        if (op == SPV_OP_VARIABLE && words >= 4 && w[i + 3] == SPV_STORAGE_UNIFORM) /* decorations come first */
            for (uint32_t b = 0; b < bound; b++)
                if (bound_ids[b] == w[i + 2] && bound_at[b] < 32) p->uniform_bindings |= 1u << bound_at[b];
        i += words;
    }
    uint64_t want = desc->binding_count >= 64 ? ~0ull : (1ull << desc->binding_count) - 1;
    if (bindings != want || other_set)
        return err_set(DLCA_ERR, "shader %s: its bindings do not match the table (%u bindings 0..%u in set 0)",
                       desc->name, desc->binding_count, desc->binding_count - 1);
    if ((push_blocks > 0) != (desc->push_size > 0))
        return err_set(DLCA_ERR, "shader %s: %s push-constant block but the table says push_size %u", desc->name,
                       push_blocks ? "has a" : "has no", desc->push_size);
    return DLCA_OK;
}

static uint32_t max_push_descriptors(const vk_context *vk)
{
    VkPhysicalDevicePushDescriptorPropertiesKHR push = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &push};
    vkGetPhysicalDeviceProperties2(vk->physical, &props);
    return push.maxPushDescriptors;
}

static int desc_check(const vk_context *vk, const vk_pipeline_desc *desc)
{
    const VkPhysicalDeviceLimits *lim = &vk->props.limits;
    uint32_t max_bindings = max_push_descriptors(vk);
    if (max_bindings > VK_MAX_BINDINGS) max_bindings = VK_MAX_BINDINGS;
    if (desc->binding_count == 0 || desc->binding_count > max_bindings)
        return err_set(DLCA_ERR, "pipeline %s: %u bindings, this device allows 1..%u", desc->name,
                       desc->binding_count, max_bindings);
    if (desc->push_size % 4 || desc->push_size > lim->maxPushConstantsSize)
        return err_set(DLCA_ERR, "pipeline %s: push size %u (must be a multiple of 4, at most %u)", desc->name,
                       desc->push_size, lim->maxPushConstantsSize);
    if (desc->local_size_x == 0 || desc->local_size_x > lim->maxComputeWorkGroupSize[0] ||
        desc->local_size_x > lim->maxComputeWorkGroupInvocations)
        return err_set(DLCA_ERR, "pipeline %s: local_size_x %u, this device allows 1..%u", desc->name,
                       desc->local_size_x, lim->maxComputeWorkGroupSize[0]);
    return DLCA_OK;
}

static int layouts_create(vk_context *vk, const vk_pipeline_desc *desc, vk_pipeline *p)
{
    VkDescriptorSetLayoutBinding bindings[VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < desc->binding_count; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = vk_pipeline_binding_type(p, i),
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
        .bindingCount = desc->binding_count,
        .pBindings = bindings,
    };
    VK_CHECK(vkCreateDescriptorSetLayout(vk->device, &set_info, NULL, &p->set_layout));
    VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = desc->push_size};
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &p->set_layout,
        .pushConstantRangeCount = desc->push_size ? 1 : 0,
        .pPushConstantRanges = &range,
    };
    VK_CHECK(vkCreatePipelineLayout(vk->device, &layout_info, NULL, &p->layout));
    return DLCA_OK;
}

static void print_statistic(const VkPipelineExecutableStatisticKHR *s)
{
    switch (s->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: fprintf(stderr, " %s=%u", s->name, s->value.b32); break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: fprintf(stderr, " %s=%lld", s->name, (long long)s->value.i64); break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        fprintf(stderr, " %s=%llu", s->name, (unsigned long long)s->value.u64);
        break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: fprintf(stderr, " %s=%g", s->name, s->value.f64); break;
    default: break;
    }
}

/* DLCA_PIPELINE_STATS=1: one stderr line per executable of the pipeline with what the driver
 * reports of it (on NVIDIA: registers, binary size, shared and local memory; the local memory
 * figure carries a stray 2^36 there, 580 driver). */
static void pipeline_statistics_print(vk_context *vk, const char *name, VkPipeline pipeline)
{
    PFN_vkGetPipelineExecutablePropertiesKHR properties =
        (PFN_vkGetPipelineExecutablePropertiesKHR)vkGetDeviceProcAddr(vk->device, "vkGetPipelineExecutablePropertiesKHR");
    PFN_vkGetPipelineExecutableStatisticsKHR statistics =
        (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(vk->device, "vkGetPipelineExecutableStatisticsKHR");
    VkPipelineInfoKHR info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipeline};
    uint32_t executables = 0;
    if (!properties || !statistics || properties(vk->device, &info, &executables, NULL) != VK_SUCCESS) return;
    for (uint32_t i = 0; i < executables; i++) {
        VkPipelineExecutableInfoKHR at = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pipeline,
                                          .executableIndex = i};
        VkPipelineExecutableStatisticKHR list[32];
        uint32_t count = 32;
        for (uint32_t j = 0; j < count; j++)
            list[j] = (VkPipelineExecutableStatisticKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
        VkResult r = statistics(vk->device, &at, &count, list);
        if (r != VK_SUCCESS && r != VK_INCOMPLETE) continue;
        fprintf(stderr, "pipeline %s:", name);
        for (uint32_t j = 0; j < count; j++) print_statistic(&list[j]);
        fprintf(stderr, "\n");
    }
}

/* Specialisation constants: 0 the local size, 1 vk_shared_floats, then `extra` from id 2 on. */
static int pipeline_create(vk_context *vk, const vk_pipeline_desc *desc, const vk_shader_code *code,
                           const uint32_t *extra, uint32_t n_extra, vk_pipeline *p, int *cache_hit)
{
    if (n_extra > VK_SPEC_EXTRA_MAX)
        return err_set(DLCA_ERR, "pipeline %s: %u specialisation constants, at most %d", desc->name, n_extra,
                       VK_SPEC_EXTRA_MAX);
    uint32_t values[2 + VK_SPEC_EXTRA_MAX] = {desc->local_size_x, vk_shared_floats(vk)};
    VkSpecializationMapEntry entries[2 + VK_SPEC_EXTRA_MAX];
    for (uint32_t i = 0; i < 2 + n_extra; i++) {
        if (i >= 2) values[i] = extra[i - 2];
        entries[i] = (VkSpecializationMapEntry){.constantID = i, .offset = i * sizeof(uint32_t), .size = sizeof(uint32_t)};
    }
    VkSpecializationInfo spec = {
        .mapEntryCount = 2 + n_extra,
        .pMapEntries = entries,
        .dataSize = (2 + n_extra) * sizeof(uint32_t),
        .pData = values,
    };
    VkShaderModuleCreateInfo module_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = code->size,
        .pCode = code->code,
    };
    VkShaderModule module;
    VK_CHECK(vkCreateShaderModule(vk->device, &module_info, NULL, &module));
    VkPipelineRobustnessCreateInfoEXT unchecked = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT,
        .storageBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT,
        .uniformBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT,
        .vertexInputs = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT,
        .images = VK_PIPELINE_ROBUSTNESS_IMAGE_BEHAVIOR_DEVICE_DEFAULT_EXT,
    };
    /* Whether the driver found the pipeline in the cache, where it tells (start-up report). */
    VkPipelineCreationFeedbackEXT whole = {0}, stage = {0};
    VkPipelineCreationFeedbackCreateInfoEXT feedback = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO_EXT,
        .pNext = vk->unchecked_buffers ? &unchecked : NULL,
        .pPipelineCreationFeedback = &whole,
        .pipelineStageCreationFeedbackCount = 1,
        .pPipelineStageCreationFeedbacks = &stage,
    };
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .pNext = vk->creation_feedback ? (const void *)&feedback : vk->unchecked_buffers ? (const void *)&unchecked : NULL,
        .flags = vk->pipeline_statistics ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = module,
            .pName = "main",
            .pSpecializationInfo = &spec,
        },
        .layout = p->layout,
    };
    /* Every pipeline goes through the persistent cache (vk_cache.h), VK_NULL_HANDLE when it is off. */
    int rc = VK_STATUS(vkCreateComputePipelines(vk->device, vk->cache.handle, 1, &info, NULL, &p->pipeline));
    if (!rc && vk->pipeline_statistics) pipeline_statistics_print(vk, code->name, p->pipeline);
    const VkPipelineCreationFeedbackFlags hit =
        VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT_EXT | VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT_EXT;
    *cache_hit = !rc && vk->creation_feedback && (whole.flags & hit) == hit;
    vkDestroyShaderModule(vk->device, module, NULL);
    return rc;
}

uint32_t vk_shared_floats(const vk_context *vk)
{
    uint32_t bytes = vk->props.limits.maxComputeSharedMemorySize;
    bytes = bytes < VK_SHARED_MAX_BYTES ? bytes : VK_SHARED_MAX_BYTES;
    return bytes > VK_SHARED_RESERVED_BYTES ? (bytes - VK_SHARED_RESERVED_BYTES) / (uint32_t)sizeof(float) : 0;
}

static void pipeline_destroy(vk_context *vk, vk_pipeline *p)
{
    if (p->pipeline) vkDestroyPipeline(vk->device, p->pipeline, NULL);
    if (p->layout) vkDestroyPipelineLayout(vk->device, p->layout, NULL);
    if (p->set_layout) vkDestroyDescriptorSetLayout(vk->device, p->set_layout, NULL);
    *p = (vk_pipeline){0};
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* Checks `desc` against the device and `code`, then makes its layouts and pipeline into *p
 * (zeroed first, and again on failure). Writes nothing of `vk`, so threads may run it at once;
 * *cache_hit: the driver found it in the pipeline cache. */
static int pipeline_build_alone(vk_context *vk, const vk_pipeline_desc *desc, const vk_shader_code *code,
                                const uint32_t *extra, uint32_t n_extra, vk_pipeline *p, int *cache_hit)
{
    *p = (vk_pipeline){0};
    *cache_hit = 0;
    int rc = desc_check(vk, desc);
    if (!rc) rc = spirv_interface_check(code, desc, p);
    if (!rc) rc = layouts_create(vk, desc, p);
    if (!rc) rc = pipeline_create(vk, desc, code, extra, n_extra, p, cache_hit);
    if (rc) pipeline_destroy(vk, p);
    return rc;
}

/* pipeline_build_alone, counted and timed for the start-up report. */
static int pipeline_build(vk_context *vk, const vk_pipeline_desc *desc, const vk_shader_code *code,
                          const uint32_t *extra, uint32_t n_extra, vk_pipeline *p)
{
    double start = now_ms();
    int hit, rc = pipeline_build_alone(vk, desc, code, extra, n_extra, p, &hit);
    vk->pipelines_created += rc == DLCA_OK;
    vk->pipeline_cache_hits += (uint32_t)hit;
    vk->pipeline_ms += now_ms() - start;
    return rc;
}

/* The table row of `id` and its embedded shader. */
static int table_entry(vk_pipeline_id id, const vk_pipeline_desc **desc, const vk_shader_code **code)
{
    if ((unsigned)id >= VK_PIPE_COUNT) return err_set(DLCA_ERR, "pipeline id %d is not in the table", (int)id);
    *desc = &vk_pipeline_descs[id];
    *code = vk_shader_find((*desc)->name);
    if (!*code) return err_set(DLCA_ERR, "pipeline %s: no embedded shader glsl/%s.comp", (*desc)->name, (*desc)->name);
    return DLCA_OK;
}

int vk_pipeline_get(vk_context *vk, vk_pipeline_id id, const vk_pipeline **out)
{
    /* every dispatch asks: a built pipeline is returned before the shader table is searched */
    if ((unsigned)id < VK_PIPE_COUNT && vk->pipelines && vk->pipelines[id].pipeline) {
        *out = &vk->pipelines[id];
        return DLCA_OK;
    }
    const vk_pipeline_desc *desc = NULL;
    const vk_shader_code *code = NULL;
    if (table_entry(id, &desc, &code)) return DLCA_ERR;
    if (!vk->pipelines) {
        vk->pipelines = calloc(VK_PIPE_COUNT, sizeof *vk->pipelines);
        if (!vk->pipelines) return err_set(DLCA_ERR_NOMEM, "out of host memory for the pipeline table");
    }
    vk_pipeline *p = &vk->pipelines[id];
    if (!p->pipeline && pipeline_build(vk, desc, code, NULL, 0, p)) return DLCA_ERR;
    *out = p;
    return DLCA_OK;
}

int vk_pipelines_create_all(vk_context *vk)
{
    for (int id = 0; id < VK_PIPE_COUNT; id++) {
        const vk_pipeline *p;
        int rc = vk_pipeline_get(vk, (vk_pipeline_id)id, &p);
        if (rc) return rc;
    }
    return DLCA_OK;
}

/* A specialised pipeline and who holds it: engines of one model ask for the same constants, and
 * each compile takes lavapipe seconds (the GPU tests make up to five engines of one model). */
typedef struct vk_specialized {
    struct vk_specialized *next;
    vk_pipeline_id id;
    uint32_t count, values[VK_SPEC_EXTRA_MAX];
    vk_pipeline pipeline;
    int holders;
} vk_specialized;

void vk_pipelines_free(vk_context *vk)
{
    while (vk->specialized) { /* held past their holders' end: destroyed with the context */
        vk_specialized *s = vk->specialized;
        vk->specialized = s->next;
        pipeline_destroy(vk, &s->pipeline);
        free(s);
    }
    if (!vk->pipelines) return;
    for (int id = 0; id < VK_PIPE_COUNT; id++) pipeline_destroy(vk, &vk->pipelines[id]);
    free(vk->pipelines);
    vk->pipelines = NULL;
}

int vk_pipeline_create_spirv(vk_context *vk, const vk_pipeline_desc *desc, const uint32_t *code, size_t size,
                             vk_pipeline *out)
{
    const vk_shader_code shader = {desc->name, code, size};
    return pipeline_build(vk, desc, &shader, NULL, 0, out);
}

/* The pipeline made for these constants, if any (a list longer than VK_SPEC_EXTRA_MAX matches
 * none, and pipeline_create refuses it). */
/* Pipeline a specialised with a_values [a_count] is pipeline b with b_values [b_count]. */
static int same_specialization(vk_pipeline_id a, const uint32_t *a_values, uint32_t a_count, vk_pipeline_id b,
                               const uint32_t *b_values, uint32_t b_count)
{
    return a == b && a_count == b_count && memcmp(a_values, b_values, a_count * sizeof *a_values) == 0;
}

static vk_specialized *specialized_find(vk_context *vk, vk_pipeline_id id, const uint32_t *values, uint32_t count)
{
    for (vk_specialized *s = vk->specialized; s; s = s->next)
        if (same_specialization(s->id, s->values, s->count, id, values, count)) return s;
    return NULL;
}

/* One compile of vk_pipeline_create_specialized_many, run by whichever thread takes it. */
typedef struct {
    vk_context *vk;
    vk_pipeline_id id;
    const vk_pipeline_desc *desc;
    const vk_shader_code *code;
    const uint32_t *values;
    uint32_t count;
    vk_pipeline pipeline;
    int rc, cache_hit;
    char why[512]; /* the error message, which is the thread's own */
} compile_task;

typedef struct {
    compile_task *tasks;
    int count;
    atomic_int next;
} compile_queue;

static void *compile_worker(void *arg)
{
    compile_queue *q = arg;
    for (int i; (i = atomic_fetch_add(&q->next, 1)) < q->count;) {
        compile_task *t = &q->tasks[i];
        t->rc = pipeline_build_alone(t->vk, t->desc, t->code, t->values, t->count, &t->pipeline, &t->cache_hit);
        if (t->rc) snprintf(t->why, sizeof t->why, "%s", err_message());
    }
    return NULL;
}

/* Whether two jobs ask for one pipeline: the same id and constants. */
int vk_pipeline_create_specialized_many(vk_context *vk, const vk_specialize_job *jobs, int n, int threads)
{
    for (int j = 0; j < n; j++) *jobs[j].out = (vk_pipeline){0};
    if (n <= 0) return DLCA_OK;
    compile_task *tasks = calloc((size_t)n, sizeof *tasks);
    int *task_of = malloc((size_t)n * sizeof *task_of); /* -1: already in vk->specialized */
    if (!tasks || !task_of) {
        free(tasks), free(task_of);
        return err_set(DLCA_ERR_NOMEM, "out of host memory for %d pipelines", n);
    }
    int count = 0, rc = DLCA_OK;
    for (int j = 0; j < n && !rc; j++) {
        const vk_pipeline_desc *desc = NULL;
        const vk_shader_code *code = NULL;
        rc = table_entry(jobs[j].id, &desc, &code);
        if (!rc && jobs[j].count > VK_SPEC_EXTRA_MAX)
            rc = err_set(DLCA_ERR, "pipeline %s: %u specialisation constants, at most %d", desc->name, jobs[j].count,
                         VK_SPEC_EXTRA_MAX);
        if (rc) break;
        task_of[j] = -1;
        if (specialized_find(vk, jobs[j].id, jobs[j].values, jobs[j].count)) continue;
        for (int k = 0; k < j && task_of[j] < 0; k++)
            if (task_of[k] >= 0 &&
                same_specialization(jobs[k].id, jobs[k].values, jobs[k].count, jobs[j].id, jobs[j].values, jobs[j].count))
                task_of[j] = task_of[k];
        if (task_of[j] >= 0) continue;
        tasks[count] = (compile_task){vk, jobs[j].id, desc, code, jobs[j].values, jobs[j].count, {0}, 0, 0, {0}};
        task_of[j] = count++;
    }
    if (!rc && count > 0) {
        double start = now_ms();
        if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
        if (vk->pipeline_statistics || threads < 1) threads = 1; /* the statistics print as they come */
        if (threads > count) threads = count;
        compile_queue queue = {tasks, count, 0};
        pthread_t *ids = threads > 1 ? malloc((size_t)(threads - 1) * sizeof *ids) : NULL;
        int started = 0;
        while (ids && started < threads - 1 && pthread_create(&ids[started], NULL, compile_worker, &queue) == 0)
            started++;
        compile_worker(&queue); /* this thread too; with no other, it compiles them all */
        for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
        free(ids);
        vk->pipeline_ms += now_ms() - start; /* wall time: the start-up report's parts add up */
        for (int i = 0; i < count; i++) {
            vk->pipelines_created += tasks[i].rc == DLCA_OK;
            vk->pipeline_cache_hits += (uint32_t)tasks[i].cache_hit;
            if (tasks[i].rc && !rc) rc = err_set(tasks[i].rc, "%s", tasks[i].why);
        }
    }
    for (int i = 0; !rc && i < count; i++) { /* into the shared list, in task order */
        vk_specialized *sp = calloc(1, sizeof *sp);
        if (!sp) {
            rc = err_set(DLCA_ERR_NOMEM, "out of host memory for pipeline %s", tasks[i].desc->name);
            break;
        }
        sp->id = tasks[i].id, sp->count = tasks[i].count, sp->pipeline = tasks[i].pipeline;
        memcpy(sp->values, tasks[i].values, tasks[i].count * sizeof *tasks[i].values);
        sp->next = vk->specialized, vk->specialized = sp;
        tasks[i].pipeline = (vk_pipeline){0}; /* the list holds it now */
    }
    for (int i = 0; i < count; i++) pipeline_destroy(vk, &tasks[i].pipeline); /* only what the list did not take */
    for (int j = 0; !rc && j < n; j++) {
        vk_specialized *sp = specialized_find(vk, jobs[j].id, jobs[j].values, jobs[j].count);
        sp->holders++;
        *jobs[j].out = sp->pipeline;
    }
    free(tasks), free(task_of);
    return rc;
}

int vk_pipeline_create_specialized(vk_context *vk, vk_pipeline_id id, const uint32_t *values, uint32_t count,
                                   vk_pipeline *out)
{
    const vk_specialize_job job = {id, values, count, out};
    return vk_pipeline_create_specialized_many(vk, &job, 1, 1);
}

void vk_pipeline_destroy(vk_context *vk, vk_pipeline *p)
{
    for (vk_specialized **at = &vk->specialized; p->pipeline && *at; at = &(*at)->next) {
        vk_specialized *s = *at;
        if (s->pipeline.pipeline != p->pipeline) continue;
        if (--s->holders == 0) {
            *at = s->next;
            pipeline_destroy(vk, &s->pipeline);
            free(s);
        }
        *p = (vk_pipeline){0};
        return;
    }
    pipeline_destroy(vk, p);
}
