/* ca_bench.c: timing training steps on either engine (see ca_bench.h). */
#include "ca_bench.h"

#include "error.h"
#include "vk_command.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Per-step samples, one array of `steps` doubles per quantity. */
enum { SAMPLE_WALL, SAMPLE_GPU, SAMPLE_FORWARD, SAMPLE_LOSS, SAMPLE_BACKWARD, SAMPLE_OPTIMIZER, SAMPLE_COUNT };

/* Wall clock, not CPU time: GPU work and waiting on the fence are what the step costs. */
double ca_bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

void ca_bench_startup_mark(ca_bench_startup *s, int part, const vk_context *vk)
{
    if (part < 0 || part >= CA_STARTUP_PARTS) return;
    s->end[part] = ca_bench_now_ms();
    s->marked = part + 1;
    s->pipeline_ms[part] = vk ? vk->pipeline_ms : 0.0;
    s->pipelines[part] = vk ? vk->pipelines_created : 0;
    s->cache_hits[part] = vk ? vk->pipeline_cache_hits : 0;
    s->submissions[part] = vk ? vk->submissions : 0;
    if (part != CA_STARTUP_CONTEXT) return;
    s->gpu = vk != NULL, s->cache_state = vk_cache_state_name(vk ? vk->cache.state : VK_CACHE_OFF);
    if (!vk) return;
    s->instance_ms = vk->instance_ms, s->device_ms = vk->device_ms, s->cache_ms = vk->cache_ms;
    s->queues = vk->queue_count;
    s->cache_feedback = vk->creation_feedback, s->cache_bytes = vk->cache.loaded_bytes;
}

double ca_bench_startup_ms(const ca_bench_startup *s, int part)
{
    if (part < 0 || part >= s->marked) return 0.0;
    double begin = part ? s->end[part - 1] : s->start, pipelines_before = part ? s->pipeline_ms[part - 1] : 0.0;
    return s->end[part] - begin - (s->pipeline_ms[part] - pipelines_before);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *sorted, int n, double q)
{
    double at = q * (double)(n - 1);
    int below = (int)at;
    if (below >= n - 1) return sorted[n - 1];
    return sorted[below] + (at - (double)below) * (sorted[below + 1] - sorted[below]);
}

ca_bench_spread ca_bench_spread_of(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return (ca_bench_spread){quantile(values, n, 0.5), quantile(values, n, 0.1), quantile(values, n, 0.9), values[0],
                             values[n - 1]};
}

double ca_bench_evals_per_second(const ca_bench_result *r, double ms)
{
    return ms > 0.0 ? 2.0 * r->forward_evals / (1e-3 * ms) : 0.0;
}

/* Sizes that do not depend on timing: what one step computes and (GPU) the memory it holds. */
static void describe(const ca_trainer *t, ca_bench_result *r)
{
    const ca_config *c = &t->model->config;
    r->model_gates = t->model->gate_count;
    r->T = c->steps;
    if (t->backend == CA_BACKEND_GPU) {
        r->evals_per_cell = t->gpu.step_rows, r->cells = t->gpu.plan.cells, r->fused = t->gpu.plan.fused;
        r->engine_device_bytes = ca_gpu_buffer_bytes(&t->gpu);
    } else {
        r->evals_per_cell = t->options.cpu_reference ? t->cpu.step_rows : t->fast.step_rows;
        r->cells = t->options.cpu_reference ? t->cpu.cells : t->fast.cells;
    }
    r->forward_evals = (double)r->evals_per_cell * (double)r->cells * (double)r->T;
}

/* The GPU intervals of the last step from the engine's marks, in ms. */
static int read_marks(ca_trainer *t, double *samples[SAMPLE_COUNT], int i)
{
    uint64_t ns[CA_GPU_MARK_COUNT];
    if (vk_timestamps_read(t->vk, t->gpu.profile_first, CA_GPU_MARK_COUNT, ns)) return DLCA_ERR;
    samples[SAMPLE_GPU][i] = 1e-6 * (double)(ns[CA_GPU_MARK_END] - ns[CA_GPU_MARK_START]);
    samples[SAMPLE_FORWARD][i] = 1e-6 * (double)(ns[CA_GPU_MARK_FORWARD_END] - ns[CA_GPU_MARK_START]);
    samples[SAMPLE_LOSS][i] = 1e-6 * (double)(ns[CA_GPU_MARK_BACKWARD_START] - ns[CA_GPU_MARK_FORWARD_END]);
    samples[SAMPLE_BACKWARD][i] = 1e-6 * (double)(ns[CA_GPU_MARK_BACKWARD_END] - ns[CA_GPU_MARK_BACKWARD_START]);
    samples[SAMPLE_OPTIMIZER][i] = 1e-6 * (double)(ns[CA_GPU_MARK_END] - ns[CA_GPU_MARK_BACKWARD_END]);
    return DLCA_OK;
}

/* The training step as `dlca train` runs it between log rows: no hard loss. */
static int one_step(ca_trainer *t)
{
    double soft;
    return ca_trainer_step(t, &soft, NULL);
}

double ca_bench_startup_pipelines_ms(const ca_bench_startup *s)
{
    return s->marked ? s->pipeline_ms[s->marked - 1] : 0.0;
}

/* one_step; the trainer's first step, whether it warms up or is measured, ends the start-up. */
static int bench_step(ca_trainer *t, ca_bench_startup *startup)
{
    int first = startup && startup->marked == CA_STARTUP_FIRST_STEP;
    int rc = one_step(t);
    if (!rc && first) ca_bench_startup_mark(startup, CA_STARTUP_FIRST_STEP, t->backend == CA_BACKEND_GPU ? t->vk : NULL);
    return rc;
}

/* The dispatch timeline of the step just run into row i of `us` ([steps][CA_BENCH_KERNELS_MAX]). */
static int read_stamps(ca_trainer *t, const vk_dispatch_stamps *stamps, double *us, int i, ca_bench_result *r)
{
    uint64_t ns[CA_BENCH_KERNELS_MAX + 1], start[1];
    uint32_t n = stamps->count;
    if (i == 0) r->kernel_count = (int)n;
    if (r->kernel_count != (int)n) r->kernel_count = -1;
    if (r->kernel_count <= 0) return DLCA_OK;
    if (vk_timestamps_read(t->vk, t->gpu.profile_first + CA_GPU_MARK_START, 1, start) ||
        vk_timestamps_read(t->vk, stamps->first, n, ns))
        return DLCA_ERR;
    for (uint32_t k = 0; k < n; k++) {
        us[(size_t)i * CA_BENCH_KERNELS_MAX + k] = 1e-3 * (double)(ns[k] - (k ? ns[k - 1] : start[0]));
        r->kernel_names[k] = stamps->names[k];
    }
    return DLCA_OK;
}

static int measure(ca_trainer *t, int steps, ca_bench_startup *startup, double *samples[SAMPLE_COUNT],
                   vk_dispatch_stamps *stamps, double *us, ca_bench_result *r)
{
    int gpu = t->backend == CA_BACKEND_GPU;
    uint64_t dispatches = gpu ? t->vk->dispatches : 0, submissions = gpu ? t->vk->submissions : 0;
    if (stamps) t->vk->dispatch_stamps = stamps;
    for (int i = 0; i < steps; i++) {
        double start = ca_bench_now_ms();
        if (stamps) stamps->count = 0;
        if (bench_step(t, startup)) return DLCA_ERR;
        samples[SAMPLE_WALL][i] = ca_bench_now_ms() - start;
        if (r->has_gpu_times && read_marks(t, samples, i)) return DLCA_ERR;
        if (stamps && read_stamps(t, stamps, us, i, r)) return DLCA_ERR;
    }
    if (gpu) {
        t->vk->dispatch_stamps = NULL;
        r->dispatches_per_step = (double)(t->vk->dispatches - dispatches) / steps;
        r->submissions_per_step = (double)(t->vk->submissions - submissions) / steps;
        r->peak_device_bytes = t->vk->peak_device_bytes;
    }
    return DLCA_OK;
}

/* Each dispatch's median over the steps (column k of `us`). */
static void summarise_kernels(double *us, int steps, ca_bench_result *r)
{
    double *column = us + (size_t)steps * CA_BENCH_KERNELS_MAX; /* room after the rows */
    for (int k = 0; k < r->kernel_count; k++) {
        for (int i = 0; i < steps; i++) column[i] = us[(size_t)i * CA_BENCH_KERNELS_MAX + k];
        r->kernel_us[k] = ca_bench_spread_of(column, steps).median;
    }
}

static void summarise(double *samples[SAMPLE_COUNT], int steps, ca_bench_result *r)
{
    ca_bench_spread *out[SAMPLE_COUNT] = {&r->wall_ms, &r->gpu_ms, &r->forward_ms, &r->loss_ms, &r->backward_ms,
                                          &r->optimizer_ms};
    for (int k = 0; k < SAMPLE_COUNT; k++)
        if (k == SAMPLE_WALL || r->has_gpu_times) *out[k] = ca_bench_spread_of(samples[k], steps);
}

#ifdef DLCA_CLOCKS
/* A DLCA_CLOCKS build: the clock records of the last measured step (glsl/fused_clocks.glsl) into
 * CLOCKS_FILE in the working directory, for tools/fused_clocks.py. Only the fused step kernels
 * have probes: the persistent and the per-layer ones leave the records zero. */
#define CLOCKS_FILE "fused_clocks.bin"
static int write_clocks(ca_trainer *t)
{
    void *data = malloc(CA_GPU_CLOCK_BYTES);
    if (!data) return err_set(DLCA_ERR_NOMEM, "out of memory for the clock records");
    int rc = ca_gpu_download_clocks(&t->gpu, data);
    FILE *f = rc ? NULL : fopen(CLOCKS_FILE, "wb");
    if (!rc && (!f || fwrite(data, 1, CA_GPU_CLOCK_BYTES, f) != CA_GPU_CLOCK_BYTES))
        rc = err_set(DLCA_ERR, "cannot write %s", CLOCKS_FILE);
    if (f && fclose(f) && !rc) rc = err_set(DLCA_ERR, "cannot write %s", CLOCKS_FILE);
    free(data);
    if (rc) return rc;
    int probed = t->gpu.plan.fused && !t->gpu.plan.persistent_groups;
    fprintf(stderr, "clocks (DLCA_CLOCKS build): %s written; python3 tools/fused_clocks.py %s%s\n", CLOCKS_FILE,
            CLOCKS_FILE,
            probed ? ""
                   : " (it holds none: only the fused step kernels have probes, not the persistent or per-layer "
                     "ones; DLCA_PERSISTENT=0 runs them where they fit)");
    return DLCA_OK;
}
#endif

int ca_bench_train(ca_trainer *t, int warmup, int steps, int kernels, ca_bench_startup *startup, ca_bench_result *r)
{
    memset(r, 0, sizeof *r);
    if (warmup < 0 || steps < 1) return err_set(DLCA_ERR, "bench: %d warm-up and %d measured steps", warmup, steps);
    r->warmup = warmup, r->steps = steps;
    describe(t, r);
    int gpu = t->backend == CA_BACKEND_GPU;
    r->has_gpu_times = gpu && t->vk->timestamps != VK_NULL_HANDLE;
    if (r->has_gpu_times) {
        /* The top of the pool, out of the way of anything else that profiles. */
        t->gpu.profile = 1, t->gpu.profile_first = VK_TIMESTAMP_COUNT - CA_GPU_MARK_COUNT;
    }
    double *block = malloc((size_t)SAMPLE_COUNT * (size_t)steps * sizeof(double)), *samples[SAMPLE_COUNT];
    if (!block) return err_set(DLCA_ERR_NOMEM, "out of memory for %d samples", steps);
    for (int k = 0; k < SAMPLE_COUNT; k++) samples[k] = block + (size_t)k * (size_t)steps;
    /* Dispatch stamps below the engine's marks: [steps + 1][CA_BENCH_KERNELS_MAX] samples. */
    vk_dispatch_stamps *stamps = NULL;
    double *us = NULL;
    if (kernels && r->has_gpu_times) {
        stamps = calloc(1, sizeof *stamps);
        us = malloc(((size_t)steps + 1) * CA_BENCH_KERNELS_MAX * sizeof(double));
        if (!stamps || !us) {
            free(stamps), free(us), free(block);
            return err_set(DLCA_ERR_NOMEM, "out of memory for the dispatch timeline");
        }
        stamps->first = t->gpu.profile_first - CA_BENCH_KERNELS_MAX, stamps->limit = CA_BENCH_KERNELS_MAX;
    }
    int rc = DLCA_OK, done = 0;
    /* On a GPU (not a CPU driver) at least CA_BENCH_GPU_WARMUP_MS of it: a GPU left idle runs at its
     * idle clock, several times slower, until it has been busy for about a second, so shorter
     * runs measure the clock, not the kernels (docs/bench-notes.md, rounds 15 and 16). */
    double start = ca_bench_now_ms(), least = gpu && t->vk->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU ? CA_BENCH_GPU_WARMUP_MS : 0;
    for (; !rc && (done < warmup || ca_bench_now_ms() - start < least) && done < 1000000; done++)
        rc = bench_step(t, startup);
    r->warmup = done;
    if (!rc) rc = measure(t, steps, startup, samples, stamps, us, r);
    if (!rc) summarise(samples, steps, r);
    if (!rc && stamps) summarise_kernels(us, steps, r);
    if (gpu) t->vk->dispatch_stamps = NULL;
    if (gpu) {
        r->persistent = t->gpu.plan.fused && t->gpu.plan.persistent_groups;
        r->persistent_gave_up = t->gpu.persistent_gave_up;
        ca_gpu_plan_describe(&t->gpu.plan, r->plan, sizeof r->plan);
#ifdef DLCA_CLOCKS
        if (!rc) rc = write_clocks(t);
#endif
    }
    t->gpu.profile = 0;
    free(block), free(stamps), free(us);
    return rc;
}

