/* tn_vk_optim.c: parameter buffers on the device. tn_params_to_device moves the value and
 * gradient blocks in place; an optimizer step is one dispatch over the flat blocks (AdamW
 * through glsl/adamw.comp, which is PyTorch's AdamW as tn's CPU AdamW is; SGD and Adam through
 * glsl/tn_optim.comp); clipping by norm is a deterministic sum of squares and a scale, both on
 * the GPU. Optimizer state lives on the device in float32 (the CPU keeps it in double). */
#include "tn_vk_internal.h"

#include "error.h"

#include <math.h>
#include <stdlib.h>

/* ---- moving a parameter buffer ---- */

/* Swaps a CPU storage for a device buffer with the same contents, in place, so every tensor
 * viewing the storage now views the device buffer. */
static int storage_to_device(tn_storage *s)
{
    tn_storage dev = *s;
    dev.device = TN_VULKAN;
    dev.data = NULL;
    int rc = tn_vk__alloc(&dev);
    if (!rc) rc = tn_vk__upload(&dev, 0, s->data, s->numel);
    if (rc) {
        if (dev.handle) tn_vk__release(&dev);
        return rc;
    }
    tn_cpu_backend.release(s);
    s->data = NULL;
    s->handle = dev.handle;
    s->device = TN_VULKAN;
    return DLCA_OK;
}

int tn_params_to_device(tn_params *p, vk_context *vk)
{
    if (p->values->device == TN_VULKAN) return DLCA_OK;
    if (p->dtype != TN_F32) return err_set(DLCA_ERR, "tn_params_to_device: only float32 parameters go to the device");
    if (tn_vk_init(vk) != DLCA_OK) return DLCA_ERR;
    /* the blocks' only viewers must be the buffer and its parameters, or a stray view would be
     * left with a CPU device tag over device memory */
    if (p->values->storage->refs != 1 + p->count || p->grads->storage->refs != 1 + p->count)
        return err_set(DLCA_ERR, "tn_params_to_device: other tensors view the parameter blocks; move the "
                                 "buffer before building graphs from it");
    if (storage_to_device(p->values->storage) != DLCA_OK || storage_to_device(p->grads->storage) != DLCA_OK)
        return DLCA_ERR; /* a failed second move leaves values on the device: both still work there */
    p->values->device = p->grads->device = TN_VULKAN;
    for (int i = 0; i < p->count; i++) {
        p->params[i]->device = TN_VULKAN;
        if (p->params[i]->grad) p->params[i]->grad->device = TN_VULKAN;
    }
    return DLCA_OK;
}

/* ---- optimizer step ---- */

static int ensure_device_state(tn_optim *o, size_t n)
{
    int count = o->kind == TN_OPT_SGD ? 1 : 2;
    if (o->state) return err_set(DLCA_ERR, "optim: the state is on the CPU; this buffer is on the device");
    if (o->device_state[0] && o->n == n) return DLCA_OK;
    if (o->device_state[0]) return err_set(DLCA_ERR, "optim: state is for %zu elements, step got %zu", o->n, n);
    for (int i = 0; i < count; i++) {
        o->device_state[i] = tn__alloc(TN_F32, TN_VULKAN, 1, &n);
        if (!o->device_state[i]) {
            tn_vk_optim_free(o);
            return DLCA_ERR;
        }
    }
    o->n = n;
    return DLCA_OK;
}

/* The step buffer of adamw.comp and tn_optim.comp: lr, 1 - beta1^t, 1 - beta2^t. It changes
 * every step, so it is data rather than a push constant (a recorded step stays replayable). */
static int step_values(const tn_optim *o, vk_view *view)
{
    float *v;
    double t = (double)(o->step + 1);
    int rc = tn_vk__arena(3 * sizeof *v, view, (void **)&v);
    if (rc) return rc;
    v[0] = (float)o->lr;
    v[1] = (float)(1.0 - pow(o->beta1, t));
    v[2] = (float)(1.0 - pow(o->beta2, t));
    return DLCA_OK;
}

int tn_vk_optim_step(tn_optim *o, tn_params *p)
{
    size_t n = p->numel;
    vk_view step;
    int rc = ensure_device_state(o, n);
    if (rc) return rc;
    if (n > 0) {
        tn_tensor *s1 = o->device_state[0], *s2 = o->device_state[1] ? o->device_state[1] : s1;
        if ((rc = step_values(o, &step))) return rc;
        vk_view views[5] = {tn_vk__view(p->values), tn_vk__view(p->grads), tn_vk__view(s1), tn_vk__view(s2), step};
        if (o->kind == TN_OPT_ADAMW) {
            /* clip 0: tn clips separately (tn_params_clip_grad_*), before the step */
            vk_push_adamw push = {(uint32_t)n, (float)o->beta1, (float)o->beta2, (float)o->eps,
                                  (float)o->weight_decay, 0.0f};
            rc = tn_vk__dispatch_1d(VK_PIPE_ADAMW, views, 5, &push, sizeof push, n);
        } else {
            vk_push_tn_optim push = {(uint32_t)n, o->kind == TN_OPT_SGD ? 0u : 1u, o->nesterov != 0, o->step == 0,
                                     (float)o->momentum, (float)o->dampening, (float)o->weight_decay,
                                     (float)o->beta1, (float)o->beta2, (float)o->eps};
            rc = tn_vk__dispatch_1d(VK_PIPE_TN_OPTIM, views, 5, &push, sizeof push, n);
        }
    }
    if (!rc) o->step++;
    return rc;
}

void tn_vk_optim_free(tn_optim *o)
{
    for (int i = 0; i < 2; i++) {
        tn_free(o->device_state[i]);
        o->device_state[i] = NULL;
    }
}

/* ---- clipping ---- */

int tn_vk_clip_grad_norm(tn_params *p, double max_norm, double *norm)
{
    size_t one = 1;
    float sumsq = 0.0f;
    if (p->numel == 0) {
        if (norm) *norm = 0.0;
        return DLCA_OK;
    }
    tn_tensor *sq = tn__alloc(TN_F32, TN_VULKAN, 1, &one);
    if (!sq) return DLCA_ERR;
    int rc = tn_vk__reduce(TN_VK_REDUCE_SUMSQ, sq, p->grads, NULL);
    if (!rc) {
        vk_push_tn_clip push = {(uint32_t)p->numel, (float)max_norm};
        vk_view views[2] = {tn_vk__view(p->grads), tn_vk__view(sq)};
        rc = tn_vk__dispatch_1d(VK_PIPE_TN_CLIP_NORM, views, 2, &push, sizeof push, p->numel);
    }
    if (!rc && norm) {
        rc = tn_vk__download(sq->storage, sq->offset, &sumsq, 1);
        *norm = sqrt((double)sumsq);
    }
    tn_free(sq);
    return rc;
}
