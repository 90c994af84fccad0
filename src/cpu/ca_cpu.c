/* ca_cpu.c: the CPU engine: layout, CA step forward/backward, loss, BPTT. */
#include "ca_cpu.h"

#include "error.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

static size_t widest_input(const ca_config *c)
{
    size_t widest = (size_t)ca_config_update_inputs(c);
    for (int l = 0; l < c->update_depth; l++)
        if ((size_t)c->update_widths[l] > widest) widest = (size_t)c->update_widths[l];
    for (int l = 0; l < c->perception_depth; l++)
        if ((size_t)c->perception_widths[l] > widest) widest = (size_t)c->perception_widths[l];
    return widest;
}

int ca_cpu_init(ca_cpu *e, const ca_model *model, int batch, int height, int width)
{
    const ca_config *c = &model->config;
    memset(e, 0, sizeof *e);
    e->model = model;
    e->shape = (ca_shape){batch, height > 0 ? height : c->height, width > 0 ? width : c->width, c->boundary};
    e->cells = ca_shape_cells(e->shape);
    e->step_rows = ca_config_layout_rows(c, e->perception_row, e->update_row);
    e->steps = c->steps, e->room = c->steps + c->window;
    size_t act_rows = (size_t)e->room * e->step_rows, grid_rows = ((size_t)e->room + 1) * (size_t)c->channels;
    if (batch < 1 || act_rows > SIZE_MAX / sizeof(double) / (e->cells ? e->cells : 1))
        return err_set(DLCA_ERR, "engine size out of range (batch %d, %zu cells)", batch, e->cells);
    e->act = malloc(act_rows * e->cells * sizeof(double));
    e->grids = malloc(grid_rows * e->cells * sizeof(double));
    e->dact = malloc(e->step_rows * e->cells * sizeof(double));
    e->dgrid = malloc((size_t)c->channels * e->cells * sizeof(double));
    e->coeffs = malloc(model->gate_count * 4 * sizeof(double));
    e->coeff_grad = calloc(model->gate_count * 4, sizeof(double));
    e->in_rows = malloc(widest_input(c) * sizeof(double *));
    e->din_rows = malloc(widest_input(c) * sizeof(double *));
    if (!e->act || !e->grids || !e->dact || !e->dgrid || !e->coeffs || !e->coeff_grad || !e->in_rows || !e->din_rows) {
        double mib = (double)(act_rows * e->cells * sizeof(double)) / (1024.0 * 1024.0);
        ca_cpu_free(e);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the CPU engine (%.0f MiB of activations)", mib);
    }
    e->fire_threshold = rng_fire_threshold(c->fire_rate);
    return DLCA_OK;
}

void ca_cpu_free(ca_cpu *e)
{
    free(e->act), free(e->grids), free(e->dact), free(e->dgrid), free(e->coeffs), free(e->coeff_grad);
    free((void *)e->in_rows), free(e->din_rows);
    memset(e, 0, sizeof *e);
}

void ca_cpu_coefficients(ca_cpu *e, const double *logits, int hard)
{
    for (size_t g = 0; g < e->model->gate_count; g++) {
        const double *z = logits + g * GATE_OP_COUNT;
        if (hard)
            gate_hard_coefficients(e->coeffs + 4 * g, gate_argmax(z));
        else
            gate_coefficients(e->coeffs + 4 * g, z);
    }
}

static double *step_block(const ca_cpu *e, int t) { return e->act + (size_t)t * e->step_rows * e->cells; }

void ca_cpu_set_coefficients(ca_cpu *e, const double *coefficients)
{
    memcpy(e->coeffs, coefficients, e->model->gate_count * 4 * sizeof(double));
}

double *ca_cpu_grid(const ca_cpu *e, int t) { return e->grids + (size_t)t * (size_t)e->model->config.channels * e->cells; }

void ca_cpu_set_fire_stream(ca_cpu *e, uint32_t stream) { e->fire_stream = stream; }

int ca_cpu_set_steps(ca_cpu *e, int steps)
{
    if (steps < 1 || steps > e->room)
        return err_set(DLCA_ERR, "a rollout of %d steps: the engine has room for 1..%d", steps, e->room);
    e->steps = steps;
    return DLCA_OK;
}

static int is_async(const ca_cpu *e) { return e->fire_threshold < (1u << 24); }

/* Perception layer l >= 1 works per (kernel, channel) block with the shared wiring. */
static void perception_forward(ca_cpu *e, const double *grid, double *block)
{
    const ca_model *m = e->model;
    const ca_config *c = &m->config;
    moore_layer_forward(block + e->perception_row[0] * e->cells, grid, &m->perception[0],
                        e->coeffs + 4 * m->perception_gate_base[0], c->kernels, c->channels, e->shape);
    for (int l = 1; l < c->perception_depth; l++) {
        size_t w_in = (size_t)c->perception_widths[l - 1], w_out = (size_t)c->perception_widths[l];
        for (int k = 0; k < c->kernels; k++)
            for (int ch = 0; ch < c->channels; ch++) {
                size_t unit = (size_t)k * (size_t)c->channels + (size_t)ch;
                for (size_t i = 0; i < w_in; i++)
                    e->in_rows[i] = block + (e->perception_row[l - 1] + unit * w_in + i) * e->cells;
                gate_layer_forward(block + (e->perception_row[l] + unit * w_out) * e->cells, e->in_rows,
                                   &m->perception[l], e->coeffs + 4 * (m->perception_gate_base[l] + (size_t)k * w_out),
                                   e->cells);
            }
    }
}

/* Rows of update layer l's input; layer 0 reads the C grid rows, then the last perception layer. */
static void update_input_rows(ca_cpu *e, const double *grid, const double *block, int l, const double **rows)
{
    const ca_config *c = &e->model->config;
    if (l > 0) {
        for (int i = 0; i < c->update_widths[l - 1]; i++) rows[i] = block + (e->update_row[l - 1] + (size_t)i) * e->cells;
        return;
    }
    size_t last = e->perception_row[c->perception_depth - 1];
    for (int i = 0; i < ca_config_update_inputs(c); i++)
        rows[i] = i < c->channels ? grid + (size_t)i * e->cells : block + (last + (size_t)(i - c->channels)) * e->cells;
}

static void update_forward(ca_cpu *e, const double *grid, double *block)
{
    const ca_model *m = e->model;
    for (int l = 0; l < m->config.update_depth; l++) {
        update_input_rows(e, grid, block, l, e->in_rows);
        gate_layer_forward(block + e->update_row[l] * e->cells, e->in_rows, &m->update[l],
                           e->coeffs + 4 * m->update_gate_base[l], e->cells);
    }
}

void ca_cpu_step_forward(ca_cpu *e, int t)
{
    const ca_config *c = &e->model->config;
    const double *grid = ca_cpu_grid(e, t);
    double *block = step_block(e, t), *next = ca_cpu_grid(e, t + 1);
    perception_forward(e, grid, block);
    update_forward(e, grid, block);
    const double *proposed = block + e->update_row[c->update_depth - 1] * e->cells;
    size_t n = (size_t)c->channels * e->cells;
    if (!is_async(e)) {
        memcpy(next, proposed, n * sizeof(double));
        return;
    }
    for (size_t cell = 0; cell < e->cells; cell++) {
        int fire = rng_fires(e->fire_stream, (uint32_t)t, (uint32_t)cell, e->fire_threshold);
        for (int ch = 0; ch < c->channels; ch++) {
            size_t at = (size_t)ch * e->cells + cell;
            next[at] = fire ? proposed[at] : grid[at];
        }
    }
}

void ca_cpu_forward(ca_cpu *e)
{
    for (int t = 0; t < e->steps; t++) ca_cpu_step_forward(e, t);
}



static void update_backward(ca_cpu *e, const double *grid, const double *block)
{
    const ca_model *m = e->model;
    for (int l = m->config.update_depth - 1; l >= 0; l--) {
        update_input_rows(e, grid, block, l, e->in_rows);
        update_input_rows(e, e->dgrid, e->dact, l, (const double **)e->din_rows);
        gate_layer_backward(e->din_rows, e->coeff_grad + 4 * m->update_gate_base[l], e->dact + e->update_row[l] * e->cells,
                            e->in_rows, &m->update[l], e->coeffs + 4 * m->update_gate_base[l], e->cells);
    }
}

static void perception_backward(ca_cpu *e, const double *grid, const double *block)
{
    const ca_model *m = e->model;
    const ca_config *c = &m->config;
    for (int l = c->perception_depth - 1; l >= 1; l--) {
        size_t w_in = (size_t)c->perception_widths[l - 1], w_out = (size_t)c->perception_widths[l];
        for (int k = 0; k < c->kernels; k++)
            for (int ch = 0; ch < c->channels; ch++) {
                size_t unit = (size_t)k * (size_t)c->channels + (size_t)ch;
                for (size_t i = 0; i < w_in; i++) {
                    size_t row = e->perception_row[l - 1] + unit * w_in + i;
                    e->in_rows[i] = block + row * e->cells;
                    e->din_rows[i] = e->dact + row * e->cells;
                }
                size_t gate = m->perception_gate_base[l] + (size_t)k * w_out;
                gate_layer_backward(e->din_rows, e->coeff_grad + 4 * gate,
                                    e->dact + (e->perception_row[l] + unit * w_out) * e->cells, e->in_rows,
                                    &m->perception[l], e->coeffs + 4 * gate, e->cells);
            }
    }
    moore_layer_backward(e->dgrid, e->coeff_grad + 4 * m->perception_gate_base[0], e->dact + e->perception_row[0] * e->cells,
                         grid, &m->perception[0], e->coeffs + 4 * m->perception_gate_base[0], c->kernels, c->channels,
                         e->shape);
}

/* Splits dL/dgrid_{t+1} between the proposed state (cells that fired) and the kept grid_t,
 * leaving the kept part in dgrid, where the rest of d grid_t accumulates. */
static void async_backward(ca_cpu *e, int t, double *dproposed)
{
    int channels = e->model->config.channels;
    for (size_t cell = 0; cell < e->cells; cell++) {
        int fire = !is_async(e) || rng_fires(e->fire_stream, (uint32_t)t, (uint32_t)cell, e->fire_threshold);
        for (int ch = 0; ch < channels; ch++) {
            size_t at = (size_t)ch * e->cells + cell;
            dproposed[at] = fire ? e->dgrid[at] : 0.0;
            e->dgrid[at] = fire ? 0.0 : e->dgrid[at];
        }
    }
}

void ca_cpu_step_backward(ca_cpu *e, int t)
{
    const ca_config *c = &e->model->config;
    const double *grid = ca_cpu_grid(e, t), *block = step_block(e, t);
    memset(e->dact, 0, e->step_rows * e->cells * sizeof(double));
    async_backward(e, t, e->dact + e->update_row[c->update_depth - 1] * e->cells);
    update_backward(e, grid, block);
    perception_backward(e, grid, block);
}

void ca_cpu_backward(ca_cpu *e) { ca_cpu_backward_window(e, NULL, e->steps); }

void ca_cpu_backward_window(ca_cpu *e, const double *dwindow, int from)
{
    size_t rows = (size_t)e->model->config.loss_channels * e->cells;
    memset(e->coeff_grad, 0, e->model->gate_count * 4 * sizeof(double));
    for (int t = e->steps - 1; t >= 0; t--) {
        ca_cpu_step_backward(e, t);
        if (dwindow && t >= from)
            for (size_t i = 0; i < rows; i++) e->dgrid[i] += dwindow[(size_t)(t - from) * rows + i];
    }
}

