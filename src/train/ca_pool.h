/* ca_pool.h: the sample pool of training for persistence (as in Growing Neural Cellular
 * Automata, Mordvintsev et al., Distill 2020). The pool holds config->pool grids of the config's
 * shape, each first a start state. Every training round takes `batch` distinct slots of it, drawn
 * from the seed and the round. A growth round (ca_task_round_steps) starts from the preset's
 * starts, as training without a pool does, and leaves the pool alone. A persistence round starts
 * from the slots' grids, ranked by distance to the target (wrong bits, then squared error; the
 * lowest slot on ties): the `pool_starts` farthest (1 by default) are replaced by the preset's
 * starts, the `damage` closest get a random rectangle (sides H/4..H/2 by W/4..W/2) set to 0 in
 * every channel. Once it ran, its final grids go into its slots as bits: the hard circuit's where
 * the step measured its hard loss (the states the exported circuit reaches), else the soft
 * rollout's rounded. Every start is bits, so a
 * round's hard rollout starts from the same grid as its soft one. So pool grids grow old, round
 * after round, and the rule must keep the target over many times T steps (and with damage grow it
 * back), while half the rounds still ask for it grown from the start at T. Everything is drawn
 * from (seed, round): a CPU run is deterministic. */
#ifndef DLCA_CA_POOL_H
#define DLCA_CA_POOL_H

#include "ca_config.h"
#include "ca_shape.h"

#include <stdint.h>

typedef struct {
    ca_config config;   /* the pool's owner's (shape, start, seed, pool, damage) */
    size_t plane;       /* H * W */
    double *grids;      /* [pool][C][plane] */
    int *slot;          /* [pool]: a shuffle of the slots, whose first `batch` are the round's,
                           sample by sample */
    int *order;         /* [batch] scratch: samples sorted from closest to farthest */
    double *wrong, *error; /* [batch] scratch: each sample's distance to the target */
    int from_pool;      /* whether the last round was a persistence round (its grids are stored) */
} ca_pool;

/* A pool for `config` (config->pool > 0), every grid a start state. */
int ca_pool_init(ca_pool *pool, const ca_config *config);

void ca_pool_free(ca_pool *pool);

/* Round `round`'s slots; and for a persistence round (from_pool) its start grids [C][batch * H * W]
 * (the layout of ca_task_start) into `start`, which holds the preset's starts: the farthest
 * samples' (pool_starts of them) are kept, the others replaced by their pool grids, damaged as above. Distances are to
 * `target` ([loss_channels][batch * H * W], the round's target, the same for every start). A
 * growth round leaves `start` as it is. */
int ca_pool_round(ca_pool *pool, uint64_t round, int from_pool, const double *target, double *start);

/* The round's final grids ([C][batch * H * W], the same layout; any values, rounded at 0.5) back
 * into the slots a persistence round took; nothing after a growth round. */
void ca_pool_store(ca_pool *pool, const double *final_grid);

/* The same from floats in rows of `pitch` >= batch * H * W (the fast CPU engine's grids, pitch
 * the cells; the GPU's, pitch its row length). */
void ca_pool_store_f32(ca_pool *pool, const float *final_grid, size_t pitch);

/* The grids, all bits, as a checkpoint keeps them (ca_file.h, flag 3: grid bit i, over [pool][C]
 * [H * W], is bit i % 8 of byte i / 8; ca_file_pool_bytes of them), and back: a resumed run's
 * pool is the interrupted one's. */
void ca_pool_pack(const ca_pool *pool, uint8_t *bits);
void ca_pool_unpack(ca_pool *pool, const uint8_t *bits);

#endif
