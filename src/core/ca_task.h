/* ca_task.h: what a preset's rollouts start from and what their final grid must match.
 * Grids are [C][cells] doubles with cell = (b*H + y)*W + x; targets [loss_channels][cells]. */
#ifndef DLCA_CA_TASK_H
#define DLCA_CA_TASK_H

#include "ca_config.h"
#include "ca_shape.h"

#include <stdint.h>

/* Start grid for training round `round` (random choices drawn from the config's seed and round). */
int ca_task_start(const ca_config *config, ca_shape shape, uint64_t round, double *grid);

/* Training round `round`'s kind, drawn from the config's seed and the round: the CA steps of its
 * rollout, and (*from_pool) whether it starts from the pool. Without a pool or a window every round
 * is a growth round: T steps from the preset's starts. With either, half the rounds are growth
 * rounds and the others persistence rounds: from the pool where there is one (else from starts),
 * T + u steps, u uniform in 1..window (0 without a window). */
int ca_task_round_steps(const ca_config *config, uint64_t round, int *from_pool);

/* Writes 3x3 board `board` (bit y*3+x = cell (y, x)) into channel 0 of sample `sample`. */
void ca_task_board(double *grid, ca_shape shape, int sample, int board);

/* Target for a start grid. `image` ([loss_channels][H][W], values 0/1) is needed for
 * CA_TARGET_IMAGE and ignored otherwise. */
int ca_task_target(const ca_config *config, ca_shape shape, const double *start, const double *image, double *target);

/* Game of Life's next state of channel 0 of `grid` (0/1 values), for every sample. */
void ca_task_life_step(double *next, const double *grid, ca_shape shape);

/* Rounds every value to 0 or 1 (the start of a hard rollout). */
void ca_task_binarize(double *grid, size_t count);

/* How many of the `count` values of grid and target round (as ca_task_binarize) to different
 * bits: the hard loss of a grid's loss channels against their target. */
size_t ca_task_wrong_bits(const double *grid, const double *target, size_t count);

#endif
