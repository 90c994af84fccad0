/* ca_repair.h: closing the last wrong cells of a trained circuit by local search on the circuit.
 *
 * A run can end with its soft circuit right (soft loss ~1e-6) and its snapped circuit a cell or two
 * wrong: a gate near a tie snapped to the wrong op. ca_repair tries changing one gate's op at a
 * time on the hard circuit: every gate to each of its other ops, the ops nearest its winner by
 * logit first, and keeps a change that lowers the cost of the repair rounds (training's rounds
 * CA_REPAIR_FIRST_ROUND.., which neither training nor the exact check draws; one round of one
 * sample where every round is the same rollout; at step T, and at every step from T to 10T for a
 * model trained to hold its pattern, as the exact check's `persists`), pass after pass, until
 * none is wrong or the time is up. The cost is the wrong cell bits, each weighted: every weight
 * starts at 1, and at a minimum of single changes (a pass that keeps nothing) each bit wrong
 * there weighs 1 more, so the search goes on through changes that fix those bits and break
 * others (the breakout method). Then the exact check (ca_exact.h) decides: only an exact circuit
 * is kept; one right on the repair rounds that fails an eval check is searched again from there
 * counting the eval's wider grid too where the preset has one (ca_eval_wide: a lizard right on its
 * grid can still grow past its picture on a torus of twice its side, a checkerboard right on its 16x16
 * rounds can still be wrong on a 64x64 grid), and one wrong elsewhere on its rounds and the fresh
 * ones it gets wrong (at most as many as it had), up to ca_repair_most_rounds. A gate no output
 * depends on is not tried; a try rewrites the gate's op in the extracted circuit and prunes it (a
 * trained circuit keeps a tenth to a hundredth of its gates), and runs that on the bit-packed CPU
 * engine unless it prunes to the circuit already running. Deterministic but for the time limit,
 * and the same on any number of threads (docs/exact-circuits.md, sections 8, 10, 11 and 20). */
#ifndef DLCA_CA_REPAIR_H
#define DLCA_CA_REPAIR_H

#include "ca_model.h"

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Rounds searched at first where rounds differ (CA_REPAIR_ROUNDS by default, at most
 * CA_REPAIR_MAX_ROUNDS): a circuit right on them and wrong on an unseen round is searched again
 * with the fresh rounds it gets wrong added (up to as many as it had; where none of 4096 is wrong,
 * as many fresh ones), to CA_REPAIR_MAX_ROUNDS always and on to CA_REPAIR_GROW_ROUNDS while the
 * rounds' counted bits stay within CA_REPAIR_GROW_BITS (ca_repair_most_rounds). A circuit can be
 * right on 64 rounds and wrong on an unseen one (docs/exact-circuits.md, sections 18 and 20); the
 * bits bound keeps a search's marks (5 bytes a counted bit, 1 more a thread) to tens of megabytes
 * where every round counts many steps (a window to 10T). */
enum { CA_REPAIR_ROUNDS = 8, CA_REPAIR_MAX_ROUNDS = 64, CA_REPAIR_GROW_ROUNDS = 1024 };
#define CA_REPAIR_GROW_BITS ((size_t)1 << 22)
/* Threads one search may cost its tries on, at most; a bound on its tries (--tries), at most. */
enum { CA_REPAIR_MAX_THREADS = 256 };
#define CA_REPAIR_MAX_TRIES 1000000000000ll
#define CA_REPAIR_FIRST_ROUND 500000000ull

typedef struct {
    double seconds; /* search time limit (> 0) */
    int rounds;     /* repair rounds to start with where rounds differ (1..CA_REPAIR_MAX_ROUNDS;
                       CA_REPAIR_ROUNDS by default) */
    /* Called after every kept change and once a second while searching (may be NULL): the wrong
     * bits now, tries so far, changes kept (a gate may change more than once) and minima met. */
    void (*progress)(void *user, size_t wrong, size_t tries, int changes, int minima, double seconds);
    void *user;
    /* Threads costing tries at once (0 or 1: the calling thread alone; up to
       CA_REPAIR_MAX_THREADS). The search is the same on any number: a pass's tries are costed
       in batches against the same kept circuit and the first in order that lowers the cost is
       kept, as one thread would. */
    int threads;
    /* May be NULL; set (by a signal handler, say): the search ends after the batch of tries under
     * way, as when out of time (result.interrupted). */
    volatile sig_atomic_t *interrupt;
    /* May be NULL; set by another thread (a population's search once another member is
     * repaired): the search ends as on interrupt, and result.cancelled says so. */
    const atomic_int *cancel;
    /* The most rounds the search grows to (0: ca_repair_most_rounds; less where a caller wants a
     * shorter search; from rounds to CA_REPAIR_GROW_ROUNDS). */
    int most_rounds;
    /* Tries at most, over all the searches (0: no bound but the seconds). A search the tries end
     * before the seconds do walks the same way on any host and any number of threads, so its
     * result is reproducible where one bounded by seconds depends on the machine's speed. */
    size_t max_tries;
} ca_repair_options;

typedef struct {
    int exact;                /* the circuit now in the model is verified exact */
    int already_exact;        /* it was before the search (nothing changed) */
    size_t wrong_before, wrong_after; /* wrong cell bits summed over the first and the last
                                         search's repair rounds */
    size_t wrong_fewest;      /* the fewest the last search reached */
    int rounds;               /* training rounds the last search counted (1 where every round is
                                 the same rollout) */
    int minima;               /* minima of single changes the searches met (and walked on from) */
    int changes;              /* gates whose op the search changed, when exact */
    size_t tries;             /* single-gate changes tried */
    double seconds;           /* search time */
    int interrupted;          /* options.interrupt ended it */
    int out_of_tries;         /* options.max_tries ended it */
    int cancelled;            /* options.cancel ended it */
    char why[192];            /* when not exact: the check it fails, or that no change helped */
} ca_repair_result;

/* The most rounds a search of `config`'s circuit grows to: 1 where every round is the same
 * rollout; else CA_REPAIR_MAX_ROUNDS, or more, doubling, while the counted bits (rounds x steps
 * counted x loss channels x batch x cells) stay within CA_REPAIR_GROW_BITS, to
 * CA_REPAIR_GROW_ROUNDS. */
int ca_repair_most_rounds(const ca_config *config);

/* Searches as above. When the result is exact, each changed gate's logits make its new op the
 * argmax (its logit set 1 above the old winner's); otherwise the model is left as it came. Fails
 * only when the search cannot run (memory, a bad option). */
int ca_repair(ca_model *model, const double *image, const ca_repair_options *options, ca_repair_result *result);

#endif
