/* test_tn_idx.c: the IDX reader. Valid images in memory, as plain and as gzip files, with
 * big-endian elements of several types; malformed input (bad magic, unknown type, bad dim
 * count, truncated header or data, trailing bytes, oversized header, corrupt gzip, missing
 * file, mismatched image/label counts) fails with a message naming the problem. */
#include "check.h"
#include "error.h"
#include "tn_idx.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* A u8 file of shape [2,2,3] holding 0..11. */
static size_t make_u8(unsigned char *buf)
{
    const unsigned char head[16] = {0, 0, 0x08, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
    memcpy(buf, head, 16);
    for (int i = 0; i < 12; i++) buf[16 + i] = (unsigned char)i;
    return 28;
}

static void test_parse_valid(void)
{
    unsigned char buf[64];
    size_t n = make_u8(buf);
    tn_idx idx;
    CHECK(tn_idx_parse(&idx, buf, n, "u8") == DLCA_OK, "parse: %s", err_message());
    CHECK(idx.type == TN_IDX_U8 && idx.ndim == 3 && idx.dims[0] == 2 && idx.dims[2] == 3 && idx.count == 12, "header");
    CHECK(tn_idx_get(&idx, 11) == 11, "last element");
    tn_idx_free(&idx);

    /* int16 -2 and float 1.5 stored big-endian */
    const unsigned char i16[] = {0, 0, 0x0B, 1, 0, 0, 0, 2, 0xFF, 0xFE, 0x01, 0x00};
    CHECK(tn_idx_parse(&idx, i16, sizeof i16, "i16") == DLCA_OK && tn_idx_get(&idx, 0) == -2 &&
              tn_idx_get(&idx, 1) == 256, "int16 big-endian");
    tn_idx_free(&idx);
    const unsigned char f32[] = {0, 0, 0x0D, 1, 0, 0, 0, 1, 0x3F, 0xC0, 0, 0};
    CHECK(tn_idx_parse(&idx, f32, sizeof f32, "f32") == DLCA_OK && tn_idx_get(&idx, 0) == 1.5, "float big-endian");
    tn_idx_free(&idx);
}

/* Parses `len` bytes and expects failure with `needle` in the message. */
static void expect_error(const char *what, const unsigned char *buf, size_t len, const char *needle)
{
    tn_idx idx;
    int status = tn_idx_parse(&idx, buf, len, what);
    CHECK(status != DLCA_OK && strstr(err_message(), needle) && strstr(err_message(), what),
          "%s: want '%s', got '%s'", what, needle, err_message());
    CHECK(idx.data == NULL, "%s: nothing left allocated", what);
}

static void test_parse_malformed(void)
{
    unsigned char buf[64];
    size_t n = make_u8(buf);
    unsigned char bad[64];

    memcpy(bad, buf, n), bad[1] = 8;
    expect_error("magic", bad, n, "bad magic");
    memcpy(bad, buf, n), bad[2] = 0x07;
    expect_error("type", bad, n, "unknown element type 0x07");
    memcpy(bad, buf, n), bad[3] = 0;
    expect_error("zero-dims", bad, n, "0 dims");
    memcpy(bad, buf, n), bad[3] = 9;
    expect_error("nine-dims", bad, n, "9 dims");
    expect_error("short-header", buf, 3, "truncated header");
    expect_error("cut-dims", buf, 10, "dims cut off");
    expect_error("short-data", buf, n - 1, "truncated");
    memcpy(bad, buf, n), bad[n] = 0;
    expect_error("trailing", bad, n + 1, "trailing bytes");
    /* 4 dims of 65535: 2^64-ish bytes, refused before any allocation */
    const unsigned char huge[] = {0, 0, 0x0E, 4, 0, 0, 0xFF, 0xFF, 0, 0, 0xFF, 0xFF, 0, 0, 0xFF, 0xFF, 0, 0, 0xFF, 0xFF};
    expect_error("huge", huge, sizeof huge, "more than");
}

static void write_file(const char *path, const unsigned char *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f) return;
    fwrite(buf, 1, n, f);
    fclose(f);
}

static void write_gz(const char *path, const unsigned char *buf, size_t n)
{
    gzFile gz = gzopen(path, "wb");
    CHECK(gz != NULL, "cannot write %s", path);
    if (!gz) return;
    gzwrite(gz, buf, (unsigned)n);
    gzclose(gz);
}

static void test_files(const char *dir)
{
    unsigned char buf[64], labels[11] = {0, 0, 0x08, 1, 0, 0, 0, 3, 0, 1, 2};
    char plain[512], gz[512], cut[512], corrupt[512], lab[512];
    size_t n = make_u8(buf);
    snprintf(plain, sizeof plain, "%s/images.idx", dir);
    snprintf(gz, sizeof gz, "%s/images.idx.gz", dir);
    snprintf(cut, sizeof cut, "%s/cut.idx.gz", dir);
    snprintf(corrupt, sizeof corrupt, "%s/corrupt.idx.gz", dir);
    snprintf(lab, sizeof lab, "%s/labels.idx", dir);
    write_file(plain, buf, n);
    write_gz(gz, buf, n);
    write_gz(cut, buf, n - 5);
    write_file(lab, labels, sizeof labels);

    tn_idx a, b;
    CHECK(tn_idx_load(&a, plain) == DLCA_OK && a.count == 12, "plain file: %s", err_message());
    CHECK(tn_idx_load(&b, gz) == DLCA_OK && b.count == 12 && memcmp(a.data, b.data, 12) == 0, "gzip file: %s",
          err_message());
    tn_idx_free(&a), tn_idx_free(&b);
    CHECK(tn_idx_load(&a, cut) != DLCA_OK && strstr(err_message(), "truncated"), "cut gzip: %s", err_message());

    /* a gzip header followed by garbage */
    FILE *f = fopen(gz, "rb");
    unsigned char z[256];
    size_t zn = f ? fread(z, 1, sizeof z, f) : 0;
    if (f) fclose(f);
    for (size_t i = 10; i < zn; i++) z[i] ^= 0x5A;
    write_file(corrupt, z, zn);
    CHECK(tn_idx_load(&a, corrupt) != DLCA_OK && strstr(err_message(), "corrupt.idx.gz"), "corrupt gzip: %s",
          err_message());

    CHECK(tn_idx_load(&a, "/nonexistent/t10k.idx") != DLCA_OK && strstr(err_message(), "cannot open"),
          "missing file: %s", err_message());
    CHECK(tn_idx_load_pair(plain, lab, &a, &b) != DLCA_OK && strstr(err_message(), "has 2 items but"),
          "count mismatch: %s", err_message());
    CHECK(a.data == NULL && b.data == NULL, "pair failure frees both");
    unlink(plain), unlink(gz), unlink(cut), unlink(corrupt), unlink(lab);
}

int main(void)
{
    char dir[] = "/tmp/test_tn_idx_XXXXXX";
    test_parse_valid();
    test_parse_malformed();
    if (mkdtemp(dir)) {
        test_files(dir);
        rmdir(dir);
    } else {
        CHECK(0, "mkdtemp failed");
    }
    return test_finish("test_tn_idx");
}
