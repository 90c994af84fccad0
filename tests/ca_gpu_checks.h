/* ca_gpu_checks.h: the Vulkan engine against the CPU engine on one config (check_case), and the
 * engine-level checks around it, shared by test_ca_gpu.c and test_ca_gpu_shapes.c (two test
 * programs so that CI runs them side by side: each compiles the fused kernels per config, which
 * lavapipe takes seconds for). */
#ifndef DLCA_TESTS_CA_GPU_CHECKS_H
#define DLCA_TESTS_CA_GPU_CHECKS_H

#include "ca_cpu.h"
#include "ca_fixtures.h"
#include "ca_gpu.h"
#include "ca_task.h"
#include "ca_train.h"
#include "check.h"
#include "error.h"
#include "vk_command.h"
#include "vk_context.h"
#include "vk_test.h"

#include <stdlib.h>
#include <string.h>

static vk_context vk;

/* The GPU path every engine of the test is made with (ca_gpu_plan.h): the persistent_step runs of
 * the test programs pass --persistent step, the way lavapipe can run the persistent kernels;
 * tools/gpu-tests.sh passes --persistent on, on a GPU that holds them. */
static ca_gpu_options gpu_options;

/* The options of argv: nothing, or `--persistent step|on`. */
static inline int test_gpu_options(int argc, char **argv, const char *name)
{
    if (argc == 3 && strcmp(argv[1], "--persistent") == 0 && strcmp(argv[2], "step") == 0) {
        gpu_options.persistent = CA_GPU_STEPWISE;
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--persistent") == 0 && strcmp(argv[2], "on") == 0) {
        gpu_options.persistent = CA_GPU_ON;
        return 0;
    }
    if (argc == 1) return 0;
    fprintf(stderr, "usage: %s [--persistent step|on]\n", name);
    return 1;
}

/* gpu_options with `cache`. */
static inline const ca_gpu_options *options_with_cache(ca_cache cache)
{
    static ca_gpu_options with;
    with = gpu_options;
    with.cache = cache;
    return &with;
}

typedef struct {
    ca_model model;
    ca_cpu cpu;
    ca_gpu gpu;
    double *logits, *target;
    float *logits_f;
    size_t n_grid;
} pair;

static inline int pair_init(pair *p, const ca_config *config, ca_cache cache, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    if (ca_model_init(&p->model, config) || ca_cpu_init(&p->cpu, &p->model, config->batch, 0, 0)) return DLCA_ERR;
    size_t gates = p->model.gate_count;
    p->n_grid = (size_t)config->channels * p->cpu.cells;
    p->logits = malloc(gates * 16 * sizeof(double)), p->logits_f = malloc(gates * 16 * sizeof(float));
    p->target = malloc(p->n_grid * sizeof(double));
    rng_state rng;
    rng_init(&rng, seed, 1);
    peaked_logits(p->logits, gates, &rng);
    for (size_t i = 0; i < gates * 16; i++) p->logits[i] = p->logits_f[i] = (float)p->logits[i];
    random_unit(p->target, p->n_grid, &rng);
    memcpy(p->model.logits, p->logits_f, gates * 16 * sizeof(float));
    if (ca_gpu_init(&p->gpu, &vk, &p->model, config->batch, 0, 0, options_with_cache(cache))) return DLCA_ERR;
    ca_task_start(config, p->cpu.shape, seed, ca_cpu_grid(&p->cpu, 0));
    for (size_t i = 0; i < p->n_grid; i++) ca_cpu_grid(&p->cpu, 0)[i] = 0.8 * ca_cpu_grid(&p->cpu, 0)[i] + 0.1;
    ca_cpu_set_fire_stream(&p->cpu, 4242), ca_gpu_set_fire_stream(&p->gpu, 4242);
    if (ca_gpu_upload_grid(&p->gpu, 0, ca_cpu_grid(&p->cpu, 0)) || ca_gpu_upload_target(&p->gpu, p->target))
        return DLCA_ERR;
    return DLCA_OK;
}

static inline void pair_free(pair *p)
{
    free(p->logits), free(p->logits_f), free(p->target);
    ca_gpu_free(&p->gpu), ca_cpu_free(&p->cpu), ca_model_free(&p->model);
}

/* Records and submits one stage. */
typedef int (*gpu_stage)(ca_gpu *e, VkCommandBuffer cmd);

/* Whether a persistent kernel of the last submission gave up (its roll call closed): the
 * device could not run all its workgroups at once, and its results are unfinished. */
static inline int persistent_gave_up(ca_gpu *e)
{
    uint32_t roll[2] = {0, 0};
    if (!e->plan.persistent_groups || vk_buffer_download(&vk, &e->roll, 0, roll, sizeof roll)) return 0;
    return ((roll[0] | roll[1]) & CA_GPU_ROLL_CLOSED) != 0;
}

/* Records and runs one stage. Where the persistent kernels gave up, the engine goes back to one
 * dispatch a step, as the trainer does, and the stage runs again (said once a program). */
static inline int run_gpu(ca_gpu *e, gpu_stage stage)
{
    static int told;
    VkCommandBuffer cmd;
    if (vk_cmd_begin(&vk, &cmd)) return DLCA_ERR;
    if (stage(e, cmd)) {
        vk_cmd_free(&vk, cmd);
        return DLCA_ERR;
    }
    if (vk_cmd_finish(&vk, cmd)) return DLCA_ERR;
    if (!persistent_gave_up(e)) return DLCA_OK;
    if (!told++) printf("%s: the persistent kernels gave up (too many workgroups at once): checked one dispatch a step "
                        "from there\n", vk.props.deviceName);
    return ca_gpu_persistent_off(e) || run_gpu(e, stage) ? DLCA_ERR : DLCA_OK;
}

static inline int stage_soft_coefficients(ca_gpu *e, VkCommandBuffer cmd) { return ca_gpu_coefficients(e, cmd, 0); }
static inline int stage_forward(ca_gpu *e, VkCommandBuffer cmd) { return ca_gpu_forward(e, cmd); }
static inline int stage_last_step_backward(ca_gpu *e, VkCommandBuffer cmd)
{
    return ca_gpu_sums_zero(e, cmd) || ca_gpu_step_backward(e, cmd, e->model->config.steps - 1) ||
           ca_gpu_sums_finish(e, cmd);
}
static inline int stage_backward(ca_gpu *e, VkCommandBuffer cmd) { return ca_gpu_backward(e, cmd); }
/* A window loss's BPTT: its gradient at grids window_from..T-1 in window_rows. */
static vk_view window_rows;
static int window_from;
static inline int stage_window_backward(ca_gpu *e, VkCommandBuffer cmd)
{
    return ca_gpu_backward_window(e, cmd, &window_rows, window_from);
}


static inline double compare(const char *what, const char *label, const double *gpu, const double *cpu, size_t n, double tol)
{
    double error = relative_error(gpu, cpu, n);
    CHECK(error <= tol, "%s: %s relative error %.3g > %.1g", label, what, error, tol);
    return error;
}

/* The rows of step block t as the CPU holds them, [step_rows][cells]. */
static inline int gpu_block(pair *p, int t, double *rows)
{
    size_t n = p->cpu.step_rows * p->gpu.plan.pitch;
    float *staged = malloc(n * sizeof(float));
    size_t offset;
    vk_buffer *buffer = ca_gpu_block_buffer(&p->gpu, t, &offset);
    int rc = vk_buffer_download(&vk, buffer, offset, staged, n * sizeof(float));
    for (size_t r = 0; !rc && r < p->cpu.step_rows; r++) {
        const float *from = staged + ca_gpu_step_row(&p->gpu, r) * p->gpu.plan.pitch;
        for (size_t x = 0; x < p->cpu.cells; x++) rows[r * p->cpu.cells + x] = from[x];
    }
    free(staged);
    return rc;
}

static inline void check_forward(pair *p, const char *label)
{
    const ca_config *c = &p->model.config;
    size_t gates = p->model.gate_count, block = p->cpu.step_rows * p->cpu.cells;
    double *values = malloc((block > gates * 16 ? block : gates * 16) * sizeof(double));
    ca_cpu_coefficients(&p->cpu, p->logits, 0);
    CHECK(run_gpu(&p->gpu, stage_soft_coefficients) == DLCA_OK, "%s: %s", label, err_message());
    ca_gpu_read_gate_values(&p->gpu, &p->gpu.coeffs, 4, values);
    compare("coefficients", label, values, p->cpu.coeffs, gates * 4, 1e-4);

    ca_cpu_forward(&p->cpu);
    CHECK(run_gpu(&p->gpu, stage_forward) == DLCA_OK, "%s forward: %s", label, err_message());
    for (int t = 0; t < c->steps; t++) {
        char what[64];
        if (p->gpu.plan.cache == CA_CACHE_FULL && !p->gpu.plan.fused) { /* the fused forward keeps no activations */
            gpu_block(p, t, values);
            snprintf(what, sizeof what, "step %d activations", t);
            compare(what, label, values, p->cpu.act + (size_t)t * block, block, 1e-4);
        }
        ca_gpu_download_grid(&p->gpu, t + 1, values);
        snprintf(what, sizeof what, "grid %d", t + 1);
        compare(what, label, values, ca_cpu_grid(&p->cpu, t + 1), p->n_grid, 1e-4);
    }
    free(values);
}

/* BPTT from the loss gradient (the trainer's loss on the CPU, uploaded as the GPU's dL/dgrid_T):
 * one step back, every backward kernel against the CPU at 1e-4; then full BPTT, S at 1e-3, into
 * sums_out for the runs' bitwise comparisons. */
static inline void check_backward(pair *p, const char *label, double *sums_out)
{
    size_t gates = p->model.gate_count;
    double *values = malloc((gates * 4 > p->n_grid ? gates * 4 : p->n_grid) * sizeof(double));
    const ca_config *c = &p->model.config;
    fixture_loss(&p->model, p->cpu.cells, ca_cpu_grid(&p->cpu, c->steps), p->target, p->cpu.dgrid);
    CHECK(ca_gpu_upload_dgrid(&p->gpu, p->cpu.dgrid) == DLCA_OK, "%s dgrid: %s", label, err_message());
    memset(p->cpu.coeff_grad, 0, gates * 4 * sizeof(double));
    ca_cpu_step_backward(&p->cpu, c->steps - 1);
    CHECK(run_gpu(&p->gpu, stage_last_step_backward) == DLCA_OK, "%s step backward: %s", label, err_message());
    ca_gpu_read_gate_values(&p->gpu, &p->gpu.coeff_grad, 4, values);
    compare("one step's S", label, values, p->cpu.coeff_grad, gates * 4, 1e-4);
    ca_gpu_download_dgrid(&p->gpu, values);
    compare("one step's grid gradient", label, values, p->cpu.dgrid, p->n_grid, 1e-4);

    /* Full BPTT from the loss gradient again. */
    fixture_loss(&p->model, p->cpu.cells, ca_cpu_grid(&p->cpu, c->steps), p->target, p->cpu.dgrid);
    CHECK(ca_gpu_upload_dgrid(&p->gpu, p->cpu.dgrid) == DLCA_OK, "%s dgrid: %s", label, err_message());
    ca_cpu_backward(&p->cpu);
    CHECK(run_gpu(&p->gpu, stage_backward) == DLCA_OK, "%s BPTT: %s", label, err_message());
    ca_gpu_read_gate_values(&p->gpu, &p->gpu.coeff_grad, 4, sums_out);
    compare("BPTT S", label, sums_out, p->cpu.coeff_grad, gates * 4, 1e-3);
    ca_gpu_download_dgrid(&p->gpu, values);
    compare("BPTT start-grid gradient", label, values, p->cpu.dgrid, p->n_grid, 1e-3);
    free(values);
}

/* BPTT with a window loss's gradient (random blocks) at grids from..T-1 as well as the final
 * one's: S and the start-grid gradient against ca_cpu_backward_window at 1e-3. The persistent
 * backward runs the window's steps one dispatch each and steps from-1..0 in one: with from >= 2
 * that dispatch has several steps (its roll call restarted). */
static inline void check_window_backward(pair *p, const char *label, int from)
{
    const ca_config *c = &p->model.config;
    if (from < 1 || from >= c->steps) return;
    size_t gates = p->model.gate_count, cells = p->cpu.cells, pitch = p->gpu.plan.pitch;
    size_t rows = (size_t)c->loss_channels, blocks = (size_t)(c->steps - from);
    double *dwindow = malloc(blocks * rows * cells * sizeof(double));
    float *staged = calloc(blocks * rows * pitch, sizeof(float));
    double *values = malloc((gates * 4 > p->n_grid ? gates * 4 : p->n_grid) * sizeof(double));
    rng_state rng;
    rng_init(&rng, 78, (uint64_t)c->steps);
    random_unit(dwindow, blocks * rows * cells, &rng);
    for (size_t r = 0; r < blocks * rows; r++)
        for (size_t x = 0; x < cells; x++)
            dwindow[r * cells + x] = staged[r * pitch + x] = (float)(dwindow[r * cells + x] - 0.5);
    vk_buffer buffer = {0};
    int rc = vk_buffer_create(&vk, &buffer, blocks * rows * pitch * sizeof(float), VK_BUFFER_DEVICE) ||
             vk_buffer_upload(&vk, &buffer, 0, staged, blocks * rows * pitch * sizeof(float));
    CHECK(rc == DLCA_OK, "%s window buffer: %s", label, err_message());
    if (!rc) {
        window_rows = vk_view_all(&buffer), window_from = from;
        fixture_loss(&p->model, cells, ca_cpu_grid(&p->cpu, c->steps), p->target, p->cpu.dgrid);
        CHECK(ca_gpu_upload_dgrid(&p->gpu, p->cpu.dgrid) == DLCA_OK, "%s dgrid: %s", label, err_message());
        ca_cpu_backward_window(&p->cpu, dwindow, from);
        CHECK(run_gpu(&p->gpu, stage_window_backward) == DLCA_OK, "%s window BPTT: %s", label, err_message());
        ca_gpu_read_gate_values(&p->gpu, &p->gpu.coeff_grad, 4, values);
        char what[64];
        snprintf(what, sizeof what, "window BPTT (from grid %d) S", from);
        compare(what, label, values, p->cpu.coeff_grad, gates * 4, 1e-3);
        ca_gpu_download_dgrid(&p->gpu, values);
        snprintf(what, sizeof what, "window BPTT (from grid %d) start-grid gradient", from);
        compare(what, label, values, p->cpu.dgrid, p->n_grid, 1e-3);
    }
    if (buffer.buffer) vk_buffer_free(&vk, &buffer);
    free(dwindow), free(staged), free(values);
}

/* Five runs, each checked against the CPU engine: the per-layer kernels (the default) with the
 * full cache twice and with checkpoints, then the fused kernels with both caches. Full and
 * checkpoint give the same bits on each path; so does a second run. per_thread > 0 sets
 * gate_backward's cells per lane (fewer, larger chunks than init chose). */
static inline void check_case_with(const ca_config *config, const char *label, uint32_t per_thread)
{
    enum { RUNS = 5 };
    static const int checkpoint[RUNS] = {0, 0, 1, 0, 1}, fused[RUNS] = {0, 0, 0, 1, 1};
    pair runs[RUNS];
    size_t n = 0;
    double *sums[RUNS] = {0};
    for (int r = 0; r < RUNS; r++) {
        if (pair_init(&runs[r], config, checkpoint[r] ? CA_CACHE_CHECKPOINT : CA_CACHE_FULL, 31)) {
            CHECK(0, "%s set-up: %s", label, err_message());
            for (int k = 0; k <= r; k++) pair_free(&runs[k]);
            for (int k = 0; k < r; k++) free(sums[k]);
            return;
        }
        CHECK(ca_gpu_use_fused(&runs[r].gpu, fused[r]) == DLCA_OK, "%s: %s", label, err_message());
        if (per_thread > runs[r].gpu.plan.per_thread) {
            runs[r].gpu.plan.per_thread = per_thread;
            runs[r].gpu.plan.chunks = (runs[r].gpu.plan.cells + 64 * per_thread - 1) / (64 * per_thread);
        }
        n = runs[r].model.gate_count * 4;
        sums[r] = malloc(n * sizeof(double));
        check_forward(&runs[r], label);
        check_backward(&runs[r], label, sums[r]);
        /* each path once: the window from grid 1, and on the fused checkpoint run from T - 1 */
        if (r != 1 && r != 2) check_window_backward(&runs[r], label, r == 4 ? config->steps - 1 : 1);
    }
    CHECK(memcmp(sums[0], sums[1], n * sizeof(double)) == 0, "%s: two runs give identical gradients", label);
    CHECK(memcmp(sums[0], sums[2], n * sizeof(double)) == 0, "%s: full and checkpoint give identical gradients",
          label);
    CHECK(memcmp(sums[3], sums[4], n * sizeof(double)) == 0,
          "%s: fused full and checkpoint give identical gradients", label);
    printf("%s: %zu gates, %zu cells, %u chunks of %u cells, %u activation buffers, fused tiles of %u and %u cells, compared per-layer and fused\n",
           label, runs[0].model.gate_count, runs[0].cpu.cells, runs[0].gpu.plan.chunks, 64 * runs[0].gpu.plan.per_thread,
           runs[0].gpu.act_buffers, runs[0].gpu.plan.tile, runs[0].gpu.plan.tile_backward);
    for (int r = 0; r < RUNS; r++) free(sums[r]), pair_free(&runs[r]);
}

static inline void check_case(const ca_config *config, const char *label) { check_case_with(config, label, 0); }

/* check_case on the tiny config with this boundary: sync and async, 1- and 2-bit perception. */
static inline void check_tiny_configs(ca_boundary boundary)
{
    for (int async = 0; async < 2; async++)
        for (int bits = 1; bits <= 2; bits++) {
            ca_config config;
            char label[64];
            tiny_config(&config, boundary, async ? 0.6 : 1.0, bits, 3);
            snprintf(label, sizeof label, "tiny %s %s %d-bit", ca_boundary_name(config.boundary), async ? "async" : "sync",
                     bits);
            check_case(&config, label);
        }
}

/* task_round.comp draws the same start grid and target as ca_round_inputs, for every kind. */
static inline int stage_task_round(ca_gpu *e, VkCommandBuffer cmd) { return ca_gpu_task_round(e, cmd, 5); }

static inline void check_task_round(const char *preset)
{
    ca_config config;
    small_preset(&config, preset);
    pair p;
    if (pair_init(&p, &config, CA_CACHE_FULL, 3)) {
        CHECK(0, "%s task set-up: %s", preset, err_message());
        pair_free(&p);
        return;
    }
    size_t cells = p.cpu.cells, plane = (size_t)config.height * (size_t)config.width;
    size_t n_target = (size_t)config.loss_channels * cells;
    double *image = malloc((size_t)config.loss_channels * plane * sizeof(double));
    double *start = malloc(p.n_grid * sizeof(double)), *target = malloc(n_target * sizeof(double));
    double *gpu = malloc(p.n_grid * sizeof(double));
    float *rows = malloc((size_t)config.loss_channels * p.gpu.plan.pitch * sizeof(float));
    rng_state rng;
    rng_init(&rng, 17, 0);
    for (size_t i = 0; i < (size_t)config.loss_channels * plane; i++) image[i] = (double)(rng_next(&rng) >> 63);
    ca_gpu_upload_image(&p.gpu, image);
    ca_round_inputs(&config, p.cpu.shape, 5, image, start, target);
    CHECK(run_gpu(&p.gpu, stage_task_round) == DLCA_OK, "%s task round: %s", preset, err_message());
    ca_gpu_download_grid(&p.gpu, 0, gpu);
    CHECK(memcmp(gpu, start, p.n_grid * sizeof(double)) == 0, "%s: GPU start grid equals the CPU's", preset);
    vk_buffer_download(&vk, &p.gpu.target, 0, rows, (size_t)config.loss_channels * p.gpu.plan.pitch * sizeof(float));
    int same = 1;
    for (int ch = 0; ch < config.loss_channels; ch++)
        for (size_t x = 0; x < cells; x++) same &= rows[(size_t)ch * p.gpu.plan.pitch + x] == target[(size_t)ch * cells + x];
    CHECK(same, "%s: GPU target equals the CPU's", preset);
    free(image), free(start), free(target), free(gpu), free(rows);
    pair_free(&p);
}

/* Fused kernels forced on where they cannot run (a fifth perception layer) is an error that
 * says so, not a silent fall-back; where they can, they run. */
static inline void check_fused_forced(void)
{
    ca_config deep;
    tiny_config(&deep, CA_BOUNDARY_ZERO, 1.0, 2, 2);
    deep.perception_depth = 5;
    for (int l = 2; l < 5; l++) deep.perception_widths[l] = 4;
    deep.update_depth = 4; /* unique wiring reads all 2 + 2 x 2 x 4 inputs */
    deep.update_widths[0] = 10, deep.update_widths[1] = 6, deep.update_widths[2] = 4, deep.update_widths[3] = 2;
    ca_gpu_options forced = gpu_options;
    forced.fused = CA_GPU_ON;
    ca_model model;
    ca_gpu engine;
    if (ca_model_init(&model, &deep)) {
        CHECK(0, "deep perception model: %s", err_message());
    } else {
        int rc = ca_gpu_init(&engine, &vk, &model, deep.batch, 0, 0, &forced);
        CHECK(rc != DLCA_OK && strstr(err_message(), "fused kernels do not fit"),
              "fused forced on with 5 perception layers fails and says why: %s", rc ? err_message() : "it ran");
        if (!rc) ca_gpu_free(&engine);
        ca_model_free(&model);
    }
    ca_config tiny;
    tiny_config(&tiny, CA_BOUNDARY_ZERO, 1.0, 1, 2);
    if (ca_model_init(&model, &tiny) == DLCA_OK) {
        int rc = ca_gpu_init(&engine, &vk, &model, tiny.batch, 0, 0, &forced);
        CHECK(rc == DLCA_OK && engine.plan.fused, "fused forced on runs the fused kernels where they fit: %s",
              rc ? err_message() : "per-layer");
        if (!rc) ca_gpu_free(&engine);
        ca_model_free(&model);
    }
}

/* Two seeds of a preset's shape: different perception wiring, the same fused kernels (their
 * specialisation constants equal), so a new seed finds its kernels in the pipeline cache. */
static inline void check_constants_shared(const char *preset)
{
    ca_config config[2];
    ca_model model[2];
    ca_gpu engine[2];
    uint32_t values[2][CA_GPU_FUSED_CONSTANTS];
    uint32_t count[2] = {0, 0};
    int ready = 0;
    ca_gpu_options planned = gpu_options;
    planned.defer_pipelines = 1; /* the constants need the plan, not the compiled kernels */
    for (int i = 0; i < 2; i++) {
        small_preset(&config[i], preset);
        config[i].seed = 1 + (uint64_t)i;
        if (ca_model_init(&model[i], &config[i])) break;
        if (ca_gpu_init(&engine[i], &vk, &model[i], config[i].batch, 0, 0, &planned)) {
            ca_model_free(&model[i]);
            break;
        }
        count[i] = ca_gpu_fused_constants(&engine[i], values[i]);
        ready++;
    }
    CHECK(ready == 2, "%s: two engines: %s", preset, err_message());
    if (ready == 2) {
        int wiring_differs = 0;
        for (int l = 0; l < config[0].perception_depth; l++)
            for (int g = 0; g < model[0].perception[l].n_out; g++)
                wiring_differs |= model[0].perception[l].input_a[g] != model[1].perception[l].input_a[g] ||
                                  model[0].perception[l].input_b[g] != model[1].perception[l].input_b[g];
        CHECK(wiring_differs, "%s: seeds 1 and 2 wire the perception differently", preset);
        CHECK(engine[0].plan.fused && count[0] == count[1] && !memcmp(values[0], values[1], count[0] * sizeof(uint32_t)),
              "%s: seeds 1 and 2 share the fused kernels' specialisation (fused %d, %u and %u constants)", preset,
              engine[0].plan.fused, count[0], count[1]);
    }
    for (int i = 0; i < ready; i++) ca_gpu_free(&engine[i]), ca_model_free(&model[i]);
}

/* ca_gpu_buffer_bytes (dlca bench's "engine buffers") is what the engine allocated on this
 * device: its shared memory sets the fused tiles and so the S partials' size. */
static inline void check_buffer_bytes(void)
{
    ca_config config;
    small_preset(&config, "checkerboard");
    ca_model model;
    ca_gpu engine;
    if (ca_model_init(&model, &config)) {
        CHECK(0, "checkerboard model: %s", err_message());
        return;
    }
    size_t before = vk.device_bytes;
    if (ca_gpu_init(&engine, &vk, &model, config.batch, 0, 0, &gpu_options) == DLCA_OK) {
        size_t allocated = vk.device_bytes - before, counted = ca_gpu_buffer_bytes(&engine);
        CHECK(counted > 0 && counted == allocated, "engine buffers: counted %zu bytes, the engine allocated %zu",
              counted, allocated);
        /* The fused kernels keep no activations: the step blocks come with the per-layer ones. */
        CHECK(engine.plan.fused && !engine.act, "the fused engine allocates no step blocks (fused %d)", engine.plan.fused);
        CHECK(ca_gpu_use_fused(&engine, 0) == DLCA_OK && engine.act, "per-layer: %s", err_message());
        size_t grown = ca_gpu_buffer_bytes(&engine);
        CHECK(grown >= counted + engine.plan.sizes.act && grown == vk.device_bytes - before,
              "per-layer adds the %zu bytes of step blocks: %zu -> %zu bytes", engine.plan.sizes.act, counted, grown);
        ca_gpu_free(&engine);
    } else {
        CHECK(0, "checkerboard engine: %s", err_message());
    }
    CHECK(vk.device_bytes == before, "freeing the engine gives its buffers back (%zu bytes left over)",
          (size_t)(vk.device_bytes - before));
    ca_model_free(&model);
}

#endif
