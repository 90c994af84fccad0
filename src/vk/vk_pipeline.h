/* vk_pipeline.h: the embedded SPIR-V registry, the one table of compute pipelines, and the
 * one dispatch helper.
 *
 * Every pipeline has the same shape: descriptor set 0 holds `bindings` storage buffers at
 * bindings 0..n-1, one push-constant range of the kernel's vk_push_* struct (vk_push.h), and
 * local_size_x given by specialization constant 0 (`layout(local_size_x_id = 0) in;`), so
 * the table below is the only place a workgroup size is written. Specialization constant 1 is
 * the shared memory a kernel may declare, in floats (vk_shared_floats).
 *
 * Buffers are bound with push descriptors (VK_KHR_push_descriptor): the bindings are recorded
 * into the command buffer itself, so there are no descriptor pools or sets to size, allocate,
 * free or keep alive, and a recorded training step can be replayed as is. lavapipe, NVIDIA,
 * AMD (RADV, AMDVLK), Intel (ANV) and MoltenVK all expose it, and it is core in Vulkan 1.4;
 * vk_context_init fails with a clear message on a device without it.
 *
 * Adding a kernel: glsl/<name>.comp, its push struct in vk_push.h + common.glsl, a row here. */
#ifndef DLCA_VK_PIPELINE_H
#define DLCA_VK_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "vk_buffer.h"
#include "vk_push.h"

/* The fused step kernels' clock buffer, one binding after their others, in builds with
 * -DDLCA_CLOCKS=ON only (glsl/fused_clocks.glsl). */
#ifdef DLCA_CLOCKS
#define VK_CLOCK_BINDINGS 1
#else
#define VK_CLOCK_BINDINGS 0
#endif

/* One row per kernel: ID, shader (glsl/<shader>.comp), push struct, storage-buffer bindings,
 * local_size_x. Every kernel takes a push struct (at least its element count). */
#define VK_PIPELINE_LIST(X) \
    X(GATE_COEFFICIENTS, gate_coefficients, vk_push_gate_coefficients, 2, 64) \
    X(MOORE_FORWARD, moore_forward, vk_push_moore, 4, 64)                      \
    X(GATE_LAYER_FORWARD, gate_layer_forward, vk_push_layer, 4, 64)            \
    X(STEP_FIRE, step_fire, vk_push_fire, 3, 64)                               \
    X(TASK_ROUND, task_round, vk_push_task, 3, 64)                             \
    X(BUFFER_FILL, buffer_fill, vk_push_buffer_fill, 3, 256)                   \
    X(FUSED_STEP_FORWARD, fused_step_forward, vk_push_fused, 5 + VK_CLOCK_BINDINGS, 256) \
    X(FUSED_STEP_BACKWARD, fused_step_backward, vk_push_fused, 8 + VK_CLOCK_BINDINGS, 256) \
    X(FUSED_STEP_FORWARD_8, fused_step_forward_8, vk_push_fused, 5 + VK_CLOCK_BINDINGS, 256) \
    X(FUSED_STEP_BACKWARD_8, fused_step_backward_8, vk_push_fused, 8 + VK_CLOCK_BINDINGS, 256) \
    X(FUSED_STEP_BACKWARD_MERGED, fused_step_backward_merged, vk_push_fused, 8 + VK_CLOCK_BINDINGS, 256) \
    X(FUSED_STEP_BACKWARD_MERGED_8, fused_step_backward_merged_8, vk_push_fused, 8 + VK_CLOCK_BINDINGS, 256) \
    X(FUSED_GRID_GATHER, fused_grid_gather, vk_push_fused, 6, 64)              \
    X(FUSED_FORWARD_PERSISTENT, fused_forward_persistent, vk_push_fused, 5, 256) \
    X(FUSED_FORWARD_PERSISTENT_8, fused_forward_persistent_8, vk_push_fused, 5, 256) \
    X(FUSED_STEP_BACKWARD_PERSISTENT, fused_step_backward_persistent, vk_push_fused, 9, 256) \
    X(FUSED_STEP_BACKWARD_PERSISTENT_8, fused_step_backward_persistent_8, vk_push_fused, 9, 256) \
    X(FUSED_STEP_BACKWARD_MERGED_PERSISTENT, fused_step_backward_merged_persistent, vk_push_fused, 9, 256) \
    X(FUSED_STEP_BACKWARD_MERGED_PERSISTENT_8, fused_step_backward_merged_persistent_8, vk_push_fused, 9, 256) \
    X(HARD_STEP, hard_step, vk_push_hard_step, 4, 64)                          \
    X(GATE_BACKWARD, gate_backward, vk_push_gate_backward, 8, 64)              \
    X(GRID_BACKWARD, grid_backward, vk_push_grid_backward, 4, 64)              \
    X(GRID_ADD, grid_add, vk_push_grid_add, 2, 64)                             \
    X(GATE_SUMS_REDUCE, gate_sums_reduce, vk_push_gate_sums_reduce, 3, 64) /* 2^n */

typedef enum {
#define VK_PIPELINE_ENUM(id, shader, push, bindings, local) VK_PIPE_##id,
    VK_PIPELINE_LIST(VK_PIPELINE_ENUM)
#undef VK_PIPELINE_ENUM
    VK_PIPE_COUNT
} vk_pipeline_id;

enum { VK_MAX_BINDINGS = 16 };

/* A row of the table. */
typedef struct {
    const char *name; /* shader name, also used in error messages */
    uint32_t push_size;
    uint32_t binding_count;
    uint32_t local_size_x;
} vk_pipeline_desc;

/* The table, indexed by vk_pipeline_id. */
extern const vk_pipeline_desc vk_pipeline_descs[VK_PIPE_COUNT];

typedef struct vk_pipeline {
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t uniform_bindings; /* bit b: binding b is a uniform block (small tables every
                                  invocation reads alike); the others are storage buffers */
} vk_pipeline;

/* An embedded shader: SPIR-V words compiled from glsl/<name>.comp at build time. */
typedef struct {
    const char *name;
    const uint32_t *code;
    size_t size; /* bytes */
} vk_shader_code;

/* The shader called `name`, or NULL. */
const vk_shader_code *vk_shader_find(const char *name);

/* Number of embedded shaders, and shader i of them (for listing and tests). */
size_t vk_shader_count(void);
const vk_shader_code *vk_shader_at(size_t i);

/* The pipeline `id`, created on first use. Creation checks the table row against the
 * device limits and the SPIR-V (bindings 0..n-1 in set 0, a push block iff push_size > 0). */
int vk_pipeline_get(vk_context *vk, vk_pipeline_id id, const vk_pipeline **out);

/* Shared memory a kernel may use at most (what NVIDIA allows without opting in), and the bytes
 * of it kept back for small fixed arrays beside the one large array. The fused kernels declare
 * none now (their layer table is a uniform block), but the reserve stays: the fused tiles and
 * S partial slots are planned from what is left, so changing it changes every plan. */
enum { VK_SHARED_MAX_BYTES = 49152, VK_SHARED_RESERVED_BYTES = 4096 };

/* Floats of workgroup shared memory every pipeline gets as specialization constant 1, for one
 * large array: the device's limit (at most VK_SHARED_MAX_BYTES) less VK_SHARED_RESERVED_BYTES. */
uint32_t vk_shared_floats(const vk_context *vk);

/* Creates every pipeline in the table now (start-up cost up front; a test checks the table). */
int vk_pipelines_create_all(vk_context *vk);

/* Destroys the pipelines; vk_context_free calls it. */
void vk_pipelines_free(vk_context *vk);

/* Records pipeline `id` on views[0..n_views) (binding i = views[i]) with the push struct.
 * Fails without recording when n_views or push_size differ from the table, a view is out
 * of its buffer, misaligned (minStorageBufferOffsetAlignment) or too large, or a group
 * count exceeds the device limit. */
int vk_dispatch(vk_context *vk, VkCommandBuffer cmd, vk_pipeline_id id, const vk_view *views, uint32_t n_views,
                const void *push, uint32_t push_size, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z);

/* Workgroups covering `count` invocations of `id`, as x (up to the device limit) times y.
 * The shader recovers the index with global_index() from common.glsl and checks it < count. */
int vk_groups_1d(const vk_context *vk, vk_pipeline_id id, uint64_t count, uint32_t groups[3]);

/* vk_groups_1d + vk_dispatch. */
int vk_dispatch_1d(vk_context *vk, VkCommandBuffer cmd, vk_pipeline_id id, const vk_view *views, uint32_t n_views,
                   const void *push, uint32_t push_size, uint64_t count);

/* ---- pipelines from SPIR-V made at run time (src/hard/hard_spirv.c) ----
 * The table's shape, with `desc` in place of a table row (bindings 0..n-1 in set 0, the push
 * range, local_size_x): checked against the device and the SPIR-V as the embedded ones are. The
 * caller owns the pipeline and destroys it with vk_pipeline_destroy before the context. */
int vk_pipeline_create_spirv(vk_context *vk, const vk_pipeline_desc *desc, const uint32_t *code, size_t size,
                             vk_pipeline *out);

/* Most specialisation constants a pipeline of the table may take beyond ids 0 and 1. */
enum { VK_SPEC_EXTRA_MAX = 320 };

/* Pipeline `id` of the table with `count` more specialisation constants, ids 2, 3, ... (what
 * one model fixes, as the fused kernels' perception circuits): the caller records it with
 * vk_dispatch_pipeline and lets go of it with vk_pipeline_destroy. Callers asking for the same
 * constants share one pipeline, compiled once, destroyed when the last lets go. */
int vk_pipeline_create_specialized(vk_context *vk, vk_pipeline_id id, const uint32_t *values, uint32_t count,
                                   vk_pipeline *out);

/* One pipeline for vk_pipeline_create_specialized_many: its arguments of
 * vk_pipeline_create_specialized. */
typedef struct {
    vk_pipeline_id id;
    const uint32_t *values;
    uint32_t count;
    vk_pipeline *out;
} vk_specialize_job;

/* vk_pipeline_create_specialized for each of `n` jobs, the compiles on up to `threads` threads at
 * once (<= 0: one a CPU core; one while pipeline statistics print): the driver's compiler is most
 * of a cold start-up, and a run may need several models' sets of fused kernels. Jobs
 * with the same id and constants share one pipeline, as do those already made. On failure the
 * first compile's message is set, every out is zeroed and nothing is held. */
int vk_pipeline_create_specialized_many(vk_context *vk, const vk_specialize_job *jobs, int n, int threads);

/* Destroys what vk_pipeline_create_spirv or vk_pipeline_create_specialized made; safe on a
 * zeroed pipeline. */
void vk_pipeline_destroy(vk_context *vk, vk_pipeline *p);

/* The descriptor type of a pipeline's binding: uniform where its SPIR-V declares a uniform block. */
static inline VkDescriptorType vk_pipeline_binding_type(const vk_pipeline *p, uint32_t binding)
{
    return p->uniform_bindings >> binding & 1u ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}

/* vk_dispatch for a pipeline of vk_pipeline_create_spirv made from `desc`. */
int vk_dispatch_pipeline(vk_context *vk, VkCommandBuffer cmd, const vk_pipeline *p, const vk_pipeline_desc *desc,
                         const vk_view *views, uint32_t n_views, const void *push, uint32_t push_size,
                         uint32_t groups_x, uint32_t groups_y, uint32_t groups_z);

/* vk_groups_1d for a workgroup of local_size invocations (`name` for the message). */
int vk_groups_1d_local(const vk_context *vk, const char *name, uint32_t local_size, uint64_t count, uint32_t groups[3]);

#endif
