/* ca_repair_search.c: the repair search's state, its rollouts and what a try costs
 * (ca_repair_search.h). */
#include "ca_repair_search.h"

#include "ca_eval.h"
#include "ca_exact.h"
#include "ca_task.h"
#include "ca_train.h"
#include "error.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

void repair_search_free(repair_search *s)
{
    for (int i = 0; s->lanes && i < s->n_lanes; i++) {
        for (int k = 0; k < REPAIR_SETS; k++) hard_cpu_free(&s->lanes[i].engine[k]);
        hard_netlist_free(&s->lanes[i].base);
        free(s->lanes[i].wrong_try), free(s->lanes[i].needed);
    }
    for (int k = 0; k < REPAIR_SETS; k++) {
        repair_rollouts *set = &s->set[k];
        free(set->starts), free(set->targets), free(set->fire_masks), free(set->round_id);
    }
    ca_fast_pool_destroy(s->pool);
    hard_netlist_free(&s->pruned);
    free(s->lanes), free(s->live), free(s->weight), free(s->wrong_now);
    free(s->first), free(s->instr);
    memset(s, 0, sizeof *s);
}

/* The shape of a set's engines: chunk_most rounds side by side. */
static ca_shape engine_shape(const repair_rollouts *set)
{
    ca_shape shape = set->shape;
    shape.batch *= set->chunk_most;
    return shape;
}

/* The rounds of the chunk from round r0 (one chunk's end is the next one's start, from 0): 1, 2,
 * 4, ... up to chunk_most, a last chunk smaller than the one before joined to it. */
static int chunk_rounds(const repair_rollouts *set, int r0)
{
    int left = set->rounds - r0, n = r0 + 1 < set->chunk_most ? r0 + 1 : set->chunk_most;
    if (n > left) n = left;
    if (left - n < n && left <= set->chunk_most) n = left;
    return n;
}

/* Lanes 1.. as copies of lane 0 (its circuit and engines), each with its wrong-bit marks. */
static int copy_lanes(repair_search *s, double fire_rate)
{
    const hard_netlist *net = &s->lanes[0].base;
    for (int i = 0; i < s->n_lanes; i++) {
        repair_lane *l = &s->lanes[i];
        l->wrong_try = calloc(s->weights, 1);
        l->needed = malloc((size_t)net->n_inputs + (size_t)net->n_gates);
        if (!l->wrong_try || !l->needed) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's lanes");
        if (i == 0) continue;
        l->base = *net;
        l->base.gates = malloc((size_t)net->n_gates * sizeof *net->gates);
        l->base.outputs = malloc((size_t)net->channels * sizeof *net->outputs);
        if (!l->base.gates || !l->base.outputs) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's lanes");
        memcpy(l->base.gates, net->gates, (size_t)net->n_gates * sizeof *net->gates);
        memcpy(l->base.outputs, net->outputs, (size_t)net->channels * sizeof *net->outputs);
        for (int k = 0; k < s->sets; k++)
            if (hard_cpu_init(&l->engine[k], &s->pruned, engine_shape(&s->set[k]), fire_rate)) return DLCA_ERR;
    }
    return DLCA_OK;
}

/* Groups the netlist gates by model gate (a counting sort of the extraction's map). */
static int index_gates(repair_search *s, const ca_model *m, const int32_t *model_gate, int n)
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

/* Words of a round's engine grids a chunk holds at most: a program pass's (HARD_CPU_BLOCK_MAX). */
enum { CHUNK_WORDS = HARD_CPU_BLOCK_MAX };

/* Set k's engine in lane 0, `packer` (an engine of one round, which packs the rounds and draws
 * their fire masks; the caller frees it) and room for the rounds' packed starts and targets. */
static int open_set(repair_search *s, int k, hard_cpu *packer)
{
    const ca_config *c = s->config;
    repair_rollouts *set = &s->set[k];
    if (hard_cpu_init(packer, &s->pruned, set->shape, c->fire_rate)) return DLCA_ERR;
    set->cells = ca_shape_cells(set->shape);
    set->plane = packer->rows * (size_t)packer->words;
    set->chunk_most = set->plane < CHUNK_WORDS ? (int)(CHUNK_WORDS / set->plane) : 1;
    if (set->chunk_most > set->rounds) set->chunk_most = set->rounds;
    if (hard_cpu_init(&s->lanes[0].engine[k], &s->pruned, engine_shape(set), c->fire_rate)) return DLCA_ERR;
    set->starts = malloc((size_t)set->rounds * (size_t)c->channels * set->plane * sizeof(uint64_t));
    set->targets = malloc((size_t)set->rounds * (size_t)c->loss_channels * set->plane * sizeof(uint64_t));
    if (!set->starts || !set->targets)
        return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's %d rounds", set->rounds);
    if (c->fire_rate >= 1.0) return DLCA_OK;
    set->fire_words = (size_t)set->last_step * set->plane;
    set->fire_masks = malloc((size_t)set->rounds * set->fire_words * sizeof(uint64_t));
    uint64_t *drawn = malloc(set->fire_words * sizeof(uint64_t));
    if (!set->fire_masks || !drawn) {
        free(drawn);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's %d rounds' fire masks", set->rounds);
    }
    for (int r0 = 0, n; r0 < set->rounds; r0 += n) {
        n = chunk_rounds(set, r0);
        uint64_t *chunk = set->fire_masks + (size_t)r0 * set->fire_words;
        for (int j = 0; j < n; j++) {
            hard_cpu_set_fire_stream(packer, rng_fire_stream(c->seed, set->round_id[r0 + j]));
            hard_cpu_draw_fire_masks(packer, 0, set->last_step, drawn);
            for (int t = 0; t < set->last_step; t++)
                memcpy(chunk + ((size_t)t * (size_t)n + (size_t)j) * set->plane, drawn + (size_t)t * set->plane,
                       set->plane * sizeof(uint64_t));
        }
    }
    free(drawn);
    return DLCA_OK;
}

/* Round r of set k packed by `packer` from a double grid and its target ([loss channels][cells]);
 * `scratch` holds a grid. */
static void pack_round(repair_search *s, int k, int r, hard_cpu *packer, const double *start, const double *target,
                       double *scratch)
{
    const ca_config *c = s->config;
    repair_rollouts *set = &s->set[k];
    size_t grid = (size_t)c->channels * set->cells, loss = (size_t)c->loss_channels * set->cells;
    memcpy(scratch, start, grid * sizeof(double));
    ca_task_binarize(scratch, grid);
    hard_cpu_pack(packer, scratch);
    memcpy(set->starts + (size_t)r * (size_t)c->channels * set->plane, packer->grid,
           (size_t)c->channels * set->plane * sizeof(uint64_t));
    memcpy(scratch, target, loss * sizeof(double)); /* as a grid's first channels */
    hard_cpu_pack(packer, scratch);
    memcpy(set->targets + (size_t)r * (size_t)c->loss_channels * set->plane, packer->grid,
           (size_t)c->loss_channels * set->plane * sizeof(uint64_t));
}

/* The bits a round of `cells` counts: every loss channel's cells at each step first..last. */
static size_t round_bits(const ca_config *c, int first, int last, size_t cells)
{
    return (size_t)(last - first + 1) * (size_t)c->loss_channels * cells;
}

/* Set k's counted bits follow the sets before it. */
static void count_set(repair_search *s, int k)
{
    repair_rollouts *set = &s->set[k];
    set->at = s->weights;
    s->weights += (size_t)set->rounds * round_bits(s->config, set->first_step, set->last_step, set->cells);
}

/* The last step a training round counts: T, or 10T for a model trained to hold its pattern
 * (checked to 10T: ca_eval_persistence). */
static int training_last_step(const ca_config *c)
{
    return ca_eval_trained_persistence(c) & CA_EVAL_PERSISTS ? 10 * c->steps : c->steps;
}

size_t repair_round_bits(const ca_config *c)
{
    ca_shape shape = {c->batch, c->height, c->width, c->boundary};
    return round_bits(c, c->steps, training_last_step(c), ca_shape_cells(shape));
}

/* A set's round ids: a copy of the n in `id`. */
static int set_rounds(repair_rollouts *set, const uint64_t *id, int n)
{
    set->rounds = n;
    set->round_id = malloc((size_t)n * sizeof(uint64_t));
    if (!set->round_id) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's %d rounds", n);
    memcpy(set->round_id, id, (size_t)n * sizeof(uint64_t));
    return DLCA_OK;
}

/* Set 0: the training rounds round_id[0..rounds) (the first alone where every round is the same
 * rollout), drawn and packed one at a time. */
static int training_set(repair_search *s, const double *image, const uint64_t *round_id, int rounds)
{
    const ca_config *c = s->config;
    int same = ca_exact_one_rollout(c);
    repair_rollouts *set = &s->set[s->sets++];
    if (set_rounds(set, round_id, same ? 1 : rounds)) return DLCA_ERR;
    set->first_step = c->steps, set->last_step = training_last_step(c);
    set->shape = (ca_shape){same ? 1 : c->batch, c->height, c->width, c->boundary};
    hard_cpu packer;
    if (open_set(s, s->sets - 1, &packer)) return hard_cpu_free(&packer), DLCA_ERR;
    size_t grid = (size_t)c->channels * set->cells;
    double *start = malloc(grid * sizeof(double)), *scratch = malloc(grid * sizeof(double));
    double *target = malloc((size_t)c->loss_channels * set->cells * sizeof(double));
    int rc = start && target && scratch ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for the repair's rounds");
    for (int r = 0; r < set->rounds && !rc; r++) {
        rc = ca_round_inputs(c, set->shape, set->round_id[r], image, start, target);
        if (!rc) pack_round(s, s->sets - 1, r, &packer, start, target, scratch);
    }
    if (!rc) count_set(s, s->sets - 1);
    free(start), free(target), free(scratch);
    hard_cpu_free(&packer);
    return rc;
}

int repair_counts_wide(const ca_config *c, const double *image)
{
    return ca_eval_has_wide(c, image) && c->fire_rate >= 1.0;
}

/* Set 1: the eval's wider grid (ca_eval_wide; repair_counts_wide holds), counted at its one step. */
static int wide_set(repair_search *s, const double *image)
{
    ca_eval_rollout wide;
    if (ca_eval_wide(s->config, image, &wide)) return DLCA_ERR;
    repair_rollouts *set = &s->set[s->sets++];
    const uint64_t only = 0;
    set->shape = wide.shape, set->first_step = set->last_step = wide.steps;
    hard_cpu packer = {0};
    int rc = set_rounds(set, &only, 1);
    if (!rc) rc = open_set(s, s->sets - 1, &packer);
    double *scratch = rc ? NULL : malloc((size_t)s->config->channels * set->cells * sizeof(double));
    if (!rc && !scratch) rc = err_set(DLCA_ERR_NOMEM, "out of memory for the repair's wider grid");
    if (!rc) pack_round(s, s->sets - 1, 0, &packer, wide.start, wide.target, scratch), count_set(s, s->sets - 1);
    free(scratch);
    hard_cpu_free(&packer);
    ca_eval_rollout_free(&wide);
    return rc;
}

int repair_search_init(repair_search *s, const ca_model *m, const double *image, const uint64_t *round_id, int rounds,
                       int wide, int threads)
{
    const ca_config *c = &m->config;
    memset(s, 0, sizeof *s);
    s->config = c;
    s->n_lanes = threads;
    s->lanes = calloc((size_t)threads, sizeof *s->lanes);
    if (!s->lanes) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair's %d threads", threads);
    repair_lane *l0 = &s->lanes[0];
    int32_t *model_gate = NULL;
    if (hard_circuit_extract_mapped(&l0->base, m, &model_gate)) return repair_search_free(s), DLCA_ERR;
    int rc = hard_circuit_prune(&s->pruned, &l0->base, NULL);
    if (!rc) rc = index_gates(s, m, model_gate, l0->base.n_gates);
    free(model_gate);
    if (!rc) rc = training_set(s, image, round_id, rounds);
    if (!rc && wide) rc = wide_set(s, image);
    if (rc) return repair_search_free(s), DLCA_ERR;
    s->live = malloc((size_t)(l0->base.n_inputs + l0->base.n_gates));
    s->weight = malloc(s->weights * sizeof *s->weight);
    s->wrong_now = calloc(s->weights, 1);
    if (!s->live || !s->weight || !s->wrong_now)
        return repair_search_free(s), err_set(DLCA_ERR_NOMEM, "out of memory for the repair's %zu counted bits", s->weights);
    rc = copy_lanes(s, c->fire_rate);
    if (!rc && threads > 1) rc = ca_fast_pool_create(&s->pool, threads);
    if (rc) return repair_search_free(s), DLCA_ERR;
    for (size_t i = 0; i < s->weights; i++) s->weight[i] = 1;
    hard_netlist_needed(&l0->base, s->live);
    return DLCA_OK;
}


/* A try's cost is the one a walk over its rounds one at a time, checking the bound after every
 * step counted but the last and after every round but the last, would give: such a walk stops at
 * its first check past the bound, which here is where the chunks' checks, at the same steps and at
 * the chunks' ends, stop too, or at the end when all but the last round's last step pass it (the
 * walk's last check). Complete costs are the walk's. */
repair_cost repair_search_cost(const repair_search *s, repair_lane *l, size_t bound)
{
    const ca_config *c = s->config;
    size_t still = 0, still_weight = 0, tail = 0; /* tail: the last round's last step's weight */
    repair_cost k = {0};
    const repair_cost stopped = {bound + 1, 0, 0, 0, 0, 0};
    memset(l->wrong_try, 0, s->weights);
    for (int set_index = 0; set_index < s->sets; set_index++) {
        const repair_rollouts *set = &s->set[set_index];
        hard_cpu *e = &l->engine[set_index];
        size_t target = (size_t)c->loss_channels * set->cells, plane = set->plane;
        size_t full = e->rows * (size_t)e->words, steps = (size_t)(set->last_step - set->first_step + 1);
        for (int r0 = 0, n; r0 < set->rounds; r0 += n) {
            n = chunk_rounds(set, r0);
            int last = set_index + 1 == s->sets && r0 + n == set->rounds;
            hard_cpu_use_batch(e, n * set->shape.batch);
            for (int ch = 0; ch < c->channels; ch++)
                for (int j = 0; j < n; j++)
                    memcpy(e->grid + (size_t)ch * full + (size_t)j * plane,
                           set->starts + ((size_t)(r0 + j) * (size_t)c->channels + (size_t)ch) * plane,
                           plane * sizeof(uint64_t));
            hard_cpu_set_fire_stream(e, rng_fire_stream(c->seed, set->round_id[r0]));
            if (set->fire_masks)
                hard_cpu_use_fire_masks(e, set->fire_masks + (size_t)r0 * set->fire_words, 0, set->last_step);
            hard_cpu_run(e, 0, set->first_step);
            for (int t = set->first_step;; t++) {
                for (int ch = 0; ch < c->loss_channels; ch++)
                    for (int j = 0; j < n; j++) {
                        size_t round = (size_t)(r0 + j);
                        const uint64_t *grid = e->grid + (size_t)ch * full + (size_t)j * plane;
                        const uint64_t *goal = set->targets + (round * (size_t)c->loss_channels + (size_t)ch) * plane;
                        size_t first = set->at + (round * steps + (size_t)(t - set->first_step)) * target + (size_t)ch * set->cells;
                        size_t skip = (size_t)j * set->cells; /* hard_cpu_cell's cells of the rounds before */
                        int in_tail = last && j == n - 1 && t == set->last_step;
                        for (size_t at = 0; at < plane; at++)
                            for (uint64_t diff = grid[at] ^ goal[at]; diff; diff &= diff - 1) {
                                size_t i = first + hard_cpu_cell(e, (size_t)j * plane + at, __builtin_ctzll(diff)) - skip;
                                size_t w = s->weight[i];
                                k.cost += w, k.wrong++, l->wrong_try[i] = 1;
                                if (s->wrong_now[i]) still++, still_weight += w;
                                else k.broken_weight += w;
                                if (in_tail) tail += w;
                            }
                    }
                if (t == set->last_step) break;
                if (k.cost > bound) return stopped;
                hard_cpu_step(e, (uint32_t)t);
            }
            if (k.cost > bound && !last) return stopped;
        }
    }
    if (k.cost - tail > bound) return stopped;
    k.fixed = s->wrong_kept - still, k.fixed_weight = s->weight_kept - still_weight, k.complete = 1;
    return k;
}

void repair_search_wrong_rounds(const repair_search *s, const repair_lane *l, uint8_t *wrong)
{
    const repair_rollouts *set = &s->set[0];
    size_t bits = round_bits(s->config, set->first_step, set->last_step, set->cells);
    for (int r = 0; r < set->rounds; r++) {
        const uint8_t *at = l->wrong_try + set->at + (size_t)r * bits;
        wrong[r] = 0;
        for (size_t i = 0; i < bits && !wrong[r]; i++) wrong[r] = at[i];
    }
}

void repair_keep_wrong(repair_search *s, repair_lane *l, const repair_cost *k)
{
    uint8_t *swap = s->wrong_now;
    s->wrong_now = l->wrong_try, l->wrong_try = swap;
    s->wrong_kept = k->wrong, s->weight_kept = k->cost;
}

/* At a minimum of single changes: each kept wrong bit weighs `raise` more, up to CA_REPAIR_WEIGHT_MAX
 * (a long search must not wrap a weight round to a small one). Returns whether one stopped there. */
#define CA_REPAIR_WEIGHT_MAX (UINT32_MAX / 2)
int repair_raise_weights(repair_search *s, size_t raise)
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
