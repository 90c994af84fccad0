/* tn_optim.h: the flat parameter buffer, optimizers (SGD, Adam, AdamW), gradient clipping
 * and learning-rate schedules. Parameters and their gradients each live in one block, so an
 * optimizer step, a clip or a zero_grad is a single loop over a flat array (one dispatch on a
 * device: tn_params_to_device in tn_vk.h moves a buffer there). Optimizer state is one block
 * too. Update rules follow PyTorch's. */
#ifndef DLCA_TN_OPTIM_H
#define DLCA_TN_OPTIM_H

#include "tn_tensor.h"

/* ---- flat parameter buffer ---- */

typedef struct {
    tn_dtype dtype;
    size_t numel;       /* elements over all parameters */
    tn_tensor *values;  /* 1-d view of the whole value block */
    tn_tensor *grads;   /* 1-d view of the whole gradient block */
    int count, cap;
    tn_tensor **params; /* per-parameter views into values; ->grad views into grads */
} tn_params;

/* An empty buffer of `dtype` on the CPU. */
int tn_params_init(tn_params *p, tn_dtype dtype);

/* Appends a zero-filled parameter (requires_grad, grad preset to its slice of the gradient
 * block) and returns it; the buffer owns it. Adding may move the blocks: take tn_params_data /
 * tn_params_grad pointers only after the last add. */
tn_tensor *tn_params_add(tn_params *p, int ndim, const size_t *shape);

/* Host pointer to the value block (p->numel elements of p->dtype). */
void *tn_params_data(tn_params *p);

/* Host pointer to the gradient block. */
void *tn_params_grad(tn_params *p);

/* Sets every gradient to zero. */
void tn_params_zero_grad(tn_params *p);

/* Frees the blocks and drops the buffer's references to its parameters. */
void tn_params_free(tn_params *p);

/* ---- optimizers ---- */

typedef enum { TN_OPT_SGD, TN_OPT_ADAM, TN_OPT_ADAMW } tn_optim_kind;

typedef struct {
    tn_optim_kind kind;
    double lr;           /* may be changed between steps (schedules) */
    double momentum;     /* SGD */
    double dampening;    /* SGD: momentum buffer takes (1 - dampening) of the gradient */
    int nesterov;        /* SGD: needs momentum > 0 and dampening 0 */
    double weight_decay; /* SGD/Adam: added to the gradient; AdamW: p *= 1 - lr * wd */
    double beta1, beta2, eps;
    long step;           /* updates done so far */
    size_t n;            /* elements the state was made for */
    double *state;       /* SGD: momentum [n]; Adam(W): m [n] then v [n] */
    tn_tensor *device_state[2]; /* parameters on a device: momentum or m, v (float32 there) */
} tn_optim;

/* SGD with optional (Nesterov) momentum and L2 weight decay. */
tn_optim tn_optim_sgd(double lr, double momentum, double weight_decay, int nesterov);

/* Adam with bias correction; weight decay (if any) is added to the gradient. */
tn_optim tn_optim_adam(double lr, double beta1, double beta2, double eps, double weight_decay);

/* AdamW: Adam with weight decay applied to the parameters, decoupled from the gradient. */
tn_optim tn_optim_adamw(double lr, double beta1, double beta2, double eps, double weight_decay);

/* One update of param[n] from grad[n] (both of `dtype`). n must stay the same across steps. */
int tn_optim_step_flat(tn_optim *o, tn_dtype dtype, void *param, const void *grad, size_t n);

/* One update of a whole parameter buffer; on a device it is one dispatch over the flat block. */
int tn_optim_step(tn_optim *o, tn_params *p);

/* Frees the optimizer state. */
void tn_optim_free(tn_optim *o);

/* ---- clipping over a flat gradient ---- */

/* Scales grad[n] by max_norm / (norm + 1e-6) when its global L2 norm exceeds max_norm;
 * returns the norm before clipping. */
double tn_clip_grad_norm(tn_dtype dtype, void *grad, size_t n, double max_norm);

/* Clamps every grad[i] to [-limit, limit]. */
void tn_clip_grad_value(tn_dtype dtype, void *grad, size_t n, double limit);

/* tn_clip_grad_norm over the gradient block of p, on p's device; *norm gets the norm before
 * clipping unless NULL (on a device, NULL spares the wait for the GPU). */
int tn_params_clip_grad_norm(tn_params *p, double max_norm, double *norm);

/* tn_clip_grad_value over the gradient block of p, on p's device. */
int tn_params_clip_grad_value(tn_params *p, double limit);

/* ---- learning-rate schedules: lr as a function of the step index (0-based) ---- */

typedef enum { TN_LR_CONSTANT, TN_LR_STEP, TN_LR_EXPONENTIAL, TN_LR_COSINE, TN_LR_ONE_CYCLE } tn_lr_kind;

typedef struct {
    tn_lr_kind kind;
    double base_lr;      /* lr at step 0; the peak for one-cycle */
    double gamma;        /* step, exponential: factor per decay */
    long step_size;      /* step: decay every step_size steps */
    long total;          /* cosine: T_max; one-cycle: total steps */
    double eta_min;      /* cosine: floor */
    double pct_start;    /* one-cycle: fraction of steps spent rising */
    double div_factor;   /* one-cycle: start at base_lr / div_factor */
    double final_div_factor; /* one-cycle: end at start / final_div_factor */
} tn_lr_schedule;

/* base_lr * gamma^(step / step_size). */
tn_lr_schedule tn_lr_step(double base_lr, long step_size, double gamma);

/* base_lr * gamma^step. */
tn_lr_schedule tn_lr_exponential(double base_lr, double gamma);

/* eta_min + (base_lr - eta_min) (1 + cos(pi step / t_max)) / 2, holding eta_min after t_max. */
tn_lr_schedule tn_lr_cosine(double base_lr, long t_max, double eta_min);

/* PyTorch OneCycleLR (cosine, two phases): rises from max_lr / div_factor to max_lr over
 * pct_start of `total` steps, then falls to max_lr / div_factor / final_div_factor. */
tn_lr_schedule tn_lr_one_cycle(double max_lr, long total, double pct_start, double div_factor,
                               double final_div_factor);

/* The learning rate at `step`. */
double tn_lr_at(const tn_lr_schedule *s, long step);

#endif
