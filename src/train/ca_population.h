/* ca_population.h: N independent training runs of one config, stepped together. Member i trains
 * with seed + i (its own wiring, start states and fire masks), so member 0 is the single run of
 * that seed, and every member's losses and logits are those of `dlca train --seed seed + i`: on
 * the CPU bit for bit, on a GPU as its single run would give them.
 *
 * A member is a ca_trainer with its ca_watch; members share nothing but the vk_context. On the
 * GPU a training step records every active member's step into a command buffer of its own (each
 * member's tn device records in turn), submitted as soon as it is recorded and spread over the
 * device's queues (vk_spread), so that the GPU runs a member while the host records the next and
 * may run members side by side; a member whose persistent kernels gave up runs
 * that step again alone (ca_train.h), and where that happened beside the others the population
 * keeps to one queue from then on. Interleaving members' work inside kernels would gain little:
 * on an H100 a checkerboard step of batch 2 already evaluates gates as fast as one of batch 256;
 * what a population shares is the start-up, and it can stop at its first exact member. On the
 * CPU members step one after another, each on the fast engine's threads. */
#ifndef DLCA_CA_POPULATION_H
#define DLCA_CA_POPULATION_H

#include "ca_repair.h"
#include "ca_watch.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

/* When members stop before the budget. */
typedef enum {
    CA_STOP_NONE,  /* every member trains to the budget */
    CA_STOP_FIRST, /* all stop at the first step where a member's circuit is verified exact */
    CA_STOP_EACH   /* each member stops at its own first exact step; the others go on */
} ca_stop_rule;

/* One logged row of a member: step, soft loss, hard loss, seconds. */
typedef struct {
    uint64_t step;
    double soft, hard, seconds;
} ca_member_row;

typedef struct {
    ca_model model;
    ca_trainer trainer;
    ca_watch watch;
    int ready;              /* model, trainer and watch were made (free releases them) */
    int active;             /* still training */
    uint64_t stop_step;     /* the step it stopped at (its exact step, or the last it trained) */
    double soft, hard;      /* of its last step (hard: of the last that measured, hard_step) */
    uint64_t hard_step;
    double seconds;         /* wall seconds from the population's start until it stopped */
    int stopped_exact;      /* stopped at its verified-exact step: its output is trainer.kept */
    int use_best;           /* ended otherwise, and its kept best beats its final circuit */
    ca_mark out;            /* the circuit it writes: the exact or best one, or the final */
    int repaired;           /* ca_population_repair made out exact: model.logits hold it */
    ca_repair_result repair; /* that search's result, when one ran (repair.seconds > 0) */
    ca_member_row *rows;    /* every `every` steps, its exact step and its last */
    size_t row_count, row_capacity;
} ca_member;

typedef struct {
    int count;
    ca_member *members;
    ca_backend backend;
    vk_context *vk;
    const double *image;
    int check_stages;       /* members step one at a time (the stage checker submits its own) */
    uint64_t total;         /* the budget: the config's train_steps */
    uint32_t queues;        /* GPU: the queues its steps spread over (vk_spread), 1
                               once a member's persistent kernel gave up beside the others */
    double record_ms, run_ms; /* instrumentation (dlca bench): the last GPU step's wall ms spent
                                 recording and submitting the members' command buffers (the GPU
                                 runs the first meanwhile), and from the last submission to the
                                 end of all */
} ca_population;

/* How a population trains, and what it tells its caller. */
typedef struct {
    ca_stop_rule stop;
    long long every; /* rows (and progress) every N steps */
    int keep_final;  /* a member that did not stop exact writes its final circuit (ca_watch.keep_final) */
    /* Called after every step that is a multiple of `every` (and the last): may print progress. */
    void (*progress)(void *context, const ca_population *population, uint64_t step, double seconds);
    void *progress_context;
    volatile sig_atomic_t *interrupt; /* set (by a signal handler): stop after the step under way */
    double seconds_offset;            /* added to every wall time it reports (earlier populations' time) */
    const atomic_int *cancel;         /* may be NULL; set by another thread: stop after the step under way */
} ca_population_run;

/* `count` members of `config` (seed + i), each a trainer on `backend` (with `vk`, shared) and a
 * watch measuring every `check_every` steps. */
int ca_population_init(ca_population *population, const ca_config *config, int count, const double *image,
                       ca_backend backend, vk_context *vk, const ca_options *options, int check_every);

void ca_population_free(ca_population *population);

/* One training step of every active member: on the GPU a command buffer each, submitted once
 * recorded and spread over the device's queues (each member in turn when the stage checker is
 * on); one after another on the CPU. soft[i] gets member i's soft
 * loss, and hard[i] its hard loss when `measure` (both arrays of `count`). The members' watches are
 * not consulted: ca_population_train does that; `dlca bench --population` times this alone. */
int ca_population_step(ca_population *population, int measure, double *soft, double *hard);

/* Trains until the budget, the stop rule, or an interrupt; then settles every member's output
 * circuit (member.out). */
int ca_population_train(ca_population *population, const ca_population_run *run);

/* The index of the member whose output ranks first (ca_mark_better: exact, wrong cells, soft). */
int ca_population_best(const ca_population *population);

/* How many members' outputs are verified exact. */
int ca_population_exact_count(const ca_population *population);

/* How ca_population_repair searches a population's inexact members. */
typedef struct {
    double seconds;     /* each search's limit (> 0) */
    int threads;        /* threads in all (>= 1) */
    int search_threads; /* each search's (ca_repair_options.threads); 0: threads / members, at least 1 */
    int first;          /* once one member is repaired, start no other search and end those under way */
    int most;           /* search only the `most` best-ranked inexact members (0: all) */
    /* Called from a searching thread once every `every` seconds of a search, from its start (may
     * be NULL): the member's seed and its search's progress (ca_repair_options.progress). */
    void (*progress)(void *user, uint64_t seed, size_t wrong, size_t tries, int changes, int minima, double seconds);
    void *user;
    double every;
    volatile sig_atomic_t *interrupt; /* may be NULL; ends every search (ca_repair_options.interrupt) */
    size_t max_tries;   /* each search's tries at most (ca_repair_options.max_tries; 0: no bound) */
} ca_population_search;

/* After ca_population_train: the search of ca_repair on the output circuit of every member that
 * is not verified exact, best-ranked members first, threads / search_threads searches side by
 * side (one search a thread while members outnumber threads). A repaired member's out is exact
 * and its model holds the repaired logits; the others are left as they were. *repaired counts
 * them. */
int ca_population_repair(ca_population *population, const ca_population_search *search, int *repaired);

/* ca_population_repair on a thread of its own while the caller goes on (trains the next
 * population on the GPU, say). ca_population_repair_start reads the members' output circuits into
 * their models on the calling thread (a kept best is the trainer's, which may talk to the GPU), so
 * the search thread touches only the members' models and repair results, never the trainers: the
 * population must not be used until ca_population_repair_wait. `repaired` turns 1 when the
 * searches end with a member repaired, for a training loop to stop at (ca_population_run.cancel). */
typedef struct {
    ca_population *population;
    ca_population_search search;
    pthread_t thread;
    atomic_int repaired;
    atomic_int cancel; /* ca_population_repair_cancel, or a member repaired with search.first */
    atomic_int done;   /* the search thread has ended (ca_population_repair_done) */
    int count, rc, started;
    char error[256];
} ca_population_background;

/* Checks `search` as ca_population_repair does, then starts the search (search is copied). */
int ca_population_repair_start(ca_population_background *background, ca_population *population,
                               const ca_population_search *search);

/* Ends the searches under way after their batch of tries (ca_repair_options.cancel) and starts no
 * other; what they repaired so far stays repaired. Then ca_population_repair_wait. */
void ca_population_repair_cancel(ca_population_background *background);

/* Whether the search has ended (repaired a member, ran out of time or was cancelled), so that
 * ca_population_repair_wait returns at once. */
int ca_population_repair_done(ca_population_background *background);

/* Waits for the search to end: its status, and *repaired as ca_population_repair's. */
int ca_population_repair_wait(ca_population_background *background, int *repaired);

/* How ca_population_repair lays `searches` searches on `threads` threads: *side searches side by
 * side, on *each threads apiece (search_threads as there). */
void ca_population_repair_plan(int searches, int threads, int search_threads, int *side, int *each);

/* Writes member i's output circuit as a model file (atomically), with its training state and the
 * target picture `target` (NULL: none); a repaired member's without training state (its logits
 * are the search's, not a step of its run), as dlca repair writes. */
int ca_population_save(ca_population *population, int member, const char *path, const ca_target_image *target);

#endif
