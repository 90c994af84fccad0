/* image_png.h: everything dlca does with pictures, through libpng: targets in (any PNG,
 * binarised), frames and strips of frames out, and a loss-curve plot. Grids are [C][cells]
 * doubles with cell = (b*H + y)*W + x, as in ca_shape.h. Every function returns DLCA_OK or
 * a negative status with a one-line message in err_message() naming the file. Files are written
 * to a temporary name beside the target and renamed, so a reader never sees half a PNG. */
#ifndef DLCA_IMAGE_PNG_H
#define DLCA_IMAGE_PNG_H

#include "ca_shape.h"

/* Pictures dlca writes: PNG allows 2^31-1 a side, but libpng's readers refuse more than a million
 * by default; 2^28 pixels (768 MiB of RGB) is far past any useful strip. */
enum { IMAGE_MAX_SIDE = 1000000, IMAGE_MAX_PIXELS = 1 << 28 };

/* How a target picture becomes bits. Both premultiply R, G, B by alpha first. */
typedef enum {
    IMAGE_RGB_BITS,  /* out [3][H][W]: channel c is 1 where colour c > 0.5 (the image preset) */
    IMAGE_SILHOUETTE /* out [1][H][W]: 1 where any of R, G, B > 0.26 (the lizard preset) */
} image_target_mode;

/* How grid channels become pixels. Values are clamped to [0, 1]; NaN shows as 0. */
typedef enum {
    IMAGE_CHANNEL0, /* channel 0 as grey */
    IMAGE_RGB       /* channels 0, 1, 2 as R, G, B (needs C >= 3) */
} image_view;

/* Channels a target of `mode` has: 3 for IMAGE_RGB_BITS, 1 for IMAGE_SILHOUETTE. */
int image_target_channels(image_target_mode mode);

/* Reads the PNG at `path` (any colour type and bit depth, interlaced or not) and binarises it
 * into out [image_target_channels(mode)][height][width], values 0.0 or 1.0. Fails with a message
 * naming the file when it is missing or unreadable, not a PNG, corrupt or truncated, or not
 * exactly width x height pixels. Sides are at most CA_MAX_SIDE, and no chunk may take more than
 * 8 MiB (checked by libpng before it allocates). `out` may be partly written on failure. */
int image_load_target(const char *path, image_target_mode mode, int height, int width, double *out);

/* image_load_target for a picture of at most width x height, centred on a border of off cells
 * ((width - its width) / 2 to the left, rounded down; the same above), that also says how many
 * colour channels the file itself has (before grey is copied to R, G and B): 1 for grey and
 * grey+alpha, 3 for colour and palette files. NULL `colours`: not wanted. */
int image_load_target_within(const char *path, image_target_mode mode, int height, int width, double *out,
                             int *colours);

/* Number of distinct colours (R, G, B each on where > 0.5) in a [3][pixels] target: at most 8. */
int image_count_colours(const double *target, int pixels);

/* Frames and strips are drawn in image_frame.c (image_frame.h adds step labels and GIFs).
 * Writes sample `sample` of `count` grids (frames: [count][channels][cells], cells from `shape`)
 * left to right, one 1-pixel grey line between frames, each cell a scale x scale square.
 * The PNG is 8-bit RGB, (count*W*scale + count-1) x (H*scale) pixels. */
int image_write_strip(const char *path, const double *frames, int count, int channels, ca_shape shape, int sample,
                      int scale, image_view view);

/* Whether a strip of `count` frames of `shape`'s grid at `scale` (with step labels when
 * `labelled`) is within the limits image_write_strip applies, checked before anything is run or
 * rendered (count 1: one frame); *bytes (may be NULL) gets the size of its RGB pixels. The
 * message names `path`. */
int image_strip_check(const char *path, int count, ca_shape shape, int scale, int labelled, double *bytes);

/* image_write_strip for a single grid [channels][cells]. */
int image_write_frame(const char *path, const double *grid, int channels, ca_shape shape, int sample, int scale,
                      image_view view);

/* Writes an 8-bit RGB PNG from rgb [height][width][3]. */
int image_write_rgb(const char *path, const unsigned char *rgb, int width, int height);

/* The circuit a run wrote, for the loss plot's marker: its step and its hard loss (wrong cells),
 * which need not be a row of the plotted log (a run measures every step, logs every N). */
typedef struct {
    double step, hard;
} image_plot_mark;

/* Plots soft (blue) and hard (orange) loss against steps as a width x height PNG (at least
 * IMAGE_PLOT_MIN_WIDTH x IMAGE_PLOT_MIN_HEIGHT): two panels, the soft loss on a log scale and the
 * hard loss on a symlog one where 0 is drawn as 0, with round ticks and a marker: at `mark`, the
 * circuit written ("written N at step S"), or with `mark` NULL at the best hard loss logged
 * ("best N at step S"; image_plot.h, which also says where everything is). NaN and infinite
 * points are skipped. steps may be NULL (0, 1, 2...); hard may be NULL (soft only, one panel). */
int image_write_loss_curve(const char *path, const double *steps, const double *soft, const double *hard, int count,
                           int width, int height, const image_plot_mark *mark);

enum { IMAGE_PLOT_MIN_WIDTH = 120, IMAGE_PLOT_MIN_HEIGHT = 80 };

/* Soft and hard curve colours (R, G, B), so callers and tests can find them. */
extern const unsigned char image_soft_colour[3];
extern const unsigned char image_hard_colour[3];

#endif
