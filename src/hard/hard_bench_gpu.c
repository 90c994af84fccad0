/* hard_bench_gpu.c: timing hard_gpu on a batch of big periodic grids, many steps per submission,
 * by GPU timestamps and by wall clock. */
#include "hard_bench_gpu.h"

#include "error.h"
#include "rng.h"
#include "vk_command.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *values, int n)
{
    qsort(values, (size_t)n, sizeof(double), compare_doubles);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

static double mib(double bytes) { return bytes / 1048576.0; }

/* The largest device-local heap. */
static double device_heap_bytes(const vk_context *vk)
{
    double best = 0.0;
    for (uint32_t i = 0; i < vk->memory.memoryHeapCount; i++)
        if (vk->memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT && (double)vk->memory.memoryHeaps[i].size > best)
            best = (double)vk->memory.memoryHeaps[i].size;
    return best;
}

/* Refuses a batch whose two grids do not fit the device, naming the largest that does: every
 * grid is one storage buffer, the engine indexes it with 32 bits, and both grids must fit in
 * (most of) the device-local heap. */
static int batch_fits(const vk_context *vk, int channels, int batch, int height, int width)
{
    double words = (double)((width + 31) / 32);
    double grid_bytes_per_batch = 4.0 * channels * height * words;
    double range = (double)vk->props.limits.maxStorageBufferRange, heap = device_heap_bytes(vk);
    double by_range = range / grid_bytes_per_batch, by_heap = 0.9 * heap / (2.0 * grid_bytes_per_batch);
    double by_index = 4294967295.0 / ((double)channels * height * words);
    double by_cells = 4294967295.0 / ((double)height * width);
    double most = by_range;
    if (by_heap < most) most = by_heap;
    if (by_index < most) most = by_index;
    if (by_cells < most) most = by_cells;
    if ((double)batch <= most) return DLCA_OK;
    return err_set(DLCA_ERR,
                   "--batch %d: %d grids of %dx%d with %d channels need 2 x %.1f MiB on the GPU; %s fits at most "
                   "--batch %d (%.0f MiB device-local memory, %.0f MiB per storage buffer, 2^32 words or cells "
                   "per grid)",
                   batch, batch, height, width, channels, mib(grid_bytes_per_batch * batch), vk->props.deviceName,
                   (int)most, mib(heap), mib(range));
}

/* Random bits straight into the packed grid (hard_gpu.h's layout), bits past each row 0. */
static int random_start(hard_gpu *g, uint64_t seed)
{
    size_t rows = (size_t)g->channels * g->rows, n = rows * (size_t)g->words;
    uint32_t *words = malloc(n * sizeof(uint32_t));
    if (!words) return err_set(DLCA_ERR_NOMEM, "out of memory for a start grid of %.1f MiB", mib(4.0 * (double)n));
    rng_state rng;
    rng_init(&rng, seed, 1);
    for (size_t r = 0; r < rows; r++)
        for (int w = 0; w < g->words; w++) {
            int used = g->shape.width - 32 * w;
            words[r * (size_t)g->words + (size_t)w] = (uint32_t)(rng_next(&rng) >> 32) & (used >= 32 ? ~0u : (1u << used) - 1);
        }
    int rc = vk_buffer_upload(g->vk, &g->grids[g->current], 0, words, n * sizeof(uint32_t));
    free(words);
    return rc;
}

/* Records `steps` steps between timestamps 0 and 1, once; replays it 1 + runs times (the first
 * untimed) and fills per-run seconds by wall clock and by GPU time. */
static int time_runs(hard_gpu *g, int runs, int steps, double *wall, double *gpu)
{
    vk_context *vk = g->vk;
    VkCommandBuffer cmd;
    if (vk_cmd_begin(vk, &cmd)) return DLCA_ERR;
    int rc = vk_cmd_timestamps_reset(vk, cmd, 0, 2);
    if (!rc) rc = vk_cmd_timestamp(vk, cmd, 0);
    for (int i = 0; i < steps && !rc; i++) rc = hard_gpu_record_step(g, cmd, 1 + (uint32_t)i);
    if (!rc) rc = vk_cmd_timestamp(vk, cmd, 1);
    int ended = vk_cmd_end(cmd);
    if (!rc) rc = ended;
    for (int r = -1; r < runs && !rc; r++) {
        double start = wall_seconds();
        rc = vk_cmd_submit_wait(vk, cmd);
        double seconds = wall_seconds() - start;
        uint64_t ns[2] = {0, 0};
        if (!rc) rc = vk_timestamps_read(vk, 0, 2, ns);
        if (!rc && r >= 0) wall[r] = seconds, gpu[r] = 1e-9 * (double)(ns[1] - ns[0]);
    }
    if (!vk->hung) vk_cmd_free(vk, cmd); /* a hung buffer may still be pending: leaked on purpose */
    return rc;
}

int hard_bench_gpu(vk_context *vk, const ca_model *model, int batch, int height, int width, int runs, int steps,
                   hard_gpu_kind kind, FILE *out, hard_bench_gpu_result *result)
{
    if (runs < 1 || steps < 1 || batch < 1 || height < 1 || width < 1)
        return err_set(DLCA_ERR, "hard GPU bench: %d runs of %d steps on batch %d of %dx%d", runs, steps, batch,
                       height, width);
    hard_bench_gpu_result res;
    memset(&res, 0, sizeof res);
    hard_netlist net;
    hard_stats stats;
    hard_gpu engine;
    int rc = hard_circuit_build(&net, model, &stats);
    if (rc) return rc;
    size_t bytes_before = vk->device_bytes;
    rc = batch_fits(vk, net.channels, batch, height, width);
    if (!rc)
        rc = hard_gpu_init_kind(&engine, vk, &net, (ca_shape){batch, height, width, CA_BOUNDARY_PERIODIC},
                                model->config.fire_rate, kind);
    hard_netlist_free(&net);
    if (rc) return rc;
    res.compiled = engine.compiled, res.gates = stats.after.total;
    res.engine_bytes = vk->device_bytes - bytes_before;
    double *wall = malloc(2 * (size_t)runs * sizeof(double)), *gpu = wall ? wall + runs : NULL;
    rc = wall ? random_start(&engine, 1) : err_set(DLCA_ERR_NOMEM, "out of memory");
    hard_gpu_set_fire_stream(&engine, 1);
    if (!rc) rc = time_runs(&engine, runs, steps, wall, gpu);
    if (!rc) {
        double updates = (double)batch * height * width * steps;
        res.has_gpu_times = vk->timestamp_valid_bits != 0;
        double best_wall = wall[0], best_gpu = gpu[0];
        for (int r = 1; r < runs; r++) {
            if (wall[r] < best_wall) best_wall = wall[r];
            if (gpu[r] < best_gpu) best_gpu = gpu[r];
        }
        double wall_median = median_of(wall, runs), gpu_median = median_of(gpu, runs);
        res.wall_ms = 1e3 * wall_median, res.wall_rate = updates / wall_median;
        if (res.has_gpu_times && gpu_median > 0.0) res.gpu_ms = 1e3 * gpu_median, res.gpu_rate = updates / gpu_median;
        res.rate = res.gpu_rate > 0.0 ? res.gpu_rate : res.wall_rate;
        if (out) {
            fprintf(out, "hard engine on the GPU: %zu model gates -> %zu gates after pruning, ", stats.model_gates,
                    stats.after.total);
            if (engine.compiled) fprintf(out, "compiled (%zu SPIR-V words)", engine.spirv_words);
            else fprintf(out, "interpreted (%u value slots)", engine.n_slots);
            fprintf(out, ", batch %d of %dx%d periodic, %s, %.1f MiB of device buffers\n", batch, height, width,
                    model->config.fire_rate < 1.0 ? "async" : "sync", mib((double)res.engine_bytes));
            if (res.gpu_rate > 0.0)
                fprintf(out, "  median %.3g cell updates/s by GPU time (best %.3g, %.3f ms per run)\n", res.gpu_rate,
                        updates / best_gpu, res.gpu_ms);
            else
                fprintf(out, "  (this queue has no timestamps: no GPU times)\n");
            fprintf(out, "  median %.3g cell updates/s by wall clock (best %.3g, %.3f ms per run)\n", res.wall_rate,
                    updates / best_wall, res.wall_ms);
            fprintf(out, "  over %d runs of %d steps, one submission each, after one untimed run\n", runs, steps);
        }
    }
    free(wall);
    hard_gpu_free(&engine);
    if (!rc && result) *result = res;
    return rc;
}
