/* image_frame.h: rollout frames as pictures, with their step numbers: a grid drawn at a scale,
 * a label band above it that says which step it is, strips of labelled frames (PNG) and
 * animations (GIF). Cells are coloured as image_png.h's frames (v * 255 + 0.5, clamped; NaN
 * black), so a labelled frame shows the very cells of the unlabelled one below its band.
 *
 * The band is black with the label in white over a grey rule, all three exact in either GIF
 * palette: "step N" where it fits the frame's width, else "N", else nothing. Frames 192 pixels
 * wide or more get the font at twice its size. */
#ifndef DLCA_IMAGE_FRAME_H
#define DLCA_IMAGE_FRAME_H

#include "image_gif.h"
#include "image_png.h"

#include <stddef.h>

enum { IMAGE_LABEL_WIDE = 192 };

extern const unsigned char image_label_background[3];
extern const unsigned char image_label_ink[3];

/* Rows of the label band above a frame `frame_width` pixels wide. */
int image_label_height(int frame_width);

/* Font size (pixels per font pixel) of the labels of a frame `frame_width` wide. */
int image_label_size(int frame_width);

/* The label of `step` on a frame `frame_width` wide ("" when not even the number fits). */
void image_label_text(char *text, size_t size, long long step, int frame_width);

/* Draws the band of one frame into rgb [height][width][3]: columns x .. x+frame_width-1, rows
 * 0 .. image_label_height(frame_width)-1, the label 2 font pixels in from its top-left corner. */
void image_draw_label(unsigned char *rgb, int width, int height, int x, int frame_width, long long step);

/* Draws sample `sample` of grid [channels][cells] into rgb [..][width][3] with its top-left
 * corner at (x, y), each cell a scale x scale square. */
void image_draw_grid(unsigned char *rgb, int width, int x, int y, const double *grid, int channels, ca_shape shape,
                     int sample, int scale, image_view view);

/* image_write_strip with a label band above the frames: frame f is labelled steps[f]. */
int image_write_strip_labelled(const char *path, const double *frames, int count, int channels, ca_shape shape,
                               int sample, int scale, image_view view, const long long *steps);

/* Pixels a side of one labelled GIF frame of `shape` at `scale`. */
void image_gif_frame_size(ca_shape shape, int scale, long long *width, long long *height);

/* `count` grids as an animated GIF, frame f labelled steps[f] and shown `delay_cs` hundredths of
 * a second (image_gif.h; the grey palette for IMAGE_CHANNEL0, the colour one for IMAGE_RGB). */
int image_write_gif(const char *path, const double *frames, int count, int channels, ca_shape shape, int sample,
                    int scale, image_view view, const long long *steps, int delay_cs);

#endif
