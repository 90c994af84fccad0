/* ca_gpu.c: the Vulkan engine's lifetime: its plan, buffers, wiring and tables. */
#include "ca_gpu_internal.h"

#include "ca_gpu_order.h"
#include "error.h"
#include "gates.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    /* The perception wires first, at fixed places: 16 words a layer from layer 1
     * (CA_GPU_PERCEPTION_WIRES), then the moore layer's neighbour order of each kernel (its own,
     * or the one all share), then each later layer packed. Every kernel reads the moore layer
     * from those orders, so it is not packed as a layer. */
    size_t head = CA_GPU_PERCEPTION_WIRES + 8 * (size_t)c->kernels;
    size_t total = head, used = head;
    for (int l = 1; l < c->perception_depth; l++) total += wiring_words(&m->perception[l]);
    for (int l = 0; l < c->update_depth; l++) total += wiring_words(&m->update[l]);
    uint32_t *words = malloc(total * sizeof(uint32_t));
    if (!words) return err_set(DLCA_ERR_NOMEM, "out of memory packing the wiring (%zu words)", total);
    memset(words, 0, head * sizeof *words);
    for (int l = 1; l < c->perception_depth && l < 4; l++)
        for (int g = 0; g < m->perception[l].n_out && g < 8; g++)
            words[l * 16 + g] = (uint32_t)m->perception[l].input_a[g],
            words[l * 16 + 8 + g] = (uint32_t)m->perception[l].input_b[g];
    for (int k = 0; k < c->kernels; k++)
        for (int g = 0; g < 8; g++)
            words[CA_GPU_PERCEPTION_WIRES + 8 * (size_t)k + (size_t)g] =
                (uint32_t)wiring_moore_neighbour(&m->perception[0], k, g);
    for (int l = 1; l < c->perception_depth; l++)
        pack_wiring(words, &used, &m->perception[l], &e->perception_wiring[l]);
    for (int l = 0; l < c->update_depth; l++) pack_wiring(words, &used, &m->update[l], &e->update_wiring[l]);
    int rc = vk_buffer_create(e->vk, &e->wiring, total * sizeof(uint32_t), VK_BUFFER_DEVICE);
    if (!rc) rc = vk_buffer_upload(e->vk, &e->wiring, 0, words, total * sizeof(uint32_t));
    free(words);
    return rc;
}

static int create_buffers(ca_gpu *e, const ca_gpu_sizes *s)
{
    struct {
        vk_buffer *buffer;
        size_t bytes;
    } list[] = {
        {&e->logits, s->gates16},
        {&e->coeffs, s->gates4},  {&e->coeff_grad, s->gates4}, {&e->grids, s->grids},
        {&e->scratch, s->scratch},      {&e->dgrid, s->dgrid},       {&e->target, s->target},
        {&e->image, s->image},          {&e->layers, s->layers},         {&e->sum_partials, s->sum_partials},
    };
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        if (vk_buffer_create(e->vk, list[i].buffer, list[i].bytes, VK_BUFFER_DEVICE)) return DLCA_ERR;
    if (s->moore_steps && vk_buffer_create(e->vk, &e->moore_steps, s->moore_steps, VK_BUFFER_DEVICE)) return DLCA_ERR;
    if (vk_buffer_create(e->vk, &e->roll, 4 * sizeof(uint32_t), VK_BUFFER_DEVICE)) return DLCA_ERR;
    /* Host-visible: written by the host between steps, or read by it after the fence. */
    if (vk_buffer_create(e->vk, &e->roll_host, 4 * sizeof(uint32_t), VK_BUFFER_STAGING)) return DLCA_ERR;
    memset(e->roll_host.mapped, 0, 4 * sizeof(uint32_t));
    return DLCA_OK;
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
    size_t act = e->plan.sizes.act, block = e->plan.sizes.block;
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
    if (e->plan.blocks_per_buffer && e->plan.blocks_per_buffer < per) per = e->plan.blocks_per_buffer;
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

/* The plan's bytes with the options changed by `change` (0: as planned). */
static double plan_mib(const ca_gpu *e, ca_gpu_options options)
{
    ca_gpu_plan plan;
    if (ca_gpu_plan_make(&plan, e->vk, e->model, e->shape, &options)) return 0.0;
    return (double)ca_gpu_plan_bytes(&plan) / 1048576.0;
}

/* Appends to the allocation error what the engine needs and what would fit instead. */
static void explain_memory_failure(const ca_gpu *e)
{
    char first[512];
    snprintf(first, sizeof first, "%s", err_message());
    double mib = (double)ca_gpu_plan_bytes(&e->plan) / 1048576.0;
    if (e->plan.fused) {
        err_set(DLCA_ERR, "%s: the engine needs %.0f MiB (the fused kernels keep no activations, so --cache does not "
                          "change it); use a smaller --batch", first, mib);
    } else if (e->plan.cache == CA_CACHE_FULL) {
        ca_gpu_options checkpoint = e->options;
        checkpoint.cache = CA_CACHE_CHECKPOINT;
        err_set(DLCA_ERR, "%s: the engine needs %.0f MiB with --cache full; --cache checkpoint needs %.0f MiB, "
                          "or use a smaller --batch", first, mib, plan_mib(e, checkpoint));
    } else {
        err_set(DLCA_ERR, "%s: the engine needs %.0f MiB with --cache checkpoint; use a smaller --batch", first, mib);
    }
}

int ca_gpu_use_fused(ca_gpu *e, int on)
{
    if (on && !e->plan.fused_possible)
        return err_set(DLCA_ERR, "the fused kernels do not fit this model (shared memory, or perception depth over 4) "
                                 "or device (subgroup shuffles)");
    if (on && gpu_create_fused_pipelines(e)) return DLCA_ERR;
    if (!on && !e->act && create_step_blocks(e)) return DLCA_ERR;
    e->plan.fused = on != 0;
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



int ca_gpu_init(ca_gpu *e, vk_context *vk, const ca_model *model, int batch, int height, int width,
                const ca_gpu_options *options)
{
    const ca_config *c = &model->config;
    memset(e, 0, sizeof *e);
    e->vk = vk;
    if (options) e->options = *options;
    e->shape = (ca_shape){batch, height > 0 ? height : c->height, width > 0 ? width : c->width, c->boundary};
    if (ca_gpu_plan_make(&e->plan, vk, model, e->shape, &e->options)) return DLCA_ERR;
    e->gate_row = malloc(sizeof(uint32_t) * model->gate_count);
    if (!e->gate_row) return err_set(DLCA_ERR_NOMEM, "out of memory for %zu gates' order", model->gate_count);
    if (ca_gpu_order_model(model, &e->device_model, e->gate_row)) {
        free(e->gate_row);
        e->gate_row = NULL;
        return DLCA_ERR;
    }
    model = e->model = &e->device_model;
    e->step_rows = ca_config_layout_rows(c, e->perception_row, e->update_row);
    e->fire_threshold = rng_fire_threshold(c->fire_rate);
    e->steps = c->steps, e->room = c->steps + c->window;
    int rc = DLCA_OK;
    if (create_buffers(e, &e->plan.sizes) || (!e->plan.fused && create_step_blocks(e))) {
        explain_memory_failure(e);
        rc = DLCA_ERR;
    }
    if (!rc) rc = ca_gpu_bind(e, NULL, NULL, NULL);
    if (!rc) rc = upload_wiring(e);
    if (!rc) rc = gpu_upload_layers(e);
    if (!rc && e->plan.fused && !e->options.defer_pipelines) rc = gpu_create_fused_pipelines(e);
    if (!rc) rc = upload_gate_rows(e);
    /* The device model's logits are the caller's, already in the engine's order. */
    if (!rc) rc = vk_buffer_upload(vk, &e->logits, 0, model->logits, model->gate_count * GATE_OP_COUNT * sizeof(float));
    /* The S partials start zero: the persistent backward relies on it for the rows it never
     * writes (fused_step_backward.comp, sums_so_far). The grids' and targets' rows start zero in
     * their pitch padding, which no kernel writes (gpu_clear fills cells only): a loss may read
     * whole rows of both. */
    vk_buffer *const zeroed[] = {&e->sum_partials, &e->grids, &e->target, &e->dgrid, &e->roll};
    if (!rc) rc = gpu_zero_now(e, zeroed, 5);
#ifdef DLCA_CLOCKS
    /* Zeroed: tools/fused_clocks.py takes a record whose count is 0 for one never written. */
    vk_buffer *const clocks[] = {&e->clocks};
    if (!rc) rc = vk_buffer_create(vk, &e->clocks, CA_GPU_CLOCK_BYTES, VK_BUFFER_DEVICE);
    if (!rc) rc = gpu_zero_now(e, clocks, 1);
#endif
    if (rc) ca_gpu_free(e);
    return rc;
}

/* The engine's buffers but the step blocks (e->act), for what is done to each of them. */
#ifdef DLCA_CLOCKS
#define CLOCK_BUFFERS(X) X(clocks)
#else
#define CLOCK_BUFFERS(X)
#endif
#define ENGINE_BUFFERS(X)                                                                                        \
    X(logits) X(coeffs) X(coeff_grad) X(wiring) X(grids) X(scratch) \
    X(dgrid) X(target) X(image) X(layers) X(sum_partials) X(roll) \
    X(moore_steps) X(roll_host) CLOCK_BUFFERS(X)

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

