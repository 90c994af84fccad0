/* ca_fast.c: the fast CPU engine: layout, blocks, threads, and the CA step forward/backward
 * per block. A forward step needs the neighbours' grid, so steps are separated by a barrier;
 * a backward step has two phases per block (everything local, then the neighbour gradients
 * gathered from the other blocks' dneighbour rows) with one barrier between them. */
#include "ca_fast.h"

#include "ca_fast_kernel.h"
#include "ca_fast_pool.h"
#include "error.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* Block size from the cell count alone (never the thread count): at most CA_FAST_BLOCK cells,
 * whole lanes, and a multiple of 4 blocks when there are enough cells, so 2 or 4 threads get
 * even shares on small grids too (gol: 180 cells = 4 blocks of 48, not 64 + 64 + 52). */
static void choose_blocks(ca_fast *e)
{
    size_t blocks = (e->cells + CA_FAST_BLOCK - 1) / CA_FAST_BLOCK, even = round_up(blocks, 4);
    if (e->cells >= even * CA_FAST_LANES) blocks = even;
    e->block_cells = round_up((e->cells + blocks - 1) / blocks, CA_FAST_LANES);
    e->blocks = (e->cells + e->block_cells - 1) / e->block_cells;
}

static size_t scratch_floats(const ca_fast *e) { return 2 * e->plan.rows * CA_FAST_BLOCK; }

static int allocate(ca_fast *e)
{
    const ca_config *c = &e->model->config;
    size_t gates = e->model->gate_count, grid = (size_t)c->channels * e->cells;
    size_t act_floats = (size_t)e->room * e->step_rows * e->cells, scratch = scratch_floats(e) * (size_t)e->threads;
    if (e->cache && act_floats / (size_t)e->room / e->cells != e->step_rows)
        return err_set(DLCA_ERR, "engine size out of range (%zu cells)", e->cells);
    e->grids = malloc(((size_t)e->room + 1) * grid * sizeof(float));
    e->act = e->cache ? malloc(act_floats * sizeof(float)) : NULL;
    e->coeffs = calloc(gates * 4, sizeof(float));
    e->coeff_lanes = aligned_alloc(64, round_up(e->blocks * gates * 4 * CA_FAST_LANES * sizeof(float), 64));
    e->dgrid = calloc(grid, sizeof(float));
    e->dneighbour = calloc(2 * CA_FAST_DIRECTIONS * grid, sizeof(float));
    e->scratch = aligned_alloc(64, scratch * sizeof(float));
    if (!e->grids || (e->cache && !e->act) || !e->coeffs || !e->coeff_lanes || !e->dgrid || !e->dneighbour || !e->scratch)
        return err_set(DLCA_ERR_NOMEM, "out of memory for the fast CPU engine (%.0f MiB of activations)",
                       e->cache ? (double)(act_floats * sizeof(float)) / (1024.0 * 1024.0) : 0.0);
    memset(e->scratch, 0, scratch * sizeof(float)); /* padding cells start finite */
    ca_fast_clear_coeff_grad(e);
    return DLCA_OK;
}

int ca_fast_init(ca_fast *e, const ca_model *model, int batch, int height, int width, const ca_fast_options *options)
{
    const ca_config *c = &model->config;
    memset(e, 0, sizeof *e);
    e->model = model;
    e->shape = (ca_shape){batch, height > 0 ? height : c->height, width > 0 ? width : c->width, c->boundary};
    e->cells = ca_shape_cells(e->shape);
    if (batch < 1 || e->cells == 0) return err_set(DLCA_ERR, "engine size out of range (batch %d)", batch);
    e->cache = options ? options->cache : 1;
    e->steps = c->steps, e->room = c->steps + c->window;
    e->step_rows = ca_config_layout_rows(&model->config, e->perception_row, e->update_row);
    choose_blocks(e);
    int threads = options && options->threads > 0 ? options->threads : ca_fast_default_threads();
    e->threads = (size_t)threads > e->blocks ? (int)e->blocks : threads;
    e->fire_threshold = rng_fire_threshold(c->fire_rate);
    int rc = ca_fast_plan_init(&e->plan, model, e->shape, e->perception_row, e->update_row, e->step_rows);
    if (!rc) rc = allocate(e);
    if (!rc) rc = ca_fast_pool_create(&e->pool, e->threads);
    if (rc) ca_fast_free(e);
    return rc;
}

void ca_fast_free(ca_fast *e)
{
    ca_fast_pool_destroy(e->pool);
    ca_fast_plan_free(&e->plan);
    free(e->grids), free(e->act), free(e->coeffs), free(e->coeff_lanes), free(e->dgrid), free(e->dneighbour);
    free(e->scratch);
    memset(e, 0, sizeof *e);
}

/* Per-gate work (coefficients) split into fixed gate ranges, one per thread:
 * each gate's result depends on that gate alone, so the split cannot change any bit. */
typedef struct {
    const ca_fast *e;
    const double *logits;
    int hard;
} gate_job;

static void gate_range(const ca_fast *e, int thread, int threads, size_t *lo, size_t *hi)
{
    *lo = e->model->gate_count * (size_t)thread / (size_t)threads;
    *hi = e->model->gate_count * (size_t)(thread + 1) / (size_t)threads;
}

static void coefficients_job(void *ctx, int thread, int threads)
{
    const gate_job *job = ctx;
    size_t lo, hi;
    gate_range(job->e, thread, threads, &lo, &hi);
    for (size_t g = lo; g < hi; g++) {
        const double *z = job->logits + g * GATE_OP_COUNT;
        double c[GATE_COEFFS];
        if (job->hard)
            gate_hard_coefficients(c, gate_argmax(z));
        else
            gate_coefficients(c, z);
        for (int q = 0; q < GATE_COEFFS; q++) job->e->coeffs[4 * g + (size_t)q] = (float)c[q];
    }
}

void ca_fast_coefficients(ca_fast *e, const double *logits, int hard)
{
    gate_job job = {e, logits, hard};
    ca_fast_pool_run(e->pool, coefficients_job, &job);
}

void ca_fast_set_coefficients(ca_fast *e, const double *coefficients)
{
    for (size_t i = 0; i < e->model->gate_count * 4; i++) e->coeffs[i] = (float)coefficients[i];
}

float *ca_fast_grid(const ca_fast *e, int t) { return e->grids + (size_t)t * (size_t)e->model->config.channels * e->cells; }

void ca_fast_set_fire_stream(ca_fast *e, uint32_t stream) { e->fire_stream = stream; }

static int is_async(const ca_fast *e) { return e->fire_threshold < (1u << 24); }

/* ---- one block of cells ---- */

typedef struct {
    size_t index, start, len, n; /* n: len rounded up to whole lanes */
} cell_block;

static cell_block block_at(const ca_fast *e, size_t b)
{
    size_t start = b * e->block_cells, len = e->cells - start < e->block_cells ? e->cells - start : e->block_cells;
    return (cell_block){b, start, len, round_up(len, CA_FAST_LANES)};
}

static float *block_row(float *rows, size_t r) { return rows + r * CA_FAST_BLOCK; }

static void zero_padding(float *row, const cell_block *b)
{
    for (size_t i = b->len; i < b->n; i++) row[i] = 0.0f;
}

/* The grid rows and the 8 neighbour rows of every channel of grid_t. */
static void load_grid(const ca_fast *e, float *vals, int t, const cell_block *b)
{
    const float *grid = ca_fast_grid(e, t);
    for (size_t c = 0; c < e->plan.channels; c++) {
        const float *src = grid + c * e->cells;
        float *row = block_row(vals, c);
        memcpy(row, src + b->start, b->len * sizeof(float));
        zero_padding(row, b);
        for (int d = 0; d < CA_FAST_DIRECTIONS; d++) {
            const int32_t *at = e->plan.neighbour + (size_t)d * e->cells + b->start;
            row = block_row(vals, ca_fast_neighbour_row(&e->plan, (int)c, ca_fast_direction_neighbour(d)));
            for (size_t i = 0; i < b->len; i++) row[i] = at[i] < 0 ? 0.0f : src[at[i]];
            zero_padding(row, b);
        }
    }
}

/* Copies step t's activation rows between act and the block (to_act: out, else in). */
static void copy_act(const ca_fast *e, float *vals, int t, const cell_block *b, int to_act)
{
    float *act = e->act + (size_t)t * e->step_rows * e->cells + b->start;
    for (size_t r = 0; r < e->step_rows; r++) {
        float *row = block_row(vals, e->plan.act_base + r);
        if (to_act) {
            memcpy(act + r * e->cells, row, b->len * sizeof(float));
        } else {
            memcpy(row, act + r * e->cells, b->len * sizeof(float));
            zero_padding(row, b);
        }
    }
}

/* Step t's values for the block: the grid, then every gate (or the cached activations). */
static void block_values(const ca_fast *e, float *vals, int t, const cell_block *b, int from_cache)
{
    load_grid(e, vals, t, b);
    if (from_cache)
        copy_act(e, vals, t, b, 0);
    else
        ca_fast_ops_forward(vals, e->plan.ops, e->plan.op_count, e->coeffs, b->n);
}

static void fire_mask(const ca_fast *e, int t, const cell_block *b, unsigned char *fire)
{
    for (size_t i = 0; i < b->len; i++)
        fire[i] = !is_async(e) || rng_fires(e->fire_stream, (uint32_t)t, (uint32_t)(b->start + i), e->fire_threshold);
}

static size_t proposed_row(const ca_fast *e, size_t c)
{
    return e->plan.act_base + e->update_row[e->model->config.update_depth - 1] + c;
}

static void forward_block(const ca_fast *e, float *vals, int t, const cell_block *b)
{
    block_values(e, vals, t, b, 0);
    if (e->cache) copy_act(e, vals, t, b, 1);
    unsigned char fire[CA_FAST_BLOCK];
    fire_mask(e, t, b, fire);
    float *next = ca_fast_grid(e, t + 1) + b->start;
    for (size_t c = 0; c < e->plan.channels; c++) {
        const float *proposed = block_row(vals, proposed_row(e, c)), *kept = block_row(vals, c);
        for (size_t i = 0; i < b->len; i++) next[c * e->cells + i] = fire[i] ? proposed[i] : kept[i];
    }
}

/* Splits d grid_{t+1} between the proposed state (cells that fired) and the kept grid_t. */
static void load_grid_gradient(const ca_fast *e, float *grads, int t, const cell_block *b)
{
    unsigned char fire[CA_FAST_BLOCK];
    fire_mask(e, t, b, fire);
    for (size_t c = 0; c < e->plan.channels; c++) {
        const float *dnext = e->dgrid + c * e->cells + b->start;
        float *kept = block_row(grads, c), *proposed = block_row(grads, proposed_row(e, c));
        for (size_t i = 0; i < b->len; i++) {
            proposed[i] = fire[i] ? dnext[i] : 0.0f;
            kept[i] = fire[i] ? 0.0f : dnext[i];
        }
        zero_padding(kept, b), zero_padding(proposed, b);
    }
}

/* Phase 1 of a step back: all layers of the block, in reverse. Leaves the block's part of
 * d grid_t without the neighbour reads in dgrid, and those in dneighbour[t % 2]. */
static void backward_block(ca_fast *e, float *vals, float *grads, int t, const cell_block *b)
{
    const ca_fast_plan *p = &e->plan;
    float *lanes = e->coeff_lanes + b->index * e->model->gate_count * 4 * CA_FAST_LANES;
    block_values(e, vals, t, b, e->cache);
    load_grid_gradient(e, grads, t, b);
    for (int l = p->layer_count - 1; l >= 0; l--) {
        const ca_fast_layer *layer = &p->layer[l];
        for (size_t r = layer->input_begin; r < layer->input_end; r++) memset(block_row(grads, r), 0, b->n * sizeof(float));
        ca_fast_ops_backward(lanes, grads, vals, p->ops + layer->op_begin, layer->op_end - layer->op_begin, e->coeffs, b->n);
    }
    float *dn = e->dneighbour + (size_t)(t & 1) * CA_FAST_DIRECTIONS * p->channels * e->cells;
    for (size_t c = 0; c < p->channels; c++) {
        memcpy(e->dgrid + c * e->cells + b->start, block_row(grads, c), b->len * sizeof(float));
        for (int d = 0; d < CA_FAST_DIRECTIONS; d++) {
            const float *row = block_row(grads, ca_fast_neighbour_row(p, (int)c, ca_fast_direction_neighbour(d)));
            memcpy(dn + (c * CA_FAST_DIRECTIONS + (size_t)d) * e->cells + b->start, row, b->len * sizeof(float));
        }
    }
}

/* Phase 2: each cell adds what the cells reading it as a neighbour passed back. */
static void gather_neighbour_gradient(ca_fast *e, int t, const cell_block *b)
{
    const float *dn = e->dneighbour + (size_t)(t & 1) * CA_FAST_DIRECTIONS * e->plan.channels * e->cells;
    for (size_t c = 0; c < e->plan.channels; c++) {
        float *dgrid = e->dgrid + c * e->cells;
        const float *dc = dn + c * CA_FAST_DIRECTIONS * e->cells;
        for (size_t cell = b->start; cell < b->start + b->len; cell++) {
            float sum = dgrid[cell];
            for (size_t d = 0; d < CA_FAST_DIRECTIONS; d++) {
                int32_t reader = e->plan.reader[d * e->cells + cell];
                if (reader >= 0) sum += dc[d * e->cells + (size_t)reader];
            }
            dgrid[cell] = sum;
        }
    }
}

/* dgrid of the block's cells (now dL/dgrid_t, its own alone reads it next) += block k of dwindow. */
static void add_window_gradient(ca_fast *e, const float *dwindow, int k, const cell_block *b)
{
    size_t loss_channels = (size_t)e->model->config.loss_channels;
    const float *add = dwindow + (size_t)k * loss_channels * e->cells;
    for (size_t c = 0; c < loss_channels; c++)
        for (size_t cell = b->start; cell < b->start + b->len; cell++) e->dgrid[c * e->cells + cell] += add[c * e->cells + cell];
}

/* ---- jobs: a thread owns blocks [blocks * i / n, blocks * (i + 1) / n) ---- */

typedef struct {
    ca_fast *e;
    int first, last; /* steps [first, last) */
    const float *dwindow; /* backward: the loss's gradient at grids from..; NULL: none */
    int from;
} step_job;

static float *thread_scratch(const ca_fast *e, int thread) { return e->scratch + (size_t)thread * scratch_floats(e); }

static void forward_job(void *ctx, int thread, int threads)
{
    const step_job *job = ctx;
    ca_fast *e = job->e;
    size_t lo = e->blocks * (size_t)thread / (size_t)threads, hi = e->blocks * (size_t)(thread + 1) / (size_t)threads;
    for (int t = job->first; t < job->last; t++) {
        for (size_t b = lo; b < hi; b++) {
            cell_block block = block_at(e, b);
            forward_block(e, thread_scratch(e, thread), t, &block);
        }
        if (t + 1 < job->last) ca_fast_pool_barrier(e->pool);
    }
}

/* dneighbour alternates by step parity, so phase 1 of step t-1 never overwrites rows that
 * phase 2 of step t still reads: one barrier per step is enough. */
static void backward_job(void *ctx, int thread, int threads)
{
    const step_job *job = ctx;
    ca_fast *e = job->e;
    size_t lo = e->blocks * (size_t)thread / (size_t)threads, hi = e->blocks * (size_t)(thread + 1) / (size_t)threads;
    float *vals = thread_scratch(e, thread), *grads = vals + e->plan.rows * CA_FAST_BLOCK;
    for (int t = job->last - 1; t >= job->first; t--) {
        for (size_t b = lo; b < hi; b++) {
            cell_block block = block_at(e, b);
            backward_block(e, vals, grads, t, &block);
        }
        ca_fast_pool_barrier(e->pool);
        for (size_t b = lo; b < hi; b++) {
            cell_block block = block_at(e, b);
            gather_neighbour_gradient(e, t, &block);
            if (job->dwindow && t >= job->from) add_window_gradient(e, job->dwindow, t - job->from, &block);
        }
    }
}

static void run_steps(ca_fast *e, ca_fast_job job, int first, int last)
{
    step_job ctx = {e, first, last, NULL, 0};
    ca_fast_pool_run(e->pool, job, &ctx);
}

void ca_fast_step_forward(ca_fast *e, int t) { run_steps(e, forward_job, t, t + 1); }

void ca_fast_forward(ca_fast *e) { run_steps(e, forward_job, 0, e->steps); }

int ca_fast_set_steps(ca_fast *e, int steps)
{
    if (steps < 1 || steps > e->room)
        return err_set(DLCA_ERR, "a rollout of %d steps: the engine has room for 1..%d", steps, e->room);
    e->steps = steps;
    return DLCA_OK;
}

void ca_fast_step_backward(ca_fast *e, int t) { run_steps(e, backward_job, t, t + 1); }

void ca_fast_backward(ca_fast *e) { ca_fast_backward_window(e, NULL, e->steps); }

void ca_fast_backward_window(ca_fast *e, const float *dwindow, int from)
{
    ca_fast_clear_coeff_grad(e);
    step_job ctx = {e, 0, e->steps, dwindow, from};
    ca_fast_pool_run(e->pool, backward_job, &ctx);
}


void ca_fast_clear_coeff_grad(ca_fast *e)
{
    memset(e->coeff_lanes, 0, e->blocks * e->model->gate_count * 4 * CA_FAST_LANES * sizeof(float));
}

/* S value v (gate * 4 + q): blocks in order, lanes in order, in double. */
static double coeff_sum(const ca_fast *e, size_t v)
{
    size_t values = e->model->gate_count * 4;
    double sum = 0.0;
    for (size_t b = 0; b < e->blocks; b++) {
        const float *lane = e->coeff_lanes + (b * values + v) * CA_FAST_LANES;
        for (int l = 0; l < CA_FAST_LANES; l++) sum += (double)lane[l];
    }
    return sum;
}

void ca_fast_coeff_grad(const ca_fast *e, double *coeff_grad)
{
    for (size_t v = 0; v < e->model->gate_count * 4; v++) coeff_grad[v] = coeff_sum(e, v);
}


