/* ca_fast_plan.c: builds the op list and the neighbour tables once per engine (the reference
 * recomputes neighbours with divisions per element). */
#include "ca_fast_plan.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* Rows of a unit's inputs and outputs while its ops are added. */
typedef struct {
    uint32_t out_base;  /* row of gate 0's output */
    size_t gate_base;   /* coefficient index of gate 0 */
    const uint32_t *in; /* rows of the layer's inputs */
} unit_rows;

static void add_unit_ops(ca_fast_plan *p, const wiring *w, const unit_rows *u)
{
    for (int g = 0; g < w->n_out; g++)
        p->ops[p->op_count++] = (ca_fast_op){u->out_base + (uint32_t)g, u->in[w->input_a[g]], u->in[w->input_b[g]],
                                             (uint32_t)(u->gate_base + (size_t)g)};
}

static void begin_layer(ca_fast_plan *p, size_t input_begin, size_t input_end)
{
    ca_fast_layer *l = &p->layer[p->layer_count];
    l->op_begin = p->op_count, l->input_begin = input_begin, l->input_end = input_end;
}

static void end_layer(ca_fast_plan *p) { p->layer[p->layer_count++].op_end = p->op_count; }

/* Moore layer: kernel k, channel c, gate i reads channel c's neighbours (inputs: the grid and
 * the neighbour rows). */
static void build_moore(ca_fast_plan *p, const ca_model *m, const size_t *perception_row, uint32_t *in)
{
    const ca_config *c = &m->config;
    begin_layer(p, p->channels, p->act_base);
    const wiring *w = &m->perception[0];
    for (int k = 0; k < c->kernels; k++)
        for (int ch = 0; ch < c->channels; ch++) {
            /* kernel k's 8 gates of the layer (its own order, or the one every kernel shares) */
            size_t first = w->n_out > 8 ? (size_t)k * 8 : 0;
            wiring order = {.n_in = 9, .n_out = 8, .input_a = w->input_a + first, .input_b = w->input_b + first};
            for (int j = 0; j < 9; j++) in[j] = ca_fast_neighbour_row(p, ch, j);
            size_t unit = (size_t)k * (size_t)c->channels + (size_t)ch;
            unit_rows u = {(uint32_t)(p->act_base + perception_row[0] + unit * 8), m->perception_gate_base[0] + (size_t)k * 8, in};
            add_unit_ops(p, &order, &u);
        }
    end_layer(p);
}

/* Perception layer l >= 1: one unit per (kernel, channel) with the shared wiring. */
static void build_perception(ca_fast_plan *p, const ca_model *m, int l, const size_t *perception_row, uint32_t *in)
{
    const ca_config *c = &m->config;
    size_t w_in = (size_t)c->perception_widths[l - 1], w_out = (size_t)c->perception_widths[l];
    begin_layer(p, p->act_base + perception_row[l - 1], p->act_base + perception_row[l]);
    for (int k = 0; k < c->kernels; k++)
        for (int ch = 0; ch < c->channels; ch++) {
            size_t unit = (size_t)k * (size_t)c->channels + (size_t)ch;
            for (size_t i = 0; i < w_in; i++) in[i] = (uint32_t)(p->act_base + perception_row[l - 1] + unit * w_in + i);
            unit_rows u = {(uint32_t)(p->act_base + perception_row[l] + unit * w_out),
                           m->perception_gate_base[l] + (size_t)k * w_out, in};
            add_unit_ops(p, &m->perception[l], &u);
        }
    end_layer(p);
}

/* Update layer l: layer 0 reads the C grid rows, then the last perception layer's rows. */
static void build_update(ca_fast_plan *p, const ca_model *m, int l, const size_t *perception_row, const size_t *update_row,
                         uint32_t *in)
{
    const ca_config *c = &m->config;
    const wiring *w = &m->update[l];
    size_t first = l > 0 ? update_row[l - 1] : perception_row[c->perception_depth - 1];
    for (int i = 0; i < w->n_in; i++) {
        if (l > 0)
            in[i] = (uint32_t)(p->act_base + first + (size_t)i);
        else
            in[i] = i < c->channels ? (uint32_t)i : (uint32_t)(p->act_base + first + (size_t)(i - c->channels));
    }
    begin_layer(p, p->act_base + first, p->act_base + update_row[l]);
    unit_rows u = {(uint32_t)(p->act_base + update_row[l]), m->update_gate_base[l], in};
    add_unit_ops(p, w, &u);
    end_layer(p);
}

static void build_neighbours(ca_fast_plan *p, ca_shape s)
{
    size_t cells = ca_shape_cells(s);
    for (int d = 0; d < CA_FAST_DIRECTIONS; d++) {
        int j = ca_fast_direction_neighbour(d);
        for (size_t cell = 0; cell < cells; cell++) {
            p->neighbour[(size_t)d * cells + cell] = (int32_t)ca_shifted_cell(s, cell, j / 3 - 1, j % 3 - 1);
            p->reader[(size_t)d * cells + cell] = (int32_t)ca_shifted_cell(s, cell, 1 - j / 3, 1 - j % 3);
        }
    }
}

static size_t widest(const ca_config *c)
{
    size_t most = 9 + (size_t)ca_config_update_inputs(c);
    for (int l = 0; l < c->perception_depth; l++) most += (size_t)c->perception_widths[l];
    for (int l = 0; l < c->update_depth; l++) most += (size_t)c->update_widths[l];
    return most;
}

int ca_fast_plan_init(ca_fast_plan *p, const ca_model *m, ca_shape s, const size_t *perception_row,
                      const size_t *update_row, size_t step_rows)
{
    const ca_config *c = &m->config;
    size_t cells = ca_shape_cells(s);
    memset(p, 0, sizeof *p);
    p->channels = (size_t)c->channels;
    p->act_base = p->channels * 9;
    p->rows = p->act_base + step_rows;
    if (p->rows >= UINT32_MAX / 2 || cells >= (size_t)INT32_MAX || m->gate_count >= UINT32_MAX)
        return err_set(DLCA_ERR, "model too large for the fast CPU engine (%zu rows, %zu cells)", p->rows, cells);
    p->ops = malloc(step_rows * sizeof *p->ops);
    p->neighbour = malloc(CA_FAST_DIRECTIONS * cells * sizeof *p->neighbour);
    p->reader = malloc(CA_FAST_DIRECTIONS * cells * sizeof *p->reader);
    uint32_t *in = malloc(widest(c) * sizeof *in);
    if (!p->ops || !p->neighbour || !p->reader || !in) {
        free(in);
        ca_fast_plan_free(p);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the fast CPU engine's plan");
    }
    build_moore(p, m, perception_row, in);
    for (int l = 1; l < c->perception_depth; l++) build_perception(p, m, l, perception_row, in);
    for (int l = 0; l < c->update_depth; l++) build_update(p, m, l, perception_row, update_row, in);
    free(in);
    build_neighbours(p, s);
    if (p->op_count != step_rows) { /* every activation row is one op's output */
        size_t ops = p->op_count;
        ca_fast_plan_free(p);
        return err_set(DLCA_ERR, "fast engine plan: %zu ops for %zu rows", ops, step_rows);
    }
    return DLCA_OK;
}

void ca_fast_plan_free(ca_fast_plan *p)
{
    free(p->ops), free(p->neighbour), free(p->reader);
    memset(p, 0, sizeof *p);
}
