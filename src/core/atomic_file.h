/* atomic_file.h: writing a file so that a reader sees the old one or the new one, never half:
 * a temp file beside it, written, fsync'd, renamed over it, and the directory synced. */
#ifndef DLCA_ATOMIC_FILE_H
#define DLCA_ATOMIC_FILE_H

#include <stddef.h>

/* Replaces `path` with `size` bytes of `data`. An existing file keeps its permissions, a new
 * one gets 0644. On failure `path` is untouched, the temp file removed, and the message says
 * which step failed and why. */
int atomic_file_write(const char *path, const void *data, size_t size);

#endif
