/* view_sim.c: the viewer's simulation (see view_sim.h). Only the engine of the current mode
 * exists; switching mode or fire rate moves the grid through `grid` into a fresh runner, which
 * keeps the two engines from ever disagreeing about the state. */
#include "view_sim.h"

#include "ca_memory.h"
#include "error.h"
#include "view_start.h"

#include <stdlib.h>
#include <string.h>

static size_t grid_values(const view_sim *sim)
{
    return (size_t)sim->model->config.channels * ca_shape_cells(sim->shape);
}

/* Creates the current mode's runner at the current fire rate, holding `sim->grid`. Hard mode runs
 * on the CPU's bit-packed engine whatever the backend: it steps a frame's steps and unpacks once
 * (defer_read), where the GPU's would copy the grid in and out every step. */
static int start_engine(view_sim *sim)
{
    sim->version++;
    ca_backend backend = sim->hard ? CA_BACKEND_CPU : sim->backend;
    int height = sim->shape.height, width = sim->shape.width;
    double bytes = !sim->hard && backend == CA_BACKEND_CPU
                       ? ca_memory_runner(sim->model, backend, NULL, 1, height, width, 0)
                       : 0.0;
    if (bytes > VIEW_SIM_SOFT_CPU_MAX)
        return err_set(DLCA_ERR, "soft mode on the CPU needs %.1f GiB for a %dx%d grid; use a smaller --grid or a GPU",
                       bytes / (1 << 30), height, width);
    if (ca_runner_init(&sim->runner, sim->model, backend, sim->vk, 1, height, width, sim->hard, sim->fire_rate,
                       sim->seed))
        return DLCA_ERR;
    sim->runner_ready = 1;
    sim->runner.defer_read = 1;
    memcpy(sim->runner.grid, sim->grid, grid_values(sim) * sizeof(double));
    return ca_runner_grid_changed(&sim->runner); /* hard: soft values become the bits shown */
}

/* Saves the current state into `sim->grid` and frees the runner. */
static void stop_engine(view_sim *sim)
{
    memcpy(sim->grid, view_sim_grid(sim), grid_values(sim) * sizeof(double));
    ca_runner_free(&sim->runner);
    sim->runner_ready = 0;
}

int view_sim_init(view_sim *sim, const ca_model *model, ca_backend backend, vk_context *vk, int height, int width,
                  int hard, double fire_rate, uint64_t seed)
{
    memset(sim, 0, sizeof *sim);
    sim->model = model, sim->backend = backend, sim->vk = vk;
    sim->shape = (ca_shape){1, height, width, model->config.boundary};
    sim->seed = seed, sim->hard = hard, sim->fire_rate = fire_rate;
    sim->grid = malloc(grid_values(sim) * sizeof(double));
    if (!sim->grid) return err_set(DLCA_ERR_NOMEM, "out of memory for a %dx%d grid", height, width);
    int rc = view_start_grid(&model->config, seed, sim->shape, sim->grid);
    if (!rc) rc = start_engine(sim);
    if (rc) view_sim_free(sim);
    return rc;
}

void view_sim_free(view_sim *sim)
{
    if (sim->runner_ready) ca_runner_free(&sim->runner);
    free(sim->grid);
    memset(sim, 0, sizeof *sim);
}

int view_sim_reset(view_sim *sim)
{
    if (view_start_grid(&sim->model->config, sim->seed, sim->shape, sim->runner.grid)) return DLCA_ERR;
    sim->t = 0;
    sim->version++;
    return ca_runner_grid_changed(&sim->runner);
}

int view_sim_step(view_sim *sim)
{
    sim->version++;
    sim->runner.t = sim->t; /* the runner draws its fire mask from (seed, t) */
    if (ca_runner_step(&sim->runner)) return DLCA_ERR;
    sim->t++;
    return DLCA_OK;
}

void view_sim_paint(view_sim *sim, int x, int y, int width, int height, double value)
{
    sim->version++;
    ca_runner_paint(&sim->runner, x, y, width, height, value);
}

/* A fresh runner for (hard, fire_rate) holding the current grid; when it cannot start, the old
 * one is started again from the same grid. */
static int switch_engine(view_sim *sim, int hard, double fire_rate)
{
    int old_hard = sim->hard;
    double old_rate = sim->fire_rate;
    stop_engine(sim);
    sim->hard = hard, sim->fire_rate = fire_rate;
    if (start_engine(sim) == DLCA_OK) return DLCA_OK;
    char why[1024];
    snprintf(why, sizeof why, "%s", err_message());
    sim->hard = old_hard, sim->fire_rate = old_rate;
    if (start_engine(sim)) return DLCA_ERR;
    err_set(DLCA_ERR, "%s", why);
    return VIEW_SIM_DECLINED;
}

int view_sim_set_hard(view_sim *sim, int hard)
{
    return !hard == !sim->hard ? DLCA_OK : switch_engine(sim, hard != 0, sim->fire_rate);
}

int view_sim_set_fire_rate(view_sim *sim, double fire_rate)
{
    return fire_rate == sim->fire_rate ? DLCA_OK : switch_engine(sim, sim->hard, fire_rate);
}

const double *view_sim_grid(view_sim *sim)
{
    ca_runner_sync(&sim->runner);
    return sim->runner.grid;
}
