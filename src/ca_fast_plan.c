/* ca_fast_plan.c: builds the op list, the reverse gather list and the neighbour tables once per
 * engine (the reference recomputes neighbours with divisions per element). */
#include "ca_fast_plan.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* Cursors into the plan's arrays while it is filled. */
typedef struct {
    ca_fast_plan *p;
    size_t ops, inputs, entries;
} builder;

static void add_op(builder *b, uint32_t out, uint32_t in_a, uint32_t in_b, size_t gate)
{
    b->p->ops[b->ops++] = (ca_fast_op){out, in_a, in_b, (uint32_t)gate};
}

static void begin_input(builder *b, uint32_t row)
{
    b->p->input_row[b->inputs] = row;
    b->p->input_start[b->inputs++] = (uint32_t)b->entries;
}

/* The readers of input i of wiring w, where row_of maps the gate's inputs to rows. */
typedef struct {
    uint32_t out_base;  /* row of gate 0's output */
    size_t gate_base;   /* coefficient index of gate 0 */
    const uint32_t *in; /* rows of the layer's inputs */
} unit_rows;

static void add_readers(builder *b, const wiring *w, int i, const unit_rows *u)
{
    for (int e = w->reverse_start[i]; e < w->reverse_start[i + 1]; e++) {
        int g = w->reverse_entry[e] >> 1, slot = w->reverse_entry[e] & 1;
        uint32_t other = u->in[slot ? w->input_a[g] : w->input_b[g]];
        b->p->entries[b->entries++] =
            (ca_fast_entry){u->out_base + (uint32_t)g, other, (uint32_t)(u->gate_base + (size_t)g), (uint32_t)(slot + 1)};
    }
}

static void add_unit_ops(builder *b, const wiring *w, const unit_rows *u)
{
    for (int g = 0; g < w->n_out; g++)
        add_op(b, u->out_base + (uint32_t)g, u->in[w->input_a[g]], u->in[w->input_b[g]], u->gate_base + (size_t)g);
}

static ca_fast_layer *begin_layer(builder *b)
{
    ca_fast_layer *l = &b->p->layer[b->p->layer_count++];
    l->op_begin = b->ops, l->input_begin = b->inputs;
    return l;
}

static void end_layer(builder *b, ca_fast_layer *l) { l->op_end = b->ops, l->input_end = b->inputs; }

/* Moore layer: kernel k, channel c, gate i reads channel c's neighbours; a neighbour row is
 * read by every kernel, so its readers span all K kernels. */
static void build_moore(builder *b, const ca_model *m, const size_t *perception_row, uint32_t *in)
{
    const ca_config *c = &m->config;
    const wiring *w = &m->perception[0];
    ca_fast_layer *l = begin_layer(b);
    for (int k = 0; k < c->kernels; k++)
        for (int ch = 0; ch < c->channels; ch++) {
            for (int j = 0; j < 9; j++) in[j] = ca_fast_neighbour_row(b->p, ch, j);
            size_t unit = (size_t)k * (size_t)c->channels + (size_t)ch;
            unit_rows u = {(uint32_t)(b->p->act_base + perception_row[0] + unit * 8), m->perception_gate_base[0] + (size_t)k * 8, in};
            add_unit_ops(b, w, &u);
        }
    for (int ch = 0; ch < c->channels; ch++) {
        for (int j = 0; j < 9; j++) in[j] = ca_fast_neighbour_row(b->p, ch, j);
        for (int j = 0; j < 9; j++) {
            begin_input(b, in[j]);
            for (int k = 0; k < c->kernels; k++) {
                size_t unit = (size_t)k * (size_t)c->channels + (size_t)ch;
                unit_rows u = {(uint32_t)(b->p->act_base + perception_row[0] + unit * 8), m->perception_gate_base[0] + (size_t)k * 8, in};
                add_readers(b, w, j, &u);
            }
        }
    }
    end_layer(b, l);
}

/* Perception layer l >= 1: one unit per (kernel, channel) with the shared wiring. */
static void build_perception(builder *b, const ca_model *m, int l, const size_t *perception_row, uint32_t *in)
{
    const ca_config *c = &m->config;
    const wiring *w = &m->perception[l];
    size_t w_in = (size_t)c->perception_widths[l - 1], w_out = (size_t)c->perception_widths[l];
    ca_fast_layer *layer = begin_layer(b);
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < c->kernels; k++)
            for (int ch = 0; ch < c->channels; ch++) {
                size_t unit = (size_t)k * (size_t)c->channels + (size_t)ch;
                for (size_t i = 0; i < w_in; i++) in[i] = (uint32_t)(b->p->act_base + perception_row[l - 1] + unit * w_in + i);
                unit_rows u = {(uint32_t)(b->p->act_base + perception_row[l] + unit * w_out),
                               m->perception_gate_base[l] + (size_t)k * w_out, in};
                if (pass == 0) {
                    add_unit_ops(b, w, &u);
                    continue;
                }
                for (size_t i = 0; i < w_in; i++) {
                    begin_input(b, in[i]);
                    add_readers(b, w, (int)i, &u);
                }
            }
    end_layer(b, layer);
}

/* Update layer l: layer 0 reads the C grid rows, then the last perception layer's rows. */
static void build_update(builder *b, const ca_model *m, int l, const size_t *perception_row, const size_t *update_row,
                         uint32_t *in)
{
    const ca_config *c = &m->config;
    const wiring *w = &m->update[l];
    size_t last = perception_row[c->perception_depth - 1];
    for (int i = 0; i < w->n_in; i++) {
        if (l > 0)
            in[i] = (uint32_t)(b->p->act_base + update_row[l - 1] + (size_t)i);
        else
            in[i] = i < c->channels ? (uint32_t)i : (uint32_t)(b->p->act_base + last + (size_t)(i - c->channels));
    }
    ca_fast_layer *layer = begin_layer(b);
    unit_rows u = {(uint32_t)(b->p->act_base + update_row[l]), m->update_gate_base[l], in};
    add_unit_ops(b, w, &u);
    for (int i = 0; i < w->n_in; i++) {
        begin_input(b, in[i]);
        add_readers(b, w, i, &u);
    }
    end_layer(b, layer);
}

/* The cell at offset (dy, dx) from `cell`, or -1 outside a zero boundary (as ca_cpu_layer). */
static int32_t shifted_cell(ca_shape s, size_t cell, int dy, int dx)
{
    size_t plane = (size_t)s.height * (size_t)s.width;
    size_t bi = cell / plane, yx = cell % plane;
    int y = (int)(yx / (size_t)s.width) + dy, x = (int)(yx % (size_t)s.width) + dx;
    if (s.boundary == CA_BOUNDARY_PERIODIC) {
        y = (y + s.height) % s.height;
        x = (x + s.width) % s.width;
    } else if (y < 0 || y >= s.height || x < 0 || x >= s.width) {
        return -1;
    }
    return (int32_t)(bi * plane + (size_t)y * (size_t)s.width + (size_t)x);
}

static void build_neighbours(ca_fast_plan *p, ca_shape s)
{
    size_t cells = ca_shape_cells(s);
    for (int d = 0; d < CA_FAST_DIRECTIONS; d++) {
        int j = ca_fast_direction_neighbour(d);
        for (size_t cell = 0; cell < cells; cell++) {
            p->neighbour[(size_t)d * cells + cell] = shifted_cell(s, cell, j / 3 - 1, j % 3 - 1);
            p->reader[(size_t)d * cells + cell] = shifted_cell(s, cell, 1 - j / 3, 1 - j % 3);
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
    size_t cells = ca_shape_cells(s), units = (size_t)c->kernels * (size_t)c->channels;
    memset(p, 0, sizeof *p);
    p->channels = (size_t)c->channels;
    p->act_base = p->channels * 9;
    p->rows = p->act_base + step_rows;
    size_t inputs = p->channels * 9 + (size_t)ca_config_update_inputs(c);
    for (int l = 1; l < c->perception_depth; l++) inputs += units * (size_t)c->perception_widths[l - 1];
    for (int l = 1; l < c->update_depth; l++) inputs += (size_t)c->update_widths[l - 1];
    if (p->rows >= UINT32_MAX / 2 || cells >= (size_t)INT32_MAX || m->gate_count >= UINT32_MAX)
        return err_set(DLCA_ERR, "model too large for the fast CPU engine (%zu rows, %zu cells)", p->rows, cells);
    p->ops = malloc(step_rows * sizeof *p->ops);
    p->entries = malloc(2 * step_rows * sizeof *p->entries);
    p->input_row = malloc(inputs * sizeof *p->input_row);
    p->input_start = malloc((inputs + 1) * sizeof *p->input_start);
    p->neighbour = malloc(CA_FAST_DIRECTIONS * cells * sizeof *p->neighbour);
    p->reader = malloc(CA_FAST_DIRECTIONS * cells * sizeof *p->reader);
    uint32_t *in = malloc(widest(c) * sizeof *in);
    if (!p->ops || !p->entries || !p->input_row || !p->input_start || !p->neighbour || !p->reader || !in) {
        free(in);
        ca_fast_plan_free(p);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the fast CPU engine's plan");
    }
    builder b = {p, 0, 0, 0};
    build_moore(&b, m, perception_row, in);
    for (int l = 1; l < c->perception_depth; l++) build_perception(&b, m, l, perception_row, in);
    for (int l = 0; l < c->update_depth; l++) build_update(&b, m, l, perception_row, update_row, in);
    free(in);
    p->op_count = b.ops, p->input_count = b.inputs;
    p->input_start[b.inputs] = (uint32_t)b.entries;
    build_neighbours(p, s);
    if (b.ops != step_rows || b.inputs != inputs || b.entries != 2 * step_rows) {
        ca_fast_plan_free(p);
        return err_set(DLCA_ERR, "fast engine plan: %zu ops for %zu rows, %zu of %zu inputs", b.ops, step_rows, b.inputs,
                       inputs);
    }
    return DLCA_OK;
}

void ca_fast_plan_free(ca_fast_plan *p)
{
    free(p->ops), free(p->entries), free(p->input_row), free(p->input_start), free(p->neighbour), free(p->reader);
    memset(p, 0, sizeof *p);
}
