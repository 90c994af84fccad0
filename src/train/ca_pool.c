/* ca_pool.c: the sample pool (ca_pool.h). */
#include "ca_pool.h"

#include "ca_task.h"
#include "error.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

/* rng streams: a round's draw of slots and rectangles, and the rounds whose starts fill the pool
 * (64-bit, far from the training rounds, CA_EXACT_FIRST_ROUND's and ca_task's). */
#define POOL_STREAM_ROUND (1ull << 62)
#define POOL_FILL_ROUND (1ull << 61)

int ca_pool_init(ca_pool *p, const ca_config *c)
{
    memset(p, 0, sizeof *p);
    if (c->pool < c->batch) return err_set(DLCA_ERR, "a pool of %d grids is smaller than the batch of %d", c->pool, c->batch);
    p->config = *c, p->plane = (size_t)c->height * (size_t)c->width;
    size_t grid = (size_t)c->channels * p->plane, batch = (size_t)c->batch;
    p->grids = malloc((size_t)c->pool * grid * sizeof(double));
    p->slot = malloc(((size_t)c->pool > batch ? (size_t)c->pool : batch) * sizeof(int));
    p->order = malloc(batch * sizeof(int));
    p->wrong = malloc(batch * sizeof(double));
    p->error = malloc(batch * sizeof(double));
    if (!p->grids || !p->slot || !p->order || !p->wrong || !p->error) {
        ca_pool_free(p);
        return err_set(DLCA_ERR_NOMEM, "out of memory for a pool of %d grids of %dx%dx%d", c->pool, c->channels,
                       c->height, c->width);
    }
    ca_shape one = {1, c->height, c->width, c->boundary};
    for (int i = 0; i < c->pool; i++)
        if (ca_task_start(c, one, POOL_FILL_ROUND + (uint64_t)i, p->grids + (size_t)i * grid)) return ca_pool_free(p), DLCA_ERR;
    return DLCA_OK;
}

void ca_pool_free(ca_pool *p)
{
    free(p->grids), free(p->slot), free(p->order), free(p->wrong), free(p->error);
    memset(p, 0, sizeof *p);
}

/* Sample b's wrong loss bits and squared error, its pool grid against the round's target. */
static void distance(ca_pool *p, int b, const double *target)
{
    const ca_config *c = &p->config;
    size_t cells = (size_t)c->batch * p->plane, wrong = 0;
    double error = 0.0;
    const double *grid = p->grids + (size_t)p->slot[b] * (size_t)c->channels * p->plane;
    for (int ch = 0; ch < c->loss_channels; ch++) {
        const double *have = grid + (size_t)ch * p->plane, *want = target + (size_t)ch * cells + (size_t)b * p->plane;
        wrong += ca_task_wrong_bits(have, want, p->plane);
        for (size_t i = 0; i < p->plane; i++) error += (have[i] - want[i]) * (have[i] - want[i]);
    }
    p->wrong[b] = (double)wrong, p->error[b] = error;
}

static int closer(const ca_pool *p, int a, int b)
{
    if (p->wrong[a] != p->wrong[b]) return p->wrong[a] < p->wrong[b];
    if (p->error[a] != p->error[b]) return p->error[a] < p->error[b];
    return p->slot[a] < p->slot[b];
}

/* Insertion sort of the batch's samples from closest to farthest (a batch is small). */
static void sort_by_distance(ca_pool *p)
{
    for (int i = 0; i < p->config.batch; i++) {
        int b = i, j = i;
        for (; j > 0 && closer(p, b, p->order[j - 1]); j--) p->order[j] = p->order[j - 1];
        p->order[j] = b;
    }
}

/* A random rectangle of sample b's pool grid, every channel, set to 0. */
static void damage(ca_pool *p, int b, rng_state *rng)
{
    const ca_config *c = &p->config;
    int h_lo = (c->height + 3) / 4, h_hi = c->height / 2 > h_lo ? c->height / 2 : h_lo;
    int w_lo = (c->width + 3) / 4, w_hi = c->width / 2 > w_lo ? c->width / 2 : w_lo;
    int h = h_lo + (int)rng_below(rng, (uint32_t)(h_hi - h_lo + 1));
    int w = w_lo + (int)rng_below(rng, (uint32_t)(w_hi - w_lo + 1));
    int y0 = (int)rng_below(rng, (uint32_t)(c->height - h + 1)), x0 = (int)rng_below(rng, (uint32_t)(c->width - w + 1));
    double *grid = p->grids + (size_t)p->slot[b] * (size_t)c->channels * p->plane;
    for (int ch = 0; ch < c->channels; ch++)
        for (int y = y0; y < y0 + h; y++)
            memset(grid + (size_t)ch * p->plane + (size_t)y * (size_t)c->width + (size_t)x0, 0, (size_t)w * sizeof(double));
}

int ca_pool_round(ca_pool *p, uint64_t round, int from_pool, const double *target, double *start)
{
    const ca_config *c = &p->config;
    size_t cells = (size_t)c->batch * p->plane, grid = (size_t)c->channels * p->plane;
    /* batch distinct slots: the first `batch` of a partial Fisher-Yates shuffle of 0..pool-1 */
    rng_state rng;
    rng_init(&rng, c->seed, POOL_STREAM_ROUND ^ round);
    for (int i = 0; i < c->pool; i++) p->slot[i] = i;
    for (int i = 0; i < c->batch; i++) {
        int j = i + (int)rng_below(&rng, (uint32_t)(c->pool - i)), keep = p->slot[i];
        p->slot[i] = p->slot[j], p->slot[j] = keep;
    }
    p->from_pool = from_pool;
    if (!from_pool) return DLCA_OK;
    for (int b = 0; b < c->batch; b++) distance(p, b, target);
    sort_by_distance(p);
    for (int k = 0; k < c->damage; k++) damage(p, p->order[k], &rng);
    /* The pool_starts farthest keep the preset's starts (damage <= batch - pool_starts). */
    for (int k = 0; k < c->batch - c->pool_starts; k++) {
        int b = p->order[k];
        for (int ch = 0; ch < c->channels; ch++)
            memcpy(start + (size_t)ch * cells + (size_t)b * p->plane, p->grids + (size_t)p->slot[b] * grid + (size_t)ch * p->plane,
                   p->plane * sizeof(double));
    }
    return DLCA_OK;
}

/* The round's final grids into its slots, from doubles (d) or floats (f), channel rows `pitch`
 * apart; nothing after a growth round. */
static void store(ca_pool *p, const double *d, const float *f, size_t pitch)
{
    const ca_config *c = &p->config;
    size_t grid = (size_t)c->channels * p->plane;
    if (!p->from_pool) return;
    for (int b = 0; b < c->batch; b++)
        for (int ch = 0; ch < c->channels; ch++) {
            double *to = p->grids + (size_t)p->slot[b] * grid + (size_t)ch * p->plane;
            size_t from = (size_t)ch * pitch + (size_t)b * p->plane;
            for (size_t i = 0; i < p->plane; i++) to[i] = (d ? d[from + i] > 0.5 : f[from + i] > 0.5f) ? 1.0 : 0.0;
        }
}

void ca_pool_store(ca_pool *p, const double *final_grid)
{
    store(p, final_grid, NULL, (size_t)p->config.batch * p->plane);
}

void ca_pool_store_f32(ca_pool *p, const float *final_grid, size_t pitch)
{
    store(p, NULL, final_grid, pitch);
}

void ca_pool_pack(const ca_pool *p, uint8_t *bits)
{
    size_t n = (size_t)p->config.pool * (size_t)p->config.channels * p->plane;
    memset(bits, 0, (n + 7) / 8);
    for (size_t i = 0; i < n; i++)
        if (p->grids[i] > 0.5) bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

void ca_pool_unpack(ca_pool *p, const uint8_t *bits)
{
    size_t n = (size_t)p->config.pool * (size_t)p->config.channels * p->plane;
    for (size_t i = 0; i < n; i++) p->grids[i] = (double)(bits[i / 8] >> (i % 8) & 1);
}
