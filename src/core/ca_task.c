/* ca_task.c: start states and targets of the presets. */
#include "ca_task.h"

#include "error.h"
#include "rng.h"

#include <string.h>

void ca_task_board(double *grid, ca_shape s, int sample, int board)
{
    size_t plane = (size_t)s.height * (size_t)s.width;
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++)
            grid[(size_t)sample * plane + (size_t)y * (size_t)s.width + (size_t)x] = (board >> (y * 3 + x)) & 1;
}

/* The rng stream of a round's rollout length (rng_init streams are 64-bit: far from the
 * wiring's and the pool's). */
#define TASK_STREAM_STEPS (3ull << 60)

int ca_task_round_steps(const ca_config *c, uint64_t round, int *from_pool)
{
    *from_pool = 0;
    if (c->window <= 0 && c->pool <= 0) return c->steps;
    rng_state rng;
    rng_init(&rng, c->seed, TASK_STREAM_STEPS ^ round);
    if (rng_below(&rng, 2) == 0) return c->steps; /* growth */
    *from_pool = c->pool > 0;
    return c->steps + (c->window > 0 ? 1 + (int)rng_below(&rng, (uint32_t)c->window) : 0);
}

int ca_task_start(const ca_config *c, ca_shape s, uint64_t round, double *grid)
{
    size_t cells = ca_shape_cells(s), plane = (size_t)s.height * (size_t)s.width, n = (size_t)c->channels * cells;
    uint32_t stream = rng_task_stream(c->seed, round);
    memset(grid, 0, n * sizeof(double));
    switch (c->start) {
    case CA_START_BOARDS:
        if (s.height != 3 || s.width != 3) return err_set(DLCA_ERR, "board starts need a 3x3 grid, not %dx%d", s.height, s.width);
        for (int b = 0; b < s.batch; b++) ca_task_board(grid, s, b, (int)(rng_task_draw(stream, (uint32_t)b) % 512));
        return DLCA_OK;
    case CA_START_RANDOM:
        for (size_t i = 0; i < n; i++) grid[i] = (double)(rng_task_draw(stream, (uint32_t)i) >> 31);
        return DLCA_OK;
    case CA_START_ZEROS: return DLCA_OK;
    case CA_START_SEED_CELL: {
        size_t centre = (size_t)(s.height / 2) * (size_t)s.width + (size_t)(s.width / 2);
        for (int b = 0; b < s.batch; b++)
            for (int ch = 0; ch < c->channels; ch++) grid[(size_t)ch * cells + (size_t)b * plane + centre] = 1.0;
        return DLCA_OK;
    }
    }
    return err_set(DLCA_ERR, "unknown start kind %d", (int)c->start);
}

void ca_task_life_step(double *next, const double *grid, ca_shape s)
{
    size_t cells = ca_shape_cells(s);
    for (size_t cell = 0; cell < cells; cell++) {
        int alive = grid[cell] > 0.5, count = 0;
        for (int j = 0; j < 9; j++)
            if (j != 4) count += ca_neighbour(grid, s, cell, j) > 0.5;
        next[cell] = (count == 3 || (alive && count == 2)) ? 1.0 : 0.0;
    }
}

int ca_task_target(const ca_config *c, ca_shape s, const double *start, const double *image, double *target)
{
    size_t cells = ca_shape_cells(s), plane = (size_t)s.height * (size_t)s.width;
    switch (c->target) {
    case CA_TARGET_LIFE:
        ca_task_life_step(target, start, s);
        return DLCA_OK;
    case CA_TARGET_CHECKERBOARD:
        for (size_t i = 0; i < (size_t)c->loss_channels * cells; i++) {
            size_t cell = i % cells, y = cell % plane / (size_t)s.width, x = cell % (size_t)s.width;
            target[i] = (double)((y / 2 + x / 2) & 1);
        }
        return DLCA_OK;
    case CA_TARGET_IMAGE:
        if (!image) return err_set(DLCA_ERR, "preset '%s' needs a target image", c->preset);
        for (int ch = 0; ch < c->loss_channels; ch++)
            for (size_t cell = 0; cell < cells; cell++)
                target[(size_t)ch * cells + cell] = image[(size_t)ch * plane + cell % plane];
        return DLCA_OK;
    }
    return err_set(DLCA_ERR, "unknown target kind %d", (int)c->target);
}

void ca_task_binarize(double *grid, size_t count)
{
    for (size_t i = 0; i < count; i++) grid[i] = grid[i] > 0.5 ? 1.0 : 0.0;
}

size_t ca_task_wrong_bits(const double *grid, const double *target, size_t count)
{
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) wrong += (grid[i] > 0.5) != (target[i] > 0.5);
    return wrong;
}
