/* tn_tensor.c: tensor and storage lifetime, host access, broadcasting, argument checks and
 * the seeded RNG. Views (reshape, transpose, ...) live in tn_view.c, device copies in
 * tn_device.c. */
#include "tn_internal.h"

#include "error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t tn__dtype_size(tn_dtype dtype) { return dtype == TN_F32 ? sizeof(float) : sizeof(double); }

/* ---- shapes ---- */

size_t tn__numel(int ndim, const size_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

size_t tn_numel(const tn_tensor *t) { return tn__numel(t->ndim, t->shape); }

char *tn__shape_text(int ndim, const size_t *shape, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%zu" : "%zu", shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

char *tn_shape_str(const tn_tensor *t, char *buf, size_t size)
{
    return tn__shape_text(t->ndim, t->shape, buf, size);
}

int tn_is_contiguous(const tn_tensor *t)
{
    ptrdiff_t want = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != want) return 0;
        want *= (ptrdiff_t)t->shape[d];
    }
    return 1;
}

int tn__norm_dim(const char *op, int dim, int ndim)
{
    int d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim) {
        err_set(DLCA_ERR, "%s: dim %d out of range for a %d-d tensor", op, dim, ndim);
        return -1;
    }
    return d;
}

int tn_broadcast_shape(int na, const size_t *a, int nb, const size_t *b, int *nout, size_t *out)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        /* align from the right, as NumPy does */
        size_t ea = i < n - na ? 1 : a[i - (n - na)];
        size_t eb = i < n - nb ? 1 : b[i - (n - nb)];
        if (ea != eb && ea != 1 && eb != 1) {
            char sa[96], sb[96];
            return err_set(DLCA_ERR, "shapes %s and %s do not broadcast (dim %d: %zu vs %zu)",
                           tn__shape_text(na, a, sa, sizeof sa), tn__shape_text(nb, b, sb, sizeof sb),
                           i, ea, eb);
        }
        out[i] = ea == 1 ? eb : ea;
    }
    *nout = n;
    return DLCA_OK;
}

void tn__expanded(tn_tensor *view, const tn_tensor *t, int ndim, const size_t *shape)
{
    *view = *t;
    view->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        int src = i - (ndim - t->ndim);
        view->shape[i] = shape[i];
        /* stride 0 repeats the single element along a broadcast dim */
        view->stride[i] = (src < 0 || t->shape[src] != shape[i]) ? 0 : t->stride[src];
    }
}

/* ---- argument checks ---- */

int tn__null(const char *op)
{
    /* keep the message of the call that produced the NULL: it names the real cause */
    if (err_message()[0] == '\0') err_set(DLCA_ERR, "%s: input is NULL", op);
    return DLCA_ERR;
}

int tn__check_pair(const char *op, const tn_tensor *a, const tn_tensor *b)
{
    if (a->dtype != b->dtype)
        return err_set(DLCA_ERR, "%s: dtypes differ (%s vs %s)", op, a->dtype == TN_F32 ? "f32" : "f64",
                       b->dtype == TN_F32 ? "f32" : "f64");
    if (a->storage->dev != b->storage->dev)
        return err_set(DLCA_ERR, "%s: tensors are on different devices (%s and %s%s); copy one with tn_to_device or "
                       "tn_to_cpu", op, a->storage->backend->name, b->storage->backend->name,
                       a->device == b->device ? ", two device objects" : "");
    return DLCA_OK;
}

int tn__check_shape(const char *op, const tn_tensor *a, const tn_tensor *b)
{
    char sa[96], sb[96];
    int same = a->ndim == b->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = a->shape[d] == b->shape[d];
    if (same) return DLCA_OK;
    return err_set(DLCA_ERR, "%s: shapes %s and %s differ", op, tn_shape_str(a, sa, sizeof sa),
                   tn_shape_str(b, sb, sizeof sb));
}

/* ---- lifetime ---- */

static tn_storage *storage_new(tn_dev *dev, tn_dtype dtype, size_t numel, int zero)
{
    const tn_backend *be = dev ? dev->backend : &tn_cpu_backend;
    tn_storage *s = calloc(1, sizeof *s);
    if (!s) {
        err_set(DLCA_ERR_NOMEM, "tn: out of memory for a storage");
        return NULL;
    }
    *s = (tn_storage){.refs = 1, .dtype = dtype, .device = dev ? dev->kind : TN_CPU, .numel = numel,
                      .backend = be, .dev = dev};
    if (be->alloc(s, zero) != DLCA_OK) {
        free(s);
        return NULL;
    }
    return s;
}

static void storage_release(tn_storage *s)
{
    if (!s || --s->refs > 0) return;
    s->backend->release(s);
    free(s);
}

/* A tensor struct for `storage` (reference taken), contiguous strides for shape. */
static tn_tensor *tensor_new(tn_storage *storage, int ndim, const size_t *shape)
{
    tn_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        err_set(DLCA_ERR_NOMEM, "tn: out of memory for a tensor");
        return NULL;
    }
    t->ndim = ndim;
    t->dtype = storage->dtype;
    t->device = storage->device;
    t->storage = storage;
    t->refs = 1;
    storage->refs++;
    ptrdiff_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t->shape[d] = shape[d];
        t->stride[d] = stride;
        stride *= (ptrdiff_t)shape[d];
    }
    return t;
}

tn_tensor *tn__alloc(tn_dev *dev, tn_dtype dtype, int ndim, const size_t *shape, int zero)
{
    if (ndim < 0 || ndim > TN_MAX_DIMS) {
        err_set(DLCA_ERR, "tn: %d dims (at most %d)", ndim, TN_MAX_DIMS);
        return NULL;
    }
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] && numel > SIZE_MAX / 16 / shape[d]) {
            err_set(DLCA_ERR, "tn: shape too large");
            return NULL;
        }
        numel *= shape[d];
    }
    tn_storage *s = storage_new(dev, dtype, numel, zero);
    if (!s) return NULL;
    tn_tensor *t = tensor_new(s, ndim, shape);
    storage_release(s); /* the tensor holds it now */
    return t;
}

tn_tensor *tn__zeros_like(const tn_tensor *t, int ndim, const size_t *shape)
{
    return tn__alloc(t->storage->dev, t->dtype, ndim, shape, 1);
}

tn_tensor *tn__empty_like(const tn_tensor *t, int ndim, const size_t *shape)
{
    return tn__alloc(t->storage->dev, t->dtype, ndim, shape, 0);
}

tn_tensor *tn__view(tn_tensor *base, int ndim, const size_t *shape, const ptrdiff_t *stride,
                    size_t offset)
{
    tn_tensor *t = tensor_new(base->storage, ndim, shape);
    if (!t) return NULL;
    for (int d = 0; d < ndim; d++) t->stride[d] = stride[d];
    t->offset = offset;
    return t;
}

tn_tensor *tn_retain(tn_tensor *t)
{
    if (t) t->refs++;
    return t;
}

static void drop(tn_tensor *t, void *list)
{
    tn_tensor **dead = list;
    if (t && --t->refs == 0) {
        t->free_next = *dead;
        *dead = t;
    }
}

void tn_free(tn_tensor *t)
{
    /* A worklist instead of recursion: freeing the end of a long graph (BPTT over many steps)
     * releases a chain as deep as the graph, which would overflow the stack. */
    tn_tensor *dead = NULL;
    drop(t, &dead);
    while (dead) {
        tn_tensor *x = dead;
        dead = x->free_next;
        if (x->node) tn__node_free(x->node, drop, &dead);
        drop(x->grad, &dead);
        drop(x->bw_grad, &dead);
        storage_release(x->storage);
        free(x);
    }
}

/* ---- creation ---- */

tn_tensor *tn_zeros(tn_dtype dtype, int ndim, const size_t *shape) { return tn__alloc(NULL, dtype, ndim, shape, 1); }

tn_tensor *tn_zeros_on(tn_dev *dev, tn_dtype dtype, int ndim, const size_t *shape)
{
    return tn__alloc(dev, dtype, ndim, shape, 1);
}

tn_tensor *tn_full(tn_dtype dtype, int ndim, const size_t *shape, double value)
{
    tn_tensor *t = tn__alloc(NULL, dtype, ndim, shape, 1);
    if (t && value != 0.0 && tn__backend_of(t)->fill(t, value) != DLCA_OK) {
        tn_free(t);
        return NULL;
    }
    return t;
}

tn_tensor *tn_scalar(tn_dtype dtype, double value) { return tn_full(dtype, 0, NULL, value); }

/* Uploads n host elements (float or double per src_f32) into fresh contiguous t. */
static int upload_host(tn_tensor *t, const void *src, int src_f32, size_t n)
{
    const tn_backend *be = tn__backend_of(t);
    if ((t->dtype == TN_F32) == (src_f32 != 0)) return be->upload(t->storage, t->offset, src, n);
    void *tmp = malloc((n ? n : 1) * tn__dtype_size(t->dtype));
    if (!tmp) return err_set(DLCA_ERR_NOMEM, "tn: out of memory converting host data");
    for (size_t i = 0; i < n; i++) {
        double v = src_f32 ? ((const float *)src)[i] : ((const double *)src)[i];
        if (t->dtype == TN_F32) ((float *)tmp)[i] = (float)v;
        else ((double *)tmp)[i] = v;
    }
    int status = be->upload(t->storage, t->offset, tmp, n);
    free(tmp);
    return status;
}

static tn_tensor *from_host(tn_dtype dtype, int ndim, const size_t *shape, const void *src, int f32)
{
    tn_tensor *t = tn__alloc(NULL, dtype, ndim, shape, 0);
    if (t && upload_host(t, src, f32, tn_numel(t)) != DLCA_OK) {
        tn_free(t);
        return NULL;
    }
    return t;
}

tn_tensor *tn_from_f64(tn_dtype dtype, int ndim, const size_t *shape, const double *src)
{
    return from_host(dtype, ndim, shape, src, 0);
}

tn_tensor *tn_from_f32(tn_dtype dtype, int ndim, const size_t *shape, const float *src)
{
    return from_host(dtype, ndim, shape, src, 1);
}

/* ---- host access ---- */

/* Storage element index of logical C-order element i. */
static ptrdiff_t element_offset(const tn_tensor *t, size_t i)
{
    ptrdiff_t off = (ptrdiff_t)t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (ptrdiff_t)(i % t->shape[d]) * t->stride[d];
        i /= t->shape[d];
    }
    return off;
}

static int host_index_ok(const char *op, const tn_tensor *t, size_t i)
{
    if (!t) return tn__null(op);
    if (i >= tn_numel(t)) return err_set(DLCA_ERR, "%s: index %zu out of range (%zu elements)", op, i, tn_numel(t));
    return DLCA_OK;
}

double tn_get(const tn_tensor *t, size_t i)
{
    if (host_index_ok("tn_get", t, i) != DLCA_OK) return NAN;
    ptrdiff_t off = element_offset(t, i);
    if (t->device != TN_CPU) { /* one element through the backend: waits for the device */
        double d = 0.0;
        float f = 0.0f;
        void *dst = t->dtype == TN_F32 ? (void *)&f : (void *)&d;
        if (tn__backend_of(t)->download(t->storage, (size_t)off, dst, 1) != DLCA_OK) return NAN;
        return t->dtype == TN_F32 ? f : d;
    }
    return t->dtype == TN_F32 ? ((const float *)t->storage->data)[off] : ((const double *)t->storage->data)[off];
}

int tn_set(tn_tensor *t, size_t i, double value)
{
    if (host_index_ok("tn_set", t, i) != DLCA_OK) return DLCA_ERR;
    ptrdiff_t off = element_offset(t, i);
    float f = (float)value;
    if (t->device != TN_CPU)
        return tn__backend_of(t)->upload(t->storage, (size_t)off, t->dtype == TN_F32 ? (void *)&f : (void *)&value, 1);
    if (t->dtype == TN_F32) ((float *)t->storage->data)[off] = f;
    else ((double *)t->storage->data)[off] = value;
    return DLCA_OK;
}

double tn_item(const tn_tensor *t)
{
    if (t && tn_numel(t) != 1) {
        char s[96];
        err_set(DLCA_ERR, "tn_item: tensor of shape %s has %zu elements, not 1", tn_shape_str(t, s, sizeof s),
                tn_numel(t));
        return NAN;
    }
    return tn_get(t, 0);
}

void *tn_data(const tn_tensor *t)
{
    if (!t || t->device != TN_CPU) {
        err_set(DLCA_ERR, "tn_data: not a CPU tensor");
        return NULL;
    }
    return (char *)t->storage->data + t->offset * tn__dtype_size(t->dtype);
}

int tn_read(const tn_tensor *t, double *dst)
{
    if (!t) return tn__null("tn_read");
    size_t n = tn_numel(t);
    tn_tensor *c = tn__unary("tn_read", TN_U_COPY, 0, 0, (tn_tensor *)t); /* dense, C order */
    void *tmp = malloc((n ? n : 1) * tn__dtype_size(t->dtype));
    int status = !c ? DLCA_ERR : !tmp ? err_set(DLCA_ERR_NOMEM, "tn_read: out of memory") : DLCA_OK;
    if (status == DLCA_OK) status = tn__backend_of(c)->download(c->storage, c->offset, tmp, n);
    for (size_t i = 0; status == DLCA_OK && i < n; i++)
        dst[i] = t->dtype == TN_F32 ? ((float *)tmp)[i] : ((double *)tmp)[i];
    free(tmp);
    tn_free(c);
    return status;
}

int tn_write(tn_tensor *t, const double *src)
{
    if (!t) return tn__null("tn_write");
    tn_tensor *c = tn__empty_like(t, t->ndim, t->shape);
    int status = c ? upload_host(c, src, 0, tn_numel(t)) : DLCA_ERR;
    /* the copy kernel writes through t's strides, so views of a larger storage work too */
    if (status == DLCA_OK) status = tn__backend_of(t)->unary(TN_U_COPY, 0, 0, t, c);
    tn_free(c);
    return status;
}

int tn_assign(tn_tensor *dst, const tn_tensor *src)
{
    if (!dst || !src) return tn__null("tn_assign");
    if (tn__check_pair("tn_assign", dst, src) != DLCA_OK || tn__check_shape("tn_assign", dst, src) != DLCA_OK)
        return DLCA_ERR;
    return tn__backend_of(dst)->unary(TN_U_COPY, 0, 0, dst, src);
}

tn_dev *tn_device_of(const tn_tensor *t) { return t ? t->storage->dev : NULL; }

/* ---- RNG: splitmix64, one 64-bit state ---- */

void tn_rng_seed(tn_rng *rng, uint64_t seed) { rng->state = seed; }

static uint64_t rng_next(tn_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double tn_rng_uniform(tn_rng *rng) { return (double)(rng_next(rng) >> 11) * 0x1.0p-53; }

double tn_rng_normal(tn_rng *rng)
{
    double u1 = 1.0 - tn_rng_uniform(rng); /* (0, 1]: log stays finite */
    double u2 = tn_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

void tn_rng_shuffle(tn_rng *rng, size_t *values, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(tn_rng_uniform(rng) * (double)i);
        size_t tmp = values[i - 1];
        values[i - 1] = values[j];
        values[j] = tmp;
    }
}

static int fill_random(tn_tensor *t, tn_rng *rng, double a, double b, int normal)
{
    if (!t) return tn__null("tn_fill");
    size_t n = tn_numel(t);
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return err_set(DLCA_ERR_NOMEM, "tn_fill: out of memory");
    for (size_t i = 0; i < n; i++)
        v[i] = normal ? a + b * tn_rng_normal(rng) : a + (b - a) * tn_rng_uniform(rng);
    int status = tn_write(t, v);
    free(v);
    return status;
}

int tn_fill_uniform(tn_tensor *t, tn_rng *rng, double lo, double hi) { return fill_random(t, rng, lo, hi, 0); }

int tn_fill_normal(tn_tensor *t, tn_rng *rng, double mean, double std)
{
    return fill_random(t, rng, mean, std, 1);
}
