/* tn_idx.h: reader for IDX files, the format of MNIST and Fashion-MNIST, plain or
 * gzip-compressed (zlib reads both). Malformed input is rejected with a message naming the
 * file and what is wrong: bad magic, unknown element type, truncated or oversized data. */
#ifndef DLCA_TN_IDX_H
#define DLCA_TN_IDX_H

#include <stddef.h>

#define TN_IDX_MAX_DIMS 8

/* Element types, by their code in the file's third byte. */
typedef enum {
    TN_IDX_U8 = 0x08,
    TN_IDX_I8 = 0x09,
    TN_IDX_I16 = 0x0B,
    TN_IDX_I32 = 0x0C,
    TN_IDX_F32 = 0x0D,
    TN_IDX_F64 = 0x0E
} tn_idx_type;

typedef struct {
    tn_idx_type type;
    int ndim;
    size_t dims[TN_IDX_MAX_DIMS]; /* dims[0] counts the items (images, labels) */
    size_t count;                 /* elements: the product of dims */
    size_t elem_size;             /* bytes per element */
    void *data;                   /* count elements in host byte order */
} tn_idx;

/* Reads an IDX file (gzip or plain) into idx; on error idx is left empty. */
int tn_idx_load(tn_idx *idx, const char *path);

/* Parses an IDX image held in memory; `name` appears in messages. */
int tn_idx_parse(tn_idx *idx, const void *bytes, size_t len, const char *name);

/* Element i (C order) as a double. */
double tn_idx_get(const tn_idx *idx, size_t i);

/* Frees the data and empties idx. */
void tn_idx_free(tn_idx *idx);

/* Loads an images file (ndim >= 2) and its labels file (1-d, u8) and checks they hold the
 * same number of items. */
int tn_idx_load_pair(const char *images_path, const char *labels_path, tn_idx *images, tn_idx *labels);

#endif
