/* ca_run_defaults.c: the default grid, steps and scale of a run (ca_run_defaults.h). */
#include "ca_run_defaults.h"

void ca_run_default_grid(const ca_config *c, int *height, int *width)
{
    if (c->start == CA_START_BOARDS) *height = *width = CA_RUN_LIFE_SIDE; /* a 3x3 board shows nothing */
    else *height = c->height, *width = c->width;
}

int ca_run_default_steps(const ca_config *c) { return c->start == CA_START_BOARDS ? CA_RUN_LIFE_STEPS : c->steps; }

int ca_run_default_scale(int height, int width)
{
    int side = height > width ? height : width, scale = 8;
    while (scale > 1 && side * scale > 256) scale /= 2;
    return scale;
}
