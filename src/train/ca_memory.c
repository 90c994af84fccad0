/* ca_memory.c: host memory estimates of runs, in doubles so that no size can wrap around. */
#include "ca_memory.h"

#include "ca_fast_kernel.h"
#include "ca_fast_plan.h"
#include "ca_fast_pool.h"
#include "error.h"
#include "hard_cpu.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

enum { F32 = 4, F64 = 8, WORD32 = 4, WORD64 = 8 };

/* Device memory that is host memory: a CPU driver, or an integrated GPU's shared memory. */
static int device_is_host(ca_backend backend, const vk_context *vk)
{
    return backend == CA_BACKEND_GPU && vk &&
           (vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ||
            vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU);
}

static double step_rows(const ca_config *c)
{
    size_t perception_row[CA_MAX_LAYERS], update_row[CA_MAX_LAYERS];
    return (double)ca_config_layout_rows(c, perception_row, update_row);
}

/* ca_gpu_init's buffers for `batch` grids of height x width: its own plan while the cell count
 * fits the plan's 32-bit pitch, and never less than the grids and one step's activations. */
static double gpu_engine_bytes(const ca_model *m, const vk_context *vk, int batch, int height, int width, int steps,
                               const ca_gpu_options *options)
{
    const ca_config *c = &m->config;
    double cells = (double)batch * height * width;
    double lower = (((double)steps + 1.0) * c->channels + 3.0 * step_rows(c)) * cells * F32;
    if (cells >= (double)(1u << 31)) return lower;
    ca_gpu_plan plan;
    ca_shape shape = {batch, height, width, c->boundary};
    if (ca_gpu_plan_make(&plan, vk, m, shape, options)) {
        err_clear(); /* ca_gpu_init will say what does not fit */
        return lower;
    }
    double planned = (double)ca_gpu_plan_bytes(&plan);
    return planned > lower ? planned : lower;
}

double ca_memory_runner(const ca_model *m, ca_backend backend, const vk_context *vk, int batch, int height, int width,
                        int hard)
{
    const ca_config *c = &m->config;
    double cells = (double)batch * height * width, channels = c->channels;
    double bytes = channels * cells * F64; /* runner->grid */
    if (hard) {
        double rows = (double)batch * height;
        if (backend == CA_BACKEND_GPU) {
            double grid = channels * rows * ceil(width / 32.0) * WORD32;
            bytes += 2.0 * grid; /* a packed grid on the host, and its staging copy */
            if (device_is_host(backend, vk)) bytes += 2.0 * grid;
        } else {
            bytes += 4.0 * channels * rows * ceil(width / 64.0) * WORD64 + HARD_CPU_SLOT_BYTES; /* hard_cpu_init */
        }
        return bytes;
    }
    if (backend == CA_BACKEND_GPU) {
        bytes += 2.0 * channels * cells * F32; /* a grid staged as floats, and its staging buffer */
        if (device_is_host(backend, vk)) {
            ca_model view = *m;
            view.config.steps = 1;
            bytes += gpu_engine_bytes(&view, vk, batch, height, width, 1, NULL);
        }
        return bytes;
    }
    /* ca_cpu_init with T = 1: act and dact [rows][cells], grids [2][C][cells], dgrid [C][cells]. */
    return bytes + (2.0 * step_rows(c) + 3.0 * channels) * cells * F64;
}

/* The fast CPU engine (ca_fast.c, no activation cache) and its plan (ca_fast_plan.c). */
static double fast_engine_bytes(const ca_model *m, int threads_asked)
{
    const ca_config *c = &m->config;
    double cells = (double)c->batch * c->height * c->width, grid = (double)c->channels * cells;
    double blocks = ceil(cells / CA_FAST_BLOCK) + 4.0;
    double threads = threads_asked > 0 ? threads_asked : ca_fast_default_threads();
    if (threads > blocks) threads = blocks;
    double plan_rows = 9.0 * c->channels + step_rows(c);
    return ((double)c->steps + c->window + 1.0) * grid * F32                          /* grids */
           + blocks * (double)m->gate_count * 4.0 * CA_FAST_LANES * F32               /* coeff_lanes */
           + grid * F32 + 2.0 * CA_FAST_DIRECTIONS * grid * F32                       /* dgrid, dneighbour */
           + 2.0 * plan_rows * CA_FAST_BLOCK * threads * F32                          /* scratch */
           + 2.0 * CA_FAST_DIRECTIONS * cells * sizeof(int32_t);                      /* neighbour, reader */
}

double ca_memory_trainer(const ca_model *m, ca_backend backend, const vk_context *vk, const ca_options *options)
{
    const ca_config *c = &m->config;
    double cells = (double)c->batch * c->height * c->width, gates = (double)m->gate_count * GATE_OP_COUNT;
    double bytes = 2.0 * gates * F32                                       /* AdamW moments */
                   + 6.0 * gates * F32 /* two snapshots of z and the moments (on a GPU's host, or the CPU) */
                   + ((double)c->channels + c->loss_channels) * cells * F64  /* start and target */
                   + (double)c->pool * c->channels * c->height * c->width * F64; /* the pool */
    if (backend == CA_BACKEND_GPU) {
        bytes += 2.0 * c->channels * cells * F32; /* the start staged as floats, and its staging buffer */
        if (device_is_host(backend, vk))
            bytes += gpu_engine_bytes(m, vk, c->batch, c->height, c->width, c->steps + c->window, &options->gpu);
        return bytes;
    }
    bytes += 2.0 * gates * F64; /* double logits and gradient */
    if (!options->cpu_reference) return bytes + fast_engine_bytes(m, options->cpu_threads);
    /* ca_cpu_init: act [T'][rows][cells], grids [T'+1][C][cells], dact [rows][cells], dgrid [C][cells],
     * T' = T + window. */
    double rows = step_rows(c), steps = (double)c->steps + c->window;
    return bytes + ((steps + 1.0) * rows + (steps + 2.0) * c->channels) * cells * F64;
}

static void describe_bytes(char *text, size_t size, double bytes)
{
    double gib = bytes / (1024.0 * 1024.0 * 1024.0);
    if (gib >= 1.0) snprintf(text, size, "%.1f GiB", ceil(gib * 10.0) / 10.0); /* as the advice rounds */
    else snprintf(text, size, "%.0f MiB", ceil(bytes / (1024.0 * 1024.0)));
}

int ca_memory_check(double bytes, double limit_gib, const char *what, ...)
{
    double limit = limit_gib * 1024.0 * 1024.0 * 1024.0;
    if (bytes <= limit) return DLCA_OK;
    char run[512], needs[32], has[32];
    va_list args;
    va_start(args, what);
    vsnprintf(run, sizeof run, what, args);
    va_end(args);
    describe_bytes(needs, sizeof needs, bytes);
    describe_bytes(has, sizeof has, limit);
    double advice = ceil(bytes / (1024.0 * 1024.0 * 1024.0) * 10.0) / 10.0;
    if (!isfinite(advice) || advice > CA_MEMORY_MAX_GIB)
        return err_set(DLCA_ERR, "%s needs about %s of memory, more than --max-memory can allow (%.0f GiB)", run, needs,
                       CA_MEMORY_MAX_GIB);
    return err_set(DLCA_ERR, "%s needs about %s of memory, over the --max-memory limit of %s: give --max-memory %.1f to "
                             "allow it", run, needs, has, advice);
}

int ca_memory_check_training(const ca_model *m, ca_backend backend, const vk_context *vk, const ca_options *options,
                             double limit_gib)
{
    const ca_config *c = &m->config;
    return ca_memory_check(ca_memory_trainer(m, backend, vk, options), limit_gib,
                           "training %s (a batch of %d grid%s of %dx%d, %d channels, T = %d)", c->preset, c->batch,
                           c->batch == 1 ? "" : "s", c->height, c->width, c->channels, c->steps);
}
