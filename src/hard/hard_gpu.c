/* hard_gpu.c: buffers, the compiled module or the interpreter's program, and step recording of
 * the Vulkan hard engine. */
#include "hard_gpu.h"

#include "error.h"
#include "hard_spirv.h"
#include "rng.h"
#include "vk_command.h"
#include "vk_pipeline.h"

#include <stdlib.h>
#include <string.h>

/* outputs [C], then (op | dst << 4, a, b) per instruction: the layout hard_step.comp reads. */
static int upload_program(hard_gpu *g, const hard_program *p)
{
    size_t n = (size_t)p->channels + 3 * (size_t)p->n_instr;
    uint32_t *words = malloc(n * sizeof(uint32_t));
    if (!words) return err_set(DLCA_ERR_NOMEM, "out of memory packing a program of %d gates", p->n_instr);
    memcpy(words, p->outputs, (size_t)p->channels * sizeof(uint32_t));
    for (int i = 0; i < p->n_instr; i++) {
        uint32_t *at = words + p->channels + 3 * (size_t)i;
        at[0] = p->instr[i].op | p->instr[i].dst << 4;
        at[1] = p->instr[i].a, at[2] = p->instr[i].b;
    }
    int rc = vk_buffer_create(g->vk, &g->program, n * sizeof(uint32_t), VK_BUFFER_DEVICE);
    if (!rc) rc = vk_buffer_upload(g->vk, &g->program, 0, words, n * sizeof(uint32_t));
    free(words);
    return rc;
}

/* Sizes: every index the shader forms must fit in 32 bits and every buffer in one binding. */
static int check_sizes(const hard_gpu *g, const hard_program *p)
{
    uint64_t grid_words = (uint64_t)g->channels * g->rows * (uint64_t)g->words;
    uint64_t slot_words = (uint64_t)p->n_slots * g->invocations;
    uint64_t limit = g->vk->props.limits.maxStorageBufferRange / 4;
    if ((uint64_t)p->n_slots >= 1u << 28)
        return err_set(DLCA_ERR, "hard GPU engine: %d value slots (at most 2^28)", p->n_slots);
    if (grid_words > limit || slot_words > limit || (uint64_t)g->rows * (uint64_t)g->shape.width > UINT32_MAX)
        return err_set(DLCA_ERR,
                       "hard GPU engine: %llu slot words for %d slots x %u words exceed the device's %llu-word "
                       "storage-buffer range (use a smaller grid or batch)",
                       (unsigned long long)slot_words, p->n_slots, g->invocations, (unsigned long long)limit);
    return DLCA_OK;
}

/* The interpreter: the slot program and its value slots. */
static int interpreter_create(hard_gpu *g, const hard_netlist *net)
{
    hard_program p;
    int rc = hard_program_build(&p, net);
    if (rc) return rc;
    g->n_instr = (uint32_t)p.n_instr, g->n_slots = (uint32_t)p.n_slots;
    rc = check_sizes(g, &p);
    if (!rc) rc = upload_program(g, &p);
    if (!rc) rc = vk_buffer_create(g->vk, &g->slots, (size_t)p.n_slots * g->invocations * sizeof(uint32_t), VK_BUFFER_DEVICE);
    hard_program_free(&p);
    return rc;
}

/* The compiled module: emitted for this circuit and shape, and its pipeline. */
static int compiled_create(hard_gpu *g, const hard_netlist *net)
{
    uint64_t grid_words = (uint64_t)g->channels * g->invocations;
    uint64_t limit = g->vk->props.limits.maxStorageBufferRange / 4;
    if (grid_words > limit || grid_words > UINT32_MAX || (uint64_t)g->rows * (uint64_t)g->shape.width > UINT32_MAX)
        return err_set(DLCA_ERR,
                       "hard GPU engine: a grid of %llu words (%d channels x %u rows x %d words) exceeds the "
                       "device's %llu-word storage-buffer range or 2^32 cells (use a smaller grid or batch)",
                       (unsigned long long)grid_words, g->channels, g->rows, g->words, (unsigned long long)limit);
    g->desc = (vk_pipeline_desc){"hard_step (compiled)", (uint32_t)sizeof(vk_push_hard_step), 2, HARD_GPU_LOCAL_SIZE};
    int rc = vk_groups_1d_local(g->vk, g->desc.name, HARD_GPU_LOCAL_SIZE, g->invocations, g->groups);
    if (rc) return rc;
    hard_spirv_shape shape = {
        .channels = (uint32_t)g->channels, .height = (uint32_t)g->shape.height, .width = (uint32_t)g->shape.width,
        .words = (uint32_t)g->words, .rows = g->rows, .invocations = g->invocations, .local_size = HARD_GPU_LOCAL_SIZE,
        .row_stride = (g->groups[0] ? g->groups[0] : 1) * HARD_GPU_LOCAL_SIZE,
        .periodic = g->shape.boundary == CA_BOUNDARY_PERIODIC, .threshold = g->fire_threshold};
    uint32_t *code;
    rc = hard_spirv_emit(net, &shape, &code, &g->spirv_words);
    if (rc) return rc;
    rc = vk_pipeline_create_spirv(g->vk, &g->desc, code, g->spirv_words * sizeof(uint32_t), &g->pipeline);
    free(code);
    return rc;
}

int hard_gpu_init_kind(hard_gpu *g, vk_context *vk, const hard_netlist *net, ca_shape shape, double fire_rate,
                       hard_gpu_kind kind)
{
    memset(g, 0, sizeof *g);
    if (shape.batch < 1 || shape.height < 1 || shape.width < 1 || !(fire_rate > 0.0 && fire_rate <= 1.0))
        return err_set(DLCA_ERR, "hard GPU engine: batch %d of %dx%d, fire rate %g", shape.batch, shape.height,
                       shape.width, fire_rate);
    uint64_t rows = (uint64_t)shape.batch * (uint64_t)shape.height;
    uint64_t words = ((uint64_t)shape.width + 31) / 32;
    if (rows * words > UINT32_MAX)
        return err_set(DLCA_ERR, "hard GPU engine: %llu words per grid (at most 2^32)", (unsigned long long)(rows * words));
    g->vk = vk, g->shape = shape, g->channels = net->channels, g->words = (int)words;
    g->rows = (uint32_t)rows, g->invocations = (uint32_t)(rows * words);
    g->fire_threshold = rng_fire_threshold(fire_rate);
    g->compiled = kind == HARD_GPU_COMPILED || (kind == HARD_GPU_AUTO && net->n_gates <= HARD_GPU_COMPILE_MAX_GATES);
    int rc = g->compiled ? compiled_create(g, net) : interpreter_create(g, net);
    size_t grid_bytes = (size_t)g->channels * g->invocations * sizeof(uint32_t);
    for (int i = 0; i < 2 && !rc; i++) rc = vk_buffer_create(g->vk, &g->grids[i], grid_bytes, VK_BUFFER_DEVICE);
    if (rc) hard_gpu_free(g);
    return rc;
}

int hard_gpu_init(hard_gpu *g, vk_context *vk, const hard_netlist *net, ca_shape shape, double fire_rate)
{
    return hard_gpu_init_kind(g, vk, net, shape, fire_rate, HARD_GPU_AUTO);
}

void hard_gpu_free(hard_gpu *g)
{
    if (g->vk) {
        vk_buffer_free(g->vk, &g->grids[0]);
        vk_buffer_free(g->vk, &g->grids[1]);
        vk_buffer_free(g->vk, &g->program);
        vk_buffer_free(g->vk, &g->slots);
        vk_pipeline_destroy(g->vk, &g->pipeline);
    }
    memset(g, 0, sizeof *g);
}

void hard_gpu_set_fire_stream(hard_gpu *g, uint32_t stream) { g->fire_stream = stream; }

static size_t grid_words(const hard_gpu *g) { return (size_t)g->channels * g->rows * (size_t)g->words; }

int hard_gpu_upload(hard_gpu *g, const double *grid)
{
    size_t n = grid_words(g), cells = (size_t)g->rows * (size_t)g->shape.width;
    uint32_t *words = calloc(n, sizeof(uint32_t));
    if (!words) return err_set(DLCA_ERR_NOMEM, "out of memory packing a grid of %zu words", n);
    for (int ch = 0; ch < g->channels; ch++)
        for (size_t row = 0; row < g->rows; row++) {
            uint32_t *dst = words + ((size_t)ch * g->rows + row) * (size_t)g->words;
            const double *src = grid + (size_t)ch * cells + row * (size_t)g->shape.width;
            for (int x = 0; x < g->shape.width; x++) dst[x / 32] |= (uint32_t)(src[x] > 0.5) << (x % 32);
        }
    int rc = vk_buffer_upload(g->vk, &g->grids[g->current], 0, words, n * sizeof(uint32_t));
    free(words);
    return rc;
}

int hard_gpu_download(hard_gpu *g, double *grid)
{
    size_t n = grid_words(g), cells = (size_t)g->rows * (size_t)g->shape.width;
    uint32_t *words = malloc(n * sizeof(uint32_t));
    if (!words) return err_set(DLCA_ERR_NOMEM, "out of memory unpacking a grid of %zu words", n);
    int rc = vk_buffer_download(g->vk, &g->grids[g->current], 0, words, n * sizeof(uint32_t));
    for (int ch = 0; !rc && ch < g->channels; ch++)
        for (size_t row = 0; row < g->rows; row++) {
            const uint32_t *src = words + ((size_t)ch * g->rows + row) * (size_t)g->words;
            double *dst = grid + (size_t)ch * cells + row * (size_t)g->shape.width;
            for (int x = 0; x < g->shape.width; x++) dst[x] = (double)(src[x / 32] >> (x % 32) & 1);
        }
    free(words);
    return rc;
}

int hard_gpu_record_step(hard_gpu *g, VkCommandBuffer cmd, uint32_t t)
{
    vk_push_hard_step push = {
        .invocations = g->invocations, .words = (uint32_t)g->words, .rows = g->rows,
        .height = (uint32_t)g->shape.height, .width = (uint32_t)g->shape.width, .channels = (uint32_t)g->channels,
        .n_instr = g->n_instr, .periodic = g->shape.boundary == CA_BOUNDARY_PERIODIC, .n_slots = g->n_slots,
        .stream = g->fire_stream, .threshold = g->fire_threshold, .step = t};
    int rc;
    if (g->compiled) {
        vk_view views[] = {vk_view_all(&g->grids[g->current]), vk_view_all(&g->grids[1 - g->current])};
        rc = vk_dispatch_pipeline(g->vk, cmd, &g->pipeline, &g->desc, views, 2, &push, sizeof push, g->groups[0],
                                  g->groups[1], g->groups[2]);
    } else {
        vk_view views[] = {vk_view_all(&g->grids[g->current]), vk_view_all(&g->grids[1 - g->current]),
                           vk_view_all(&g->program), vk_view_all(&g->slots)};
        rc = vk_dispatch_1d(g->vk, cmd, VK_PIPE_HARD_STEP, views, 4, &push, sizeof push, g->invocations);
    }
    if (rc) return rc;
    vk_cmd_barrier(cmd);
    g->current = 1 - g->current;
    return DLCA_OK;
}

int hard_gpu_run(hard_gpu *g, uint32_t first_step, int steps)
{
    VkCommandBuffer cmd;
    int start = g->current;
    if (vk_cmd_begin(g->vk, &cmd)) return DLCA_ERR;
    for (int i = 0; i < steps; i++) {
        int rc = hard_gpu_record_step(g, cmd, first_step + (uint32_t)i);
        if (rc) {
            vk_cmd_end(cmd);
            vk_cmd_free(g->vk, cmd);
            g->current = start;
            return rc;
        }
    }
    int rc = vk_cmd_finish(g->vk, cmd);
    if (rc) g->current = start;
    return rc;
}
