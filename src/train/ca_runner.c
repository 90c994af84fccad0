/* ca_runner.c: step-by-step inference on either engine. */
#include "ca_runner.h"

#include "ca_task.h"
#include "error.h"
#include "rng.h"
#include "vk_command.h"

#include <stdlib.h>
#include <string.h>

static int prepare_coefficients(ca_runner *r)
{
    size_t n = r->view.gate_count * GATE_OP_COUNT;
    if (r->backend == CA_BACKEND_GPU) {
        VkCommandBuffer cmd;
        if (vk_cmd_begin(r->vk, &cmd)) return DLCA_ERR;
        if (ca_gpu_coefficients(&r->gpu, cmd, r->hard)) return vk_cmd_free(r->vk, cmd), DLCA_ERR;
        return vk_cmd_finish(r->vk, cmd);
    }
    double *logits = malloc(n * sizeof(double));
    if (!logits) return err_set(DLCA_ERR_NOMEM, "out of memory for the logits");
    ca_model_logits_to_double(&r->view, logits);
    ca_cpu_coefficients(&r->cpu, logits, r->hard);
    free(logits);
    return DLCA_OK;
}

/* The bit-packed engine of a hard run, on the pruned circuit. */
static int init_packed(ca_runner *r, double fire_rate)
{
    hard_netlist net;
    int rc = hard_circuit_build(&net, &r->view, NULL);
    if (rc) return rc;
    rc = r->backend == CA_BACKEND_GPU ? hard_gpu_init(&r->packed_gpu, r->vk, &net, r->shape, fire_rate)
                                      : hard_cpu_init(&r->packed_cpu, &net, r->shape, fire_rate);
    hard_netlist_free(&net);
    return rc;
}

int ca_runner_init(ca_runner *r, const ca_model *model, ca_backend backend, vk_context *vk, int batch, int height,
                   int width, int hard, double fire_rate, uint64_t seed)
{
    memset(r, 0, sizeof *r);
    r->view = *model;
    r->view.config.steps = 1;
    r->view.config.fire_rate = fire_rate;
    r->backend = backend, r->vk = vk, r->hard = hard, r->seed = seed, r->packed_stale = 1;
    r->shape = (ca_shape){batch, height, width, model->config.boundary};
    r->grid_values = (size_t)model->config.channels * ca_shape_cells(r->shape);
    r->grid = calloc(r->grid_values, sizeof(double));
    if (!r->grid) return err_set(DLCA_ERR_NOMEM, "out of memory for a %dx%d grid", height, width);
    int rc;
    if (hard)
        rc = init_packed(r, fire_rate);
    else if (backend == CA_BACKEND_GPU)
        rc = ca_gpu_init(&r->gpu, vk, &r->view, batch, height, width, NULL);
    else
        rc = ca_cpu_init(&r->cpu, &r->view, batch, height, width);
    if (!rc && !hard) rc = prepare_coefficients(r);
    r->ready = !rc;
    if (rc) ca_runner_free(r);
    return rc;
}

void ca_runner_free(ca_runner *r)
{
    if (r->hard) {
        if (r->ready && r->backend == CA_BACKEND_GPU) hard_gpu_free(&r->packed_gpu);
        if (r->ready && r->backend != CA_BACKEND_GPU) hard_cpu_free(&r->packed_cpu);
    } else if (r->backend == CA_BACKEND_GPU)
        ca_gpu_free(&r->gpu);
    else
        ca_cpu_free(&r->cpu);
    free(r->grid);
    memset(r, 0, sizeof *r);
}

int ca_runner_grid_changed(ca_runner *r)
{
    if (r->hard) ca_task_binarize(r->grid, r->grid_values);
    r->packed_stale = 1, r->grid_stale = 0;
    return DLCA_OK;
}

static int gpu_step(ca_runner *r)
{
    VkCommandBuffer cmd;
    if (ca_gpu_upload_grid(&r->gpu, 0, r->grid) || vk_cmd_begin(r->vk, &cmd)) return DLCA_ERR;
    if (ca_gpu_step_forward(&r->gpu, cmd, 0)) return vk_cmd_free(r->vk, cmd), DLCA_ERR;
    if (vk_cmd_finish(r->vk, cmd)) return DLCA_ERR;
    return ca_gpu_download_grid(&r->gpu, 1, r->grid);
}

/* A hard step on the bit-packed engine. On the GPU the grid goes in and out each step. On the
 * CPU the engine keeps the state: it takes grid in only after ca_runner_grid_changed, and writes
 * back the channels callers read (converting every channel in and out each step was 90% of the
 * checkerboard's exact check, 19 ms against 3 without, on the development VM). */
static int packed_step(ca_runner *r, uint32_t stream)
{
    if (r->backend == CA_BACKEND_GPU) {
        hard_gpu_set_fire_stream(&r->packed_gpu, stream);
        if (hard_gpu_upload(&r->packed_gpu, r->grid) || hard_gpu_run(&r->packed_gpu, 0, 1)) return DLCA_ERR;
        return hard_gpu_download(&r->packed_gpu, r->grid);
    }
    hard_cpu_set_fire_stream(&r->packed_cpu, stream);
    if (r->packed_stale) hard_cpu_pack(&r->packed_cpu, r->grid), r->packed_stale = 0;
    hard_cpu_step(&r->packed_cpu, 0);
    r->grid_stale = 1;
    if (!r->defer_read) ca_runner_sync(r);
    return DLCA_OK;
}

void ca_runner_sync(ca_runner *r)
{
    if (!r->grid_stale) return;
    int channels = r->view.config.channels;
    hard_cpu_unpack_channels(&r->packed_cpu, r->grid, r->read_channels > 0 ? r->read_channels : channels);
    r->grid_stale = 0;
}

int ca_runner_step(ca_runner *r)
{
    uint32_t stream = rng_fire_stream(r->seed, r->t);
    r->t++;
    if (r->hard) return packed_step(r, stream);
    if (r->backend == CA_BACKEND_GPU) {
        ca_gpu_set_fire_stream(&r->gpu, stream);
        return gpu_step(r);
    }
    ca_cpu_set_fire_stream(&r->cpu, stream);
    memcpy(ca_cpu_grid(&r->cpu, 0), r->grid, r->grid_values * sizeof(double));
    ca_cpu_step_forward(&r->cpu, 0);
    memcpy(r->grid, ca_cpu_grid(&r->cpu, 1), r->grid_values * sizeof(double));
    return DLCA_OK;
}

void ca_runner_paint(ca_runner *r, int x, int y, int width, int height, double value)
{
    ca_shape s = r->shape;
    size_t cells = ca_shape_cells(s), plane = (size_t)s.height * (size_t)s.width;
    int x0 = x < 0 ? 0 : x, x1 = x + width < s.width ? x + width : s.width;
    int y0 = y < 0 ? 0 : y, y1 = y + height < s.height ? y + height : s.height;
    for (int ch = 0; ch < r->view.config.channels; ch++)
        for (int b = 0; b < s.batch; b++)
            for (int yy = y0; yy < y1; yy++)
                for (int xx = x0; xx < x1; xx++)
                    r->grid[(size_t)ch * cells + (size_t)b * plane + (size_t)yy * (size_t)s.width + (size_t)xx] = value;
    /* The CPU engine keeps the state between steps: painted in place too, so that stale hidden
     * channels in grid (read_channels) never go back into it. */
    if (!r->hard || r->backend == CA_BACKEND_GPU || !r->ready || x0 >= x1) return;
    for (int b = 0; b < s.batch; b++)
        for (int yy = y0; yy < y1; yy++)
            hard_cpu_set_cells(&r->packed_cpu, (size_t)b * (size_t)s.height + (size_t)yy, x0, x1, value > 0.5);
}
