/* ca_gpu.c: the Vulkan engine's memory: layout, buffers, wiring upload, host transfers. */
#include "ca_gpu.h"

#include "ca_gpu_order.h"
#include "error.h"
#include "gates.h"
#include "vk_command.h"
#include "vk_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t round_up(uint32_t value, uint32_t multiple) { return (value + multiple - 1) / multiple * multiple; }

/* Most gates that read one input of the layer, rounded up to whole chunks of 4 (the fused
 * backward reads its reverse table 4 entries at a time). */
static uint32_t wiring_fanout(const wiring *w)
{
    int most = 0;
    for (int i = 0; i < w->n_in; i++)
        if (w->reverse_start[i + 1] - w->reverse_start[i] > most) most = w->reverse_start[i + 1] - w->reverse_start[i];
    return (uint32_t)(most + 3) / 4 * 4;
}

static size_t wiring_words(const wiring *w)
{
    return 4 * (size_t)w->n_out + (size_t)w->n_in + 1 + 3 + (size_t)w->n_in * wiring_fanout(w);
}

/* Appends one layer's wiring to `words` at *used and records where each part went: the gates'
 * inputs, the CSR reverse, and the same reverse padded to `fanout` entries an input (from a
 * multiple of 4 words, read as uvec4). */
static void pack_wiring(uint32_t *words, size_t *used, const wiring *w, ca_gpu_wiring *at)
{
    size_t n = *used;
    at->input_a = (uint32_t)n;
    for (int g = 0; g < w->n_out; g++) words[n++] = (uint32_t)w->input_a[g];
    at->input_b = (uint32_t)n;
    for (int g = 0; g < w->n_out; g++) words[n++] = (uint32_t)w->input_b[g];
    at->reverse_start = (uint32_t)n;
    for (int i = 0; i <= w->n_in; i++) words[n++] = (uint32_t)w->reverse_start[i];
    at->reverse_entry = (uint32_t)n;
    for (int e = 0; e < 2 * w->n_out; e++) words[n++] = (uint32_t)w->reverse_entry[e];
    while (n % 4) words[n++] = CA_GPU_NO_ENTRY;
    at->reverse_table = (uint32_t)n, at->fanout = wiring_fanout(w);
    for (int i = 0; i < w->n_in; i++)
        for (uint32_t j = 0; j < at->fanout; j++) {
            int e = w->reverse_start[i] + (int)j;
            words[n++] = e < w->reverse_start[i + 1] ? (uint32_t)w->reverse_entry[e] : CA_GPU_NO_ENTRY;
        }
    *used = n;
}

static int upload_wiring(ca_gpu *e)
{
    const ca_model *m = e->model;
    const ca_config *c = &m->config;
    size_t total = 0, used = 0;
    for (int l = 0; l < c->perception_depth; l++) total += wiring_words(&m->perception[l]);
    for (int l = 0; l < c->update_depth; l++) total += wiring_words(&m->update[l]);
    uint32_t *words = malloc(total * sizeof(uint32_t));
    if (!words) return err_set(DLCA_ERR_NOMEM, "out of memory packing the wiring (%zu words)", total);
    for (int l = 0; l < c->perception_depth; l++) pack_wiring(words, &used, &m->perception[l], &e->perception_wiring[l]);
    for (int l = 0; l < c->update_depth; l++) pack_wiring(words, &used, &m->update[l], &e->update_wiring[l]);
    int rc = vk_buffer_create(e->vk, &e->wiring, total * sizeof(uint32_t), VK_BUFFER_DEVICE);
    if (!rc) rc = vk_buffer_upload(e->vk, &e->wiring, 0, words, total * sizeof(uint32_t));
    free(words);
    return rc;
}

/* Sizes in bytes of the per-engine buffers, in the order ca_gpu_init creates them. */
typedef struct {
    size_t gates16, gates4, grids, act, block, dact, dgrid, target, partials, image, layers, sum_partials;
} gpu_sizes;

/* How the fused kernels would run a model on `cells` cells with `shared_floats` of shared memory
 * per workgroup (ca_fused.glsl): tiles that fit, or possible = 0. */
typedef struct {
    int possible, persistent_fits; /* the persistent forward's neighbourhoods fit beside its rows */
    int persistent_backward_fits;  /* ... the persistent backward's second neighbourhood buffer too */
    uint32_t tile, tiles, tile_backward, slots, update_inputs, max_width, act_rows;
    size_t partial_bytes; /* the S partials: slots x step rows x vec4 */
} fused_plan;

static uint32_t env_count(const char *name, uint32_t fallback)
{
    const char *text = getenv(name);
    long n = text ? strtol(text, NULL, 10) : 0;
    return n >= 1 && n <= 64 ? (uint32_t)n : fallback;
}

/* Bytes of S partials the fused backward keeps at most: each of its workgroups adds into its
 * own [step_rows] slot, so past this many slots a workgroup takes several tiles in turn. */
enum { FUSED_MAX_PARTIAL_BYTES = 64 << 20 };

/* The fused backward's workgroups (S partial slots) for `tiles` tiles of `row_bytes` a slot:
 * one a tile while they fit FUSED_MAX_PARTIAL_BYTES; env DLCA_FUSED_SLOTS caps them lower. */
static uint32_t fused_slots(size_t tiles, size_t row_bytes)
{
    size_t cap = FUSED_MAX_PARTIAL_BYTES / row_bytes;
    const char *text = getenv("DLCA_FUSED_SLOTS");
    long n = text ? strtol(text, NULL, 10) : 0;
    if (n >= 1 && (size_t)n < cap) cap = (size_t)n;
    if (cap < 1) cap = 1;
    return (uint32_t)(tiles < cap ? tiles : cap);
}

static fused_plan plan_fused(const ca_model *m, size_t cells, uint32_t shared_floats)
{
    const ca_config *c = &m->config;
    fused_plan p = {0};
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
    size_t tile = shared_floats / forward_rows, tile_backward = (shared_floats - staged) / backward_rows;
    tile = env_count("DLCA_TILE", tile < 2 ? (uint32_t)tile : 2);
    tile_backward = env_count("DLCA_TILE_BACKWARD", tile_backward < 2 ? (uint32_t)tile_backward : 2);
    if (tile * forward_rows > shared_floats || tile_backward * backward_rows + staged > shared_floats) return p;
    p.tile = (uint32_t)tile, p.tiles = (uint32_t)((cells + tile - 1) / tile);
    p.tile_backward = (uint32_t)tile_backward;
    p.update_inputs = (uint32_t)update_inputs, p.max_width = (uint32_t)max_width, p.act_rows = (uint32_t)act;
    size_t perception_row[CA_MAX_LAYERS], update_row[CA_MAX_LAYERS], tiles_backward = (cells + tile_backward - 1) / tile_backward;
    size_t row_bytes = ca_config_layout_rows(c, perception_row, update_row) * 4 * sizeof(float);
    p.slots = fused_slots(tiles_backward, row_bytes);
    p.partial_bytes = (size_t)p.slots * row_bytes;
    p.persistent_fits = tile * (forward_rows + 9 * (size_t)c->channels) <= shared_floats;
    p.persistent_backward_fits = tile_backward * (backward_rows + 9 * (size_t)c->channels) + staged <= shared_floats;
    p.possible = 1;
    return p;
}

/* Cells per lane of gate_backward.comp: enough chunks of 64 x per_thread cells to fill the GPU
 * (about 64 per row at large batches), few enough that the S partials stay small; env
 * DLCA_PER_THREAD (1..64) overrides it for tuning. */
static uint32_t backward_per_thread(size_t cells)
{
    const char *text = getenv("DLCA_PER_THREAD");
    long n = text ? strtol(text, NULL, 10) : 0;
    if (n >= 1 && n <= 64) return (uint32_t)n;
    size_t per = cells / 4096;
    return per < 1 ? 1 : per > 16 ? 16 : (uint32_t)per;
}

static uint32_t backward_chunks(size_t cells)
{
    size_t chunk = 64 * (size_t)backward_per_thread(cells);
    return (uint32_t)((cells + chunk - 1) / chunk);
}

/* The buffer sizes, and in *fused how the fused kernels would run with `shared_floats`. */
static gpu_sizes engine_sizes(const ca_model *m, int batch, int height, int width, ca_cache cache,
                              uint32_t shared_floats, fused_plan *fused, uint32_t *pitch, uint32_t *partials)
{
    const ca_config *c = &m->config;
    size_t perception_row[CA_MAX_LAYERS], update_row[CA_MAX_LAYERS];
    size_t rows = ca_config_layout_rows(c, perception_row, update_row);
    size_t cells = (size_t)batch * (size_t)(height > 0 ? height : c->height) * (size_t)(width > 0 ? width : c->width);
    size_t p = round_up((uint32_t)cells, 64), f = sizeof(float), blocks = cache == CA_CACHE_FULL ? (size_t)c->steps : 1;
    *pitch = (uint32_t)p;
    *partials = (uint32_t)(((size_t)c->channels * cells + 255) / 256);
    /* One buffer of S partials for either path: [slots or chunks][rows]. */
    *fused = plan_fused(m, cells, shared_floats);
    size_t fused_sums = fused->possible ? fused->partial_bytes : 0;
    size_t chunk_sums = (size_t)backward_chunks(cells) * rows * 4 * f;
    return (gpu_sizes){
        .gates16 = m->gate_count * GATE_OP_COUNT * f,
        .gates4 = m->gate_count * 4 * f,
        .grids = ((size_t)c->steps + 1) * (size_t)c->channels * p * f,
        .act = blocks * rows * p * f,
        .block = rows * p * f,
        .dact = 2 * rows * p * f,
        .dgrid = (size_t)c->channels * p * f,
        .target = (size_t)c->loss_channels * p * f,
        .partials = (size_t)*partials * f,
        .image = (size_t)c->loss_channels * (size_t)c->height * (size_t)c->width * f,
        .layers = CA_GPU_GATE_ROWS_AT + m->gate_count * 4 * sizeof(uint32_t),
        .sum_partials = fused_sums > chunk_sums ? fused_sums : chunk_sums,
    };
}

/* Shared memory the fused kernels plan with: none on a device whose compute shaders cannot
 * shuffle within a subgroup (fused_step_backward.comp needs it), so they are never planned there. */
static uint32_t fused_shared_floats(const vk_context *vk) { return vk->subgroup_shuffle ? vk_shared_floats(vk) : 0; }

/* Bytes an engine would ask for on a device with `shared_floats` of shared memory (the fused
 * tiles, and so the S partials, depend on it), with or without the per-layer kernels' step
 * blocks: what an out-of-memory error offers instead. */
static size_t planned_bytes(const ca_model *m, int batch, int height, int width, ca_cache cache, uint32_t shared_floats,
                            int step_blocks)
{
    uint32_t pitch, partials;
    fused_plan fused;
    gpu_sizes s = engine_sizes(m, batch, height, width, cache, shared_floats, &fused, &pitch, &partials);
    return 4 * s.gates16 + 2 * s.gates4 + s.grids + (step_blocks ? s.act : 0) + s.dact + s.dgrid + s.target +
           s.partials + s.image + s.layers + s.sum_partials;
}

size_t ca_gpu_planned_bytes(const ca_model *model, const vk_context *vk, int batch, int height, int width, ca_cache cache)
{
    return planned_bytes(model, batch, height, width, cache, fused_shared_floats(vk), 1);
}

static int create_buffers(ca_gpu *e, const gpu_sizes *s)
{
    struct {
        vk_buffer *buffer;
        size_t bytes;
    } list[] = {
        {&e->logits, s->gates16}, {&e->dlogits, s->gates16},  {&e->moment1, s->gates16}, {&e->moment2, s->gates16},
        {&e->coeffs, s->gates4},  {&e->coeff_grad, s->gates4}, {&e->grids, s->grids},
        {&e->dact, s->dact},      {&e->dgrid, s->dgrid},       {&e->target, s->target},   {&e->partials, s->partials},
        {&e->image, s->image},          {&e->layers, s->layers},         {&e->sum_partials, s->sum_partials},
    };
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        if (vk_buffer_create(e->vk, list[i].buffer, list[i].bytes, VK_BUFFER_DEVICE)) return DLCA_ERR;
    const ca_config *c = &e->model->config;
    size_t moore_steps = (size_t)c->steps * 8 * (size_t)c->channels * e->pitch * sizeof(float);
    if (e->persistent_backward && vk_buffer_create(e->vk, &e->moore_steps, moore_steps, VK_BUFFER_DEVICE)) return DLCA_ERR;
    if (vk_buffer_create(e->vk, &e->roll, 4 * sizeof(uint32_t), VK_BUFFER_DEVICE)) return DLCA_ERR;
    e->act_bytes = s->act, e->block_bytes = s->block;
    /* Host-visible: written by the host between steps, or read by it after the fence. */
    if (vk_buffer_create(e->vk, &e->roll_host, 4 * sizeof(uint32_t), VK_BUFFER_STAGING)) return DLCA_ERR;
    memset(e->roll_host.mapped, 0, 4 * sizeof(uint32_t));
    if (vk_buffer_create(e->vk, &e->losses, CA_GPU_LOSS_SLOTS * sizeof(float), VK_BUFFER_STAGING)) return DLCA_ERR;
    return vk_buffer_create(e->vk, &e->step_values, 4 * sizeof(float), VK_BUFFER_STAGING);
}

static void free_step_blocks(ca_gpu *e)
{
    for (uint32_t i = 0; e->act && i < e->act_buffers; i++) vk_buffer_free(e->vk, &e->act[i]);
    free(e->act);
    e->act = NULL, e->act_buffers = e->act_blocks = 0;
}

/* The step blocks of the per-layer kernels (the fused ones keep no activations): as many to a
 * buffer as one allocation may hold, so a full cache larger than maxMemoryAllocationSize (4 GiB
 * on NVIDIA) takes several buffers. */
static int create_step_blocks(ca_gpu *e)
{
    size_t act = e->act_bytes, block = e->block_bytes;
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3};
    vkGetPhysicalDeviceProperties2(e->vk->physical, &props);
    size_t blocks = act / block, per = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize / block : blocks;
    VkDeviceSize heap = 0;
    for (uint32_t i = 0; i < e->vk->memory.memoryHeapCount; i++)
        if (e->vk->memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT && e->vk->memory.memoryHeaps[i].size > heap)
            heap = e->vk->memory.memoryHeaps[i].size;
    if (heap && act > heap) /* refused whole, as one buffer was, rather than buffer by buffer */
        return err_set(DLCA_ERR, "out of GPU memory for a device buffer of %.1f MiB (the activation cache, %zu step "
                                 "blocks; the largest device heap holds %.1f MiB)",
                       (double)act / (1024.0 * 1024.0), act / block, (double)heap / (1024.0 * 1024.0));
    const char *cap = getenv("DLCA_BLOCKS_PER_BUFFER"); /* tests: the split without 4 GiB of memory */
    if (cap && strtol(cap, NULL, 10) > 0 && (size_t)strtol(cap, NULL, 10) < per) per = (size_t)strtol(cap, NULL, 10);
    if (per < 1) per = 1;
    if (per > blocks) per = blocks;
    e->act_blocks = (uint32_t)per;
    e->act_buffers = (uint32_t)((blocks + per - 1) / per);
    e->act = calloc(e->act_buffers, sizeof *e->act);
    if (!e->act) return err_set(DLCA_ERR_NOMEM, "out of memory for %u activation buffers", e->act_buffers);
    for (uint32_t i = 0; i < e->act_buffers; i++) {
        size_t count = i + 1 < e->act_buffers ? per : blocks - (size_t)i * per;
        if (vk_buffer_create(e->vk, &e->act[i], count * block, VK_BUFFER_DEVICE)) {
            free_step_blocks(e); /* all or none, so that a later call may try again */
            return DLCA_ERR;
        }
    }
    return DLCA_OK;
}

/* Every dispatch indexes rows by 32-bit integers and covers units * width rows with y groups. */
static int check_limits(const ca_gpu *e, const gpu_sizes *s)
{
    const ca_config *c = &e->model->config;
    uint32_t max_y = e->vk->props.limits.maxComputeWorkGroupCount[1];
    if (s->dact / sizeof(float) > UINT32_MAX || s->grids / sizeof(float) > UINT32_MAX ||
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

/* Appends to the allocation error what the engine needs and what would fit instead. */
static void explain_memory_failure(const ca_gpu *e)
{
    char first[512];
    snprintf(first, sizeof first, "%s", err_message());
    const ca_model *m = e->model;
    ca_shape shape = e->shape;
    uint32_t shared = fused_shared_floats(e->vk);
    double mib = (double)planned_bytes(m, shape.batch, shape.height, shape.width, e->cache, shared, !e->fused) / 1048576.0;
    if (e->fused) {
        err_set(DLCA_ERR, "%s: the engine needs %.0f MiB (the fused kernels keep no activations, so --cache does not "
                          "change it); use a smaller --batch", first, mib);
    } else if (e->cache == CA_CACHE_FULL) {
        double fits = (double)planned_bytes(m, shape.batch, shape.height, shape.width, CA_CACHE_CHECKPOINT, shared, 1) /
                      1048576.0;
        err_set(DLCA_ERR, "%s: the engine needs %.0f MiB with --cache full; --cache checkpoint needs %.0f MiB, "
                          "or use a smaller --batch", first, mib, fits);
    } else {
        err_set(DLCA_ERR, "%s: the engine needs %.0f MiB with --cache checkpoint; use a smaller --batch", first, mib);
    }
}

/* Why the fused kernels cannot run, after `asked` (how they were asked for). */
static int fused_impossible(const char *asked, const char *advice)
{
    return err_set(DLCA_ERR,
                   "%sthe fused kernels do not fit this model (shared memory, or perception depth over 4) or device "
                   "(subgroup shuffles)%s",
                   asked, advice);
}

/* The fused kernels' plan, and whether they run: env DLCA_FUSED=0 or 1 decides when set (1
 * where they do not fit is an error); otherwise they run wherever they fit. On an H100 they beat
 * the per-layer kernels at every batch measured: checkerboard 2 to 256 (0.62 vs 5.2 ms, 65.3 vs
 * 108.7 with 2.4 GB instead of 25), image 1 to 16 (7.9 vs 12.8 ms at 16, eleventh round), lizard
 * 1 to 16 (17.6 vs 21.8 at 16; tools/BENCH_NOTES.md). */
static int choose_fused(ca_gpu *e, const fused_plan *plan)
{
    const fused_plan p = *plan;
    const char *choice = getenv("DLCA_FUSED");
    e->fused_possible = p.possible;
    e->tile = p.tile, e->tiles = p.tiles, e->tile_backward = p.tile_backward, e->slots = p.slots;
    e->update_inputs = p.update_inputs, e->max_width = p.max_width, e->act_rows = p.act_rows;
    if (choice && choice[0] == '1' && !p.possible)
        return fused_impossible("DLCA_FUSED=1: ", "; unset it to run the per-layer kernels");
    if (choice && (choice[0] == '0' || choice[0] == '1'))
        e->fused = choice[0] == '1';
    else
        e->fused = p.possible;
    /* The persistent kernels wait on each other's workgroups: on a GPU, not on a CPU driver, which
     * runs a few workgroups at a time (lavapipe: its loops would end early, wrong). DLCA_PERSISTENT
     * 0 or 1 forces them off or on; `step` runs them one dispatch a step (what CI tests). */
    const char *persistent = getenv("DLCA_PERSISTENT");
    int on = persistent ? persistent[0] != '0' : e->vk->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    if (on && e->fused && p.persistent_fits) { /* none on the per-layer path: no moore_steps */
        uint32_t tiles_backward = (e->cells + p.tile_backward - 1) / p.tile_backward;
        e->persistent_groups = p.tiles;
        /* A slot a tile: the kernel has no tile loop. */
        e->persistent_backward = p.slots == tiles_backward && p.persistent_backward_fits;
        e->persistent_stepwise = persistent && strcmp(persistent, "step") == 0;
    }
    return DLCA_OK;
}

/* The fused kernels' layer table (after upload_wiring: it names the reverse tables). */
static int upload_layers(ca_gpu *e)
{
    uint32_t rows[2 * CA_MAX_LAYERS * 16];
    e->layer_count = (uint32_t)ca_gpu_fused_layers(e, rows);
    return vk_buffer_upload(e->vk, &e->layers, 0, rows, e->layer_count * 16 * sizeof(uint32_t));
}

/* The fused kernels' specialisation constants, from id 2: for fused_perception.glsl the
 * perception depth, the widths of layers 1-3, and each of the 4 possible perception layers'
 * wiring, a at l * 16 + g, b at l * 16 + 8 + g; then for fused_update_layers.glsl the update
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
_Static_assert((int)FUSED_CONSTANTS <= (int)VK_SPEC_EXTRA_MAX, "the fused kernels' constants fit a specialisation");

static uint32_t fused_constants(const ca_gpu *e, uint32_t *values)
{
    const ca_model *m = e->model;
    const ca_config *c = &m->config;
    memset(values, 0, FUSED_CONSTANTS * sizeof *values);
    values[0] = (uint32_t)c->perception_depth;
    for (int l = 1; l < 4; l++) values[l] = l < c->perception_depth ? (uint32_t)c->perception_widths[l] : 1;
    for (int l = 0; l < c->perception_depth && l < 4; l++)
        for (int g = 0; g < m->perception[l].n_out && g < 8; g++) {
            values[4 + l * 16 + g] = (uint32_t)m->perception[l].input_a[g];
            values[4 + l * 16 + 8 + g] = (uint32_t)m->perception[l].input_b[g];
        }
    uint32_t rows[2 * CA_MAX_LAYERS * 16], *update = values + FUSED_PERCEPTION_CONSTANTS;
    int first = ca_gpu_fused_layers(e, rows) - c->update_depth;
    update[0] = (uint32_t)c->update_depth;
    for (int u = 0; u < c->update_depth; u++) { /* rows as layer_row writes them */
        const uint32_t *row = rows + 16 * (first + u);
        uint32_t *to = update + 1 + 5 * u;
        to[0] = row[2], to[1] = row[12], to[2] = row[13], to[3] = row[10], to[4] = row[8];
        values[FUSED_REVERSE + 2 * u] = row[14], values[FUSED_REVERSE + 2 * u + 1] = row[15];
    }
    values[FUSED_SHARED_SLOTS] = e->slots < (e->cells + e->tile_backward - 1) / e->tile_backward;
    values[FUSED_SHARED_SLOTS + 1] = e->tile, values[FUSED_SHARED_SLOTS + 2] = e->tile_backward;
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

/* The fused pipelines for this model, once: compiled only for an engine that runs them. */
static int create_fused_pipelines(ca_gpu *e)
{
    if (e->fused_pipelines[0].pipeline) return DLCA_OK;
    uint32_t values[FUSED_CONSTANTS];
    uint32_t count = fused_constants(e, values);
    fused_ids(&e->model->config, e->tile_backward, e->fused_ids);
    for (int i = 0; i < 5; i++) {
        if ((i == 3 && !e->persistent_groups) || (i == 4 && !e->persistent_backward)) continue;
        if (vk_pipeline_create_specialized(e->vk, e->fused_ids[i], values, count, &e->fused_pipelines[i])) {
            char why[512];
            snprintf(why, sizeof why, "%s", err_message());
            for (int j = 0; j <= i; j++) vk_pipeline_destroy(e->vk, &e->fused_pipelines[j]);
            return err_set(DLCA_ERR, "compiling the fused kernels for this model failed (%s); DLCA_FUSED=0 runs the "
                                     "per-layer kernels", why);
        }
    }
    return DLCA_OK;
}

int ca_gpu_use_fused(ca_gpu *e, int on)
{
    if (on && !e->fused_possible)
        return fused_impossible("", "");
    if (on && create_fused_pipelines(e)) return DLCA_ERR;
    if (!on && !e->act && create_step_blocks(e)) return DLCA_ERR;
    e->fused = on != 0;
    return DLCA_OK;
}

/* gate_sums_reduce.comp's table: per model gate, the activation rows whose S partials it sums
 * (perception gate (l, k, g): the C rows of kernel k's units; update gate: its own row). */
static int upload_gate_rows(ca_gpu *e)
{
    const ca_model *m = e->model;
    const ca_config *c = &m->config;
    uint32_t *rows = calloc(m->gate_count * 4, sizeof(uint32_t));
    if (!rows) return err_set(DLCA_ERR_NOMEM, "out of memory for the gate row table");
    for (int l = 0; l < c->perception_depth; l++) {
        uint32_t w = (uint32_t)c->perception_widths[l];
        for (uint32_t k = 0; k < (uint32_t)c->kernels; k++)
            for (uint32_t g = 0; g < w; g++) {
                uint32_t *at = rows + 4 * (m->perception_gate_base[l] + k * w + g);
                at[0] = (uint32_t)e->perception_row[l] + k * (uint32_t)c->channels * w + g;
                at[1] = (uint32_t)c->channels, at[2] = w;
            }
    }
    for (int l = 0; l < c->update_depth; l++)
        for (uint32_t g = 0; g < (uint32_t)c->update_widths[l]; g++) {
            uint32_t *at = rows + 4 * (m->update_gate_base[l] + g);
            at[0] = (uint32_t)e->update_row[l] + g, at[1] = 1, at[2] = 0;
        }
    int rc = vk_buffer_upload(e->vk, &e->layers, CA_GPU_GATE_ROWS_AT, rows, m->gate_count * 4 * sizeof(uint32_t));
    free(rows);
    return rc;
}

vk_buffer *ca_gpu_block_buffer(ca_gpu *e, int t, size_t *offset)
{
    uint32_t block = e->cache == CA_CACHE_FULL ? (uint32_t)t : 0;
    *offset = (size_t)(block % e->act_blocks) * e->step_rows * e->pitch * sizeof(float);
    return &e->act[block / e->act_blocks];
}

/* Zeroes `count` buffers now, in one submission. */
static int zero_now(ca_gpu *e, vk_buffer *const *buffers, int count)
{
    VkCommandBuffer cmd;
    if (vk_cmd_begin(e->vk, &cmd)) return DLCA_ERR;
    int rc = DLCA_OK;
    for (int i = 0; !rc && i < count; i++) rc = vk_buffer_zero(cmd, vk_view_all(buffers[i]));
    if (rc) {
        vk_cmd_free(e->vk, cmd);
        return rc;
    }
    return vk_cmd_finish(e->vk, cmd);
}

/* Clears the AdamW state (and the roll calls its guard reads). */
static int zero_moments(ca_gpu *e)
{
    vk_buffer *const buffers[] = {&e->moment1, &e->moment2, &e->roll};
    return zero_now(e, buffers, 3);
}

int ca_gpu_init(ca_gpu *e, vk_context *vk, const ca_model *model, int batch, int height, int width, ca_cache cache)
{
    const ca_config *c = &model->config;
    memset(e, 0, sizeof *e);
    e->vk = vk, e->cache = cache;
    e->shape = (ca_shape){batch, height > 0 ? height : c->height, width > 0 ? width : c->width, c->boundary};
    if (batch < 1 || ca_shape_cells(e->shape) > (1u << 30))
        return err_set(DLCA_ERR, "GPU engine: %d samples of %dx%d cells is out of range", batch, e->shape.height,
                       e->shape.width);
    e->gate_row = malloc(sizeof(uint32_t) * model->gate_count);
    if (!e->gate_row) return err_set(DLCA_ERR_NOMEM, "out of memory for %zu gates' order", model->gate_count);
    if (ca_gpu_order_model(model, &e->device_model, e->gate_row)) {
        free(e->gate_row);
        e->gate_row = NULL;
        return DLCA_ERR;
    }
    model = e->model = &e->device_model;
    e->cells = (uint32_t)ca_shape_cells(e->shape);
    e->step_rows = ca_config_layout_rows(c, e->perception_row, e->update_row);
    fused_plan fused;
    gpu_sizes sizes = engine_sizes(model, batch, height, width, cache, fused_shared_floats(vk), &fused, &e->pitch,
                                   &e->partial_count);
    e->fire_threshold = rng_fire_threshold(c->fire_rate);
    e->per_thread = backward_per_thread(e->cells);
    e->chunks = backward_chunks(e->cells);
    int rc = check_limits(e, &sizes);
    /* loss_grad.comp writes one partial per workgroup of its whole (x, y) grid; the persistent
     * forward one per cell and channel. */
    uint32_t groups[3];
    if (!rc) rc = vk_groups_1d(vk, VK_PIPE_LOSS_GRAD, (uint64_t)c->channels * e->cells, groups);
    if (!rc) e->partial_count = groups[0] * groups[1];
    size_t cell_partials = (size_t)c->channels * e->cells;
    sizes.partials = (cell_partials > e->partial_count ? cell_partials : e->partial_count) * sizeof(float);
    if (!rc) rc = choose_fused(e, &fused);
    if (!rc && (create_buffers(e, &sizes) || (!e->fused && create_step_blocks(e)))) {
        explain_memory_failure(e);
        rc = DLCA_ERR;
    }
    if (!rc) rc = upload_wiring(e);
    if (!rc) rc = upload_layers(e);
    if (!rc && e->fused) rc = create_fused_pipelines(e);
    if (!rc) rc = upload_gate_rows(e);
    /* The device model's logits are the caller's, already in the engine's order. */
    if (!rc) rc = vk_buffer_upload(vk, &e->logits, 0, model->logits, model->gate_count * GATE_OP_COUNT * sizeof(float));
    if (!rc) rc = zero_moments(e);
    /* The S partials start zero: the persistent backward relies on it for the rows it never
     * writes (fused_step_backward.comp, sums_so_far). */
    vk_buffer *const sums[] = {&e->sum_partials};
    if (!rc) rc = zero_now(e, sums, 1);
    if (rc) ca_gpu_free(e);
    return rc;
}

/* The engine's buffers but the step blocks (e->act), for what is done to each of them. */
#define ENGINE_BUFFERS(X)                                                                                        \
    X(logits) X(coeffs) X(coeff_grad) X(dlogits) X(moment1) X(moment2) X(step_values) X(wiring) X(grids) X(dact) \
    X(dgrid) X(target) X(partials) X(losses) X(image) X(layers) X(sum_partials) X(roll) \
    X(moore_steps) X(roll_host)

size_t ca_gpu_buffer_bytes(const ca_gpu *e)
{
    size_t bytes = 0;
#define DEVICE_BYTES(name) bytes += e->name.kind == VK_BUFFER_DEVICE ? e->name.allocated : 0;
    ENGINE_BUFFERS(DEVICE_BYTES)
#undef DEVICE_BYTES
    for (uint32_t i = 0; e->act && i < e->act_buffers; i++) bytes += e->act[i].allocated;
    return bytes;
}

void ca_gpu_free(ca_gpu *e)
{
#define FREE_BUFFER(name) if (e->vk) vk_buffer_free(e->vk, &e->name);
    ENGINE_BUFFERS(FREE_BUFFER)
#undef FREE_BUFFER
    for (int i = 0; e->vk && i < 5; i++) vk_pipeline_destroy(e->vk, &e->fused_pipelines[i]);
    if (e->vk) free_step_blocks(e); /* e->act exists only beside e->vk */
    if (e->gate_row) ca_model_free(&e->device_model);
    free(e->gate_row);
    memset(e, 0, sizeof *e);
}

/* Gate rows between the model's order (model) and the engine's (device), `width` floats a gate. */
static void gate_rows_to_device(const ca_gpu *e, size_t width, const float *model, float *device)
{
    for (size_t g = 0; g < e->model->gate_count; g++)
        memcpy(device + e->gate_row[g] * width, model + g * width, width * sizeof(float));
}

static void gate_rows_to_model(const ca_gpu *e, size_t width, const float *device, float *model)
{
    for (size_t g = 0; g < e->model->gate_count; g++)
        memcpy(model + g * width, device + e->gate_row[g] * width, width * sizeof(float));
}

size_t ca_gpu_step_row(const ca_gpu *e, size_t row)
{
    const ca_model *m = e->model;
    for (int l = 0; l < m->config.update_depth; l++)
        if (row >= e->update_row[l] && row < e->update_row[l] + (size_t)m->config.update_widths[l]) {
            size_t base = m->update_gate_base[l];
            return e->update_row[l] + e->gate_row[base + row - e->update_row[l]] - base;
        }
    return row;
}

int ca_gpu_upload_gate_rows(ca_gpu *e, vk_buffer *buffer, int width, const float *values)
{
    size_t n = e->model->gate_count * (size_t)width;
    float *staged = malloc(n * sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory staging %zu gate values", n);
    gate_rows_to_device(e, (size_t)width, values, staged);
    int rc = vk_buffer_upload(e->vk, buffer, 0, staged, n * sizeof(float));
    free(staged);
    return rc;
}

int ca_gpu_download_gate_rows(ca_gpu *e, vk_buffer *buffer, int width, float *values)
{
    size_t n = e->model->gate_count * (size_t)width;
    float *staged = malloc(n * sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory reading %zu gate values", n);
    int rc = vk_buffer_download(e->vk, buffer, 0, staged, n * sizeof(float));
    if (!rc) gate_rows_to_model(e, (size_t)width, staged, values);
    free(staged);
    return rc;
}

int ca_gpu_upload_logits(ca_gpu *e, const float *logits, int reset_moments)
{
    if (ca_gpu_upload_gate_rows(e, &e->logits, GATE_OP_COUNT, logits)) return DLCA_ERR;
    return reset_moments ? zero_moments(e) : DLCA_OK;
}

int ca_gpu_download_logits(ca_gpu *e, float *logits)
{
    return ca_gpu_download_gate_rows(e, &e->logits, GATE_OP_COUNT, logits);
}

/* [rows][cells] doubles <-> [rows][pitch] floats at byte `offset` of `buffer`. */
static int upload_rows(ca_gpu *e, vk_buffer *buffer, size_t offset, const double *values, size_t rows)
{
    float *staged = calloc(rows * e->pitch, sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory staging %zu rows", rows);
    for (size_t r = 0; r < rows; r++)
        for (size_t x = 0; x < e->cells; x++) staged[r * e->pitch + x] = (float)values[r * e->cells + x];
    int rc = vk_buffer_upload(e->vk, buffer, offset, staged, rows * e->pitch * sizeof(float));
    free(staged);
    return rc;
}

static int download_rows(ca_gpu *e, vk_buffer *buffer, size_t offset, double *values, size_t rows)
{
    float *staged = malloc(rows * e->pitch * sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory staging %zu rows", rows);
    int rc = vk_buffer_download(e->vk, buffer, offset, staged, rows * e->pitch * sizeof(float));
    for (size_t r = 0; !rc && r < rows; r++)
        for (size_t x = 0; x < e->cells; x++) values[r * e->cells + x] = staged[r * e->pitch + x];
    free(staged);
    return rc;
}

static size_t grid_offset(const ca_gpu *e, int t)
{
    return (size_t)t * (size_t)e->model->config.channels * e->pitch * sizeof(float);
}

int ca_gpu_upload_grid(ca_gpu *e, int t, const double *grid)
{
    if (t > 0) e->cleared_forward = 0; /* a grid the persistent forward would poll */
    return upload_rows(e, &e->grids, grid_offset(e, t), grid, (size_t)e->model->config.channels);
}

int ca_gpu_download_grid(ca_gpu *e, int t, double *grid)
{
    return download_rows(e, &e->grids, grid_offset(e, t), grid, (size_t)e->model->config.channels);
}

int ca_gpu_download_dgrid(ca_gpu *e, double *dgrid)
{
    return download_rows(e, &e->dgrid, 0, dgrid, (size_t)e->model->config.channels);
}

int ca_gpu_upload_target(ca_gpu *e, const double *target)
{
    return upload_rows(e, &e->target, 0, target, (size_t)e->model->config.loss_channels);
}

void ca_gpu_set_fire_stream(ca_gpu *e, uint32_t stream) { e->fire_stream = stream; }

int ca_gpu_upload_image(ca_gpu *e, const double *image)
{
    const ca_config *c = &e->model->config;
    size_t n = (size_t)c->loss_channels * (size_t)c->height * (size_t)c->width;
    float *staged = malloc(n * sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory staging the target picture");
    for (size_t i = 0; i < n; i++) staged[i] = (float)image[i];
    int rc = vk_buffer_upload(e->vk, &e->image, 0, staged, n * sizeof(float));
    free(staged);
    return rc;
}

int ca_gpu_read_losses(ca_gpu *e, float *losses, uint32_t count)
{
    if (count > CA_GPU_LOSS_SLOTS) return err_set(DLCA_ERR, "only %d loss slots", CA_GPU_LOSS_SLOTS);
    return vk_buffer_download(e->vk, &e->losses, 0, losses, count * sizeof(float));
}

int ca_gpu_read_gate_values(ca_gpu *e, vk_buffer *buffer, int width, double *values)
{
    size_t n = e->model->gate_count * (size_t)width;
    float *staged = malloc(n * sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory reading %zu gate values", n);
    int rc = ca_gpu_download_gate_rows(e, buffer, width, staged);
    for (size_t i = 0; !rc && i < n; i++) values[i] = staged[i];
    free(staged);
    return rc;
}
