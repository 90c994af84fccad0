/* view_sim.h: the viewer's simulation, free of SDL: one grid (batch 1) of a model that steps,
 * resets, takes damage and switches between hard and soft, sync and async without losing its
 * state. It runs ca_runner: hard mode the pruned circuit bit-packed on the CPU, soft mode the float
 * engine on the CPU or the GPU. Step t draws the fire mask rng_fire_stream(seed, t), so the frames
 * equal `dlca run`'s for the same model, grid, seed, rate and damage. */
#ifndef DLCA_VIEW_SIM_H
#define DLCA_VIEW_SIM_H

#include "ca_runner.h"

#include <stdint.h>

typedef struct {
    const ca_model *model; /* borrowed */
    ca_backend backend;    /* soft mode's engine (hard mode runs on the CPU) */
    vk_context *vk;        /* borrowed; used when backend is CA_BACKEND_GPU */
    ca_shape shape;        /* batch 1 */
    uint64_t seed;
    uint64_t t;            /* steps since the start state */
    int hard;
    double fire_rate;      /* 1 = synchronous */
    ca_runner runner;      /* the current mode's engine, which holds the state */
    int runner_ready;
    double *grid;          /* [C][cells]: the state carried from one runner to the next */
    uint64_t version;      /* counts changes of the grid, so a viewer redraws only when needed */
} view_sim;

/* What view_sim_set_hard and view_sim_set_fire_rate return when the new engine cannot start
 * (e.g. soft mode on a grid too large for the CPU engine) and the old one runs on unchanged:
 * not an error, the message says why. */
enum { VIEW_SIM_DECLINED = 1 };

/* Bytes above which soft mode on the CPU is refused rather than risking the machine's memory. */
#define VIEW_SIM_SOFT_CPU_MAX ((double)(4ull << 30))

/* A simulation of `model` on a height x width grid at its start state. `model` and `vk` must
 * outlive it. */
int view_sim_init(view_sim *sim, const ca_model *model, ca_backend backend, vk_context *vk, int height, int width,
                  int hard, double fire_rate, uint64_t seed);

void view_sim_free(view_sim *sim);

/* Back to the start state and step 0. */
int view_sim_reset(view_sim *sim);

/* One CA step. */
int view_sim_step(view_sim *sim);

/* Sets every channel of the cells in the rectangle to `value` (0 erases, 1 sets); parts outside
 * the grid are ignored. */
void view_sim_paint(view_sim *sim, int x, int y, int width, int height, double value);

/* Switches engines, carrying the grid over (soft to hard rounds it to bits). DLCA_OK,
 * VIEW_SIM_DECLINED, or an error when neither engine can run. */
int view_sim_set_hard(view_sim *sim, int hard);

/* Changes the fire rate from the next step on (1 = synchronous); returns as view_sim_set_hard. */
int view_sim_set_fire_rate(view_sim *sim, double fire_rate);

/* The current grid [C][cells]; valid until the next call that changes the simulation. */
const double *view_sim_grid(view_sim *sim);

#endif
