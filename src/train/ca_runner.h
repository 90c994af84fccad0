/* ca_runner.h: inference without training: advance a grid one step at a time, as long as
 * wanted, on the CPU or the GPU, soft or hard. Used by `dlca run`, `dlca eval` and the viewer.
 * Soft runs use the float engines, which hold one step of activations, so a run of any length
 * takes the memory of one. Hard runs use the bit-packed engines (hard_cpu, hard_gpu) on the
 * pruned circuit: the same bits as the float engines' hard rollout, in a fraction of the memory. */
#ifndef DLCA_CA_RUNNER_H
#define DLCA_CA_RUNNER_H

#include "ca_cpu.h"
#include "ca_gpu.h"
#include "ca_train.h"
#include "hard_cpu.h"
#include "hard_gpu.h"

typedef struct {
    ca_model view;       /* the model with T = 1 and the run's fire rate; shares wiring and logits */
    ca_backend backend;
    vk_context *vk;
    ca_cpu cpu;           /* soft runs on the CPU */
    ca_gpu gpu;           /* soft runs on the GPU */
    hard_cpu packed_cpu;  /* hard runs on the CPU */
    hard_gpu packed_gpu;  /* hard runs on the GPU */
    ca_shape shape;
    size_t grid_values;  /* C * cells */
    double *grid;        /* the current grid [C][cells]; edit it, then ca_runner_grid_changed */
    uint64_t seed, t;    /* fire masks are drawn from (seed, t) */
    int hard;
    /* Hard runs on the CPU: the leading channels a step writes back into grid (0: every channel).
     * A caller that reads only the loss channels sets it, and the others in grid go stale: it
     * then writes every channel before ca_runner_grid_changed, or edits with ca_runner_paint. */
    int read_channels;
    /* Hard runs on the CPU: 1 leaves grid as it was after a step, for ca_runner_sync to bring up
     * to date; for a caller that reads the grid less often than it steps (a viewer's frame). */
    int defer_read;
    int packed_stale; /* hard runs on the CPU: grid was written since the engine last took it in */
    int grid_stale;   /* ... the engine stepped since grid was last written back (defer_read) */
    int ready; /* the engine was initialised (free releases it) */
} ca_runner;

/* Prepares a run of `model` on `batch` samples of height x width, soft or hard, with fire rate
 * `fire_rate` (1 = synchronous). The grid starts at zero. */
int ca_runner_init(ca_runner *runner, const ca_model *model, ca_backend backend, vk_context *vk, int batch,
                   int height, int width, int hard, double fire_rate, uint64_t seed);

void ca_runner_free(ca_runner *runner);

/* Call after writing runner->grid (a new start, damage): hard runs round it to bits, and a hard
 * run on the CPU takes it in at its next step (an edit without this call is not seen there). */
int ca_runner_grid_changed(ca_runner *runner);

/* Advances the grid one CA step. */
int ca_runner_step(ca_runner *runner);

/* Brings grid up to date where defer_read left it behind the engine (its read channels); a no-op
 * otherwise. */
void ca_runner_sync(ca_runner *runner);

/* Zeroes (value 0) or sets (value 1) every channel of the cells in a rectangle of every sample. */
void ca_runner_paint(ca_runner *runner, int x, int y, int width, int height, double value);

#endif
