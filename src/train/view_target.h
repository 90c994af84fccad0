/* view_target.h: what a run's grid should show from step T on (the viewer's status line): the
 * preset's target on the run's grid, where there is one there: the checkerboard on any grid, a
 * picture on the grid it was trained on. Life's target depends on the grid before it: none. */
#ifndef DLCA_VIEW_TARGET_H
#define DLCA_VIEW_TARGET_H

#include "ca_file.h"
#include "ca_shape.h"

typedef struct {
    int loss_channels;
    size_t cells;
    double *bits; /* [loss_channels][cells], 0 or 1; NULL: no target on this grid */
} view_target;

/* The target of `model` on a grid of `shape` (batch 1); `picture` is the model file's target
 * picture (NULL when it holds none: then an image preset has no target here). */
int view_target_init(view_target *target, const ca_model *model, const ca_target_image *picture, ca_shape shape);

void view_target_free(view_target *target);

/* Bits of the loss channels of `grid` ([C][cells]) that differ from the target
 * (ca_task_wrong_bits): the hard loss of a training round; -1 when there is no target. */
long view_target_wrong(const view_target *target, const double *grid);

#endif
