/* view_sim.c: the viewer's simulation (see view_sim.h). Only the engine of the current mode
 * exists; switching mode or fire rate moves the grid through `grid` into a fresh engine, which
 * keeps the two engines from ever disagreeing about the state. */
#include "view_sim.h"

#include "error.h"
#include "rng.h"
#include "view_start.h"

#include <stdlib.h>
#include <string.h>

static size_t grid_values(const view_sim *sim)
{
    return (size_t)sim->model->config.channels * ca_shape_cells(sim->shape);
}

/* Memory of ca_runner's CPU engine: ca_cpu keeps every gate's value for a step and a gradient
 * row for each (the layout of ca_cpu.c), 2 x rows x cells doubles. */
static double soft_cpu_bytes(const view_sim *sim)
{
    const ca_config *c = &sim->model->config;
    double rows = 0.0;
    for (int l = 0; l < c->perception_depth; l++) rows += (double)c->kernels * c->channels * c->perception_widths[l];
    for (int l = 0; l < c->update_depth; l++) rows += c->update_widths[l];
    return 2.0 * rows * (double)ca_shape_cells(sim->shape) * sizeof(double);
}

/* Creates the current mode's engine at the current fire rate, holding `sim->grid`. */
static int start_engine(view_sim *sim)
{
    sim->version++;
    if (!sim->hard && sim->backend == CA_BACKEND_CPU && soft_cpu_bytes(sim) > VIEW_SIM_SOFT_CPU_MAX)
        return err_set(DLCA_ERR, "soft mode on the CPU needs %.1f GiB for a %dx%d grid; use a smaller --grid or a GPU",
                       soft_cpu_bytes(sim) / (1 << 30), sim->shape.height, sim->shape.width);
    if (sim->hard) {
        if (hard_cpu_init(&sim->engine, &sim->net, sim->shape, sim->fire_rate)) return DLCA_ERR;
        sim->engine_ready = 1;
        hard_cpu_pack(&sim->engine, sim->grid);
        sim->grid_stale = 1; /* `grid` may hold soft values; show the bits */
        return DLCA_OK;
    }
    if (ca_runner_init(&sim->runner, sim->model, sim->backend, sim->vk, 1, sim->shape.height, sim->shape.width, 0,
                       sim->fire_rate, sim->seed))
        return DLCA_ERR;
    sim->runner_ready = 1;
    memcpy(sim->runner.grid, sim->grid, grid_values(sim) * sizeof(double));
    return ca_runner_grid_changed(&sim->runner);
}

/* Saves the current state into `sim->grid` and frees the engine. */
static void stop_engine(view_sim *sim)
{
    const double *now = view_sim_grid(sim);
    if (now != sim->grid) memcpy(sim->grid, now, grid_values(sim) * sizeof(double));
    if (sim->engine_ready) hard_cpu_free(&sim->engine);
    if (sim->runner_ready) ca_runner_free(&sim->runner);
    sim->engine_ready = sim->runner_ready = 0;
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
    int rc = hard_circuit_build(&sim->net, model, NULL);
    if (!rc) rc = view_start_grid(&model->config, seed, sim->shape, sim->grid);
    if (!rc) rc = start_engine(sim);
    if (rc) view_sim_free(sim);
    return rc;
}

void view_sim_free(view_sim *sim)
{
    if (sim->engine_ready) hard_cpu_free(&sim->engine);
    if (sim->runner_ready) ca_runner_free(&sim->runner);
    hard_netlist_free(&sim->net);
    free(sim->grid);
    memset(sim, 0, sizeof *sim);
}

int view_sim_reset(view_sim *sim)
{
    if (view_start_grid(&sim->model->config, sim->seed, sim->shape, sim->grid)) return DLCA_ERR;
    sim->t = 0;
    sim->version++;
    if (sim->hard) {
        hard_cpu_pack(&sim->engine, sim->grid);
        sim->grid_stale = 1;
        return DLCA_OK;
    }
    memcpy(sim->runner.grid, sim->grid, grid_values(sim) * sizeof(double));
    return ca_runner_grid_changed(&sim->runner);
}

int view_sim_step(view_sim *sim)
{
    sim->version++;
    if (!sim->hard) {
        sim->runner.t = sim->t; /* the runner draws its fire mask from (seed, t) */
        if (ca_runner_step(&sim->runner)) return DLCA_ERR;
        sim->t++;
        return DLCA_OK;
    }
    /* ca_runner runs a one-step model at step index 0 with the stream of (seed, t): the same here. */
    hard_cpu_set_fire_stream(&sim->engine, rng_fire_stream(sim->seed, sim->t));
    hard_cpu_step(&sim->engine, 0);
    sim->t++;
    sim->grid_stale = 1;
    return DLCA_OK;
}

/* The bit-packed version of ca_runner_paint (the view's one sample: grid row y is row y). */
static void paint_bits(hard_cpu *e, int x0, int y0, int x1, int y1, int set)
{
    for (int y = y0; y < y1; y++) hard_cpu_set_cells(e, (size_t)y, x0, x1, set);
}

void view_sim_paint(view_sim *sim, int x, int y, int width, int height, double value)
{
    sim->version++;
    if (!sim->hard) {
        ca_runner_paint(&sim->runner, x, y, width, height, value);
        return;
    }
    int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    int x1 = x + width > sim->shape.width ? sim->shape.width : x + width;
    int y1 = y + height > sim->shape.height ? sim->shape.height : y + height;
    if (x0 >= x1 || y0 >= y1) return;
    paint_bits(&sim->engine, x0, y0, x1, y1, value > 0.5);
    sim->grid_stale = 1;
}

/* A fresh engine for (hard, fire_rate) holding the current grid; when it cannot start, the old
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
    if (!sim->hard) return sim->runner.grid;
    if (sim->grid_stale) hard_cpu_unpack(&sim->engine, sim->grid);
    sim->grid_stale = 0;
    return sim->grid;
}
