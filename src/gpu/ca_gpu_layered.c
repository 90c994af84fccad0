/* ca_gpu_layered.c: the per-layer path (ca_gpu_plan.h): one dispatch a gate layer forward,
 * glsl/moore_forward.comp, gate_layer_forward.comp and step_fire.comp; one gate_backward.comp
 * dispatch a layer backward, last to first, then grid_backward.comp. S goes into per-chunk
 * partials, summed once by gpu_sums_reduce. Also the layer descriptions (vk_push_layer) that the
 * fused path's layer table is made from. */
#include "ca_gpu_internal.h"

#include "error.h"

vk_push_moore gpu_moore_push(const ca_gpu *e)
{
    const ca_config *c = gpu_config_of(e);
    return (vk_push_moore){
        .cells = e->plan.cells, .pitch = e->plan.pitch, .height = (uint32_t)e->shape.height, .width = (uint32_t)e->shape.width,
        .periodic = e->shape.boundary == CA_BOUNDARY_PERIODIC, .channels = (uint32_t)c->channels,
        .kernels = (uint32_t)c->kernels, .coeff_base = (uint32_t)e->model->perception_gate_base[0],
        .wiring_a = CA_GPU_PERCEPTION_WIRES, .row = (uint32_t)e->perception_row[0]};
}

/* Perception layer l >= 1: K*C units of the shared wiring, coefficients per kernel. */
vk_push_layer gpu_perception_push(const ca_gpu *e, int l)
{
    const ca_config *c = gpu_config_of(e);
    uint32_t w_in = (uint32_t)c->perception_widths[l - 1], w_out = (uint32_t)c->perception_widths[l];
    const ca_gpu_wiring *w = &e->perception_wiring[l];
    return (vk_push_layer){
        .cells = e->plan.cells, .pitch = e->plan.pitch, .n_in = w_in, .n_out = w_out,
        .units = (uint32_t)(c->kernels * c->channels), .unit_channels = (uint32_t)c->channels, .in_split = 0,
        .in_base = (uint32_t)e->perception_row[l - 1], .in_stride = w_in, .out_base = (uint32_t)e->perception_row[l],
        .out_stride = w_out, .coeff_base = (uint32_t)e->model->perception_gate_base[l], .coeff_stride = w_out,
        .wiring_a = w->input_a, .wiring_b = w->input_b, .reverse_start = w->reverse_start,
        .reverse_entry = w->reverse_entry};
}

/* Update layer l: one unit; layer 0 reads the C grid rows, then the last perception layer. */
vk_push_layer gpu_update_push(const ca_gpu *e, int l)
{
    const ca_config *c = gpu_config_of(e);
    const ca_gpu_wiring *w = &e->update_wiring[l];
    return (vk_push_layer){
        .cells = e->plan.cells, .pitch = e->plan.pitch, .n_in = (uint32_t)e->model->update[l].n_in,
        .n_out = (uint32_t)c->update_widths[l], .units = 1, .unit_channels = 1,
        .in_split = l == 0 ? (uint32_t)c->channels : 0,
        .in_base = (uint32_t)(l == 0 ? e->perception_row[c->perception_depth - 1] : e->update_row[l - 1]),
        .out_base = (uint32_t)e->update_row[l], .coeff_base = (uint32_t)e->model->update_gate_base[l],
        .wiring_a = w->input_a, .wiring_b = w->input_b, .reverse_start = w->reverse_start,
        .reverse_entry = w->reverse_entry};
}

static vk_push_fire fire_push(const ca_gpu *e, int t)
{
    const ca_config *c = gpu_config_of(e);
    return (vk_push_fire){e->plan.cells, e->plan.pitch, (uint32_t)c->channels, (uint32_t)e->update_row[c->update_depth - 1],
                          e->fire_stream, e->fire_threshold, (uint32_t)t};
}

static int layer_forward(ca_gpu *e, VkCommandBuffer cmd, int t, vk_push_layer push)
{
    vk_view views[] = {ca_gpu_grid_region(e, t), gpu_block_view(e, t), e->coeffs_at, vk_view_all(&e->wiring)};
    return gpu_dispatch(e, cmd, VK_PIPE_GATE_LAYER_FORWARD, views, 4, &push, sizeof push, gpu_cell_groups(e),
                    push.units * push.n_out);
}

/* One CA step, one dispatch a layer: the moore layer, the perception and update layers, the fire mask. */
int gpu_layered_forward(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    const ca_config *c = gpu_config_of(e);
    vk_push_moore moore = gpu_moore_push(e);
    vk_view moore_views[] = {ca_gpu_grid_region(e, t), e->coeffs_at, vk_view_all(&e->wiring), gpu_block_view(e, t)};
    int rc = gpu_dispatch(e, cmd, VK_PIPE_MOORE_FORWARD, moore_views, 4, &moore, sizeof moore, gpu_cell_groups(e),
                      (uint32_t)(c->kernels * c->channels));
    for (int l = 1; !rc && l < c->perception_depth; l++) rc = layer_forward(e, cmd, t, gpu_perception_push(e, l));
    for (int l = 0; !rc && l < c->update_depth; l++) rc = layer_forward(e, cmd, t, gpu_update_push(e, l));
    if (rc) return rc;
    vk_push_fire fire = fire_push(e, t);
    vk_view fire_views[] = {ca_gpu_grid_region(e, t), gpu_block_view(e, t), ca_gpu_grid_region(e, t + 1)};
    return gpu_dispatch(e, cmd, VK_PIPE_STEP_FIRE, fire_views, 3, &fire, sizeof fire, gpu_cell_groups(e),
                    (uint32_t)c->channels);
}

/* gate_backward's push for a layer with forward push `p`, its dy gathered from `next`'s slots
 * at input next_in_base + unit * next_in_stride + gate, rows next.out_base + unit * next_unit_stride. */
static vk_push_gate_backward gate_backward_push(const ca_gpu *e, int t, const vk_push_layer *p, const vk_push_layer *next,
                                                uint32_t next_in_base, uint32_t next_in_stride,
                                                uint32_t next_unit_stride)
{
    vk_push_gate_backward b = {
        .cells = e->plan.cells, .pitch = e->plan.pitch, .per_thread = e->plan.per_thread, .partial_rows = (uint32_t)e->step_rows,
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
    vk_view views[] = {ca_gpu_grid_region(e, t),         gpu_block_view(e, t),       e->coeffs_at,
                       vk_view_all(&e->wiring), e->dgrid_at, gpu_slot_view(e, 0),
                       gpu_slot_view(e, 1),          vk_view_all(&e->sum_partials)};
    return gpu_dispatch(e, cmd, VK_PIPE_GATE_BACKWARD, views, 8, push, sizeof *push, e->plan.chunks, rows);
}

/* The moore layer as a layer_push (a = neighbour wiring_a[8 k + g] of kernel k, b = the centre). */
static vk_push_layer moore_layer_push(const ca_gpu *e)
{
    const ca_config *c = gpu_config_of(e);
    vk_push_moore moore = gpu_moore_push(e);
    return (vk_push_layer){.cells = e->plan.cells, .pitch = e->plan.pitch, .n_in = 9, .n_out = 8,
                           .units = (uint32_t)(c->kernels * c->channels), .unit_channels = (uint32_t)c->channels,
                           .out_base = moore.row, .out_stride = 8, .coeff_base = moore.coeff_base, .coeff_stride = 8,
                           .wiring_a = moore.wiring_a, .moore = 1};
}

int gpu_layered_backward(ca_gpu *e, VkCommandBuffer cmd, int t)
{
    const ca_config *c = gpu_config_of(e);
    int depth = c->update_depth, pdepth = c->perception_depth;
    for (int l = depth - 1; l >= 0; l--) {
        vk_push_layer p = gpu_update_push(e, l), next = l + 1 < depth ? gpu_update_push(e, l + 1) : p;
        vk_push_gate_backward b = gate_backward_push(e, t, &p, l + 1 < depth ? &next : NULL, 0, 0, 0);
        if (gate_backward(e, cmd, t, &b, p.n_out)) return DLCA_ERR;
    }
    vk_push_layer first = gpu_update_push(e, 0);
    for (int l = pdepth - 1; l >= 0; l--) {
        vk_push_layer p = l ? gpu_perception_push(e, l) : moore_layer_push(e);
        vk_push_gate_backward b;
        if (l == pdepth - 1) {
            /* The last perception layer's outputs are the first update layer's inputs C + unit * n_out + g. */
            b = gate_backward_push(e, t, &p, &first, (uint32_t)c->channels, p.n_out, 0);
        } else {
            vk_push_layer next = gpu_perception_push(e, l + 1);
            b = gate_backward_push(e, t, &p, &next, 0, 0, next.out_stride);
        }
        if (gate_backward(e, cmd, t, &b, p.units * p.n_out)) return DLCA_ERR;
    }
    vk_push_moore moore = gpu_moore_push(e);
    vk_push_grid_backward grid = {
        .cells = e->plan.cells, .pitch = e->plan.pitch, .height = moore.height, .width = moore.width,
        .periodic = moore.periodic, .channels = moore.channels, .kernels = moore.kernels, .wiring_a = moore.wiring_a,
        .moore_row = moore.row, .update_start = first.reverse_start, .update_entry = first.reverse_entry,
        .update_row = first.out_base};
    vk_view views[] = {vk_view_all(&e->wiring), gpu_slot_view(e, 0), gpu_slot_view(e, 1), e->dgrid_at};
    return gpu_dispatch(e, cmd, VK_PIPE_GRID_BACKWARD, views, 4, &grid, sizeof grid, gpu_cell_groups(e), moore.channels);
}
