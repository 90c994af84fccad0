/* view_image.h: a grid as a picture, one pixel per cell, free of SDL, for the window and for
 * screenshots. Grey and RGB colour cells exactly as image_png's frames do (v * 255 + 0.5, clamped),
 * so a screenshot equals the frame `dlca run` writes. */
#ifndef DLCA_VIEW_IMAGE_H
#define DLCA_VIEW_IMAGE_H

#include "ca_shape.h"

typedef enum {
    VIEW_GREY,   /* channel 0 as grey */
    VIEW_RGB,    /* channels 0, 1, 2 as R, G, B (C >= 3) */
    VIEW_MOSAIC, /* every channel as a grey tile, row by row, tiles 1 pixel apart */
    VIEW_KIND_COUNT
} view_kind;

/* Between mosaic tiles: a colour no grey cell has. */
extern const unsigned char view_gap_rgb[3];

/* "grey", "rgb", "mosaic". */
const char *view_kind_name(view_kind kind);

/* The view after `kind` that a model of `channels` channels can show (RGB needs 3, a mosaic 2). */
view_kind view_kind_next(view_kind kind, int channels);

/* Mosaic layout: tiles per row and rows of tiles for `channels` tiles (about square). */
void view_mosaic_layout(int channels, int *columns, int *rows);

/* Size in pixels of the picture of a height x width grid. */
void view_image_size(view_kind kind, int channels, int height, int width, int *out_width, int *out_height);

/* Draws grid [channels][cells] (sample 0 of `shape`) into rgb [out_height][out_width][3]. */
void view_image_render(unsigned char *rgb, const double *grid, int channels, ca_shape shape, view_kind kind);

/* The cell (x, y) and tile under picture pixel (px, py); 0 when on a gap or outside. */
int view_image_cell(view_kind kind, int channels, ca_shape shape, int px, int py, int *x, int *y);

/* Writes rgb [height][width][3] as a PNG with every pixel a scale x scale square. */
int view_image_write(const char *path, const unsigned char *rgb, int width, int height, int scale);

#endif
