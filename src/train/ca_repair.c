/* ca_repair.c: local search for an exact circuit near a trained one (ca_repair.h). */
#include "ca_repair.h"

#include "ca_repair_search.h"

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

/* Whether model gate `gate` can change a rollout: some netlist gate of it is live. */
static int can_change(const repair_search *s, size_t gate)
{
    for (int32_t i = s->first[gate]; i < s->first[gate + 1]; i++)
        if (s->live[s->lanes[0].base.n_inputs + s->instr[i]]) return 1;
    return 0;
}

static void set_op(const repair_search *s, hard_netlist *base, size_t gate, int op)
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
static int try_op(const repair_search *s, repair_lane *l, size_t gate, int op, hard_netlist *next, int *changed)
{
    set_op(s, &l->base, gate, op);
    /* What the try needs: the kept circuit's needed nodes (s->live) and what the gate's needed
     * instances read now, found from them alone instead of from the outputs over the whole
     * extracted circuit (a superset where the new op reads less: the same function, pruned). */
    const hard_netlist *base = &l->base;
    memcpy(l->needed, s->live, (size_t)base->n_inputs + (size_t)base->n_gates);
    for (int32_t i = s->first[gate]; i < s->first[gate + 1]; i++) {
        int32_t node = base->n_inputs + s->instr[i];
        if (s->live[node]) hard_netlist_mark_needed(base, l->needed, node);
    }
    if (hard_circuit_prune_marked(next, base, l->needed)) return DLCA_ERR;
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
    repair_search *s;
    int *op;
    const repair_try *tries;
    ca_repair_result *res;
} walk;

/* Gate g to op `op` in lane l, costed and stopped past `bound`: *ran 0 for a try of no use (a
 * dead gate, or an op that prunes to the kept circuit), else *k its cost and *next (the caller's
 * to keep or free) the pruned circuit the lane's engine ran. The lane's circuit is the kept one
 * again after. */
static int cost_op(const walk *x, repair_lane *l, size_t g, int op, size_t bound, hard_netlist *next, int *ran, repair_cost *k)
{
    const repair_search *s = x->s;
    *ran = 0, k->complete = 0;
    if (!can_change(s, g)) return DLCA_OK;
    int changed, rc = try_op(s, l, g, op, next, &changed);
    set_op(s, &l->base, g, x->op[g]);
    if (rc || !changed) return rc;
    *k = repair_search_cost(s, l, bound), *ran = 1;
    return DLCA_OK;
}

/* Try i's cost in lane l, as cost_op. */
static int cost_try(const walk *x, repair_lane *l, size_t i, size_t bound, int *ran, repair_cost *k)
{
    hard_netlist next;
    int rc = cost_op(x, l, (size_t)x->tries[i].gate, x->tries[i].op, bound, &next, ran, k);
    if (*ran) hard_netlist_free(&next);
    return rc;
}

/* Try i on the calling thread (lane 0): kept when it lowers the cost (*kept), *k its cost. A kept
 * op goes into every lane's circuit. */
static int consider(walk *x, size_t i, int *kept, repair_cost *k)
{
    repair_search *s = x->s;
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
    repair_keep_wrong(s, &s->lanes[0], k);
    if (s->wrong_kept < x->res->wrong_fewest) x->res->wrong_fewest = s->wrong_kept;
    hard_netlist_free(&s->pruned);
    s->pruned = next;
    hard_netlist_needed(&s->lanes[0].base, s->live);
    return DLCA_OK;
}

/* Tries costed at once, one lane a thread, against the same kept circuit: every try's cost is
 * what it would be alone, so the search walks as it would on one thread. */
typedef struct {
    const walk *x;
    size_t *index; /* [n]: the tries */
    repair_cost *cost;
    int *ran;
    int n;
    size_t bound;
    atomic_int next;
} batch;

static void batch_job(void *context, int thread, int threads)
{
    (void)threads;
    batch *b = context;
    repair_lane *l = &b->x->s->lanes[thread];
    for (int j; !l->rc && (j = atomic_fetch_add(&b->next, 1)) < b->n;)
        if ((l->rc = cost_try(b->x, l, b->index[j], b->bound, &b->ran[j], &b->cost[j])))
            snprintf(l->error, sizeof l->error, "%s", err_message());
}

static int run_batch(repair_search *s, batch *b)
{
    b->bound = s->weight_kept - 1;
    atomic_store(&b->next, 0);
    if (s->pool) ca_fast_pool_run(s->pool, batch_job, b);
    else batch_job(b, 0, 1);
    for (int j = 0; j < s->n_lanes; j++)
        if (s->lanes[j].rc) return err_set(s->lanes[j].rc, "%s", s->lanes[j].error);
    return DLCA_OK;
}

/* Whether the search is to end now: an interrupt or a cancel (noted in the result). */
static int stopped(const ca_repair_options *o, ca_repair_result *res)
{
    if (o->interrupt && *o->interrupt) res->interrupted = 1;
    if (o->cancel && atomic_load(o->cancel)) res->cancelled = 1;
    return res->interrupted || res->cancelled;
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
static int run_search(repair_search *s, const ca_model *m, int *op, const ca_repair_options *o, ca_repair_result *res,
                      double start_ms)
{
    size_t count = m->gate_count * GATE_OP_COUNT;
    int room = s->n_lanes > 1 ? BATCH_PER_THREAD * s->n_lanes : 1, size = s->n_lanes;
    repair_try *tries = malloc(count * sizeof *tries);
    batch b = {.index = malloc((size_t)room * sizeof(size_t)), .cost = malloc((size_t)room * sizeof(repair_cost)),
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
            if (now >= limit_ms || stopped(o, res)) {
                out_of_time = 1;
                break;
            }
            if (o->progress && now - last_note >= 1000.0) {
                o->progress(o->user, s->wrong_kept, res->tries, res->changes, res->minima, (now - start_ms) / 1000.0);
                last_note = now;
            }
            if (o->max_tries && res->tries >= o->max_tries) {
                res->out_of_tries = out_of_time = 1;
                break;
            }
            int kept_now = 0;
            b.n = 0;
            for (; i < count && b.n < size; i++)
                if (tries[i].op != op[tries[i].gate]) b.index[b.n++] = i;
            if ((rc = run_batch(s, &b))) break;
            for (int j = 0; j < b.n; j++) {
                const repair_cost *k = &b.cost[j];
                if (o->max_tries && res->tries >= o->max_tries) break; /* counted in order: as on one thread */
                res->tries++;
                if (b.ran[j] && k->cost < s->weight_kept) { /* the first that lowers it: kept */
                    int kept;
                    repair_cost again;
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
            int capped = repair_raise_weights(s, need), kept;
            repair_cost k;
            rc = consider(&x, mildest, &kept, &k);
            if (!rc && !kept && !capped) /* capped weights may not suffice: the next pass raises them */
                rc = err_set(DLCA_ERR, "repair: a minimum's mildest try was not kept (a bug)");
        } else { /* their mean: about doubles them */
            repair_raise_weights(s, s->weight_kept / s->wrong_kept);
        }
    }
    free(tries), free(b.index), free(b.cost), free(b.ran);
    if (rc) return rc;
    res->wrong_after = s->wrong_kept;
    if (s->wrong_kept > 0)
        snprintf(res->why, sizeof res->why,
                 "%s with %zu wrong cell bits on the repair rounds%s (fewest %zu) after %zu tries and %d "
                 "minim%s of single changes",
                 res->interrupted    ? "interrupted"
                 : res->cancelled    ? "stopped (an exact circuit was found elsewhere)"
                 : res->out_of_tries ? "out of tries"
                                     : "out of time",
                 s->wrong_kept, s->sets > 1 ? " and the wider grid" : "", res->wrong_fewest, res->tries, res->minima,
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

/* One search on `rounds` rounds (and with `wide` the eval's wider grid) from the model's circuit
 * now; a circuit right on them goes into the model's logits. *right: it was. */
static int search_rounds(ca_model *m, const double *image, const uint64_t *round_id, int rounds, int wide, int *op,
                         const ca_repair_options *o, ca_repair_result *res, double start_ms, int first, int *right)
{
    repair_search s;
    if (repair_search_init(&s, m, image, round_id, rounds, wide, o->threads > 1 ? o->threads : 1)) return DLCA_ERR;
    for (size_t g = 0; g < m->gate_count; g++) op[g] = ca_model_gate_op(m, g);
    repair_cost k = repair_search_cost(&s, &s.lanes[0], (size_t)-2);
    repair_keep_wrong(&s, &s.lanes[0], &k);
    size_t wrong = k.wrong;
    if (first) res->wrong_before = wrong;
    res->rounds = s.set[0].rounds;
    res->wrong_after = res->wrong_fewest = wrong;
    int rc = run_search(&s, m, op, o, res, start_ms);
    repair_search_free(&s);
    *right = !rc && res->wrong_after == 0;
    if (*right) apply_ops(m, op);
    return rc;
}

/* The model's circuit, right on the rounds searched and wrong on an unseen one, is run on fresh
 * rounds from *next_id on, PROBE_ROUNDS at a time until some are wrong or PROBE_MOST ran: those it
 * gets wrong join round_id, the rounds at most doubling (and at most `most`). A circuit wrong on
 * none gets the next fresh rounds, as many as there are. Counterexamples rather than more rounds:
 * a circuit right on 64 rounds may be wrong on one in a hundred, and the rounds it is right on
 * would only slow each try (docs/exact-circuits.md, section 20). A probe's counted bits stay within
 * CA_REPAIR_GROW_BITS, as a search's do, and probing ends at limit_ms. */
enum { PROBE_ROUNDS = 256, PROBE_MOST = 4096 };
static int probe_rounds(ca_model *m, const double *image, uint64_t *round_id, int *rounds, int most, uint64_t *next_id,
                        double limit_ms)
{
    uint64_t id[PROBE_ROUNDS];
    uint8_t wrong[PROBE_ROUNDS];
    size_t fit = CA_REPAIR_GROW_BITS / repair_round_bits(&m->config);
    int n = fit < 1 ? 1 : fit < PROBE_ROUNDS ? (int)fit : PROBE_ROUNDS;
    int cap = *rounds < most - *rounds ? 2 * *rounds : most, added = 0;
    for (int probed = 0; probed < PROBE_MOST && !added && ca_bench_now_ms() < limit_ms; probed += n) {
        for (int r = 0; r < n; r++) id[r] = (*next_id)++;
        repair_search s;
        if (repair_search_init(&s, m, image, id, n, 0, 1)) return DLCA_ERR;
        repair_search_cost(&s, &s.lanes[0], (size_t)-2);
        repair_search_wrong_rounds(&s, &s.lanes[0], wrong);
        repair_search_free(&s);
        for (int r = 0; r < n && *rounds < cap; r++)
            if (wrong[r]) round_id[(*rounds)++] = id[r], added++;
    }
    while (!added && *rounds < cap) round_id[(*rounds)++] = (*next_id)++;
    return DLCA_OK;
}

int ca_repair_most_rounds(const ca_config *c)
{
    if (ca_exact_one_rollout(c)) return 1;
    size_t bits = repair_round_bits(c);
    int most = CA_REPAIR_MAX_ROUNDS;
    while (most * 2 <= CA_REPAIR_GROW_ROUNDS && (size_t)most * 2 * bits <= CA_REPAIR_GROW_BITS) most *= 2;
    return most;
}

int ca_repair(ca_model *m, const double *image, const ca_repair_options *o, ca_repair_result *res)
{
    memset(res, 0, sizeof *res);
    if (!(o->seconds > 0.0) || o->rounds < 1 || o->rounds > CA_REPAIR_MAX_ROUNDS || o->threads < 0 ||
        o->threads > CA_REPAIR_MAX_THREADS)
        return err_set(DLCA_ERR, "repair: %g seconds, %d rounds and %d threads (want > 0, 1..%d and 0..%d)", o->seconds,
                       o->rounds, o->threads, CA_REPAIR_MAX_ROUNDS, CA_REPAIR_MAX_THREADS);
    if (o->most_rounds && (o->most_rounds < o->rounds || o->most_rounds > CA_REPAIR_GROW_ROUNDS))
        return err_set(DLCA_ERR, "repair: at most %d rounds, starting from %d (want %d..%d, or 0)", o->most_rounds,
                       o->rounds, o->rounds, CA_REPAIR_GROW_ROUNDS);
    int most = o->most_rounds ? o->most_rounds : ca_repair_most_rounds(&m->config);
    double start_ms = ca_bench_now_ms();
    ca_exact_result exact;
    if (ca_exact_check(m, image, &exact)) return DLCA_ERR;
    if (exact.exact) {
        res->exact = res->already_exact = 1;
        return DLCA_OK;
    }
    int *op = malloc(m->gate_count * sizeof(int)), *original = malloc(m->gate_count * sizeof(int));
    float *saved = malloc(m->gate_count * GATE_OP_COUNT * sizeof(float));
    uint64_t *round_id = malloc((size_t)most * sizeof(uint64_t)), next_id = CA_REPAIR_FIRST_ROUND;
    if (!op || !original || !saved || !round_id) {
        free(op), free(original), free(saved), free(round_id);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the repair");
    }
    for (size_t g = 0; g < m->gate_count; g++) original[g] = ca_model_gate_op(m, g);
    memcpy(saved, m->logits, m->gate_count * GATE_OP_COUNT * sizeof(float));
    /* A circuit right on the repair rounds and wrong elsewhere is searched again from there, while
     * time is left: failing one of eval's checks, counting the eval's wider grid too where the
     * preset has one and the search does not yet (counted only then: it costs a try 4-5 times the
     * lizard's training rollout, and 4 times 8 checkerboard rounds); else, where rounds differ, on
     * the rounds and the fresh ones it gets wrong (probe_rounds; where a check fails that no search
     * counts, such as the async checkerboard's 30x30 grid, a search on more rounds walks on and can
     * pass it too). */
    int rc = DLCA_OK, right = 0, more = !ca_exact_one_rollout(&m->config);
    int wide = 0, has_wide = repair_counts_wide(&m->config, image);
    int rounds = o->rounds < most ? o->rounds : most;
    for (int r = 0; r < rounds; r++) round_id[r] = next_id++;
    for (int first = 1; !rc; first = 0) {
        rc = search_rounds(m, image, round_id, rounds, wide, op, o, res, start_ms, first, &right);
        if (rc || !right) break;
        rc = ca_exact_check(m, image, &exact);
        res->exact = !rc && exact.exact;
        if (rc || res->exact) break;
        snprintf(res->why, sizeof res->why, "right on %d repair round%s%s; %.140s", rounds, rounds == 1 ? "" : "s",
                 wide ? " and the wider grid" : "", exact.why);
        int add_wide = has_wide && !wide && exact.eval_check;
        int grow = more && !add_wide && rounds < most;
        if (!(grow || add_wide) || ca_bench_now_ms() >= start_ms + o->seconds * 1000.0 || stopped(o, res) ||
            (o->max_tries && res->tries >= o->max_tries))
            break;
        if (grow) rc = probe_rounds(m, image, round_id, &rounds, most, &next_id, start_ms + o->seconds * 1000.0);
        wide = wide || add_wide;
    }
    res->changes = 0;
    if (res->exact) res->why[0] = '\0';
    for (size_t g = 0; res->exact && g < m->gate_count; g++) res->changes += ca_model_gate_op(m, g) != original[g];
    if (!res->exact) memcpy(m->logits, saved, m->gate_count * GATE_OP_COUNT * sizeof(float));
    res->seconds = (ca_bench_now_ms() - start_ms) / 1000.0;
    free(op), free(original), free(saved), free(round_id);
    return rc;
}
