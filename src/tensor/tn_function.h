/* tn_function.h: custom differentiable functions, the way custom ops (torch.autograd.Function,
 * jax.custom_vjp) work in other autograds: the caller supplies a forward and a backward, tn
 * records one node for the pair and calls the backward with the output gradient.
 *
 * Rules:
 *  - forward(ctx, in, n_in) runs with grad mode off (nothing it does is recorded) and returns a
 *    new reference to the output: a tensor computed with tn ops, or one viewing memory the
 *    function owns (tn_vk_wrap of an engine's buffer). It may keep what its backward needs in
 *    ctx. Device-agnostic: tn does not look at where the inputs live.
 *  - backward(ctx, in, n_in, out, gout, gin) fills gin[i] for every input that needs a gradient
 *    and leaves gin[i] == NULL alone. gin[i] is preallocated by tn: in[i]'s shape, dtype and
 *    device, contiguous, zero-filled (uninitialised with TN_FUNCTION_OVERWRITES_GRADS, when the
 *    backward writes every element). gout is contiguous with out's shape. Grad mode is off.
 *    On a device, recording into tn's current command buffer (tn_vk_command) is how an engine
 *    fills gin; tn_assign copies a tensor computed with tn ops into it.
 *  - release(ctx), when set, is called once when the recorded node is freed (the graph is gone);
 *    with release NULL the caller owns ctx and must keep it alive while the graph lives. A forward
 *    run without recording (no input requires grad, or grad mode off) calls release at once. */
#ifndef DLCA_TN_FUNCTION_H
#define DLCA_TN_FUNCTION_H

#include "tn_tensor.h"

/* Most inputs of one custom function. */
#define TN_FUNCTION_MAX_IN 8

/* tn_function.flags: gin[] need no zero-fill, the backward writes all of it. */
#define TN_FUNCTION_OVERWRITES_GRADS 1

typedef struct tn_function {
    const char *name; /* for messages */
    tn_tensor *(*forward)(void *ctx, tn_tensor **in, int n_in);
    int (*backward)(void *ctx, tn_tensor **in, int n_in, tn_tensor *out, tn_tensor *gout, tn_tensor **gin);
    void (*release)(void *ctx); /* optional */
    int flags;
} tn_function;

/* fn applied to in[0..n_in): the forward's output, recorded so that backward reaches the inputs
 * through fn->backward. NULL with a message when an input is NULL, n_in is out of range, or the
 * forward or the recording fails. */
tn_tensor *tn_apply(const tn_function *fn, void *ctx, int n_in, tn_tensor **in);

#endif
