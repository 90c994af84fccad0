/* hard_bench_gpu.h: the speed of the GPU hard engine (hard_gpu.h), for `dlca bench --hard
 * --device D`: a batch of periodic grids stepped many times per submission. */
#ifndef DLCA_HARD_BENCH_GPU_H
#define DLCA_HARD_BENCH_GPU_H

#include "ca_model.h"
#include "hard_gpu.h"
#include "vk_context.h"

#include <stdio.h>

typedef struct {
    double rate;         /* median cell updates/s: by GPU time when the queue has timestamps, else wall */
    double gpu_rate;     /* median cell updates/s by GPU timestamps (0 without timestamps) */
    double wall_rate;    /* median cell updates/s by wall clock (submit to fence) */
    double gpu_ms, wall_ms; /* median ms per run */
    int has_gpu_times;
    int compiled;        /* the engine ran the compiled module (else the interpreter) */
    size_t gates;        /* gates of the pruned circuit */
    size_t engine_bytes; /* device memory of the engine's buffers */
} hard_bench_gpu_result;

/* Prunes `model`'s hard circuit and times hard_gpu (kind: HARD_GPU_AUTO unless comparing) on
 * `batch` height x width periodic grids from random bits at the model's fire rate: one untimed
 * run, then `runs` runs of `steps` steps, each run one submission (recorded once, replayed).
 * Refuses, naming the largest batch that fits, a batch whose grids exceed the device's memory
 * or storage-buffer range. Prints a report to `out` (may be NULL); `result` may be NULL. */
int hard_bench_gpu(vk_context *vk, const ca_model *model, int batch, int height, int width, int runs, int steps,
                   hard_gpu_kind kind, FILE *out, hard_bench_gpu_result *result);

#endif
