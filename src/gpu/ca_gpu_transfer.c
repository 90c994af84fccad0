/* ca_gpu_transfer.c: moving data between the host and the GPU engine: logits and other gate
 * rows (converted between the model's gate order and the engine's), grids, targets. */
#include "ca_gpu_internal.h"

#include "error.h"
#include "gates.h"

#include <stdlib.h>
#include <string.h>


static void gate_rows_to_model(const ca_gpu *e, size_t width, const float *device, float *model)
{
    for (size_t g = 0; g < e->model->gate_count; g++)
        memcpy(model + g * width, device + e->gate_row[g] * width, width * sizeof(float));
}

void ca_gpu_rows_to_engine(const ca_gpu *e, size_t width, const double *model, double *engine)
{
    for (size_t g = 0; g < e->model->gate_count; g++)
        memcpy(engine + e->gate_row[g] * width, model + g * width, width * sizeof(double));
}

void ca_gpu_rows_to_model(const ca_gpu *e, size_t width, const double *engine, double *model)
{
    for (size_t g = 0; g < e->model->gate_count; g++)
        memcpy(model + g * width, engine + e->gate_row[g] * width, width * sizeof(double));
}

size_t ca_gpu_step_row(const ca_gpu *e, size_t row)
{
    const ca_model *m = e->model;
    for (int l = 0; l < m->config.update_depth; l++)
        if (row >= e->update_row[l] && row < e->update_row[l] + (size_t)m->config.update_widths[l]) {
            size_t base = m->update_gate_base[l];
            return e->update_row[l] + e->gate_row[base + row - e->update_row[l]] - base;
        }
    return row;
}


static int download_gate_rows(ca_gpu *e, vk_buffer *buffer, int width, float *values)
{
    size_t n = e->model->gate_count * (size_t)width;
    float *staged = malloc(n * sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory reading %zu gate values", n);
    int rc = vk_buffer_download(e->vk, buffer, 0, staged, n * sizeof(float));
    if (!rc) gate_rows_to_model(e, (size_t)width, staged, values);
    free(staged);
    return rc;
}



/* [rows][cells] doubles <-> [rows][pitch] floats at byte `offset` of `buffer`. */
static int upload_rows(ca_gpu *e, vk_buffer *buffer, size_t offset, const double *values, size_t rows)
{
    float *staged = calloc(rows * e->plan.pitch, sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory staging %zu rows", rows);
    for (size_t r = 0; r < rows; r++)
        for (size_t x = 0; x < e->plan.cells; x++) staged[r * e->plan.pitch + x] = (float)values[r * e->plan.cells + x];
    int rc = vk_buffer_upload(e->vk, buffer, offset, staged, rows * e->plan.pitch * sizeof(float));
    free(staged);
    return rc;
}

static int download_rows(ca_gpu *e, vk_buffer *buffer, size_t offset, double *values, size_t rows)
{
    float *staged = malloc(rows * e->plan.pitch * sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory staging %zu rows", rows);
    int rc = vk_buffer_download(e->vk, buffer, offset, staged, rows * e->plan.pitch * sizeof(float));
    for (size_t r = 0; !rc && r < rows; r++)
        for (size_t x = 0; x < e->plan.cells; x++) values[r * e->plan.cells + x] = staged[r * e->plan.pitch + x];
    free(staged);
    return rc;
}

static size_t grid_offset(const ca_gpu *e, int t)
{
    return (size_t)t * (size_t)e->model->config.channels * e->plan.pitch * sizeof(float);
}

int ca_gpu_upload_grid(ca_gpu *e, int t, const double *grid)
{
    if (t > 0) e->cleared_forward = 0; /* a grid the persistent forward would poll */
    return upload_rows(e, &e->grids, grid_offset(e, t), grid, (size_t)e->model->config.channels);
}

int ca_gpu_download_grid(ca_gpu *e, int t, double *grid)
{
    return download_rows(e, &e->grids, grid_offset(e, t), grid, (size_t)e->model->config.channels);
}

int ca_gpu_download_dgrid(ca_gpu *e, double *dgrid)
{
    return download_rows(e, e->dgrid_at.buffer, e->dgrid_at.offset, dgrid, (size_t)e->model->config.channels);
}

int ca_gpu_upload_dgrid(ca_gpu *e, const double *dgrid)
{
    return upload_rows(e, e->dgrid_at.buffer, e->dgrid_at.offset, dgrid, (size_t)e->model->config.channels);
}

int ca_gpu_upload_target(ca_gpu *e, const double *target)
{
    return upload_rows(e, &e->target, 0, target, (size_t)e->model->config.loss_channels);
}

void ca_gpu_set_fire_stream(ca_gpu *e, uint32_t stream) { e->fire_stream = stream; }

int ca_gpu_set_steps(ca_gpu *e, int steps)
{
    if (steps < 1 || steps > e->room)
        return err_set(DLCA_ERR, "a rollout of %d steps: the engine has room for 1..%d", steps, e->room);
    e->steps = steps;
    return DLCA_OK;
}

int ca_gpu_upload_image(ca_gpu *e, const double *image)
{
    const ca_config *c = &e->model->config;
    size_t n = (size_t)c->loss_channels * (size_t)c->height * (size_t)c->width;
    float *staged = malloc(n * sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory staging the target picture");
    for (size_t i = 0; i < n; i++) staged[i] = (float)image[i];
    int rc = vk_buffer_upload(e->vk, &e->image, 0, staged, n * sizeof(float));
    free(staged);
    return rc;
}


int ca_gpu_read_gate_values(ca_gpu *e, vk_buffer *buffer, int width, double *values)
{
    size_t n = e->model->gate_count * (size_t)width;
    float *staged = malloc(n * sizeof(float));
    if (!staged) return err_set(DLCA_ERR_NOMEM, "out of memory reading %zu gate values", n);
    int rc = download_gate_rows(e, buffer, width, staged);
    for (size_t i = 0; !rc && i < n; i++) values[i] = staged[i];
    free(staged);
    return rc;
}

#ifdef DLCA_CLOCKS
int ca_gpu_download_clocks(ca_gpu *e, void *data)
{
    return vk_buffer_download(e->vk, &e->clocks, 0, data, CA_GPU_CLOCK_BYTES);
}
#endif
