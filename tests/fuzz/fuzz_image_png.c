/* fuzz_image_png.c: libFuzzer target for image_load_target and image_load_target_within (on a
 * grid 3 rows and 5 columns larger, whose border must come out off). The loader reads a path, so
 * each input goes to a file in /dev/shm (or TMPDIR) first. The size it asks for is the one the
 * file's IHDR claims (capped at 64x64, so huge claims are refused as the wrong size, which
 * is the path a real preset takes), so the fuzzer reaches the decoder rather than stopping at
 * the size check. Each input is tried twice, as it is and with every chunk's CRC made right, so
 * mutations get past libpng's CRC check into the chunk parsers and the decoder. (Debian's
 * libpng is not instrumented: coverage guides only through our side; the target is there to
 * hold our wrapper's contract: bits out, or an error naming the file, no leak, no overrun.)
 * Seeds: tests/fuzz/corpus_png/. */
#include "crc32.h"
#include "error.h"
#include "image_png.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_SIDE = 64, MORE_ROWS = 3, MORE_COLUMNS = 5 };

static char path[256];

static uint32_t be32(const uint8_t *b) { return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]; }

/* IHDR width and height when the input has them (bytes 16..23 of a PNG), clamped to 1..MAX_SIDE;
 * 1 when they needed no clamping (a decoded file then has that size). */
static int claimed_size(const uint8_t *data, size_t size, int *height, int *width)
{
    uint32_t w = size >= 24 ? be32(data + 16) : 16, h = size >= 24 ? be32(data + 20) : 16;
    *width = w < 1 ? 1 : w > MAX_SIDE ? MAX_SIDE : (int)w;
    *height = h < 1 ? 1 : h > MAX_SIDE ? MAX_SIDE : (int)h;
    return (uint32_t)*width == w && (uint32_t)*height == h;
}

static void load(image_target_mode mode, int height, int width)
{
    static double out[3 * MAX_SIDE * MAX_SIDE];
    err_clear();
    if (image_load_target(path, mode, height, width, out) == DLCA_OK) {
        size_t n = (size_t)image_target_channels(mode) * (size_t)height * (size_t)width;
        for (size_t i = 0; i < n; i++)
            if (out[i] != 0.0 && out[i] != 1.0) fprintf(stderr, "value %g is not a bit\n", out[i]), abort();
    } else if (!strstr(err_message(), path)) {
        fprintf(stderr, "refused without naming the file: '%s'\n", err_message());
        abort();
    }
}

/* The picture within a grid MORE_ROWS x MORE_COLUMNS larger: bits, and off outside the picture
 * when its size is known (`exact`), which sits (MORE_ROWS / 2, MORE_COLUMNS / 2) from the corner. */
static void load_within(image_target_mode mode, int height, int width, int exact)
{
    static double out[3 * (MAX_SIDE + MORE_ROWS) * (MAX_SIDE + MORE_COLUMNS)];
    int gh = height + MORE_ROWS, gw = width + MORE_COLUMNS, top = MORE_ROWS / 2, left = MORE_COLUMNS / 2;
    err_clear();
    if (image_load_target_within(path, mode, gh, gw, out, NULL) != DLCA_OK) {
        if (strstr(err_message(), path)) return;
        fprintf(stderr, "refused without naming the file: '%s'\n", err_message());
        abort();
    }
    for (int c = 0; c < image_target_channels(mode); c++)
        for (int y = 0; y < gh; y++)
            for (int x = 0; x < gw; x++) {
                double v = out[((size_t)c * (size_t)gh + (size_t)y) * (size_t)gw + (size_t)x];
                int border = y < top || y >= top + height || x < left || x >= left + width;
                if (v != 0.0 && v != 1.0) fprintf(stderr, "value %g is not a bit\n", v), abort();
                if (exact && border && v != 0.0) fprintf(stderr, "border cell (%d, %d) is on\n", y, x), abort();
            }
}

/* Rewrites each chunk's CRC (over type and data, big-endian after the data), as far as the
 * chunk lengths hold together. */
static void fix_chunk_crcs(uint8_t *png, size_t size)
{
    for (size_t at = 8; at + 12 <= size;) {
        size_t length = be32(png + at);
        if (length > size - at - 12) break;
        uint32_t crc = crc32_update(0, png + at + 4, length + 4);
        for (int i = 0; i < 4; i++) png[at + 8 + length + (size_t)i] = (uint8_t)(crc >> (24 - 8 * i));
        at += 12 + length;
    }
}

static void try_bytes(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        abort();
    }
    int height, width, exact = claimed_size(data, size, &height, &width);
    load(IMAGE_RGB_BITS, height, width);
    load(IMAGE_SILHOUETTE, height, width);
    load_within(IMAGE_RGB_BITS, height, width, exact);
    load_within(IMAGE_SILHOUETTE, height, width, exact);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(path, sizeof path, "%s/dlca_fuzz_png_%d.png", dir, (int)getpid());
    }
    try_bytes(data, size);
    uint8_t *fixed = malloc(size ? size : 1);
    if (fixed) {
        memcpy(fixed, data, size);
        fix_chunk_crcs(fixed, size);
        try_bytes(fixed, size);
        free(fixed);
    }
    unlink(path);
    return 0;
}
