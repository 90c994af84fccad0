/* ca_target.c: loading a preset's target picture and converting it for the engines. */
#include "ca_target.h"

#include "error.h"
#include "image_png.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ca_target_default_path(const ca_config *c, const char *assets, char *path, size_t size)
{
    if (c->target != CA_TARGET_IMAGE) return NULL;
    const char *dir = assets && assets[0] ? assets : DLCA_ASSET_DIR;
    snprintf(path, size, "%s/%s", dir, c->loss_channels == 1 ? "lizard20.png" : "image16.png");
    return path;
}

int ca_target_load_png(const ca_config *c, const char *path, ca_target_image *target)
{
    memset(target, 0, sizeof *target);
    image_target_mode mode;
    if (c->loss_channels == 1)
        mode = IMAGE_SILHOUETTE;
    else if (c->loss_channels == 3)
        mode = IMAGE_RGB_BITS;
    else
        return err_set(DLCA_ERR, "%s: a picture target needs 1 (silhouette) or 3 (RGB) loss channels, not %d", path,
                       c->loss_channels);
    size_t n = (size_t)c->loss_channels * (size_t)c->height * (size_t)c->width;
    double *values = malloc(n * sizeof(double));
    target->bits = malloc(n);
    if (!values || !target->bits) {
        free(values), free(target->bits), target->bits = NULL;
        return err_set(DLCA_ERR_NOMEM, "out of memory for the target");
    }
    int colours = 0;
    if (image_load_target_within(path, mode, c->height, c->width, values, &colours)) {
        free(values), free(target->bits), target->bits = NULL;
        return DLCA_ERR;
    }
    /* Grey copied to R, G and B would make the three loss channels one: surely the wrong file. */
    if (colours < c->loss_channels) {
        free(values), free(target->bits), target->bits = NULL;
        return err_set(DLCA_ERR, "%s: a grey picture has 1 colour channel, but preset '%s' compares %d (R, G, B): "
                       "give a colour PNG", path, c->preset, c->loss_channels);
    }
    for (size_t i = 0; i < n; i++) target->bits[i] = values[i] > 0.5;
    free(values);
    target->channels = c->loss_channels, target->height = c->height, target->width = c->width;
    return DLCA_OK;
}

double *ca_target_values(const ca_target_image *target)
{
    size_t n = (size_t)target->channels * (size_t)target->height * (size_t)target->width;
    double *values = malloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; values && i < n; i++) values[i] = target->bits[i];
    return values;
}
