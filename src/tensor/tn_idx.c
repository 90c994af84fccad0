/* tn_idx.c: IDX reader. Layout: two zero bytes, a type code, the number of dims, each dim as
 * a big-endian uint32, then the elements big-endian in C order. Files go through zlib's gzread,
 * which passes plain files through unchanged, so .gz and raw files take the same path. */
#include "tn_idx.h"

#include "error.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Refuse headers that declare more than this, before allocating. */
#define IDX_MAX_BYTES ((size_t)1 << 32)

/* A byte source: a gzip/plain file or a memory block. */
typedef struct {
    gzFile gz;
    const unsigned char *mem;
    size_t len, pos;
    const char *name;
} source;

/* Reads up to n bytes into dst; returns the count (short at end of data) or -1 with a message. */
static long long source_read(source *s, void *dst, size_t n)
{
    if (!s->gz) {
        size_t k = s->len - s->pos < n ? s->len - s->pos : n;
        memcpy(dst, s->mem + s->pos, k);
        s->pos += k;
        return (long long)k;
    }
    size_t done = 0;
    while (done < n) {
        unsigned chunk = n - done > (1u << 30) ? 1u << 30 : (unsigned)(n - done);
        int got = gzread(s->gz, (char *)dst + done, chunk);
        int zerr = 0;
        const char *why = gzerror(s->gz, &zerr);
        /* a cut-off gzip stream reads short and reports Z_BUF_ERROR: that is truncation too */
        if (got < 0 || (zerr != Z_OK && zerr != Z_BUF_ERROR)) {
            size_t k = strlen(s->name); /* zlib prefixes its message with the path: drop it */
            if (strncmp(why, s->name, k) == 0 && strncmp(why + k, ": ", 2) == 0) why += k + 2;
            err_set(DLCA_ERR, "idx: %s: cannot decompress: %s", s->name, why);
            return -1;
        }
        done += (size_t)got;
        if ((unsigned)got < chunk) break;
    }
    return (long long)done;
}

static uint64_t big_endian(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

static size_t type_size(int code)
{
    switch (code) {
    case TN_IDX_U8:
    case TN_IDX_I8: return 1;
    case TN_IDX_I16: return 2;
    case TN_IDX_I32:
    case TN_IDX_F32: return 4;
    case TN_IDX_F64: return 8;
    }
    return 0;
}

/* Magic, type and dims into idx. */
static int read_header(source *s, tn_idx *idx)
{
    unsigned char head[4], dims[4 * TN_IDX_MAX_DIMS];
    long long got = source_read(s, head, 4);
    if (got < 0) return DLCA_ERR;
    if (got < 4) return err_set(DLCA_ERR, "idx: %s: truncated header (%lld of 4 bytes)", s->name, got);
    if (head[0] != 0 || head[1] != 0)
        return err_set(DLCA_ERR, "idx: %s: bad magic %02x %02x %02x %02x (IDX starts with two zero bytes)", s->name,
                       head[0], head[1], head[2], head[3]);
    idx->elem_size = type_size(head[2]);
    if (!idx->elem_size) return err_set(DLCA_ERR, "idx: %s: unknown element type 0x%02x", s->name, head[2]);
    if (head[3] < 1 || head[3] > TN_IDX_MAX_DIMS)
        return err_set(DLCA_ERR, "idx: %s: %d dims (expected 1 to %d)", s->name, head[3], TN_IDX_MAX_DIMS);
    idx->type = (tn_idx_type)head[2];
    idx->ndim = head[3];
    got = source_read(s, dims, 4 * (size_t)idx->ndim);
    if (got < 0) return DLCA_ERR;
    if (got < 4 * idx->ndim) return err_set(DLCA_ERR, "idx: %s: truncated header (dims cut off)", s->name);
    idx->count = 1;
    for (int d = 0; d < idx->ndim; d++) {
        idx->dims[d] = (size_t)big_endian(dims + 4 * d, 4);
        /* checked before multiplying so the product cannot wrap */
        if (idx->dims[d] && idx->count > IDX_MAX_BYTES / idx->elem_size / idx->dims[d])
            return err_set(DLCA_ERR, "idx: %s: header declares more than %zu bytes of data", s->name, IDX_MAX_BYTES);
        idx->count *= idx->dims[d];
    }
    return DLCA_OK;
}

/* Big-endian file bytes to host-order elements, in place. */
static void to_host_order(tn_idx *idx)
{
    unsigned char *p = idx->data;
    size_t es = idx->elem_size;
    if (es == 1) return;
    for (size_t i = 0; i < idx->count; i++, p += es) {
        uint64_t v = big_endian(p, es);
        if (es == 2) {
            uint16_t x = (uint16_t)v;
            memcpy(p, &x, 2);
        } else if (es == 4) {
            uint32_t x = (uint32_t)v; /* also the bit pattern of a float */
            memcpy(p, &x, 4);
        } else {
            memcpy(p, &v, 8);
        }
    }
}

static int read_body(source *s, tn_idx *idx)
{
    size_t bytes = idx->count * idx->elem_size;
    unsigned char extra;
    idx->data = malloc(bytes ? bytes : 1);
    if (!idx->data) return err_set(DLCA_ERR_NOMEM, "idx: %s: out of memory for %zu bytes", s->name, bytes);
    long long got = source_read(s, idx->data, bytes);
    if (got < 0) return DLCA_ERR;
    if ((size_t)got < bytes)
        return err_set(DLCA_ERR, "idx: %s: truncated: header declares %zu data bytes, file has %lld", s->name, bytes, got);
    got = source_read(s, &extra, 1);
    if (got < 0) return DLCA_ERR;
    if (got > 0) return err_set(DLCA_ERR, "idx: %s: trailing bytes after the %zu declared data bytes", s->name, bytes);
    to_host_order(idx);
    return DLCA_OK;
}

static int read_all(source *s, tn_idx *idx)
{
    memset(idx, 0, sizeof *idx);
    int status = read_header(s, idx);
    if (status == DLCA_OK) status = read_body(s, idx);
    if (status != DLCA_OK) tn_idx_free(idx);
    return status;
}

int tn_idx_parse(tn_idx *idx, const void *bytes, size_t len, const char *name)
{
    source s = {.mem = bytes, .len = len, .name = name ? name : "(memory)"};
    return read_all(&s, idx);
}

int tn_idx_load(tn_idx *idx, const char *path)
{
    source s = {.name = path};
    memset(idx, 0, sizeof *idx);
    errno = 0;
    s.gz = gzopen(path, "rb");
    if (!s.gz) return err_set(DLCA_ERR, "idx: cannot open %s: %s", path, errno ? strerror(errno) : "zlib error");
    int status = read_all(&s, idx);
    gzclose(s.gz);
    return status;
}

double tn_idx_get(const tn_idx *idx, size_t i)
{
    const unsigned char *p = (const unsigned char *)idx->data + i * idx->elem_size;
    switch (idx->type) {
    case TN_IDX_U8: return *p;
    case TN_IDX_I8: return (signed char)*p;
    case TN_IDX_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case TN_IDX_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TN_IDX_F32: { float v; memcpy(&v, p, 4); return v; }
    case TN_IDX_F64: { double v; memcpy(&v, p, 8); return v; }
    }
    return 0.0;
}

void tn_idx_free(tn_idx *idx)
{
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}

int tn_idx_load_pair(const char *images_path, const char *labels_path, tn_idx *images, tn_idx *labels)
{
    memset(labels, 0, sizeof *labels);
    if (tn_idx_load(images, images_path) != DLCA_OK) return DLCA_ERR;
    int status = tn_idx_load(labels, labels_path);
    if (status == DLCA_OK && images->ndim < 2)
        status = err_set(DLCA_ERR, "idx: %s: images need at least 2 dims, file has %d", images_path, images->ndim);
    else if (status == DLCA_OK && (labels->ndim != 1 || labels->type != TN_IDX_U8))
        status = err_set(DLCA_ERR, "idx: %s: labels must be 1-d unsigned bytes", labels_path);
    else if (status == DLCA_OK && images->dims[0] != labels->dims[0])
        status = err_set(DLCA_ERR, "idx: %s has %zu items but %s has %zu labels", images_path, images->dims[0],
                         labels_path, labels->dims[0]);
    if (status != DLCA_OK) {
        tn_idx_free(images);
        tn_idx_free(labels);
    }
    return status;
}
