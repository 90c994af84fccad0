/* ca_gpu_step.c: recording the CA step, loss, BPTT and AdamW on the GPU, mirroring ca_cpu.c.
 * Every dispatch is followed by a compute barrier: each reads what the one before wrote. */
#include "ca_gpu.h"

#include "error.h"
#include "gates.h"
#include "rng.h"
#include "vk_command.h"
#include "vk_pipeline.h"

#include <math.h>
#include <string.h>

static const ca_config *config_of(const ca_gpu *e) { return &e->model->config; }

static uint32_t cell_groups(const ca_gpu *e) { return (e->cells + 63) / 64; }

static vk_view grid_view(ca_gpu *e, int t)
{
    size_t bytes = (size_t)config_of(e)->channels * e->pitch * sizeof(float);
    return vk_view_of(&e->grids, (size_t)t * bytes, bytes);
}

static vk_view block_view(ca_gpu *e, int t)
{
    size_t offset;
    vk_buffer *buffer = ca_gpu_block_buffer(e, t, &offset);
    return vk_view_of(buffer, offset, e->step_rows * e->pitch * sizeof(float));
}

/* Half `which` of dact: the slot gradients for input a (0) or b (1); the fused path's dact is half 0. */
static vk_view slot_view(ca_gpu *e, int which)
{
    size_t half = e->step_rows * e->pitch * sizeof(float);
    return vk_view_of(&e->dact, (size_t)which * half, half);
}

static int dispatch(ca_gpu *e, VkCommandBuffer cmd, vk_pipeline_id id, const vk_view *views, uint32_t n_views,
                    const void *push, uint32_t push_size, uint32_t groups_x, uint32_t groups_y)
{
    int rc = vk_dispatch(e->vk, cmd, id, views, n_views, push, push_size, groups_x, groups_y, 1);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

/* Instrumentation (dlca bench): one timestamp, only when the engine profiles. */
static int mark(ca_gpu *e, VkCommandBuffer cmd, ca_gpu_mark which)
{
    if (!e->profile) return DLCA_OK;
    if (which == CA_GPU_MARK_START && vk_cmd_timestamps_reset(e->vk, cmd, e->profile_first, CA_GPU_MARK_COUNT))
        return DLCA_ERR;
    return vk_cmd_timestamp(e->vk, cmd, e->profile_first + (uint32_t)which);
}

_Static_assert(CA_START_BOARDS == 0 && CA_START_RANDOM == 1 && CA_START_ZEROS == 2 && CA_START_SEED_CELL == 3,
               "start kinds as task_round.comp numbers them");
_Static_assert(CA_TARGET_LIFE == 0 && CA_TARGET_CHECKERBOARD == 1 && CA_TARGET_IMAGE == 2,
               "target kinds as task_round.comp numbers them");

int ca_gpu_task_round(ca_gpu *e, VkCommandBuffer cmd, uint64_t round)
{
    const ca_config *c = config_of(e);
    if (c->start == CA_START_BOARDS && (e->shape.height != 3 || e->shape.width != 3))
        return err_set(DLCA_ERR, "board starts need a 3x3 grid, not %dx%d", e->shape.height, e->shape.width);
    vk_push_task push = {e->cells, e->pitch, (uint32_t)e->shape.height, (uint32_t)e->shape.width,
                         (uint32_t)c->channels, (uint32_t)c->loss_channels, (uint32_t)c->start, (uint32_t)c->target,
                         rng_task_stream(c->seed, round), e->shape.boundary == CA_BOUNDARY_PERIODIC};
    vk_view views[] = {grid_view(e, 0), vk_view_all(&e->target), vk_view_all(&e->image)};
    int rc = vk_dispatch_1d(e->vk, cmd, VK_PIPE_TASK_ROUND, views, 3, &push, sizeof push,
                            (uint64_t)c->channels * e->cells);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

/* Words [first, first + count) of `buffer` set to `value` (buffer_fill.comp), no barrier. */
static int fill_words(ca_gpu *e, VkCommandBuffer cmd, vk_buffer *buffer, size_t first, size_t count, uint32_t value)
{
    if (first + count > UINT32_MAX) return err_set(DLCA_ERR, "fill of %zu words past 2^32", first + count);
    vk_push_buffer_fill push = {(uint32_t)first, (uint32_t)count, value};
    vk_view view = vk_view_all(buffer);
    return vk_dispatch_1d(e->vk, cmd, VK_PIPE_BUFFER_FILL, &view, 1, &push, sizeof push, (count + 3) / 4);
}

/* What the persistent forward polls: grids 1..T empty (CA_GPU_EMPTY, fused_persistent.glsl), its
 * roll call zeroed. No barrier of its own. */
static int clear_forward(ca_gpu *e, VkCommandBuffer cmd)
{
    const ca_config *c = config_of(e);
    size_t grid_words = (size_t)c->channels * e->pitch;
    e->cleared_forward = 1;
    return fill_words(e, cmd, &e->grids, grid_words, (size_t)c->steps * grid_words, CA_GPU_EMPTY) ||
                   fill_words(e, cmd, &e->roll, 0, 1, 0)
               ? DLCA_ERR
               : DLCA_OK;
}

/* What the persistent backward polls: every step's moore rows empty, its roll call zeroed (it
 * stores its first step's S partials: no zeroing). No barrier of its own. */
static int clear_backward(ca_gpu *e, VkCommandBuffer cmd)
{
    e->cleared_backward = 1;
    return fill_words(e, cmd, &e->moore_steps, 0, e->moore_steps.size / 4, CA_GPU_EMPTY) ||
                   fill_words(e, cmd, &e->roll, 1, 1, 0)
               ? DLCA_ERR
               : DLCA_OK;
}

/* The clears beside the coefficients' dispatch: one barrier interval instead of three a rollout
 * (tools/BENCH_NOTES.md, sixteenth round). */
int ca_gpu_coefficients(ca_gpu *e, VkCommandBuffer cmd, int hard)
{
    if (mark(e, cmd, CA_GPU_MARK_START)) return DLCA_ERR;
    if (e->fused && e->persistent_groups && clear_forward(e, cmd)) return DLCA_ERR;
    if (e->fused && e->persistent_backward && !hard && clear_backward(e, cmd)) return DLCA_ERR;
    vk_push_gate_coefficients push = {(uint32_t)e->model->gate_count, hard ? 1u : 0u};
    vk_view views[] = {vk_view_all(&e->logits), vk_view_all(&e->coeffs)};
    int rc = vk_dispatch_1d(e->vk, cmd, VK_PIPE_GATE_COEFFICIENTS, views, 2, &push, sizeof push, e->model->gate_count);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

static vk_push_moore moore_push(const ca_gpu *e)
{
    const ca_config *c = config_of(e);
    return (vk_push_moore){
        .cells = e->cells, .pitch = e->pitch, .height = (uint32_t)e->shape.height, .width = (uint32_t)e->shape.width,
        .periodic = e->shape.boundary == CA_BOUNDARY_PERIODIC, .channels = (uint32_t)c->channels,
        .kernels = (uint32_t)c->kernels, .coeff_base = (uint32_t)e->model->perception_gate_base[0],
        .wiring_a = e->perception_wiring[0].input_a, .row = (uint32_t)e->perception_row[0]};
}

/* Perception layer l >= 1: K*C units of the shared wiring, coefficients per kernel. */
static vk_push_layer perception_push(const ca_gpu *e, int l)
{
    const ca_config *c = config_of(e);
    uint32_t w_in = (uint32_t)c->perception_widths[l - 1], w_out = (uint32_t)c->perception_widths[l];
    const ca_gpu_wiring *w = &e->perception_wiring[l];
    return (vk_push_layer){
        .cells = e->cells, .pitch = e->pitch, .n_in = w_in, .n_out = w_out,
        .units = (uint32_t)(c->kernels * c->channels), .unit_channels = (uint32_t)c->channels, .in_split = 0,
        .in_base = (uint32_t)e->perception_row[l - 1], .in_stride = w_in, .out_base = (uint32_t)e->perception_row[l],
        .out_stride = w_out, .coeff_base = (uint32_t)e->model->perception_gate_base[l], .coeff_stride = w_out,
        .wiring_a = w->input_a, .wiring_b = w->input_b, .reverse_start = w->reverse_start,
        .reverse_entry = w->reverse_entry};
}

/* Update layer l: one unit; layer 0 reads the C grid rows, then the last perception layer. */
static vk_push_layer update_push(const ca_gpu *e, int l)
{
    const ca_config *c = config_of(e);
    const ca_gpu_wiring *w = &e->update_wiring[l];
    return (vk_push_layer){
        .cells = e->cells, .pitch = e->pitch, .n_in = (uint32_t)e->model->update[l].n_in,
        .n_out = (uint32_t)c->update_widths[l], .units = 1, .unit_channels = 1,
        .in_split = l == 0 ? (uint32_t)c->channels : 0,
        .in_base = (uint32_t)(l == 0 ? e->perception_row[c->perception_depth - 1] : e->update_row[l - 1]),
        .out_base = (uint32_t)e->update_row[l], .coeff_base = (uint32_t)e->model->update_gate_base[l],
        .wiring_a = w->input_a, .wiring_b = w->input_b, .reverse_start = w->reverse_start,
        .reverse_entry = w->reverse_entry};
}

static vk_push_fire fire_push(const ca_gpu *e, int t)
{
    const ca_config *c = config_of(e);
    return (vk_push_fire){e->cells, e->pitch, (uint32_t)c->channels, (uint32_t)e->update_row[c->update_depth - 1],
                          e->fire_stream, e->fire_threshold, (uint32_t)t};
}

static int layer_forward(ca_gpu *e, VkCommandBuffer cmd, int t, vk_push_layer push)
{
    vk_view views[] = {grid_view(e, t), block_view(e, t), vk_view_all(&e->coeffs), vk_view_all(&e->wiring)};
    return dispatch(e, cmd, VK_PIPE_GATE_LAYER_FORWARD, views, 4, &push, sizeof push, cell_groups(e),
                    push.units * push.n_out);
}

static int fused_forward(ca_gpu *e, VkCommandBuffer cmd, int t);

int ca_step_forward_gpu(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    const ca_config *c = config_of(e);
    e->cleared_forward = 0; /* it writes a grid the persistent forward would poll */
    if (e->fused) return fused_forward(e, cmd, t);
    vk_push_moore moore = moore_push(e);
    vk_view moore_views[] = {grid_view(e, t), vk_view_all(&e->coeffs), vk_view_all(&e->wiring), block_view(e, t)};
    int rc = dispatch(e, cmd, VK_PIPE_MOORE_FORWARD, moore_views, 4, &moore, sizeof moore, cell_groups(e),
                      (uint32_t)(c->kernels * c->channels));
    for (int l = 1; !rc && l < c->perception_depth; l++) rc = layer_forward(e, cmd, t, perception_push(e, l));
    for (int l = 0; !rc && l < c->update_depth; l++) rc = layer_forward(e, cmd, t, update_push(e, l));
    if (rc) return rc;
    vk_push_fire fire = fire_push(e, t);
    vk_view fire_views[] = {grid_view(e, t), block_view(e, t), grid_view(e, t + 1)};
    return dispatch(e, cmd, VK_PIPE_STEP_FIRE, fire_views, 3, &fire, sizeof fire, cell_groups(e),
                    (uint32_t)c->channels);
}

static int persistent_forward(ca_gpu *e, VkCommandBuffer cmd, int with_loss);

int ca_gpu_forward(ca_gpu *e, VkCommandBuffer cmd)
{
    if (e->fused && e->persistent_groups) {
        if (persistent_forward(e, cmd, 0)) return DLCA_ERR;
    } else {
        for (int t = 0; t < config_of(e)->steps; t++)
            if (ca_step_forward_gpu(e, cmd, t)) return DLCA_ERR;
    }
    return mark(e, cmd, CA_GPU_MARK_FORWARD_END);
}

/* The loss into losses[slot]: the sum of `count` partials. Only the host reads it, and any next
 * barrier covers it: none of its own. */
static int loss_reduce(ca_gpu *e, VkCommandBuffer cmd, uint32_t count, uint32_t slot)
{
    vk_push_reduce reduce = {count, slot};
    vk_view views[] = {vk_view_all(&e->partials), vk_view_all(&e->losses)};
    return vk_dispatch(e->vk, cmd, VK_PIPE_REDUCE_SUM, views, 2, &reduce, sizeof reduce, 1, 1, 1);
}

int ca_gpu_loss(ca_gpu *e, VkCommandBuffer cmd, uint32_t slot)
{
    const ca_config *c = config_of(e);
    if (slot >= CA_GPU_LOSS_SLOTS) return err_set(DLCA_ERR, "loss slot %u of %d", slot, CA_GPU_LOSS_SLOTS);
    vk_push_loss loss = {e->cells, e->pitch, (uint32_t)c->channels, (uint32_t)c->loss_channels};
    vk_view views[] = {grid_view(e, c->steps), vk_view_all(&e->target), vk_view_all(&e->dgrid),
                       vk_view_all(&e->partials)};
    int rc = vk_dispatch_1d(e->vk, cmd, VK_PIPE_LOSS_GRAD, views, 4, &loss, sizeof loss, (uint64_t)c->channels * e->cells);
    if (rc) return rc;
    vk_cmd_barrier(cmd);
    return loss_reduce(e, cmd, e->partial_count, slot);
}

int ca_gpu_forward_loss(ca_gpu *e, VkCommandBuffer cmd, uint32_t slot)
{
    if (!e->fused || !e->persistent_groups)
        return ca_gpu_forward(e, cmd) || ca_gpu_loss(e, cmd, slot) ? DLCA_ERR : DLCA_OK;
    if (slot >= CA_GPU_LOSS_SLOTS) return err_set(DLCA_ERR, "loss slot %u of %d", slot, CA_GPU_LOSS_SLOTS);
    if (persistent_forward(e, cmd, 1) || mark(e, cmd, CA_GPU_MARK_FORWARD_END)) return DLCA_ERR;
    return loss_reduce(e, cmd, (uint32_t)config_of(e)->channels * e->cells, slot);
}

/* ---- the per-layer path's backward: one gate_backward dispatch per layer, last to first, each
 * gathering its output gradient from the slot gradients of the layer after it; then one
 * grid_backward. S goes into per-chunk partials, summed once by ca_gpu_sums_finish. ---- */

/* gate_backward's push for a layer with forward push `p`, its dy gathered from `next`'s slots
 * at input next_in_base + unit * next_in_stride + gate, rows next.out_base + unit * next_unit_stride. */
static vk_push_gate_backward gate_backward_push(const ca_gpu *e, int t, const vk_push_layer *p, const vk_push_layer *next,
                                                uint32_t next_in_base, uint32_t next_in_stride,
                                                uint32_t next_unit_stride)
{
    vk_push_gate_backward b = {
        .cells = e->cells, .pitch = e->pitch, .per_thread = e->per_thread, .partial_rows = (uint32_t)e->step_rows,
        .n_out = p->n_out, .unit_channels = p->unit_channels, .coeff_base = p->coeff_base,
        .coeff_stride = p->coeff_stride, .in_split = p->in_split, .in_base = p->in_base, .in_stride = p->in_stride,
        .out_base = p->out_base, .out_stride = p->out_stride, .wiring_a = p->wiring_a, .wiring_b = p->wiring_b,
        .source = next ? 0 : 1, .next_in_base = next_in_base, .next_in_stride = next_in_stride,
        .next_unit_stride = next_unit_stride, .moore = p->moore, .height = (uint32_t)e->shape.height,
        .width = (uint32_t)e->shape.width, .periodic = e->shape.boundary == CA_BOUNDARY_PERIODIC,
        .stream = e->fire_stream, .threshold = e->fire_threshold, .step = (uint32_t)t};
    if (next) b.next_start = next->reverse_start, b.next_entry = next->reverse_entry, b.next_out_base = next->out_base;
    return b;
}

static int gate_backward(ca_gpu *e, VkCommandBuffer cmd, int t, const vk_push_gate_backward *push, uint32_t rows)
{
    vk_view views[] = {grid_view(e, t),         block_view(e, t),       vk_view_all(&e->coeffs),
                       vk_view_all(&e->wiring), vk_view_all(&e->dgrid), slot_view(e, 0),
                       slot_view(e, 1),          vk_view_all(&e->sum_partials)};
    return dispatch(e, cmd, VK_PIPE_GATE_BACKWARD, views, 8, push, sizeof *push, e->chunks, rows);
}

/* The moore layer as a layer_push (a = neighbour wiring_a[g], b = the centre). */
static vk_push_layer moore_layer_push(const ca_gpu *e)
{
    const ca_config *c = config_of(e);
    vk_push_moore moore = moore_push(e);
    return (vk_push_layer){.cells = e->cells, .pitch = e->pitch, .n_in = 9, .n_out = 8,
                           .units = (uint32_t)(c->kernels * c->channels), .unit_channels = (uint32_t)c->channels,
                           .out_base = moore.row, .out_stride = 8, .coeff_base = moore.coeff_base, .coeff_stride = 8,
                           .wiring_a = moore.wiring_a, .moore = 1};
}

static int layered_backward(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    const ca_config *c = config_of(e);
    int depth = c->update_depth, pdepth = c->perception_depth;
    for (int l = depth - 1; l >= 0; l--) {
        vk_push_layer p = update_push(e, l), next = l + 1 < depth ? update_push(e, l + 1) : p;
        vk_push_gate_backward b = gate_backward_push(e, t, &p, l + 1 < depth ? &next : NULL, 0, 0, 0);
        if (gate_backward(e, cmd, t, &b, p.n_out)) return DLCA_ERR;
    }
    vk_push_layer first = update_push(e, 0);
    for (int l = pdepth - 1; l >= 0; l--) {
        vk_push_layer p = l ? perception_push(e, l) : moore_layer_push(e);
        vk_push_gate_backward b;
        if (l == pdepth - 1) {
            /* The last perception layer's outputs are the first update layer's inputs C + unit * n_out + g. */
            b = gate_backward_push(e, t, &p, &first, (uint32_t)c->channels, p.n_out, 0);
        } else {
            vk_push_layer next = perception_push(e, l + 1);
            b = gate_backward_push(e, t, &p, &next, 0, 0, next.out_stride);
        }
        if (gate_backward(e, cmd, t, &b, p.units * p.n_out)) return DLCA_ERR;
    }
    vk_push_moore moore = moore_push(e);
    vk_push_grid_backward grid = {
        .cells = e->cells, .pitch = e->pitch, .height = moore.height, .width = moore.width,
        .periodic = moore.periodic, .channels = moore.channels, .kernels = moore.kernels, .wiring_a = moore.wiring_a,
        .moore_row = moore.row, .update_start = first.reverse_start, .update_entry = first.reverse_entry,
        .update_row = first.out_base};
    vk_view views[] = {vk_view_all(&e->wiring), slot_view(e, 0), slot_view(e, 1), vk_view_all(&e->dgrid)};
    return dispatch(e, cmd, VK_PIPE_GRID_BACKWARD, views, 4, &grid, sizeof grid, cell_groups(e), moore.channels);
}

/* ---- the fused path: one dispatch per CA step forward, one backward ---- */

static vk_push_fused fused_push(const ca_gpu *e, int t)
{
    const ca_config *c = config_of(e);
    return (vk_push_fused){
        .cells = e->cells, .pitch = e->pitch, .layer_count = e->layer_count,
        .height = (uint32_t)e->shape.height, .width = (uint32_t)e->shape.width,
        .periodic = e->shape.boundary == CA_BOUNDARY_PERIODIC, .channels = (uint32_t)c->channels,
        .kernels = (uint32_t)c->kernels, .perception_layers = (uint32_t)c->perception_depth,
        .stream = e->fire_stream, .threshold = e->fire_threshold, .step = (uint32_t)t,
        .partial_rows = (uint32_t)e->step_rows, .gather = 0, .max_width = e->max_width,
        .act_rows = e->act_rows, .update_inputs = e->update_inputs, .steps = (uint32_t)c->steps,
        .loss_channels = (uint32_t)c->loss_channels};
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
    const ca_config *c = config_of(e);
    vk_push_moore moore = moore_push(e);
    vk_push_layer first = {.n_in = 9, .n_out = 8, .units = moore.channels * moore.kernels, .unit_channels = moore.channels,
                           .out_base = moore.row, .out_stride = 8, .coeff_base = moore.coeff_base, .coeff_stride = 8,
                           .wiring_a = moore.wiring_a};
    uint32_t n = 0;
    layer_row(rows + 16 * n++, 0, &first);
    for (int l = 1; l < c->perception_depth; l++) {
        vk_push_layer p = perception_push(e, l);
        layer_row(rows + 16 * n++, 1, &p);
    }
    for (int l = 0; l < c->update_depth; l++) {
        vk_push_layer p = update_push(e, l); /* the fused backward reads the padded reverse */
        p.reverse_start = e->update_wiring[l].reverse_table, p.reverse_entry = e->update_wiring[l].fanout;
        layer_row(rows + 16 * n++, 1, &p);
    }
    return (int)n;
}

/* The layer table, as the fused kernels' uniform block declares it (CA_GPU_TABLE_ROWS rows). */
static vk_view table_view(ca_gpu *e) { return vk_view_of(&e->layers, 0, CA_GPU_TABLE_ROWS * 16 * sizeof(uint32_t)); }

/* Records fused pipeline `which` (of e->fused_ids); fused_dispatch, and the barrier after it. */
static int fused_record(ca_gpu *e, VkCommandBuffer cmd, int which, const vk_view *views, uint32_t n_views,
                        const vk_push_fused *push, uint32_t groups_x, uint32_t groups_y)
{
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

static int fused_forward(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    vk_push_fused push = fused_push(e, t);
    vk_view views[] = {grid_view(e, t), vk_view_all(&e->coeffs), vk_view_all(&e->wiring), table_view(e),
                       grid_view(e, t + 1)};
    return fused_dispatch(e, cmd, 0, views, 5, &push, e->tiles, 1);
}

/* Every forward step in one dispatch (fused_forward_persistent.comp), after clear_forward: beside
 * the coefficients, or here where they did not clear since the last forward. `with_loss`: the
 * loss gradient in dgrid and the squared errors in partials too. */
static int persistent_forward(ca_gpu *e, VkCommandBuffer cmd, int with_loss)
{
    const ca_config *c = config_of(e);
    int rc = DLCA_OK;
    if (!e->cleared_forward) {
        if (clear_forward(e, cmd)) return DLCA_ERR;
        vk_cmd_barrier(cmd);
    }
    e->cleared_forward = 0;
    vk_view views[] = {vk_view_all(&e->grids),  vk_view_all(&e->coeffs), vk_view_all(&e->wiring),
                       table_view(e),           vk_view_all(&e->roll),   vk_view_all(&e->target),
                       vk_view_all(&e->dgrid),  vk_view_all(&e->partials)};
    int steps = e->persistent_stepwise ? c->steps : 1;
    for (int t = 0; !rc && t < steps; t++) {
        vk_push_fused push = fused_push(e, t);
        push.run_steps = e->persistent_stepwise ? 1 : (uint32_t)c->steps;
        push.with_loss = with_loss != 0;
        rc = fused_dispatch(e, cmd, 3, views, 8, &push, e->persistent_groups, 1);
    }
    return rc;
}

int ca_gpu_persistent_gave_up(const ca_gpu *e)
{
    const uint32_t *roll = e->roll_host.mapped;
    return e->fused && e->persistent_groups && ((roll[0] | roll[1]) & CA_GPU_ROLL_CLOSED) != 0;
}

int ca_gpu_persistent_off(ca_gpu *e)
{
    e->persistent_gave_up = e->persistent_groups;
    e->persistent_groups = 0, e->persistent_backward = 0;
    VkCommandBuffer cmd;
    if (vk_cmd_begin(e->vk, &cmd)) return DLCA_ERR;
    vk_buffer_zero(cmd, vk_view_all(&e->roll)); /* guarded AdamW reads it every step */
    return vk_cmd_finish(e->vk, cmd);
}

/* Step t's moore gradients go to dact half t % 2; with `gather`, dgrid is completed first from
 * step t + 1's, in the other half. */
static int fused_backward(ca_gpu *e, VkCommandBuffer cmd, int t, int gather)
{
    vk_push_fused push = fused_push(e, t);
    push.gather = gather != 0;
    vk_view views[] = {grid_view(e, t),       vk_view_all(&e->coeffs), vk_view_all(&e->wiring),
                       table_view(e), vk_view_all(&e->dgrid), slot_view(e, (t + 1) % 2),
                       slot_view(e, t % 2),    vk_view_all(&e->sum_partials)};
    return fused_dispatch(e, cmd, 1, views, 8, &push, e->slots, 1);
}

/* Completes dL/dgrid_t after fused_backward(t): the neighbours' moore gradients of step t (from
 * `moore`, the rows of step t). After step 0 without a barrier of its own: the caller's covers it
 * and what it shares it with (ca_gpu_backward: the S reduction; ca_gpu_check.c). */
static int fused_grid_gather_from(ca_gpu *e, VkCommandBuffer cmd, int t, vk_view moore)
{
    vk_push_fused push = fused_push(e, t);
    push.gather = 1;
    vk_view views[] = {grid_view(e, t),         vk_view_all(&e->coeffs), vk_view_all(&e->wiring),
                       table_view(e), vk_view_all(&e->dgrid), moore};
    const vk_pipeline_desc *desc = &vk_pipeline_descs[e->fused_ids[2]];
    uint32_t groups[3];
    int rc = vk_groups_1d_local(e->vk, desc->name, desc->local_size_x, (uint64_t)config_of(e)->channels * e->cells,
                                groups);
    if (!rc) rc = fused_record(e, cmd, 2, views, 6, &push, groups[0], groups[1]);
    if (!rc && t > 0) vk_cmd_barrier(cmd);
    return rc;
}

static int fused_grid_gather(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    return fused_grid_gather_from(e, cmd, t, slot_view(e, t % 2));
}

/* Every BPTT step in one dispatch (fused_step_backward.comp with FUSED_PERSISTENT), after
 * clear_backward (beside the soft coefficients, or here). */
static int persistent_backward(ca_gpu *e, VkCommandBuffer cmd)
{
    const ca_config *c = config_of(e);
    if (!e->cleared_backward) {
        if (clear_backward(e, cmd)) return DLCA_ERR;
        vk_cmd_barrier(cmd);
    }
    e->cleared_backward = 0;
    vk_view views[] = {vk_view_all(&e->grids),        vk_view_all(&e->coeffs),       vk_view_all(&e->wiring),
                       table_view(e),                 vk_view_all(&e->dgrid),        vk_view_all(&e->moore_steps),
                       vk_view_all(&e->moore_steps), vk_view_all(&e->sum_partials), vk_view_all(&e->roll)};
    int steps = e->persistent_stepwise ? c->steps : 1;
    for (int n = 0; n < steps; n++) {
        vk_push_fused push = fused_push(e, c->steps - 1 - n);
        push.run_steps = e->persistent_stepwise ? 1 : (uint32_t)c->steps;
        if (fused_dispatch(e, cmd, 4, views, 9, &push, e->slots, 1)) return DLCA_ERR;
    }
    return DLCA_OK;
}

int ca_gpu_sums_zero(ca_gpu *e, VkCommandBuffer cmd)
{
    vk_cmd_barrier_compute_to_transfer(cmd);
    int rc = vk_buffer_zero(cmd, vk_view_all(&e->sum_partials));
    vk_cmd_barrier_transfer_to_compute(cmd);
    return rc;
}

/* gate_sums_reduce.comp, no barrier of its own. */
static int sums_reduce(ca_gpu *e, VkCommandBuffer cmd)
{
    vk_push_gate_sums_reduce push = {(uint32_t)e->model->gate_count, e->fused ? e->slots : e->chunks,
                                     (uint32_t)e->step_rows};
    vk_view views[] = {vk_view_all(&e->sum_partials), vk_view_of(&e->layers, CA_GPU_GATE_ROWS_AT, 0),
                       vk_view_all(&e->coeff_grad)};
    /* One workgroup per gate, as x times y workgroups. */
    uint32_t gates = (uint32_t)e->model->gate_count, max_x = e->vk->props.limits.maxComputeWorkGroupCount[0];
    uint32_t groups_x = gates < max_x ? gates : max_x;
    return vk_dispatch(e->vk, cmd, VK_PIPE_GATE_SUMS_REDUCE, views, 3, &push, sizeof push, groups_x,
                       (gates + groups_x - 1) / groups_x, 1);
}

int ca_gpu_sums_finish(ca_gpu *e, VkCommandBuffer cmd)
{
    int rc = sums_reduce(e, cmd);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

/* The fused backward's end: S summed and dL/dgrid_0 completed (from step 0's moore rows), one
 * barrier for both. In that order: the gather dispatched first, and no barrier between, made
 * lizard's backward 20% slower on an H100, image's 16% (tools/BENCH_NOTES.md, sixteenth round). */
static int fused_backward_end(ca_gpu *e, VkCommandBuffer cmd)
{
    size_t moore_bytes = 8 * (size_t)config_of(e)->channels * e->pitch * sizeof(float);
    vk_view moore = e->persistent_backward ? vk_view_of(&e->moore_steps, 0, moore_bytes) : slot_view(e, 0);
    int rc = sums_reduce(e, cmd);
    if (!rc) rc = fused_grid_gather_from(e, cmd, 0, moore);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

int ca_step_backward_gpu(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    if (e->fused) /* recomputes the step itself, whatever the cache */
        return fused_backward(e, cmd, t, 0) || fused_grid_gather(e, cmd, t) ? DLCA_ERR : DLCA_OK;
    if (e->cache == CA_CACHE_CHECKPOINT && ca_step_forward_gpu(e, cmd, t)) return DLCA_ERR;
    return layered_backward(e, cmd, t);
}

static int persistent_backward(ca_gpu *e, VkCommandBuffer cmd);

int ca_gpu_backward(ca_gpu *e, VkCommandBuffer cmd)
{
    int steps = config_of(e)->steps;
    if (mark(e, cmd, CA_GPU_MARK_BACKWARD_START)) return DLCA_ERR;
    if (e->fused && e->persistent_backward) {
        if (persistent_backward(e, cmd) || fused_backward_end(e, cmd)) return DLCA_ERR;
        return mark(e, cmd, CA_GPU_MARK_BACKWARD_END);
    }
    if (ca_gpu_sums_zero(e, cmd)) return DLCA_ERR;
    for (int t = steps - 1; t >= 0; t--) {
        /* Fused: each step completes the one before it, so one dispatch a step, and one gather
         * after step 0. */
        int rc = e->fused ? fused_backward(e, cmd, t, t + 1 < steps) : ca_step_backward_gpu(e, cmd, t);
        if (rc) return DLCA_ERR;
    }
    if (e->fused ? fused_backward_end(e, cmd) : ca_gpu_sums_finish(e, cmd)) return DLCA_ERR;
    return mark(e, cmd, CA_GPU_MARK_BACKWARD_END);
}

int ca_gpu_logits_gradient(ca_gpu *e, VkCommandBuffer cmd)
{
    vk_push_logits_grad push = {(uint32_t)e->model->gate_count};
    vk_view views[] = {vk_view_all(&e->logits), vk_view_all(&e->coeff_grad), vk_view_all(&e->dlogits)};
    int rc = vk_dispatch_1d(e->vk, cmd, VK_PIPE_LOGITS_GRAD, views, 3, &push, sizeof push, e->model->gate_count);
    if (!rc) vk_cmd_barrier(cmd);
    return rc;
}

void ca_gpu_set_adamw_step(ca_gpu *e, const ca_adamw *adamw, uint64_t step)
{
    float *values = e->step_values.mapped;
    values[0] = adamw->learning_rate;
    values[1] = (float)(1.0 - pow(adamw->beta1, (double)step));
    values[2] = (float)(1.0 - pow(adamw->beta2, (double)step));
}

/* After the AdamW dispatch: its barrier, the end mark, and the roll calls for the host. */
static int adamw_recorded(ca_gpu *e, VkCommandBuffer cmd, int rc)
{
    if (!rc) vk_cmd_barrier(cmd);
    if (!rc) rc = mark(e, cmd, CA_GPU_MARK_END);
    /* The roll calls for the host, after the fence (ca_gpu_persistent_gave_up). */
    if (!rc && e->fused && e->persistent_groups) {
        vk_cmd_barrier_compute_to_transfer(cmd);
        VkBufferCopy region = {0, 0, 2 * sizeof(uint32_t)};
        vkCmdCopyBuffer(cmd, e->roll.buffer, e->roll_host.buffer, 1, &region);
    }
    return rc;
}

static vk_push_adamw adamw_push(const ca_gpu *e, const ca_adamw *adamw)
{
    uint32_t count = (uint32_t)(e->model->gate_count * GATE_OP_COUNT);
    return (vk_push_adamw){count, adamw->beta1, adamw->beta2, adamw->eps, adamw->weight_decay, adamw->clip};
}

int ca_gpu_adamw(ca_gpu *e, VkCommandBuffer cmd, const ca_adamw *adamw)
{
    vk_push_adamw push = adamw_push(e, adamw);
    vk_view views[] = {vk_view_all(&e->logits),  vk_view_all(&e->dlogits),     vk_view_all(&e->moment1),
                       vk_view_all(&e->moment2), vk_view_all(&e->step_values), vk_view_all(&e->roll)};
    int rc = vk_dispatch_1d(e->vk, cmd, VK_PIPE_ADAMW_GUARDED, views, 6, &push, sizeof push, push.count);
    return adamw_recorded(e, cmd, rc);
}

int ca_gpu_logits_adamw(ca_gpu *e, VkCommandBuffer cmd, const ca_adamw *adamw)
{
    vk_push_adamw push = adamw_push(e, adamw);
    vk_view views[] = {vk_view_all(&e->logits),      vk_view_all(&e->coeff_grad), vk_view_all(&e->moment1),
                       vk_view_all(&e->moment2),     vk_view_all(&e->step_values), vk_view_all(&e->roll),
                       vk_view_all(&e->dlogits)};
    int rc = vk_dispatch_1d(e->vk, cmd, VK_PIPE_LOGITS_ADAMW, views, 7, &push, sizeof push, push.count);
    return adamw_recorded(e, cmd, rc);
}
