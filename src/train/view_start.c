/* view_start.c: the start grid of a run (see view_start.h). */
#include "view_start.h"

#include "ca_task.h"

int view_start_grid(const ca_config *config, uint64_t seed, ca_shape shape, double *grid)
{
    ca_config c = *config;
    c.seed = seed;
    if (c.start == CA_START_BOARDS && (shape.height != 3 || shape.width != 3)) c.start = CA_START_RANDOM;
    return ca_task_start(&c, shape, 0, grid);
}
