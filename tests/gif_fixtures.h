/* gif_fixtures.h: reading back the GIFs dlca writes, for tests: giflib decodes them (the
 * library dlca encodes with, but its decoder, which dlca never calls), frames become RGB, and a
 * frame's label band is compared with the one image_frame.h draws for a step. Header-only. */
#ifndef DLCA_GIF_FIXTURES_H
#define DLCA_GIF_FIXTURES_H

#include "image_frame.h"

#include <gif_lib.h>
#include <stdlib.h>
#include <string.h>

/* The whole file decoded, or NULL (then *why says why). Free with DGifCloseFile. */
static inline GifFileType *gif_read(const char *path, const char **why)
{
    int error = 0;
    GifFileType *gif = DGifOpenFileName(path, &error);
    *why = "";
    if (!gif) return *why = GifErrorString(error), NULL;
    if (DGifSlurp(gif) != GIF_OK) {
        *why = GifErrorString(gif->Error);
        DGifCloseFile(gif, &error);
        return NULL;
    }
    return gif;
}

/* Frame `i` as RGB [SHeight][SWidth][3] (malloc'ed), for full-screen frames as dlca writes them. */
static inline unsigned char *gif_frame_rgb(const GifFileType *gif, int i)
{
    const SavedImage *frame = &gif->SavedImages[i];
    const ColorMapObject *map = frame->ImageDesc.ColorMap ? frame->ImageDesc.ColorMap : gif->SColorMap;
    size_t pixels = (size_t)gif->SWidth * (size_t)gif->SHeight;
    if (!map || frame->ImageDesc.Width != gif->SWidth || frame->ImageDesc.Height != gif->SHeight) return NULL;
    unsigned char *rgb = malloc(pixels * 3);
    for (size_t p = 0; rgb && p < pixels; p++) {
        const GifColorType *c = &map->Colors[frame->RasterBits[p]];
        rgb[p * 3] = c->Red, rgb[p * 3 + 1] = c->Green, rgb[p * 3 + 2] = c->Blue;
    }
    return rgb;
}

/* Does the band of rgb [..][width][3] at columns x..x+frame_width-1 show the label of `step`? */
static inline int gif_label_matches(const unsigned char *rgb, int width, int x, int frame_width, long long step)
{
    int band = image_label_height(frame_width);
    unsigned char *want = malloc((size_t)frame_width * (size_t)band * 3);
    if (!want || !rgb) return free(want), 0;
    image_draw_label(want, frame_width, band, 0, frame_width, step);
    int same = 1;
    for (int y = 0; same && y < band; y++)
        same = memcmp(rgb + ((size_t)y * (size_t)width + (size_t)x) * 3, want + (size_t)y * (size_t)frame_width * 3,
                      (size_t)frame_width * 3) == 0;
    free(want);
    return same;
}

#endif
