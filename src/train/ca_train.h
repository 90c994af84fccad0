/* ca_train.h: one training loop for both engines, written on the tensor library. Step s
 * (0-based) trains on round s: its start states and fire mask are drawn from (seed, s), so a run
 * resumed at step s sees exactly what an uninterrupted run would. Around the CA engine,
 * everything is tn, the same code on the CPU and the GPU: the logits z [gates][16] are a tn
 * parameter; c = softmax(z) @ M (M the 16 x 4 op table, gates.h); the rollout c -> final grid is
 * one tn function (ca_rollout.h); the loss is the sum of squared errors of the loss channels; AdamW
 * (beta2 0.99, weight decay 1e-2) clips each gradient element to [-100, 100] and skips a step
 * whose gradient is not finite; the learning rate follows the config's schedule. On the GPU a
 * step is one command buffer, one submission (docs/design.md section 3). */
#ifndef DLCA_CA_TRAIN_H
#define DLCA_CA_TRAIN_H

#include "ca_cpu.h"
#include "ca_fast.h"
#include "ca_gpu.h"
#include "ca_hard_host.h"
#include "ca_model.h"
#include "ca_options.h"
#include "ca_pool.h"
#include "ca_rollout.h"
#include "tn_optim.h"

typedef enum { CA_BACKEND_CPU, CA_BACKEND_GPU } ca_backend;

/* The trainer's state as a step that measures the hard loss found it, before that step's update:
 * the circuit whose hard loss it measured, and what a run resumed from there needs. Tensors on
 * the engine's device, in its gate order (ca_trainer_read_snapshot converts). */
typedef struct {
    tn_tensor *z, *moment1, *moment2; /* [gates][16] */
    uint64_t step;                    /* the step that measured it (1-based): its state is that of
                                         step - 1 steps done; 0 while empty */
} ca_snapshot;

typedef struct {
    ca_model *model;           /* its logits are brought up to date by ca_trainer_sync */
    ca_backend backend;
    ca_options options;        /* as ca_trainer_init was given them */
    uint64_t step;             /* optimizer steps done */
    float *moment1, *moment2;  /* AdamW state [gates][16] in the model's gate order, as of the last
                                  ca_trainer_sync (or resume) */
    const double *image;       /* target picture [loss_channels][H][W], or NULL */
    double *start, *target;    /* this round's start grid [C][cells] and target [loss_channels][cells]
                                  (ca_trainer_round; the GPU draws its own unless there is a pool) */
    ca_pool pool;              /* config.pool > 0: where rounds start (ca_pool.h); else grids NULL */
    vk_buffer pool_grid;       /* GPU with a pool: the round's final grid [C][pitch], copied to the host
                                  in the step's command buffer */
    /* A window loss (config.window_loss every): the target once a grid of the window,
     * [(window + 1) * loss_channels][cells] (CPU, filled a round) or [...][pitch] (GPU, copied
     * in the step's command buffer); the GPU rollout's rows of the window's grids beside it. */
    double *window_target;
    vk_buffer window_target_rows, window_rows;
    size_t gate_values;        /* gates * 16 */
    /* the tensor library around the engine */
    tn_dev *dev;               /* NULL: the CPU; the GPU's tn_vk */
    tn_params params;          /* one parameter, z [gates][16] (on the GPU in the engine's gate order) */
    tn_tensor *op_matrix;      /* M [16][4], on dev */
    tn_tensor *loss_seed;      /* 1, on dev: the loss's gradient, made once rather than filled a step */
    tn_tensor *target_rows;    /* GPU: the engine's target [loss_channels][pitch] as a tensor */
    tn_tensor *roll_words;     /* GPU: the persistent kernels' roll calls, AdamW's skip flag */
    tn_optim optim;
    ca_rollout rollout;
    /* A step that measures the hard loss copies the state it starts from into `measured`
     * (ca_snapshot); ca_trainer_keep_measured swaps it into `kept`, where a run holds its best. */
    ca_snapshot measured, kept;
    /* the engines */
    ca_cpu cpu;                /* CPU backend, options.cpu_reference */
    ca_fast fast;              /* CPU backend, otherwise */
    double *scratch;           /* CPU: the rollout's room, and logits and moments in double */
    vk_context *vk;            /* GPU backend */
    ca_gpu gpu;
    /* Set by a caller whose next step records beside other trainers' steps on other queues
     * (ca_population.c): a persistent kernel that gives up there (their work held the SMs it
     * waited for) runs the step again alone with its persistent kernels kept, and sets
     * `crowded`, for the caller to stop spreading; alone, a give-up switches them off. */
    int beside_others, crowded;
    /* Where every round is the same rollout (ca_exact_one_rollout, no pool or window: image,
     * lizard), the same circuit has the same hard loss, so a step asked for it whose circuit has
     * the ops of the last measured one reuses that loss instead of running the hard rollout (it
     * still snapshots the state into `measured`); late in a run most steps change no gate's op.
     * `same_round`: the run is such (and options.hard_rollout_always is off); `measured_ops`: the
     * last measured circuit's ops one-hot [gates][16] on the engine's device (NULL: none yet, or
     * z was written since); `ops_changed`: z's ops differ from them after the last step;
     * `measured_hard`: that circuit's hard loss; `hard_reused`: steps that reused it. */
    int same_round, ops_changed;
    tn_tensor *measured_ops;
    double measured_hard;
    uint64_t hard_reused;
    /* On the GPU without a pool or window (nor check_stages), where the rollout is large enough
     * (options.hard_on_host), a step asked for the hard loss measures it on the host
     * (ca_hard_host.h) while the GPU runs the step: every step copies z's ops after its update
     * into `ops_host` ([gates] floats 0..15, the engine's gate order), which the next step reads
     * as its circuit's. `hard_on_host`: the run is such; `ops_host_valid`: ops_host holds z's
     * ops (a step wrote them, and z was not written from outside since); `host_ops`: the circuit
     * measured, in the model's gate order; `hard_on_host_steps`: steps measured so. Elsewhere the
     * hard rollout runs on the GPU. */
    int hard_on_host, ops_host_valid;
    vk_buffer ops_host;
    tn_tensor *ops_host_rows, *op_index; /* ops_host as a [gates][1] tensor; [16][1]: 0..15 */
    uint8_t *host_ops;
    ca_hard_host hard_host;
    uint64_t hard_on_host_steps;
} ca_trainer;

/* Prepares training of `model` (logits are updated in place) on the CPU, or on `vk`'s device
 * with options->gpu's plan. `image` is needed for image targets. The CPU backend runs the fast
 * float engine on options->cpu_threads, or the double reference with options->cpu_reference.
 * `options` NULL: all automatic. */
int ca_trainer_init(ca_trainer *trainer, ca_model *model, const double *image, ca_backend backend, vk_context *vk,
                    const ca_options *options);

void ca_trainer_free(ca_trainer *trainer);

/* Continues from a saved state: `step` steps done, AdamW moments [gates][16] in the model's gate
 * order (copied). */
int ca_trainer_resume(ca_trainer *trainer, uint64_t step, const float *moment1, const float *moment2);

/* The total steps of a run resumed from `path` after `done` steps: `wanted` (--steps; 0 when not
 * given), else the file's *train_steps. Sets *train_steps, or fails with a message saying what
 * to give when the run would train no further (it would save nothing, yet say it wrote the
 * model). */
int ca_trainer_resume_steps(const char *path, uint64_t done, long long wanted, int *train_steps);

/* Prepares round trainer->step: its rollout's length (ca_task_round_steps) in the engine, its
 * start grid and target in trainer->start/target (from the pool where there is one; on the GPU
 * only with a pool, as without one the GPU draws the round itself). The step
 * functions below call it; a persistent kernel's retry of the step does not. */
int ca_trainer_round(ca_trainer *trainer);

/* One training step on round trainer->step: soft loss before the update, and with
 * hard_loss != NULL also the hard loss of the same round (the same rollout with hard gates), and
 * then the state the step starts from goes into trainer->measured. A logits gradient or a loss that is not finite fails with ca_trainer_nonfinite's message, the
 * same on every engine (the gradient checked first), and the model is not to be saved. */
int ca_trainer_step(ca_trainer *trainer, double *soft_loss, double *hard_loss);

/* The GPU step in two halves, so that several trainers on one vk_context step together
 * (ca_population.c). ca_trainer_step_record records trainer t's step of round t->step into `cmd`
 * (begun by the caller with vk_cmd_begin on t->vk); once the caller's submission has run it (or
 * failed: `submitted` 0), ca_trainer_step_finish retires the
 * recording, reads the losses, and counts the step, as ca_trainer_step. A persistent kernel that
 * gave up is handled there as in ca_trainer_step: the step runs again, alone, one dispatch a CA
 * step (or, where beside_others was set, with its persistent kernels). Not with
 * options.check_stages. */
typedef struct {
    tn_tensor *hard_loss, *soft_loss; /* 0-d, host-visible; hard_loss NULL unless measured */
    tn_tensor *target;                /* the round's target rows (the window's: record_target) */
    tn_tensor *ops_diff;              /* 0-d: > 0 where z's ops after the step differ from
                                         measured_ops; NULL unless same_round and measured */
    int hard_reused;                  /* the hard loss asked for is measured_hard: no rollout */
    int hard_on_host;                 /* the hard loss is being measured on the host (hard_host) */
} ca_step_results;

int ca_trainer_step_record(ca_trainer *trainer, VkCommandBuffer cmd, int with_hard, ca_step_results *results);
int ca_trainer_step_finish(ca_trainer *trainer, int submitted, ca_step_results *results, double *soft_loss,
                           double *hard_loss);

/* trainer->measured into trainer->kept (the two swap). */
void ca_trainer_keep_measured(ca_trainer *trainer);

/* A snapshot's tensors in the model's gate order, [gates][16] each; any of the three may be NULL. */
int ca_trainer_read_snapshot(ca_trainer *trainer, const ca_snapshot *snapshot, float *logits, float *moment1,
                             float *moment2);

/* Sets trainer->kept from host arrays in the model's gate order (a resumed run's best circuit). */
int ca_trainer_set_kept(ca_trainer *trainer, uint64_t step, const float *logits, const float *moment1,
                        const float *moment2);

/* The one message of every engine for a loss or gradient (`what`) that is not finite at the step
 * under way (trainer->step + 1): returns DLCA_ERR. */
int ca_trainer_nonfinite(const ca_trainer *trainer, const char *what);

/* The GPU half of ca_trainer_step, for round trainer->step (ca_train_gpu.c), and its two halves
 * (ca_trainer_step_record / _finish without the test seam and the step count). */
int ca_trainer_gpu_step(ca_trainer *trainer, double *soft_loss, double *hard_loss);
int ca_trainer_gpu_record(ca_trainer *trainer, VkCommandBuffer cmd, int with_hard, ca_step_results *results);
int ca_trainer_gpu_finish(ca_trainer *trainer, int submitted, ca_step_results *results, double *soft_loss,
                          double *hard_loss);

/* Prepares hard_on_host where it applies (after the engine and z are made). */
int ca_trainer_gpu_hard_host_init(ca_trainer *trainer);

/* Copies the state the step under way starts from into trainer->measured (recorded on the GPU). */
int ca_trainer_snapshot(ca_trainer *trainer);

/* Whether the step under way, asked for the hard loss, reuses measured_hard (see same_round). */
int ca_trainer_hard_reusable(const ca_trainer *trainer);

/* The ops one-hot of the circuit a hard rollout just measured, z's now: kept (a reference of
 * its own) as measured_ops where same_round, and ops_changed cleared; NULL (z written from
 * outside, or a measurement to distrust) forgets them, and ops_changed is set. */
void ca_trainer_measured_ops(ca_trainer *trainer, tn_tensor *onehot);

/* After the optimizer's step (recorded on the GPU): *diff a 0-d count > 0 where z's ops differ
 * from measured_ops; NULL where nothing is to be compared (not same_round, or nothing
 * measured). `onehot`: z's ops one-hot where the caller made it already, else NULL (made here
 * when needed). Fails when an op does. */
int ca_trainer_ops_diff(ca_trainer *trainer, tn_tensor *onehot, tn_tensor **diff);

/* The loss of a rollout's output `out` (the final grid's loss channels, ca_rollout.h): the sum of
 * squared errors against `target` [loss_channels][same columns]. */
tn_tensor *ca_trainer_loss(tn_tensor *out, tn_tensor *target);

/* The round's soft loss: ca_trainer_loss, and with a window loss (trainer->rollout.window_steps > 0,
 * out and target holding every grid of the window) the mean over the window's grids, so that a
 * round weighs as one grid does whatever its length. */
tn_tensor *ca_trainer_round_loss(const ca_trainer *trainer, tn_tensor *out, tn_tensor *target);

/* The round's hard loss from the wrong bits of every grid of the window (ca_trainer_loss of the
 * hard rollout, an exact count on every engine): their mean over the window's grids, divided on
 * the host in double so that every engine reports the same value; 0 only where every grid of the
 * window is the target. */
double ca_trainer_round_hard(const ca_trainer *trainer, double wrong_bits);

/* The tensor library's schedule for the config's lr_schedule, warmup and lr_final (ca_config.h). */
tn_lr_schedule ca_lr_schedule_of(const ca_config *config);

/* The learning rate of the step under way (trainer->step + 1), from the config's schedule. */
double ca_trainer_learning_rate(const ca_trainer *trainer);

/* Brings the logits and AdamW moments from the tensors into model->logits and moment1/2. */
int ca_trainer_sync(ca_trainer *trainer);

/* Fills the start grid and target of round `round` for `batch` samples of `shape`. */
int ca_round_inputs(const ca_config *config, ca_shape shape, uint64_t round, const double *image, double *start,
                    double *target);

#endif
