/* ca_bench.h: measuring the training step for `dlca bench`: wall clock and GPU timestamps per
 * step (forward, loss, backward, optimizer), gate evaluations per second, dispatches and queue
 * submissions per step, device memory. It times ca_trainer_step itself, uploads and read-backs
 * included, so the numbers are what `dlca train` gets on a step that logs nothing. */
#ifndef DLCA_CA_BENCH_H
#define DLCA_CA_BENCH_H

#include "ca_train.h"

#include <stddef.h>
#include <stdint.h>

/* Where a run's start-up goes, from the command's start to the end of its first training step:
 * the parts in the order they run, each marked when it ends (ca_bench_startup_mark). */
enum {
    CA_STARTUP_SETUP,      /* options, the model and its target: before any device */
    CA_STARTUP_CONTEXT,    /* ca_backend_open: Vulkan instance, device, the pipeline cache's file */
    CA_STARTUP_ENGINE,     /* ca_trainer_init: plan, gate order, buffers, uploads, the engine's pipelines */
    CA_STARTUP_FIRST_STEP, /* the first training step, with the pipelines it makes on first use */
    CA_STARTUP_PARTS
};

typedef struct {
    double start;                         /* ca_bench_now_ms() at the command's start */
    int marked;                           /* parts marked so far */
    double end[CA_STARTUP_PARTS];         /* when each part ended */
    /* The context's pipeline counters when each part ended (vk_context; zeros on the CPU engine). */
    double pipeline_ms[CA_STARTUP_PARTS];
    uint32_t pipelines[CA_STARTUP_PARTS], cache_hits[CA_STARTUP_PARTS];
    uint64_t submissions[CA_STARTUP_PARTS]; /* queue submissions so far (each upload waits for one) */
    /* The context's own parts (vk_context_init) and its pipeline cache, copied at CA_STARTUP_CONTEXT. */
    double instance_ms, device_ms, cache_ms;
    uint32_t queues;                      /* the queues the device was made with (ca_backend_queues) */
    int gpu, cache_feedback;              /* a Vulkan context; the driver reports cache hits */
    const char *cache_state;              /* vk_cache_state_name: off, new, loaded, ignored */
    size_t cache_bytes;                   /* the pipeline cache data read from its file */
} ca_bench_startup;

/* Wall clock in ms (CLOCK_MONOTONIC). */
double ca_bench_now_ms(void);

/* Marks the end of part `part` (the next one), with the pipeline counters of `vk` (NULL on the
 * CPU engine). */
void ca_bench_startup_mark(ca_bench_startup *startup, int part, const vk_context *vk);

/* Part `part`'s wall time less the pipelines made during it, in ms (0 before it is marked). */
double ca_bench_startup_ms(const ca_bench_startup *startup, int part);

/* The time spent making pipelines in all the parts marked so far, in ms. */
double ca_bench_startup_pipelines_ms(const ca_bench_startup *startup);

enum { CA_BENCH_KERNELS_MAX = 256 }; /* dispatches of a step that --kernels times */

/* Warm-up on a real GPU lasts this long at least: idle, it runs at a clock several times slower
 * until it has been busy for about a second (docs/bench-notes.md, rounds 15 and 16). */
enum { CA_BENCH_GPU_WARMUP_MS = 1000 };

/* One quantity over the measured steps. */
typedef struct {
    double median, p10, p90, min, max;
} ca_bench_spread;

typedef struct {
    int warmup, steps;      /* warm-up steps run (at least those asked for), measured steps */
    size_t model_gates;     /* gates of the model (logit rows) */
    size_t evals_per_cell;  /* gate evaluations per cell and CA step: perception layers count once per
                             * channel, so this is the activation rows of one step, not model_gates */
    size_t cells;           /* batch * H * W */
    int T;
    double forward_evals;   /* evals_per_cell * cells * T; backward counts the same again */
    ca_bench_spread wall_ms;
    /* GPU engine only: */
    int has_gpu_times;      /* 0 on a queue without timestamps */
    int fused;              /* 1: the fused CA-step kernels ran, 0: the per-layer ones */
    int persistent;         /* fused: 1 if the persistent ones ran the measured steps (all T steps a
                               dispatch), 0 if one dispatch a step */
    uint32_t persistent_gave_up; /* their workgroups that the device could not hold at once (then 0) */
    char plan[192];         /* the GPU engine's plan after the run (ca_gpu_plan_describe) */
    ca_bench_spread gpu_ms, forward_ms, loss_ms, backward_ms, optimizer_ms;
    double dispatches_per_step, submissions_per_step; /* mean over the measured steps */
    size_t peak_device_bytes;   /* vk->peak_device_bytes after the run */
    /* With `kernels` (GPU, timestamps): each dispatch of a step in recording order, and the median
     * over the measured steps of the time from the timestamp before it (the step's start for the
     * first) to the one after it: its barrier interval and kernel. Timestamps serialise
     * dispatches that would overlap, so the sum exceeds gpu_ms a little. */
    int kernel_count;           /* 0: not timed; -1: steps recorded different dispatches */
    const char *kernel_names[CA_BENCH_KERNELS_MAX];
    double kernel_us[CA_BENCH_KERNELS_MAX];
    size_t engine_device_bytes; /* ca_gpu_buffer_bytes: what the engine's buffers take */
} ca_bench_result;

/* Runs `warmup` training steps (on a GPU, as many more as take 1 s in all; result->warmup says
 * how many ran), then `steps` measured ones (>= 1) on an initialised trainer (which really
 * trains: the model's logits change). The trainer's first step ends `startup`'s
 * CA_STARTUP_FIRST_STEP (NULL: no start-up report). `kernels`: time each dispatch of the measured
 * steps too (kernel_names, kernel_us). */
int ca_bench_train(ca_trainer *trainer, int warmup, int steps, int kernels, ca_bench_startup *startup,
                   ca_bench_result *result);

/* Median, 10th and 90th percentile (linear between ranks), min and max of values[0..n), n >= 1.
 * Sorts `values` in place. */
ca_bench_spread ca_bench_spread_of(double *values, int n);

/* Gate evaluations per second: forward and backward counted once each, over `ms` milliseconds. */
double ca_bench_evals_per_second(const ca_bench_result *result, double ms);


#endif
