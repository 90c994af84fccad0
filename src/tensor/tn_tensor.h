/* tn_tensor.h: n-d tensors with reverse-mode autograd (module prefix tn_).
 *
 * A tensor is a strided view (shape, strides, offset) into a reference-counted storage of
 * float32 or float64 elements that lives on a device. Every op returns a new tensor that the
 * caller owns (release it with tn_free); tensors an op depends on are kept alive by its record,
 * so intermediates may be freed as soon as they are no longer needed by the caller.
 * Errors: functions return NULL or a dlca_status and set err_message(); an op given a NULL
 * input returns NULL and keeps the earlier message, so a chain can be checked once at its end.
 * Numerics: kernels load elements as double, compute in double and round once on store, so
 * float64 tensors give the precision finite-difference checks need.
 * Devices: a tensor lives on the CPU or on a device object a backend made (tn_vk_open in the
 * tensor_vk module); copies between them are explicit (tn_to_device, tn_to_cpu).
 * Ops and losses are declared in tn_ops.h; custom differentiable functions in tn_function.h;
 * the flat parameter buffer, optimizers and schedules in tn_optim.h. */
#ifndef DLCA_TN_TENSOR_H
#define DLCA_TN_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#define TN_MAX_DIMS 8
/* A reshape extent computed from the others (at most one per shape). */
#define TN_INFER ((size_t)-1)
/* Expands to "ndim, shape" for calls like tn_zeros(TN_F64, TN_SHAPE(3, 5)). */
#define TN_SHAPE(...) \
    (int)(sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t)), (const size_t[]){__VA_ARGS__}

typedef enum { TN_F32 = 0, TN_F64 = 1 } tn_dtype;

/* The kind of device a storage lives on (for messages and quick checks). TN_VULKAN is float32
 * only. Which device object, of several of one kind, is storage->dev. */
typedef enum { TN_CPU = 0, TN_VULKAN = 1 } tn_device;

/* A device object made by a backend (tn_vk_open); NULL stands for the CPU everywhere. Its
 * contents are the backend's (tn_internal.h). */
typedef struct tn_dev tn_dev;

struct tn_backend;

/* A block of elements shared by tensors that view it. It carries the backend table that owns
 * its memory and the device object it lives on, so no code outside the backend needs to know
 * which backends exist. */
typedef struct tn_storage {
    int refs;
    tn_dtype dtype;
    tn_device device;
    size_t numel;  /* capacity in elements */
    void *data;    /* host memory (TN_CPU); NULL on a device */
    void *handle;  /* backend buffer (device); NULL on the CPU */
    const struct tn_backend *backend;
    tn_dev *dev;   /* NULL on the CPU */
} tn_storage;

typedef struct tn_node tn_node;
typedef struct tn_tensor tn_tensor;

/* Fields are read-only for users; change tensors through the functions below. */
struct tn_tensor {
    int ndim;                       /* 0 for a scalar */
    size_t shape[TN_MAX_DIMS];
    ptrdiff_t stride[TN_MAX_DIMS];  /* in elements; 0 on broadcast dims */
    size_t offset;                  /* first element, in elements from storage start */
    tn_dtype dtype;
    tn_device device;
    tn_storage *storage;
    int requires_grad;  /* set on leaves by the user, on op results by the tape */
    tn_tensor *grad;    /* accumulated gradient of a leaf (NULL until the first backward) */
    int grad_stale;     /* a leaf's grad holds nothing to keep: the next gradient replaces it
                           (tn_params_grad_replace), with no zero-fill before */
    tn_node *node;      /* the op that made it; NULL for leaves */
    int refs;
    /* private to tn_tape.c / tn_free */
    unsigned bw_mark;
    tn_tensor *bw_grad;
    tn_tensor *free_next;
};

/* ---- creation and lifetime ---- */

/* A new zero-filled contiguous CPU tensor. */
tn_tensor *tn_zeros(tn_dtype dtype, int ndim, const size_t *shape);

/* A new zero-filled contiguous tensor on `dev` (NULL: the CPU). */
tn_tensor *tn_zeros_on(tn_dev *dev, tn_dtype dtype, int ndim, const size_t *shape);

/* A new contiguous CPU tensor with every element `value`. */
tn_tensor *tn_full(tn_dtype dtype, int ndim, const size_t *shape, double value);

/* A 0-d tensor holding `value`. */
tn_tensor *tn_scalar(tn_dtype dtype, double value);

/* A new tensor from numel(shape) doubles in C order, rounded to `dtype`. */
tn_tensor *tn_from_f64(tn_dtype dtype, int ndim, const size_t *shape, const double *src);

/* A new tensor from numel(shape) floats in C order, converted to `dtype`. */
tn_tensor *tn_from_f32(tn_dtype dtype, int ndim, const size_t *shape, const float *src);

/* Adds a reference and returns `t`, so it outlives one tn_free by its other owner. */
tn_tensor *tn_retain(tn_tensor *t);

/* Drops one reference; the last one frees the tensor, its record and its gradient. NULL is fine. */
void tn_free(tn_tensor *t);

/* ---- inspection and host access ---- */

/* Product of the extents (1 for a 0-d tensor). */
size_t tn_numel(const tn_tensor *t);

/* 1 when the elements are dense in C order (so a flat loop visits them in logical order). */
int tn_is_contiguous(const tn_tensor *t);

/* Writes "[3,5]" into buf (always terminated) and returns buf. */
char *tn_shape_str(const tn_tensor *t, char *buf, size_t size);

/* Element `i` in C order of the logical shape (NAN with a message on failure). On a device
 * this waits for recorded work and reads one element: use tn_to_cpu or tn_read for many. */
double tn_get(const tn_tensor *t, size_t i);

/* Sets element `i` in C order; bypasses autograd, so use it on leaves only. */
int tn_set(tn_tensor *t, size_t i, double value);

/* The only element of a one-element tensor (NAN with a message otherwise). */
double tn_item(const tn_tensor *t);

/* Copies all elements in C order into dst[numel] as doubles. */
int tn_read(const tn_tensor *t, double *dst);

/* Overwrites all elements from src[numel] in C order; bypasses autograd. */
int tn_write(tn_tensor *t, const double *src);

/* Host pointer to the first element of a CPU tensor (element type per t->dtype). */
void *tn_data(const tn_tensor *t);

/* Copies src's values into dst (same shape, dtype and device; any strides); bypasses autograd,
 * so use it on leaves, gradients and buffers a custom function fills. One kernel on a device. */
int tn_assign(tn_tensor *dst, const tn_tensor *src);

/* ---- devices ---- */

/* The device object t lives on (NULL for the CPU). */
tn_dev *tn_device_of(const tn_tensor *t);

/* A copy of t on `dev` (NULL: the CPU), dense in C order; differentiable (the gradient goes back
 * to t's device). A tensor already on dev is returned as is (one more reference). A device may
 * hold float32 only. */
tn_tensor *tn_to_device(tn_tensor *t, tn_dev *dev);

/* tn_to_device(t, NULL). */
tn_tensor *tn_to_cpu(tn_tensor *t);

/* ---- views: share storage, are differentiable, return a new reference ---- */

/* Same elements in a new shape; one extent may be TN_INFER. Copies only when t is not contiguous. */
tn_tensor *tn_reshape(tn_tensor *t, int ndim, const size_t *shape);

/* Swaps two dims (negative dims count from the end). */
tn_tensor *tn_transpose(tn_tensor *t, int dim0, int dim1);

/* Reorders dims: result dim i is t's dim perm[i]. */
tn_tensor *tn_permute(tn_tensor *t, const int *perm);

/* Elements start, start+step, ... < stop along `dim` (0 <= start <= stop <= extent, step >= 1). */
tn_tensor *tn_slice(tn_tensor *t, int dim, size_t start, size_t stop, size_t step);

/* The sub-tensor at `index` along `dim`, with that dim removed. */
tn_tensor *tn_select(tn_tensor *t, int dim, size_t index);

/* Broadcasts t to `shape` as NumPy does (stride 0 on new or size-1 dims). */
tn_tensor *tn_expand(tn_tensor *t, int ndim, const size_t *shape);

/* t itself (one more reference) when contiguous, else a dense copy; differentiable. */
tn_tensor *tn_contiguous(tn_tensor *t);

/* A view of the same data with no autograd history. */
tn_tensor *tn_detach(tn_tensor *t);

/* NumPy broadcast of two shapes into out[TN_MAX_DIMS]; DLCA_ERR with a message when they clash. */
int tn_broadcast_shape(int na, const size_t *a, int nb, const size_t *b, int *nout, size_t *out);

/* ---- autograd ---- */

/* Marks a leaf as a parameter whose gradient backward accumulates into t->grad. */
int tn_set_requires_grad(tn_tensor *t, int requires_grad);

/* Backpropagates from a one-element tensor (seed 1); gradients add into leaves' ->grad. */
int tn_backward(tn_tensor *y);

/* Backpropagates from y with output gradient gy (same shape as y). */
int tn_backward_grad(tn_tensor *y, tn_tensor *gy);

/* Sets t->grad to zero (keeps the buffer). */
void tn_zero_grad(tn_tensor *t);

/* Opens a no-grad scope (nestable): ops inside record nothing. Close it with tn_no_grad_end. */
void tn_no_grad_begin(void);

/* Closes the innermost no-grad scope. */
void tn_no_grad_end(void);

/* 1 when ops record history now (no open no-grad scope on this thread). */
int tn_grad_enabled(void);

/* ---- seeded randomness for initialisation and shuffling ---- */

typedef struct {
    uint64_t state;
} tn_rng;

/* A generator from a seed (splitmix64): same seed, same sequence. */
void tn_rng_seed(tn_rng *rng, uint64_t seed);

/* Uniform double in [0, 1). */
double tn_rng_uniform(tn_rng *rng);

/* Standard normal (Box-Muller). */
double tn_rng_normal(tn_rng *rng);

/* Fisher-Yates shuffle of values[0..n). */
void tn_rng_shuffle(tn_rng *rng, size_t *values, size_t n);

/* Fills a CPU tensor with uniform values in [lo, hi), in C order. */
int tn_fill_uniform(tn_tensor *t, tn_rng *rng, double lo, double hi);

/* Fills a CPU tensor with normal values of the given mean and standard deviation. */
int tn_fill_normal(tn_tensor *t, tn_rng *rng, double mean, double std);

#endif
