/* ca_repair.c: local search for an exact circuit near a trained one (ca_repair.h). */
#include "ca_repair.h"

#include "ca_bench.h"
#include "ca_eval.h"
#include "ca_exact.h"
#include "ca_fast_pool.h"
#include "ca_task.h"
#include "ca_train.h"
#include "error.h"
#include "hard_cpu.h"
#include "rng.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sets of rollouts a search counts, at most: the training grid's rounds; the eval's torus
 * (ca_eval_torus). */
enum { REPAIR_SETS = 2 };

/* One thread's room for tries: its copy of the extracted circuit (every model gate's netlist
 * gates, whose ops a try rewrites, the kept ops elsewhere), an engine for each set's grid, and
 * per counted bit whether the last try counted through had it wrong. Lane 0 is the calling
 * thread's, and its circuit is the kept one between tries. */
typedef struct {
    hard_netlist base;
    hard_cpu engine[REPAIR_SETS];
    uint8_t *wrong_try;
    int rc;
    char error[256];
} lane;

/* Rollouts the search counts on one grid: rounds of starts and targets packed as its engines'
 * grids ([C or loss channels][rows][words], hard_cpu.h), a try copying a start in and comparing
 * words with the target at every step from T to last_step; their counted bits are search.weight
 * and wrong_now from `at` on (round, step, loss channel, cell). */
typedef struct {
    ca_shape shape;
    int rounds, last_step;
    uint64_t round[CA_REPAIR_MAX_ROUNDS]; /* each round's fire stream's */
    size_t cells;                         /* one round's: batch * H * W */
    size_t plane;                         /* words of one channel: rows * words */
    uint64_t *starts, *targets;
    size_t at;
} rollout_set;

/* The circuit as kept (extracted in the lanes, and pruned: what an engine runs, a tenth to a
 * hundredth of the gates of a trained circuit), the rounds' starts and targets, and where each
 * model gate's netlist gates are. */
typedef struct {
    const ca_config *config;
    hard_netlist pruned;
    lane *lanes;
    int n_lanes;
    ca_fast_pool *pool;
    rollout_set set[REPAIR_SETS];
    int sets;
    /* Per counted bit (set, round, step T..last_step, loss channel, cell) what its being wrong costs:
     * 1 at first, raised for the bits wrong at a minimum of single changes (the breakout of
     * run_search). */
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
} search;

static void search_free(search *s)
{
    for (int i = 0; s->lanes && i < s->n_lanes; i++) {
        for (int k = 0; k < REPAIR_SETS; k++) hard_cpu_free(&s->lanes[i].engine[k]);
        hard_netlist_free(&s->lanes[i].base);
        free(s->lanes[i].wrong_try);
    }
    for (int k = 0; k < REPAIR_SETS; k++) free(s->set[k].starts), free(s->set[k].targets);
    ca_fast_pool_destroy(s->pool);
    hard_netlist_free(&s->pruned);
    free(s->lanes), free(s->live), free(s->weight), free(s->wrong_now);
    free(s->first), free(s->instr);
    memset(s, 0, sizeof *s);
}

/* Lanes 1.. as copies of lane 0 (its circuit and engines), each with its wrong-bit marks. */
static int copy_lanes(search *s, double fire_rate)
{
    const hard_netlist *net = &s->lanes[0].base;
    for (int i = 0; i < s->n_lanes; i++) {
        lane *l = &s->lanes[i];
        l->wrong_try = calloc(s->weights, 1);
        if (!l->wrong_try) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's wrong bits");
        if (i == 0) continue;
        l->base = *net;
        l->base.gates = malloc((size_t)net->n_gates * sizeof *net->gates);
        l->base.outputs = malloc((size_t)net->channels * sizeof *net->outputs);
        if (!l->base.gates || !l->base.outputs) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's lanes");
        memcpy(l->base.gates, net->gates, (size_t)net->n_gates * sizeof *net->gates);
        memcpy(l->base.outputs, net->outputs, (size_t)net->channels * sizeof *net->outputs);
        for (int k = 0; k < s->sets; k++)
            if (hard_cpu_init(&l->engine[k], &s->pruned, s->set[k].shape, fire_rate)) return DLCA_ERR;
    }
    return DLCA_OK;
}

/* Groups the netlist gates by model gate (a counting sort of the extraction's map). */
static int index_gates(search *s, const ca_model *m, const int32_t *model_gate, int n)
{
    s->first = calloc(m->gate_count + 1, sizeof(int32_t));
    s->instr = malloc((size_t)n * sizeof(int32_t));
    if (!s->first || !s->instr) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's gate index");
    for (int i = 0; i < n; i++) s->first[model_gate[i] + 1]++;
    for (size_t g = 0; g < m->gate_count; g++) s->first[g + 1] += s->first[g];
    int32_t *next = malloc(m->gate_count * sizeof(int32_t));
    if (!next) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's gate index");
    memcpy(next, s->first, m->gate_count * sizeof(int32_t));
    for (int i = 0; i < n; i++) s->instr[next[model_gate[i]]++] = i;
    free(next);
    return DLCA_OK;
}

/* search.live of the kept circuit's ops (lane 0's): from the outputs back, a node is live when a
 * live gate's op depends on it. */
static void mark_live(search *s)
{
    const hard_netlist *net = &s->lanes[0].base;
    uint8_t *live = s->live; /* [node]: inputs, then gates */
    memset(live, 0, (size_t)(net->n_inputs + net->n_gates));
    for (int ch = 0; ch < net->channels; ch++) live[net->outputs[ch]] = 1;
    for (int g = net->n_gates - 1; g >= 0; g--) {
        if (!live[net->n_inputs + g]) continue;
        int op = net->gates[g].op; /* truth table: bit 3 (0,0), 2 (0,1), 1 (1,0), 0 (1,1) */
        int reads_a = ((op >> 3 ^ op >> 1) & 1) | ((op >> 2 ^ op) & 1);
        int reads_b = ((op >> 3 ^ op >> 2) & 1) | ((op >> 1 ^ op) & 1);
        if (reads_a) live[net->gates[g].a] = 1;
        if (reads_b) live[net->gates[g].b] = 1;
    }
}

/* Set k's engine in lane 0, and its starts and targets: `rounds` of them (double grids, the
 * targets [loss channels][cells]) packed by that engine. */
static int pack_set(search *s, int k, const double *starts, const double *targets)
{
    const ca_config *c = s->config;
    rollout_set *set = &s->set[k];
    hard_cpu *e = &s->lanes[0].engine[k];
    if (hard_cpu_init(e, &s->pruned, set->shape, c->fire_rate)) return DLCA_ERR;
    set->cells = ca_shape_cells(set->shape);
    set->plane = e->rows * (size_t)e->words;
    size_t grid = (size_t)c->channels * set->cells, target = (size_t)c->loss_channels * set->cells;
    set->starts = malloc((size_t)set->rounds * (size_t)c->channels * set->plane * sizeof(uint64_t));
    set->targets = malloc((size_t)set->rounds * (size_t)c->loss_channels * set->plane * sizeof(uint64_t));
    double *scratch = malloc(grid * sizeof(double));
    if (!set->starts || !set->targets || !scratch)
        return free(scratch), err_set(DLCA_ERR_NOMEM, "out of memory for the repair's %d rounds", set->rounds);
    for (int r = 0; r < set->rounds; r++) {
        memcpy(scratch, starts + (size_t)r * grid, grid * sizeof(double));
        ca_task_binarize(scratch, grid);
        hard_cpu_pack(e, scratch);
        memcpy(set->starts + (size_t)r * (size_t)c->channels * set->plane, e->grid,
               (size_t)c->channels * set->plane * sizeof(uint64_t));
        memcpy(scratch, targets + (size_t)r * target, target * sizeof(double)); /* as a grid's first channels */
        hard_cpu_pack(e, scratch);
        memcpy(set->targets + (size_t)r * (size_t)c->loss_channels * set->plane, e->grid,
               (size_t)c->loss_channels * set->plane * sizeof(uint64_t));
    }
    free(scratch);
    set->at = s->weights;
    s->weights += (size_t)set->rounds * (size_t)(set->last_step - c->steps + 1) * target;
    return DLCA_OK;
}

/* Set 0: `rounds` training rounds (one where every round is the same rollout). */
static int training_set(search *s, const double *image, int rounds)
{
    const ca_config *c = s->config;
    int same = ca_exact_one_rollout(c);
    rollout_set *set = &s->set[s->sets++];
    set->rounds = same ? 1 : rounds;
    /* A model trained to hold its pattern is checked to 10T (ca_eval_persistence): so is a try. */
    set->last_step = ca_eval_trained_persistence(c) & CA_EVAL_PERSISTS ? 10 * c->steps : c->steps;
    set->shape = (ca_shape){same ? 1 : c->batch, c->height, c->width, c->boundary};
    size_t cells = ca_shape_cells(set->shape), grid = (size_t)c->channels * cells;
    size_t target = (size_t)c->loss_channels * cells;
    double *starts = malloc((size_t)set->rounds * grid * sizeof(double));
    double *targets = malloc((size_t)set->rounds * target * sizeof(double));
    int rc = starts && targets ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for the repair's %d rounds", rounds);
    for (int r = 0; r < set->rounds && !rc; r++) {
        set->round[r] = CA_REPAIR_FIRST_ROUND + (uint64_t)r;
        rc = ca_round_inputs(c, set->shape, set->round[r], image, starts + (size_t)r * grid,
                             targets + (size_t)r * target);
    }
    if (!rc) rc = pack_set(s, s->sets - 1, starts, targets);
    free(starts), free(targets);
    return rc;
}

/* Whether a search may count the eval's torus rollout: the preset has one, and it is the same
 * every time (no fire masks). */
static int counts_torus(const ca_config *c, const double *image)
{
    return ca_eval_has_torus(c, image) && c->fire_rate >= 1.0;
}

/* Set 1: the eval's torus rollout (ca_eval_torus; counts_torus holds). */
static int torus_set(search *s, const double *image)
{
    ca_eval_rollout torus;
    if (ca_eval_torus(s->config, image, &torus)) return DLCA_ERR;
    rollout_set *set = &s->set[s->sets++];
    set->shape = torus.shape, set->rounds = 1, set->last_step = torus.steps, set->round[0] = 0;
    int rc = pack_set(s, s->sets - 1, torus.start, torus.target);
    ca_eval_rollout_free(&torus);
    return rc;
}

/* The search from the model's circuit, on `rounds` training rounds and, with `torus`, the eval's
 * torus rollout too. */
static int search_init(search *s, const ca_model *m, const double *image, int rounds, int torus, int threads)
{
    const ca_config *c = &m->config;
    memset(s, 0, sizeof *s);
    s->config = c;
    s->n_lanes = threads;
    s->lanes = calloc((size_t)threads, sizeof *s->lanes);
    if (!s->lanes) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's %d threads", threads);
    lane *l0 = &s->lanes[0];
    int32_t *model_gate = NULL;
    if (hard_circuit_extract_mapped(&l0->base, m, &model_gate)) return search_free(s), DLCA_ERR;
    int rc = hard_circuit_prune(&s->pruned, &l0->base, NULL);
    if (!rc) rc = index_gates(s, m, model_gate, l0->base.n_gates);
    free(model_gate);
    if (!rc) rc = training_set(s, image, rounds);
    if (!rc && torus) rc = torus_set(s, image);
    if (rc) return search_free(s), DLCA_ERR;
    s->live = malloc((size_t)(l0->base.n_inputs + l0->base.n_gates));
    s->weight = malloc(s->weights * sizeof *s->weight);
    s->wrong_now = calloc(s->weights, 1);
    if (!s->live || !s->weight || !s->wrong_now)
        return search_free(s), err_set(DLCA_ERR_NOMEM, "out of memory for the repair's %zu counted bits", s->weights);
    rc = copy_lanes(s, c->fire_rate);
    if (!rc && threads > 1) rc = ca_fast_pool_create(&s->pool, threads);
    if (rc) return search_free(s), DLCA_ERR;
    for (size_t i = 0; i < s->weights; i++) s->weight[i] = 1;
    mark_live(s);
    return DLCA_OK;
}

/* A try's cost: the weights of its wrong bits; how many they are; and against the kept circuit,
 * the wrong bits it fixes (their count and weight) and the weight of those it breaks. Only
 * `complete` costs (counted through, not stopped at the bound) have the last three and the lane's
 * wrong_try. */
typedef struct {
    size_t cost, wrong, fixed, fixed_weight, broken_weight;
    int complete;
} try_cost;

/* The cost of the circuit now in lane l's engines, summed over the sets' rounds; stops once it
 * passes `bound` (cost bound + 1, not complete). Reads only what tries share, so lanes run it at
 * once. */
static try_cost search_cost(const search *s, lane *l, size_t bound)
{
    const ca_config *c = s->config;
    size_t still = 0, still_weight = 0;
    try_cost k = {0};
    memset(l->wrong_try, 0, s->weights);
    for (int set_index = 0; set_index < s->sets; set_index++) {
        const rollout_set *set = &s->set[set_index];
        hard_cpu *e = &l->engine[set_index];
        size_t target = (size_t)c->loss_channels * set->cells, start_words = (size_t)c->channels * set->plane;
        size_t loss_words = (size_t)c->loss_channels * set->plane;
        const uint32_t *w = s->weight + set->at;
        const uint8_t *now = s->wrong_now + set->at;
        uint8_t *mark = l->wrong_try + set->at;
        for (int r = 0; r < set->rounds; r++) {
            const uint64_t *goal = set->targets + (size_t)r * loss_words;
            memcpy(e->grid, set->starts + (size_t)r * start_words, start_words * sizeof(uint64_t));
            hard_cpu_set_fire_stream(e, rng_fire_stream(c->seed, set->round[r]));
            hard_cpu_run(e, 0, c->steps);
            for (int t = c->steps;; t++) {
                for (size_t at = 0; at < loss_words; at++) /* word `at`: channel, then word of its plane */
                    for (uint64_t diff = e->grid[at] ^ goal[at]; diff; diff &= diff - 1) {
                        size_t cell = hard_cpu_cell(e, at % set->plane, __builtin_ctzll(diff));
                        size_t i = at / set->plane * set->cells + cell;
                        k.cost += w[i], k.wrong++, mark[i] = 1;
                        if (now[i]) still++, still_weight += w[i];
                        else k.broken_weight += w[i];
                    }
                w += target, now += target, mark += target;
                if (t == set->last_step) break;
                if (k.cost > bound) return (try_cost){bound + 1, k.wrong, 0, 0, 0, 0};
                hard_cpu_step(e, (uint32_t)t);
            }
            if (k.cost > bound && (r + 1 < set->rounds || set_index + 1 < s->sets))
                return (try_cost){bound + 1, k.wrong, 0, 0, 0, 0};
        }
    }
    k.fixed = s->wrong_kept - still, k.fixed_weight = s->weight_kept - still_weight, k.complete = 1;
    return k;
}

/* The circuit in lane l's engine is kept: its wrong bits (the complete cost k's) are the kept ones. */
static void keep_wrong(search *s, lane *l, const try_cost *k)
{
    uint8_t *swap = s->wrong_now;
    s->wrong_now = l->wrong_try, l->wrong_try = swap;
    s->wrong_kept = k->wrong, s->weight_kept = k->cost;
}

/* At a minimum of single changes: each kept wrong bit weighs `raise` more, up to CA_REPAIR_WEIGHT_MAX
 * (a long search must not wrap a weight round to a small one). Returns whether one stopped there. */
#define CA_REPAIR_WEIGHT_MAX (UINT32_MAX / 2)
static int raise_weights(search *s, size_t raise)
{
    int capped = 0;
    s->weight_kept = 0;
    for (size_t i = 0; i < s->weights; i++)
        if (s->wrong_now[i]) {
            size_t w = s->weight[i] + raise;
            capped |= w > CA_REPAIR_WEIGHT_MAX;
            s->weight[i] = (uint32_t)(w < CA_REPAIR_WEIGHT_MAX ? w : CA_REPAIR_WEIGHT_MAX);
            s->weight_kept += s->weight[i];
        }
    return capped;
}

/* Whether model gate `gate` can change a rollout: some netlist gate of it is live. */
static int can_change(const search *s, size_t gate)
{
    for (int32_t i = s->first[gate]; i < s->first[gate + 1]; i++)
        if (s->live[s->lanes[0].base.n_inputs + s->instr[i]]) return 1;
    return 0;
}

static void set_op(const search *s, hard_netlist *base, size_t gate, int op)
{
    for (int32_t i = s->first[gate]; i < s->first[gate + 1]; i++) base->gates[s->instr[i]].op = op;
}

static int same_netlist(const hard_netlist *a, const hard_netlist *b)
{
    return a->n_gates == b->n_gates && memcmp(a->gates, b->gates, (size_t)a->n_gates * sizeof *a->gates) == 0 &&
           memcmp(a->outputs, b->outputs, (size_t)a->channels * sizeof *a->outputs) == 0;
}

/* Gate `gate` to op `op` in lane l (its ops in the lane's extracted circuit rewritten, then
 * pruned): *changed 0 when the pruned circuit is the one kept (the gate is dead, or its new op
 * prunes to the same), else the lane's engine runs the new one, which *next holds. */
static int try_op(const search *s, lane *l, size_t gate, int op, hard_netlist *next, int *changed)
{
    set_op(s, &l->base, gate, op);
    if (hard_circuit_prune(next, &l->base, NULL)) return DLCA_ERR;
    *changed = !same_netlist(next, &s->pruned);
    if (!*changed) {
        hard_netlist_free(next);
        return DLCA_OK;
    }
    for (int k = 0; k < s->sets; k++)
        if (hard_cpu_set_netlist(&l->engine[k], next)) return hard_netlist_free(next), DLCA_ERR;
    return DLCA_OK;
}

/* A try: gate `gate` to op `op`, in order of the logit gap to the gate's winner. */
typedef struct {
    int32_t gate, op;
    float gap;
} repair_try;

static int by_gap(const void *a, const void *b)
{
    const repair_try *x = a, *y = b;
    if (x->gap != y->gap) return x->gap < y->gap ? -1 : 1;
    return x->gate != y->gate ? (x->gate < y->gate ? -1 : 1) : (x->op < y->op ? -1 : x->op > y->op);
}

/* The search's state: each gate's op as kept (the kept circuit's cost and wrong bits are
 * search.weight_kept and wrong_kept). */
typedef struct {
    search *s;
    int *op;
    const repair_try *tries;
    ca_repair_result *res;
} walk;

/* Gate g to op `op` in lane l, costed and stopped past `bound`: *ran 0 for a try of no use (a
 * dead gate, or an op that prunes to the kept circuit), else *k its cost and *next (the caller's
 * to keep or free) the pruned circuit the lane's engine ran. The lane's circuit is the kept one
 * again after. */
static int cost_op(const walk *x, lane *l, size_t g, int op, size_t bound, hard_netlist *next, int *ran, try_cost *k)
{
    const search *s = x->s;
    *ran = 0, k->complete = 0;
    if (!can_change(s, g)) return DLCA_OK;
    int changed, rc = try_op(s, l, g, op, next, &changed);
    set_op(s, &l->base, g, x->op[g]);
    if (rc || !changed) return rc;
    *k = search_cost(s, l, bound), *ran = 1;
    return DLCA_OK;
}

/* Try i's cost in lane l, as cost_op. */
static int cost_try(const walk *x, lane *l, size_t i, size_t bound, int *ran, try_cost *k)
{
    hard_netlist next;
    int rc = cost_op(x, l, (size_t)x->tries[i].gate, x->tries[i].op, bound, &next, ran, k);
    if (*ran) hard_netlist_free(&next);
    return rc;
}

/* Try i on the calling thread (lane 0): kept when it lowers the cost (*kept), *k its cost. A kept
 * op goes into every lane's circuit. */
static int consider(walk *x, size_t i, int *kept, try_cost *k)
{
    search *s = x->s;
    size_t g = (size_t)x->tries[i].gate;
    int op = x->tries[i].op, ran;
    hard_netlist next;
    *kept = 0;
    int rc = cost_op(x, &s->lanes[0], g, op, s->weight_kept - 1, &next, &ran, k);
    if (rc || !ran) return rc;
    if (k->cost >= s->weight_kept) {
        hard_netlist_free(&next);
        return DLCA_OK;
    }
    x->op[g] = op, *kept = 1, x->res->changes++;
    for (int j = 0; j < s->n_lanes; j++) set_op(s, &s->lanes[j].base, g, op);
    keep_wrong(s, &s->lanes[0], k);
    if (s->wrong_kept < x->res->wrong_fewest) x->res->wrong_fewest = s->wrong_kept;
    hard_netlist_free(&s->pruned);
    s->pruned = next;
    mark_live(s);
    return DLCA_OK;
}

/* Tries costed at once, one lane a thread, against the same kept circuit: every try's cost is
 * what it would be alone, so the search walks as it would on one thread. */
typedef struct {
    const walk *x;
    size_t *index; /* [n]: the tries */
    try_cost *cost;
    int *ran;
    int n;
    size_t bound;
    atomic_int next;
} batch;

static void batch_job(void *context, int thread, int threads)
{
    (void)threads;
    batch *b = context;
    lane *l = &b->x->s->lanes[thread];
    for (int j; !l->rc && (j = atomic_fetch_add(&b->next, 1)) < b->n;)
        if ((l->rc = cost_try(b->x, l, b->index[j], b->bound, &b->ran[j], &b->cost[j])))
            snprintf(l->error, sizeof l->error, "%s", err_message());
}

static int run_batch(search *s, batch *b)
{
    b->bound = s->weight_kept - 1;
    atomic_store(&b->next, 0);
    if (s->pool) ca_fast_pool_run(s->pool, batch_job, b);
    else batch_job(b, 0, 1);
    for (int j = 0; j < s->n_lanes; j++)
        if (s->lanes[j].rc) return err_set(s->lanes[j].rc, "%s", s->lanes[j].error);
    return DLCA_OK;
}

/* Passes over every try (each gate to each of its 16 ops but the one it has), keeping each that
 * lowers the cost, until none is wrong or the time is up. A pass that keeps nothing ends at a
 * minimum of single changes; then the bits wrong there weigh more (the breakout method of local
 * search for constraint problems), just enough that the mildest try of the pass that fixes some
 * lowers the cost, and that try is kept: the search walks on through changes that fix the
 * heavy bits at the price of others instead of stopping. (A try stopped at the bound tells too
 * little; with none that tells enough, the wrong bits' weights rise by their mean.) Until the first
 * minimum every weight is 1 and the cost the wrong bits. op[g] is each gate's op as kept.
 * On several threads a pass's tries are costed in batches, and the first in order that lowers the
 * cost is kept (tried again on lane 0), the pass going on after it: the walk is the one-thread
 * walk, whatever the threads. A batch is a try a thread after a kept one (the rest of a batch is
 * lost when one is kept) and doubles with each batch that keeps none, up to BATCH_PER_THREAD a
 * thread (a pass that keeps nothing, most of a search, spends little on the threads' meeting). */
enum { BATCH_PER_THREAD = 64 };
static int run_search(search *s, const ca_model *m, int *op, const ca_repair_options *o, ca_repair_result *res,
                      double start_ms)
{
    size_t count = m->gate_count * GATE_OP_COUNT;
    int room = s->n_lanes > 1 ? BATCH_PER_THREAD * s->n_lanes : 1, size = s->n_lanes;
    repair_try *tries = malloc(count * sizeof *tries);
    batch b = {.index = malloc((size_t)room * sizeof(size_t)), .cost = malloc((size_t)room * sizeof(try_cost)),
               .ran = malloc((size_t)room * sizeof(int))};
    if (!tries || !b.index || !b.cost || !b.ran) {
        free(tries), free(b.index), free(b.cost), free(b.ran);
        return err_set(DLCA_ERR_NOMEM, "out of memory for %zu repair tries", count);
    }
    for (size_t g = 0, k = 0; g < m->gate_count; g++)
        for (int q = 0; q < GATE_OP_COUNT; q++) {
            const float *z = m->logits + g * GATE_OP_COUNT;
            tries[k++] = (repair_try){(int32_t)g, q, z[op[g]] - z[q]};
        }
    qsort(tries, count, sizeof *tries, by_gap);
    walk x = {s, op, tries, res};
    b.x = &x;
    double last_note = start_ms, limit_ms = start_ms + o->seconds * 1000.0;
    int out_of_time = 0, rc = DLCA_OK;
    while (!rc && s->wrong_kept > 0 && !out_of_time) {
        int kept_any = 0;
        size_t mildest = count, need = 0; /* the try a minimum keeps, and the weight it needs */
        for (size_t i = 0; i < count && s->wrong_kept > 0 && !rc;) {
            double now = ca_bench_now_ms();
            if (o->interrupt && *o->interrupt) res->interrupted = 1;
            if (now >= limit_ms || res->interrupted) {
                out_of_time = 1;
                break;
            }
            if (o->progress && now - last_note >= 1000.0) {
                o->progress(o->user, s->wrong_kept, res->tries, res->changes, res->minima, (now - start_ms) / 1000.0);
                last_note = now;
            }
            int kept_now = 0;
            b.n = 0;
            for (; i < count && b.n < size; i++)
                if (tries[i].op != op[tries[i].gate]) b.index[b.n++] = i;
            if ((rc = run_batch(s, &b))) break;
            for (int j = 0; j < b.n; j++) {
                const try_cost *k = &b.cost[j];
                res->tries++;
                if (b.ran[j] && k->cost < s->weight_kept) { /* the first that lowers it: kept */
                    int kept;
                    try_cost again;
                    rc = consider(&x, b.index[j], &kept, &again);
                    if (!rc && !kept) rc = err_set(DLCA_ERR, "repair: a try costed lower was not kept (a bug)");
                    kept_any = kept_now = 1, i = b.index[j] + 1;
                    if (!rc && o->progress)
                        o->progress(o->user, s->wrong_kept, res->tries, res->changes, res->minima,
                                    (ca_bench_now_ms() - start_ms) / 1000.0);
                    break;
                }
                if (b.ran[j] && k->complete && k->fixed > 0) {
                    size_t n = (k->broken_weight - k->fixed_weight) / k->fixed + 1; /* broken >= fixed: not kept */
                    if (mildest == count || n < need) mildest = b.index[j], need = n;
                }
            }
            size = kept_now ? s->n_lanes : size * 2 < room ? size * 2 : room;
        }
        if (rc || kept_any || s->wrong_kept == 0 || out_of_time) continue;
        res->minima++; /* a minimum: its wrong bits weigh more */
        if (mildest < count) {
            int capped = raise_weights(s, need), kept;
            try_cost k;
            rc = consider(&x, mildest, &kept, &k);
            if (!rc && !kept && !capped) /* capped weights may not suffice: the next pass raises them */
                rc = err_set(DLCA_ERR, "repair: a minimum's mildest try was not kept (a bug)");
        } else { /* their mean: about doubles them */
            raise_weights(s, s->weight_kept / s->wrong_kept);
        }
    }
    free(tries), free(b.index), free(b.cost), free(b.ran);
    if (rc) return rc;
    res->wrong_after = s->wrong_kept;
    if (s->wrong_kept > 0)
        snprintf(res->why, sizeof res->why,
                 "%s with %zu wrong cell bits on the repair rounds%s (fewest %zu) after %zu tries and %d "
                 "minim%s of single changes",
                 res->interrupted ? "interrupted" : "out of time", s->wrong_kept, s->sets > 1 ? " and the torus" : "", res->wrong_fewest, res->tries, res->minima,
                 res->minima == 1 ? "um" : "a");
    return DLCA_OK;
}

/* Writes the searched ops into the model's logits: each changed gate's new op a logit above its
 * winner now. */
static void apply_ops(ca_model *m, const int *op)
{
    for (size_t g = 0; g < m->gate_count; g++) {
        int was = ca_model_gate_op(m, g);
        float *z = m->logits + g * GATE_OP_COUNT;
        if (op[g] != was) z[op[g]] = z[was] + 1.0f;
    }
}

/* One search on `rounds` rounds (and with `torus` the eval's torus rollout) from the model's
 * circuit now; a circuit right on them goes into the model's logits. *right: it was. */
static int search_rounds(ca_model *m, const double *image, int rounds, int torus, int *op, const ca_repair_options *o,
                         ca_repair_result *res, double start_ms, int first, int *right)
{
    search s;
    if (search_init(&s, m, image, rounds, torus, o->threads > 1 ? o->threads : 1)) return DLCA_ERR;
    for (size_t g = 0; g < m->gate_count; g++) op[g] = ca_model_gate_op(m, g);
    try_cost k = search_cost(&s, &s.lanes[0], (size_t)-2);
    keep_wrong(&s, &s.lanes[0], &k);
    size_t wrong = k.wrong;
    if (first) res->wrong_before = wrong;
    res->wrong_after = res->wrong_fewest = wrong;
    int rc = run_search(&s, m, op, o, res, start_ms);
    search_free(&s);
    *right = !rc && res->wrong_after == 0;
    if (*right) apply_ops(m, op);
    return rc;
}

int ca_repair(ca_model *m, const double *image, const ca_repair_options *o, ca_repair_result *res)
{
    memset(res, 0, sizeof *res);
    if (!(o->seconds > 0.0) || o->rounds < 1 || o->rounds > CA_REPAIR_MAX_ROUNDS || o->threads < 0 ||
        o->threads > CA_REPAIR_MAX_THREADS)
        return err_set(DLCA_ERR, "repair: %g seconds, %d rounds and %d threads (want > 0, 1..%d and 0..%d)", o->seconds,
                       o->rounds, o->threads, CA_REPAIR_MAX_ROUNDS, CA_REPAIR_MAX_THREADS);
    double start_ms = ca_bench_now_ms();
    ca_exact_result exact;
    if (ca_exact_check(m, image, &exact)) return DLCA_ERR;
    if (exact.exact) {
        res->exact = res->already_exact = 1;
        return DLCA_OK;
    }
    int *op = malloc(m->gate_count * sizeof(int)), *original = malloc(m->gate_count * sizeof(int));
    float *saved = malloc(m->gate_count * GATE_OP_COUNT * sizeof(float));
    if (!op || !original || !saved) {
        free(op), free(original), free(saved);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the repair");
    }
    for (size_t g = 0; g < m->gate_count; g++) original[g] = ca_model_gate_op(m, g);
    memcpy(saved, m->logits, m->gate_count * GATE_OP_COUNT * sizeof(float));
    /* A circuit right on the repair rounds and wrong elsewhere is searched again from there, while
     * time is left: on twice the rounds where rounds differ (it drew too few), and with the eval's
     * torus rollout where the preset has one (counted only then: it costs a try 4-5 times the
     * lizard's training rollout). */
    int rc = DLCA_OK, right = 0, more = !ca_exact_one_rollout(&m->config);
    int torus = 0, has_torus = counts_torus(&m->config, image);
    for (int rounds = o->rounds, first = 1; !rc; first = 0) {
        rc = search_rounds(m, image, rounds, torus, op, o, res, start_ms, first, &right);
        if (rc || !right) break;
        rc = ca_exact_check(m, image, &exact);
        res->exact = !rc && exact.exact;
        if (rc || res->exact) break;
        snprintf(res->why, sizeof res->why, "right on %d repair round%s%s; %.140s", rounds, rounds == 1 ? "" : "s",
                 torus ? " and the torus" : "", exact.why);
        int grow = more && rounds * 2 <= CA_REPAIR_MAX_ROUNDS, add_torus = has_torus && !torus;
        if (!(grow || add_torus) || ca_bench_now_ms() >= start_ms + o->seconds * 1000.0 ||
            (o->interrupt && *o->interrupt))
            break;
        if (grow) rounds *= 2;
        torus = has_torus;
    }
    res->changes = 0;
    if (res->exact) res->why[0] = '\0';
    for (size_t g = 0; res->exact && g < m->gate_count; g++) res->changes += ca_model_gate_op(m, g) != original[g];
    if (!res->exact) memcpy(m->logits, saved, m->gate_count * GATE_OP_COUNT * sizeof(float));
    res->seconds = (ca_bench_now_ms() - start_ms) / 1000.0;
    free(op), free(original), free(saved);
    return rc;
}
