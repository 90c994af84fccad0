/* ca_gpu_order.c: the GPU engine's order of each update layer's gates (ca_gpu_order.h). */
#include "ca_gpu_order.h"

#include "error.h"
#include "gates.h"

#include <stdlib.h>
#include <string.h>

enum { BANKS = CA_GPU_ORDER_BANKS };

/* The bank an input at device row `row` falls in. */
static unsigned bank_of(uint32_t row) { return row % BANKS; }

/* A layer's gates as the edges of a bipartite graph, from its input a's bank to its input b's,
 * coloured so that no two edges of a colour share a bank on either side (König: as many colours
 * as the most gates one bank has suffice): a colour is then a half-warp without conflicts. */
typedef struct {
    int colours, *at_a, *at_b; /* [BANKS][colours]: the gate of a colour at a bank, or -1 */
    int *colour;               /* [gates]: a gate's colour, or -1 where it found none */
    const unsigned *a_bank, *b_bank;
} colouring;

static int free_colour(const int *at, int colours)
{
    for (int c = 0; c < colours; c++)
        if (at[c] < 0) return c;
    return -1;
}

static void set_colour(colouring *k, int g, int c)
{
    k->colour[g] = c;
    k->at_a[k->a_bank[g] * (unsigned)k->colours + (unsigned)c] = g;
    k->at_b[k->b_bank[g] * (unsigned)k->colours + (unsigned)c] = g;
}

/* Swaps colours x and y along the path of edges coloured x, y, x, ... from b bank v, so that x is
 * free at v (path: scratch for as many gates as the layer has). */
static void flip_path(colouring *k, unsigned v, int x, int y, int *path)
{
    int count = 0, c = x, on_b = 1;
    unsigned bank = v, C = (unsigned)k->colours;
    for (int g; (g = on_b ? k->at_b[bank * C + (unsigned)c] : k->at_a[bank * C + (unsigned)c]) >= 0;) {
        path[count++] = g;
        bank = on_b ? k->a_bank[g] : k->b_bank[g];
        on_b = !on_b, c = c == x ? y : x;
    }
    for (int i = 0; i < count; i++) {
        int g = path[i];
        k->at_a[k->a_bank[g] * C + (unsigned)k->colour[g]] = -1;
        k->at_b[k->b_bank[g] * C + (unsigned)k->colour[g]] = -1;
    }
    for (int i = 0; i < count; i++) set_colour(k, path[i], k->colour[path[i]] == x ? y : x);
}

static void colour_gates(colouring *k, int gates, int *path)
{
    unsigned C = (unsigned)k->colours;
    for (int g = 0; g < gates; g++) {
        int x = free_colour(k->at_a + k->a_bank[g] * C, k->colours);
        int y = free_colour(k->at_b + k->b_bank[g] * C, k->colours);
        if (x < 0 || y < 0) continue; /* k->colour[g] stays -1 */
        if (k->at_b[k->b_bank[g] * C + (unsigned)x] >= 0) flip_path(k, k->b_bank[g], x, y, path);
        set_colour(k, g, x);
    }
}

/* gate_at[p] from the colouring: half-warp h takes colour h's gates, each in the lane of its
 * input a's bank (so that the gathers of the layer below through input a are conflict free too),
 * then gates without a colour or past a short last half-warp fill the lanes left. */
static void place_colours(const colouring *k, int gates, int *gate_at)
{
    for (int p = 0; p < gates; p++) gate_at[p] = -1;
    int left = 0;
    for (int g = 0; g < gates; g++) {
        int p = k->colour[g] < 0 ? gates : k->colour[g] * BANKS + (int)k->a_bank[g];
        if (p < gates) gate_at[p] = g;
        else k->colour[g] = -1, left++;
    }
    for (int g = 0, p = 0; left > 0 && g < gates; g++) {
        if (k->colour[g] >= 0) continue;
        while (gate_at[p] >= 0) p++;
        gate_at[p] = g, left--;
    }
}

/* Whether gate_at lists every gate once (a colouring gone wrong must not reorder a model into
 * another; the layer then keeps the model's order). */
static int is_permutation(const int *gate_at, int gates, char *seen)
{
    if (gates <= 0) return 1;
    memset(seen, 0, (size_t)gates);
    for (int p = 0; p < gates; p++) {
        if (gate_at[p] < 0 || gate_at[p] >= gates || seen[gate_at[p]]) return 0;
        seen[gate_at[p]] = 1;
    }
    return 1;
}

/* gate_at[p]: the model gate at device position p of layer w, whose inputs are at in_row. */
static int order_layer(const wiring *w, const uint32_t *in_row, int keep, int *gate_at)
{
    int gates = w->n_out, C = (gates + BANKS - 1) / BANKS;
    if (keep) {
        for (int p = 0; p < gates; p++) gate_at[p] = p;
        return DLCA_OK;
    }
    colouring k = {.colours = C};
    unsigned *banks = malloc(sizeof(unsigned) * 2 * (size_t)gates);
    k.at_a = malloc(sizeof(int) * 2 * BANKS * (size_t)C), k.colour = malloc(sizeof(int) * (size_t)gates);
    int *path = malloc(sizeof(int) * (size_t)gates);
    int rc = banks && k.at_a && k.colour && path ? DLCA_OK
                                                 : err_set(DLCA_ERR_NOMEM, "out of memory ordering a layer of %d gates", gates);
    if (!rc) {
        k.at_b = k.at_a + BANKS * C, k.a_bank = banks, k.b_bank = banks + gates;
        for (int g = 0; g < gates; g++) {
            banks[g] = bank_of(in_row[w->input_a[g]]), banks[gates + g] = bank_of(in_row[w->input_b[g]]);
            k.colour[g] = -1;
        }
        for (int i = 0; i < 2 * BANKS * C; i++) k.at_a[i] = -1;
        colour_gates(&k, gates, path);
        place_colours(&k, gates, gate_at);
        if (!is_permutation(gate_at, gates, (char *)path))
            for (int p = 0; p < gates; p++) gate_at[p] = p;
    }
    free(banks), free(k.at_a), free(k.colour), free(path);
    return rc;
}

/* Layer w in device order: position p is model gate gate_at[p], reading its inputs' device rows. */
static int reorder_wiring(const wiring *w, const uint32_t *in_row, const int *gate_at, wiring *out)
{
    int *a = malloc(sizeof(int) * (size_t)w->n_out), *b = malloc(sizeof(int) * (size_t)w->n_out);
    int rc = a && b ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory reordering a layer of %d gates", w->n_out);
    for (int p = 0; !rc && p < w->n_out; p++) {
        a[p] = (int)in_row[w->input_a[gate_at[p]]];
        b[p] = (int)in_row[w->input_b[gate_at[p]]];
    }
    if (!rc) rc = wiring_init_from(out, w->n_in, w->n_out, a, b);
    free(a), free(b);
    return rc;
}

static void free_wirings(wiring *w, int count)
{
    for (int l = 0; l < count; l++) wiring_free(&w[l]);
}

/* The update wirings in device order and each update gate's device row (row[model gate]). */
static int order_update_layers(const ca_model *m, wiring *update, uint32_t *row)
{
    const ca_config *c = &m->config;
    int inputs = ca_config_update_inputs(c), widest = inputs;
    for (int l = 0; l < c->update_depth; l++) widest = c->update_widths[l] > widest ? c->update_widths[l] : widest;
    uint32_t *in_row = malloc(sizeof(uint32_t) * (size_t)widest);
    int *gate_at = malloc(sizeof(int) * (size_t)widest);
    int rc = in_row && gate_at ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory ordering the update layers");
    for (int i = 0; !rc && i < inputs; i++) in_row[i] = (uint32_t)i; /* the update input keeps its rows */
    int l = 0;
    for (; !rc && l < c->update_depth; l++) {
        const wiring *w = &m->update[l];
        rc = order_layer(w, in_row, l + 1 == c->update_depth, gate_at);
        if (!rc) rc = reorder_wiring(w, in_row, gate_at, &update[l]);
        for (int p = 0; !rc && p < w->n_out; p++) {
            row[m->update_gate_base[l] + (size_t)gate_at[p]] = (uint32_t)(m->update_gate_base[l] + (size_t)p);
            in_row[gate_at[p]] = (uint32_t)p;
        }
    }
    if (rc) free_wirings(update, l);
    free(in_row), free(gate_at);
    return rc;
}

int ca_gpu_order_model(const ca_model *model, ca_model *device, uint32_t *row)
{
    wiring update[CA_MAX_LAYERS];
    memset(update, 0, sizeof update);
    for (size_t g = 0; g < model->gate_count; g++) row[g] = (uint32_t)g; /* perception gates keep theirs */
    if (order_update_layers(model, update, row)) return DLCA_ERR;
    int rc = ca_model_init_wired(device, &model->config, model->perception, update);
    free_wirings(update, model->config.update_depth);
    if (rc) return rc;
    for (size_t g = 0; g < model->gate_count; g++)
        memcpy(device->logits + (size_t)row[g] * GATE_OP_COUNT, model->logits + g * GATE_OP_COUNT,
               GATE_OP_COUNT * sizeof(float));
    return DLCA_OK;
}

/* Most of a half-warp's inputs (rows, of the given wiring side) in one bank. */
static unsigned half_warp_conflict(const int *inputs, int first, int size)
{
    unsigned count[BANKS] = {0}, most = 0;
    for (int g = first; g < first + size; g++) {
        unsigned bank = bank_of((uint32_t)inputs[g]);
        if (++count[bank] > most) most = count[bank];
    }
    return most;
}

size_t ca_gpu_order_conflicts(const ca_model *model)
{
    size_t total = 0;
    for (int l = 0; l < model->config.update_depth; l++) {
        const wiring *w = &model->update[l];
        for (int first = 0; first < w->n_out; first += BANKS) {
            int size = w->n_out - first < BANKS ? w->n_out - first : BANKS;
            total += half_warp_conflict(w->input_a, first, size) + half_warp_conflict(w->input_b, first, size);
        }
    }
    return total;
}
