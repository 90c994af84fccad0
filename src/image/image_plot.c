/* image_plot.c: the loss-curve plot of image_png.h, drawn into an RGB buffer with dlca's 5x7
 * bitmap font (image_font.h), then written as a PNG. No
 * plotting library: the picture only has to be legible, and this keeps dlca self-contained. */
#include "image_png.h"

#include "error.h"
#include "image_font.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const unsigned char image_soft_colour[3] = {31, 119, 180}; /* blue */
const unsigned char image_hard_colour[3] = {255, 127, 14}; /* orange */

static const unsigned char white[3] = {255, 255, 255};
static const unsigned char grid_grey[3] = {225, 225, 225};
static const unsigned char frame_grey[3] = {96, 96, 96};
static const unsigned char text_colour[3] = {32, 32, 32};

#define LOSS_FLOOR 1e-6

/* ----------------------------------------------------------------- canvas ---- */

typedef struct {
    unsigned char *rgb; /* [h][w][3] */
    int w, h;
} canvas;

static void put(canvas *c, int x, int y, const unsigned char colour[3])
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    memcpy(c->rgb + ((size_t)y * (size_t)c->w + (size_t)x) * 3, colour, 3);
}

static void fill_rect(canvas *c, int x, int y, int w, int h, const unsigned char colour[3])
{
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++) put(c, i, j, colour);
}

static void frame_rect(canvas *c, int x0, int y0, int x1, int y1, const unsigned char colour[3])
{
    fill_rect(c, x0, y0, x1 - x0 + 1, 1, colour);
    fill_rect(c, x0, y1, x1 - x0 + 1, 1, colour);
    fill_rect(c, x0, y0, 1, y1 - y0 + 1, colour);
    fill_rect(c, x1, y0, 1, y1 - y0 + 1, colour);
}

/* Bresenham, stamping a thick x thick square at each point. */
static void draw_line(canvas *c, int x0, int y0, int x1, int y1, int thick, const unsigned char colour[3])
{
    int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, e = dx + dy;
    for (;;) {
        int e2 = 2 * e; /* both tests see the error before this step */
        fill_rect(c, x0 - thick / 2, y0 - thick / 2, thick, thick, colour);
        if (x0 == x1 && y0 == y1) return;
        if (e2 >= dy) e += dy, x0 += sx;
        if (e2 <= dx) e += dx, y0 += sy;
    }
}

static int text_width(const char *s, int scale) { return image_font_width(s, scale); }

/* Draws s with its top-left corner at (x, y), each font pixel scale x scale. */
static void draw_text(canvas *c, int x, int y, const char *s, int scale, const unsigned char colour[3])
{
    image_font_draw(c->rgb, c->w, c->h, x, y, s, scale, colour);
}

/* ------------------------------------------------------------------- plot ---- */

/* The plot frame in canvas pixels and the data range it shows. Data sit `pad` pixels inside
 * the frame, so a hard loss of 0 (drawn at the floor) is not hidden under the frame line. */
typedef struct {
    int left, top, right, bottom, pad;
    double x_min, x_max;
    int decade_lo, decade_hi; /* y axis from 10^lo to 10^hi */
    int scale;                /* font and line scale */
} plot_frame;

static double step_at(const double *steps, int i) { return steps ? steps[i] : (double)i; }

/* log10 of a loss as plotted, or NAN for points to skip. */
static double plot_log(double loss)
{
    if (isnan(loss) || isinf(loss)) return NAN;
    return log10(loss < LOSS_FLOOR ? LOSS_FLOOR : loss);
}

static void find_y_range(plot_frame *f, const double *soft, const double *hard, int count)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < count; i++) {
        double v[2] = {plot_log(soft[i]), hard ? plot_log(hard[i]) : NAN};
        for (int k = 0; k < 2; k++) {
            if (isnan(v[k])) continue;
            lo = fmin(lo, v[k]);
            hi = fmax(hi, v[k]);
        }
    }
    if (lo > hi) lo = -1.0, hi = 1.0; /* nothing finite to plot */
    hi = fmin(hi, 300.0);             /* keeps the decade count an int even for absurd losses */
    f->decade_lo = (int)floor(lo);
    f->decade_hi = (int)ceil(hi);
    if (f->decade_hi == f->decade_lo) f->decade_hi++;
}

static void find_x_range(plot_frame *f, const double *steps, int count)
{
    f->x_min = INFINITY;
    f->x_max = -INFINITY;
    for (int i = 0; i < count; i++) {
        double s = step_at(steps, i);
        if (!isfinite(s)) continue;
        f->x_min = fmin(f->x_min, s);
        f->x_max = fmax(f->x_max, s);
    }
    if (f->x_min > f->x_max) f->x_min = 0.0, f->x_max = 1.0;
    if (f->x_max == f->x_min) f->x_max = f->x_min + 1.0;
}

static void decade_label(char *buf, size_t size, int decade) { snprintf(buf, size, "1e%d", decade); }

/* Margins leave room for the widest y label on the left and one text line below. */
static void layout(plot_frame *f, int width, int height)
{
    char label[16];
    int widest = 0;
    f->scale = width >= 480 && height >= 300 ? 2 : 1;
    for (int d = f->decade_lo; d <= f->decade_hi; d++) {
        decade_label(label, sizeof label, d);
        if (text_width(label, f->scale) > widest) widest = text_width(label, f->scale);
    }
    f->left = widest + 4 * f->scale + 2;
    f->top = 5 * f->scale;
    f->right = width - 1 - 5 * f->scale;
    f->bottom = height - 1 - (IMAGE_FONT_HEIGHT + 5) * f->scale;
    f->pad = 3 * f->scale;
}

static int x_pixel(const plot_frame *f, double step)
{
    double t = (step - f->x_min) / (f->x_max - f->x_min);
    return f->left + f->pad + (int)lround(t * (f->right - f->left - 2 * f->pad));
}

static int y_pixel(const plot_frame *f, double log_loss)
{
    double t = (log_loss - f->decade_lo) / (f->decade_hi - f->decade_lo);
    return f->bottom - f->pad - (int)lround(t * (f->bottom - f->top - 2 * f->pad));
}

/* Grid lines at every power of ten; labels on as many as fit without overlapping. */
static void draw_y_axis(canvas *c, const plot_frame *f)
{
    int decades = f->decade_hi - f->decade_lo;
    int room = (f->bottom - f->top - 2 * f->pad) / ((IMAGE_FONT_HEIGHT + 3) * f->scale);
    int every = room < 1 ? decades : (decades + room - 1) / room;
    char label[16];
    if (every < 1) every = 1;
    for (int d = f->decade_lo; d <= f->decade_hi; d++) {
        int y = y_pixel(f, d);
        fill_rect(c, f->left, y, f->right - f->left + 1, 1, grid_grey);
        if ((d - f->decade_lo) % every) continue;
        fill_rect(c, f->left - 2 * f->scale, y, 2 * f->scale, 1, frame_grey);
        decade_label(label, sizeof label, d);
        draw_text(c, f->left - 3 * f->scale - text_width(label, f->scale), y - IMAGE_FONT_HEIGHT * f->scale / 2, label,
                  f->scale, text_colour);
    }
}

/* The first and last step under their ticks, and the word "step" between them where it fits. */
static void draw_x_axis(canvas *c, const plot_frame *f)
{
    char first[32], last[32];
    int y = f->bottom + 3 * f->scale, x0 = x_pixel(f, f->x_min), x1 = x_pixel(f, f->x_max);
    snprintf(first, sizeof first, "%.10g", f->x_min);
    snprintf(last, sizeof last, "%.10g", f->x_max);
    fill_rect(c, x0, f->bottom, 1, 2 * f->scale + 1, frame_grey);
    fill_rect(c, x1, f->bottom, 1, 2 * f->scale + 1, frame_grey);
    draw_text(c, x0 - f->pad, y, first, f->scale, text_colour);
    draw_text(c, x1 + f->pad - text_width(last, f->scale) + 1, y, last, f->scale, text_colour);
    int step_w = text_width("step", f->scale), step_x = (f->left + f->right - step_w) / 2;
    int gap = IMAGE_FONT_ADVANCE * f->scale; /* "step" only where it stays clear of both numbers */
    if (step_x >= x0 - f->pad + text_width(first, f->scale) + gap &&
        step_x + step_w + gap <= x1 + f->pad - text_width(last, f->scale))
        draw_text(c, step_x, y, "step", f->scale, text_colour);
}

/* Joins consecutive finite points; a NaN or infinite loss breaks the line. */
static void draw_curve(canvas *c, const plot_frame *f, const double *steps, const double *loss, int count,
                       const unsigned char colour[3])
{
    int have_prev = 0, px = 0, py = 0;
    for (int i = 0; i < count; i++) {
        double v = plot_log(loss[i]), s = step_at(steps, i);
        if (isnan(v) || !isfinite(s)) {
            have_prev = 0;
            continue;
        }
        int x = x_pixel(f, s), y = y_pixel(f, v);
        draw_line(c, have_prev ? px : x, have_prev ? py : y, x, y, f->scale, colour);
        have_prev = 1, px = x, py = y;
    }
}

/* A boxed key in the top-right corner: a line sample and the name of each curve. */
static void draw_legend(canvas *c, const plot_frame *f, int with_hard)
{
    int s = f->scale, line = (IMAGE_FONT_HEIGHT + 3) * s, sample_w = 10 * s;
    int box_w = sample_w + text_width("soft", s) + 7 * s, box_h = line * (with_hard ? 2 : 1) + 3 * s;
    int x0 = f->right - box_w - 2 * s, y0 = f->top + 2 * s;
    const char *names[2] = {"soft", "hard"};
    const unsigned char *colours[2] = {image_soft_colour, image_hard_colour};
    fill_rect(c, x0, y0, box_w, box_h, white);
    frame_rect(c, x0, y0, x0 + box_w - 1, y0 + box_h - 1, frame_grey);
    for (int k = 0; k < (with_hard ? 2 : 1); k++) {
        int y = y0 + 2 * s + k * line;
        fill_rect(c, x0 + 2 * s, y + IMAGE_FONT_HEIGHT * s / 2 - s / 2, sample_w, 2 * s, colours[k]);
        draw_text(c, x0 + sample_w + 4 * s, y + s / 2, names[k], s, text_colour);
    }
}

int image_write_loss_curve(const char *path, const double *steps, const double *soft, const double *hard, int count,
                           int width, int height)
{
    plot_frame f;
    canvas c = {NULL, width, height};
    int status;
    if (!path || !soft) return err_set(DLCA_ERR, "image_write_loss_curve: NULL path or soft losses");
    if (count < 1) return err_set(DLCA_ERR, "%s: no losses to plot", path);
    if (width < IMAGE_PLOT_MIN_WIDTH || height < IMAGE_PLOT_MIN_HEIGHT || width > 100000 || height > 100000)
        return err_set(DLCA_ERR, "%s: a %dx%d plot is not drawable (at least %dx%d)", path, width, height,
                       IMAGE_PLOT_MIN_WIDTH, IMAGE_PLOT_MIN_HEIGHT);
    c.rgb = malloc((size_t)width * (size_t)height * 3);
    if (!c.rgb) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for a %dx%d plot", path, width, height);
    memset(c.rgb, 255, (size_t)width * (size_t)height * 3);
    find_x_range(&f, steps, count);
    find_y_range(&f, soft, hard, count);
    layout(&f, width, height);
    draw_y_axis(&c, &f);
    frame_rect(&c, f.left, f.top, f.right, f.bottom, frame_grey);
    if (hard) draw_curve(&c, &f, steps, hard, count, image_hard_colour);
    draw_curve(&c, &f, steps, soft, count, image_soft_colour);
    draw_x_axis(&c, &f);
    draw_legend(&c, &f, hard != NULL);
    status = image_write_rgb(path, c.rgb, width, height);
    free(c.rgb);
    return status;
}
