/* ca_run_defaults.h: what `dlca run` and the viewer show of a model when told nothing else, in
 * one place so that both show the same run. A model runs on its training grid for its T steps,
 * except where that shows nothing: Game of Life is trained on 3x3 boards for one step, so it
 * runs on a CA_RUN_LIFE_SIDE x CA_RUN_LIFE_SIDE random soup for CA_RUN_LIFE_STEPS steps (the
 * start is view_start.h's soup on any grid but 3x3). */
#ifndef DLCA_CA_RUN_DEFAULTS_H
#define DLCA_CA_RUN_DEFAULTS_H

#include "ca_config.h"

enum { CA_RUN_LIFE_SIDE = 64, CA_RUN_LIFE_STEPS = 64 };

/* The default grid of a run of `config`'s model. */
void ca_run_default_grid(const ca_config *config, int *height, int *width);

/* The default number of CA steps of a run of `config`'s model. */
int ca_run_default_steps(const ca_config *config);

/* Pixels per cell that keep a height x width grid's picture about 256 pixels a side or more:
 * 8 up to 32 cells a side, then halving (4 up to 64, 2 up to 128), 1 past 128. */
int ca_run_default_scale(int height, int width);

#endif
