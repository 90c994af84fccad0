/* ca_target.h: the picture a lizard or image preset grows towards, as stored in model files. */
#ifndef DLCA_CA_TARGET_H
#define DLCA_CA_TARGET_H

#include "ca_config.h"
#include "ca_file.h"

/* The shipped picture for a preset that needs one (lizard20.png, image16.png) in `assets` (NULL:
 * the source tree's assets/); NULL when the config needs none. Writes the path into `path`
 * (size `size`). */
const char *ca_target_default_path(const ca_config *config, const char *assets, char *path, size_t size);

/* Reads `path` as the config's target: 1 loss channel = silhouette, 3 = RGB bits (refused
 * for a grey picture, which has one colour channel for the three), at the config's grid size: a
 * smaller picture is centred on a border of off cells, a larger one refused (the lizard's 20x20
 * picture on its 24x24 grid: docs/exact-circuits.md, section 27). */
int ca_target_load_png(const ca_config *config, const char *path, ca_target_image *target);

/* The bits as doubles [channels][height][width], malloc'd; NULL when out of memory. */
double *ca_target_values(const ca_target_image *target);

#endif
