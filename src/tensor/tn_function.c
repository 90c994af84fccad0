/* tn_function.c: custom differentiable functions (tn_function.h). The forward runs with grad
 * mode off; the output gets one node whose backward preallocates the input gradients and hands
 * them to the function's backward. */
#include "tn_internal.h"

#include "error.h"

static int apply_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    const tn_function *fn = n->fn;
    int zero = !(fn->flags & TN_FUNCTION_OVERWRITES_GRADS), status = DLCA_OK;
    for (int i = 0; status == DLCA_OK && i < n->n_in; i++) {
        tn_tensor *in = n->in[i];
        if (!in->requires_grad) continue;
        gin[i] = tn__alloc(in->storage->dev, in->dtype, in->ndim, in->shape, zero);
        if (!gin[i]) status = DLCA_ERR;
    }
    /* engines bind the output gradient as a dense buffer */
    tn_tensor *gc = status == DLCA_OK ? tn_contiguous(g) : NULL;
    if (gc) {
        tn_tensor *in[TN_NODE_MAX_IN];
        for (int i = 0; i < n->n_in; i++) in[i] = n->in[i];
        status = fn->backward(n->ctx, in, n->n_in, out, gc, gin);
        if (status != DLCA_OK && err_message()[0] == '\0')
            err_set(DLCA_ERR, "%s: the custom backward failed", fn->name ? fn->name : "tn_apply");
    } else {
        status = DLCA_ERR;
    }
    tn_free(gc);
    if (status != DLCA_OK)
        for (int i = 0; i < n->n_in; i++) {
            tn_free(gin[i]);
            gin[i] = NULL;
        }
    return status;
}

tn_tensor *tn_apply(const tn_function *fn, void *ctx, int n_in, tn_tensor **in)
{
    const char *name = fn && fn->name ? fn->name : "tn_apply";
    if (!fn || !fn->forward || !fn->backward)
        return err_set(DLCA_ERR, "%s: a custom function needs a forward and a backward", name), NULL;
    if (n_in < 1 || n_in > TN_FUNCTION_MAX_IN)
        return err_set(DLCA_ERR, "%s: %d inputs (1 to %d)", name, n_in, TN_FUNCTION_MAX_IN), NULL;
    for (int i = 0; i < n_in; i++)
        if (!in[i]) return tn__null(name), NULL;
    tn_no_grad_begin();
    tn_tensor *y = fn->forward(ctx, in, n_in);
    tn_no_grad_end();
    if (!y && err_message()[0] == '\0') err_set(DLCA_ERR, "%s: the custom forward returned no tensor", name);
    /* The node goes on a tensor of our own: the forward may have returned an input, or a tensor
     * it keeps another reference to. */
    if (y && (y->refs != 1 || y->node || y->requires_grad)) {
        tn_tensor *v = tn__view(y, y->ndim, y->shape, y->stride, y->offset);
        tn_free(y);
        y = v;
    }
    tn_node proto = {.op = name, .backward = apply_bwd, .n_in = n_in, .fn = fn, .ctx = ctx};
    for (int i = 0; i < n_in; i++) proto.in[i] = in[i];
    y = y ? tn__record(y, &proto) : NULL;
    if ((!y || !y->node) && fn->release) fn->release(ctx); /* no node will call it */
    return y;
}
