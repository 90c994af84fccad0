/* ca_gpu_plan.c: the GPU engine's plan (ca_gpu_plan.h): which kernels, which tiles, which sizes. */
#include "ca_gpu_plan.h"

#include "error.h"
#include "gates.h"
#include "vk_pipeline.h"

#include <stdio.h>
#include <string.h>

static size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

/* Bytes of S partials the fused backward keeps at most: each of its workgroups adds into its
 * own [step_rows] slot, so past this many slots a workgroup takes several tiles in turn. */
enum { FUSED_MAX_PARTIAL_BYTES = 64 << 20 };

/* How the fused kernels would run a model on `cells` cells with `shared_floats` of shared memory
 * per workgroup (ca_fused.glsl): tiles that fit, or possible = 0. */
typedef struct {
    int possible, persistent_fits; /* the persistent forward's neighbourhoods fit beside its rows */
    int persistent_backward_fits;  /* ... the persistent backward's second neighbourhood buffer too */
    uint32_t tile, tiles, tile_backward, tiles_backward, slots, update_inputs, max_width, act_rows;
    size_t partial_bytes; /* the S partials: slots x step rows x vec4 */
} fused_fit;

/* A tile size: the option when set, else 2, or fewer where 2 do not fit. */
static size_t tile_choice(uint32_t option, size_t fits) { return option ? option : fits < 2 ? fits : 2; }

static fused_fit fit_fused(const ca_model *m, size_t cells, uint32_t shared_floats, const ca_gpu_options *o)
{
    const ca_config *c = &m->config;
    fused_fit p = {0};
    size_t update_inputs = (size_t)ca_config_update_inputs(c), max_width = update_inputs, layers = update_inputs;
    for (int l = 0; l < c->update_depth; l++) {
        if ((size_t)c->update_widths[l] > max_width) max_width = (size_t)c->update_widths[l];
        layers += (size_t)c->update_widths[l];
    }
    size_t scratch = 9 * (size_t)c->kernels * (size_t)c->channels; /* perception backward */
    size_t act = layers > scratch ? layers : scratch, perception_gates = 0;
    for (int l = 0; l < c->perception_depth; l++) perception_gates += (size_t)c->kernels * (size_t)c->perception_widths[l];
    /* Backward, per cell: activations, two gradient buffers, dgrid's kept part, neighbourhoods;
     * once: the perception coefficients (fused_step_backward.comp). */
    size_t forward_rows = 2 * max_width, backward_rows = act + 2 * max_width + 10 * (size_t)c->channels;
    size_t staged = 4 * perception_gates + 3; /* from a multiple of 4 floats */
    if (c->perception_depth > 4 || backward_rows + staged > shared_floats) return p; /* FUSED_PERCEPTION_MAX */
    size_t tile = tile_choice(o->tile, shared_floats / forward_rows);
    size_t tile_backward = tile_choice(o->tile_backward, (shared_floats - staged) / backward_rows);
    if (tile * forward_rows > shared_floats || tile_backward * backward_rows + staged > shared_floats) return p;
    p.tile = (uint32_t)tile, p.tiles = (uint32_t)((cells + tile - 1) / tile);
    p.tile_backward = (uint32_t)tile_backward;
    p.tiles_backward = (uint32_t)((cells + tile_backward - 1) / tile_backward);
    p.update_inputs = (uint32_t)update_inputs, p.max_width = (uint32_t)max_width, p.act_rows = (uint32_t)act;
    size_t perception_row[CA_MAX_LAYERS], update_row[CA_MAX_LAYERS];
    size_t row_bytes = ca_config_layout_rows(c, perception_row, update_row) * 4 * sizeof(float);
    size_t cap = FUSED_MAX_PARTIAL_BYTES / row_bytes;
    if (o->max_slots && o->max_slots < cap) cap = o->max_slots;
    if (cap < 1) cap = 1;
    p.slots = (uint32_t)(p.tiles_backward < cap ? p.tiles_backward : cap);
    p.partial_bytes = (size_t)p.slots * row_bytes;
    p.persistent_fits = tile * (forward_rows + 9 * (size_t)c->channels) <= shared_floats;
    p.persistent_backward_fits = tile_backward * (backward_rows + 9 * (size_t)c->channels) + staged <= shared_floats;
    p.possible = 1;
    return p;
}

/* Cells per lane of gate_backward.comp: enough chunks of 64 x per_thread cells to fill the GPU
 * (about 64 per row at large batches), few enough that the S partials stay small. */
static uint32_t backward_per_thread(size_t cells, uint32_t option)
{
    if (option >= 1 && option <= 64) return option;
    size_t per = cells / 4096;
    return per < 1 ? 1 : per > 16 ? 16 : (uint32_t)per;
}

/* Shared memory the fused kernels plan with: none on a device whose compute shaders cannot
 * shuffle within a subgroup (fused_step_backward.comp needs it), so they are never planned there. */
static uint32_t fused_shared_floats(const vk_context *vk) { return vk->subgroup_shuffle ? vk_shared_floats(vk) : 0; }

static void plan_sizes(ca_gpu_plan *p, const ca_model *m, const fused_fit *fit)
{
    const ca_config *c = &m->config;
    size_t perception_row[CA_MAX_LAYERS], update_row[CA_MAX_LAYERS];
    size_t rows = ca_config_layout_rows(c, perception_row, update_row), f = sizeof(float), pitch = p->pitch;
    size_t room = (size_t)c->steps + (size_t)c->window; /* a round's rollout runs up to T + window steps */
    size_t blocks = p->cache == CA_CACHE_FULL ? room : 1;
    /* One buffer of S partials for either path: [slots or chunks][rows]. */
    size_t fused_sums = fit->possible ? fit->partial_bytes : 0, chunk_sums = (size_t)p->chunks * rows * 4 * f;
    p->sizes = (ca_gpu_sizes){
        .gates16 = m->gate_count * GATE_OP_COUNT * f,
        .gates4 = m->gate_count * 4 * f,
        .grids = (room + 1) * (size_t)c->channels * pitch * f,
        .act = blocks * rows * pitch * f,
        .block = rows * pitch * f,
        .scratch = 2 * rows * pitch * f,
        .dgrid = (size_t)c->channels * pitch * f,
        .target = (size_t)c->loss_channels * pitch * f,
        .image = (size_t)c->loss_channels * (size_t)c->height * (size_t)c->width * f,
        .layers = CA_GPU_GATE_ROWS_AT + m->gate_count * 4 * sizeof(uint32_t),
        .sum_partials = fused_sums > chunk_sums ? fused_sums : chunk_sums,
        .moore_steps = p->persistent_backward ? room * 8 * (size_t)c->channels * pitch * f : 0,
    };
}

/* Every dispatch indexes rows by 32-bit integers and covers units * width rows with y groups. */
static int check_limits(const ca_gpu_plan *p, const vk_context *vk, const ca_config *c)
{
    uint32_t max_y = vk->props.limits.maxComputeWorkGroupCount[1];
    const ca_gpu_sizes *s = &p->sizes;
    if (s->scratch / sizeof(float) > UINT32_MAX || s->grids / sizeof(float) > UINT32_MAX ||
        s->sum_partials / (4 * sizeof(float)) > UINT32_MAX)
        return err_set(DLCA_ERR, "a step block of %zu floats is too large for 32-bit indexing; use a smaller batch",
                       s->block / sizeof(float));
    for (int l = 0; l < c->perception_depth; l++)
        if ((uint64_t)c->kernels * (uint64_t)c->channels * (uint64_t)(l ? c->perception_widths[l - 1] : 8) > max_y)
            return err_set(DLCA_ERR, "perception layer %d has more rows than this device can dispatch (%u)", l, max_y);
    if ((uint32_t)ca_config_update_inputs(c) > max_y)
        return err_set(DLCA_ERR, "the update input (%d) is wider than this device can dispatch (%u)",
                       ca_config_update_inputs(c), max_y);
    return DLCA_OK;
}

/* Whether the fused kernels run: wherever they fit, unless the options force a path. The
 * persistent kernels wait on each other's workgroups: automatically on a GPU only, not on a CPU
 * driver, which runs a few workgroups at a time (lavapipe: their loops would end early, wrong). */
static int choose_paths(ca_gpu_plan *p, const vk_context *vk, const fused_fit *fit, const ca_gpu_options *o)
{
    p->fused_possible = fit->possible;
    if (o->fused == CA_GPU_ON && !fit->possible)
        return err_set(DLCA_ERR, "the fused kernels do not fit this model (shared memory, or perception depth over "
                                 "4) or device (subgroup shuffles); --kernels layered runs the per-layer ones");
    p->fused = o->fused == CA_GPU_OFF ? 0 : fit->possible;
    p->tile = fit->tile, p->tiles = fit->tiles, p->tile_backward = fit->tile_backward, p->slots = fit->slots;
    p->update_inputs = fit->update_inputs, p->max_width = fit->max_width, p->act_rows = fit->act_rows;
    int on = o->persistent == CA_GPU_AUTO ? vk->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU
                                          : o->persistent != CA_GPU_OFF;
    if (on && p->fused && fit->persistent_fits) {
        p->persistent_groups = fit->tiles;
        /* A slot a tile: the persistent backward has no tile loop. */
        p->persistent_backward = fit->slots == fit->tiles_backward && fit->persistent_backward_fits;
        p->persistent_stepwise = o->persistent == CA_GPU_STEPWISE;
    }
    return DLCA_OK;
}

int ca_gpu_plan_make(ca_gpu_plan *p, const vk_context *vk, const ca_model *m, ca_shape shape,
                     const ca_gpu_options *options)
{
    const ca_gpu_options automatic = {0};
    const ca_gpu_options *o = options ? options : &automatic;
    const ca_config *c = &m->config;
    memset(p, 0, sizeof *p);
    if (shape.batch < 1 || ca_shape_cells(shape) > (1u << 30))
        return err_set(DLCA_ERR, "GPU engine: %d samples of %dx%d cells is out of range", shape.batch, shape.height,
                       shape.width);
    p->cache = o->cache;
    p->cells = (uint32_t)ca_shape_cells(shape);
    p->pitch = (uint32_t)round_up(p->cells, 64);
    p->per_thread = backward_per_thread(p->cells, o->per_thread);
    p->chunks = (uint32_t)((p->cells + 64 * (size_t)p->per_thread - 1) / (64 * (size_t)p->per_thread));
    p->blocks_per_buffer = o->blocks_per_buffer;
    fused_fit fit = fit_fused(m, p->cells, fused_shared_floats(vk), o);
    if (choose_paths(p, vk, &fit, o)) return DLCA_ERR;
    plan_sizes(p, m, &fit);
    return check_limits(p, vk, c);
}

size_t ca_gpu_plan_bytes(const ca_gpu_plan *p)
{
    const ca_gpu_sizes *s = &p->sizes;
    return s->gates16 + 2 * s->gates4 + s->grids + (p->fused ? 0 : s->act) + s->scratch + s->dgrid + s->target +
           s->image + s->layers + s->sum_partials + s->moore_steps;
}

void ca_gpu_plan_describe(const ca_gpu_plan *p, char *text, size_t size)
{
    if (!p->fused)
        snprintf(text, size, "per-layer kernels, %s cache, %u cells a lane in backward",
                 p->cache == CA_CACHE_FULL ? "full" : "checkpoint", p->per_thread);
    else if (p->persistent_groups)
        snprintf(text, size, "persistent %s (%u workgroups forward, %u backward%s), tiles of %u and %u cells",
                 p->persistent_backward ? "forward and backward" : "forward", p->persistent_groups, p->slots,
                 p->persistent_stepwise ? "; one dispatch a step" : "", p->tile, p->tile_backward);
    else
        snprintf(text, size, "fused kernels (%u workgroups forward, %u backward), tiles of %u and %u cells", p->tiles,
                 p->slots, p->tile, p->tile_backward);
}
