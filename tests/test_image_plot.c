/* test_image_plot: the loss plot of a known training log, read back pixel by pixel against
 * image_plot.h's layout: the soft curve on its log scale, the hard loss on its symlog scale with
 * a hard loss of 0 on the panel's zero line (not at a floor above it) and 1 and 9 where they
 * belong, the best hard loss's step marked, round ticks with labels on both axes, titled
 * panels; the soft-only plot has one panel; sizes from the smallest allowed up, NaN points, and
 * refused sizes. */
#include "check.h"
#include "error.h"
#include "image_font.h"
#include "image_plot.h"

#include <png.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char scratch[256];

/* What `dlca train` logs: step,soft_loss,hard_loss,seconds. */
static const char *const csv = "step,soft_loss,hard_loss,seconds\n"
                               "100,40,120,0.1\n"
                               "200,8,35,0.2\n"
                               "300,1.5,9,0.3\n"
                               "400,0.2,2,0.4\n"
                               "500,0.03,0,0.5\n"
                               "600,0.01,1,0.6\n"
                               "700,0.004,0,0.7\n"
                               "800,0.002,0,0.8\n";
enum { ROWS = 8, W = 640, H = 400 };

typedef struct {
    int width, height;
    unsigned char *rgb;
} picture;

static picture read_png(const char *path)
{
    picture p = {0, 0, NULL};
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, path)) return p;
    image.format = PNG_FORMAT_RGB;
    p.rgb = malloc(PNG_IMAGE_SIZE(image));
    if (!p.rgb || !png_image_finish_read(&image, NULL, p.rgb, 0, NULL)) {
        png_image_free(&image);
        free(p.rgb);
        p.rgb = NULL;
        return p;
    }
    p.width = (int)image.width, p.height = (int)image.height;
    return p;
}

static const unsigned char *at(const picture *p, int x, int y)
{
    static const unsigned char outside[3] = {1, 2, 3};
    if (!p->rgb || x < 0 || y < 0 || x >= p->width || y >= p->height) return outside;
    return p->rgb + ((size_t)y * (size_t)p->width + (size_t)x) * 3;
}

static int is(const picture *p, int x, int y, const unsigned char colour[3]) { return memcmp(at(p, x, y), colour, 3) == 0; }

/* Pixels of `colour` in the box x0..x1, y0..y1. */
static int count_in(const picture *p, int x0, int y0, int x1, int y1, const unsigned char colour[3])
{
    int n = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) n += is(p, x, y, colour);
    return n;
}

static void test_ticks(void)
{
    double t[IMAGE_PLOT_MAX_TICKS];
    int n = image_plot_ticks(0, 3000, 7, t);
    CHECK(n == 7 && t[0] == 0 && t[1] == 500 && t[6] == 3000, "0..3000 in 7: every 500 (%d, %g, %g)", n, t[0], t[1]);
    n = image_plot_ticks(25, 3000, 10, t);
    CHECK(n == 6 && t[0] == 500 && t[5] == 3000, "25..3000 in 10: 500..3000 (%d, %g)", n, t[0]);
    n = image_plot_ticks(100, 800, 8, t);
    CHECK(n == 8 && t[0] == 100 && t[7] == 800, "100..800 in 8: every 100 (%d)", n);
    n = image_plot_ticks(0.001, 0.0042, 4, t);
    CHECK(n == 4 && fabs(t[3] - 0.004) < 1e-15, "0.001..0.0042 in 4: every 0.001 (%d, %g)", n, t[3]);
    n = image_plot_ticks(7, 7, 5, t);
    CHECK(n == 1 && t[0] == 7, "one step: one tick");
}

static void test_known_log(void)
{
    double steps[ROWS], soft[ROWS], hard[ROWS], seconds;
    const char *line = strchr(csv, '\n') + 1;
    int n = 0;
    for (; n < ROWS && sscanf(line, "%lf,%lf,%lf,%lf", &steps[n], &soft[n], &hard[n], &seconds) == 4; n++)
        line = strchr(line, '\n') + 1;
    CHECK(n == ROWS, "the CSV has %d rows", n);
    char path[512];
    snprintf(path, sizeof path, "%s/loss.png", scratch);
    CHECK(image_write_loss_curve(path, steps, soft, hard, n, W, H, NULL) == DLCA_OK, "plot: %s", err_message());
    image_plot_layout l;
    CHECK(image_plot_layout_of(&l, steps, soft, hard, n, W, H, NULL) == DLCA_OK, "layout: %s", err_message());
    picture p = read_png(path);
    CHECK(p.rgb && p.width == W && p.height == H, "a %dx%d PNG (%dx%d)", W, H, p.width, p.height);
    if (!p.rgb) return;
    CHECK(l.hard_top > l.soft_bottom && l.hard_bottom > l.hard_top, "two panels, soft above hard");
    /* 120 wrong bits at most: decades 0..3, so 0..1 is a quarter of the hard panel's data rows */
    int zero = image_plot_hard_y(&l, 0.0), one = image_plot_hard_y(&l, 1.0), rows = l.hard_bottom - l.hard_top - 2 * l.pad;
    CHECK(l.hard_decades == 3 && zero == l.hard_bottom - l.pad, "0 is the hard panel's zero line (%d, %d)", zero,
          l.hard_bottom - l.pad);
    CHECK(abs((zero - one) - rows / 4) <= 1, "1 is a quarter of the panel above 0: linear below 1 (%d of %d)", zero - one, rows);
    for (int i = 0; i < n; i++) {
        int x = image_plot_x(&l, steps[i]);
        CHECK(is(&p, x, image_plot_hard_y(&l, hard[i]), image_hard_colour), "hard %g at step %g is drawn there", hard[i], steps[i]);
        CHECK(is(&p, x, image_plot_soft_y(&l, soft[i]), image_soft_colour), "soft %g at step %g is drawn there", soft[i], steps[i]);
        if (hard[i] == 0.0) CHECK(is(&p, x, zero, image_hard_colour), "hard 0 at step %g sits on the zero line", steps[i]);
    }
    /* nothing orange between the zero line and 1 at step 500, where the loss is 0: no floor */
    int x500 = image_plot_x(&l, 500);
    CHECK(count_in(&p, x500, one + 3, x500, zero - 3, image_hard_colour) == 0, "no hard curve between 1 and 0 at step 500");
    /* the best hard loss, 0, first at step 500 (index 4): a dashed line in both panels and its label */
    CHECK(l.best == 4, "the best hard loss is row 4 (%d)", l.best);
    CHECK(count_in(&p, x500, l.soft_top + 1, x500, l.soft_bottom - 1, image_best_colour) > (l.soft_bottom - l.soft_top) / 4,
          "the best step is marked across the soft panel");
    int title = l.hard_top - (IMAGE_FONT_HEIGHT + 2) * l.font;
    CHECK(count_in(&p, l.left, title, l.right, l.hard_top - 1, image_best_colour) > 20, "'best 0 at step 500' is written");
    CHECK(count_in(&p, l.left, title, l.right, l.hard_top - 1, image_hard_colour) > 20, "the hard panel's title");
    CHECK(count_in(&p, l.left, 0, l.right, l.soft_top - 1, image_soft_colour) > 20, "the soft panel's title");
    /* round step ticks every 100 with labels under the lower panel, and the word "step" */
    for (int s = 100; s <= 800; s += 100) {
        int x = image_plot_x(&l, s);
        CHECK(memcmp(at(&p, x, l.hard_bottom + 1), "\xff\xff\xff", 3) != 0, "a tick mark at step %d", s);
        CHECK(count_in(&p, x - 20, l.hard_bottom + 2, x + 20, H - 1, image_plot_ink) > 5, "a label under step %d", s);
    }
    int step_w = image_font_width("step", l.font);
    CHECK(count_in(&p, W - 1 - step_w, l.hard_bottom + 2, W - 1, H - 1, image_plot_ink) > 10, "the axis says step");
    /* y labels left of the frame at 0, 1, 10, 100 (hard) and at the decades of the soft panel */
    for (int d = 0; d <= 3; d++) {
        int y = d == 0 ? zero : image_plot_hard_y(&l, pow(10.0, d - 1));
        CHECK(count_in(&p, 0, y - 8, l.left - 2, y + 8, image_plot_ink) > 5, "a hard label at tick %d", d);
    }
    for (int d = l.soft_lo; d <= l.soft_hi; d++) {
        int y = image_plot_soft_y(&l, pow(10.0, d));
        CHECK(count_in(&p, 0, y - 8, l.left - 2, y + 8, image_plot_ink) > 5, "a soft label at 1e%d", d);
    }
    free(p.rgb);
    unlink(path);
}

/* A mark names the circuit written, which need not be a logged row: the dashed line stands at
 * its step (not at the best row's), says "written", and the step axis reaches it. */
static void test_written_mark(void)
{
    enum { N = 8 };
    double steps[N], soft[N], hard[N];
    for (int i = 0; i < N; i++) steps[i] = 100.0 * (i + 1), soft[i] = 10.0 / (i + 1), hard[i] = i == 5 ? 0.0 : 40.0 - i;
    char path[512];
    snprintf(path, sizeof path, "%s/mark.png", scratch);
    image_plot_mark mark = {450.0, 3.0};
    image_plot_layout l;
    CHECK(image_write_loss_curve(path, steps, soft, hard, N, W, H, &mark) == DLCA_OK, "marked plot: %s", err_message());
    CHECK(image_plot_layout_of(&l, steps, soft, hard, N, W, H, &mark) == DLCA_OK && l.marked && l.written &&
              l.mark_step == 450.0 && l.mark_hard == 3.0 && l.best == 5,
          "the layout marks the written circuit (step %g, hard %g), the best row is still 5 (%d)", l.mark_step,
          l.mark_hard, l.best);
    picture p = read_png(path);
    if (p.rgb) {
        int x = image_plot_x(&l, 450.0), best = image_plot_x(&l, 600.0), quarter = (l.soft_bottom - l.soft_top) / 4;
        CHECK(count_in(&p, x, l.soft_top + 1, x, l.soft_bottom - 1, image_best_colour) > quarter,
              "the dashed line stands at step 450");
        CHECK(count_in(&p, best, l.soft_top + 1, best, l.soft_bottom - 1, image_best_colour) == 0,
              "and not at the best row's step 600");
        free(p.rgb);
    }
    image_plot_mark late = {950.0, 1.0};
    CHECK(image_plot_layout_of(&l, steps, soft, hard, N, W, H, &late) == DLCA_OK && l.x_max >= 950.0 &&
              image_plot_x(&l, 950.0) <= l.right,
          "a mark past the last row widens the step axis (x_max %g)", l.x_max);
    CHECK(image_plot_layout_of(&l, steps, soft, hard, N, W, H, NULL) == DLCA_OK && l.marked && !l.written &&
              l.mark_step == 600.0 && l.mark_hard == 0.0,
          "without a mark the best row is marked (step %g)", l.mark_step);
    unlink(path);
}

/* Soft only: one panel down to the step labels; every size from the smallest; NaN gaps. */
static void test_other_plots(void)
{
    enum { N = 300 };
    double steps[N], soft[N], hard[N], one = 0.5, nan_loss = NAN;
    for (int i = 0; i < N; i++) {
        steps[i] = 10.0 * i;
        soft[i] = 20.0 * exp(-i / 25.0);
        hard[i] = i < 150 ? 40.0 * exp(-i / 30.0) : 0.0;
    }
    soft[77] = NAN, hard[12] = INFINITY;
    image_plot_layout l;
    CHECK(image_plot_layout_of(&l, steps, soft, NULL, N, W, H, NULL) == DLCA_OK && l.hard_bottom == 0 &&
              l.soft_bottom > H * 3 / 4,
          "without hard losses the soft panel takes the height (%d)", l.soft_bottom);
    static const int sizes[][2] = {{W, H}, {IMAGE_PLOT_MIN_WIDTH, IMAGE_PLOT_MIN_HEIGHT}, {300, 200}, {1600, 900}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/loss_%d.png", scratch, sizes[k][0]);
        CHECK(image_write_loss_curve(path, steps, soft, hard, N, sizes[k][0], sizes[k][1], NULL) == DLCA_OK, "%dx%d: %s",
              sizes[k][0], sizes[k][1], err_message());
        picture p = read_png(path);
        CHECK(p.rgb && p.width == sizes[k][0] && p.height == sizes[k][1], "%dx%d read back", sizes[k][0], sizes[k][1]);
        CHECK(count_in(&p, 0, 0, p.width - 1, p.height - 1, image_soft_colour) > p.width / 4 &&
                  count_in(&p, 0, 0, p.width - 1, p.height - 1, image_hard_colour) > p.width / 4,
              "%dx%d: both curves drawn", sizes[k][0], sizes[k][1]);
        free(p.rgb);
        unlink(path);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/x.png", scratch);
    CHECK(image_write_loss_curve(path, NULL, &one, NULL, 1, 200, 100, NULL) == DLCA_OK, "one point: %s", err_message());
    CHECK(image_write_loss_curve(path, NULL, &nan_loss, &nan_loss, 1, 200, 100, NULL) == DLCA_OK, "NaN only: %s", err_message());
    unlink(path);
    CHECK(image_write_loss_curve(path, NULL, &one, NULL, 1, 60, 40, NULL) != DLCA_OK, "a 60x40 plot is refused");
    CHECK(strstr(err_message(), "x.png") != NULL, "naming the file: %s", err_message());
    CHECK(image_write_loss_curve(path, NULL, &one, NULL, 0, 200, 100, NULL) != DLCA_OK, "an empty plot is refused");
}

int main(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/dlca_plot_XXXXXX");
    if (!mkdtemp(scratch)) return perror("mkdtemp"), 1;
    test_ticks();
    test_known_log();
    test_written_mark();
    test_other_plots();
    CHECK(rmdir(scratch) == 0 || getenv("DLCA_TEST_KEEP"), "%s is empty at the end", scratch);
    return test_finish("test_image_plot");
}
