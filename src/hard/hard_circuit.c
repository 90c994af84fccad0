/* hard_circuit.c: extracting the argmax circuit of a model, pruning it, and assigning slots.
 *
 * Pruning works on references ref = node * 2 + negated over an internal node space where node 0
 * is the constant FALSE (so ref 0 = FALSE, ref 1 = TRUE), nodes 1 .. 9C are the inputs and new
 * gates follow. A gate's 4-bit truth table (the gate_op index) absorbs negated inputs, is
 * reduced when an input is constant, both inputs are the same or it ignores one, and is put in
 * a canonical form (a < b, op(0,0) = 0 with the output negation moved into the reference) so
 * that identical gates hash to the same node. */
#include "hard_circuit.h"

#include "error.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char *const hard_neighbour_names[HARD_NEIGHBOURS] = {"NW", "N", "NE", "W", "C", "E", "SW", "S", "SE"};

/* ---- netlists ---- */

static int netlist_alloc(hard_netlist *net, int channels, size_t n_gates)
{
    memset(net, 0, sizeof *net);
    if (channels < 1 || channels > INT32_MAX / (2 * HARD_NEIGHBOURS) ||
        n_gates > (size_t)(INT32_MAX - HARD_NEIGHBOURS * channels))
        return err_set(DLCA_ERR, "circuit too large: %d channels, %zu gates", channels, n_gates);
    net->channels = channels;
    net->n_inputs = HARD_NEIGHBOURS * channels;
    net->n_gates = (int)n_gates;
    net->gates = malloc((n_gates ? n_gates : 1) * sizeof *net->gates);
    net->outputs = malloc((size_t)channels * sizeof *net->outputs);
    if (!net->gates || !net->outputs) {
        hard_netlist_free(net);
        return err_set(DLCA_ERR_NOMEM, "out of memory for a circuit of %zu gates", n_gates);
    }
    return DLCA_OK;
}

void hard_netlist_free(hard_netlist *net)
{
    free(net->gates);
    free(net->outputs);
    memset(net, 0, sizeof *net);
}

int hard_netlist_check(const hard_netlist *net)
{
    if (net->channels < 1 || net->n_inputs != HARD_NEIGHBOURS * net->channels || net->n_gates < 0)
        return err_set(DLCA_ERR, "circuit: %d channels with %d inputs", net->channels, net->n_inputs);
    for (int g = 0; g < net->n_gates; g++) {
        const hard_gate *gate = &net->gates[g];
        int id = net->n_inputs + g;
        if (gate->op < 0 || gate->op >= GATE_OP_COUNT)
            return err_set(DLCA_ERR, "circuit: gate %d has op %d", g, (int)gate->op);
        if (gate->a < 0 || gate->a >= id || gate->b < 0 || gate->b >= id)
            return err_set(DLCA_ERR, "circuit: gate %d (node %d) reads nodes %d, %d (must be 0..%d)", g, id,
                           (int)gate->a, (int)gate->b, id - 1);
    }
    for (int ch = 0; ch < net->channels; ch++)
        if (net->outputs[ch] < 0 || net->outputs[ch] >= net->n_inputs + net->n_gates)
            return err_set(DLCA_ERR, "circuit: output %d names node %d of %d", ch, (int)net->outputs[ch],
                           net->n_inputs + net->n_gates);
    return DLCA_OK;
}

void hard_netlist_count(const hard_netlist *net, hard_op_counts *counts)
{
    memset(counts, 0, sizeof *counts);
    for (int g = 0; g < net->n_gates; g++) counts->by_op[net->gates[g].op]++;
    counts->total = (size_t)net->n_gates;
}

int hard_netlist_depth(const hard_netlist *net)
{
    int *depth = calloc((size_t)net->n_inputs + (size_t)net->n_gates, sizeof(int));
    if (!depth) return -1;
    for (int g = 0; g < net->n_gates; g++) {
        int a = depth[net->gates[g].a], b = depth[net->gates[g].b];
        depth[net->n_inputs + g] = 1 + (a > b ? a : b);
    }
    int deepest = 0;
    for (int ch = 0; ch < net->channels; ch++)
        if (depth[net->outputs[ch]] > deepest) deepest = depth[net->outputs[ch]];
    free(depth);
    return deepest;
}

void hard_netlist_eval64(const hard_netlist *net, const uint64_t *inputs, uint64_t *outputs, uint64_t *scratch)
{
    memcpy(scratch, inputs, (size_t)net->n_inputs * sizeof(uint64_t));
    for (int g = 0; g < net->n_gates; g++) {
        const hard_gate *gate = &net->gates[g];
        scratch[net->n_inputs + g] = hard_op64(gate->op, scratch[gate->a], scratch[gate->b]);
    }
    for (int ch = 0; ch < net->channels; ch++) outputs[ch] = scratch[net->outputs[ch]];
}

/* ---- extraction ---- */

static size_t extracted_gates(const ca_config *c)
{
    size_t per_unit = 0, update = 0;
    for (int l = 0; l < c->perception_depth; l++) per_unit += (size_t)c->perception_widths[l];
    for (int l = 0; l < c->update_depth; l++) update += (size_t)c->update_widths[l];
    return (size_t)c->kernels * (size_t)c->channels * per_unit + update;
}

/* Appends one layer: gate g reads in[w->input_a[g]], in[w->input_b[g]]; its node goes to out[g]. */
static void emit_layer(hard_netlist *net, int *next_gate, const ca_model *m, size_t gate_base, const wiring *w,
                       const int32_t *in, int32_t *out, int32_t *model_gate)
{
    for (int g = 0; g < w->n_out; g++) {
        if (model_gate) model_gate[*next_gate] = (int32_t)(gate_base + (size_t)g);
        hard_gate *gate = &net->gates[*next_gate];
        gate->op = ca_model_gate_op(m, gate_base + (size_t)g);
        gate->a = in[w->input_a[g]];
        gate->b = in[w->input_b[g]];
        out[g] = net->n_inputs + (*next_gate)++;
    }
}

/* Kernel k on channel ch: the moore layer reads (neighbour, centre) as ca_cpu_layer.c does
 * (the centre is always b), later layers the previous layer; the last layer's nodes go to out. */
static void emit_perception(hard_netlist *net, int *next_gate, const ca_model *m, int k, int ch, int32_t *out,
                            int32_t *model_gate)
{
    const ca_config *c = &m->config;
    int32_t layer[8], next[8];
    for (int i = 0; i < 8; i++) {
        size_t row = m->perception_gate_base[0] + (size_t)k * 8 + (size_t)i;
        if (model_gate) model_gate[*next_gate] = (int32_t)row;
        hard_gate *gate = &net->gates[*next_gate];
        gate->op = ca_model_gate_op(m, row);
        gate->a = ch * HARD_NEIGHBOURS + wiring_moore_neighbour(&m->perception[0], k, i);
        gate->b = ch * HARD_NEIGHBOURS + 4;
        layer[i] = net->n_inputs + (*next_gate)++;
    }
    for (int l = 1; l < c->perception_depth; l++) {
        size_t base = m->perception_gate_base[l] + (size_t)k * (size_t)c->perception_widths[l];
        emit_layer(net, next_gate, m, base, &m->perception[l], layer, next, model_gate);
        memcpy(layer, next, sizeof next);
    }
    memcpy(out, layer, (size_t)ca_config_perception_bits(c) * sizeof(int32_t));
}

static int widest_update(const ca_config *c)
{
    int widest = ca_config_update_inputs(c);
    for (int l = 0; l < c->update_depth; l++)
        if (c->update_widths[l] > widest) widest = c->update_widths[l];
    return widest;
}

/* Extraction; model_gate (may be NULL) gets each netlist gate's model gate. */
static int extract(hard_netlist *net, const ca_model *m, int32_t *model_gate)
{
    const ca_config *c = &m->config;
    int rc = netlist_alloc(net, c->channels, extracted_gates(c));
    if (rc) return rc;
    int widest = widest_update(c), bits = ca_config_perception_bits(c), next_gate = 0;
    int32_t *in = malloc((size_t)widest * sizeof(int32_t)), *out = malloc((size_t)widest * sizeof(int32_t));
    if (!in || !out) {
        free(in), free(out), hard_netlist_free(net);
        return err_set(DLCA_ERR_NOMEM, "out of memory extracting a circuit");
    }
    /* Update input: the cell's own C bits, then kernel outputs of unit k*C + ch. */
    for (int ch = 0; ch < c->channels; ch++) in[ch] = ch * HARD_NEIGHBOURS + 4;
    for (int k = 0; k < c->kernels; k++)
        for (int ch = 0; ch < c->channels; ch++)
            emit_perception(net, &next_gate, m, k, ch, in + c->channels + (k * c->channels + ch) * bits, model_gate);
    for (int l = 0; l < c->update_depth; l++) {
        emit_layer(net, &next_gate, m, m->update_gate_base[l], &m->update[l], in, out, model_gate);
        memcpy(in, out, (size_t)c->update_widths[l] * sizeof(int32_t));
    }
    memcpy(net->outputs, in, (size_t)c->channels * sizeof(int32_t));
    free(in), free(out);
    return DLCA_OK;
}

int hard_circuit_extract(hard_netlist *net, const ca_model *m) { return extract(net, m, NULL); }

int hard_circuit_extract_mapped(hard_netlist *net, const ca_model *m, int32_t **model_gate)
{
    *model_gate = malloc(extracted_gates(&m->config) * sizeof(int32_t));
    if (!*model_gate) return err_set(DLCA_ERR_NOMEM, "out of memory for a circuit's gate map");
    int rc = extract(net, m, *model_gate);
    if (rc) free(*model_gate), *model_gate = NULL;
    return rc;
}

/* ---- truth tables (bit 3 = op(0,0), bit 2 = op(0,1), bit 1 = op(1,0), bit 0 = op(1,1)) ---- */

static int tt_at(int tt, int a, int b) { return tt >> (3 - 2 * a - b) & 1; }

static int tt_make(int f00, int f01, int f10, int f11) { return f00 << 3 | f01 << 2 | f10 << 1 | f11; }

static int tt_negate_a(int tt) { return tt_make(tt_at(tt, 1, 0), tt_at(tt, 1, 1), tt_at(tt, 0, 0), tt_at(tt, 0, 1)); }

static int tt_negate_b(int tt) { return tt_make(tt_at(tt, 0, 1), tt_at(tt, 0, 0), tt_at(tt, 1, 1), tt_at(tt, 1, 0)); }

static int tt_swap(int tt) { return tt_make(tt_at(tt, 0, 0), tt_at(tt, 1, 0), tt_at(tt, 0, 1), tt_at(tt, 1, 1)); }

static int tt_uses_a(int tt) { return ((tt >> 2 ^ tt) & 3) != 0; }

static int tt_uses_b(int tt) { return ((tt >> 1 ^ tt) & 5) != 0; }

/* ---- pruning ---- */

typedef enum { FATE_KEPT, FATE_CONSTANT, FATE_WIRE, FATE_MERGED } gate_fate;

typedef struct {
    int n_inputs;
    size_t count, capacity; /* nodes so far (const + inputs + gates), allocated */
    int32_t *op, *a, *b;    /* per node (gates only): canonical op and plain input nodes */
    int32_t *table;         /* open-addressing hash of gates: node or -1 */
    size_t table_mask;
} pruner;

static uint32_t ref_of(size_t node, int negated) { return (uint32_t)(node * 2) | (uint32_t)negated; }

static size_t gate_hash(int op, int32_t a, int32_t b)
{
    uint64_t h = (uint64_t)(uint32_t)a * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uint32_t)b * 0xc2b2ae3d27d4eb4fULL;
    h ^= (uint64_t)op * 0x165667b19e3779f9ULL;
    return (size_t)(h ^ h >> 29);
}

/* The node of gate (op, a, b), creating it if new; *created says which. */
static size_t pruner_gate(pruner *p, int op, int32_t a, int32_t b, int *created)
{
    size_t at = gate_hash(op, a, b) & p->table_mask;
    for (; p->table[at] >= 0; at = (at + 1) & p->table_mask) {
        int32_t n = p->table[at];
        if (p->op[n] == op && p->a[n] == a && p->b[n] == b) return (size_t)n;
    }
    size_t node = p->count++;
    p->op[node] = op, p->a[node] = a, p->b[node] = b;
    p->table[at] = (int32_t)node;
    *created = 1;
    return node;
}

/* g(x) with g(0) = g0, g(1) = g1 as a reference: a constant, x or NOT x. */
static uint32_t one_input(uint32_t x, int g0, int g1, gate_fate *fate)
{
    *fate = g0 == g1 ? FATE_CONSTANT : FATE_WIRE;
    return g0 == g1 ? (uint32_t)g0 : x ^ (uint32_t)g0;
}

/* The reference that gate `op` on references ra, rb reduces to. */
static uint32_t fold_gate(pruner *p, int op, uint32_t ra, uint32_t rb, gate_fate *fate)
{
    int tt = op;
    if (ra & 1) tt = tt_negate_a(tt);
    if (rb & 1) tt = tt_negate_b(tt);
    ra &= ~1u, rb &= ~1u;
    if (ra == 0) return one_input(rb, tt_at(tt, 0, 0), tt_at(tt, 0, 1), fate);
    if (rb == 0) return one_input(ra, tt_at(tt, 0, 0), tt_at(tt, 1, 0), fate);
    if (ra == rb) return one_input(ra, tt_at(tt, 0, 0), tt_at(tt, 1, 1), fate);
    if (!tt_uses_b(tt)) return one_input(ra, tt_at(tt, 0, 0), tt_at(tt, 1, 0), fate);
    if (!tt_uses_a(tt)) return one_input(rb, tt_at(tt, 0, 0), tt_at(tt, 0, 1), fate);
    if (ra > rb) {
        uint32_t swap = ra;
        ra = rb, rb = swap, tt = tt_swap(tt);
    }
    int negated = tt_at(tt, 0, 0);
    if (negated) tt = 15 - tt;
    int created = 0;
    size_t node = pruner_gate(p, tt, (int32_t)(ra >> 1), (int32_t)(rb >> 1), &created);
    *fate = created ? FATE_KEPT : FATE_MERGED;
    return ref_of(node, negated);
}

static int pruner_init(pruner *p, const hard_netlist *in)
{
    memset(p, 0, sizeof *p);
    p->n_inputs = in->n_inputs;
    /* Room for every gate plus one NOT or constant per output. */
    p->capacity = 1 + (size_t)in->n_inputs + (size_t)in->n_gates + (size_t)in->channels;
    size_t slots = 16;
    while (slots < 2 * p->capacity) slots *= 2;
    p->table_mask = slots - 1;
    p->op = malloc(p->capacity * sizeof(int32_t));
    p->a = malloc(p->capacity * sizeof(int32_t));
    p->b = malloc(p->capacity * sizeof(int32_t));
    p->table = malloc(slots * sizeof(int32_t));
    if (!p->op || !p->a || !p->b || !p->table) return err_set(DLCA_ERR_NOMEM, "out of memory pruning a circuit");
    memset(p->table, 0xff, slots * sizeof(int32_t));
    p->count = 1 + (size_t)in->n_inputs;
    return DLCA_OK;
}

static void pruner_free(pruner *p)
{
    free(p->op), free(p->a), free(p->b), free(p->table);
    memset(p, 0, sizeof *p);
}

void hard_netlist_needed(const hard_netlist *net, uint8_t *needed)
{
    memset(needed, 0, (size_t)net->n_inputs + (size_t)net->n_gates);
    for (int ch = 0; ch < net->channels; ch++) needed[net->outputs[ch]] = 1;
    for (int g = net->n_gates - 1; g >= 0; g--) {
        if (!needed[net->n_inputs + g]) continue;
        int op = net->gates[g].op;
        if (tt_uses_a(op)) needed[net->gates[g].a] = 1;
        if (tt_uses_b(op)) needed[net->gates[g].b] = 1;
    }
}

/* Folds every gate of `in` (where `used`, hard_netlist_needed's marks, is not NULL, only those it
 * marks: the others read as the constant 0, which only inputs their readers' ops ignore read);
 * out_refs[ch] = the reference each output reduces to. */
static void prune_fold(pruner *p, const hard_netlist *in, uint32_t *refs, uint32_t *out_refs, hard_stats *s,
                       const uint8_t *used)
{
    for (int i = 0; i < in->n_inputs; i++) refs[i] = ref_of((size_t)i + 1, 0);
    for (int g = 0; g < in->n_gates; g++) {
        const hard_gate *gate = &in->gates[g];
        gate_fate fate;
        if (used && !used[in->n_inputs + g]) {
            refs[in->n_inputs + g] = ref_of(0, 0);
            continue;
        }
        refs[in->n_inputs + g] = fold_gate(p, gate->op, refs[gate->a], refs[gate->b], &fate);
        s->constant += fate == FATE_CONSTANT, s->wire += fate == FATE_WIRE, s->merged += fate == FATE_MERGED;
    }
    for (int ch = 0; ch < in->channels; ch++) out_refs[ch] = refs[in->outputs[ch]];
}

/* Gives every negated or constant output a node of its own: the gate itself complemented when
 * only negated outputs read it, else a NOT gate (one per node), or a FALSE / TRUE gate. */
static void prune_outputs(pruner *p, uint32_t *out_refs, int channels, const char *read_by_gate)
{
    for (int ch = 0; ch < channels; ch++) {
        uint32_t r = out_refs[ch];
        size_t node = r >> 1;
        int negated = r & 1;
        if (!negated && node != 0) continue;
        int shared = read_by_gate[node] || node <= (size_t)p->n_inputs;
        for (int other = 0; other < channels && !shared; other++) shared = out_refs[other] == (r & ~1u);
        if (!shared) {
            p->op[node] = 15 - p->op[node];
            for (int other = 0; other < channels; other++)
                if (out_refs[other] == r) out_refs[other] = r & ~1u;
            continue;
        }
        /* A constant reads input 1 (any node would do); a NOT reads its node as a and b. */
        int op = node == 0 ? (negated ? GATE_TRUE : GATE_FALSE) : GATE_NOT_A;
        int32_t input = node == 0 ? 1 : (int32_t)node;
        int created = 0;
        size_t made = pruner_gate(p, op, input, input, &created);
        for (int other = 0; other < channels; other++)
            if (out_refs[other] == r) out_refs[other] = ref_of(made, 0);
    }
}

/* Marks the gates the outputs need; read_by_gate[n] says whether a live gate reads node n. */
static void prune_mark(const pruner *p, const uint32_t *out_refs, int channels, char *live, char *read_by_gate)
{
    for (int ch = 0; ch < channels; ch++) live[out_refs[ch] >> 1] = 1;
    for (size_t n = p->count; n-- > 1 + (size_t)p->n_inputs;) {
        if (!live[n]) continue;
        live[p->a[n]] = live[p->b[n]] = 1;
        read_by_gate[p->a[n]] = read_by_gate[p->b[n]] = 1;
    }
}

/* Writes the live gates of p in order into `out`, renumbered. */
static int prune_compact(hard_netlist *out, const pruner *p, const uint32_t *out_refs, int channels, const char *live)
{
    size_t kept = 0, first_gate = 1 + (size_t)p->n_inputs;
    for (size_t n = first_gate; n < p->count; n++) kept += live[n] != 0;
    int rc = netlist_alloc(out, channels, kept);
    if (rc) return rc;
    int32_t *id = malloc(p->count * sizeof(int32_t));
    if (!id) {
        hard_netlist_free(out);
        return err_set(DLCA_ERR_NOMEM, "out of memory pruning a circuit");
    }
    for (size_t n = 1; n < first_gate; n++) id[n] = (int32_t)n - 1;
    int g = 0;
    for (size_t n = first_gate; n < p->count; n++) {
        if (!live[n]) continue;
        out->gates[g] = (hard_gate){p->op[n], id[p->a[n]], id[p->b[n]]};
        id[n] = out->n_inputs + g++;
    }
    for (int ch = 0; ch < channels; ch++) out->outputs[ch] = id[out_refs[ch] >> 1];
    free(id);
    return DLCA_OK;
}

void hard_netlist_mark_needed(const hard_netlist *net, uint8_t *needed, int32_t node)
{
    /* Depth first on an explicit stack: a gate's inputs come before it, so a node is pushed once. */
    int32_t small[256], *stack = small, capacity = 256, top = 0;
    needed[node] = 1, stack[top++] = node;
    while (top > 0) {
        int32_t n = stack[--top];
        if (n < net->n_inputs) continue;
        const hard_gate *g = &net->gates[n - net->n_inputs];
        int32_t reads[2] = {tt_uses_a(g->op) ? g->a : -1, tt_uses_b(g->op) ? g->b : -1};
        for (int k = 0; k < 2; k++) {
            if (reads[k] < 0 || needed[reads[k]]) continue;
            if (top == capacity) { /* more than 256 waiting: grow, or (no memory) mark every node, a superset */
                int32_t *more = malloc((size_t)capacity * 2 * sizeof *more);
                if (!more) {
                    if (stack != small) free(stack);
                    memset(needed, 1, (size_t)net->n_inputs + (size_t)net->n_gates);
                    return;
                }
                memcpy(more, stack, (size_t)top * sizeof *more);
                if (stack != small) free(stack);
                stack = more, capacity *= 2;
            }
            needed[reads[k]] = 1, stack[top++] = reads[k];
        }
    }
    if (stack != small) free(stack);
}

/* Folds `in` into `out`: every gate (`used` NULL, counting every gate's fate into s) or only those
 * `used` marks. */
static int prune(hard_netlist *out, const hard_netlist *in, hard_stats *s, const uint8_t *used)
{
    pruner p;
    uint32_t *refs = malloc(((size_t)in->n_inputs + (size_t)in->n_gates) * sizeof(uint32_t));
    uint32_t *out_refs = malloc((size_t)in->channels * sizeof(uint32_t));
    char *live = NULL, *read_by_gate = NULL;
    int rc = pruner_init(&p, in);
    if (!rc && (!refs || !out_refs)) rc = err_set(DLCA_ERR_NOMEM, "out of memory pruning a circuit");
    if (!rc) {
        prune_fold(&p, in, refs, out_refs, s, used);
        live = calloc(p.capacity, 1), read_by_gate = calloc(p.capacity, 1);
        if (!live || !read_by_gate) rc = err_set(DLCA_ERR_NOMEM, "out of memory pruning a circuit");
    }
    if (!rc) {
        size_t folded_count = p.count;
        prune_mark(&p, out_refs, in->channels, live, read_by_gate);
        prune_outputs(&p, out_refs, in->channels, read_by_gate);
        s->added = p.count - folded_count;
        for (size_t n = folded_count; n < p.count; n++) live[n] = 1;
        for (size_t n = 1 + (size_t)p.n_inputs; n < folded_count; n++) s->dead += !live[n];
        rc = prune_compact(out, &p, out_refs, in->channels, live);
    }
    pruner_free(&p);
    free(refs), free(out_refs), free(live), free(read_by_gate);
    return rc;
}

int hard_circuit_prune_marked(hard_netlist *out, const hard_netlist *in, const uint8_t *needed)
{
    hard_stats ignored = {0};
    return prune(out, in, &ignored, needed);
}

int hard_circuit_prune(hard_netlist *out, const hard_netlist *in, hard_stats *stats)
{
    hard_stats local = {0};
    hard_stats *s = stats ? stats : &local;
    size_t model_gates = s->model_gates;
    memset(s, 0, sizeof *s);
    s->model_gates = model_gates;
    int rc = hard_netlist_check(in);
    if (rc) return rc;
    /* Without stats (which count every gate's fate) only the gates an output needs are folded:
     * a trained circuit's few. */
    uint8_t *used = stats ? NULL : malloc((size_t)in->n_inputs + (size_t)in->n_gates);
    if (!stats && !used) return err_set(DLCA_ERR_NOMEM, "out of memory pruning a circuit");
    if (used) hard_netlist_needed(in, used);
    rc = prune(out, in, s, used);
    if (!rc && stats) { /* only when asked */
        hard_netlist_count(in, &s->before);
        hard_netlist_count(out, &s->after);
        s->depth_before = hard_netlist_depth(in);
        s->depth_after = hard_netlist_depth(out);
    }
    free(used);
    return rc;
}

int hard_circuit_build(hard_netlist *net, const ca_model *model, hard_stats *stats)
{
    hard_netlist raw;
    int rc = hard_circuit_extract(&raw, model);
    if (rc) return rc;
    if (stats) stats->model_gates = model->gate_count;
    rc = hard_circuit_prune(net, &raw, stats);
    hard_netlist_free(&raw);
    return rc;
}

void hard_stats_print(const hard_stats *s, FILE *out)
{
    fprintf(out, "hard circuit: %zu model gates; extracted %zu gates (depth %d), pruned to %zu (depth %d)\n",
            s->model_gates, s->before.total, s->depth_before, s->after.total, s->depth_after);
    fprintf(out, "  %-12s %10s %10s\n", "op", "before", "after");
    for (int op = 0; op < GATE_OP_COUNT; op++)
        if (s->before.by_op[op] || s->after.by_op[op])
            fprintf(out, "  %-12s %10zu %10zu\n", gate_op_names[op], s->before.by_op[op], s->after.by_op[op]);
    fprintf(out, "  removed: %zu constant, %zu wires, %zu merged, %zu unread; added %zu for outputs\n", s->constant,
            s->wire, s->merged, s->dead, s->added);
}

/* ---- slot programs ---- */

void hard_program_free(hard_program *p)
{
    free(p->instr);
    free(p->outputs);
    memset(p, 0, sizeof *p);
}

/* last[n]: the last gate that reads node n; INT_MAX for outputs, which must survive. */
static void last_uses(const hard_netlist *net, int *last)
{
    size_t nodes = (size_t)net->n_inputs + (size_t)net->n_gates;
    for (size_t n = 0; n < nodes; n++) last[n] = -1;
    for (int g = 0; g < net->n_gates; g++) last[net->gates[g].a] = last[net->gates[g].b] = g;
    for (int ch = 0; ch < net->channels; ch++) last[net->outputs[ch]] = INT_MAX;
}

int hard_program_build(hard_program *p, const hard_netlist *net)
{
    memset(p, 0, sizeof *p);
    int rc = hard_netlist_check(net);
    if (rc) return rc;
    size_t nodes = (size_t)net->n_inputs + (size_t)net->n_gates;
    int *last = malloc(nodes * sizeof(int));
    uint32_t *slot = malloc(nodes * sizeof(uint32_t)), *free_slots = malloc(nodes * sizeof(uint32_t));
    p->instr = malloc(((size_t)net->n_gates + 1) * sizeof *p->instr);
    p->outputs = malloc((size_t)net->channels * sizeof *p->outputs);
    if (!last || !slot || !free_slots || !p->instr || !p->outputs) {
        free(last), free(slot), free(free_slots), hard_program_free(p);
        return err_set(DLCA_ERR_NOMEM, "out of memory for a program of %d gates", net->n_gates);
    }
    p->channels = net->channels, p->n_inputs = net->n_inputs, p->n_instr = net->n_gates;
    last_uses(net, last);
    size_t n_free = 0;
    uint32_t n_slots = (uint32_t)net->n_inputs;
    for (int i = 0; i < net->n_inputs; i++) slot[i] = (uint32_t)i;
    for (int g = 0; g < net->n_gates; g++) {
        const hard_gate *gate = &net->gates[g];
        uint32_t dst = n_free ? free_slots[--n_free] : n_slots++;
        p->instr[g] = (hard_instr){(uint32_t)gate->op, dst, slot[gate->a], slot[gate->b]};
        slot[net->n_inputs + g] = dst;
        /* Freed only after dst is taken, so no instruction writes a slot it reads. */
        if (gate->a >= net->n_inputs && last[gate->a] == g) free_slots[n_free++] = slot[gate->a];
        if (gate->b >= net->n_inputs && gate->b != gate->a && last[gate->b] == g) free_slots[n_free++] = slot[gate->b];
    }
    for (int ch = 0; ch < net->channels; ch++) p->outputs[ch] = slot[net->outputs[ch]];
    p->n_slots = (int)n_slots;
    free(last), free(slot), free(free_slots);
    return DLCA_OK;
}
