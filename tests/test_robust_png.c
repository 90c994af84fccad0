/* test_robust_png: what test_image_png leaves out about PNG targets. Headers that claim absurd
 * or invalid sizes are refused before any pixel memory is taken; palette indices past the
 * palette, a missing IDAT and data after IEND load cleanly or fail with the file named; and
 * through `dlca train --target`, 16-bit, palette, grey and grey+alpha pictures train on exactly
 * the bits image_load_target gives, while corrupt, truncated, foreign, empty and wrongly sized
 * files are refused with one line and no model file. */
#include "ca_file.h"
#include "crc32.h"
#include "error.h"
#include "image_png.h"
#include "robust.h"

#include <png.h>
#include <sys/resource.h>

enum { SIDE = 20 }; /* the pictures' side: the lizard's picture, trained here on a grid of that side */

/* ---- writing test pictures with libpng ---- */

/* Four colours in 5x5 blocks, with four alphas, so the silhouette has both values. */
static void picture_rgba(int x, int y, unsigned char rgba[4])
{
    static const unsigned char table[4][4] = {{250, 40, 40, 255}, {20, 20, 20, 255}, {240, 240, 240, 90}, {0, 200, 0, 0}};
    memcpy(rgba, table[(x / 5 + y / 5) % 4], 4);
}

/* Writes the picture as `colour` (a PNG_COLOR_TYPE_*) at `depth` 8 or 16. */
static int write_picture(const char *path, int colour, int depth)
{
    FILE *f = fopen(path, "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    unsigned char row[SIDE * 8];
    int status = -1;
    if (f && png && info && !setjmp(png_jmpbuf(png))) {
        png_init_io(png, f);
        png_set_IHDR(png, info, SIDE, SIDE, depth, colour, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                     PNG_FILTER_TYPE_DEFAULT);
        if (colour == PNG_COLOR_TYPE_PALETTE) {
            png_color palette[4];
            png_byte alpha[4];
            for (int i = 0; i < 4; i++) {
                unsigned char rgba[4];
                picture_rgba(5 * i, 0, rgba);
                palette[i] = (png_color){rgba[0], rgba[1], rgba[2]}, alpha[i] = rgba[3];
            }
            png_set_PLTE(png, info, palette, 4);
            png_set_tRNS(png, info, alpha, 4, NULL);
        }
        png_write_info(png, info);
        int channels = colour == PNG_COLOR_TYPE_PALETTE ? 1 : colour == PNG_COLOR_TYPE_GRAY ? 1
                       : colour == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 4;
        for (int y = 0; y < SIDE; y++) {
            for (int x = 0; x < SIDE; x++) {
                unsigned char rgba[4], sample[4];
                picture_rgba(x, y, rgba);
                int n = 0;
                if (colour == PNG_COLOR_TYPE_PALETTE) sample[n++] = (unsigned char)((x / 5 + y / 5) % 4);
                else if (colour & PNG_COLOR_MASK_COLOR) memcpy(sample, rgba, 4), n = 4;
                else sample[n++] = rgba[0], sample[n] = rgba[3], n += colour == PNG_COLOR_TYPE_GRAY_ALPHA;
                for (int c = 0; c < channels && c < n; c++) {
                    if (depth == 16) row[(x * channels + c) * 2] = sample[c], row[(x * channels + c) * 2 + 1] = sample[c];
                    else row[x * channels + c] = sample[c];
                }
            }
            png_write_row(png, row);
        }
        png_write_end(png, info);
        status = 0;
    }
    png_destroy_write_struct(&png, &info);
    if (f && fclose(f)) status = -1;
    return status;
}

/* ---- bytes ---- */

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data = malloc(1 << 16);
    *size = f && data ? fread(data, 1, 1 << 16, f) : 0;
    if (f) fclose(f);
    return data;
}

static void write_all(const char *path, const unsigned char *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, size, f) == size, "cannot write %s", path);
    if (f) fclose(f);
}

static void put_be32(unsigned char *at, uint32_t v)
{
    for (int i = 0; i < 4; i++) at[i] = (unsigned char)(v >> (24 - 8 * i));
}

/* Recomputes the CRC of the chunk starting at `chunk` (its length field). */
static void fix_chunk_crc(unsigned char *png, size_t chunk)
{
    uint32_t length = (uint32_t)png[chunk] << 24 | (uint32_t)png[chunk + 1] << 16 | (uint32_t)png[chunk + 2] << 8 |
                      png[chunk + 3];
    put_be32(png + chunk + 8 + length, crc32_update(0, png + chunk + 4, length + 4));
}

static long max_rss_kib(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

/* Loads `path` as a SIDE x SIDE silhouette: OK with 0/1 values (`may_load`), or an error
 * naming the file and containing `needle` (NULL: anything). Never more than 64 MiB. */
static void expect_clean(const char *path, int may_load, const char *needle, const char *what)
{
    double out[SIDE * SIDE];
    long before = max_rss_kib();
    err_clear();
    int status = image_load_target(path, IMAGE_SILHOUETTE, SIDE, SIDE, out);
    CHECK(max_rss_kib() - before < 64 * 1024, "%s: loading took %ld KiB", what, max_rss_kib() - before);
    if (status == DLCA_OK) {
        CHECK(may_load, "%s: loaded, but must be refused", what);
        int bits = 1;
        for (int i = 0; i < SIDE * SIDE; i++) bits &= out[i] == 0.0 || out[i] == 1.0;
        CHECK(bits, "%s: loaded values that are not bits", what);
        return;
    }
    CHECK(strstr(err_message(), path) && (!needle || strstr(err_message(), needle)), "%s: message '%s' names %s and '%s'",
          what, err_message(), path, needle ? needle : "");
}

/* ---- tests ---- */

/* IHDR sits at byte 8; width at 16, height at 20, bit depth 24, colour type 25. */
static void test_headers(void)
{
    char good[512], bad[512];
    snprintf(good, sizeof good, "%s", robust_path("good.png"));
    snprintf(bad, sizeof bad, "%s", robust_path("bad.png"));
    CHECK(write_picture(good, PNG_COLOR_TYPE_RGB_ALPHA, 8) == 0, "write %s", good);
    size_t size;
    unsigned char *bytes = read_all(good, &size), *copy = malloc(size + 64);
    static const struct {
        uint32_t width, height;
        const char *needle;
    } sizes[] = {{1000000, 1000000, "larger than 4096x4096 pixels, the largest grid dlca runs"},
                 {4097, 20, "larger than 4096x4096 pixels"}, {20, 4097, "larger than 4096x4096 pixels"},
                 {4096, 4096, "is 4096x4096, the preset needs 20x20"},
                 {0, 20, "corrupt"}, {20, 0, "corrupt"}, {0x7fffffffu, 20, NULL}, {0x80000000u, 20, "corrupt"}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        memcpy(copy, bytes, size);
        put_be32(copy + 16, sizes[i].width), put_be32(copy + 20, sizes[i].height);
        fix_chunk_crc(copy, 8);
        write_all(bad, copy, size);
        char what[96];
        snprintf(what, sizeof what, "IHDR %ux%u", sizes[i].width, sizes[i].height);
        expect_clean(bad, 0, sizes[i].needle, what);
    }
    /* Colour type 5 does not exist; depth 16 with a palette is not allowed. */
    memcpy(copy, bytes, size);
    copy[25] = 5, fix_chunk_crc(copy, 8), write_all(bad, copy, size);
    expect_clean(bad, 0, "corrupt", "colour type 5");
    memcpy(copy, bytes, size);
    copy[24] = 16, copy[25] = PNG_COLOR_TYPE_PALETTE, fix_chunk_crc(copy, 8), write_all(bad, copy, size);
    expect_clean(bad, 0, "corrupt", "16-bit palette");
    free(copy), free(bytes);
}

/* Offset of the first chunk of `type`, or 0. */
static size_t find_chunk(const unsigned char *png, size_t size, const char *type)
{
    for (size_t at = 8; at + 12 <= size;) {
        size_t length = (size_t)png[at] << 24 | (size_t)png[at + 1] << 16 | (size_t)png[at + 2] << 8 | png[at + 3];
        if (memcmp(png + at + 4, type, 4) == 0) return at;
        at += 12 + length;
    }
    return 0;
}

/* A 44-byte file: the signature, a 20x20 IHDR, and a text chunk that claims 2^31-1 bytes (and
 * has 3). libpng read such a chunk into a cleared buffer of the claimed size: 2 GiB of memory
 * before it found the file short. Now no libpng block may pass 8 MiB: refused, nothing taken
 * (expect_clean: under 64 MiB), in the API and through dlca train --target. */
static void test_huge_chunk_claims(void)
{
    static const char *const types[] = {"tEXt", "zTXt", "iTXt", "iCCP", "sPLT", "eXIf", "prIV"};
    char good[512], bad[512];
    snprintf(good, sizeof good, "%s", robust_path("rgb.png"));
    snprintf(bad, sizeof bad, "%s", robust_path("huge_chunk.png"));
    CHECK(write_picture(good, PNG_COLOR_TYPE_RGB_ALPHA, 8) == 0, "write %s", good);
    size_t size;
    unsigned char *bytes = read_all(good, &size);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        unsigned char file[44];
        memcpy(file, bytes, 33); /* signature and IHDR */
        put_be32(file + 33, 0x7fffffffu), memcpy(file + 37, types[t], 4), memcpy(file + 41, "abc", 3);
        write_all(bad, file, sizeof file);
        char what[64];
        snprintf(what, sizeof what, "a %s chunk claiming 2^31-1 bytes", types[t]);
        expect_clean(bad, 0, "corrupt or truncated PNG", what);
    }
    char args[4096];
    snprintf(args, sizeof args, "train --preset lizard --target '%s' --steps 1 --device cpu --out '%s'", bad,
             robust_path("x.dlca"));
    robust_refused("corrupt or truncated PNG", "x.dlca", args);
    /* A whole text chunk of 9 MiB, over the limit but really there: skipped with a warning, and
     * the picture after it loads. */
    size_t idat = find_chunk(bytes, size, "IDAT"), text = 9u << 20;
    unsigned char *big = calloc(size + text + 12, 1);
    if (big && idat) {
        memcpy(big, bytes, idat);
        put_be32(big + idat, (uint32_t)text), memcpy(big + idat + 4, "tEXt", 4), memcpy(big + idat + 8, "Comment", 7);
        put_be32(big + idat + 8 + text, crc32_update(0, big + idat + 4, text + 4));
        memcpy(big + idat + 12 + text, bytes + idat, size - idat);
        write_all(bad, big, size + text + 12);
        expect_clean(bad, 1, NULL, "a real 9 MiB tEXt chunk");
    }
    free(big), free(bytes);
}

static void test_chunks(void)
{
    char good[512], bad[512];
    snprintf(good, sizeof good, "%s", robust_path("palette.png"));
    snprintf(bad, sizeof bad, "%s", robust_path("bad.png"));
    CHECK(write_picture(good, PNG_COLOR_TYPE_PALETTE, 8) == 0, "write %s", good);
    size_t size;
    unsigned char *bytes = read_all(good, &size), *copy = malloc(size + 64);
    /* A palette of 4 whose pixels use indices up to 3: cut it to 2 entries (PLTE length 6). */
    size_t plte = find_chunk(bytes, size, "PLTE"), trns = find_chunk(bytes, size, "tRNS");
    CHECK(plte && trns, "the palette file has PLTE and tRNS");
    if (plte && trns) {
        size_t n = 0;
        memcpy(copy, bytes, plte), n = plte;             /* up to PLTE */
        put_be32(copy + n, 6), memcpy(copy + n + 4, bytes + plte + 4, 4 + 6), n += 14;
        n += 4, fix_chunk_crc(copy, plte);               /* PLTE with 2 entries and its CRC */
        size_t rest = trns;                               /* tRNS of 4 would be longer than PLTE: drop it */
        size_t trns_length = bytes[trns + 3];
        rest += 12 + trns_length;
        memcpy(copy + n, bytes + rest, size - rest), n += size - rest;
        write_all(bad, copy, n);
        expect_clean(bad, 1, NULL, "palette indices past a 2-entry palette");
    }
    /* No IDAT at all: IEND straight after the header chunks. */
    size_t idat = find_chunk(bytes, size, "IDAT"), iend = find_chunk(bytes, size, "IEND");
    if (idat && iend) {
        memcpy(copy, bytes, idat), memcpy(copy + idat, bytes + iend, size - iend);
        write_all(bad, copy, idat + size - iend);
        expect_clean(bad, 0, NULL, "no IDAT");
    }
    /* Bytes after IEND: the picture is complete, so it loads. */
    memcpy(copy, bytes, size), memcpy(copy + size, "trailing garbage", 16);
    write_all(bad, copy, size + 16);
    expect_clean(bad, 1, NULL, "data after IEND");
    /* Two IHDRs: libpng refuses the second. */
    if (idat) {
        memcpy(copy, bytes, idat), memcpy(copy + idat, bytes + 8, 25), memcpy(copy + idat + 25, bytes + idat, size - idat);
        write_all(bad, copy, size + 25);
        expect_clean(bad, 0, "corrupt", "a second IHDR");
    }
    free(copy), free(bytes);
}

/* dlca train --target on each kind: the model's target bits are what the API loads. */
static void test_train_on_kinds(void)
{
    static const struct {
        const char *name;
        int colour, depth;
    } kinds[] = {{"rgba16", PNG_COLOR_TYPE_RGB_ALPHA, 16}, {"palette-alpha", PNG_COLOR_TYPE_PALETTE, 8},
                 {"grey8", PNG_COLOR_TYPE_GRAY, 8}, {"grey16", PNG_COLOR_TYPE_GRAY, 16},
                 {"grey-alpha8", PNG_COLOR_TYPE_GRAY_ALPHA, 8}, {"rgb16", PNG_COLOR_TYPE_RGB, 16}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char png[512], model[512], err[8192];
        snprintf(png, sizeof png, "%s/%s.png", robust_scratch, kinds[k].name);
        snprintf(model, sizeof model, "%s/%s.dlca", robust_scratch, kinds[k].name);
        CHECK(write_picture(png, kinds[k].colour, kinds[k].depth) == 0, "write %s", png);
        int status = robust_run(err, sizeof err,
                                "train --preset lizard --grid %dx%d --target '%s' --T 1 --steps 1 --device cpu "
                                "--out '%s'",
                                SIDE, SIDE, png, model);
        CHECK(status == 0, "%s: dlca train exits 0 (%d): %s", kinds[k].name, status, err);
        double want[SIDE * SIDE];
        CHECK(image_load_target(png, IMAGE_SILHOUETTE, SIDE, SIDE, want) == DLCA_OK, "%s: %s", kinds[k].name,
              err_message());
        ca_model m;
        ca_target_image target;
        if (ca_file_load(model, &m, NULL, &target) != DLCA_OK) {
            CHECK(0, "%s: the model does not load: %s", kinds[k].name, err_message());
            continue;
        }
        int same = target.bits && target.channels == 1, on = 0;
        for (int i = 0; same && i < SIDE * SIDE; i++) same = target.bits[i] == (want[i] != 0.0), on += target.bits[i];
        CHECK(same, "%s: the model's target bits are the picture's silhouette", kinds[k].name);
        CHECK(on > 0 && on < SIDE * SIDE, "%s: the silhouette has both values (%d on)", kinds[k].name, on);
        ca_model_free(&m), ca_target_image_free(&target);
    }
}

/* A picture target meets a config's loss channels: the image preset compares R, G and B, so a
 * grey picture (one colour channel copied to three) is refused; a colour one of the same size
 * trains. Uses the pictures test_train_on_kinds wrote. */
static void test_grey_for_colour_target(void)
{
    static const char *const grey[] = {"grey8", "grey16", "grey-alpha8"};
    char args[4096];
    for (size_t k = 0; k < sizeof grey / sizeof grey[0]; k++) {
        char png[512];
        snprintf(png, sizeof png, "%s/%s.png", robust_scratch, grey[k]);
        snprintf(args, sizeof args, "train --preset image --grid 20x20 --target '%s' --T 1 --steps 1 --device cpu --out '%s'",
                 png, robust_path("x.dlca"));
        robust_refused("a grey picture has 1 colour channel, but preset 'image' compares 3 (R, G, B)", "x.dlca", args);
        robust_refused(png, "x.dlca", args);
    }
    char err[8192];
    snprintf(args, sizeof args, "train --preset image --grid 20x20 --target '%s/rgb16.png' --T 1 --steps 1 --device cpu --out '%s'",
             robust_scratch, robust_path("x.dlca"));
    int status = robust_run(err, sizeof err, "%s", args);
    CHECK(status == 0 && robust_exists(robust_path("x.dlca")), "a colour picture trains the image preset (%d): %s",
          status, err);
}

static void test_train_refuses(void)
{
    char good[512], args[4096];
    snprintf(good, sizeof good, "%s", robust_path("rgba16.png"));
    size_t size;
    unsigned char *bytes = read_all(good, &size);
    size_t idat = find_chunk(bytes, size, "IDAT");
    struct {
        const char *name, *needle;
        size_t keep;  /* bytes kept */
        size_t flip;  /* byte to flip, or 0 */
    } cases[] = {{"corrupt.png", "corrupt", size, idat + 20}, {"truncated.png", "corrupt or truncated", size / 2, 0},
                 {"text.png", "not a PNG", 0, 0}, {"empty.png", "empty file", 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", robust_scratch, cases[i].name);
        if (strcmp(cases[i].name, "text.png") == 0) write_all(path, (const unsigned char *)"just some text\n", 15);
        else {
            if (cases[i].flip) bytes[cases[i].flip] ^= 0x40;
            write_all(path, bytes, cases[i].keep);
            if (cases[i].flip) bytes[cases[i].flip] ^= 0x40;
        }
        snprintf(args, sizeof args, "train --preset lizard --target '%s' --steps 1 --device cpu --out '%s'", path,
                 robust_path("x.dlca"));
        robust_refused(cases[i].needle, "x.dlca", args);
        robust_refused(cases[i].name, "x.dlca", args);
    }
    snprintf(args, sizeof args, "train --preset image --target '%s/lizard20.png' --steps 1 --device cpu --out '%s'",
             DLCA_ASSET_DIR, robust_path("x.dlca"));
    robust_refused("is 20x20 (height x width, as --grid), larger than the 16x16 grid", "x.dlca", args);
    snprintf(args, sizeof args, "train --preset lizard --target '%s' --steps 1 --device cpu --out '%s'", robust_scratch,
             robust_path("x.dlca"));
    robust_refused(robust_scratch, "x.dlca", args);
    snprintf(args, sizeof args, "train --preset gol --target '%s' --steps 1 --device cpu --out '%s'", good,
             robust_path("x.dlca"));
    robust_refused("has no picture target", "x.dlca", args);
    free(bytes);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (robust_init(argv[0], "robust_png")) return 1;
    test_headers();
    test_chunks();
    test_huge_chunk_claims();
    test_train_on_kinds();
    test_grey_for_colour_target();
    test_train_refuses();
    robust_cleanup();
    return test_finish("test_robust_png");
}
