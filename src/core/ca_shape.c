/* ca_shape.c: cell arithmetic on a batch of grids (ca_shape.h). */
#include "ca_shape.h"

long long ca_shifted_cell(ca_shape s, size_t cell, int dy, int dx)
{
    size_t plane = (size_t)s.height * (size_t)s.width;
    size_t b = cell / plane, yx = cell % plane;
    int y = (int)(yx / (size_t)s.width) + dy, x = (int)(yx % (size_t)s.width) + dx;
    if (s.boundary == CA_BOUNDARY_PERIODIC) {
        y = (y + s.height) % s.height;
        x = (x + s.width) % s.width;
    } else if (y < 0 || y >= s.height || x < 0 || x >= s.width) {
        return -1;
    }
    return (long long)(b * plane + (size_t)y * (size_t)s.width + (size_t)x);
}

double ca_neighbour(const double *row, ca_shape s, size_t cell, int j)
{
    long long at = ca_shifted_cell(s, cell, j / 3 - 1, j % 3 - 1);
    return at < 0 ? 0.0 : row[at];
}
