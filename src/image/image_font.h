/* image_font.h: dlca's one bitmap font (5x7 pixels in a 6x9 cell, printable ASCII), shared by
 * the pictures dlca writes (step labels, the loss plot) and the viewer's overlays, so every
 * label looks the same wherever it is drawn. */
#ifndef DLCA_IMAGE_FONT_H
#define DLCA_IMAGE_FONT_H

enum { IMAGE_FONT_WIDTH = 5, IMAGE_FONT_HEIGHT = 7, IMAGE_FONT_ADVANCE = 6, IMAGE_FONT_LINE = 9 };

/* Is pixel (x, y) of character c on? Characters outside printable ASCII show as '?'. */
int image_font_pixel(char c, int x, int y);

/* Width in pixels of `text` with each font pixel a size x size square (no trailing gap). */
int image_font_width(const char *text, int size);

/* Draws `text` into rgb [height][width][3] with its top-left corner at (x, y), each font pixel a
 * size x size square of `colour`; what falls outside the picture is clipped. */
void image_font_draw(unsigned char *rgb, int width, int height, int x, int y, const char *text, int size,
                     const unsigned char colour[3]);

#endif
