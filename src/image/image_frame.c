/* image_frame.c: frames, strips and animations of rollouts (image_png.h's strip functions and
 * image_frame.h). Every picture is checked against the output limits before its pixels are
 * allocated: the side limit alone once let --grid 1024x1024 --scale 64 ask for 25 GB. */
#include "image_frame.h"

#include "error.h"
#include "image_font.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The label band's rule is a grey of both GIF palettes (a level of the colour cube), so that it
 * comes out exact in every animation. */
enum { STRIP_SEPARATOR_GREY = 128, LABEL_RULE_GREY = 102, LABEL_PAD = 2 };

const unsigned char image_label_background[3] = {0, 0, 0};
const unsigned char image_label_ink[3] = {255, 255, 255};

static unsigned char to_byte(double v)
{
    if (!(v > 0.0)) return 0; /* also NaN */
    if (v >= 1.0) return 255;
    return (unsigned char)(v * 255.0 + 0.5);
}

/* Colour of one cell of grid [channels][cells]. */
static void cell_colour(unsigned char rgb[3], const double *grid, size_t cells, size_t cell, image_view view)
{
    for (int c = 0; c < 3; c++) rgb[c] = to_byte(grid[(view == IMAGE_RGB ? (size_t)c : 0) * cells + cell]);
}

int image_label_size(int frame_width) { return frame_width >= IMAGE_LABEL_WIDE ? 2 : 1; }

int image_label_height(int frame_width) { return (IMAGE_FONT_HEIGHT + 2 * LABEL_PAD) * image_label_size(frame_width); }

void image_label_text(char *text, size_t size, long long step, int frame_width)
{
    int font = image_label_size(frame_width), room = frame_width - 2 * LABEL_PAD * font;
    snprintf(text, size, "step %lld", step);
    if (image_font_width(text, font) <= room) return;
    snprintf(text, size, "%lld", step);
    if (image_font_width(text, font) <= room) return;
    if (size) text[0] = '\0';
}

/* The band's last row is a grey rule, so that it stands apart from a black grid below it. */
void image_draw_label(unsigned char *rgb, int width, int height, int x, int frame_width, long long step)
{
    int font = image_label_size(frame_width), band = image_label_height(frame_width);
    static const unsigned char rule[3] = {LABEL_RULE_GREY, LABEL_RULE_GREY, LABEL_RULE_GREY};
    for (int y = 0; y < band && y < height; y++)
        for (int i = x; i < x + frame_width && i < width; i++)
            if (i >= 0) memcpy(rgb + ((size_t)y * (size_t)width + (size_t)i) * 3, y == band - 1 ? rule : image_label_background, 3);
    char text[32];
    image_label_text(text, sizeof text, step, frame_width);
    image_font_draw(rgb, width, height < band ? height : band, x + LABEL_PAD * font, LABEL_PAD * font, text, font,
                    image_label_ink);
}

void image_draw_grid(unsigned char *rgb, int width, int x, int y, const double *grid, int channels, ca_shape shape,
                     int sample, int scale, image_view view)
{
    (void)channels;
    size_t cells = ca_shape_cells(shape), side = (size_t)shape.width * (size_t)scale;
    for (size_t py = 0; py < (size_t)shape.height * (size_t)scale; py++) {
        unsigned char *row = rgb + (((size_t)y + py) * (size_t)width + (size_t)x) * 3;
        size_t first = ((size_t)sample * (size_t)shape.height + py / (size_t)scale) * (size_t)shape.width;
        for (size_t px = 0; px < side; px++) cell_colour(row + px * 3, grid, cells, first + px / (size_t)scale, view);
    }
}

static int check_strip_args(const char *path, const double *frames, int count, int channels, ca_shape s, int sample,
                            int scale, image_view view)
{
    if (!path || !frames) return err_set(DLCA_ERR, "image_write_strip: NULL path or frames");
    if (count < 1 || channels < 1 || scale < 1)
        return err_set(DLCA_ERR, "%s: need count, channels and scale >= 1 (got %d, %d, %d)", path, count, channels,
                       scale);
    if (s.batch < 1 || s.height < 1 || s.width < 1)
        return err_set(DLCA_ERR, "%s: bad grid shape %dx%dx%d", path, s.batch, s.height, s.width);
    if (sample < 0 || sample >= s.batch)
        return err_set(DLCA_ERR, "%s: sample %d is outside the batch of %d", path, sample, s.batch);
    if (view != IMAGE_CHANNEL0 && view != IMAGE_RGB) return err_set(DLCA_ERR, "%s: unknown view %d", path, (int)view);
    if (view == IMAGE_RGB && channels < 3)
        return err_set(DLCA_ERR, "%s: the RGB view needs 3 channels, the grid has %d", path, channels);
    return DLCA_OK;
}

/* Sides of a strip in pixels, as doubles so that no product overflows before the check. */
static void strip_size(int count, ca_shape shape, int scale, int labelled, double *width, double *height)
{
    double frame_width = (double)shape.width * scale;
    *width = count * frame_width + count - 1;
    *height = (double)shape.height * scale;
    if (labelled) *height += image_label_height(frame_width > IMAGE_LABEL_WIDE ? IMAGE_LABEL_WIDE : (int)frame_width);
}

int image_strip_check(const char *path, int count, ca_shape shape, int scale, int labelled, double *bytes)
{
    double width, height;
    strip_size(count, shape, scale, labelled, &width, &height);
    if (bytes) *bytes = width * height * 3.0;
    if (width > IMAGE_MAX_SIDE || height > IMAGE_MAX_SIDE || width * height > IMAGE_MAX_PIXELS)
        return err_set(DLCA_ERR, "%s: a %s of %.0fx%.0f pixels is too large (at most %d pixels a side and %d in all): "
                       "use a smaller --scale, --grid or fewer frames", path, count > 1 ? "strip" : "frame", width,
                       height, IMAGE_MAX_SIDE, IMAGE_MAX_PIXELS);
    return DLCA_OK;
}

int image_write_strip_labelled(const char *path, const double *frames, int count, int channels, ca_shape shape,
                               int sample, int scale, image_view view, const long long *steps)
{
    if (check_strip_args(path, frames, count, channels, shape, sample, scale, view) ||
        image_strip_check(path, count, shape, scale, steps != NULL, NULL))
        return DLCA_ERR;
    double w, h;
    strip_size(count, shape, scale, steps != NULL, &w, &h);
    int width = (int)w, height = (int)h, frame_width = shape.width * scale;
    int band = steps ? image_label_height(frame_width) : 0;
    unsigned char *rgb = malloc((size_t)width * (size_t)height * 3);
    if (!rgb) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for a %dx%d strip", path, width, height);
    memset(rgb, STRIP_SEPARATOR_GREY, (size_t)width * (size_t)height * 3);
    size_t frame_size = (size_t)channels * ca_shape_cells(shape);
    for (int f = 0; f < count; f++) {
        int left = f * (frame_width + 1);
        if (steps) image_draw_label(rgb, width, height, left, frame_width, steps[f]);
        image_draw_grid(rgb, width, left, band, frames + (size_t)f * frame_size, channels, shape, sample, scale, view);
    }
    int status = image_write_rgb(path, rgb, width, height);
    free(rgb);
    return status;
}

int image_write_strip(const char *path, const double *frames, int count, int channels, ca_shape shape, int sample,
                      int scale, image_view view)
{
    return image_write_strip_labelled(path, frames, count, channels, shape, sample, scale, view, NULL);
}

int image_write_frame(const char *path, const double *grid, int channels, ca_shape shape, int sample, int scale,
                      image_view view)
{
    return image_write_strip(path, grid, 1, channels, shape, sample, scale, view);
}

void image_gif_frame_size(ca_shape shape, int scale, long long *width, long long *height)
{
    long long w = (long long)shape.width * scale, h = (long long)shape.height * scale;
    *width = w;
    *height = h + image_label_height(w > IMAGE_LABEL_WIDE ? IMAGE_LABEL_WIDE : (int)w);
}

int image_write_gif(const char *path, const double *frames, int count, int channels, ca_shape shape, int sample,
                    int scale, image_view view, const long long *steps, int delay_cs)
{
    if (check_strip_args(path, frames, count, channels, shape, sample, scale, view)) return DLCA_ERR;
    if (!steps) return err_set(DLCA_ERR, "%s: a GIF's frames need their steps", path);
    long long w, h;
    image_gif_frame_size(shape, scale, &w, &h);
    if (image_gif_check(path, w, h)) return DLCA_ERR;
    int width = (int)w, height = (int)h;
    unsigned char *rgb = malloc((size_t)width * (size_t)height * 3);
    if (!rgb) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for a %dx%d frame", path, width, height);
    image_gif *gif = NULL;
    int rc = image_gif_open(&gif, path, width, height, delay_cs, view == IMAGE_RGB ? IMAGE_GIF_COLOUR : IMAGE_GIF_GREY);
    size_t frame_size = (size_t)channels * ca_shape_cells(shape);
    for (int f = 0; !rc && f < count; f++) {
        image_draw_label(rgb, width, height, 0, width, steps[f]);
        image_draw_grid(rgb, width, 0, image_label_height(width), frames + (size_t)f * frame_size, channels, shape,
                        sample, scale, view);
        rc = image_gif_add(gif, rgb);
    }
    if (!rc) rc = image_gif_close(&gif);
    image_gif_abort(&gif);
    free(rgb);
    return rc;
}
