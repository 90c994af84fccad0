/* tn_schedule.c: learning-rate schedules as pure functions of the step index, with an optional
 * linear warm-up in front, so a resumed run continues the uninterrupted sequence exactly. */
#include "tn_optim.h"

#include <math.h>

#define TN_PI 3.14159265358979323846

tn_lr_schedule tn_lr_constant(double base_lr) { return (tn_lr_schedule){.kind = TN_LR_CONSTANT, .base_lr = base_lr}; }

tn_lr_schedule tn_lr_with_warmup(tn_lr_schedule s, long steps)
{
    s.warmup = steps > 0 ? steps : 0;
    return s;
}

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

/* The schedule without its warm-up. */
static double schedule_at(const tn_lr_schedule *s, long step)
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

double tn_lr_at(const tn_lr_schedule *s, long step)
{
    if (step < 0) step = 0;
    if (s->warmup > 0 && step < s->warmup) return schedule_at(s, 0) * (double)(step + 1) / (double)(s->warmup + 1);
    return schedule_at(s, s->warmup > 0 ? step - s->warmup : step);
}
