/* ca_bench.h: measuring the training step for `dlca bench`: wall clock and GPU timestamps per
 * step (forward, loss, backward, optimizer), gate evaluations per second, dispatches and queue
 * submissions per step, device memory. It times ca_trainer_step itself, uploads and read-backs
 * included, so the numbers are what `dlca train` gets on a step that logs nothing. */
#ifndef DLCA_CA_BENCH_H
#define DLCA_CA_BENCH_H

#include "ca_train.h"

#include <stddef.h>

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
    size_t engine_device_bytes; /* ca_gpu_buffer_bytes: what the engine's buffers take */
} ca_bench_result;

/* Runs `warmup` training steps (on a GPU, as many more as take 1 s in all; result->warmup says
 * how many ran), then `steps` measured ones (>= 1) on an initialised trainer (which really
 * trains: the model's logits change). */
int ca_bench_train(ca_trainer *trainer, int warmup, int steps, ca_bench_result *result);

/* Median, 10th and 90th percentile (linear between ranks), min and max of values[0..n), n >= 1.
 * Sorts `values` in place. */
ca_bench_spread ca_bench_spread_of(double *values, int n);

/* Gate evaluations per second: forward and backward counted once each, over `ms` milliseconds. */
double ca_bench_evals_per_second(const ca_bench_result *result, double ms);


#endif
