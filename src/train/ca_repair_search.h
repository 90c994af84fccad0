/* ca_repair_search.h: the repair search's state (inside the train module; ca_repair.h is the
 * interface): the kept circuit, its lanes (one a thread), the rollouts it counts and their weighted
 * wrong bits, and what a try costs. ca_repair.c walks over tries with it. */
#ifndef DLCA_CA_REPAIR_SEARCH_H
#define DLCA_CA_REPAIR_SEARCH_H

#include "ca_fast_pool.h"
#include "ca_repair.h"
#include "hard_cpu.h"

#include <stddef.h>
#include <stdint.h>

/* Sets of rollouts a search counts, at most: the training grid's rounds; the eval's wider grid
 * (ca_eval_wide). */
enum { REPAIR_SETS = 2 };

/* One thread's room for tries: its copy of the extracted circuit (every model gate's netlist
 * gates, whose ops a try rewrites, the kept ops elsewhere), an engine for each set's grid, and
 * per counted bit whether the last try counted through had it wrong. Lane 0 is the calling
 * thread's, and its circuit is the kept one between tries. */
typedef struct {
    hard_netlist base;
    hard_cpu engine[REPAIR_SETS];
    uint8_t *needed; /* a try's needed nodes of base: the kept circuit's and what the new op reads */
    uint8_t *wrong_try;
    int rc;
    char error[256];
} repair_lane;

/* Rollouts the search counts on one grid: rounds of starts and targets packed as a round's grid
 * ([round][C or loss channels][plane], hard_cpu.h), a try copying a chunk of rounds' starts into
 * its engines (whose batch is chunk_most rounds') and comparing words with the targets at every
 * step from first_step to last_step; their counted bits are repair_search.weight and wrong_now from
 * `at` on (round, step, loss channel, cell). A try runs its rounds in chunks of 1, 2, 4, ... up to
 * chunk_most: a chunk's rounds run side by side as one engine's batch, so
 * each instruction of the circuit runs over all their words at once, and the first chunks are
 * small so that a try that passes its bound on its first rounds stops early. */
typedef struct {
    ca_shape shape;                       /* one round's */
    int rounds, first_step, last_step;
    int chunk_most;                       /* rounds a chunk holds at most */
    uint64_t *round_id;                   /* [rounds]: round r draws as training's round round_id[r] */
    size_t cells;                         /* one round's: batch * H * W */
    size_t plane;                         /* words of one channel of one round: rows * words */
    uint64_t *starts, *targets;
    /* Async: every round's fire masks of steps 0..last_step - 1, drawn once (hard_cpu_draw_fire_masks:
     * drawing them cost a try seven times its circuit), laid out as the chunks run them: the chunk
     * from round r0 of n rounds at r0 * fire_words, [step][n rounds][plane]. NULL where every cell
     * fires. */
    uint64_t *fire_masks;
    size_t fire_words; /* one round's */
    size_t at;
} repair_rollouts;

/* The circuit as kept (extracted in the lanes, and pruned: what an engine runs, a tenth to a
 * hundredth of the gates of a trained circuit), the rounds' starts and targets, and where each
 * model gate's netlist gates are. */
typedef struct {
    const ca_config *config;
    hard_netlist pruned;
    repair_lane *lanes;
    int n_lanes;
    ca_fast_pool *pool;
    repair_rollouts set[REPAIR_SETS];
    int sets;
    /* Per counted bit (set, round, step T..last_step, loss channel, cell) what its being wrong costs:
     * 1 at first, raised for the bits wrong at a minimum of single changes (the breakout of
     * ca_repair.c's run_search). */
    uint32_t *weight;
    size_t weights;
    /* Per counted bit, whether the kept circuit has it wrong (wrong_now; wrong_kept of them,
     * weighing weight_kept). */
    uint8_t *wrong_now;
    size_t wrong_kept, weight_kept;
    int32_t *first, *instr;    /* model gate g's netlist gates: instr[first[g] .. first[g + 1]) */
    /* Per extracted node (inputs, then gates), whether an output depends on it: a gate that no
     * live gate reads, or reads only as an input its op ignores, changes nothing. */
    uint8_t *live;
} repair_search;

/* A try's cost: the weights of its wrong bits; how many they are; and against the kept circuit,
 * the wrong bits it fixes (their count and weight) and the weight of those it breaks. Only
 * `complete` costs (counted through, not stopped at the bound) have the last four and the lane's
 * wrong_try. */
typedef struct {
    size_t cost, wrong, fixed, fixed_weight, broken_weight;
    int complete;
} repair_cost;

/* The bits one training round of `c` counts: (steps counted) x loss channels x batch x cells. */
size_t repair_round_bits(const ca_config *c);

/* The search from the model's circuit, on the `rounds` training rounds round_id[0..rounds) (the
 * first only where every round is the same rollout) and, with `wide`, the eval's wider grid too,
 * costing tries on `threads` lanes; every weight 1. */
int repair_search_init(repair_search *s, const ca_model *m, const double *image, const uint64_t *round_id, int rounds,
                       int wide, int threads);

void repair_search_free(repair_search *s);

/* Whether a search may count the eval's wider grid (ca_eval_wide): the preset has one, and it is
 * the same rollout every time (no fire masks). */
int repair_counts_wide(const ca_config *c, const double *image);

/* The cost of the circuit now in lane l's engines, summed over the sets' rounds; stops once it
 * passes `bound` (cost bound + 1, not complete) where a walk over the rounds one at a time would
 * (ca_repair_search.c). Reads only what tries share, so lanes run it at once. */
repair_cost repair_search_cost(const repair_search *s, repair_lane *l, size_t bound);

/* After a complete repair_search_cost in lane l: wrong[r] = whether training round r (set 0's) had
 * a bit wrong. */
void repair_search_wrong_rounds(const repair_search *s, const repair_lane *l, uint8_t *wrong);

/* The circuit in lane l's engine is kept: its wrong bits (the complete cost k's) are the kept ones. */
void repair_keep_wrong(repair_search *s, repair_lane *l, const repair_cost *k);

/* At a minimum of single changes: each kept wrong bit weighs `raise` more (capped); returns whether
 * one stopped at the cap. */
int repair_raise_weights(repair_search *s, size_t raise);

#endif
