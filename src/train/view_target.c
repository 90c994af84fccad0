/* view_target.c: a run's target (see view_target.h). */
#include "view_target.h"

#include "ca_target.h"
#include "ca_task.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

int view_target_init(view_target *t, const ca_model *model, const ca_target_image *picture, ca_shape shape)
{
    const ca_config *c = &model->config;
    memset(t, 0, sizeof *t);
    t->loss_channels = c->loss_channels, t->cells = ca_shape_cells(shape);
    int picture_fits = picture && picture->bits && picture->channels == c->loss_channels &&
                       picture->height == shape.height && picture->width == shape.width;
    if (c->target == CA_TARGET_LIFE || (c->target == CA_TARGET_IMAGE && !picture_fits)) return DLCA_OK;
    size_t n = (size_t)c->loss_channels * t->cells;
    double *image = c->target == CA_TARGET_IMAGE ? ca_target_values(picture) : NULL;
    t->bits = malloc(n * sizeof *t->bits);
    if (!t->bits || (c->target == CA_TARGET_IMAGE && !image)) {
        free(image), view_target_free(t);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the target of a %dx%d grid", shape.height, shape.width);
    }
    ca_shape one = shape;
    one.batch = 1;
    int rc = ca_task_target(c, one, NULL, image, t->bits);
    free(image);
    if (rc) view_target_free(t);
    return rc;
}

void view_target_free(view_target *t)
{
    free(t->bits);
    memset(t, 0, sizeof *t);
}

long view_target_wrong(const view_target *t, const double *grid)
{
    return t->bits ? (long)ca_task_wrong_bits(grid, t->bits, (size_t)t->loss_channels * t->cells) : -1;
}
