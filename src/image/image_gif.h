/* image_gif.h: animated GIFs, encoded by giflib (LZW is the library's, never ours), written
 * through atomic_file.h like every dlca output: frames go to an exclusive temp file beside the
 * destination, which replaces it only at image_gif_close, so a reader never sees half an
 * animation and a failed or aborted recording leaves the old file as it was.
 *
 * A GIF holds at most 256 colours. Frames are 8-bit RGB and each pixel takes the palette colour
 * nearest to it: IMAGE_GIF_GREY has all 256 grey levels (a grey picture comes out exact),
 * IMAGE_GIF_COLOUR a 6x6x6 colour cube (every level 0, 51, ..., 255: the 8 colours of a hard RGB
 * grid come out exact) and 40 more greys. The animation loops forever; its last frame is held for
 * a second at least, so the end state can be seen before it starts over. */
#ifndef DLCA_IMAGE_GIF_H
#define DLCA_IMAGE_GIF_H

typedef enum { IMAGE_GIF_GREY, IMAGE_GIF_COLOUR } image_gif_palette;

/* GIF sides are 16-bit; frames dlca writes are also held to 2^26 pixels (a 8192x8192 picture). */
enum { IMAGE_GIF_MAX_SIDE = 65535, IMAGE_GIF_MAX_PIXELS = 1 << 26, IMAGE_GIF_LAST_FRAME_CS = 100 };

typedef struct image_gif image_gif;

/* Whether a width x height animation can be written; the message names `path`. */
int image_gif_check(const char *path, long long width, long long height);

/* Starts an animation of width x height frames shown `delay_cs` hundredths of a second each
 * (2..65535: browsers show shorter delays as 1/10 s). Creates the temp file; *gif is NULL on
 * failure. */
int image_gif_open(image_gif **gif, const char *path, int width, int height, int delay_cs, image_gif_palette palette);

/* Adds a frame, rgb [height][width][3]. */
int image_gif_add(image_gif *gif, const unsigned char *rgb);

/* Frames added so far. */
int image_gif_frames(const image_gif *gif);

/* Writes the last frame and the trailer and renames the file over its destination (an animation
 * without frames is refused); frees *gif and sets it to NULL whatever happens. */
int image_gif_close(image_gif **gif);

/* Drops the animation: the temp file is removed, the destination untouched. Safe on NULL. */
void image_gif_abort(image_gif **gif);

#endif
