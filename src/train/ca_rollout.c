/* ca_rollout.c: the CA rollout as a tn function (ca_rollout.h). */
#include "ca_rollout.h"

#include "error.h"
#include "tn_function.h"
#include "tn_vk.h"

#include <string.h>

static const ca_config *config_of(const ca_rollout *r)
{
    return r->gpu ? &r->gpu->model->config : r->fast ? &r->fast->model->config : &r->cpu->model->config;
}

static size_t cpu_cells(const ca_rollout *r) { return r->fast ? r->fast->cells : r->cpu->cells; }

/* The CPU engines: c read out, the engine's steps (T, or the round's length), the output (the
 * loss channels of the final grid, with a window of the grids before it too) as a new tensor of
 * c's dtype. The grid is channel-major: the loss channels are its first rows. */
static tn_tensor *cpu_forward(ca_rollout *r, tn_tensor *c)
{
    const ca_config *config = config_of(r);
    if (tn_read(c, r->scratch)) return NULL;
    size_t cells = cpu_cells(r), rows = (size_t)config->loss_channels * cells;
    int steps = r->fast ? r->fast->steps : r->cpu->steps, from = steps - r->window_steps;
    if (r->fast) {
        ca_fast_set_coefficients(r->fast, r->scratch);
        ca_fast_forward(r->fast);
    } else {
        ca_cpu_set_coefficients(r->cpu, r->scratch);
        ca_cpu_forward(r->cpu);
    }
    size_t shape[2] = {(size_t)config->loss_channels * (size_t)(r->window_steps + 1), cells};
    if (r->window_steps == 0)
        return r->fast ? tn_from_f32(c->dtype, 2, shape, ca_fast_grid(r->fast, steps))
                       : tn_from_f64(c->dtype, 2, shape, ca_cpu_grid(r->cpu, steps));
    for (int t = from; t <= steps; t++) {
        double *to = r->window + (size_t)(t - from) * rows;
        if (r->fast) {
            const float *grid = ca_fast_grid(r->fast, t);
            for (size_t i = 0; i < rows; i++) to[i] = grid[i];
        } else {
            memcpy(to, ca_cpu_grid(r->cpu, t), rows * sizeof(double));
        }
    }
    return tn_from_f64(c->dtype, 2, shape, r->window);
}

/* dL/d(final grid) into the engine (the loss channels' rows from gout's last block, the others
 * 0), BPTT with the window's blocks added on the way, S out. */
static int cpu_backward(ca_rollout *r, tn_tensor *gout, tn_tensor *gc)
{
    const ca_config *config = config_of(r);
    size_t cells = cpu_cells(r), n = (size_t)config->channels * cells, given = (size_t)config->loss_channels * cells;
    double *g = r->window_steps ? r->window : r->scratch, *last = g + (size_t)r->window_steps * given;
    if (tn_read(gout, g)) return DLCA_ERR;
    if (r->fast) {
        int from = r->fast->steps - r->window_steps;
        for (size_t i = 0; i < n; i++) r->fast->dgrid[i] = i < given ? (float)last[i] : 0.0f;
        for (size_t i = 0; i < (size_t)r->window_steps * given; i++) r->window_f[i] = (float)g[i];
        ca_fast_backward_window(r->fast, r->window_steps ? r->window_f : NULL, from);
        ca_fast_coeff_grad(r->fast, r->scratch);
        return tn_write(gc, r->scratch);
    }
    memcpy(r->cpu->dgrid, last, given * sizeof(double));
    memset(r->cpu->dgrid + given, 0, (n - given) * sizeof(double));
    ca_cpu_backward_window(r->cpu, r->window_steps ? g : NULL, r->cpu->steps - r->window_steps);
    return tn_write(gc, r->cpu->coeff_grad);
}

/* The GPU engine: its dispatches recorded where tn records, reading c in place; the output a view
 * of the final grid's loss channels, or with a window their copies into window_rows. */
static tn_tensor *gpu_forward(ca_rollout *r, tn_tensor *c)
{
    ca_gpu *e = r->gpu;
    const ca_config *config = config_of(r);
    vk_view coeffs;
    VkCommandBuffer cmd;
    if (tn_vk_view(c, &coeffs) || ca_gpu_bind(e, &coeffs, NULL, NULL) || tn_vk_command(r->dev, &cmd)) return NULL;
    if (ca_gpu_forward(e, cmd)) return NULL;
    size_t shape[2] = {(size_t)config->loss_channels * (size_t)(r->window_steps + 1), e->plan.pitch};
    if (r->window_steps == 0) {
        vk_view grid = ca_gpu_grid_region(e, e->steps);
        return tn_vk_wrap(r->dev, grid.buffer, grid.offset, 2, shape);
    }
    if (ca_gpu_copy_loss_rows(e, cmd, e->steps - r->window_steps, vk_view_all(r->window_rows))) return NULL;
    return tn_vk_wrap(r->dev, r->window_rows, 0, 2, shape);
}

/* BPTT from gout's last block in the engine's own dgrid, the window's blocks added on the way,
 * with S written into gc's buffer. */
static int gpu_backward(ca_rollout *r, tn_tensor *c, tn_tensor *gout, tn_tensor *gc)
{
    ca_gpu *e = r->gpu;
    vk_view coeffs, rows, sums;
    VkCommandBuffer cmd;
    if (tn_vk_view(c, &coeffs) || tn_vk_view(gout, &rows) || tn_vk_view(gc, &sums)) return DLCA_ERR;
    if (ca_gpu_bind(e, &coeffs, NULL, &sums) || tn_vk_command(r->dev, &cmd)) return DLCA_ERR;
    uint32_t loss_channels = (uint32_t)config_of(r)->loss_channels;
    size_t block = loss_channels * e->plan.pitch * sizeof(float), before = (size_t)r->window_steps * block;
    vk_view last = vk_view_of(rows.buffer, rows.offset + before, rows.size - before);
    if (ca_gpu_load_output_gradient(e, cmd, last, loss_channels)) return DLCA_ERR;
    return ca_gpu_backward_window(e, cmd, r->window_steps ? &rows : NULL, e->steps - r->window_steps);
}

static tn_tensor *rollout_forward(void *ctx, tn_tensor **in, int n_in)
{
    ca_rollout *r = ctx;
    (void)n_in;
    return r->gpu ? gpu_forward(r, in[0]) : cpu_forward(r, in[0]);
}

static int rollout_backward(void *ctx, tn_tensor **in, int n_in, tn_tensor *out, tn_tensor *gout, tn_tensor **gin)
{
    ca_rollout *r = ctx;
    (void)n_in, (void)out;
    if (!gin[0]) return DLCA_OK;
    return r->gpu ? gpu_backward(r, in[0], gout, gin[0]) : cpu_backward(r, gout, gin[0]);
}

/* S is written whole by the engine: gin needs no zeroing. */
static const tn_function rollout_function = {"ca_rollout", rollout_forward, rollout_backward, NULL,
                                             TN_FUNCTION_OVERWRITES_GRADS};

tn_tensor *ca_rollout_apply(ca_rollout *r, tn_tensor *c)
{
    return tn_apply(&rollout_function, r, 1, &c);
}
