/* ca_bench_population.h: timing a population's training step for `dlca bench --population N`:
 * every member's step in one submission on a GPU (ca_population_step), wall clock, with and
 * without the hard loss each member measures when `dlca train --population` checks every step. */
#ifndef DLCA_CA_BENCH_POPULATION_H
#define DLCA_CA_BENCH_POPULATION_H

#include "ca_bench.h"
#include "ca_population.h"

typedef struct {
    int members, warmup, steps;  /* warm-up steps run (at least those asked for), measured steps */
    ca_bench_spread step_ms;     /* a step of all members, wall clock, no hard loss */
    ca_bench_spread measured_ms; /* the same with every member's hard loss */
    ca_bench_spread record_ms, run_ms; /* GPU, no hard loss: its parts (ca_population.record_ms, run_ms) */
    double dispatches_per_step, submissions_per_step; /* GPU: mean over the steps without hard loss */
    size_t peak_device_bytes;    /* GPU: vk->peak_device_bytes after the run */
    const char *hard_loss_on;    /* where the members measure the hard loss: "host" (on threads
                                    while the GPU steps, ca_train.h hard_on_host), "gpu" (a hard
                                    rollout in the step's commands) or "cpu" (the CPU engine) */
} ca_bench_population_result;

/* Runs `warmup` steps of every member (on a real GPU, as many more as take 1 s in all), then
 * `steps` measured ones without the hard loss and `steps` with it (steps >= 1). The members really
 * train; their watches are not used. */
int ca_bench_population(ca_population *population, int warmup, int steps, ca_bench_population_result *result);

#endif
