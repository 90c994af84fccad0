/* ca_options.h: every choice of how a run uses the machine, apart from the experiment itself
 * (ca_config): which device, how the Vulkan context is made, the GPU engine's plan, the CPU
 * engine's threads, debug switches. Filled in one place, from flags and the environment
 * (src/cli/cli_env.c), and handed down; a zeroed struct means "automatic" everywhere. */
#ifndef DLCA_CA_OPTIONS_H
#define DLCA_CA_OPTIONS_H

#include "ca_gpu_plan.h"
#include "ca_model.h"
#include "vk_context.h"

#include <stdint.h>

typedef struct {
    const char *device;     /* auto (NULL), cpu, a Vulkan device index, type or part of its name */
    int device_from_environment; /* `device` is DLCA_DEVICE's (messages say so), not --device's */
    vk_context_options vk;  /* validation layers, bounds checks, pipeline statistics, hang timeout;
                               its queues (DLCA_QUEUES) 0 unless set: then ca_backend_open opens
                               what `models` needs (ca_backend.h) */
    int models;             /* models trained side by side on the GPU (a population's members, a
                               sweep's seeds); 0: one */
    ca_gpu_options gpu;     /* the GPU engine's path: cache, fused, persistent, tiles */
    int cpu_threads;        /* the fast CPU engine's threads; 0: the online cores */
    int cpu_reference;      /* train on the double reference engine instead of the fast one */
    int check_stages;       /* GPU training steps stage by stage against the CPU engine (slow) */
    int hard_rollout_always; /* a step asked for the hard loss runs the hard rollout even where
                                the trainer could reuse the last one's (ca_train.h): dlca bench
                                times the rollout, tests compare the two ways */
    ca_gpu_choice hard_on_host; /* where a GPU step measures the hard loss (ca_train.h,
                               hard_on_host): AUTO on the host where the rollout is large enough
                               (ca_hard_host.h), ON wherever the host can, OFF never: tests
                               compare the two */
    const char *assets;     /* where the shipped targets and models are; NULL: the source tree's */
    /* A test seam, never set by the command line: called before training step `step` (1-based)
     * with the model, whose logits it may change (return 1 when it did: they go to the engine;
     * 0 when not; DLCA_ERR to stop). tests/dlca_inject_nan.c poisons a logit with it. */
    int (*before_step)(void *context, uint64_t step, ca_model *model);
    void *before_step_context;
} ca_options;

#endif
