/* ca_gpu_plan.h: how the GPU engine runs one model on one device. Every choice a user or a test
 * can make is a field of ca_gpu_options (zero = automatic); ca_gpu_plan_make turns the options,
 * the model, the grid and the device's limits into a plan, once, and the engine follows it.
 *
 * The paths, fastest first (docs/design.md has the kernels of each):
 *   persistent  fused kernels, all T forward steps in one dispatch and all T BPTT steps in one,
 *               a workgroup a tile that waits on its neighbours' values (glsl/fused_persistent.glsl);
 *               only where every workgroup can run at once: a GPU, not a CPU driver;
 *   fused       one dispatch a CA step forward and one backward, a workgroup a tile of cells with
 *               the step's activations in shared memory (the backward recomputes them);
 *   per-layer   one dispatch a layer, every activation in device memory (`cache`: all T steps, or
 *               one step recomputed during BPTT). */
#ifndef DLCA_CA_GPU_PLAN_H
#define DLCA_CA_GPU_PLAN_H

#include "ca_model.h"
#include "ca_shape.h"
#include "vk_context.h"

#include <stddef.h>
#include <stdint.h>

/* Rows of the fused kernels' layer table (ca_fused.glsl's uniform block: 4 perception layers at
 * most, then the update layers), and where the gate row table starts in the layers buffer:
 * after the largest layer table, on a 256-byte boundary (any minStorageBufferOffsetAlignment). */
enum { CA_GPU_TABLE_ROWS = 4 + CA_MAX_LAYERS };
enum { CA_GPU_GATE_ROWS_AT = (2 * CA_MAX_LAYERS * 16 * 4 + 255) / 256 * 256 };

/* What the per-layer kernels keep for backward. */
typedef enum {
    CA_CACHE_FULL,      /* every step's activations: fastest */
    CA_CACHE_CHECKPOINT /* only the grid per step; backward recomputes one step at a time */
} ca_cache;

/* A path choice: automatic, forced off, forced on; STEPWISE (persistent only) runs the persistent
 * kernels one dispatch a CA step, which any device can hold: how CI tests their code on lavapipe. */
typedef enum { CA_GPU_AUTO, CA_GPU_OFF, CA_GPU_ON, CA_GPU_STEPWISE } ca_gpu_choice;

/* Every choice of how to run; a zeroed struct is the automatic plan. */
typedef struct {
    ca_cache cache;                /* per-layer path's activations */
    ca_gpu_choice fused;           /* AUTO: wherever they fit; ON where they do not fit is an error */
    ca_gpu_choice persistent;      /* AUTO: on a GPU wherever the fused kernels run and their
                                      persistent versions fit; ON: on a CPU driver too */
    uint32_t tile, tile_backward;  /* fused cells per workgroup; 0: 2, or fewer where 2 do not fit */
    uint32_t max_slots;            /* fused backward's workgroups at most; 0: as the S partials'
                                      memory cap allows */
    uint32_t per_thread;           /* per-layer backward's cells per lane (1..64); 0: by grid size */
    int defer_pipelines;           /* ca_gpu_init leaves the fused pipelines to ca_gpu_create_pipelines
                                      (a population compiles all its members' at once) */
    uint32_t blocks_per_buffer;    /* per-layer step blocks in one buffer at most; 0: as one
                                      allocation may hold (tests force the split with it) */
} ca_gpu_options;

/* Sizes in bytes of the engine's buffers. */
typedef struct {
    size_t gates16, gates4, grids, act, block, scratch, dgrid, target, image, layers, sum_partials,
        moore_steps;
} ca_gpu_sizes;

typedef struct {
    ca_cache cache;
    int fused;                     /* 1: the fused (or persistent) kernels run; 0: the per-layer ones */
    int fused_possible;            /* the fused kernels fit this model and device */
    uint32_t tile, tiles;          /* fused forward: cells a workgroup, workgroups a step */
    uint32_t tile_backward, slots; /* fused backward: cells a tile, workgroups (each owns a slot of
                                      S partial rows; fewer than tiles: each takes every slots-th) */
    uint32_t update_inputs, max_width, act_rows; /* fused: shared-memory layout (vk_push_fused) */
    uint32_t persistent_groups;    /* the whole forward rollout in one dispatch of this many
                                      workgroups, one a tile; 0: one dispatch a step */
    int persistent_backward;       /* ... and BPTT in one dispatch of `slots` (a slot a tile) */
    int persistent_stepwise;       /* the persistent kernels one dispatch a step (CA_GPU_STEPWISE) */
    uint32_t per_thread, chunks;   /* per-layer backward: cells per lane, chunks of 64 x per_thread */
    uint32_t blocks_per_buffer;    /* per-layer step blocks per buffer at most (0: the device's) */
    uint32_t cells, pitch;         /* cells of the batch; a row's floats (>= cells, a multiple of 64) */
    ca_gpu_sizes sizes;
} ca_gpu_plan;

/* The plan for `model` on `shape` (the batch of grids) on `vk`'s device. Fails with a message
 * when the options ask for what cannot run (fused kernels that do not fit, a grid too large
 * for 32-bit indexing or for the device's dispatch limits). */
int ca_gpu_plan_make(ca_gpu_plan *plan, const vk_context *vk, const ca_model *model, ca_shape shape,
                     const ca_gpu_options *options);

/* The device memory the plan allocates: with the per-layer step blocks when the plan runs the
 * per-layer kernels. */
size_t ca_gpu_plan_bytes(const ca_gpu_plan *plan);

/* One line for people: "persistent (128 + 128 workgroups), tiles of 2 cells" and the like. */
void ca_gpu_plan_describe(const ca_gpu_plan *plan, char *text, size_t size);

#endif
