/* tn_internal.h: what the tn_*.c files and the backends share and users do not see: the
 * autograd record (tn_node), the device object, the backend table every kernel call goes
 * through, and small shape helpers.
 *
 * Dispatch: ops never touch element data. They allocate outputs, build views and call
 * tn__backend_of(t)->kernel(...). Each storage carries its backend table and device object, so
 * this module names no backend but the CPU one (tn_cpu.c, the reference the others are checked
 * against); a device backend (tensor_vk) fills its own table. Kernels receive operands already
 * broadcast to the iteration shape (stride 0 where broadcast) and write EVERY element of their
 * output: outputs may come from the allocator uninitialised (tn__empty_like). */
#ifndef DLCA_TN_INTERNAL_H
#define DLCA_TN_INTERNAL_H

#include "tn_function.h"
#include "tn_optim.h"
#include "tn_tensor.h"

#include <stdint.h>

/* Inputs an op (a custom function included) may record. */
#define TN_NODE_MAX_IN 8

/* Computes gin[i] (shape of n->in[i]) for each input that requires grad, from the output
 * `out` and its gradient `gout`; leaves the others NULL. Runs with grad mode off.
 * For input i in the node's `destinations` mask, gin[i] may arrive set: the stale gradient buffer of a leaf
 * input (contiguous, its shape and dtype; tn_params_grad_replace), borrowed. The backward then
 * writes its whole gin[i] there and leaves the pointer as it is (no copy after it: one kernel the
 * less), or sets gin[i] to a tensor of its own; it never frees the destination. */
typedef int (*tn_backward_fn)(const tn_node *n, tn_tensor *out, tn_tensor *gout, tn_tensor **gin);

/* One op on the tape. The tensor it produced owns it; it owns references to its inputs and to
 * the tensors it saved for its backward. */
struct tn_node {
    const char *op;          /* name, for messages */
    tn_backward_fn backward;
    int n_in;
    tn_tensor *in[TN_NODE_MAX_IN];
    uint64_t seq;            /* tape position: an op is recorded after all of its inputs */
    int iarg[TN_MAX_DIMS];   /* op arguments: dims, keepdim, permutation */
    double darg[2];          /* op arguments: scalars, bounds */
    int64_t *idx;            /* owned flat indices (gather, max) */
    size_t n_idx;
    tn_tensor *saved;        /* owned: what a fused forward kept for its backward (sse_loss) */
    const tn_function *fn;   /* custom functions (tn_apply): the function and its context */
    void *ctx;
    unsigned destinations;   /* bit i: its backward writes gin[i] into a destination (tn_backward_fn) */
};

/* Unary kernels: out = f(a; s0, s1). */
typedef enum {
    TN_U_COPY, TN_U_NEG, TN_U_EXP, TN_U_LOG, TN_U_SQRT, TN_U_ABS, TN_U_RELU, TN_U_SIGMOID,
    TN_U_TANH, TN_U_CLAMP, TN_U_POWS, TN_U_ADDS, TN_U_MULS, TN_U_COUNT
} tn_ufn;

/* Binary kernels: out = f(a, b; s0, s1). The *_BWD ones take (gradient, saved value). */
typedef enum {
    TN_B_ADD, TN_B_SUB, TN_B_MUL, TN_B_DIV, TN_B_POW,
    TN_B_RELU_BWD,    /* a * (b > 0) */
    TN_B_ABS_BWD,     /* a * sign(b) */
    TN_B_CLAMP_BWD,   /* a * (s0 <= b <= s1) */
    TN_B_SIGMOID_BWD, /* a * b * (1 - b), b = sigmoid output */
    TN_B_TANH_BWD,    /* a * (1 - b * b), b = tanh output */
    TN_B_SQRT_BWD,    /* a / (2 b), b = sqrt output */
    TN_B_POWS_BWD,    /* a * s0 * b ** (s0 - 1) */
    TN_B_COUNT
} tn_bfn;

/* Counter-based noise (tn_uniform_noise, tn_gumbel_noise). */
typedef enum { TN_NOISE_UNIFORM = 0, TN_NOISE_GUMBEL = 1 } tn_noise_kind;

/* The kernel table of one backend. Every operand has the dtype of the storage it views and
 * lives on the device of `out` (or of the first operand). */
typedef struct tn_backend {
    const char *name;
    /* s->numel elements for s->dev; zero-filled when `zero`, else contents undefined */
    int (*alloc)(tn_storage *s, int zero);
    void (*release)(tn_storage *s);
    int (*grow)(tn_storage *s, size_t numel);  /* keeps contents, zero-fills the rest */
    /* copy n elements of the storage's dtype between host memory and storage[off..) */
    int (*upload)(tn_storage *s, size_t off, const void *src, size_t n);
    int (*download)(const tn_storage *s, size_t off, void *dst, size_t n);
    int (*fill)(tn_tensor *out, double value);
    int (*unary)(tn_ufn fn, double s0, double s1, tn_tensor *out, const tn_tensor *a);
    /* a and b already have out's shape */
    int (*binary)(tn_bfn fn, double s0, double s1, tn_tensor *out, const tn_tensor *a,
                  const tn_tensor *b);
    /* out has a's ndim, extent 1 on reduced dims. Max also writes arg[numel(out)]: the C-order
     * index into a of the first maximum (a host read on a device). */
    int (*reduce_sum)(tn_tensor *out, const tn_tensor *a);
    int (*reduce_max)(tn_tensor *out, int64_t *arg, const tn_tensor *a);
    /* out [B..,n,m] = a [B..,n,k] x b [B..,k,m]; all have the same ndim >= 2 */
    int (*matmul)(tn_tensor *out, const tn_tensor *a, const tn_tensor *b);
    int (*softmax)(int log, int dim, tn_tensor *out, const tn_tensor *a);
    /* gin from output y and its gradient g */
    int (*softmax_bwd)(int log, int dim, tn_tensor *gin, const tn_tensor *y, const tn_tensor *g);
    /* contiguous out/a: out[p] = a[idx[p]]; contiguous dst/src: dst[idx[p]] += src[p] */
    int (*take)(tn_tensor *out, const tn_tensor *a, const int64_t *idx);
    int (*put_add)(tn_tensor *dst, const tn_tensor *src, const int64_t *idx);
    /* contiguous, rows = numel(z) / k: out [rows, c] = softmax(z [rows, k]) m [k, c]; the
     * backward recomputes the softmax from z: gz = p (g m^T - <g, out>) */
    int (*softmax_matmul)(tn_tensor *out, const tn_tensor *z, const tn_tensor *m);
    int (*softmax_matmul_bwd)(tn_tensor *gz, const tn_tensor *z, const tn_tensor *m, const tn_tensor *g);
    /* contiguous [rows, k]: out = one-hot of the first maximum of each row of z */
    int (*argmax_onehot)(tn_tensor *out, const tn_tensor *z);
    /* loss (0-d) = sum (pred - target)^2 with diff (dense, pred's shape) = pred - target kept;
     * backward: gpred = 2 g diff, gtarget (NULL: not wanted) = -gpred, g the 0-d output gradient */
    int (*sse)(tn_tensor *loss, tn_tensor *diff, const tn_tensor *pred, const tn_tensor *target);
    int (*sse_bwd)(tn_tensor *gpred, tn_tensor *gtarget, const tn_tensor *diff, const tn_tensor *g);
    /* contiguous out: element i = the noise of tn__noise_bits(key, i) */
    int (*noise)(tn_tensor *out, tn_noise_kind kind, uint32_t key);
    /* One optimizer update of the flat blocks (tn_optim.h); state made on first use. */
    int (*optim_step)(tn_optim *o, tn_tensor *values, tn_tensor *grads);
    /* Makes o's state for n elements now, zeroed, with the counters of `applied` / `skipped`. */
    int (*optim_state_init)(tn_optim *o, tn_tensor *values, long applied, long skipped);
    int (*optim_status)(tn_optim *o, tn_optim_status *st);
    void (*optim_free)(tn_optim *o);
    /* clips grads (1-d, whole storage) to global L2 norm max_norm; *norm unless NULL */
    int (*clip_norm)(tn_tensor *grads, double max_norm, double *norm);
} tn_backend;
/* Kernels may be asynchronous (a device records them and runs them later): only download
 * promises host data, and every operand stays alive at least until the kernel returns. */

/* The CPU device's table (tn_cpu.c); every storage with dev NULL uses it. */
extern const tn_backend tn_cpu_backend;

/* What every device object starts with; the backend's own state follows in its struct. */
struct tn_dev {
    const tn_backend *backend;
    tn_device kind;
};

/* The table for t's storage. */
static inline const tn_backend *tn__backend_of(const tn_tensor *t) { return t->storage->backend; }

/* Bytes per element. */
size_t tn__dtype_size(tn_dtype dtype);

/* A new contiguous tensor on `dev` (NULL: CPU), zero-filled when `zero`. */
tn_tensor *tn__alloc(tn_dev *dev, tn_dtype dtype, int ndim, const size_t *shape, int zero);

/* A new zero-filled contiguous tensor with t's dtype and device. */
tn_tensor *tn__zeros_like(const tn_tensor *t, int ndim, const size_t *shape);

/* Like tn__zeros_like but uninitialised: for outputs a kernel writes in full. */
tn_tensor *tn__empty_like(const tn_tensor *t, int ndim, const size_t *shape);

/* A new tensor viewing base's storage; no autograd record. */
tn_tensor *tn__view(tn_tensor *base, int ndim, const size_t *shape, const ptrdiff_t *stride,
                    size_t offset);

/* Fills *view (a struct on the caller's stack, not reference-counted) with t broadcast to
 * shape; valid while t lives. Shapes must be broadcast-compatible. */
void tn__expanded(tn_tensor *view, const tn_tensor *t, int ndim, const size_t *shape);

/* For a NULL input: sets "<op>: input is NULL" unless a message is already set (that earlier
 * message names the real cause) and returns DLCA_ERR. */
int tn__null(const char *op);

/* Fails with a message when a and b differ in dtype or device. */
int tn__check_pair(const char *op, const tn_tensor *a, const tn_tensor *b);

/* Fails with a message when a and b differ in shape. */
int tn__check_shape(const char *op, const tn_tensor *a, const tn_tensor *b);

/* dim in [-ndim, ndim) to [0, ndim); -1 with a message when out of range. */
int tn__norm_dim(const char *op, int dim, int ndim);

/* C-order element count of a shape. */
size_t tn__numel(int ndim, const size_t *shape);

/* "[3,5]" of a shape into buf. */
char *tn__shape_text(int ndim, const size_t *shape, char *buf, size_t size);

/* Records out's history when grad mode is on and an input requires grad: copies `proto`
 * (op, backward, n_in, in, args) into a node on out. Takes ownership of proto->idx and
 * proto->saved either way. Returns out, or NULL (out freed) when out is NULL or allocation fails. */
tn_tensor *tn__record(tn_tensor *out, const tn_node *proto);

/* Frees a node's owned parts and hands its tensor references to `drop` (tn_free's worklist). */
void tn__node_free(tn_node *n, void (*drop)(tn_tensor *t, void *list), void *list);

/* Ops used by backward passes (grad mode off): */
/* g summed over broadcast dims down to `shape`. */
tn_tensor *tn__sum_to(tn_tensor *g, int ndim, const size_t *shape);
/* Un-recorded binary kernel with broadcasting. */
tn_tensor *tn__binary(const char *op, tn_bfn fn, double s0, double s1, tn_tensor *a, tn_tensor *b);
/* Un-recorded unary kernel. */
tn_tensor *tn__unary(const char *op, tn_ufn fn, double s0, double s1, tn_tensor *a);

/* ---- counter-based noise, shared by every backend (GLSL twin: glsl/tn_common.glsl) ---- */

/* The 32-bit key of (seed, stream). */
uint32_t tn__noise_key(uint64_t seed, uint32_t stream);

/* 32 random bits for element `index` of the stream keyed `key`. */
uint32_t tn__noise_bits(uint32_t key, uint32_t index);

/* The value of one draw: uniform in (0, 1) from the top 23 bits (exact in float), or Gumbel
 * -log(-log(u)), computed in double. */
double tn__noise_value(tn_noise_kind kind, uint32_t bits);

/* ---- CPU kernels of tn_cpu_fused.c and tn_optim.c, for tn_cpu.c's table ---- */
int tn__cpu_softmax_matmul(tn_tensor *out, const tn_tensor *z, const tn_tensor *m);
int tn__cpu_softmax_matmul_bwd(tn_tensor *gz, const tn_tensor *z, const tn_tensor *m, const tn_tensor *g);
int tn__cpu_argmax_onehot(tn_tensor *out, const tn_tensor *z);
int tn__cpu_sse(tn_tensor *loss, tn_tensor *diff, const tn_tensor *pred, const tn_tensor *target);
int tn__cpu_sse_bwd(tn_tensor *gpred, tn_tensor *gtarget, const tn_tensor *diff, const tn_tensor *g);
int tn__cpu_noise(tn_tensor *out, tn_noise_kind kind, uint32_t key);
int tn__cpu_optim_step(tn_optim *o, tn_tensor *values, tn_tensor *grads);
int tn__cpu_optim_state_init(tn_optim *o, tn_tensor *values, long applied, long skipped);
int tn__cpu_optim_status(tn_optim *o, tn_optim_status *st);
int tn__cpu_clip_norm(tn_tensor *grads, double max_norm, double *norm);

#endif
