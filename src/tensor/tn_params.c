/* tn_params.c: the flat parameter buffer (one value block, one gradient block, parameters as
 * views into both), moving it between devices in place, and gradient clipping over it. Every
 * device-specific step goes through the backend table the blocks' storages carry. */
#include "tn_internal.h"

#include "error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline double ld(const void *p, tn_dtype dt, size_t i)
{
    return dt == TN_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static inline void st(void *p, tn_dtype dt, size_t i, double v)
{
    if (dt == TN_F32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* ---- the buffer ---- */

int tn_params_init(tn_params *p, tn_dtype dtype)
{
    size_t zero = 0;
    memset(p, 0, sizeof *p);
    p->dtype = dtype;
    p->values = tn__alloc(NULL, dtype, 1, &zero, 1);
    p->grads = tn__alloc(NULL, dtype, 1, &zero, 1);
    if (!p->values || !p->grads) {
        tn_params_free(p);
        return DLCA_ERR_NOMEM;
    }
    return DLCA_OK;
}

/* Grows both blocks to `numel` elements; views keep working since they address the storage. */
static int grow_blocks(tn_params *p, size_t numel)
{
    const tn_backend *be = tn__backend_of(p->values);
    if (be->grow(p->values->storage, numel) != DLCA_OK || be->grow(p->grads->storage, numel) != DLCA_OK)
        return DLCA_ERR;
    p->values->shape[0] = p->grads->shape[0] = numel;
    return DLCA_OK;
}

tn_tensor *tn_params_add(tn_params *p, int ndim, const size_t *shape)
{
    ptrdiff_t stride[TN_MAX_DIMS], s = 1;
    if (ndim < 0 || ndim > TN_MAX_DIMS) return err_set(DLCA_ERR, "tn_params_add: %d dims", ndim), NULL;
    size_t align = p->align > 1 ? p->align : 1;
    size_t n = tn__numel(ndim, shape), offset = (p->numel + align - 1) / align * align;
    if (p->count == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        tn_tensor **params = realloc(p->params, (size_t)cap * sizeof *params);
        if (!params) return err_set(DLCA_ERR_NOMEM, "tn_params_add: out of memory"), NULL;
        p->params = params;
        p->cap = cap;
    }
    if (grow_blocks(p, offset + n) != DLCA_OK) return NULL;
    for (int d = ndim - 1; d >= 0; d--) {
        stride[d] = s;
        s *= (ptrdiff_t)shape[d];
    }
    tn_tensor *t = tn__view(p->values, ndim, shape, stride, offset);
    tn_tensor *g = t ? tn__view(p->grads, ndim, shape, stride, offset) : NULL;
    if (!g) {
        tn_free(t);
        return NULL;
    }
    p->numel = offset + n;
    t->requires_grad = 1;
    t->grad = g;
    p->params[p->count++] = t;
    return t;
}

void *tn_params_data(tn_params *p) { return tn_data(p->values); }

void *tn_params_grad(tn_params *p) { return tn_data(p->grads); }

void tn_params_zero_grad(tn_params *p)
{
    if (p->grads) tn__backend_of(p->grads)->fill(p->grads, 0.0);
}

void tn_params_grad_replace(tn_params *p)
{
    for (int i = 0; i < p->count; i++) p->params[i]->grad_stale = 1;
}

void tn_params_free(tn_params *p)
{
    for (int i = 0; i < p->count; i++) tn_free(p->params[i]);
    free(p->params);
    tn_free(p->values);
    tn_free(p->grads);
    memset(p, 0, sizeof *p);
}

/* ---- moving the buffer ---- */

/* Swaps s's memory for memory on `dev` with the same contents, in place, so every tensor viewing
 * the storage now views the new memory. Goes through the host. */
static int storage_move(tn_storage *s, tn_dev *dev)
{
    size_t bytes = (s->numel ? s->numel : 1) * tn__dtype_size(s->dtype);
    void *host = s->dev ? malloc(bytes) : s->data;
    if (!host) return err_set(DLCA_ERR_NOMEM, "tn_params_to_device: out of memory");
    int rc = s->dev ? s->backend->download(s, 0, host, s->numel) : DLCA_OK;
    tn_storage to = *s;
    to.backend = dev ? dev->backend : &tn_cpu_backend;
    to.dev = dev;
    to.device = dev ? dev->kind : TN_CPU;
    to.data = to.handle = NULL;
    if (!rc) rc = to.backend->alloc(&to, 0);
    if (!rc && (rc = to.backend->upload(&to, 0, host, s->numel))) to.backend->release(&to);
    if (s->dev) free(host);
    if (rc) return rc;
    s->backend->release(s);
    s->data = to.data;
    s->handle = to.handle;
    s->backend = to.backend;
    s->dev = dev;
    s->device = to.device;
    return DLCA_OK;
}

int tn_params_to_device(tn_params *p, tn_dev *dev)
{
    if (p->values->storage->dev == dev) return DLCA_OK;
    /* the blocks' only viewers must be the buffer and its parameters, or a stray view would be
     * left with the old device's tag over the new device's memory */
    if (p->values->storage->refs != 1 + p->count || p->grads->storage->refs != 1 + p->count)
        return err_set(DLCA_ERR, "tn_params_to_device: other tensors view the parameter blocks; move the "
                                 "buffer before building graphs from it");
    if (dev && p->dtype != TN_F32)
        return err_set(DLCA_ERR, "tn_params_to_device: only float32 parameters go to a device");
    if (storage_move(p->values->storage, dev) != DLCA_OK || storage_move(p->grads->storage, dev) != DLCA_OK)
        return DLCA_ERR; /* a failed second move leaves values moved: both still work there */
    tn_device kind = p->values->storage->device;
    p->values->device = p->grads->device = kind;
    for (int i = 0; i < p->count; i++) {
        p->params[i]->device = kind;
        if (p->params[i]->grad) p->params[i]->grad->device = kind;
    }
    return DLCA_OK;
}

/* ---- clipping ---- */

double tn_clip_grad_norm(tn_dtype dtype, void *grad, size_t n, double max_norm)
{
    double sq = 0.0;
    for (size_t i = 0; i < n; i++) sq += ld(grad, dtype, i) * ld(grad, dtype, i);
    double norm = sqrt(sq), scale = max_norm / (norm + 1e-6);
    if (scale < 1.0)
        for (size_t i = 0; i < n; i++) st(grad, dtype, i, ld(grad, dtype, i) * scale);
    return norm;
}

void tn_clip_grad_value(tn_dtype dtype, void *grad, size_t n, double limit)
{
    for (size_t i = 0; i < n; i++) {
        double g = ld(grad, dtype, i);
        st(grad, dtype, i, g > limit ? limit : g < -limit ? -limit : g);
    }
}

int tn__cpu_clip_norm(tn_tensor *grads, double max_norm, double *norm)
{
    double v = tn_clip_grad_norm(grads->dtype, tn_data(grads), tn_numel(grads), max_norm);
    if (norm) *norm = v;
    return DLCA_OK;
}

int tn_params_clip_grad_norm(tn_params *p, double max_norm, double *norm)
{
    return tn__backend_of(p->grads)->clip_norm(p->grads, max_norm, norm);
}

int tn_params_clip_grad_value(tn_params *p, double limit)
{
    /* the clamp kernel in place: the same loop as tn_clip_grad_value, one kernel on any device */
    return tn__backend_of(p->grads)->unary(TN_U_CLAMP, -limit, limit, p->grads, p->grads);
}
