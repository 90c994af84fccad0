/* view_image.c: grids as pictures (see view_image.h). */
#include "view_image.h"

#include "error.h"
#include "image_png.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[VIEW_KIND_COUNT] = {"grey", "rgb", "mosaic"};
_Static_assert(VIEW_KIND_COUNT == 3, "one name per view");

const unsigned char view_gap_rgb[3] = {48, 80, 140};

const char *view_kind_name(view_kind kind) { return kind >= 0 && kind < VIEW_KIND_COUNT ? kind_names[kind] : "?"; }

static int kind_fits(view_kind kind, int channels)
{
    return kind == VIEW_GREY || (kind == VIEW_RGB && channels >= 3) || (kind == VIEW_MOSAIC && channels >= 2);
}

view_kind view_kind_next(view_kind kind, int channels)
{
    do kind = (view_kind)((kind + 1) % VIEW_KIND_COUNT);
    while (!kind_fits(kind, channels));
    return kind;
}

void view_mosaic_layout(int channels, int *columns, int *rows)
{
    int c = 1;
    while (c * c < channels) c++;
    *columns = c;
    *rows = (channels + c - 1) / c;
}

void view_image_size(view_kind kind, int channels, int height, int width, int *out_width, int *out_height)
{
    int columns = 1, rows = 1;
    if (kind == VIEW_MOSAIC) view_mosaic_layout(channels, &columns, &rows);
    *out_width = columns * width + columns - 1;
    *out_height = rows * height + rows - 1;
}

/* image_png's byte for a value: clamped to [0, 1], NaN as 0. */
static unsigned char to_byte(double v)
{
    if (!(v > 0.0)) return 0;
    if (v >= 1.0) return 255;
    return (unsigned char)(v * 255.0 + 0.5);
}

/* One channel as grey into the tile whose top-left pixel is (left, top). */
static void render_tile(unsigned char *rgb, int stride, const double *plane, ca_shape s, int left, int top)
{
    for (int y = 0; y < s.height; y++)
        for (int x = 0; x < s.width; x++) {
            unsigned char *p = rgb + ((size_t)(top + y) * (size_t)stride + (size_t)(left + x)) * 3;
            p[0] = p[1] = p[2] = to_byte(plane[(size_t)y * (size_t)s.width + (size_t)x]);
        }
}

void view_image_render(unsigned char *rgb, const double *grid, int channels, ca_shape shape, view_kind kind)
{
    size_t cells = ca_shape_cells(shape), plane = (size_t)shape.height * (size_t)shape.width;
    int width, height;
    view_image_size(kind, channels, shape.height, shape.width, &width, &height);
    if (kind == VIEW_RGB) {
        for (size_t i = 0; i < plane; i++)
            for (int c = 0; c < 3; c++) rgb[i * 3 + (size_t)c] = to_byte(grid[(size_t)c * cells + i]);
        return;
    }
    if (kind == VIEW_GREY) {
        render_tile(rgb, width, grid, shape, 0, 0);
        return;
    }
    int columns, rows;
    view_mosaic_layout(channels, &columns, &rows);
    for (size_t i = 0; i < (size_t)width * (size_t)height; i++) memcpy(rgb + i * 3, view_gap_rgb, 3);
    for (int c = 0; c < channels; c++)
        render_tile(rgb, width, grid + (size_t)c * cells, shape, (c % columns) * (shape.width + 1),
                    (c / columns) * (shape.height + 1));
}

int view_image_cell(view_kind kind, int channels, ca_shape shape, int px, int py, int *x, int *y)
{
    int width, height;
    view_image_size(kind, channels, shape.height, shape.width, &width, &height);
    if (px < 0 || py < 0 || px >= width || py >= height) return 0;
    int tile_x = px / (shape.width + 1), tile_y = py / (shape.height + 1), columns = 1, rows = 1;
    if (kind == VIEW_MOSAIC) view_mosaic_layout(channels, &columns, &rows);
    *x = px % (shape.width + 1), *y = py % (shape.height + 1);
    return *x < shape.width && *y < shape.height && tile_y * columns + tile_x < (kind == VIEW_MOSAIC ? channels : 1);
}

int view_image_write(const char *path, const unsigned char *rgb, int width, int height, int scale)
{
    if (scale < 1 || (long long)width * scale > 65535 || (long long)height * scale > 65535)
        return err_set(DLCA_ERR, "%s: a %dx%d picture at scale %d is too large", path, width, height, scale);
    size_t out_width = (size_t)width * (size_t)scale, out_height = (size_t)height * (size_t)scale;
    unsigned char *big = malloc(out_width * out_height * 3);
    if (!big) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for a %zux%zu picture", path, out_width, out_height);
    for (size_t py = 0; py < out_height; py++)
        for (size_t px = 0; px < out_width; px++)
            memcpy(big + (py * out_width + px) * 3, rgb + ((py / (size_t)scale) * (size_t)width + px / (size_t)scale) * 3, 3);
    int rc = image_write_rgb(path, big, (int)out_width, (int)out_height);
    free(big);
    return rc;
}
