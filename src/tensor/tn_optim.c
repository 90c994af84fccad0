/* tn_optim.c: the flat parameter buffer, SGD / Adam / AdamW over flat arrays, gradient
 * clipping and learning-rate schedules. Updates load each element as double and store it back
 * in the buffer's dtype; optimizer state is kept in double. */
#include "tn_optim.h"

#include "error.h"
#include "tn_internal.h"
#include "tn_vk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TN_PI 3.14159265358979323846

static inline double ld(const void *p, tn_dtype dt, size_t i)
{
    return dt == TN_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static inline void st(void *p, tn_dtype dt, size_t i, double v)
{
    if (dt == TN_F32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* ---- flat parameter buffer ---- */

int tn_params_init(tn_params *p, tn_dtype dtype)
{
    size_t zero = 0;
    memset(p, 0, sizeof *p);
    p->dtype = dtype;
    p->values = tn__alloc(dtype, TN_CPU, 1, &zero);
    p->grads = tn__alloc(dtype, TN_CPU, 1, &zero);
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
    if (!be || be->grow(p->values->storage, numel) != DLCA_OK || be->grow(p->grads->storage, numel) != DLCA_OK)
        return DLCA_ERR;
    p->values->shape[0] = p->grads->shape[0] = numel;
    return DLCA_OK;
}

tn_tensor *tn_params_add(tn_params *p, int ndim, const size_t *shape)
{
    ptrdiff_t stride[TN_MAX_DIMS], s = 1;
    if (ndim < 0 || ndim > TN_MAX_DIMS) return err_set(DLCA_ERR, "tn_params_add: %d dims", ndim), NULL;
    size_t n = tn__numel(ndim, shape), offset = p->numel;
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

void tn_params_free(tn_params *p)
{
    for (int i = 0; i < p->count; i++) tn_free(p->params[i]);
    free(p->params);
    tn_free(p->values);
    tn_free(p->grads);
    memset(p, 0, sizeof *p);
}

/* ---- optimizers ---- */

tn_optim tn_optim_sgd(double lr, double momentum, double weight_decay, int nesterov)
{
    return (tn_optim){.kind = TN_OPT_SGD, .lr = lr, .momentum = momentum, .weight_decay = weight_decay,
                      .nesterov = nesterov};
}

tn_optim tn_optim_adam(double lr, double beta1, double beta2, double eps, double weight_decay)
{
    return (tn_optim){.kind = TN_OPT_ADAM, .lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps,
                      .weight_decay = weight_decay};
}

tn_optim tn_optim_adamw(double lr, double beta1, double beta2, double eps, double weight_decay)
{
    tn_optim o = tn_optim_adam(lr, beta1, beta2, eps, weight_decay);
    o.kind = TN_OPT_ADAMW;
    return o;
}

void tn_optim_free(tn_optim *o)
{
    tn_vk_optim_free(o);
    free(o->state);
    o->state = NULL;
    o->n = 0;
}

static void sgd_update(tn_optim *o, tn_dtype dt, void *param, const void *grad, size_t n)
{
    double *buf = o->state;
    for (size_t i = 0; i < n; i++) {
        double p = ld(param, dt, i), g = ld(grad, dt, i) + o->weight_decay * p;
        if (o->momentum != 0.0) {
            /* the first step seeds the buffer with the raw gradient, as PyTorch does */
            buf[i] = o->step == 0 ? g : o->momentum * buf[i] + (1.0 - o->dampening) * g;
            g = o->nesterov ? g + o->momentum * buf[i] : buf[i];
        }
        st(param, dt, i, p - o->lr * g);
    }
}

static void adam_update(tn_optim *o, tn_dtype dt, void *param, const void *grad, size_t n)
{
    double *m = o->state, *v = o->state + n;
    double t = (double)(o->step + 1);
    double bc1 = 1.0 - pow(o->beta1, t), bc2 = 1.0 - pow(o->beta2, t);
    int decoupled = o->kind == TN_OPT_ADAMW;
    for (size_t i = 0; i < n; i++) {
        double p = ld(param, dt, i), g = ld(grad, dt, i);
        if (decoupled) p *= 1.0 - o->lr * o->weight_decay;
        else g += o->weight_decay * p;
        m[i] = o->beta1 * m[i] + (1.0 - o->beta1) * g;
        v[i] = o->beta2 * v[i] + (1.0 - o->beta2) * g * g;
        st(param, dt, i, p - o->lr * (m[i] / bc1) / (sqrt(v[i] / bc2) + o->eps));
    }
}

/* Allocates zeroed state for n elements on the first step; later steps must match n. */
static int ensure_state(tn_optim *o, size_t n)
{
    size_t per = o->kind == TN_OPT_SGD ? 1 : 2;
    if (o->state && o->n == n) return DLCA_OK;
    if (o->state) return err_set(DLCA_ERR, "optim: state is for %zu elements, step got %zu", o->n, n);
    o->state = calloc(n * per + 1, sizeof *o->state);
    if (!o->state) return err_set(DLCA_ERR_NOMEM, "optim: out of memory for %zu elements of state", n);
    o->n = n;
    return DLCA_OK;
}

static int check_config(const tn_optim *o)
{
    if (o->kind == TN_OPT_SGD && o->nesterov && (o->momentum <= 0.0 || o->dampening != 0.0))
        return err_set(DLCA_ERR, "sgd: nesterov needs momentum > 0 and dampening 0");
    return DLCA_OK;
}

int tn_optim_step_flat(tn_optim *o, tn_dtype dtype, void *param, const void *grad, size_t n)
{
    if (check_config(o) != DLCA_OK) return DLCA_ERR;
    if (o->device_state[0]) return err_set(DLCA_ERR, "optim: the state is on the device; step a device tn_params");
    if (ensure_state(o, n) != DLCA_OK) return DLCA_ERR;
    if (o->kind == TN_OPT_SGD) sgd_update(o, dtype, param, grad, n);
    else adam_update(o, dtype, param, grad, n);
    o->step++;
    return DLCA_OK;
}

int tn_optim_step(tn_optim *o, tn_params *p)
{
    if (p->values->device != TN_CPU) return check_config(o) ? DLCA_ERR : tn_vk_optim_step(o, p);
    void *data = tn_params_data(p), *grad = tn_params_grad(p);
    if (!data || !grad) return DLCA_ERR;
    return tn_optim_step_flat(o, p->dtype, data, grad, p->numel);
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

int tn_params_clip_grad_norm(tn_params *p, double max_norm, double *norm)
{
    if (p->grads->device != TN_CPU) return tn_vk_clip_grad_norm(p, max_norm, norm);
    void *grad = tn_params_grad(p);
    if (!grad) return DLCA_ERR;
    double n = tn_clip_grad_norm(p->dtype, grad, p->numel, max_norm);
    if (norm) *norm = n;
    return DLCA_OK;
}

int tn_params_clip_grad_value(tn_params *p, double limit)
{
    /* the clamp kernel in place: the same loop as tn_clip_grad_value, on any device */
    const tn_backend *be = tn__backend_of(p->grads);
    return be ? be->unary(TN_U_CLAMP, -limit, limit, p->grads, p->grads) : DLCA_ERR;
}

/* ---- learning-rate schedules ---- */

tn_lr_schedule tn_lr_step(double base_lr, long step_size, double gamma)
{
    return (tn_lr_schedule){.kind = TN_LR_STEP, .base_lr = base_lr, .step_size = step_size, .gamma = gamma};
}

tn_lr_schedule tn_lr_exponential(double base_lr, double gamma)
{
    return (tn_lr_schedule){.kind = TN_LR_EXPONENTIAL, .base_lr = base_lr, .gamma = gamma};
}

tn_lr_schedule tn_lr_cosine(double base_lr, long t_max, double eta_min)
{
    return (tn_lr_schedule){.kind = TN_LR_COSINE, .base_lr = base_lr, .total = t_max, .eta_min = eta_min};
}

tn_lr_schedule tn_lr_one_cycle(double max_lr, long total, double pct_start, double div_factor,
                               double final_div_factor)
{
    return (tn_lr_schedule){.kind = TN_LR_ONE_CYCLE, .base_lr = max_lr, .total = total, .pct_start = pct_start,
                            .div_factor = div_factor, .final_div_factor = final_div_factor};
}

/* Cosine interpolation from `from` (pct 0) to `to` (pct 1). */
static double cos_anneal(double from, double to, double pct)
{
    return to + (from - to) / 2.0 * (1.0 + cos(TN_PI * pct));
}

static double one_cycle_at(const tn_lr_schedule *s, long step)
{
    double start = s->base_lr / s->div_factor, end = start / s->final_div_factor;
    double peak_step = s->pct_start * (double)s->total - 1.0, last = (double)s->total - 1.0;
    double t = (double)step;
    if (t <= peak_step) return cos_anneal(start, s->base_lr, peak_step > 0 ? t / peak_step : 1.0);
    if (t >= last) return end;
    return cos_anneal(s->base_lr, end, (t - peak_step) / (last - peak_step));
}

double tn_lr_at(const tn_lr_schedule *s, long step)
{
    switch (s->kind) {
    case TN_LR_CONSTANT: return s->base_lr;
    case TN_LR_STEP: return s->base_lr * pow(s->gamma, (double)(s->step_size > 0 ? step / s->step_size : 0));
    case TN_LR_EXPONENTIAL: return s->base_lr * pow(s->gamma, (double)step);
    case TN_LR_COSINE: {
        double t = step < s->total ? (double)step : (double)s->total;
        return s->total > 0 ? cos_anneal(s->base_lr, s->eta_min, t / (double)s->total) : s->eta_min;
    }
    case TN_LR_ONE_CYCLE: return one_cycle_at(s, step);
    }
    return s->base_lr;
}
