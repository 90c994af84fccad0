/* ca_watch.h: what a training run watches beside its losses: the hard loss every check_every
 * steps, whether a circuit with a hard loss of 0 is exact (ca_exact.h), and the best circuit
 * seen, which the run writes at its end when its final circuit is worse. `dlca train`, its
 * populations and `dlca sweep` share it, so all three stop at the same step for the same seed.
 *
 * A step s (1-based) that measures reports the hard and soft loss of the circuit it starts from,
 * before its update; that circuit, with the moments that go with it, is the trainer's snapshot
 * (ca_snapshot), i.e. the state after s - 1 steps. "Exact at step s" means that circuit, as the
 * log's row s shows its losses.
 *
 * Circuits are ranked: verified exact first, then one measured on a persistence round before one
 * measured on a growth round (a config with a pool or a window has both, ca_task_round_steps:
 * a circuit that grows the picture but does not hold it is right on every growth round), then
 * fewer wrong cells (the hard loss on the round of the step that measured it), then (circuits
 * with none that the exact check refused, in a run trained to hold its picture) fewer wrong bits
 * over steps T..10T, as a repair would count them, so that the run writes and a repair searches
 * the nearest miss, then the lower soft loss. The exact check runs on a circuit with
 * a hard loss of 0 until one passes; after that (a run told not to stop) no other is checked, so
 * the first exact circuit stays the best measured. The final circuit (after the last update)
 * was measured by no step: its hard loss is taken on the last step's round, it is checked when
 * that is 0, and it is kept unless the best is strictly better, exact where it is not, measured
 * on a persistence round where it is not, with fewer wrong cells, or none and fewer bits short of
 * persisting (its soft loss is not known: ties go to the final one). */
#ifndef DLCA_CA_WATCH_H
#define DLCA_CA_WATCH_H

#include "ca_exact.h"
#include "ca_file.h"
#include "ca_train.h"

/* A measured circuit. */
typedef struct {
    uint64_t step; /* the step that measured it; 0: none */
    double wrong, soft;
    int exact;     /* verified exact */
    int persistence; /* measured on a persistence round (ca_watch_round_persistence) */
    double shortfall; /* a circuit with no wrong cells that the exact check refused, in a run trained
                         to hold its picture: its wrong bits summed over steps T..10T
                         (ca_eval_persists_bits); 0 otherwise */
} ca_mark;

typedef struct {
    int check_every;       /* a step s measures when s % check_every == 0 (and see ca_watch_measures) */
    int keep_final;        /* ca_watch_final never prefers the best (dlca train --keep-final) */
    const double *image;   /* the target picture or NULL */
    ca_mark best;          /* the trainer's kept snapshot */
    uint64_t exact_step;   /* the first step whose circuit was verified exact; 0: none */
    int checks, inexact;   /* exact checks run, and how many failed */
    ca_exact_result first_inexact; /* why the first circuit with a hard loss of 0 was not exact */
    uint64_t first_inexact_step;
    float *logits;         /* room for a snapshot's logits */
    unsigned char *ops, *inexact_ops; /* the checked circuit's op per gate, and the last inexact one's */
    int have_inexact_ops;
    double inexact_shortfall; /* the last inexact circuit's (ca_mark.shortfall) */
    ca_model view;         /* the trainer's model with `logits`: the circuit a check reads */
} ca_watch;

/* Watches training of `model` (shared: wiring and config, not its logits). */
int ca_watch_init(ca_watch *watch, const ca_model *model, const double *image, int check_every);

void ca_watch_free(ca_watch *watch);

/* Whether step `step` (1-based) measures the hard loss: every check_every steps, every `every`
 * steps (the log's rows), and the last step of `total`. */
int ca_watch_measures(const ca_watch *watch, uint64_t step, uint64_t total, long long every);

/* The exact check of the circuit in watch->logits (the op of every gate is its argmax), counted in
 * checks and inexact; the first failure is remembered. A circuit whose ops equal the last inexact
 * one's is inexact without running the check again: near the end of a run the same almost-right
 * circuit reaches a hard loss of 0 on step after step, and each check costs milliseconds.
 * *short_bits (unless NULL): an inexact circuit's ca_mark.shortfall, else 0. */
int ca_watch_check(ca_watch *watch, uint64_t step, int *exact, double *short_bits);

/* After a step that measured `soft` and `hard` (trainer->measured holds its state): the exact
 * check when hard is 0 and no circuit was exact yet, and the best kept (the snapshot moves to
 * trainer->kept). *exact: this step's circuit was verified exact. */
int ca_watch_step(ca_watch *watch, ca_trainer *trainer, double soft, double hard, int *exact);

/* At the end of a run that reached its budget, with the trainer synced (its model holds the final
 * logits; `last_soft` is the last step's soft loss): the final circuit's mark, and whether the
 * kept best is to be written instead (*use_best; never with keep_final). */
int ca_watch_final(ca_watch *watch, ca_trainer *trainer, double last_soft, ca_mark *final, int *use_best);

/* The best kept so far as a model file's flag 2 (ca_best_state), its arrays malloc'ed; state->best
 * is zeroed when nothing was measured. */
int ca_watch_save_best(ca_watch *watch, ca_trainer *trainer, ca_best_state *best);

/* A resumed run's watch: the best and the exact step a file carried (best->step 0: none). */
int ca_watch_resume(ca_watch *watch, ca_trainer *trainer, const ca_best_state *best);

/* Writes the kept best's state into trainer->model (logits) and moment1/moment2, and its step
 * count (best.step - 1) into *steps_done, for a model file. */
int ca_watch_restore_best(ca_watch *watch, ca_trainer *trainer, uint64_t *steps_done);

/* Whether step `step` (1-based) measures on a persistence round of `config`: one from the pool
 * or longer than T (never without a pool or a window). */
int ca_watch_round_persistence(const ca_config *config, uint64_t step);

/* 1 when a is ranked above b (see above). */
int ca_mark_better(const ca_mark *a, const ca_mark *b);

#endif
