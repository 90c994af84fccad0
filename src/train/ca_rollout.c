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

/* The CPU engines: c read out, the engine's steps (T, or the round's length), the final grid's loss channels as a new tensor
 * [loss_channels][cells] of c's dtype (the grid is channel-major: they are its first rows). */
static tn_tensor *cpu_forward(ca_rollout *r, tn_tensor *c)
{
    const ca_config *config = config_of(r);
    if (tn_read(c, r->scratch)) return NULL;
    size_t shape[2] = {(size_t)config->loss_channels, cpu_cells(r)};
    if (r->fast) {
        ca_fast_set_coefficients(r->fast, r->scratch);
        ca_fast_forward(r->fast);
        return tn_from_f32(c->dtype, 2, shape, ca_fast_grid(r->fast, r->fast->steps));
    }
    ca_cpu_set_coefficients(r->cpu, r->scratch);
    ca_cpu_forward(r->cpu);
    return tn_from_f64(c->dtype, 2, shape, ca_cpu_grid(r->cpu, r->cpu->steps));
}

/* dL/d(final grid) into the engine (the loss channels' rows from gout, the others 0), BPTT, S out. */
static int cpu_backward(ca_rollout *r, tn_tensor *gout, tn_tensor *gc)
{
    const ca_config *config = config_of(r);
    size_t cells = cpu_cells(r), n = (size_t)config->channels * cells, given = (size_t)config->loss_channels * cells;
    if (tn_read(gout, r->scratch)) return DLCA_ERR;
    if (r->fast) {
        for (size_t i = 0; i < n; i++) r->fast->dgrid[i] = i < given ? (float)r->scratch[i] : 0.0f;
        ca_fast_backward(r->fast);
        ca_fast_coeff_grad(r->fast, r->scratch);
        return tn_write(gc, r->scratch);
    }
    memcpy(r->cpu->dgrid, r->scratch, given * sizeof(double));
    memset(r->cpu->dgrid + given, 0, (n - given) * sizeof(double));
    ca_cpu_backward(r->cpu);
    return tn_write(gc, r->cpu->coeff_grad);
}

/* The GPU engine: its dispatches recorded where tn records, reading c in place; the output a view
 * of the final grid's loss channels. */
static tn_tensor *gpu_forward(ca_rollout *r, tn_tensor *c)
{
    ca_gpu *e = r->gpu;
    const ca_config *config = config_of(r);
    vk_view coeffs;
    VkCommandBuffer cmd;
    if (tn_vk_view(c, &coeffs) || ca_gpu_bind(e, &coeffs, NULL, NULL) || tn_vk_command(r->dev, &cmd)) return NULL;
    if (ca_gpu_forward(e, cmd)) return NULL;
    vk_view grid = ca_gpu_grid_region(e, e->steps);
    size_t shape[2] = {(size_t)config->loss_channels, e->plan.pitch};
    return tn_vk_wrap(r->dev, grid.buffer, grid.offset, 2, shape);
}

/* BPTT from gout's rows in the engine's own dgrid, with S written into gc's buffer. */
static int gpu_backward(ca_rollout *r, tn_tensor *c, tn_tensor *gout, tn_tensor *gc)
{
    ca_gpu *e = r->gpu;
    vk_view coeffs, rows, sums;
    VkCommandBuffer cmd;
    if (tn_vk_view(c, &coeffs) || tn_vk_view(gout, &rows) || tn_vk_view(gc, &sums)) return DLCA_ERR;
    if (ca_gpu_bind(e, &coeffs, NULL, &sums) || tn_vk_command(r->dev, &cmd)) return DLCA_ERR;
    if (ca_gpu_load_output_gradient(e, cmd, rows, (uint32_t)config_of(r)->loss_channels)) return DLCA_ERR;
    return ca_gpu_backward(e, cmd);
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
