/* ca_gpu_fused.c: the fused path (ca_gpu_plan.h): one dispatch a CA step forward and one
 * backward, a workgroup a tile of cells; and the persistent path, all T steps in one dispatch.
 * The kernels are compiled for each model shape, its widths and offsets as specialisation
 * constants: every seed of a shape shares them (the wiring is read from buffers). */
#include "ca_gpu_internal.h"

#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fused kernels' specialisation constants, from id 2: for fused_perception.glsl the
 * perception depth, the widths of layers 1-3, and 64 ids unused (the perception wiring, now read
 * from the wiring buffer: CA_GPU_PERCEPTION_WIRES); then for fused_update_layers.glsl the update
 * depth and per update layer its width, wiring a and b, coefficient base and step-block row,
 * as the layer table holds them; then, for fused_step_backward.comp, whether its workgroups
 * share slots (take several tiles each); the forward's and the backward's cells a tile; last,
 * for fused_update_backward.glsl, per update layer its padded reverse table and fanout. */
enum {
    FUSED_PERCEPTION_CONSTANTS = 4 + 4 * 16,
    FUSED_SHARED_SLOTS = FUSED_PERCEPTION_CONSTANTS + 1 + 5 * CA_MAX_LAYERS,
    FUSED_REVERSE = FUSED_SHARED_SLOTS + 3,
    FUSED_CONSTANTS = FUSED_REVERSE + 2 * CA_MAX_LAYERS
};
_Static_assert((int)FUSED_CONSTANTS == (int)CA_GPU_FUSED_CONSTANTS, "ca_gpu.h counts the fused constants");
_Static_assert((int)FUSED_CONSTANTS <= (int)VK_SPEC_EXTRA_MAX, "the fused kernels' constants fit a specialisation");

/* The fused kernels' layer table (after upload_wiring: it names the reverse tables). */
int gpu_upload_layers(ca_gpu *e)
{
    uint32_t rows[2 * CA_MAX_LAYERS * 16];
    e->layer_count = (uint32_t)ca_gpu_fused_layers(e, rows);
    return vk_buffer_upload(e->vk, &e->layers, 0, rows, e->layer_count * 16 * sizeof(uint32_t));
}

uint32_t ca_gpu_fused_constants(const ca_gpu *e, uint32_t *values)
{
    const ca_model *m = e->model;
    const ca_config *c = &m->config;
    memset(values, 0, FUSED_CONSTANTS * sizeof *values);
    values[0] = (uint32_t)c->perception_depth;
    for (int l = 1; l < 4; l++) values[l] = l < c->perception_depth ? (uint32_t)c->perception_widths[l] : 1;
    uint32_t rows[2 * CA_MAX_LAYERS * 16], *update = values + FUSED_PERCEPTION_CONSTANTS;
    int first = ca_gpu_fused_layers(e, rows) - c->update_depth;
    update[0] = (uint32_t)c->update_depth;
    for (int u = 0; u < c->update_depth; u++) { /* rows as layer_row writes them */
        const uint32_t *row = rows + 16 * (first + u);
        uint32_t *to = update + 1 + 5 * u;
        to[0] = row[2], to[1] = row[12], to[2] = row[13], to[3] = row[10], to[4] = row[8];
        values[FUSED_REVERSE + 2 * u] = row[14], values[FUSED_REVERSE + 2 * u + 1] = row[15];
    }
    values[FUSED_SHARED_SLOTS] = e->plan.slots < (e->plan.cells + e->plan.tile_backward - 1) / e->plan.tile_backward;
    values[FUSED_SHARED_SLOTS + 1] = e->plan.tile, values[FUSED_SHARED_SLOTS + 2] = e->plan.tile_backward;
    return FUSED_CONSTANTS;
}

/* The pipeline-table rows of the fused kernels (forward, backward, grid gather) for a model of
 * this config: the copies compiled for at most 8 update layers where it has that few, and the
 * backward with one phase per update layer on tiles of two whose layers fit a workgroup. */
static void fused_ids(const ca_config *config, uint32_t tile_backward, vk_pipeline_id ids[5])
{
    int shallow = config->update_depth <= 8; /* the copies with code for 8 layers (CMakeLists.txt) */
    int merged = tile_backward == 2;
    uint32_t group = vk_pipeline_descs[VK_PIPE_FUSED_STEP_BACKWARD_MERGED].local_size_x;
    for (int l = 0; l < config->update_depth; l++)
        if ((uint32_t)config->update_widths[l] > group) merged = 0;
    ids[0] = shallow ? VK_PIPE_FUSED_STEP_FORWARD_8 : VK_PIPE_FUSED_STEP_FORWARD;
    if (merged) {
        ids[1] = shallow ? VK_PIPE_FUSED_STEP_BACKWARD_MERGED_8 : VK_PIPE_FUSED_STEP_BACKWARD_MERGED;
        ids[4] = shallow ? VK_PIPE_FUSED_STEP_BACKWARD_MERGED_PERSISTENT_8 : VK_PIPE_FUSED_STEP_BACKWARD_MERGED_PERSISTENT;
    } else {
        ids[1] = shallow ? VK_PIPE_FUSED_STEP_BACKWARD_8 : VK_PIPE_FUSED_STEP_BACKWARD;
        ids[4] = shallow ? VK_PIPE_FUSED_STEP_BACKWARD_PERSISTENT_8 : VK_PIPE_FUSED_STEP_BACKWARD_PERSISTENT;
    }
    ids[2] = VK_PIPE_FUSED_GRID_GATHER;
    ids[3] = shallow ? VK_PIPE_FUSED_FORWARD_PERSISTENT_8 : VK_PIPE_FUSED_FORWARD_PERSISTENT;
}

/* The jobs of engine e's fused pipelines (the constants into `values`, FUSED_CONSTANTS of room). */
static int fused_jobs(ca_gpu *e, uint32_t *values, vk_specialize_job jobs[5])
{
    uint32_t count = ca_gpu_fused_constants(e, values);
    fused_ids(&e->model->config, e->plan.tile_backward, e->fused_ids);
    int n = 0;
    for (int i = 0; i < 5; i++) {
        if ((i == 3 && !e->plan.persistent_groups) || (i == 4 && !e->plan.persistent_backward)) continue;
        jobs[n++] = (vk_specialize_job){e->fused_ids[i], values, count, &e->fused_pipelines[i]};
    }
    return n;
}

/* The fused pipelines of every engine that has none yet (with `planned_only`, of those whose
 * plan runs them), compiled at once (one vk context). */
static int create_fused_pipelines(ca_gpu *const *engines, int n, int planned_only)
{
    uint32_t *values = malloc((size_t)n * FUSED_CONSTANTS * sizeof *values);
    vk_specialize_job *jobs = malloc((size_t)n * 5 * sizeof *jobs);
    if (!values || !jobs) {
        free(values), free(jobs);
        return err_set(DLCA_ERR_NOMEM, "out of memory for %d engines' pipelines", n);
    }
    int count = 0, rc = DLCA_OK;
    for (int i = 0; i < n && !rc; i++) {
        if (engines[i]->fused_pipelines[0].pipeline || (planned_only && !engines[i]->plan.fused)) continue;
        if (engines[i]->vk != engines[0]->vk) rc = err_set(DLCA_ERR, "engines of different Vulkan contexts");
        else count += fused_jobs(engines[i], values + (size_t)i * FUSED_CONSTANTS, jobs + count);
    }
    if (!rc && vk_pipeline_create_specialized_many(engines[0]->vk, jobs, count, 0)) {
        char why[512];
        snprintf(why, sizeof why, "%s", err_message());
        rc = err_set(DLCA_ERR, "compiling the fused kernels for this model failed (%s); DLCA_FUSED=0 runs the "
                               "per-layer kernels", why);
    }
    free(values), free(jobs);
    return rc;
}

/* The fused pipelines for this model, once: compiled only for an engine that runs them. */
int gpu_create_fused_pipelines(ca_gpu *e)
{
    return create_fused_pipelines(&e, 1, 0);
}

int ca_gpu_create_pipelines(ca_gpu *const *engines, int n)
{
    return n > 0 ? create_fused_pipelines(engines, n, 1) : DLCA_OK;
}

/* What the persistent kernels poll: for the forward the cells of grids 1..room (not the rows'
 * padding, which stays 0), for the backward every step's moore rows, empty (CA_GPU_EMPTY,
 * fused_persistent.glsl); and their roll calls zeroed. The backward stores its first step's S
 * partials: no zeroing. */
int gpu_clear(ca_gpu *e, VkCommandBuffer cmd, int forward, int backward)
{
    const ca_config *c = gpu_config_of(e);
    uint32_t cells = e->plan.cells, pitch = e->plan.pitch, channels = (uint32_t)c->channels, room = (uint32_t)e->room;
    gpu_fill_region regions[3];
    int n = 0;
    regions[n++] = (gpu_fill_region){&e->roll, {forward ? 0u : 1u, (uint32_t)(forward + backward), 1, 1, 0}};
    if (forward)
        regions[n++] = (gpu_fill_region){&e->grids, {channels * pitch, cells, pitch, channels * room,
                                                     CA_GPU_EMPTY}};
    if (backward)
        regions[n++] = (gpu_fill_region){&e->moore_steps, {0, cells, pitch, 8u * channels * room,
                                                           CA_GPU_EMPTY}};
    if (forward) e->cleared_forward = 1;
    if (backward) e->cleared_backward = 1;
    return gpu_fill(e, cmd, regions, n);
}

static vk_push_fused fused_push(const ca_gpu *e, int t)
{
    const ca_config *c = gpu_config_of(e);
    return (vk_push_fused){
        .cells = e->plan.cells, .pitch = e->plan.pitch, .layer_count = e->layer_count,
        .height = (uint32_t)e->shape.height, .width = (uint32_t)e->shape.width,
        .periodic = e->shape.boundary == CA_BOUNDARY_PERIODIC, .channels = (uint32_t)c->channels,
        .kernels = (uint32_t)c->kernels, .perception_layers = (uint32_t)c->perception_depth,
        .stream = e->fire_stream, .threshold = e->fire_threshold, .step = (uint32_t)t,
        .partial_rows = (uint32_t)e->step_rows, .gather = 0, .max_width = e->plan.max_width,
        .act_rows = e->plan.act_rows, .update_inputs = e->plan.update_inputs, .steps = (uint32_t)e->steps};
}

/* One table row per layer in forward order, the fields of ca_fused.glsl's fused_layer. */
static void layer_row(uint32_t *row, uint32_t kind, const vk_push_layer *p)
{
    uint32_t fields[16] = {kind, p->n_in, p->n_out, p->units, p->unit_channels, p->in_split, p->in_base, p->in_stride,
                           p->out_base, p->out_stride, p->coeff_base, p->coeff_stride, p->wiring_a, p->wiring_b,
                           p->reverse_start, p->reverse_entry};
    memcpy(row, fields, sizeof fields);
}

int ca_gpu_fused_layers(const ca_gpu *e, uint32_t *rows)
{
    const ca_config *c = gpu_config_of(e);
    vk_push_moore moore = gpu_moore_push(e);
    vk_push_layer first = {.n_in = 9, .n_out = 8, .units = moore.channels * moore.kernels, .unit_channels = moore.channels,
                           .out_base = moore.row, .out_stride = 8, .coeff_base = moore.coeff_base, .coeff_stride = 8,
                           .wiring_a = moore.wiring_a};
    uint32_t n = 0;
    layer_row(rows + 16 * n++, 0, &first);
    for (int l = 1; l < c->perception_depth; l++) {
        vk_push_layer p = gpu_perception_push(e, l);
        layer_row(rows + 16 * n++, 1, &p);
    }
    for (int l = 0; l < c->update_depth; l++) {
        vk_push_layer p = gpu_update_push(e, l); /* the fused backward reads the padded reverse */
        p.reverse_start = e->update_wiring[l].reverse_table, p.reverse_entry = e->update_wiring[l].fanout;
        layer_row(rows + 16 * n++, 1, &p);
    }
    return (int)n;
}

/* The layer table, as the fused kernels' uniform block declares it (CA_GPU_TABLE_ROWS rows). */
static vk_view gpu_table_view(ca_gpu *e) { return vk_view_of(&e->layers, 0, CA_GPU_TABLE_ROWS * 16 * sizeof(uint32_t)); }

/* The fused pipelines made here when ca_gpu_init left them to ca_gpu_create_pipelines and no
 * one called it (e->fused_ids are set with them). */
static int fused_ready(ca_gpu *e)
{
    return e->fused_pipelines[0].pipeline ? DLCA_OK : gpu_create_fused_pipelines(e);
}

/* Records fused pipeline `which` (of e->fused_ids); fused_dispatch, and the barrier after it. */
static int fused_record(ca_gpu *e, VkCommandBuffer cmd, int which, const vk_view *views, uint32_t n_views,
                        const vk_push_fused *push, uint32_t groups_x, uint32_t groups_y)
{
    if (fused_ready(e)) return DLCA_ERR;
    return vk_dispatch_pipeline(e->vk, cmd, &e->fused_pipelines[which], &vk_pipeline_descs[e->fused_ids[which]], views,
                                n_views, push, sizeof *push, groups_x, groups_y, 1);
}

static int fused_dispatch(ca_gpu *e, VkCommandBuffer cmd, int which, const vk_view *views, uint32_t n_views,
                          const vk_push_fused *push, uint32_t groups_x, uint32_t groups_y)
{
    int rc = fused_record(e, cmd, which, views, n_views, push, groups_x, groups_y);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

int gpu_fused_forward(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    vk_push_fused push = fused_push(e, t);
    vk_view views[] = {ca_gpu_grid_region(e, t), e->coeffs_at, vk_view_all(&e->wiring), gpu_table_view(e),
                       ca_gpu_grid_region(e, t + 1) GPU_CLOCKS_VIEW(e)};
    return fused_dispatch(e, cmd, 0, views, 5 + VK_CLOCK_BINDINGS, &push, e->plan.tiles, 1);
}

/* Every forward step in one dispatch (fused_forward_persistent.comp), after gpu_clear: recorded
 * before the dispatch whose barrier comes before this one, or here. */
int gpu_persistent_forward(ca_gpu *e, VkCommandBuffer cmd)
{
    int rc = DLCA_OK;
    if (!e->cleared_forward) {
        if (gpu_clear(e, cmd, 1, 0)) return DLCA_ERR;
        vk_cmd_barrier(cmd);
    }
    e->cleared_forward = 0;
    vk_view views[] = {vk_view_all(&e->grids), e->coeffs_at, vk_view_all(&e->wiring), gpu_table_view(e),
                       vk_view_all(&e->roll)};
    int steps = e->plan.persistent_stepwise ? e->steps : 1;
    for (int t = 0; !rc && t < steps; t++) {
        vk_push_fused push = fused_push(e, t);
        push.run_steps = e->plan.persistent_stepwise ? 1 : (uint32_t)e->steps;
        rc = fused_dispatch(e, cmd, 3, views, 5, &push, e->plan.persistent_groups, 1);
    }
    return rc;
}

int ca_gpu_persistent_gave_up(const ca_gpu *e)
{
    const uint32_t *roll = e->roll_host.mapped;
    uint32_t any = 0;
    for (int i = 0; i < CA_GPU_ROLL_WORDS; i++) any |= roll[i];
    return e->plan.fused && e->plan.persistent_groups && (any & CA_GPU_ROLL_CLOSED) != 0;
}

int ca_gpu_persistent_off(ca_gpu *e)
{
    e->persistent_gave_up = e->plan.persistent_groups;
    e->plan.persistent_groups = 0, e->plan.persistent_backward = 0;
    VkCommandBuffer cmd;
    if (vk_cmd_begin(e->vk, &cmd)) return DLCA_ERR;
    vk_buffer_zero(cmd, vk_view_all(&e->roll)); /* guarded AdamW reads it every step */
    return vk_cmd_finish(e->vk, cmd);
}

/* Step t's moore gradients go to gpu_moore_view(t); with `gather`, dgrid is completed first from
 * step t + 1's, in the other half. */
int gpu_fused_backward(ca_gpu *e, VkCommandBuffer cmd, int t, int gather)
{
    vk_push_fused push = fused_push(e, t);
    push.gather = gather != 0;
    vk_view views[] = {ca_gpu_grid_region(e, t),       e->coeffs_at, vk_view_all(&e->wiring),
                       gpu_table_view(e), e->dgrid_at, gpu_moore_view(e, t + 1),
                       gpu_moore_view(e, t),    vk_view_all(&e->sum_partials) GPU_CLOCKS_VIEW(e)};
    return fused_dispatch(e, cmd, 1, views, 8 + VK_CLOCK_BINDINGS, &push, e->plan.slots, 1);
}

/* Completes dL/dgrid_t after gpu_fused_backward(t): the neighbours' moore gradients of step t (from
 * `moore`, the rows of step t). After step 0 without a barrier of its own: the caller's covers it
 * and what it shares it with (ca_gpu_backward: the S reduction; ca_gpu_check.c). */
static int fused_grid_gather_from(ca_gpu *e, VkCommandBuffer cmd, int t, vk_view moore)
{
    if (fused_ready(e)) return DLCA_ERR;
    vk_push_fused push = fused_push(e, t);
    push.gather = 1;
    vk_view views[] = {ca_gpu_grid_region(e, t),         e->coeffs_at, vk_view_all(&e->wiring),
                       gpu_table_view(e), e->dgrid_at, moore};
    const vk_pipeline_desc *desc = &vk_pipeline_descs[e->fused_ids[2]];
    uint32_t groups[3];
    int rc = vk_groups_1d_local(e->vk, desc->name, desc->local_size_x, (uint64_t)gpu_config_of(e)->channels * e->plan.cells,
                                groups);
    if (!rc) rc = fused_record(e, cmd, 2, views, 6, &push, groups[0], groups[1]);
    if (!rc && t > 0) vk_cmd_barrier(cmd);
    return rc;
}

int gpu_fused_grid_gather(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    return fused_grid_gather_from(e, cmd, t, gpu_moore_view(e, t));
}

/* BPTT steps `last` down to 0 in one dispatch (fused_step_backward.comp with FUSED_PERSISTENT), or
 * one a step where the plan runs it stepwise; from the last step, after clear_backward (beside
 * the soft coefficients, or here). */
int gpu_persistent_backward(ca_gpu *e, VkCommandBuffer cmd, int last)
{
    if (!e->plan.persistent_stepwise) return gpu_persistent_backward_steps(e, cmd, last, last + 1);
    for (int t = last; t >= 0; t--)
        if (gpu_persistent_backward_steps(e, cmd, t, 1)) return DLCA_ERR;
    return DLCA_OK;
}

int gpu_persistent_backward_steps(ca_gpu *e, VkCommandBuffer cmd, int step, int count)
{
    if (!e->cleared_backward && step == e->steps - 1) {
        if (gpu_clear(e, cmd, 0, 1)) return DLCA_ERR;
        vk_cmd_barrier(cmd);
    }
    if (step == e->steps - 1) e->cleared_backward = 0;
    /* A dispatch of several steps waits for its workgroups' roll call: one dispatch a step
     * before it took tickets too, so the call starts again from 0. */
    if (count > 1 && step < e->steps - 1) {
        gpu_fill_region roll = {&e->roll, {1, 1, 1, 1, 0}};
        if (gpu_fill(e, cmd, &roll, 1)) return DLCA_ERR;
        vk_cmd_barrier(cmd);
    }
    vk_view views[] = {vk_view_all(&e->grids),        e->coeffs_at,       vk_view_all(&e->wiring),
                       gpu_table_view(e),                 e->dgrid_at,        vk_view_all(&e->moore_steps),
                       vk_view_all(&e->moore_steps), vk_view_all(&e->sum_partials), vk_view_all(&e->roll)};
    vk_push_fused push = fused_push(e, step);
    push.run_steps = (uint32_t)count;
    return fused_dispatch(e, cmd, 4, views, 9, &push, e->plan.slots, 1);
}

/* The fused backward's end: S summed and dL/dgrid_0 completed (from step 0's moore rows), one
 * barrier for both. Keep that order, the reduction before the gather: the other order, with no
 * barrier between, made the backward of one-cell-tile models (lizard, image) markedly slower on an
 * H100, for reasons not understood; the two share no buffer (docs/bench-notes.md, round 16). */
int gpu_fused_backward_end(ca_gpu *e, VkCommandBuffer cmd)
{
    size_t moore_bytes = 8 * (size_t)gpu_config_of(e)->channels * e->plan.pitch * sizeof(float);
    vk_view moore = e->plan.persistent_backward ? vk_view_of(&e->moore_steps, 0, moore_bytes) : gpu_moore_view(e, 0);
    int rc = gpu_sums_reduce(e, cmd);
    if (!rc) rc = fused_grid_gather_from(e, cmd, 0, moore);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}
