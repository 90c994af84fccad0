/* test_image_png.c: image_png.h against libpng itself. Loads the shipped targets, loads PNGs
 * of every colour type and bit depth written here with libpng (expected bits computed from the
 * samples), round-trips strips and frames, and feeds the loader missing, empty, foreign, corrupt
 * and truncated files, each of which must fail with a message naming the file (the loss plot is
 * test_image_plot's). Scratch files live in a fresh /tmp folder that must be empty again at the end
 * (so no temporary file is left behind); DLCA_TEST_KEEP=1 keeps it for a look. */
#include "check.h"
#include "error.h"
#include "image_png.h"

#include <png.h>
#include <zlib.h>

#include <stdint.h>
#include <string.h>
#include <unistd.h>

static char source_root[1024];
static char scratch[256];
static char made[64][512];
static int made_count;

/* The repository root: DLCA_SOURCE_DIR, else this file's path less "tests/test_image_png.c"
 * (CMake compiles with absolute paths; tests run from the build folder). */
static void find_source_root(void)
{
    const char *env = getenv("DLCA_SOURCE_DIR");
    const char *self = "tests/test_image_png.c";
    char *end;
    if (env && env[0]) {
        snprintf(source_root, sizeof source_root, "%s/", env);
        return;
    }
    snprintf(source_root, sizeof source_root, "%s", __FILE__);
    end = strstr(source_root, self);
    if (end) *end = '\0';
    if (!source_root[0]) snprintf(source_root, sizeof source_root, "./");
}

/* A path in the scratch folder, remembered for cleanup. */
static const char *scratch_path(const char *name)
{
    char *p = made[made_count < 63 ? made_count++ : 63];
    snprintf(p, sizeof made[0], "%s/%s", scratch, name);
    return p;
}

static int write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, n, f) == n;
    if (f && fclose(f)) ok = 0;
    return ok ? 0 : -1;
}

static unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    long size;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = malloc((size_t)size);
        if (data && fread(data, 1, (size_t)size, f) != (size_t)size) free(data), data = NULL;
        *n = (size_t)size;
    }
    fclose(f);
    return data;
}

/* Reads any PNG back as 8-bit RGB with libpng's simplified API; format gets the file's own. */
static unsigned char *read_rgb(const char *path, int *width, int *height, png_uint_32 *format)
{
    png_image image;
    unsigned char *rgb;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, path)) return NULL;
    *format = image.format;
    image.format = PNG_FORMAT_RGB;
    rgb = malloc(PNG_IMAGE_SIZE(image));
    if (!rgb || !png_image_finish_read(&image, NULL, rgb, 0, NULL)) {
        png_image_free(&image);
        free(rgb);
        return NULL;
    }
    *width = (int)image.width;
    *height = (int)image.height;
    return rgb;
}

/* ---------------------------------------------------- PNGs of every kind ---- */

typedef struct {
    const char *name;
    int colour, depth, interlace, trns; /* trns: a tRNS chunk (palette alphas or a colour key) */
} png_kind;

static const png_kind kinds[] = {
    {"grey1", PNG_COLOR_TYPE_GRAY, 1, 0, 0},
    {"grey2", PNG_COLOR_TYPE_GRAY, 2, 0, 0},
    {"grey4", PNG_COLOR_TYPE_GRAY, 4, 0, 0},
    {"grey8", PNG_COLOR_TYPE_GRAY, 8, 0, 0},
    {"grey16", PNG_COLOR_TYPE_GRAY, 16, 0, 0},
    {"grey8-key", PNG_COLOR_TYPE_GRAY, 8, 0, 1},
    {"grey-alpha8", PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0, 0},
    {"grey-alpha16", PNG_COLOR_TYPE_GRAY_ALPHA, 16, 0, 0},
    {"palette1", PNG_COLOR_TYPE_PALETTE, 1, 0, 0},
    {"palette4", PNG_COLOR_TYPE_PALETTE, 4, 0, 0},
    {"palette8", PNG_COLOR_TYPE_PALETTE, 8, 0, 0},
    {"palette8-alpha", PNG_COLOR_TYPE_PALETTE, 8, 0, 1},
    {"rgb8", PNG_COLOR_TYPE_RGB, 8, 0, 0},
    {"rgb16", PNG_COLOR_TYPE_RGB, 16, 0, 0},
    {"rgb8-key", PNG_COLOR_TYPE_RGB, 8, 0, 1},
    {"rgb16-key", PNG_COLOR_TYPE_RGB, 16, 0, 1},
    {"rgba8", PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, 0},
    {"rgba16", PNG_COLOR_TYPE_RGB_ALPHA, 16, 0, 0},
    {"rgb8-interlaced", PNG_COLOR_TYPE_RGB, 8, 1, 0},
    {"rgba16-interlaced", PNG_COLOR_TYPE_RGB_ALPHA, 16, 1, 0},
    {"grey4-interlaced", PNG_COLOR_TYPE_GRAY, 4, 1, 0},
};

enum { KIND_W = 11, KIND_H = 7, PALETTE_SIZE = 16 };

/* A picture in one kind: samples [h][w][channels] at the kind's depth, plus palette and tRNS. */
typedef struct {
    const png_kind *kind;
    int channels, width, height;
    uint16_t samples[KIND_H][KIND_W][4];
    png_color palette[PALETTE_SIZE];
    int palette_size;
    png_byte palette_alpha[PALETTE_SIZE];
    png_color_16 key;
} picture;

static uint32_t lcg_state = 12345;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state >> 8;
}

/* A sample at `depth`, often one just either side of the 0.26 and 0.5 thresholds. */
static uint16_t some_sample(int depth)
{
    static const uint16_t near8[] = {0, 66, 67, 127, 128, 255, 60, 100, 200};
    static const uint16_t near16[] = {0, 17039, 17040, 32767, 32768, 65535, 15420, 25700, 51400};
    uint32_t r = lcg(), max = (1u << depth) - 1;
    if (r % 2 == 0 || depth < 8) return (uint16_t)(lcg() % (max + 1));
    return depth == 8 ? near8[r / 2 % 9] : near16[r / 2 % 9];
}

static int kind_channels(int colour)
{
    switch (colour) {
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
    default: return 1; /* grey, palette index */
    }
}

static void make_picture(picture *p, const png_kind *k)
{
    memset(p, 0, sizeof *p);
    p->kind = k;
    p->channels = kind_channels(k->colour);
    p->width = KIND_W;
    p->height = KIND_H;
    p->palette_size = k->depth < 4 ? 1 << k->depth : PALETTE_SIZE;
    for (int i = 0; i < p->palette_size; i++) {
        p->palette[i] = (png_color){(png_byte)some_sample(8), (png_byte)some_sample(8), (png_byte)some_sample(8)};
        p->palette_alpha[i] = (png_byte)some_sample(8);
    }
    for (int y = 0; y < KIND_H; y++)
        for (int x = 0; x < KIND_W; x++)
            for (int c = 0; c < p->channels; c++)
                p->samples[y][x][c] = k->colour == PNG_COLOR_TYPE_PALETTE ? (uint16_t)(lcg() % (unsigned)p->palette_size)
                                                                          : some_sample(k->depth);
    /* The colour key is the first pixel's colour, so at least one pixel turns transparent. */
    p->key.gray = p->samples[0][0][0];
    p->key.red = p->samples[0][0][0];
    p->key.green = p->samples[0][0][p->channels > 1 ? 1 : 0];
    p->key.blue = p->samples[0][0][p->channels > 2 ? 2 : 0];
}

/* Straight (not premultiplied) RGBA in [0, 1] of pixel (x, y), from the PNG rules. */
static void picture_rgba(const picture *p, int x, int y, double rgba[4])
{
    const uint16_t *s = p->samples[y][x];
    const png_kind *k = p->kind;
    double max = (double)((1u << k->depth) - 1);
    if (k->colour == PNG_COLOR_TYPE_PALETTE) {
        const png_color *e = &p->palette[s[0]];
        rgba[0] = e->red / 255.0, rgba[1] = e->green / 255.0, rgba[2] = e->blue / 255.0;
        rgba[3] = k->trns ? p->palette_alpha[s[0]] / 255.0 : 1.0;
        return;
    }
    for (int c = 0; c < 3; c++) rgba[c] = s[k->colour & PNG_COLOR_MASK_COLOR ? c : 0] / max;
    rgba[3] = k->colour & PNG_COLOR_MASK_ALPHA ? s[p->channels - 1] / max : 1.0;
    if (k->trns && k->colour == PNG_COLOR_TYPE_GRAY && s[0] == p->key.gray) rgba[3] = 0.0;
    if (k->trns && k->colour == PNG_COLOR_TYPE_RGB && s[0] == p->key.red && s[1] == p->key.green &&
        s[2] == p->key.blue)
        rgba[3] = 0.0;
}

/* Packs one row at the kind's depth: MSB first below 8 bits, big-endian at 16. */
static void pack_row(const picture *p, int y, unsigned char *row)
{
    int depth = p->kind->depth, n = p->width * p->channels;
    memset(row, 0, ((size_t)n * (size_t)depth + 7) / 8);
    for (int i = 0; i < n; i++) {
        unsigned v = p->samples[y][i / p->channels][i % p->channels];
        if (depth == 16) {
            row[2 * i] = (unsigned char)(v >> 8), row[2 * i + 1] = (unsigned char)v;
        } else {
            int bit = i * depth;
            row[bit / 8] |= (unsigned char)(v << (8 - depth - bit % 8));
        }
    }
}

static void set_kind_chunks(png_structp png, png_infop info, picture *p)
{
    const png_kind *k = p->kind;
    png_set_IHDR(png, info, (png_uint_32)p->width, (png_uint_32)p->height, k->depth, k->colour,
                 k->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (k->colour == PNG_COLOR_TYPE_PALETTE) png_set_PLTE(png, info, p->palette, p->palette_size);
    if (k->trns && k->colour == PNG_COLOR_TYPE_PALETTE)
        png_set_tRNS(png, info, p->palette_alpha, p->palette_size, NULL);
    else if (k->trns)
        png_set_tRNS(png, info, NULL, 0, &p->key);
}

/* Writes p with libpng's ordinary write API. Nothing changes after setjmp but libpng's state. */
static int write_picture(const char *path, picture *p)
{
    FILE *f = fopen(path, "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    unsigned char *row = malloc((size_t)p->width * 8);
    int status = -1;
    if (f && png && info && row && !setjmp(png_jmpbuf(png))) {
        png_init_io(png, f);
        set_kind_chunks(png, info, p);
        png_write_info(png, info);
        int passes = png_set_interlace_handling(png);
        for (int pass = 0; pass < passes; pass++)
            for (int y = 0; y < p->height; y++) {
                pack_row(p, y, row);
                png_write_row(png, row);
            }
        png_write_end(png, info);
        status = 0;
    }
    png_destroy_write_struct(&png, &info);
    free(row);
    if (f && fclose(f)) status = -1;
    return status;
}

static void test_every_kind(void)
{
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        picture p;
        double bits[3 * KIND_W * KIND_H], sil[KIND_W * KIND_H];
        const char *path = scratch_path(kinds[k].name);
        int wrong_rgb = 0, wrong_sil = 0, transparent = 0, on = 0;
        make_picture(&p, &kinds[k]);
        CHECK(write_picture(path, &p) == 0, "%s: libpng could not write the test file", kinds[k].name);
        CHECK(image_load_target(path, IMAGE_RGB_BITS, KIND_H, KIND_W, bits) == DLCA_OK, "%s: %s", kinds[k].name,
              err_message());
        CHECK(image_load_target(path, IMAGE_SILHOUETTE, KIND_H, KIND_W, sil) == DLCA_OK, "%s: %s", kinds[k].name,
              err_message());
        for (int y = 0; y < KIND_H; y++)
            for (int x = 0; x < KIND_W; x++) {
                double rgba[4], any = 0;
                int i = y * KIND_W + x;
                picture_rgba(&p, x, y, rgba);
                transparent += rgba[3] < 1.0;
                for (int c = 0; c < 3; c++) {
                    double v = rgba[c] * rgba[3];
                    wrong_rgb += bits[c * KIND_W * KIND_H + i] != (v > 0.5 ? 1.0 : 0.0);
                    on += v > 0.5;
                    any = v > any ? v : any;
                }
                wrong_sil += sil[i] != (any > 0.26 ? 1.0 : 0.0);
            }
        CHECK(wrong_rgb == 0, "%s: %d RGB bits differ", kinds[k].name, wrong_rgb);
        CHECK(wrong_sil == 0, "%s: %d silhouette cells differ", kinds[k].name, wrong_sil);
        CHECK(on > 0 && on < 3 * KIND_W * KIND_H, "%s: the test picture is all one value (%d on)", kinds[k].name, on);
        if (kinds[k].trns || kinds[k].colour & PNG_COLOR_MASK_ALPHA)
            CHECK(transparent > 0, "%s: no pixel tests alpha", kinds[k].name);
    }
}

/* Alpha is premultiplied: pure white at alpha 100/255 (0.39) is off in RGB bits, on in silhouette. */
static void test_premultiply(void)
{
    picture p;
    static const png_kind rgba8 = {"rgba8-white", PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, 0};
    static const uint16_t alphas[3] = {200, 100, 60};
    double bits[3 * KIND_W * KIND_H], sil[KIND_W * KIND_H];
    const char *path = scratch_path("white-alpha.png");
    make_picture(&p, &rgba8);
    for (int y = 0; y < KIND_H; y++)
        for (int x = 0; x < KIND_W; x++) {
            for (int c = 0; c < 3; c++) p.samples[y][x][c] = 255;
            p.samples[y][x][3] = alphas[x % 3];
        }
    CHECK(write_picture(path, &p) == 0, "could not write %s", path);
    CHECK(image_load_target(path, IMAGE_RGB_BITS, KIND_H, KIND_W, bits) == DLCA_OK, "%s", err_message());
    CHECK(image_load_target(path, IMAGE_SILHOUETTE, KIND_H, KIND_W, sil) == DLCA_OK, "%s", err_message());
    CHECK(bits[0] == 1.0 && bits[1] == 0.0 && bits[2] == 0.0, "alpha 200/100/60 -> R bits %g %g %g", bits[0], bits[1],
          bits[2]);
    CHECK(sil[0] == 1.0 && sil[1] == 1.0 && sil[2] == 0.0, "alpha 200/100/60 -> silhouette %g %g %g", sil[0], sil[1],
          sil[2]);
}

/* ---------------------------------------------------------- shipped assets ---- */

static void count_on(const double *t, int channels, int pixels, int *on)
{
    for (int c = 0; c < channels; c++) {
        on[c] = 0;
        for (int i = 0; i < pixels; i++) on[c] += t[c * pixels + i] == 1.0;
    }
}

static int all_binary(const double *t, int n)
{
    for (int i = 0; i < n; i++)
        if (t[i] != 0.0 && t[i] != 1.0) return 0;
    return 1;
}

static void test_assets(void)
{
    char path[1200];
    double image[3 * 16 * 16], lizard[20 * 20], small[16 * 16];
    int on[3];
    snprintf(path, sizeof path, "%sassets/image16.png", source_root);
    CHECK(image_load_target(path, IMAGE_RGB_BITS, 16, 16, image) == DLCA_OK, "%s", err_message());
    count_on(image, 3, 256, on);
    /* tools/make_image16.py prints these counts. */
    CHECK(on[0] == 64 && on[1] == 219 && on[2] == 181, "image16 R,G,B on: %d %d %d (want 64 219 181)", on[0], on[1],
          on[2]);
    CHECK(image_count_colours(image, 256) == 8, "image16 has %d colours, want 8", image_count_colours(image, 256));
    CHECK(all_binary(image, 3 * 256), "image16 target is not binary");
    /* Top-left is sky (cyan), bottom-left grass (green), the door (row 11, x 3) black. */
    CHECK(image[0] == 0 && image[256] == 1 && image[512] == 1, "image16 (0,0) is not cyan");
    CHECK(image[240] == 0 && image[256 + 240] == 1 && image[512 + 240] == 0, "image16 (0,15) is not green");
    CHECK(image[11 * 16 + 3] + image[256 + 11 * 16 + 3] + image[512 + 11 * 16 + 3] == 0, "image16 door not black");

    snprintf(path, sizeof path, "%sassets/lizard20.png", source_root);
    CHECK(image_load_target(path, IMAGE_SILHOUETTE, 20, 20, lizard) == DLCA_OK, "%s", err_message());
    count_on(lizard, 1, 400, on);
    CHECK(on[0] == 126, "lizard20 has %d cells on, want 126 (the committed asset)", on[0]);
    CHECK(all_binary(lizard, 400), "lizard target is not binary");
    CHECK(image_load_target(path, IMAGE_SILHOUETTE, 16, 16, small) != DLCA_OK, "a 20x20 file loaded as 16x16");
    CHECK(strstr(err_message(), "is 20x20, the preset needs 16x16") && strstr(err_message(), "lizard20.png"),
          "wrong-size message: %s", err_message());
}

/* A picture smaller than the grid is centred on off cells, the odd cell of a side's border after
 * it (image_load_target_within); one the grid's size loads as image_load_target loads it. */
static void test_within(void)
{
    enum { H = 19, W = 22 }; /* image16 at row 1, column 3: borders 1 above, 2 below, 3 left and right */
    char path[1200];
    double image[3 * 16 * 16], grid[3 * H * W], lizard[20 * 20], same[20 * 20];
    int colours = 0, wrong = 0;
    snprintf(path, sizeof path, "%sassets/image16.png", source_root);
    CHECK(image_load_target(path, IMAGE_RGB_BITS, 16, 16, image) == DLCA_OK, "%s", err_message());
    for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++) grid[i] = 0.5;
    CHECK(image_load_target_within(path, IMAGE_RGB_BITS, H, W, grid, &colours) == DLCA_OK, "%s", err_message());
    CHECK(colours == 3, "image16 within %dx%d: %d colours, want 3", W, H, colours);
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int inside = y >= 1 && y < 17 && x >= 3 && x < 19;
                double want = inside ? image[c * 256 + (y - 1) * 16 + (x - 3)] : 0.0;
                wrong += grid[(c * H + y) * W + x] != want;
            }
    CHECK(wrong == 0, "image16 centred on a %dx%d grid: %d values wrong", W, H, wrong);

    snprintf(path, sizeof path, "%sassets/lizard20.png", source_root);
    CHECK(image_load_target(path, IMAGE_SILHOUETTE, 20, 20, lizard) == DLCA_OK, "%s", err_message());
    CHECK(image_load_target_within(path, IMAGE_SILHOUETTE, 20, 20, same, NULL) == DLCA_OK, "%s", err_message());
    CHECK(memcmp(lizard, same, sizeof lizard) == 0, "lizard20 within 20x20 differs from its exact load");
    CHECK(image_load_target_within(path, IMAGE_SILHOUETTE, 20, 19, same, NULL) != DLCA_OK,
          "a 20x20 file loaded within 19x20");
    CHECK(strstr(err_message(), "is 20x20 (height x width, as --grid), larger than the 20x19 grid") &&
              strstr(err_message(), "lizard20.png"),
          "larger-picture message: %s", err_message());
}

/* ------------------------------------------------------------ strips out ---- */

/* Frame f, channel c, cell i: a value that exercises clamping and rounding. */
static double strip_value(int f, int c, int i)
{
    static const double values[] = {0.0, 1.0, 0.5, 0.25, -0.3, 1.7, 0.999, 0.002};
    return values[(f * 5 + c * 3 + i) % 8];
}

static unsigned char expect_byte(double v) { return v <= 0 ? 0 : v >= 1 ? 255 : (unsigned char)(v * 255.0 + 0.5); }

static void test_strip_view(image_view view, int channels)
{
    enum { COUNT = 3, SCALE = 3, SAMPLE = 1 };
    ca_shape s = {.batch = 2, .height = 4, .width = 5, .boundary = 0};
    size_t cells = ca_shape_cells(s);
    double *frames = malloc(COUNT * (size_t)channels * cells * sizeof *frames);
    const char *path = scratch_path(view == IMAGE_RGB ? "strip_rgb.png" : "strip_grey.png");
    int w = 0, h = 0, wrong = 0, grey_lines = 0;
    png_uint_32 format = 0;
    unsigned char *rgb;
    for (int f = 0; f < COUNT; f++)
        for (int c = 0; c < channels; c++)
            for (size_t i = 0; i < cells; i++) frames[(f * channels + c) * cells + i] = strip_value(f, c, (int)i);
    frames[0] = NAN;
    CHECK(image_write_strip(path, frames, COUNT, channels, s, SAMPLE, SCALE, view) == DLCA_OK, "%s", err_message());
    rgb = read_rgb(path, &w, &h, &format);
    CHECK(rgb != NULL, "libpng cannot read back %s", path);
    CHECK(w == COUNT * 5 * SCALE + COUNT - 1 && h == 4 * SCALE, "strip is %dx%d", w, h);
    CHECK(format == PNG_FORMAT_RGB, "strip format %u, want 8-bit RGB", (unsigned)format);
    if (rgb && w == COUNT * 5 * SCALE + COUNT - 1 && h == 4 * SCALE) {
        for (int py = 0; py < h; py++)
            for (int px = 0; px < w; px++) {
                const unsigned char *got = rgb + ((size_t)py * (size_t)w + (size_t)px) * 3;
                int f = px / (5 * SCALE + 1), fx = px % (5 * SCALE + 1);
                if (fx == 5 * SCALE) {
                    grey_lines += got[0] == 128 && got[1] == 128 && got[2] == 128;
                    continue;
                }
                size_t cell = ((size_t)SAMPLE * 4 + (size_t)(py / SCALE)) * 5 + (size_t)(fx / SCALE);
                for (int c = 0; c < 3; c++) {
                    double v = frames[((size_t)f * (size_t)channels + (view == IMAGE_RGB ? (size_t)c : 0)) * cells + cell];
                    wrong += got[c] != expect_byte(v);
                }
            }
    }
    CHECK(wrong == 0, "%d strip samples differ", wrong);
    CHECK(grey_lines == (COUNT - 1) * h, "%d separator pixels are grey, want %d", grey_lines, (COUNT - 1) * h);
    free(rgb);
    free(frames);
}

static void test_frame(void)
{
    ca_shape s = {.batch = 1, .height = 2, .width = 3, .boundary = 0};
    double grid[6] = {0, 1, 0.5, 1, 0, 0.25};
    const char *path = scratch_path("frame.png");
    int w = 0, h = 0;
    png_uint_32 format;
    unsigned char *rgb;
    CHECK(image_write_frame(path, grid, 1, s, 0, 1, IMAGE_CHANNEL0) == DLCA_OK, "%s", err_message());
    rgb = read_rgb(path, &w, &h, &format);
    CHECK(rgb && w == 3 && h == 2, "frame is %dx%d", w, h);
    if (rgb && w == 3 && h == 2)
        CHECK(rgb[0] == 0 && rgb[3] == 255 && rgb[6] == 128 && rgb[15] == 64, "frame pixels %d %d %d %d", rgb[0],
              rgb[3], rgb[6], rgb[15]);
    free(rgb);
}

static void test_write_errors(void)
{
    ca_shape s = {.batch = 1, .height = 2, .width = 2, .boundary = 0};
    double grid[8] = {0};
    char missing_dir[400], temp[400];
    snprintf(missing_dir, sizeof missing_dir, "%s/no-such-dir/frame.png", scratch);
    CHECK(image_write_frame(missing_dir, grid, 1, s, 0, 1, IMAGE_CHANNEL0) != DLCA_OK, "wrote into a missing folder");
    CHECK(strstr(err_message(), "no-such-dir") && strstr(err_message(), "does not exist"), "message: %s", err_message());
    /* A folder is refused before any temporary file is made (atomic_file.h), and none is left. */
    CHECK(image_write_frame(scratch, grid, 1, s, 0, 1, IMAGE_CHANNEL0) != DLCA_OK, "wrote over a folder");
    CHECK(strstr(err_message(), "is a directory, not a regular file"), "message: %s", err_message());
    char *slash = strrchr(scratch, '/');
    snprintf(temp, sizeof temp, "%.*s/.%s.dlca-tmp.%ld", (int)(slash - scratch), scratch, slash + 1, (long)getpid());
    CHECK(access(temp, F_OK) != 0, "%s was left behind", temp);
    CHECK(image_write_frame(scratch_path("x.png"), grid, 1, s, 0, 1, IMAGE_RGB) != DLCA_OK, "RGB view of 1 channel");
    CHECK(strstr(err_message(), "3 channels"), "message: %s", err_message());
    CHECK(image_write_frame(scratch_path("x.png"), grid, 1, s, 1, 1, IMAGE_CHANNEL0) != DLCA_OK, "sample 1 of 1");
    CHECK(image_write_strip(scratch_path("x.png"), grid, 0, 1, s, 0, 1, IMAGE_CHANNEL0) != DLCA_OK, "0 frames");
    CHECK(image_write_frame(scratch_path("x.png"), grid, 1, s, 0, 0, IMAGE_CHANNEL0) != DLCA_OK, "scale 0");
    CHECK(access(scratch_path("x.png"), F_OK) != 0, "a refused write left a file");
}

/* -------------------------------------------------------- broken inputs ---- */

/* Loading must fail, name the file and mention `want` (NULL: anything). */
static void expect_load_error(const char *path, const char *want, const char *what)
{
    double out[3 * KIND_W * KIND_H];
    err_clear();
    CHECK(image_load_target(path, IMAGE_RGB_BITS, KIND_H, KIND_W, out) != DLCA_OK, "%s loaded", what);
    CHECK(strstr(err_message(), path) && (!want || strstr(err_message(), want)), "%s: message \"%s\" lacks \"%s\"",
          what, err_message(), want ? want : path);
}

/* Offset of the first IDAT chunk's data, or 0. */
static size_t idat_data(const unsigned char *png, size_t n)
{
    for (size_t at = 8; at + 12 <= n;) {
        size_t len = (size_t)png[at] << 24 | (size_t)png[at + 1] << 16 | (size_t)png[at + 2] << 8 | png[at + 3];
        if (!memcmp(png + at + 4, "IDAT", 4)) return at + 8;
        at += len + 12;
    }
    return 0;
}

/* Rewrites the CRC of the chunk whose data starts at `data`, so only the payload is wrong. */
static void fix_crc(unsigned char *png, size_t data)
{
    size_t len = (size_t)png[data - 8] << 24 | (size_t)png[data - 7] << 16 | (size_t)png[data - 6] << 8 | png[data - 5];
    uLong crc = crc32(0L, png + data - 4, (uInt)(len + 4));
    for (int k = 0; k < 4; k++) png[data + len + (size_t)k] = (unsigned char)(crc >> (24 - 8 * k));
}

static void test_broken_files(void)
{
    picture p;
    static const png_kind rgba8 = {"rgba8", PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, 0};
    const char *good = scratch_path("good.png"), *bad = scratch_path("bad.png");
    unsigned char *bytes, *copy;
    size_t n = 0, idat;
    int truncations = 0, truncations_ok = 0;

    make_picture(&p, &rgba8);
    CHECK(write_picture(good, &p) == 0, "could not write %s", good);
    bytes = read_bytes(good, &n);
    CHECK(bytes && n > 100, "could not read back %s", good);
    if (!bytes) return;
    copy = malloc(n);
    idat = idat_data(bytes, n);
    CHECK(idat > 0 && idat + 20 < n, "no IDAT chunk in the test file");

    expect_load_error(scratch_path("missing.png"), "No such file", "a missing file");
    CHECK(write_bytes(bad, "", 0) == 0, "write");
    expect_load_error(bad, "empty", "an empty file");
    CHECK(write_bytes(bad, "hello, this is plain text, not a picture\n", 41) == 0, "write");
    expect_load_error(bad, "not a PNG", "a text file");
    expect_load_error(scratch, NULL, "a folder");

    memcpy(copy, bytes, n);
    copy[idat + 10] ^= 0x55;
    CHECK(write_bytes(bad, copy, n) == 0, "write");
    expect_load_error(bad, "corrupt", "flipped IDAT byte");
    memcpy(copy, bytes, n);
    copy[8 + 8 + 2] ^= 0x01; /* IHDR width, CRC left as it was */
    CHECK(write_bytes(bad, copy, n) == 0, "write");
    expect_load_error(bad, "CRC", "flipped IHDR byte");
    /* A bad zlib header under a good CRC: libpng itself must refuse the stream. (A flipped byte
     * in stored deflate data would only break the Adler-32, which libpng treats as a warning.) */
    memcpy(copy, bytes, n);
    copy[idat] ^= 0x55;
    fix_crc(copy, idat);
    CHECK(write_bytes(bad, copy, n) == 0, "write");
    expect_load_error(bad, "corrupt", "bad zlib header with a good CRC");
    memcpy(copy, bytes, n);
    copy[8 + 8 + 8] = 3; /* IHDR bit depth 3 */
    fix_crc(copy, 16);
    CHECK(write_bytes(bad, copy, n) == 0, "write");
    expect_load_error(bad, "corrupt", "bit depth 3");

    /* Every prefix, a few bytes apart, then the file less its last byte. */
    for (size_t cut = 0; cut < n + 5; cut += 5) {
        double out[3 * KIND_W * KIND_H];
        size_t keep = cut < n ? cut : n - 1;
        CHECK(write_bytes(bad, bytes, keep) == 0, "write");
        truncations++;
        truncations_ok += image_load_target(bad, IMAGE_RGB_BITS, KIND_H, KIND_W, out) != DLCA_OK &&
                          strstr(err_message(), bad) != NULL;
    }
    CHECK(truncations > 20 && truncations_ok == truncations, "%d of %d truncated files failed cleanly", truncations_ok,
          truncations);

    CHECK(write_bytes(bad, bytes, n) == 0, "write");
    {
        double out[3 * 20 * 18];
        CHECK(image_load_target(bad, IMAGE_RGB_BITS, KIND_H, KIND_W, out) == DLCA_OK, "the intact copy: %s",
              err_message());
        CHECK(image_load_target(bad, IMAGE_RGB_BITS, 18, 20, out) != DLCA_OK, "an 11x7 file loaded as 20x18");
        CHECK(strstr(err_message(), "is 11x7, the preset needs 20x18"), "message: %s", err_message());
    }
    free(copy);
    free(bytes);
}

static void remove_scratch(void)
{
    const char *keep = getenv("DLCA_TEST_KEEP");
    if (keep && keep[0] == '1') {
        fprintf(stderr, "test_image_png: kept %s\n", scratch);
        return;
    }
    for (int i = 0; i < made_count; i++) unlink(made[i]);
    CHECK(rmdir(scratch) == 0, "%s is not empty: a temporary file was left behind", scratch);
}

int main(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/dlca_image_XXXXXX");
    if (!mkdtemp(scratch)) {
        perror("mkdtemp");
        return 1;
    }
    find_source_root();
    test_assets();
    test_within();
    test_every_kind();
    test_premultiply();
    test_strip_view(IMAGE_CHANNEL0, 1);
    test_strip_view(IMAGE_RGB, 4);
    test_frame();
    test_write_errors();
    test_broken_files();
    remove_scratch();
    return test_finish("test_image_png");
}
