/* view_start.h: the start grid of a run (`dlca run`, the viewer): the model's preset start
 * state drawn from the run's seed on the run's grid. Kept in one place so that the viewer shows
 * exactly the frames `dlca run` writes for the same model, grid and seed. */
#ifndef DLCA_VIEW_START_H
#define DLCA_VIEW_START_H

#include "ca_config.h"
#include "ca_shape.h"

#include <stdint.h>

/* Writes the start of a run into grid [C][cells] (cells of `shape`): the config's start kind
 * with its seed replaced by `seed`. Life boards need a 3x3 grid, so on any other grid the gol
 * preset starts from a random soup instead. */
int view_start_grid(const ca_config *config, uint64_t seed, ca_shape shape, double *grid);

#endif
