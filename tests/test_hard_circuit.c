/* test_hard_circuit: extraction and pruning.
 * - The extracted and the pruned netlist of random models (including one of the gol preset's
 *   shape) give, for every 3x3 neighbourhood (all 512 for C = 1, random ones otherwise), the
 *   centre cell's new state that the float engine's hard step gives.
 * - Random netlists with every op, constants and repeated inputs prune to equivalent ones
 *   (checked on all 512 inputs), with stats and without (which folds only the gates an output
 *   needs) to as many gates, and hand-made cases fold as they should. Pruning with the caller's
 *   marks (the repair's, a try at a time) gives the same netlist with exact marks, the same function
 *   with more, and after one gate's op changes, the old marks and that gate's new reads cover it.
 * - The pruned form has no constant, pass-through or unread gates and no duplicates; the
 *   stats add up; slot programs compute the netlist and never write a slot they read.
 * - The extraction's gate map (what dlca repair rewrites by): changing one model gate's op changes
 *   exactly the netlist gates mapped to it, C of them for a perception gate, one for an update gate. */
#include "check.h"
#include "hard_circuit.h"
#include "hard_fixtures.h"

#include <stdio.h>

/* Bits of up to 64 neighbourhoods as input words: lane i gets neighbourhood hoods[i]
 * ([C][9] bits each, bit ch*9 + j). */
static void hood_words(const hard_netlist *net, const uint8_t *hoods, int lanes, uint64_t *inputs)
{
    memset(inputs, 0, (size_t)net->n_inputs * sizeof(uint64_t));
    for (int i = 0; i < lanes; i++)
        for (int in = 0; in < net->n_inputs; in++) inputs[in] |= (uint64_t)hoods[(size_t)i * (size_t)net->n_inputs + (size_t)in] << i;
}

/* Number of neighbourhoods (of `count`) where `net` disagrees with `want` ([count][C]). */
static int netlist_mismatches(const hard_netlist *net, const uint8_t *hoods, int count, const uint8_t *want)
{
    uint64_t *inputs = malloc((size_t)net->n_inputs * sizeof(uint64_t));
    uint64_t *outputs = malloc((size_t)net->channels * sizeof(uint64_t));
    uint64_t *scratch = malloc(((size_t)net->n_inputs + (size_t)net->n_gates) * sizeof(uint64_t));
    int bad = 0;
    for (int first = 0; first < count; first += 64) {
        int lanes = count - first < 64 ? count - first : 64;
        hood_words(net, hoods + (size_t)first * (size_t)net->n_inputs, lanes, inputs);
        hard_netlist_eval64(net, inputs, outputs, scratch);
        for (int i = 0; i < lanes; i++) {
            int differs = 0;
            for (int ch = 0; ch < net->channels; ch++)
                differs |= (int)(outputs[ch] >> i & 1) != want[(size_t)(first + i) * (size_t)net->channels + (size_t)ch];
            bad += differs;
        }
    }
    free(inputs), free(outputs), free(scratch);
    return bad;
}

/* Properties every pruned netlist has. */
static void check_pruned_form(const hard_netlist *net, const char *name)
{
    size_t nodes = (size_t)net->n_inputs + (size_t)net->n_gates;
    char *read = calloc(nodes, 1), *by_output = calloc(nodes, 1);
    for (int ch = 0; ch < net->channels; ch++) by_output[net->outputs[ch]] = 1;
    int bad_op = 0, duplicates = 0, unread = 0, same_inputs = 0;
    for (int g = 0; g < net->n_gates; g++) {
        const hard_gate *gate = &net->gates[g];
        read[gate->a] = read[gate->b] = 1;
        int op = gate->op, output_only = by_output[net->n_inputs + g];
        int two_input = op != GATE_FALSE && op != GATE_TRUE && op != GATE_A && op != GATE_B && op != GATE_NOT_A &&
                        op != GATE_NOT_B;
        bad_op += !two_input && !(output_only && (op == GATE_FALSE || op == GATE_TRUE || op == GATE_NOT_A));
        same_inputs += two_input && gate->a == gate->b;
        for (int h = 0; h < g && g < 3000; h++)
            duplicates += net->gates[h].op == op && net->gates[h].a == gate->a && net->gates[h].b == gate->b;
    }
    for (int g = 0; g < net->n_gates; g++) unread += !read[net->n_inputs + g] && !by_output[net->n_inputs + g];
    CHECK(bad_op == 0, "%s: %d constant, pass-through or NOT gates left inside the circuit", name, bad_op);
    CHECK(same_inputs == 0, "%s: %d two-input gates read one node twice", name, same_inputs);
    CHECK(duplicates == 0, "%s: %d duplicate gates", name, duplicates);
    CHECK(unread == 0, "%s: %d gates nothing reads", name, unread);
    free(read), free(by_output);
}

static void check_stats(const hard_stats *s, const char *name)
{
    size_t sum = 0;
    for (int op = 0; op < GATE_OP_COUNT; op++) sum += s->after.by_op[op];
    CHECK(sum == s->after.total, "%s: op counts add up to the total", name);
    CHECK(s->constant + s->wire + s->merged + s->dead + s->after.total - s->added == s->before.total,
          "%s: fates add up: %zu + %zu + %zu + %zu + %zu - %zu != %zu", name, s->constant, s->wire, s->merged, s->dead,
          s->after.total, s->added, s->before.total);
    CHECK(s->depth_after <= s->depth_before, "%s: depth %d -> %d", name, s->depth_before, s->depth_after);
}

/* Runs a slot program on 64 lanes. */
static void program_eval64(const hard_program *p, const uint64_t *inputs, uint64_t *outputs, uint64_t *slots)
{
    memcpy(slots, inputs, (size_t)p->n_inputs * sizeof(uint64_t));
    for (int i = 0; i < p->n_instr; i++)
        slots[p->instr[i].dst] = hard_op64((int)p->instr[i].op, slots[p->instr[i].a], slots[p->instr[i].b]);
    for (int ch = 0; ch < p->channels; ch++) outputs[ch] = slots[p->outputs[ch]];
}

static void check_program(const hard_netlist *net, const uint8_t *hoods, int count, const uint8_t *want, const char *name)
{
    hard_program p;
    if (hard_program_build(&p, net)) {
        CHECK(0, "%s: program: %s", name, err_message());
        return;
    }
    int aliased = 0, bad = 0;
    for (int i = 0; i < p.n_instr; i++) aliased += p.instr[i].dst == p.instr[i].a || p.instr[i].dst == p.instr[i].b ||
                                                 p.instr[i].dst < (uint32_t)p.n_inputs;
    uint64_t *inputs = malloc((size_t)net->n_inputs * 8), *outputs = malloc((size_t)net->channels * 8);
    uint64_t *slots = malloc((size_t)p.n_slots * 8);
    for (int first = 0; first < count; first += 64) {
        int lanes = count - first < 64 ? count - first : 64;
        hood_words(net, hoods + (size_t)first * (size_t)net->n_inputs, lanes, inputs);
        program_eval64(&p, inputs, outputs, slots);
        for (int i = 0; i < lanes; i++)
            for (int ch = 0; ch < net->channels; ch++)
                bad += (int)(outputs[ch] >> i & 1) != want[(size_t)(first + i) * (size_t)net->channels + (size_t)ch];
    }
    CHECK(aliased == 0, "%s: %d instructions write an input slot or a slot they read", name, aliased);
    CHECK(bad == 0, "%s: slot program differs on %d bits", name, bad);
    CHECK(p.n_slots <= p.n_inputs + p.n_instr, "%s: %d slots", name, p.n_slots);
    printf("    program: %d slots for %d inputs + %d gates\n", p.n_slots, p.n_inputs, p.n_instr);
    free(inputs), free(outputs), free(slots);
    hard_program_free(&p);
}

/* All 512 neighbourhoods for C = 1, else `count` random ones: [count][C][9] bits. */
static uint8_t *make_hoods(int channels, int *count, rng_state *rng)
{
    if (channels == 1) *count = 512;
    uint8_t *hoods = malloc((size_t)*count * (size_t)channels * 9);
    for (size_t i = 0; i < (size_t)*count * (size_t)channels * 9; i++)
        hoods[i] = channels == 1 ? (uint8_t)(i / 9 >> (i % 9) & 1) : (uint8_t)(rng_next(rng) >> 63);
    return hoods;
}

/* hard_circuit_extract_mapped: the netlist of hard_circuit_extract, and a map under which changing
 * one model gate's op changes exactly the netlist gates mapped to it (once per channel for a
 * perception gate, once for an update gate). */
static void check_gate_map(ca_model *m, const hard_netlist *raw, const char *name)
{
    hard_netlist mapped;
    int32_t *map = NULL;
    if (hard_circuit_extract_mapped(&mapped, m, &map)) {
        CHECK(0, "%s: extract with a map: %s", name, err_message());
        return;
    }
    int same = mapped.n_gates == raw->n_gates;
    for (int i = 0; same && i < raw->n_gates; i++)
        same = mapped.gates[i].op == raw->gates[i].op && mapped.gates[i].a == raw->gates[i].a &&
               mapped.gates[i].b == raw->gates[i].b;
    CHECK(same, "%s: the mapped extraction gives the same netlist", name);
    size_t perception = m->update_gate_base[0], bad = 0;
    for (size_t g = 0; g < m->gate_count; g++) {
        float *z = m->logits + g * GATE_OP_COUNT, saved[GATE_OP_COUNT];
        memcpy(saved, z, sizeof saved);
        int op = (ca_model_gate_op(m, g) + 1) % GATE_OP_COUNT; /* another op than g's */
        z[op] = 1e6f;
        hard_netlist changed;
        if (hard_circuit_extract(&changed, m)) {
            CHECK(0, "%s: extract: %s", name, err_message());
            break;
        }
        int count = 0;
        for (int i = 0; i < changed.n_gates; i++) {
            int differs = changed.gates[i].op != mapped.gates[i].op, mine = map[i] == (int32_t)g;
            bad += differs != mine || (mine && changed.gates[i].op != op);
            count += mine;
        }
        bad += count != (g < perception ? m->config.channels : 1);
        hard_netlist_free(&changed);
        memcpy(z, saved, sizeof saved);
    }
    CHECK(bad == 0, "%s: each model gate's op change shows exactly at its mapped netlist gates (%zu wrong)", name, bad);
    hard_netlist_free(&mapped);
    free(map);
}

static void test_model(ca_model *m, const char *name, uint64_t seed)
{
    rng_state rng;
    rng_init(&rng, seed, 9);
    int count = 300;
    uint8_t *hoods = make_hoods(m->config.channels, &count, &rng);
    uint8_t *want = malloc((size_t)count * (size_t)m->config.channels);
    hard_netlist raw, pruned;
    hard_stats stats;
    if (hard_float_hoods(m, hoods, count, want) || hard_circuit_extract(&raw, m)) {
        CHECK(0, "%s: set-up: %s", name, err_message());
        free(hoods), free(want);
        return;
    }
    stats.model_gates = m->gate_count;
    int rc = hard_circuit_prune(&pruned, &raw, &stats);
    CHECK(rc == DLCA_OK, "%s: prune: %s", name, err_message());
    CHECK(raw.n_gates >= (int)m->gate_count, "%s: extracted %d gates from a model of %zu", name, raw.n_gates, m->gate_count);
    CHECK(hard_netlist_check(&raw) == DLCA_OK, "%s: extracted netlist: %s", name, err_message());
    CHECK(netlist_mismatches(&raw, hoods, count, want) == 0, "%s: extracted circuit differs from the float hard step", name);
    check_gate_map(m, &raw, name);
    if (!rc) {
        CHECK(hard_netlist_check(&pruned) == DLCA_OK, "%s: pruned netlist: %s", name, err_message());
        CHECK(netlist_mismatches(&pruned, hoods, count, want) == 0, "%s: pruned circuit differs from the float hard step",
              name);
        check_pruned_form(&pruned, name);
        check_stats(&stats, name);
        check_program(&pruned, hoods, count, want, name);
        printf("%s: %d -> %d gates (%zu constant, %zu wires, %zu merged, %zu unread), depth %d -> %d\n", name,
               raw.n_gates, pruned.n_gates, stats.constant, stats.wire, stats.merged, stats.dead, stats.depth_before,
               stats.depth_after);
        hard_netlist_free(&pruned);
    }
    hard_netlist_free(&raw);
    free(hoods), free(want);
}

static void test_random_models(void)
{
    uint64_t seed = 40;
    for (int channels = 1; channels <= 3; channels++)
        for (int bits = 1; bits <= 2; bits++)
            for (int mode = 0; mode < 3; mode++) {
                ca_model m;
                char name[96];
                snprintf(name, sizeof name, "C%d %d-bit ops %d", channels, bits, mode);
                if (hard_test_model(&m, channels, 3, bits, CA_BOUNDARY_PERIODIC, 1.0, 4, 4, 1, seed)) {
                    CHECK(0, "%s: %s", name, err_message());
                    continue;
                }
                rng_state rng;
                rng_init(&rng, seed++, 3);
                hard_random_ops(&m, &rng, (hard_ops_mode)mode);
                test_model(&m, name, seed);
                ca_model_free(&m);
            }
}

static void test_gol_shape(void)
{
    ca_config c;
    ca_model m;
    ca_config_preset(&c, "gol");
    if (ca_model_init(&m, &c)) {
        CHECK(0, "gol model: %s", err_message());
        return;
    }
    test_model(&m, "gol init (all pass-through)", 1);
    rng_state rng;
    rng_init(&rng, 77, 1);
    for (int mode = 0; mode < 2; mode++) {
        hard_random_ops(&m, &rng, (hard_ops_mode)mode);
        test_model(&m, mode ? "gol shape, two-input ops" : "gol shape, any ops", 2);
    }
    hard_stats stats;
    hard_netlist net;
    if (!hard_circuit_build(&net, &m, &stats)) {
        CHECK(stats.model_gates == m.gate_count, "build fills model_gates");
        hard_stats_print(&stats, stdout);
        hard_netlist_free(&net);
    }
    ca_model_free(&m);
}

/* A random netlist over 9 inputs: any op, inputs drawn from every earlier node. */
static void random_netlist(hard_netlist *net, int gates, rng_state *rng)
{
    net->channels = 1, net->n_inputs = 9, net->n_gates = gates;
    net->gates = malloc((size_t)gates * sizeof *net->gates);
    net->outputs = malloc(sizeof *net->outputs);
    for (int g = 0; g < gates; g++) {
        int id = 9 + g;
        /* Recent nodes are likelier, so chains are deep; a == b happens on purpose. */
        int span = id < 12 ? id : 12;
        int a = rng_below(rng, 3) ? id - 1 - (int)rng_below(rng, (uint32_t)span) : (int)rng_below(rng, (uint32_t)id);
        int b = rng_below(rng, 8) == 0 ? a : (int)rng_below(rng, (uint32_t)id);
        net->gates[g] = (hard_gate){(int32_t)rng_below(rng, 16), a, b};
    }
    net->outputs[0] = 9 + gates - 1 - (int32_t)rng_below(rng, 3);
}

static int same_netlist(const hard_netlist *a, const hard_netlist *b)
{
    return a->n_gates == b->n_gates && memcmp(a->gates, b->gates, (size_t)a->n_gates * sizeof *a->gates) == 0 &&
           memcmp(a->outputs, b->outputs, (size_t)a->channels * sizeof *a->outputs) == 0;
}

/* hard_circuit_prune_marked as the repair uses it, on `raw` (pruned: `pruned`; `want` its 512
 * outputs): with hard_netlist_needed's marks the very netlist hard_circuit_prune gives; with every
 * node marked the same function in as many gates; and after one needed gate's op changes, the old
 * marks plus hard_netlist_mark_needed of that gate cover the new marks and prune to the changed
 * netlist's function. Returns the failures. */
static int check_marked(hard_netlist *raw, const hard_netlist *pruned, const uint8_t *hoods, const uint8_t *want,
                        rng_state *rng)
{
    size_t nodes = (size_t)raw->n_inputs + (size_t)raw->n_gates;
    uint8_t *needed = malloc(nodes), *exact = malloc(nodes), changed_want[512];
    int failures = 0;
    hard_netlist out;
    hard_netlist_needed(raw, needed);
    failures += hard_circuit_prune_marked(&out, raw, needed) || !same_netlist(&out, pruned) ? 1 : 0;
    hard_netlist_free(&out);
    memset(exact, 1, nodes);
    failures += hard_circuit_prune_marked(&out, raw, exact) || out.n_gates != pruned->n_gates ||
                netlist_mismatches(&out, hoods, 512, want) != 0;
    hard_netlist_free(&out);
    int g = (int)(rng_next(rng) % (uint64_t)raw->n_gates), tries = 0;
    while (!needed[raw->n_inputs + g] && tries++ < raw->n_gates) g = (g + 1) % raw->n_gates;
    if (needed[raw->n_inputs + g]) {
        int old = raw->gates[g].op;
        raw->gates[g].op = (int32_t)((old + 1 + (int)(rng_next(rng) % 15)) % GATE_OP_COUNT);
        uint64_t inputs[9], bits[1], scratch[200];
        for (int first = 0; first < 512; first += 64) {
            hood_words(raw, hoods + first * 9, 64, inputs);
            hard_netlist_eval64(raw, inputs, bits, scratch);
            for (int i = 0; i < 64; i++) changed_want[first + i] = bits[0] >> i & 1;
        }
        hard_netlist_mark_needed(raw, needed, raw->n_inputs + g);
        hard_netlist_needed(raw, exact);
        for (size_t n = 0; n < nodes; n++) failures += exact[n] && !needed[n];
        failures += hard_circuit_prune_marked(&out, raw, needed) || netlist_mismatches(&out, hoods, 512, changed_want);
        hard_netlist_free(&out);
        raw->gates[g].op = old;
    }
    free(needed), free(exact);
    return failures != 0;
}

static void test_random_netlists(void)
{
    rng_state rng;
    rng_init(&rng, 5, 5);
    int count = 512, failures = 0, total_before = 0, total_after = 0;
    uint8_t *hoods = make_hoods(1, &count, &rng), want[512];
    for (int trial = 0; trial < 300; trial++) {
        hard_netlist raw, pruned;
        hard_stats stats = {0};
        random_netlist(&raw, 20 + trial % 60, &rng);
        uint64_t inputs[9], out[1], scratch[200];
        for (int first = 0; first < 512; first += 64) {
            hood_words(&raw, hoods + first * 9, 64, inputs);
            hard_netlist_eval64(&raw, inputs, out, scratch);
            for (int i = 0; i < 64; i++) want[first + i] = out[0] >> i & 1;
        }
        if (hard_circuit_prune(&pruned, &raw, &stats)) {
            CHECK(0, "random netlist %d: %s", trial, err_message());
            hard_netlist_free(&raw);
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "random netlist %d", trial);
        failures += netlist_mismatches(&pruned, hoods, 512, want) != 0;
        hard_netlist quick; /* without stats only the needed gates are folded: the same circuit */
        if (hard_circuit_prune(&quick, &raw, NULL) == DLCA_OK) {
            failures += netlist_mismatches(&quick, hoods, 512, want) != 0 || quick.n_gates != pruned.n_gates;
            hard_netlist_free(&quick);
        } else
            failures++;
        failures += check_marked(&raw, &pruned, hoods, want, &rng);
        check_pruned_form(&pruned, name);
        check_stats(&stats, name);
        total_before += raw.n_gates, total_after += pruned.n_gates;
        hard_netlist_free(&raw);
        hard_netlist_free(&pruned);
    }
    CHECK(failures == 0, "%d of 300 random netlists changed meaning when pruned", failures);
    printf("random netlists: %d gates pruned to %d\n", total_before, total_after);
    free(hoods);
}

/* Builds a one-channel netlist from (op, a, b) triples and prunes it. */
static int prune_triples(hard_netlist *pruned, const int (*triples)[3], int gates, int output, hard_stats *stats)
{
    hard_netlist raw = {1, 9, gates, malloc((size_t)gates * sizeof(hard_gate)), malloc(sizeof(int32_t))};
    for (int g = 0; g < gates; g++) raw.gates[g] = (hard_gate){triples[g][0], triples[g][1], triples[g][2]};
    raw.outputs[0] = output;
    int rc = hard_circuit_prune(pruned, &raw, stats);
    hard_netlist_free(&raw);
    return rc;
}

static void test_hand_cases(void)
{
    hard_netlist p;
    hard_stats s;
    /* 9 = FALSE; 10 = AND(x0, 9) = FALSE; 11 = OR(x1, 10) = x1; 12 = NOT(11); 13 = NOT_A(12) = x1;
     * 14 = XOR(13, x2): one gate survives. */
    const int fold[][3] = {{GATE_FALSE, 0, 0}, {GATE_AND, 0, 9}, {GATE_OR, 1, 10}, {GATE_NOT_A, 11, 5},
                           {GATE_NOT_A, 12, 12}, {GATE_XOR, 13, 2}};
    CHECK(prune_triples(&p, fold, 6, 14, &s) == DLCA_OK && p.n_gates == 1 && p.gates[0].op == GATE_XOR &&
              p.gates[0].a == 1 && p.gates[0].b == 2 && p.outputs[0] == 9,
          "constants, wires and double negation fold to XOR(x1, x2)");
    CHECK(s.constant == 2 && s.wire == 3, "fates: %zu constant, %zu wires", s.constant, s.wire);
    hard_netlist_free(&p);
    /* AND(x3, x4) and AND(x4, x3) are one gate; NAND(x3, x4) is its negation, read by OR. */
    const int merge[][3] = {{GATE_AND, 3, 4}, {GATE_AND, 4, 3}, {GATE_NAND, 3, 4}, {GATE_OR, 9, 10}, {GATE_XOR, 12, 11}};
    CHECK(prune_triples(&p, merge, 5, 13, &s) == DLCA_OK && p.n_gates == 1 && s.merged == 2,
          "commuted and negated duplicates merge: %d gates, %zu merged", p.n_gates, s.merged);
    hard_netlist_free(&p);
    /* Output NOT(x0 AND x1): the gate becomes NAND in place, no extra NOT. */
    const int negated[][3] = {{GATE_AND, 0, 1}, {GATE_NOT_A, 9, 9}};
    CHECK(prune_triples(&p, negated, 2, 10, &s) == DLCA_OK && p.n_gates == 1 && p.gates[0].op == GATE_NAND &&
              s.added == 0,
          "a negated output complements its gate");
    hard_netlist_free(&p);
    /* Output NOT(x4): a NOT gate is added, since an input has no op to complement. */
    const int not_input[][3] = {{GATE_NOT_B, 0, 4}};
    CHECK(prune_triples(&p, not_input, 1, 9, &s) == DLCA_OK && p.n_gates == 1 && p.gates[0].op == GATE_NOT_A &&
              p.gates[0].a == 4 && s.added == 1,
          "a negated input output gets a NOT gate");
    hard_netlist_free(&p);
    /* Output constant TRUE: x XNOR x. */
    const int constant[][3] = {{GATE_XNOR, 2, 2}};
    CHECK(prune_triples(&p, constant, 1, 9, &s) == DLCA_OK && p.n_gates == 1 && p.gates[0].op == GATE_TRUE,
          "a constant output gets a TRUE gate");
    hard_netlist_free(&p);
    /* Pass-through output: a wire to the centre input, no gates. */
    const int wire[][3] = {{GATE_A, 4, 0}, {GATE_B, 3, 9}};
    CHECK(prune_triples(&p, wire, 2, 10, &s) == DLCA_OK && p.n_gates == 0 && p.outputs[0] == 4,
          "pass-through output is a wire to its input");
    hard_netlist_free(&p);
    const int broken[][3] = {{GATE_AND, 0, 9}};
    CHECK(prune_triples(&p, broken, 1, 9, &s) == DLCA_ERR && strstr(err_message(), "gate 0"),
          "a gate reading itself is refused: %s", err_message());
}

int main(void)
{
    test_hand_cases();
    test_random_netlists();
    test_random_models();
    test_gol_shape();
    return test_finish("test_hard_circuit");
}
