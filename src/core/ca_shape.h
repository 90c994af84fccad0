/* ca_shape.h: the geometry of a batch of grids, and moving between a cell and its neighbours.
 * Cells are numbered cell = (b*H + y)*W + x, innermost x, on every engine. */
#ifndef DLCA_CA_SHAPE_H
#define DLCA_CA_SHAPE_H

#include "ca_config.h"

#include <stddef.h>

/* Grid geometry of a batch. */
typedef struct {
    int batch, height, width;
    ca_boundary boundary;
} ca_shape;

static inline size_t ca_shape_cells(ca_shape s) { return (size_t)s.batch * (size_t)s.height * (size_t)s.width; }

/* The cell at offset (dy, dx) from `cell` (wrapping on a periodic boundary), or -1 when it lies
 * outside a zero boundary. */
long long ca_shifted_cell(ca_shape s, size_t cell, int dy, int dx);

/* Value of channel row `row` at neighbour j (0..8, 4 = centre) of `cell`; 0 outside a zero boundary. */
double ca_neighbour(const double *row, ca_shape s, size_t cell, int j);

#endif
