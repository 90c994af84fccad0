/* image_plot.c: the loss plot (image_plot.h), drawn into an RGB buffer with dlca's 5x7 bitmap
 * font (image_font.h), then written as a PNG. No plotting library: the picture only has to be
 * legible and exact about a few things (where 0 is, which step was best), and this keeps dlca
 * self-contained. */
#include "image_plot.h"

#include "error.h"
#include "image_font.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const unsigned char image_soft_colour[3] = {31, 119, 180}; /* blue */
const unsigned char image_hard_colour[3] = {255, 127, 14}; /* orange */
const unsigned char image_best_colour[3] = {44, 160, 44};  /* green */
const unsigned char image_plot_ink[3] = {32, 32, 32};

static const unsigned char grid_grey[3] = {225, 225, 225};
static const unsigned char frame_grey[3] = {96, 96, 96};

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

static void draw_text(canvas *c, int x, int y, const char *s, int font, const unsigned char colour[3])
{
    image_font_draw(c->rgb, c->w, c->h, x, y, s, font, colour);
}

/* ----------------------------------------------------------------- scales ---- */

static double step_at(const double *steps, int i) { return steps ? steps[i] : (double)i; }

static int soft_ok(double v) { return isfinite(v) && v > 0.0; }
static int hard_ok(double v) { return isfinite(v) && v >= 0.0; }

/* The hard panel's scale: linear from 0 to 1, log10 above. */
static double symlog(double v) { return v <= 1.0 ? v : 1.0 + log10(v); }

int image_plot_ticks(double lo, double hi, int max_ticks, double *ticks)
{
    if (max_ticks > IMAGE_PLOT_MAX_TICKS) max_ticks = IMAGE_PLOT_MAX_TICKS;
    if (max_ticks < 1) max_ticks = 1;
    if (!(hi > lo)) return ticks[0] = lo, 1;
    static const double mantissas[3] = {1.0, 2.0, 5.0};
    for (int k = (int)floor(log10((hi - lo) / max_ticks)) - 1;; k++)
        for (int m = 0; m < 3; m++) {
            double step = mantissas[m] * pow(10.0, k);
            double first = ceil(lo / step - 1e-9), last = floor(hi / step + 1e-9);
            if (last - first + 1 > max_ticks) continue;
            int n = 0;
            for (double i = first; i <= last; i++) ticks[n++] = i * step == 0.0 ? 0.0 : i * step; /* no -0 */
            return n;
        }
}

static void decade_label(char *out, size_t size, int decade)
{
    static const char *const plain[] = {"0.01", "0.1", "1", "10", "100", "1000"};
    if (decade >= -2 && decade <= 3) snprintf(out, size, "%s", plain[decade + 2]);
    else snprintf(out, size, "1e%d", decade);
}

/* Hard ticks: 0, then 10^(d-1) for d = 1 .. decades + 1 (1, 10, 100, ...), at symlog value d. */
static void hard_label(char *out, size_t size, int d)
{
    if (d == 0) snprintf(out, size, "0");
    else decade_label(out, size, d - 1);
}

static void step_label(char *out, size_t size, double step)
{
    if (fabs(step) < 1e9 && step == floor(step)) snprintf(out, size, "%.0f", step);
    else snprintf(out, size, "%.6g", step);
}

/* ----------------------------------------------------------------- layout ---- */

static void find_ranges(image_plot_layout *l, const double *steps, const double *soft, const double *hard, int count,
                        const image_plot_mark *mark)
{
    double lo = INFINITY, hi = -INFINITY, worst = 0.0, best = INFINITY;
    l->x_min = INFINITY, l->x_max = -INFINITY, l->best = -1;
    for (int i = 0; i < count; i++) {
        double s = step_at(steps, i);
        if (!isfinite(s)) continue;
        l->x_min = fmin(l->x_min, s), l->x_max = fmax(l->x_max, s);
        if (soft_ok(soft[i])) lo = fmin(lo, log10(soft[i])), hi = fmax(hi, log10(soft[i]));
        if (hard && hard_ok(hard[i])) {
            worst = fmax(worst, hard[i]);
            if (hard[i] < best) best = hard[i], l->best = i;
        }
    }
    if (l->best >= 0) l->marked = 1, l->mark_step = step_at(steps, l->best), l->mark_hard = hard[l->best];
    if (hard && mark && isfinite(mark->step) && hard_ok(mark->hard)) {
        l->marked = l->written = 1, l->mark_step = mark->step, l->mark_hard = mark->hard;
        l->x_min = fmin(l->x_min, mark->step), l->x_max = fmax(l->x_max, mark->step);
    }
    if (l->x_min > l->x_max) l->x_min = 0.0, l->x_max = 1.0;
    if (l->x_max == l->x_min) l->x_max = l->x_min + 1.0;
    if (lo > hi) lo = -1.0, hi = 1.0; /* nothing to plot */
    l->soft_lo = (int)floor(fmax(lo, -300.0)), l->soft_hi = (int)ceil(fmin(hi, 300.0));
    if (l->soft_hi == l->soft_lo) l->soft_hi++;
    l->hard_decades = worst > 1.0 ? (int)ceil(log10(fmin(worst, 1e300))) : 0;
}

/* Columns of the widest y label of either panel. */
static int widest_y_label(const image_plot_layout *l, int with_hard)
{
    char label[24];
    int widest = 0;
    for (int d = l->soft_lo; d <= l->soft_hi; d++) {
        decade_label(label, sizeof label, d);
        int w = image_font_width(label, l->font);
        widest = w > widest ? w : widest;
    }
    for (int d = 0; with_hard && d <= l->hard_decades + 1; d++) {
        hard_label(label, sizeof label, d);
        int w = image_font_width(label, l->font);
        widest = w > widest ? w : widest;
    }
    return widest;
}

int image_plot_layout_of(image_plot_layout *l, const double *steps, const double *soft, const double *hard, int count,
                         int width, int height, const image_plot_mark *mark)
{
    memset(l, 0, sizeof *l);
    if (!soft) return err_set(DLCA_ERR, "image_write_loss_curve: NULL soft losses");
    if (count < 1) return err_set(DLCA_ERR, "no losses to plot");
    if (width < IMAGE_PLOT_MIN_WIDTH || height < IMAGE_PLOT_MIN_HEIGHT || width > 100000 || height > 100000)
        return err_set(DLCA_ERR, "a %dx%d plot is not drawable (at least %dx%d)", width, height, IMAGE_PLOT_MIN_WIDTH,
                       IMAGE_PLOT_MIN_HEIGHT);
    l->width = width, l->height = height;
    l->font = width >= 480 && height >= 300 ? 2 : 1;
    find_ranges(l, steps, soft, hard, count, mark);
    int f = l->font, line = (IMAGE_FONT_HEIGHT + 4) * f;
    l->pad = 3 * f;
    l->left = widest_y_label(l, hard != NULL) + 4 * f + 2;
    l->right = width - 1 - 6 * f;
    int bottom = height - 1 - line - 2 * f; /* the step labels below the lower panel */
    l->soft_top = line;
    if (!hard) {
        l->soft_bottom = bottom;
        return DLCA_OK;
    }
    int panel = (bottom - 2 * line) / 2; /* two panels, the hard one's title between them */
    l->soft_bottom = l->soft_top + panel;
    l->hard_top = l->soft_bottom + line;
    l->hard_bottom = bottom;
    return DLCA_OK;
}

int image_plot_x(const image_plot_layout *l, double step)
{
    double t = (step - l->x_min) / (l->x_max - l->x_min);
    return l->left + l->pad + (int)lround(t * (l->right - l->left - 2 * l->pad));
}

int image_plot_soft_y(const image_plot_layout *l, double soft)
{
    double t = (log10(soft) - l->soft_lo) / (l->soft_hi - l->soft_lo);
    return l->soft_bottom - l->pad - (int)lround(t * (l->soft_bottom - l->soft_top - 2 * l->pad));
}

int image_plot_hard_y(const image_plot_layout *l, double hard)
{
    double t = symlog(hard) / (1.0 + l->hard_decades);
    return l->hard_bottom - l->pad - (int)lround(t * (l->hard_bottom - l->hard_top - 2 * l->pad));
}

/* ---------------------------------------------------------------- drawing ---- */

/* A tick at row y: a grid line, a mark, and its label when that is a text line above the last. */
static void y_tick(canvas *c, const image_plot_layout *l, int y, const char *label, int *last_label)
{
    int f = l->font;
    fill_rect(c, l->left + 1, y, l->right - l->left - 1, 1, grid_grey);
    fill_rect(c, l->left - 2 * f, y, 2 * f, 1, frame_grey);
    if (*last_label - y < (IMAGE_FONT_HEIGHT + 2) * f) return;
    draw_text(c, l->left - 3 * f - image_font_width(label, f), y - IMAGE_FONT_HEIGHT * f / 2, label, f, image_plot_ink);
    *last_label = y;
}

static void draw_y_axes(canvas *c, const image_plot_layout *l)
{
    char label[24];
    int last = 1 << 30;
    for (int d = l->soft_lo; d <= l->soft_hi; d++) {
        decade_label(label, sizeof label, d);
        y_tick(c, l, image_plot_soft_y(l, pow(10.0, d)), label, &last);
    }
    if (!l->hard_bottom) return;
    last = 1 << 30;
    for (int d = 0; d <= l->hard_decades + 1; d++) {
        hard_label(label, sizeof label, d);
        y_tick(c, l, image_plot_hard_y(l, d == 0 ? 0.0 : pow(10.0, d - 1)), label, &last);
    }
}

/* Round ticks along the step axis: grid lines in both panels, and under the lower one labels that
 * do not run into each other, then "step" at the right end (labels give way to it). */
static void draw_x_axis(canvas *c, const image_plot_layout *l)
{
    int f = l->font, gap = IMAGE_FONT_ADVANCE * f, bottom = l->hard_bottom ? l->hard_bottom : l->soft_bottom;
    int y = bottom + 3 * f, step_w = image_font_width("step", f), limit = c->w - 1 - step_w - 2 * gap;
    char label[32];
    step_label(label, sizeof label, fabs(l->x_max) > fabs(l->x_min) ? l->x_max : l->x_min);
    int room = image_font_width(label, f) + 3 * gap;
    double ticks[IMAGE_PLOT_MAX_TICKS];
    int n = image_plot_ticks(l->x_min, l->x_max, (l->right - l->left) / room, ticks), last_end = -(1 << 30);
    for (int i = 0; i < n; i++) {
        int x = image_plot_x(l, ticks[i]);
        fill_rect(c, x, l->soft_top + 1, 1, l->soft_bottom - l->soft_top - 1, grid_grey);
        if (l->hard_bottom) fill_rect(c, x, l->hard_top + 1, 1, l->hard_bottom - l->hard_top - 1, grid_grey);
        fill_rect(c, x, bottom, 1, 2 * f + 1, frame_grey);
        step_label(label, sizeof label, ticks[i]);
        int w = image_font_width(label, f), left = x - w / 2;
        if (left < 0) left = 0;
        if (left < last_end + gap || left + w > limit) continue;
        draw_text(c, left, y, label, f, image_plot_ink);
        last_end = left + w;
    }
    draw_text(c, c->w - 1 - step_w, y, "step", f, image_plot_ink);
}

/* Joins consecutive drawable points; one that is not (NaN, infinite, out of the scale) breaks the line. */
static void draw_curve(canvas *c, const image_plot_layout *l, const double *steps, const double *loss, int count,
                       int hard, const unsigned char colour[3])
{
    int have_prev = 0, px = 0, py = 0;
    for (int i = 0; i < count; i++) {
        double s = step_at(steps, i);
        if (!isfinite(s) || !(hard ? hard_ok(loss[i]) : soft_ok(loss[i]))) {
            have_prev = 0;
            continue;
        }
        int x = image_plot_x(l, s), y = hard ? image_plot_hard_y(l, loss[i]) : image_plot_soft_y(l, loss[i]);
        draw_line(c, have_prev ? px : x, have_prev ? py : y, x, y, l->font, colour);
        have_prev = 1, px = x, py = y;
    }
}

/* The title of a panel in its curve's colour: the first of `names` (longest first, NULL-ended)
 * that fits `room`, else the last. */
static void draw_title(canvas *c, const image_plot_layout *l, int top, const char *const *names,
                       const unsigned char colour[3], int room)
{
    int f = l->font, y = top - (IMAGE_FONT_HEIGHT + 2) * f;
    const char *name = names[0];
    for (int i = 0; names[i] && image_font_width(name, f) > room; i++) name = names[i];
    draw_text(c, l->left, y, name, f, colour);
}

/* A dashed line across both panels at the marked step, and "written N at step S" (the caller's
 * mark) or "best N at step S" at the right of the hard panel's title row where it fits (else
 * without "at step S"). */
static void draw_mark(canvas *c, const image_plot_layout *l, int *room)
{
    *room = l->right - l->left;
    if (!l->marked || !l->hard_bottom) return;
    int f = l->font, x = image_plot_x(l, l->mark_step);
    for (int y = l->soft_top + 1; y < l->hard_bottom; y++)
        if ((y / (2 * f)) % 2 == 0 && (y < l->soft_bottom || y > l->hard_top)) fill_rect(c, x, y, 1, 1, image_best_colour);
    char value[32], at[32], text[96];
    const char *what = l->written ? "written" : "best";
    step_label(value, sizeof value, l->mark_hard);
    step_label(at, sizeof at, l->mark_step);
    snprintf(text, sizeof text, "%s %s at step %s", what, value, at);
    if (image_font_width(text, f) > (l->right - l->left) / 2) snprintf(text, sizeof text, "%s %s", what, value);
    int w = image_font_width(text, f);
    draw_text(c, l->right - w, l->hard_top - (IMAGE_FONT_HEIGHT + 2) * f, text, f, image_best_colour);
    *room = l->right - l->left - w - IMAGE_FONT_ADVANCE * f;
}

int image_write_loss_curve(const char *path, const double *steps, const double *soft, const double *hard, int count,
                           int width, int height, const image_plot_mark *mark)
{
    image_plot_layout l;
    if (!path) return err_set(DLCA_ERR, "image_write_loss_curve: NULL path");
    if (image_plot_layout_of(&l, steps, soft, hard, count, width, height, mark)) {
        char why[256];
        snprintf(why, sizeof why, "%s", err_message());
        return err_set(DLCA_ERR, "%s: %s", path, why);
    }
    canvas c = {malloc((size_t)width * (size_t)height * 3), width, height};
    if (!c.rgb) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for a %dx%d plot", path, width, height);
    memset(c.rgb, 255, (size_t)width * (size_t)height * 3);
    static const char *const soft_names[] = {"soft loss (log scale)", "soft loss", "soft", NULL};
    static const char *const hard_names[] = {"hard loss: wrong cell bits", "hard loss", "hard", NULL};
    draw_y_axes(&c, &l);
    draw_x_axis(&c, &l);
    int room;
    draw_mark(&c, &l, &room);
    frame_rect(&c, l.left, l.soft_top, l.right, l.soft_bottom, frame_grey);
    draw_title(&c, &l, l.soft_top, soft_names, image_soft_colour, l.right - l.left);
    if (hard) {
        frame_rect(&c, l.left, l.hard_top, l.right, l.hard_bottom, frame_grey);
        draw_title(&c, &l, l.hard_top, hard_names, image_hard_colour, room);
        draw_curve(&c, &l, steps, hard, count, 1, image_hard_colour);
    }
    draw_curve(&c, &l, steps, soft, count, 0, image_soft_colour);
    int status = image_write_rgb(path, c.rgb, width, height);
    free(c.rgb);
    return status;
}
