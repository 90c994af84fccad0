/* ca_eval.h: how good a trained model is: its losses on its own task, Game of Life accuracy,
 * gate statistics, and the generalisation checks the paper reports (docs/design.md section 4). */
#ifndef DLCA_CA_EVAL_H
#define DLCA_CA_EVAL_H

#include "ca_runner.h"

enum { CA_EVAL_MAX_CHECKS = 8 };

/* One pass/fail check with its error (fraction of wrong cells unless said otherwise). */
typedef struct {
    char name[96];
    int passed;
    double error;
} ca_check;

/* Where evaluation runs, and the target picture (NULL unless the preset has one). */
typedef struct {
    const ca_model *model;
    ca_backend backend;
    vk_context *vk;
    const double *image;
    int pass_fail; /* only pass or fail matters (the exact check): ca_eval_checks stops at the first
                      failed check, and persistence runs stop at the step that decides them, so a
                      failed one's error is that step's, not the worst */
} ca_eval_context;

/* Soft and hard loss on the model's own task: training round 0, its batch, grid and T. */
int ca_eval_losses(const ca_eval_context *context, double *soft, double *hard);

/* Fraction of the 512 3x3 boards whose next centre state the hard circuit gets right
 * (the model must be 1-channel). */
int ca_eval_life_accuracy(const ca_eval_context *context, double *accuracy);

/* Hard ops by count over all gates, and the active ones: every gate except pass-through A or B. */
void ca_eval_gate_histogram(const ca_model *model, int histogram[16], size_t *active);

/* Host bytes the largest of the runs above takes (ca_memory.h), before any of them starts. */
double ca_eval_memory(const ca_eval_context *context);

/* The preset's generalisation checks (bigger grids, damage, async inference), and the
 * persistence checks the model trained for (ca_eval_trained_persistence). */
int ca_eval_checks(const ca_eval_context *context, ca_check *checks, int *count);

/* Whether the grown pattern stays and heals, the checks of `which` appended to checks[*count]
 * for every target but Life's (none), on the training grid from training round 0's start, hard:
 * CA_EVAL_PERSISTS, "persists" (exact at every step from T to 10T; error: the largest fraction of
 * wrong loss-channel bits over those steps), and CA_EVAL_REGROWS, "regrows" (the top-left quarter
 * of the grid erased at step 2T, exact again at some step of the next 2T; error: the smallest
 * fraction wrong over them). */
enum { CA_EVAL_PERSISTS = 1, CA_EVAL_REGROWS = 2 };
int ca_eval_persistence(const ca_eval_context *context, int which, ca_check *checks, int *count);

/* Whether the persistence checks apply: a target other than Life's, and for a picture target the
 * picture given. */
int ca_eval_has_persistence(const ca_eval_context *context);

/* How far a circuit is from passing "persists": the wrong loss-channel bits of its rollout summed
 * over every step from T to 10T (0 when it passes, and where ca_eval_has_persistence says no), as
 * a repair search counts them on its rounds. */
int ca_eval_persists_bits(const ca_eval_context *context, double *bits);

/* Where the whole state of the persists rollout (training round 0's first sample from its start,
 * hard, on the training grid) first repeats: state(from + period) == state(from), period >= 1. A
 * synchronous rule is deterministic, so from there the rollout cycles for ever, and when no step
 * from T on has a loss-channel bit wrong the picture holds for ever (where "persists" looks to
 * 10T). Looked for over steps 0..most (fewer where their states would pass 256 MiB: `most` says how
 * many); an asynchronous rule's fire masks make no cycle (`applies` 0, like a Life target or a
 * missing picture). */
typedef struct {
    int applies;     /* a synchronous rule with a persistence check (ca_eval_has_persistence) */
    int most;        /* the steps looked over */
    int repeats;     /* a repeat was found within them */
    int from, period;
    int last;        /* steps T..last hold every state from T on: to the repeat, and a whole cycle */
    int wrong_steps; /* of them, those with a wrong loss-channel bit */
    int cycle_wrong; /* of the cycle's `period` steps from T on, those wrong: 0 means right for ever
                        from right_from (T, or the step after the last wrong one) */
    int right_from;
} ca_eval_settle;
int ca_eval_settles(const ca_eval_context *context, int most, ca_eval_settle *settle);

/* The steps `dlca eval` has ca_eval_settles look over, in multiples of T (ca_eval_memory counts
 * them). */
enum { CA_EVAL_SETTLE_TIMES_T = 100 };

/* The persistence checks a config trains for, and so ca_eval_checks runs: persists with a pool
 * or a window, regrows with damage (0: none). */
int ca_eval_trained_persistence(const ca_config *config);

/* The eval check a repair search counts beside its training rounds once a circuit right on them
 * fails it, as one rollout of the hard circuit from `start`, compared with `target` at step
 * `steps`: for pictures of one loss channel the lizard's torus (the model's start, its seed cell,
 * at the centre of a periodic grid twice the training grid's side, T steps, against the target
 * picture around the seed and 0 elsewhere); for the synchronous checkerboard its 64x64 grid after
 * 80 steps (a random start of round 0). Other configs have none: start and target NULL, nothing
 * allocated. */
typedef struct {
    ca_shape shape;
    int steps;
    double *start;  /* [channels][cells] */
    double *target; /* [loss channels][cells] */
} ca_eval_rollout;

int ca_eval_wide(const ca_config *config, const double *image, ca_eval_rollout *rollout);

/* Whether `config` (with `image`, its picture or NULL) has that check, without building it. */
int ca_eval_has_wide(const ca_config *config, const double *image);

/* Where `config` has the torus check: whether its picture's on cells come within 2 cells of the
 * grid's edge, and if so a one-line note (no newline) saying so into `note` (size `size`). On the
 * periodic grid such a picture can grow leaning on its wrapped copy, which the torus lacks: on
 * 20x20 the turtle emoji filling its frame made 0 of 16 seeds exact, on 24x24 (a border of 2) 13
 * (docs/exact-circuits.md, section 27). 0 (nothing written) otherwise. */
int ca_eval_torus_note(const ca_config *config, const double *image, char *note, size_t size);
void ca_eval_rollout_free(ca_eval_rollout *rollout);

#endif
