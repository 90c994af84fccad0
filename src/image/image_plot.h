/* image_plot.h: the loss plot `dlca train` writes beside its CSV (image_write_loss_curve in
 * image_png.h), and where things are in it, so that a test can check the picture pixel by pixel.
 *
 * Two panels share the step axis (round ticks: 1, 2 or 5 times a power of ten, labelled under
 * the lower panel, with the word "step"):
 *  - above, the soft loss on a log scale, ticks and labels at powers of ten (0.01, 0.1, 1, 10,
 *    1e3, ...); values at or below 0, NaN and infinities are left out (a gap in the line);
 *  - below, the hard loss -- cell bits wrong, summed over the batch -- on a symlog scale: linear
 *    from 0 to 1, logarithmic above (1, 10, 100, ...), so 0 is drawn as 0, on the panel's zero
 *    line, and a few wrong cells stay visible beside hundreds. Ticks at 0, 1, 10, 100, ...
 * Each panel has its title in its curve's colour. A vertical line across both panels marks the
 * circuit the run wrote, labelled "written N at step S", where the caller names it; else the best
 * hard loss logged (the smallest; its first step where it is reached more than once), "best N at
 * step S". Without hard losses the soft panel takes the whole height. */
#ifndef DLCA_IMAGE_PLOT_H
#define DLCA_IMAGE_PLOT_H

#include "image_png.h"

enum { IMAGE_PLOT_MAX_TICKS = 16 };

/* The marker of the best hard loss. */
extern const unsigned char image_best_colour[3];
/* Frame, ticks and text. */
extern const unsigned char image_plot_ink[3];

typedef struct {
    int width, height, font;  /* font: pixels per font pixel */
    int left, right;          /* the panels' frame columns (both panels) */
    int soft_top, soft_bottom;
    int hard_top, hard_bottom; /* 0 when there is no hard panel */
    int pad;                  /* data sit this far inside a frame */
    double x_min, x_max;
    int soft_lo, soft_hi;     /* soft panel: 10^lo .. 10^hi */
    int hard_decades;         /* hard panel: 0 .. symlog 1 + hard_decades (0 .. 10^hard_decades) */
    int best;                 /* index of the best hard loss, -1 when none is finite */
    int marked, written;      /* a marker is drawn; it is the caller's mark (else the best row) */
    double mark_step, mark_hard;
} image_plot_layout;

/* The layout image_write_loss_curve uses for these losses and mark at width x height (the same
 * checks). The step axis spans the mark too. */
int image_plot_layout_of(image_plot_layout *layout, const double *steps, const double *soft, const double *hard,
                         int count, int width, int height, const image_plot_mark *mark);

/* Pixel column of `step`; pixel rows of a soft loss (> 0) and a hard loss (>= 0). */
int image_plot_x(const image_plot_layout *layout, double step);
int image_plot_soft_y(const image_plot_layout *layout, double soft);
int image_plot_hard_y(const image_plot_layout *layout, double hard);

/* Round ticks in [lo, hi]: multiples of 1, 2 or 5 x 10^k, the finest step giving at most
 * `max_ticks` (<= IMAGE_PLOT_MAX_TICKS) of them; returns how many. */
int image_plot_ticks(double lo, double hi, int max_ticks, double *ticks);

#endif
