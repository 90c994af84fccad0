/* tn_vk_internal.h: what the files of the tensor_vk module share: the device object, tn's own
 * pipeline table, the allocator's blocks, and the recording rules.
 *
 * Recording rules: a kernel gets the command buffer with tn_vk__dispatch*, which records the
 * dispatch and a barrier after it. Per-op host data (shapes and strides, indices) goes into the
 * arena, a host-visible buffer bound directly as a storage buffer; an op takes all its arena
 * space in ONE tn_vk__arena call, because a later call may submit tn's own work and reuse the
 * space. Kernels write every element of their output (storages come uninitialised unless asked
 * zeroed), and bind whole buffers with element offsets in their push constants or iterators, so
 * no view needs a storage-offset alignment.
 *
 * Modes: IDLE (nothing recorded), OWN (tn's command buffer holds work), RECORDING (between
 * tn_vk_record_begin and _end: the caller's buffer), PENDING (ended recordings not retired).
 * OWN work is submitted before a recording begins; in PENDING, anything that would need tn's
 * own command buffer or a host read fails. Memory released outside IDLE waits in `deferred`
 * until the next return to IDLE (a sync, or tn_vk_retire). */
#ifndef DLCA_TN_VK_INTERNAL_H
#define DLCA_TN_VK_INTERNAL_H

#include "tn_internal.h"
#include "tn_vk.h"
#include "tn_vk_push.h"
#include "vk_buffer.h"
#include "vk_pipeline.h"

#include <stdint.h>

/* Largest device tensor: offsets and strides travel as int32, elements as 4 bytes. */
#define TN_VK_MAX_NUMEL ((size_t)1 << 30)

/* tn's kernels: ID, shader (glsl/<shader>.comp), push struct, storage-buffer bindings,
 * local_size_x. Built per device from the embedded SPIR-V with vk_pipeline_create_spirv, so this
 * table, not src/vk's, is where a tn kernel is added. */
#define TN_VK_PIPELINE_LIST(X)                                              \
    X(UNARY, tn_unary, vk_push_tn_ew, 3, 256)                               \
    X(BINARY, tn_binary, vk_push_tn_ew, 4, 256)                             \
    X(REDUCE, tn_reduce, vk_push_tn_reduce, 4, 64)                          \
    X(MATMUL, tn_matmul, vk_push_tn_matmul, 4, 256)                         \
    X(SOFTMAX, tn_softmax, vk_push_tn_softmax, 4, 64)                       \
    X(TAKE, tn_take, vk_push_tn_index, 3, 256)                              \
    X(PUT_ADD, tn_put_add, vk_push_tn_index, 3, 64)                         \
    X(CLIP_NORM, tn_clip_norm, vk_push_tn_clip, 2, 256)                     \
    X(OPTIM, tn_optim, tn_vk_push_optim, 5, 256)                            \
    X(OPTIM_CHECK, tn_optim_check, tn_vk_push_check, 3, 256)                \
    X(SOFTMAX_MATMUL, tn_softmax_matmul, tn_vk_push_smm, 4, 64)             \
    X(SSE, tn_sse, tn_vk_push_sse, 6, 256)                                  \
    X(SSE_BWD, tn_sse_bwd, tn_vk_push_sse_bwd, 4, 256)                      \
    X(NOISE, tn_noise, tn_vk_push_noise, 1, 256)

typedef enum {
#define TN_VK_PIPE_ENUM(id, shader, push, bindings, local) TN_VK_PIPE_##id,
    TN_VK_PIPELINE_LIST(TN_VK_PIPE_ENUM)
#undef TN_VK_PIPE_ENUM
    TN_VK_PIPE_COUNT
} tn_vk_pipe;

/* Workgroups of the optimizer's check (each leaves one flag word) and of the SSE reduction (each
 * leaves one partial sum); glsl/tn_optim.comp and tn_sse.comp read at most this many. */
enum { TN_VK_CHECK_GROUPS = 64, TN_VK_SSE_GROUPS = 256 };

/* One device buffer behind a storage (or an arena block): a free-list node while cached. */
typedef struct tn_vk_block {
    vk_buffer buf;
    struct tn_vk_block *next;
    int cls;      /* size class; -1: not cached (freed when released) */
    int external; /* a caller's buffer (tn_vk_wrap): never freed by tn */
} tn_vk_block;

/* Size classes: 4 per power of two from 256 bytes up. */
/* Size classes of device-local blocks, and one more class (TN_VK_HOST_CLASS) of host-visible
 * blocks for storages of at most TN_VK_HOST_NUMEL floats: a loss or a norm the host reads after
 * every step, straight from mapped memory, with no copy and no submission of its own. */
enum { TN_VK_CLASSES = 4 * 40, TN_VK_HOST_CLASS = TN_VK_CLASSES, TN_VK_HOST_NUMEL = 16 };

typedef enum { TN_VK_IDLE, TN_VK_OWN, TN_VK_RECORDING, TN_VK_PENDING } tn_vk_mode;

typedef struct tn_vk_device {
    tn_dev base; /* first: a tn_vk * is this struct */
    vk_context *vk;
    tn_vk_options opt;
    tn_vk_mode mode;
    VkCommandBuffer own;    /* tn's command buffer, allocated once, reset for each use */
    VkCommandBuffer cmd;    /* where ops record now (own, or the caller's) */
    uint32_t recorded;      /* commands in own since its last submission */
    /* arena: `cur` is filled from `at`; full blocks wait in `busy` until IDLE, then `spare` */
    tn_vk_block *arena_cur, *arena_busy, *arena_spare;
    size_t arena_at;
    /* allocator */
    tn_vk_block *free_list[TN_VK_CLASSES + 1]; /* [TN_VK_HOST_CLASS]: the small host-visible ones */
    tn_vk_block *deferred; /* released while work was in flight */
    size_t n_deferred;
    tn_vk_stats stats;
    /* per-device scratch */
    vk_buffer host_scratch; /* host-visible: argmax indices read right after a sync */
    tn_vk_block *sse_work;  /* TN_VK_SSE_GROUPS partial sums + the ticket, zero between uses */
    vk_pipeline pipes[TN_VK_PIPE_COUNT];
} tn_vk_device;

/* The device of a Vulkan storage / tensor. */
static inline tn_vk_device *tn_vk__dev(const tn_storage *s) { return (tn_vk_device *)s->dev; }

/* The device object behind a public handle, or NULL with a message naming `op` when it is not a
 * Vulkan device. */
tn_vk_device *tn_vk__device(tn_vk *dev, const char *op);

/* The buffer behind a device storage. */
static inline vk_buffer *tn_vk__buffer(const tn_storage *s) { return &((tn_vk_block *)s->handle)->buf; }

/* The whole buffer of a tensor's storage, for one binding (shaders add the element offset). */
static inline vk_view tn_vk__view(const tn_tensor *t) { return vk_view_all(tn_vk__buffer(t->storage)); }

/* The backend table (tn_vk_kernels.c) and the parts other files define. */
extern const tn_backend tn_vk_backend;
int tn_vk__alloc(tn_storage *s, int zero);
void tn_vk__release(tn_storage *s);
int tn_vk__grow(tn_storage *s, size_t numel);
int tn_vk__upload(tn_storage *s, size_t off, const void *src, size_t n);
int tn_vk__download(const tn_storage *s, size_t off, void *dst, size_t n);
int tn_vk__softmax_matmul(tn_tensor *out, const tn_tensor *z, const tn_tensor *m);
int tn_vk__softmax_matmul_bwd(tn_tensor *gz, const tn_tensor *z, const tn_tensor *m, const tn_tensor *g);
int tn_vk__argmax_onehot(tn_tensor *out, const tn_tensor *z);
int tn_vk__sse(tn_tensor *loss, tn_tensor *diff, const tn_tensor *pred, const tn_tensor *target);
int tn_vk__sse_bwd(tn_tensor *gpred, tn_tensor *gtarget, const tn_tensor *diff, const tn_tensor *g);
int tn_vk__noise(tn_tensor *out, tn_noise_kind kind, uint32_t key);
int tn_vk__optim_step(tn_optim *o, tn_tensor *values, tn_tensor *grads);
int tn_vk__optim_state_init(tn_optim *o, tn_tensor *values, long applied, long skipped);
int tn_vk__optim_status(tn_optim *o, tn_optim_status *st);
void tn_vk__optim_free(tn_optim *o);
int tn_vk__clip_norm(tn_tensor *grads, double max_norm, double *norm);

/* ---- recording (tn_vk.c) ---- */

/* The command buffer to record into (begins tn's own on demand); fails in PENDING. */
int tn_vk__cmd(tn_vk_device *d, VkCommandBuffer *cmd);

/* After a command was recorded: a barrier so later commands see its writes, and in OWN mode a
 * submission when the buffer is long (or sync_each). */
int tn_vk__recorded(tn_vk_device *d);

/* Fails with a message unless the host may read device memory now; in OWN mode it submits and
 * waits first. `op` names the read. */
int tn_vk__host_read(tn_vk_device *d, const char *op);

/* Records kernel `id` on views[0..n_views) with the push struct, then tn_vk__recorded. */
int tn_vk__dispatch(tn_vk_device *d, tn_vk_pipe id, const vk_view *views, uint32_t n_views, const void *push,
                    uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz);

/* The same with enough workgroups for `count` invocations (none for 0). */
int tn_vk__dispatch_1d(tn_vk_device *d, tn_vk_pipe id, const vk_view *views, uint32_t n_views, const void *push,
                       uint32_t push_size, uint64_t count);

/* Workgroups for `count` groups' worth of work as x times y (x up to the device limit). */
int tn_vk__groups_2d(tn_vk_device *d, uint64_t count, uint32_t *gx, uint32_t *gy);

/* One strided iterator over `shape` for tensors t[0..nop) (nop <= 3) in the arena: the layout
 * glsl/tn_common.glsl's tn_iter_offsets reads at meta[0] (tn_vk_kernels.c). */
int tn_vk__iter_meta(tn_vk_device *d, int ndim, const size_t *shape, int nop, const tn_tensor *const *t,
                     vk_view *meta);

/* ---- memory (tn_vk_mem.c) ---- */

/* `bytes` of host-visible scratch: *view binds it, *host writes it (before recording). */
int tn_vk__arena(tn_vk_device *d, size_t bytes, vk_view *view, void **host);

/* Releases a block (a storage's, or one made by tn_vk__block_make): into the free lists, at once
 * in IDLE, else once the work in flight is done. */
void tn_vk__block_release(tn_vk_device *d, tn_vk_block *b);

/* A buffer outside the size classes (freed when released): host-visible when `host`. */
int tn_vk__block_make(tn_vk_device *d, size_t bytes, int host, tn_vk_block **out);

/* Called on every return to IDLE: deferred blocks and busy arena blocks become reusable. */
void tn_vk__recycle(tn_vk_device *d);

/* Frees every cached block and arena block (the device is IDLE). */
void tn_vk__free_all(tn_vk_device *d);

/* A host-visible buffer of at least `bytes` for a kernel's output the host reads after a sync
 * (argmax indices); the device's one, grown on demand. */
int tn_vk__host_scratch(tn_vk_device *d, size_t bytes, vk_buffer **buf);

/* Records the reduction of a into out (a's ndim, extent 1 on reduced dims; see
 * glsl/tn_reduce.comp). For max, arg (host-visible) gets int32 C-order indices into a of the
 * first maxima, in C order of out. */
enum { TN_VK_REDUCE_SUM = 0, TN_VK_REDUCE_MAX = 1, TN_VK_REDUCE_SUMSQ = 2 };
int tn_vk__reduce(int mode, tn_tensor *out, const tn_tensor *a, vk_buffer *arg);

#endif
