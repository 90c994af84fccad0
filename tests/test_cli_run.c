/* test_cli_run: what `dlca run` writes, read back independently. The shipped Game of Life model
 * runs by default on a 64x64 soup for 64 steps (not its 3x3 training board for one step); its GIF
 * decodes with giflib into 65 frames of the right size, each with its step label and exactly the
 * cells of the unlabelled PNG frame `dlca run` writes into a folder for that step (named by
 * step); the strip's frames carry their labels; RGB animations keep their colours; frame delays
 * and the loop are set; bad --fps and GIFs too large are refused before running. */
#include "check.h"
#include "gif_fixtures.h"

#include <libgen.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dlca[1024], scratch[256], gol[600], image_model[600];

/* Runs `dlca <args>` in the scratch folder, stderr into `err`; returns the exit status. */
static int run_dlca(char *err, size_t err_size, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int run_dlca(char *err, size_t err_size, const char *format, ...)
{
    char args[4096], command[8192];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(command, sizeof command, "cd '%s' && '%s' %s > stdout.txt 2> stderr.txt", scratch, dlca, args);
    int status = system(command);
    snprintf(command, sizeof command, "%s/stderr.txt", scratch);
    FILE *f = fopen(command, "r");
    size_t n = f ? fread(err, 1, err_size - 1, f) : 0;
    err[n] = '\0';
    if (f) fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static const char *in_scratch(const char *name)
{
    static char paths[2][600];
    static int next;
    next ^= 1;
    snprintf(paths[next], sizeof paths[next], "%s/%s", scratch, name);
    return paths[next];
}

typedef struct {
    int width, height;
    unsigned char *rgb;
} picture;

static picture read_png(const char *name)
{
    picture p = {0, 0, NULL};
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, in_scratch(name))) return p;
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

/* Do the cells below the band (columns x.., rows band..) equal picture `cells` pixel for pixel? */
static int cells_match(const unsigned char *rgb, int width, int x, int band, const picture *cells)
{
    if (!cells->rgb) return 0;
    for (int y = 0; y < cells->height; y++)
        if (memcmp(rgb + ((size_t)(y + band) * (size_t)width + (size_t)x) * 3, cells->rgb + (size_t)y * cells->width * 3,
                   (size_t)cells->width * 3) != 0)
            return 0;
    return 1;
}

/* Ink pixels in the band: a label is there (not a blank band). */
static int ink_in_band(const unsigned char *rgb, int width, int frame_width)
{
    int ink = 0, band = image_label_height(frame_width);
    for (int y = 0; y < band; y++)
        for (int x = 0; x < frame_width; x++) ink += memcmp(rgb + ((size_t)y * width + x) * 3, image_label_ink, 3) == 0;
    return ink;
}

static void test_gol_gif(void)
{
    char err[4096];
    int s1 = run_dlca(err, sizeof err, "run '%s' --device cpu --out gol.gif", gol);
    CHECK(s1 == 0, "dlca run gol --out gol.gif exits 0: %s", err);
    int s2 = run_dlca(err, sizeof err, "run '%s' --device cpu --out frames", gol);
    CHECK(s2 == 0, "dlca run gol --out frames exits 0: %s", err);
    const char *why;
    int error = 0;
    GifFileType *gif = gif_read(in_scratch("gol.gif"), &why);
    CHECK(gif != NULL, "giflib decodes gol.gif: %s", why);
    if (!gif) return;
    int band = image_label_height(256);
    /* 64x64 cells at 4 pixels each (the default scale of a 64-cell side), and the label band */
    CHECK(gif->ImageCount == 65, "65 frames, steps 0..64 (got %d)", gif->ImageCount);
    CHECK(gif->SWidth == 256 && gif->SHeight == 256 + band, "frames of 256x%d (got %dx%d)", 256 + band, gif->SWidth,
          gif->SHeight);
    int labels = 1, cells = 1, inked = 1;
    for (int i = 0; gif->SWidth == 256 && i < gif->ImageCount; i++) {
        unsigned char *rgb = gif_frame_rgb(gif, i);
        char name[64];
        snprintf(name, sizeof name, "frames/step_%05d.png", i);
        picture frame = read_png(name);
        if (!rgb || !gif_label_matches(rgb, 256, 0, 256, i)) labels = 0;
        if (!rgb || !cells_match(rgb, 256, 0, band, &frame)) cells = 0;
        if (!rgb || ink_in_band(rgb, 256, 256) < 20) inked = 0;
        if ((!labels || !cells) && cells + labels == 1) fprintf(stderr, "  frame %d differs\n", i);
        free(rgb), free(frame.rgb);
    }
    CHECK(labels && inked, "every frame's band reads 'step N' for its own step");
    CHECK(cells, "every frame's cells are the PNG frame of its step, pixel for pixel");
    GraphicsControlBlock first, last;
    CHECK(DGifSavedExtensionToGCB(gif, 0, &first) == GIF_OK && first.DelayTime == 10, "10 frames a second (%d cs)",
          first.DelayTime);
    CHECK(DGifSavedExtensionToGCB(gif, gif->ImageCount - 1, &last) == GIF_OK && last.DelayTime == 100,
          "the last frame is held 1 s (%d cs)", last.DelayTime);
    int loops = 0;
    for (int e = 0; e < gif->SavedImages[0].ExtensionBlockCount; e++) {
        const ExtensionBlock *b = &gif->SavedImages[0].ExtensionBlocks[e];
        loops |= b->Function == APPLICATION_EXT_FUNC_CODE && b->ByteCount == 11 && memcmp(b->Bytes, "NETSCAPE2.0", 11) == 0;
    }
    CHECK(loops, "the animation loops (NETSCAPE2.0 extension)");
    DGifCloseFile(gif, &error);
    struct stat st;
    CHECK(stat(in_scratch("frames/frame_00001.png"), &st) != 0, "frames are named by step, not by number");
}

/* The strip: 9 frames (every 8th step of 64, and step 64), each labelled above its cells. */
static void test_gol_strip(void)
{
    char err[4096];
    int status = run_dlca(err, sizeof err, "run '%s' --device cpu --out strip.png", gol);
    CHECK(status == 0, "dlca run gol --out strip.png exits 0: %s", err);
    picture strip = read_png("strip.png");
    int band = image_label_height(256);
    CHECK(strip.width == 9 * 256 + 8 && strip.height == band + 256, "9 frames of 256x%d (got %dx%d)", band + 256,
          strip.width, strip.height);
    int ok = strip.width == 9 * 256 + 8;
    for (int f = 0; ok && f < 9; f++) {
        char name[64];
        snprintf(name, sizeof name, "frames/step_%05d.png", 8 * f);
        picture frame = read_png(name);
        ok = gif_label_matches(strip.rgb, strip.width, f * 257, 256, 8 * f) && cells_match(strip.rgb, strip.width, f * 257, band, &frame);
        if (!ok) fprintf(stderr, "  strip frame %d (step %d) differs\n", f, 8 * f);
        free(frame.rgb);
    }
    CHECK(ok, "strip frame f is labelled step 8f above that step's cells");
    free(strip.rgb);
}

/* The image model's hard RGB frames have 8 colours, each exact in the GIF's colour palette. */
static void test_rgb_gif(void)
{
    char err[4096];
    int s1 = run_dlca(err, sizeof err, "run '%s' --device cpu --fps 25 --out image.gif", image_model);
    int s2 = run_dlca(err, sizeof err, "run '%s' --device cpu --every 15 --out image_frames", image_model);
    CHECK(s1 == 0 && s2 == 0, "dlca run image to a GIF and frames exits 0 (%d %d): %s", s1, s2, err);
    const char *why;
    int error = 0;
    GifFileType *gif = gif_read(in_scratch("image.gif"), &why);
    if (!gif) {
        CHECK(0, "giflib reads image.gif: %s", why);
        return;
    }
    /* 16x16 cells at 8 pixels: 128 wide, narrower than IMAGE_LABEL_WIDE, so a band of size 1 */
    int band = image_label_height(128);
    CHECK(gif->ImageCount == 16 && gif->SWidth == 128 && gif->SHeight == 128 + band, "16 frames of 128x%d (%d of %dx%d)",
          128 + band, gif->ImageCount, gif->SWidth, gif->SHeight);
    unsigned char *rgb = gif->ImageCount == 16 ? gif_frame_rgb(gif, 15) : NULL;
    picture frame = read_png("image_frames/step_00015.png");
    CHECK(rgb && cells_match(rgb, 128, 0, band, &frame), "the last frame's colours are exact");
    CHECK(rgb && gif_label_matches(rgb, 128, 0, 128, 15), "and it is labelled step 15");
    GraphicsControlBlock first;
    CHECK(DGifSavedExtensionToGCB(gif, 0, &first) == GIF_OK && first.DelayTime == 4, "--fps 25: 4 cs a frame (%d)",
          first.DelayTime);
    free(rgb), free(frame.rgb);
    DGifCloseFile(gif, &error);
}

static void expect_refused(const char *needle, const char *left, const char *args)
{
    char err[4096];
    int status = run_dlca(err, sizeof err, "%s", args);
    size_t lines = 0;
    for (const char *p = err; *p; p++) lines += *p == '\n';
    struct stat st;
    CHECK(status != 0 && lines == 1 && strstr(err, needle), "'%s' is refused in one line naming '%s' (%d): %s", args,
          needle, status, err);
    CHECK(!left || stat(in_scratch(left), &st) != 0, "'%s' leaves no %s", args, left);
}

static void test_refused(void)
{
    char args[2048];
    snprintf(args, sizeof args, "run '%s' --device cpu --fps 0 --out x.gif", gol);
    expect_refused("--fps", "x.gif", args);
    snprintf(args, sizeof args, "run '%s' --device cpu --fps 51 --out x.gif", gol);
    expect_refused("--fps", "x.gif", args);
    snprintf(args, sizeof args, "run '%s' --device cpu --grid 4096x4096 --scale 64 --steps 1 --out x.gif", gol);
    expect_refused("a GIF of 262144x", "x.gif", args);
    mkdir(in_scratch("folder.gif"), 0777);
    snprintf(args, sizeof args, "run '%s' --device cpu --steps 2 --out folder.gif", gol);
    expect_refused("folder.gif", NULL, args);
}

int main(int argc, char **argv)
{
    char self[900];
    (void)argc;
    snprintf(self, sizeof self, "%s", argv[0]);
    char *dir = dirname(self);
    char cwd[512];
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd)) snprintf(dlca, sizeof dlca, "%s/%s/dlca", cwd, dir);
    else snprintf(dlca, sizeof dlca, "%s/dlca", dir);
    snprintf(gol, sizeof gol, "%s/models/gol.dlca", DLCA_ASSET_DIR);
    snprintf(image_model, sizeof image_model, "%s/models/image.dlca", DLCA_ASSET_DIR);
    snprintf(scratch, sizeof scratch, "/tmp/dlca_run_XXXXXX");
    if (!mkdtemp(scratch)) return fprintf(stderr, "cannot make a scratch folder\n"), 1;
    test_gol_gif();
    test_gol_strip();
    test_rgb_gif();
    test_refused();
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    if (!getenv("DLCA_TEST_KEEP") && system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch);
    return test_finish("test_cli_run");
}
