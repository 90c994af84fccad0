/* tn_optim.c: SGD / Adam / AdamW: the one update rule in C (glsl/tn_optim.comp is its GLSL
 * twin), the skip and clip options, and the optimizer calls that go through the parameters'
 * backend. Updates load each element as double, compute in double and store in the buffer's
 * dtype; the CPU state is kept in o->state_dtype. */
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

tn_optim tn_optim_sgd(double lr, double momentum, double weight_decay, int nesterov)
{
    return (tn_optim){.kind = TN_OPT_SGD, .lr = lr, .momentum = momentum, .weight_decay = weight_decay,
                      .nesterov = nesterov, .state_dtype = TN_F64};
}

tn_optim tn_optim_adam(double lr, double beta1, double beta2, double eps, double weight_decay)
{
    return (tn_optim){.kind = TN_OPT_ADAM, .lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps,
                      .weight_decay = weight_decay, .state_dtype = TN_F64};
}

tn_optim tn_optim_adamw(double lr, double beta1, double beta2, double eps, double weight_decay)
{
    tn_optim o = tn_optim_adam(lr, beta1, beta2, eps, weight_decay);
    o.kind = TN_OPT_ADAMW;
    return o;
}

void tn_optim_free(tn_optim *o)
{
    if (o->backend && o->backend->optim_free) o->backend->optim_free(o);
    for (int i = 0; i < 2; i++) {
        tn_free(o->state[i]);
        o->state[i] = NULL;
    }
    o->backend = NULL;
    o->backend_state = NULL;
    o->n = 0;
}

static int check_config(const tn_optim *o)
{
    if (o->kind == TN_OPT_SGD && o->nesterov && (o->momentum <= 0.0 || o->dampening != 0.0))
        return err_set(DLCA_ERR, "sgd: nesterov needs momentum > 0 and dampening 0");
    if (o->kind != TN_OPT_SGD && o->kind != TN_OPT_ADAM && o->kind != TN_OPT_ADAMW)
        return err_set(DLCA_ERR, "optim: unknown kind %d", (int)o->kind);
    return DLCA_OK;
}

/* ---- the CPU update ---- */

/* Whether the step must be skipped: a non-finite gradient, or a flag word with a mask bit. */
static int cpu_skip(const tn_optim *o, tn_dtype dt, const void *grad, size_t n)
{
    for (size_t i = 0; o->skip_nonfinite && i < n; i++)
        if (!isfinite(ld(grad, dt, i))) return 1;
    if (!o->skip_flag) return 0;
    uint32_t bits = 0, mask = o->skip_mask ? o->skip_mask : UINT32_MAX;
    const char *words = tn_data(o->skip_flag);
    for (size_t i = 0; words && i < tn_numel(o->skip_flag); i++) {
        uint32_t w;
        memcpy(&w, words + i * sizeof w, sizeof w); /* float32 storage holding uint32 words */
        bits |= w;
    }
    return (bits & mask) != 0;
}

/* The one update rule: param[n] from grad[n] with state s0 (momentum or m) and s1 (v). */
static void cpu_update(tn_optim *o, tn_dtype dt, void *param, const void *grad, size_t n, void *s0, void *s1)
{
    tn_dtype sd = o->state_dtype;
    double c = o->clip_value, t = (double)(o->status.applied + 1);
    double bc1 = 1.0 - pow(o->beta1, t), bc2 = 1.0 - pow(o->beta2, t);
    int first = o->status.applied == 0, decoupled = o->kind == TN_OPT_ADAMW;
    for (size_t i = 0; i < n; i++) {
        double p = ld(param, dt, i), g = ld(grad, dt, i);
        if (c > 0) g = g > c ? c : g < -c ? -c : g;
        if (o->kind == TN_OPT_SGD) {
            g += o->weight_decay * p;
            if (o->momentum != 0.0) {
                /* the first step seeds the buffer with the raw gradient, as PyTorch does */
                double buf = first ? g : o->momentum * ld(s0, sd, i) + (1.0 - o->dampening) * g;
                st(s0, sd, i, buf);
                buf = ld(s0, sd, i); /* what the state holds, so float32 state matches a device */
                g = o->nesterov ? g + o->momentum * buf : buf;
            }
            st(param, dt, i, p - o->lr * g);
            continue;
        }
        if (decoupled) p *= 1.0 - o->lr * o->weight_decay;
        else g += o->weight_decay * p;
        st(s0, sd, i, o->beta1 * ld(s0, sd, i) + (1.0 - o->beta1) * g);
        st(s1, sd, i, o->beta2 * ld(s1, sd, i) + (1.0 - o->beta2) * g * g);
        st(param, dt, i, p - o->lr * (ld(s0, sd, i) / bc1) / (sqrt(ld(s1, sd, i) / bc2) + o->eps));
    }
}

/* Zeroed CPU state for n elements, unless it exists for n already. */
static int cpu_state(tn_optim *o, size_t n)
{
    if (o->backend && o->backend != &tn_cpu_backend)
        return err_set(DLCA_ERR, "optim: the state is on a device; step that device's parameters");
    if (o->state[0] && o->n == n) return DLCA_OK;
    if (o->state[0]) return err_set(DLCA_ERR, "optim: state is for %zu elements, step got %zu", o->n, n);
    if (o->state_dtype != TN_F32 && o->state_dtype != TN_F64)
        return err_set(DLCA_ERR, "optim: unknown state dtype %d", (int)o->state_dtype);
    for (int i = 0; i < (o->kind == TN_OPT_SGD ? 1 : 2); i++)
        if (!(o->state[i] = tn__alloc(NULL, o->state_dtype, 1, &n, 1))) {
            tn_optim_free(o);
            return DLCA_ERR;
        }
    o->n = n;
    o->backend = &tn_cpu_backend;
    return DLCA_OK;
}

static int cpu_step(tn_optim *o, tn_dtype dtype, void *param, const void *grad, size_t n)
{
    if (check_config(o) != DLCA_OK || cpu_state(o, n) != DLCA_OK) return DLCA_ERR;
    if (o->skip_flag && o->skip_flag->storage->dev)
        return err_set(DLCA_ERR, "optim: the skip flag is on a device, the parameters on the CPU");
    o->step++;
    o->status.last_skipped = cpu_skip(o, dtype, grad, n);
    if (o->status.last_skipped) {
        o->status.skipped++;
        return DLCA_OK;
    }
    cpu_update(o, dtype, param, grad, n, tn_data(o->state[0]), o->state[1] ? tn_data(o->state[1]) : NULL);
    o->status.applied++;
    return DLCA_OK;
}

int tn__cpu_optim_step(tn_optim *o, tn_tensor *values, tn_tensor *grads)
{
    return cpu_step(o, values->dtype, tn_data(values), tn_data(grads), tn_numel(values));
}

int tn__cpu_optim_state_init(tn_optim *o, tn_tensor *values, long applied, long skipped)
{
    if (cpu_state(o, tn_numel(values)) != DLCA_OK) return DLCA_ERR;
    o->status = (tn_optim_status){.applied = applied, .skipped = skipped};
    return DLCA_OK;
}

int tn__cpu_optim_status(tn_optim *o, tn_optim_status *st)
{
    *st = o->status;
    return DLCA_OK;
}

/* ---- the public calls ---- */

int tn_optim_step_flat(tn_optim *o, tn_dtype dtype, void *param, const void *grad, size_t n)
{
    return cpu_step(o, dtype, param, grad, n);
}

int tn_optim_step(tn_optim *o, tn_params *p)
{
    if (check_config(o) != DLCA_OK) return DLCA_ERR;
    if (o->skip_flag && o->skip_flag->storage->dev != p->values->storage->dev)
        return err_set(DLCA_ERR, "optim: the skip flag and the parameters are on different devices");
    return tn__backend_of(p->values)->optim_step(o, p->values, p->grads);
}

int tn_optim_state_init(tn_optim *o, tn_params *p, long applied)
{
    if (check_config(o) != DLCA_OK) return DLCA_ERR;
    if (applied < 0) return err_set(DLCA_ERR, "optim: %ld applied steps", applied);
    return tn__backend_of(p->values)->optim_state_init(o, p->values, applied, 0);
}

int tn_optim_status_read(tn_optim *o, tn_optim_status *st)
{
    tn_optim_status local;
    if (!st) st = &local;
    if (!o->backend) { /* no step yet */
        *st = o->status;
        return DLCA_OK;
    }
    return o->backend->optim_status(o, st);
}
