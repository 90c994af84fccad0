/* tn_optim.h: the flat parameter buffer, optimizers (SGD, Adam, AdamW), gradient clipping
 * and learning-rate schedules. Parameters and their gradients each live in one block, so an
 * optimizer step, a clip or a zero_grad is a single loop over a flat array (one dispatch on a
 * device: tn_params_to_device moves a buffer there). Optimizer state is one block too. Update
 * rules follow PyTorch's; there is one update rule in C (tn_optim.c) and one in GLSL
 * (glsl/tn_optim.comp), each serving SGD, Adam and AdamW. */
#ifndef DLCA_TN_OPTIM_H
#define DLCA_TN_OPTIM_H

#include "tn_tensor.h"

#include <stdint.h>

/* ---- flat parameter buffer ---- */

typedef struct {
    tn_dtype dtype;
    size_t numel;       /* elements over all parameters (and the gaps `align` leaves) */
    size_t align;       /* each parameter starts at a multiple of this many elements (set before the
                           first add; 0 or 1: packed). 64 floats = 256 bytes lets an engine bind any
                           parameter by itself (minStorageBufferOffsetAlignment, tn_vk_view) */
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

/* Host pointer to the value block (p->numel elements of p->dtype); CPU buffers only. */
void *tn_params_data(tn_params *p);

/* Host pointer to the gradient block; CPU buffers only. */
void *tn_params_grad(tn_params *p);

/* Sets every gradient to zero. */
void tn_params_zero_grad(tn_params *p);

/* Instead of zeroing: each parameter's next gradient replaces what its buffer holds (one copy,
 * no fill and add). For a loop where every parameter gets a gradient every step; one that gets
 * none keeps its old gradient, so zero_grad is the safe choice otherwise. */
void tn_params_grad_replace(tn_params *p);

/* Frees the blocks and drops the buffer's references to its parameters. */
void tn_params_free(tn_params *p);

/* Moves a float32 buffer to `dev` (NULL: back to the CPU) in place: every parameter tensor and
 * its gradient view follow. Call it before building graphs from the parameters (no other views
 * of the blocks may exist). */
int tn_params_to_device(tn_params *p, tn_dev *dev);

/* ---- optimizers ---- */

typedef enum { TN_OPT_SGD, TN_OPT_ADAM, TN_OPT_ADAMW } tn_optim_kind;

/* What the steps so far did. On a device it is known only once the work ran: see
 * tn_optim_status_read. */
typedef struct tn_optim_status {
    long applied;     /* updates applied (Adam's bias correction counts these) */
    long skipped;     /* steps skipped (a non-finite gradient or the skip flag) */
    int last_skipped; /* the latest step was skipped */
} tn_optim_status;

typedef struct tn_optim {
    tn_optim_kind kind;
    double lr;           /* may be changed between steps (schedules) */
    double momentum;     /* SGD */
    double dampening;    /* SGD: momentum buffer takes (1 - dampening) of the gradient */
    int nesterov;        /* SGD: needs momentum > 0 and dampening 0 */
    double weight_decay; /* SGD/Adam: added to the gradient; AdamW: p *= 1 - lr * wd */
    double beta1, beta2, eps;
    /* options: set them before the first step */
    double clip_value;   /* > 0: each gradient element is clamped to [-clip_value, clip_value]
                            inside the update (the same dispatch on a device) */
    int skip_nonfinite;  /* 1: when any gradient is NaN or infinite (before clipping), the step
                            changes nothing and counts as skipped (PyTorch GradScaler's found_inf) */
    tn_tensor *skip_flag; /* optional, not owned, on the parameters' device: words of float32
                            storage read as uint32 (tn_vk_wrap of an engine's flag buffer); a step
                            with (OR of the words) & skip_mask != 0 is skipped likewise */
    uint32_t skip_mask;  /* 0: every bit counts */
    tn_dtype state_dtype; /* CPU: TN_F64 (the constructors' default) or TN_F32 (float32 moments, as
                            the CA model file stores them); a device keeps float32 always */
    /* state */
    long step;           /* step calls so far (what schedules count); the caller may set it to resume */
    tn_optim_status status; /* CPU: current; device: as of the last tn_optim_status_read */
    size_t n;            /* elements the state was made for */
    tn_tensor *state[2]; /* SGD: momentum; Adam(W): m, v; on the parameters' device (tn_read / tn_write
                            them to save or restore; tn_optim_state_init makes them) */
    const struct tn_backend *backend; /* the backend holding the state */
    void *backend_state; /* that backend's own (a device's step counters) */
} tn_optim;

/* SGD with optional (Nesterov) momentum and L2 weight decay. */
tn_optim tn_optim_sgd(double lr, double momentum, double weight_decay, int nesterov);

/* Adam with bias correction; weight decay (if any) is added to the gradient. */
tn_optim tn_optim_adam(double lr, double beta1, double beta2, double eps, double weight_decay);

/* AdamW: Adam with weight decay applied to the parameters, decoupled from the gradient. */
tn_optim tn_optim_adamw(double lr, double beta1, double beta2, double eps, double weight_decay);

/* One update of param[n] from grad[n] (host arrays of `dtype`); the state stays on the CPU.
 * n must stay the same across steps. */
int tn_optim_step_flat(tn_optim *o, tn_dtype dtype, void *param, const void *grad, size_t n);

/* One update of a whole parameter buffer on its device: one dispatch over the flat block there
 * (two with skip_nonfinite or a skip_flag: a check, then the update). */
int tn_optim_step(tn_optim *o, tn_params *p);

/* Makes the state for p now, on p's device: zero moments and the counters of `applied` updates
 * (bias correction resumes from there). Then write saved moments into o->state[0] / [1] and set
 * o->step to resume a run. Fails when state for another size or device exists. */
int tn_optim_state_init(tn_optim *o, tn_params *p, long applied);

/* Fills *st (and o->status) with what the steps did. On the CPU it is immediate; on a device it
 * is read from host-visible memory the last step wrote, so it waits for tn's own recorded work
 * and fails while work recorded into a caller's command buffer is not retired. */
int tn_optim_status_read(tn_optim *o, tn_optim_status *st);

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

/* tn_clip_grad_value over the gradient block of p, on p's device (one kernel). The optimizers'
 * clip_value does the same inside the update, with no kernel of its own. */
int tn_params_clip_grad_value(tn_params *p, double limit);

/* ---- learning-rate schedules: lr as a function of the step index (0-based) ----
 * tn_lr_at is a pure function of the step, so a run resumed at step k (o->step = k) continues
 * the uninterrupted sequence exactly. */

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
    long warmup;         /* > 0: steps 0 .. warmup-1 rise linearly, lr = f(0) (step + 1) / (warmup + 1);
                            step s >= warmup then gets f(s - warmup), f being the schedule above
                            (so total and step_size count the steps after the warm-up) */
} tn_lr_schedule;

/* base_lr at every step. */
tn_lr_schedule tn_lr_constant(double base_lr);

/* s with a linear warm-up of `steps` steps in front (see tn_lr_schedule.warmup). */
tn_lr_schedule tn_lr_with_warmup(tn_lr_schedule s, long steps);

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
