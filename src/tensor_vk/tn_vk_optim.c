/* tn_vk_optim.c: optimizers and clipping for parameter buffers on a device. A step is one
 * dispatch of glsl/tn_optim.comp over the flat blocks (SGD, Adam or AdamW, clip-by-value fused
 * in), preceded by one of glsl/tn_optim_check.comp when the step may be skipped (a non-finite
 * gradient, or the caller's flag). The step counters live on the device (a skipped step must not
 * advance the bias correction, and the host cannot know while the step is only recorded); the
 * step leaves them in host-visible memory for tn_optim_status_read. Clipping by norm is a
 * deterministic sum of squares and a scale, both on the GPU. */
#include "tn_vk_internal.h"

#include "error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Control words: two records {applied, skipped, -, -} (step k reads record k % 2 and writes the
 * other), then the check's flag words. */
enum { CONTROL_FLAGS = 8, CONTROL_WORDS = CONTROL_FLAGS + TN_VK_CHECK_GROUPS };

typedef struct {
    tn_tensor *state;   /* the whole state block: momentum, or m then v */
    tn_tensor *control; /* CONTROL_WORDS uint32 words in float32 storage */
    tn_vk_block *status; /* host-visible {applied, skipped, last step skipped} */
    uint64_t calls;     /* update dispatches recorded: the parity of the next one */
} vk_optim_state;

static vk_optim_state *state_of(const tn_optim *o) { return o->backend_state; }

void tn_vk__optim_free(tn_optim *o)
{
    vk_optim_state *st = state_of(o);
    if (!st) return;
    if (st->status) tn_vk__block_release(tn_vk__dev(st->state->storage), st->status); /* made after state */
    tn_free(st->control);
    tn_free(st->state);
    free(st);
    o->backend_state = NULL;
}

/* Makes the state (zero moments and counters) for values' n elements on values' device, unless
 * it exists for them already. */
static int ensure_state(tn_optim *o, const tn_tensor *values)
{
    size_t n = tn_numel(values), per = o->kind == TN_OPT_SGD ? 1 : 2, total = per * n, words = CONTROL_WORDS;
    tn_vk_device *d = tn_vk__dev(values->storage);
    if (o->backend && o->backend != &tn_vk_backend)
        return err_set(DLCA_ERR, "optim: the state is on the CPU; this buffer is on a device");
    if (o->backend_state) {
        if (state_of(o)->state->storage->dev != values->storage->dev)
            return err_set(DLCA_ERR, "optim: the state is on another device");
        if (o->n != n) return err_set(DLCA_ERR, "optim: state is for %zu elements, step got %zu", o->n, n);
        return DLCA_OK;
    }
    vk_optim_state *st = calloc(1, sizeof *st);
    if (!st) return err_set(DLCA_ERR_NOMEM, "optim: out of memory");
    o->backend = &tn_vk_backend;
    o->backend_state = st;
    o->n = n;
    st->state = tn__alloc(&d->base, TN_F32, 1, &total, 1);
    st->control = st->state ? tn__alloc(&d->base, TN_F32, 1, &words, 1) : NULL;
    int rc = st->control ? tn_vk__block_make(d, 4 * sizeof(uint32_t), 1, &st->status) : DLCA_ERR;
    for (size_t i = 0; !rc && i < per; i++) {
        o->state[i] = tn__view(st->state, 1, &n, (const ptrdiff_t[]){1}, i * n);
        if (!o->state[i]) rc = DLCA_ERR;
    }
    if (rc) {
        tn_optim_free(o);
        return rc;
    }
    memset(st->status->buf.mapped, 0, 4 * sizeof(uint32_t));
    return DLCA_OK;
}

int tn_vk__optim_state_init(tn_optim *o, tn_tensor *values, long applied, long skipped)
{
    int rc = ensure_state(o, values);
    if (rc) return rc;
    vk_optim_state *st = state_of(o);
    if (applied > UINT32_MAX || skipped > UINT32_MAX) return err_set(DLCA_ERR, "optim: counters above 2^32");
    uint32_t words[8] = {(uint32_t)applied, (uint32_t)skipped, 0, 0, (uint32_t)applied, (uint32_t)skipped, 0, 0};
    rc = tn_vk__upload(st->control->storage, 0, words, 8); /* both records: either parity reads them */
    if (rc) return rc;
    o->status = (tn_optim_status){.applied = applied, .skipped = skipped};
    return DLCA_OK;
}

/* The check before a step that may be skipped: flag words in control. Returns their count. */
static int check_dispatch(tn_vk_device *d, tn_optim *o, tn_tensor *grads, uint32_t *n_flags)
{
    vk_optim_state *st = state_of(o);
    size_t n = tn_numel(grads), groups = o->skip_nonfinite ? (n + 255) / 256 : 1;
    if (groups > TN_VK_CHECK_GROUPS) groups = TN_VK_CHECK_GROUPS;
    if (groups == 0) groups = 1;
    tn_tensor *flag = o->skip_flag;
    if (flag && (tn_numel(flag) > UINT32_MAX || flag->offset > UINT32_MAX || !tn_is_contiguous(flag)))
        return err_set(DLCA_ERR, "optim: the skip flag must be a contiguous run of words");
    tn_vk_push_check push = {(uint32_t)n, o->skip_nonfinite != 0, flag ? (uint32_t)tn_numel(flag) : 0,
                             flag ? (uint32_t)flag->offset : 0, o->skip_mask ? o->skip_mask : UINT32_MAX};
    vk_view views[3] = {tn_vk__view(grads), flag ? tn_vk__view(flag) : tn_vk__view(grads), tn_vk__view(st->control)};
    *n_flags = (uint32_t)groups;
    return tn_vk__dispatch(d, TN_VK_PIPE_OPTIM_CHECK, views, 3, &push, sizeof push, (uint32_t)groups, 1, 1);
}

int tn_vk__optim_step(tn_optim *o, tn_tensor *values, tn_tensor *grads)
{
    tn_vk_device *d = tn_vk__dev(values->storage);
    size_t n = tn_numel(values);
    uint32_t n_flags = 0;
    if (values->offset || grads->offset) return err_set(DLCA_ERR, "optim: the blocks must start their storages");
    if (n > UINT32_MAX) return err_set(DLCA_ERR, "optim: too many parameters for the device");
    int rc = ensure_state(o, values);
    if (rc || n == 0) return rc;
    vk_optim_state *st = state_of(o);
    if ((o->skip_nonfinite || o->skip_flag) && (rc = check_dispatch(d, o, grads, &n_flags))) return rc;
    int sgd = o->kind == TN_OPT_SGD;
    uint32_t kind = sgd ? 0u : o->kind == TN_OPT_ADAM ? 1u : 2u;
    uint32_t bits = kind | (o->nesterov ? 1u : 0u) << 2 | (uint32_t)(st->calls & 1u) << 3 | n_flags << 8;
    tn_vk_push_optim push = {(uint32_t)n, bits, (float)o->lr, (float)(sgd ? o->momentum : o->beta1),
                             (float)(sgd ? o->dampening : o->beta2), (float)o->weight_decay, (float)o->eps,
                             (float)o->clip_value, sgd ? 0.0f : (float)log(o->beta1),
                             sgd ? 0.0f : (float)log(o->beta2)};
    vk_view views[5] = {tn_vk__view(values), tn_vk__view(grads), tn_vk__view(st->state), tn_vk__view(st->control),
                        vk_view_all(&st->status->buf)};
    rc = tn_vk__dispatch_1d(d, TN_VK_PIPE_OPTIM, views, 5, &push, sizeof push, n);
    if (rc) return rc;
    st->calls++;
    o->step++;
    return DLCA_OK;
}

int tn_vk__optim_status(tn_optim *o, tn_optim_status *out)
{
    vk_optim_state *st = state_of(o);
    int rc = tn_vk__host_read(tn_vk__dev(st->control->storage), "tn_optim_status_read");
    if (rc) return rc;
    const uint32_t *w = st->status->buf.mapped;
    o->status = (tn_optim_status){.applied = w[0], .skipped = w[1], .last_skipped = w[2] != 0};
    *out = o->status;
    return DLCA_OK;
}

/* ---- clipping ---- */

int tn_vk__clip_norm(tn_tensor *grads, double max_norm, double *norm)
{
    tn_vk_device *d = tn_vk__dev(grads->storage);
    size_t one = 1, n = tn_numel(grads);
    float sumsq = 0.0f;
    if (n == 0) {
        if (norm) *norm = 0.0;
        return DLCA_OK;
    }
    if (grads->offset || !tn_is_contiguous(grads)) return err_set(DLCA_ERR, "clip_grad_norm: not a whole block");
    tn_tensor *sq = tn__alloc(&d->base, TN_F32, 1, &one, 0);
    if (!sq) return DLCA_ERR;
    int rc = tn_vk__reduce(TN_VK_REDUCE_SUMSQ, sq, grads, NULL);
    if (!rc) {
        vk_push_tn_clip push = {(uint32_t)n, (float)max_norm};
        vk_view views[2] = {tn_vk__view(grads), tn_vk__view(sq)};
        rc = tn_vk__dispatch_1d(d, TN_VK_PIPE_CLIP_NORM, views, 2, &push, sizeof push, n);
    }
    if (!rc && norm) {
        rc = tn_vk__download(sq->storage, sq->offset, &sumsq, 1);
        *norm = sqrt((double)sumsq);
    }
    tn_free(sq);
    return rc;
}
