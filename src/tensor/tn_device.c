/* tn_device.c: explicit copies between devices (tn_to_device, tn_to_cpu) through the backend
 * tables the storages carry, so this module needs no backend but the CPU one. A copy is
 * differentiable: its backward copies the gradient back to the input's device. */
#include "tn_internal.h"

#include "error.h"

/* Copies between devices go through a dense CPU tensor: download from the source, upload to the
 * destination. */
static int copy_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    gin[0] = tn_to_device(g, n->in[0]->storage->dev);
    return gin[0] ? DLCA_OK : DLCA_ERR;
}

/* A dense CPU copy of t (a new reference; t itself when already dense on the CPU). */
static tn_tensor *dense_cpu(tn_tensor *t)
{
    tn_tensor *c = tn_is_contiguous(t) ? tn_retain(t) : tn__unary("tn_to_device", TN_U_COPY, 0, 0, t);
    if (!c || !c->storage->dev) return c;
    tn_tensor *y = tn__alloc(NULL, t->dtype, t->ndim, t->shape, 0);
    if (y && tn__backend_of(c)->download(c->storage, c->offset, tn_data(y), tn_numel(t)) != DLCA_OK) {
        tn_free(y);
        y = NULL;
    }
    tn_free(c);
    return y;
}

tn_tensor *tn_to_device(tn_tensor *t, tn_dev *dev)
{
    if (!t) return tn__null("tn_to_device"), NULL;
    if (t->storage->dev == dev) return tn_retain(t);
    tn_tensor *c = dense_cpu(t), *y = NULL;
    if (c && !dev) {
        y = c;
        c = NULL;
    } else if (c) {
        y = tn__alloc(dev, t->dtype, t->ndim, t->shape, 0);
        if (y && tn__backend_of(y)->upload(y->storage, 0, tn_data(c), tn_numel(t)) != DLCA_OK) {
            tn_free(y);
            y = NULL;
        }
    }
    tn_free(c);
    return tn__record(y, &(tn_node){.op = dev ? "tn_to_device" : "tn_to_cpu", .backward = copy_bwd, .n_in = 1,
                                    .in = {t}});
}

tn_tensor *tn_to_cpu(tn_tensor *t) { return tn_to_device(t, NULL); }
