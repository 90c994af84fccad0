/* crc32.h: CRC-32 as zlib and PNG compute it (IEEE polynomial, reflected, inverted in and out):
 * the model file's and the pipeline cache's checksum. */
#ifndef DLCA_CRC32_H
#define DLCA_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (0 to start) over `size` bytes (any size_t), as zlib's crc32(crc, data, size):
 * crc32_update(crc32_update(0, a, n), b, m) equals the CRC of a followed by b. */
uint32_t crc32_update(uint32_t crc, const void *data, size_t size);

#endif
