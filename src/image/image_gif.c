/* image_gif.c: animated GIFs through giflib (image_gif.h). giflib writes through our output
 * function into the atomic temp file; each frame is mapped to a fixed palette, held back until
 * the next one arrives (so the last can be given its longer delay), then LZW-encoded by giflib. */
#include "image_gif.h"

#include "atomic_file.h"
#include "error.h"

#include <gif_lib.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PALETTE_SIZE = 256, CUBE_LEVELS = 6, CUBE_STEP = 51, EXTRA_GREYS = 40 };

struct image_gif {
    atomic_file file;
    GifFileType *gif;
    const char *path;
    int width, height, delay_cs, frames;
    image_gif_palette palette;
    unsigned char grey_index[256]; /* palette index of each grey level */
    unsigned char *pending;        /* [height][width] palette indices of the frame not yet written */
    int has_pending;
    int write_failed;              /* the output function failed: its message is in `why` */
    char why[300];
};

/* The colour palette's greys past the cube's six: 4, 10, ..., 238 (6i + 4 is never a multiple of
 * 51, so none repeats a cube grey). */
static int extra_grey(int i) { return 6 * i + 4; }

static void palette_colours(image_gif_palette palette, GifColorType *colours)
{
    for (int i = 0; i < PALETTE_SIZE; i++) {
        int r, g, b;
        if (palette == IMAGE_GIF_GREY) r = g = b = i;
        else if (i < CUBE_LEVELS * CUBE_LEVELS * CUBE_LEVELS)
            r = i / 36 * CUBE_STEP, g = i / 6 % 6 * CUBE_STEP, b = i % 6 * CUBE_STEP;
        else r = g = b = extra_grey(i - CUBE_LEVELS * CUBE_LEVELS * CUBE_LEVELS);
        colours[i].Red = (GifByteType)r, colours[i].Green = (GifByteType)g, colours[i].Blue = (GifByteType)b;
    }
}

/* For every grey level, the palette's nearest grey. */
static void build_grey_index(image_gif *g)
{
    GifColorType colours[PALETTE_SIZE];
    palette_colours(g->palette, colours);
    for (int level = 0; level < 256; level++) {
        int best = 0, best_distance = 1 << 20;
        for (int i = 0; i < PALETTE_SIZE; i++) {
            if (colours[i].Red != colours[i].Green || colours[i].Green != colours[i].Blue) continue;
            int d = abs((int)colours[i].Red - level);
            if (d < best_distance) best = i, best_distance = d;
        }
        g->grey_index[level] = (unsigned char)best;
    }
}

static unsigned char colour_index(const image_gif *g, const unsigned char *p)
{
    if (p[0] == p[1] && p[1] == p[2]) return g->grey_index[p[0]];
    if (g->palette == IMAGE_GIF_GREY) return g->grey_index[(p[0] * 299 + p[1] * 587 + p[2] * 114 + 500) / 1000];
    int r = (p[0] + CUBE_STEP / 2) / CUBE_STEP, gr = (p[1] + CUBE_STEP / 2) / CUBE_STEP, b = (p[2] + CUBE_STEP / 2) / CUBE_STEP;
    return (unsigned char)(r * 36 + gr * 6 + b);
}

/* giflib's output function: every byte goes to the temp file. */
static int put_bytes(GifFileType *file, const GifByteType *data, int size)
{
    image_gif *g = file->UserData;
    if (g->write_failed) return 0;
    if (atomic_file_write_all(&g->file, data, (size_t)size) != DLCA_OK) {
        g->write_failed = 1;
        snprintf(g->why, sizeof g->why, "%s", err_message());
        return 0;
    }
    return size;
}

/* The failure of the giflib call just made, as one line naming the file. */
static int gif_failed(image_gif *g, const char *what)
{
    if (g->write_failed) return err_set(DLCA_ERR, "%s", g->why);
    return err_set(DLCA_ERR, "%s: giflib could not %s: %s", g->path, what,
                   g->gif ? GifErrorString(g->gif->Error) : "no encoder");
}

int image_gif_check(const char *path, long long width, long long height)
{
    if (width < 1 || height < 1 || width > IMAGE_GIF_MAX_SIDE || height > IMAGE_GIF_MAX_SIDE ||
        (double)width * height > IMAGE_GIF_MAX_PIXELS)
        return err_set(DLCA_ERR, "%s: a GIF of %lldx%lld pixels is not possible (at most %d a side and %d pixels): use a "
                       "smaller --scale or --grid", path, width, height, IMAGE_GIF_MAX_SIDE, IMAGE_GIF_MAX_PIXELS);
    return DLCA_OK;
}

/* Loop forever: the NETSCAPE2.0 application extension, loop count 0. */
static int put_loop(image_gif *g)
{
    static const GifByteType loop[3] = {1, 0, 0};
    if (EGifPutExtensionLeader(g->gif, APPLICATION_EXT_FUNC_CODE) != GIF_OK ||
        EGifPutExtensionBlock(g->gif, 11, "NETSCAPE2.0") != GIF_OK || EGifPutExtensionBlock(g->gif, 3, loop) != GIF_OK ||
        EGifPutExtensionTrailer(g->gif) != GIF_OK)
        return gif_failed(g, "write the loop extension");
    return DLCA_OK;
}

static int start(image_gif *g)
{
    int error = 0;
    g->gif = EGifOpen(g, put_bytes, &error);
    if (!g->gif) return err_set(DLCA_ERR, "%s: giflib could not start: %s", g->path, GifErrorString(error));
    EGifSetGifVersion(g->gif, true);
    GifColorType colours[PALETTE_SIZE];
    palette_colours(g->palette, colours);
    ColorMapObject *map = GifMakeMapObject(PALETTE_SIZE, colours);
    if (!map) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for the palette", g->path);
    int ok = EGifPutScreenDesc(g->gif, g->width, g->height, 8, 0, map) == GIF_OK; /* giflib keeps a copy */
    GifFreeMapObject(map);
    if (!ok) return gif_failed(g, "write the screen descriptor");
    return put_loop(g);
}

int image_gif_open(image_gif **out, const char *path, int width, int height, int delay_cs, image_gif_palette palette)
{
    *out = NULL;
    if (!path) return err_set(DLCA_ERR, "image_gif_open: NULL path");
    if (image_gif_check(path, width, height)) return DLCA_ERR;
    if (delay_cs < 2 || delay_cs > 65535)
        return err_set(DLCA_ERR, "%s: a frame delay of %d/100 s is outside 2..65535", path, delay_cs);
    if (palette != IMAGE_GIF_GREY && palette != IMAGE_GIF_COLOUR)
        return err_set(DLCA_ERR, "%s: unknown palette %d", path, (int)palette);
    image_gif *g = calloc(1, sizeof *g);
    if (!g) return err_set(DLCA_ERR_NOMEM, "%s: out of memory", path);
    g->path = path, g->width = width, g->height = height, g->delay_cs = delay_cs, g->palette = palette;
    build_grey_index(g);
    g->pending = malloc((size_t)width * (size_t)height);
    if (!g->pending) {
        free(g);
        return err_set(DLCA_ERR_NOMEM, "%s: out of memory for a %dx%d frame", path, width, height);
    }
    if (atomic_file_begin(&g->file, path)) {
        free(g->pending), free(g);
        return DLCA_ERR;
    }
    if (start(g)) {
        image_gif_abort(&g);
        return DLCA_ERR;
    }
    *out = g;
    return DLCA_OK;
}

/* Writes the pending frame, shown for `delay_cs`. */
static int put_pending(image_gif *g, int delay_cs)
{
    GraphicsControlBlock control = {DISPOSE_DO_NOT, false, delay_cs, NO_TRANSPARENT_COLOR};
    GifByteType extension[4];
    size_t n = EGifGCBToExtension(&control, extension);
    if (EGifPutExtension(g->gif, GRAPHICS_EXT_FUNC_CODE, (int)n, extension) != GIF_OK)
        return gif_failed(g, "write a frame's delay");
    if (EGifPutImageDesc(g->gif, 0, 0, g->width, g->height, false, NULL) != GIF_OK)
        return gif_failed(g, "start a frame");
    for (int y = 0; y < g->height; y++)
        if (EGifPutLine(g->gif, g->pending + (size_t)y * (size_t)g->width, g->width) != GIF_OK)
            return gif_failed(g, "encode a frame");
    g->has_pending = 0;
    return DLCA_OK;
}

int image_gif_add(image_gif *g, const unsigned char *rgb)
{
    if (!g || !rgb) return err_set(DLCA_ERR, "image_gif_add: NULL animation or frame");
    if (g->has_pending && put_pending(g, g->delay_cs)) return DLCA_ERR;
    size_t pixels = (size_t)g->width * (size_t)g->height;
    for (size_t i = 0; i < pixels; i++) g->pending[i] = colour_index(g, rgb + i * 3);
    g->has_pending = 1;
    g->frames++;
    return DLCA_OK;
}

int image_gif_frames(const image_gif *g) { return g ? g->frames : 0; }

int image_gif_close(image_gif **gif)
{
    image_gif *g = *gif;
    if (!g) return err_set(DLCA_ERR, "image_gif_close: no animation");
    if (g->frames == 0) {
        err_set(DLCA_ERR, "%s: an animation needs a frame at least", g->path);
        image_gif_abort(gif);
        return DLCA_ERR;
    }
    int delay = g->delay_cs > IMAGE_GIF_LAST_FRAME_CS ? g->delay_cs : IMAGE_GIF_LAST_FRAME_CS;
    int rc = put_pending(g, delay);
    int error = 0;
    if (EGifCloseFile(g->gif, &error) != GIF_OK && !rc) rc = gif_failed(g, "finish the file");
    g->gif = NULL;
    if (!rc && g->write_failed) rc = err_set(DLCA_ERR, "%s", g->why); /* the trailer's write */
    if (!rc) rc = atomic_file_commit(&g->file);
    if (rc) atomic_file_abort(&g->file);
    free(g->pending), free(g);
    *gif = NULL;
    return rc;
}

void image_gif_abort(image_gif **gif)
{
    image_gif *g = gif ? *gif : NULL;
    if (!g) return;
    if (g->gif) {
        int error;
        EGifCloseFile(g->gif, &error); /* frees giflib's state; the bytes go to the temp file */
    }
    atomic_file_abort(&g->file);
    free(g->pending), free(g);
    *gif = NULL;
}
