/* image_png.c: PNG targets in and frames out through libpng (the loss-curve plot is in
 * image_plot.c). libpng reports errors by calling a handler that must not return; ours keeps
 * the message and longjmps back to the setjmp in the one function that drives libpng. Every
 * value that function changes after setjmp lives in a struct owned by its caller, never in its
 * own locals, so a longjmp cannot leave it stale and the caller always frees what was made. */
#include "image_png.h"

#include "atomic_file.h"
#include "ca_config.h"
#include "error.h"

#include <png.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PNG_SIGNATURE_BYTES = 8, RGBA16_BYTES = 8 };

/* Pictures dlca reads are targets, the size of a grid: libpng refuses a larger header itself.
 * libpng 1.6 reads a text chunk into a buffer of the length the chunk claims, cleared first,
 * whatever png_set_chunk_malloc_max says (that caps decompression only): a 44-byte file with a
 * tEXt chunk claiming 2^31-1 bytes made it take 2 GiB before finding the file short. So the
 * reader's allocator refuses any one block over IMAGE_READ_MAX_CHUNK; libpng then skips the
 * chunk with a warning (an ancillary one) or fails. No chunk dlca can use (IHDR, PLTE, tRNS,
 * gAMA, an iCCP profile) nor a row of a CA_MAX_SIDE-wide picture comes near 8 MiB, decompressed
 * or not; past 64 ancillary chunks libpng drops the rest (with a warning) instead of keeping them. */
enum { IMAGE_READ_MAX_SIDE = CA_MAX_SIDE, IMAGE_READ_MAX_CHUNK = 8 << 20, IMAGE_READ_MAX_CHUNKS = 64 };

/* Where libpng's error handler leaves its message. First member, so the error pointer works
 * for both the reader and the writer below. */
typedef struct {
    char text[200];
} image_libpng_message;

static void on_libpng_error(png_structp png, png_const_charp message)
{
    image_libpng_message *m = png_get_error_ptr(png);
    snprintf(m->text, sizeof m->text, "%s", message);
    png_longjmp(png, 1);
}

/* Warnings (an odd colour profile, a bad ancillary chunk's CRC) do not affect the pixels,
 * and library code does not print. */
static void on_libpng_warning(png_structp png, png_const_charp message)
{
    (void)png;
    (void)message;
}

/* ---------------------------------------------------------------- reading ---- */

typedef struct {
    image_libpng_message message;
    char warning[200];     /* libpng's first warning, told with an error that follows it */
    const char *path;
    FILE *file;
    png_structp png;
    png_infop info;
    unsigned char *pixels; /* [height][width] RGBA, 16 bits a sample, big-endian */
    png_bytep *rows;
    int colours;           /* colour channels of the file itself: 1 grey, 3 colour or palette */
    int height, width;     /* the file's own size, once decoded */
} image_reader;

static void reader_free(image_reader *r)
{
    if (r->png) png_destroy_read_struct(&r->png, r->info ? &r->info : NULL, NULL);
    if (r->file) fclose(r->file);
    free(r->rows);
    free(r->pixels);
}

/* libpng's allocations while reading: none may be larger than IMAGE_READ_MAX_CHUNK. */
static png_voidp reader_malloc(png_structp png, png_alloc_size_t size)
{
    (void)png;
    return size <= IMAGE_READ_MAX_CHUNK ? malloc(size) : NULL;
}

static void reader_free_block(png_structp png, png_voidp block)
{
    (void)png;
    free(block);
}

/* Keeps the first warning: "tEXt: insufficient memory to read chunk" explains a "Read Error". */
static void on_reader_warning(png_structp png, png_const_charp message)
{
    image_reader *r = png_get_error_ptr(png);
    if (!r->warning[0]) snprintf(r->warning, sizeof r->warning, "%s", message);
}

/* Opens the file and checks the signature, so "not a PNG" is told apart from "corrupt". */
static int reader_open(image_reader *r)
{
    unsigned char signature[PNG_SIGNATURE_BYTES];
    size_t got;
    r->file = fopen(r->path, "rb");
    if (!r->file) return err_set(DLCA_ERR, "cannot open %s: %s", r->path, strerror(errno));
    got = fread(signature, 1, sizeof signature, r->file);
    if (ferror(r->file)) return err_set(DLCA_ERR, "cannot read %s: %s", r->path, strerror(errno));
    if (got == 0) return err_set(DLCA_ERR, "%s: empty file, not a PNG", r->path);
    if (got < sizeof signature || png_sig_cmp(signature, 0, sizeof signature))
        return err_set(DLCA_ERR, "%s: not a PNG file (bad signature)", r->path);
    r->png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, r, on_libpng_error, on_reader_warning, NULL,
                                      reader_malloc, reader_free_block);
    if (r->png) r->info = png_create_info_struct(r->png);
    if (!r->png || !r->info) return err_set(DLCA_ERR_NOMEM, "%s: out of memory starting libpng", r->path);
    png_set_user_limits(r->png, IMAGE_READ_MAX_SIDE, IMAGE_READ_MAX_SIDE);
    png_set_chunk_malloc_max(r->png, IMAGE_READ_MAX_CHUNK);
    png_set_chunk_cache_max(r->png, IMAGE_READ_MAX_CHUNKS);
    return DLCA_OK;
}

/* Asks libpng for 16-bit RGBA whatever the file holds: palette and low bit depths expand,
 * tRNS becomes alpha, grey is copied to R, G, B and opaque files get alpha = 1. Sixteen bits
 * keep 16-bit files exact and 8-bit ones too (v * 257 / 65535 = v / 255). */
static void reader_set_transforms(png_structp png, png_infop info)
{
    int colour = png_get_color_type(png, info);
    png_set_expand(png);
    png_set_expand_16(png);
    if (!(colour & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
    if (!(colour & PNG_COLOR_MASK_ALPHA) && !png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_add_alpha(png, 0xffff, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

/* Decodes the whole file into r->pixels: a file of exactly height x width, or with `within` one of
 * at most that. Changes only *r after setjmp (see the file comment). */
static int reader_decode(image_reader *r, int height, int width, int within)
{
    png_uint_32 w, h;
    if (setjmp(png_jmpbuf(r->png))) {
        if (strstr(r->message.text, "exceeds user limit") || strstr(r->warning, "exceeds user limit"))
            return err_set(DLCA_ERR, "%s: larger than %dx%d pixels, the largest grid dlca runs (%s)", r->path,
                           IMAGE_READ_MAX_SIDE, IMAGE_READ_MAX_SIDE,
                           strstr(r->warning, "exceeds user limit") ? r->warning : r->message.text);
        if (r->warning[0])
            return err_set(DLCA_ERR, "%s: corrupt or truncated PNG: %s (after: %s)", r->path, r->message.text,
                           r->warning);
        return err_set(DLCA_ERR, "%s: corrupt or truncated PNG: %s", r->path, r->message.text);
    }
    png_init_io(r->png, r->file);
    png_set_sig_bytes(r->png, PNG_SIGNATURE_BYTES);
    png_read_info(r->png, r->info);
    w = png_get_image_width(r->png, r->info);
    h = png_get_image_height(r->png, r->info);
    r->colours = png_get_color_type(r->png, r->info) & PNG_COLOR_MASK_COLOR ? 3 : 1;
    if (!within && (w != (png_uint_32)width || h != (png_uint_32)height))
        return err_set(DLCA_ERR, "%s: is %lux%lu, the preset needs %dx%d", r->path, (unsigned long)w,
                       (unsigned long)h, width, height);
    if (within && (w > (png_uint_32)width || h > (png_uint_32)height))
        return err_set(DLCA_ERR, "%s: is %lux%lu (height x width, as --grid), larger than the %dx%d grid (a smaller "
                       "picture is centred on it)", r->path, (unsigned long)h, (unsigned long)w, height, width);
    r->width = (int)w, r->height = (int)h;
    reader_set_transforms(r->png, r->info);
    if (png_get_rowbytes(r->png, r->info) != (size_t)w * RGBA16_BYTES)
        return err_set(DLCA_ERR, "%s: libpng did not give 16-bit RGBA rows", r->path);
    r->pixels = malloc((size_t)h * (size_t)w * RGBA16_BYTES);
    r->rows = malloc((size_t)h * sizeof *r->rows);
    if (!r->pixels || !r->rows) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for %lux%lu pixels", r->path,
                                                (unsigned long)w, (unsigned long)h);
    for (png_uint_32 y = 0; y < h; y++) r->rows[y] = r->pixels + (size_t)y * w * RGBA16_BYTES;
    png_read_image(r->png, r->rows);
    png_read_end(r->png, NULL); /* reads up to IEND, so a file cut after the pixels is caught too */
    return DLCA_OK;
}

static double sample16(const unsigned char *p) { return (double)((unsigned)p[0] << 8 | p[1]) / 65535.0; }

/* Premultiplies by alpha and thresholds, per docs/design.md section 4. */
static void binarise(const unsigned char *pixels, size_t n, image_target_mode mode, double *out)
{
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = pixels + i * RGBA16_BYTES;
        double alpha = sample16(p + 6);
        double rgb[3] = {sample16(p) * alpha, sample16(p + 2) * alpha, sample16(p + 4) * alpha};
        if (mode == IMAGE_RGB_BITS) {
            for (int c = 0; c < 3; c++) out[(size_t)c * n + i] = rgb[c] > 0.5 ? 1.0 : 0.0;
        } else {
            out[i] = rgb[0] > 0.26 || rgb[1] > 0.26 || rgb[2] > 0.26 ? 1.0 : 0.0;
        }
    }
}

int image_target_channels(image_target_mode mode) { return mode == IMAGE_RGB_BITS ? 3 : 1; }

/* The reading both loaders share; `within` as reader_decode's. */
static int load_target(const char *path, image_target_mode mode, int height, int width, int within, double *out,
                       int *colours)
{
    image_reader r = {.path = path};
    int status;
    if (!path || !out) return err_set(DLCA_ERR, "image_load_target: NULL path or output");
    if (mode != IMAGE_RGB_BITS && mode != IMAGE_SILHOUETTE)
        return err_set(DLCA_ERR, "%s: unknown target mode %d", path, (int)mode);
    if (height < 1 || width < 1 || height > IMAGE_READ_MAX_SIDE || width > IMAGE_READ_MAX_SIDE)
        return err_set(DLCA_ERR, "%s: asked for a %dx%d target", path, width, height);
    status = reader_open(&r);
    if (status == DLCA_OK) status = reader_decode(&r, height, width, within);
    double *picture = NULL;
    size_t n = (size_t)height * (size_t)width, pn = (size_t)r.height * (size_t)r.width;
    if (status == DLCA_OK && pn < n && !(picture = malloc(pn * (size_t)image_target_channels(mode) * sizeof *picture)))
        status = err_set(DLCA_ERR_NOMEM, "%s: out of memory for %dx%d pixels", path, r.width, r.height);
    if (status == DLCA_OK && !picture) binarise(r.pixels, n, mode, out);
    if (status == DLCA_OK && picture) {
        /* centred, the border off: (grid - picture) / 2 cells above and to the left, rounded down */
        int top = (height - r.height) / 2, left = (width - r.width) / 2;
        binarise(r.pixels, pn, mode, picture);
        memset(out, 0, n * (size_t)image_target_channels(mode) * sizeof *out);
        for (int c = 0; c < image_target_channels(mode); c++)
            for (int y = 0; y < r.height; y++)
                memcpy(out + (size_t)c * n + (size_t)(y + top) * (size_t)width + (size_t)left,
                       picture + (size_t)c * pn + (size_t)y * (size_t)r.width, (size_t)r.width * sizeof *out);
    }
    if (status == DLCA_OK && colours) *colours = r.colours;
    free(picture);
    reader_free(&r);
    return status;
}

int image_load_target(const char *path, image_target_mode mode, int height, int width, double *out)
{
    return load_target(path, mode, height, width, 0, out, NULL);
}

int image_load_target_within(const char *path, image_target_mode mode, int height, int width, double *out,
                             int *colours)
{
    return load_target(path, mode, height, width, 1, out, colours);
}

int image_count_colours(const double *target, int pixels)
{
    int seen[8] = {0}, count = 0;
    for (size_t i = 0; i < (size_t)(pixels > 0 ? pixels : 0); i++) {
        int code = 0;
        for (int c = 0; c < 3; c++) code |= (target[(size_t)c * (size_t)pixels + i] > 0.5) << c;
        if (!seen[code]) count++;
        seen[code] = 1;
    }
    return count;
}

/* ---------------------------------------------------------------- writing ---- */

typedef struct {
    image_libpng_message message;
    const char *path;
    FILE *file;
    png_structp png;
    png_infop info;
} image_writer;

/* Encodes rgb into w->file. Changes only *w after setjmp (see the file comment). */
static int writer_encode(image_writer *w, const unsigned char *rgb, int width, int height)
{
    w->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &w->message, on_libpng_error, on_libpng_warning);
    if (w->png) w->info = png_create_info_struct(w->png);
    if (!w->png || !w->info) return err_set(DLCA_ERR_NOMEM, "%s: out of memory starting libpng", w->path);
    if (setjmp(png_jmpbuf(w->png))) return err_set(DLCA_ERR, "cannot write %s: %s", w->path, w->message.text);
    png_init_io(w->png, w->file);
    png_set_IHDR(w->png, w->info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(w->png, w->info);
    for (int y = 0; y < height; y++) png_write_row(w->png, rgb + (size_t)y * (size_t)width * 3);
    png_write_end(w->png, w->info);
    return DLCA_OK;
}

/* Writes through atomic_file.h's exclusive temp file beside `path`, then renames it over it. */
static int write_atomically(const char *path, const unsigned char *rgb, int width, int height)
{
    image_writer w = {.path = path};
    atomic_file out;
    if (atomic_file_begin(&out, path)) return DLCA_ERR;
    int status = (w.file = atomic_file_stream(&out)) ? writer_encode(&w, rgb, width, height) : DLCA_ERR;
    if (w.png) png_destroy_write_struct(&w.png, w.info ? &w.info : NULL);
    if (status == DLCA_OK) status = atomic_file_commit(&out);
    if (status != DLCA_OK) atomic_file_abort(&out);
    return status;
}

int image_write_rgb(const char *path, const unsigned char *rgb, int width, int height)
{
    if (!path || !rgb) return err_set(DLCA_ERR, "image_write_rgb: NULL path or pixels");
    if (width < 1 || height < 1 || width > IMAGE_MAX_SIDE || height > IMAGE_MAX_SIDE)
        return err_set(DLCA_ERR, "%s: cannot write a %dx%d picture", path, width, height);
    return write_atomically(path, rgb, width, height);
}
