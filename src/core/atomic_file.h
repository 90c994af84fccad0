/* atomic_file.h: how dlca writes every file (models, CSV logs, PNGs, exports, bench JSON), so a
 * reader sees the old file or the new one, never half of one, and a hostile folder cannot turn
 * a write into damage elsewhere:
 *  - a temp file `.NAME.dlca-tmp.PID` is created beside the destination, exclusively
 *    (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600: a planted file or symlink of that name is never
 *    followed), written, fchmod'ed, fsync'ed and renamed over it, and the folder is synced;
 *  - temp files of that destination left by a dlca that died (kill -9, power loss) are removed
 *    at its next save: those whose PID is no longer alive (kill(pid, 0) gives ESRCH);
 *  - only regular files are replaced: a destination that is a directory, a device, a FIFO or a
 *    socket is refused (as root, `--out /dev/full` must not replace the device node);
 *  - a destination that is a symbolic link is written through: the link is followed (to its
 *    final target, which need not exist yet) and that target is replaced in its own folder, so
 *    the link stays a link. The target keeps its permissions; a new file gets 0666 & ~umask;
 *  - paths longer than ATOMIC_FILE_PATH_MAX characters and file names longer than
 *    ATOMIC_FILE_NAME_MAX (room for the temp name beside them) are refused, never truncated.
 * Every function returns DLCA_OK or a status with a one-line message (error.h) naming the file. */
#ifndef DLCA_ATOMIC_FILE_H
#define DLCA_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

enum {
    ATOMIC_FILE_PATH_MAX = 4000, /* characters in a destination path, as given and with links followed */
    ATOMIC_FILE_NAME_MAX = 230   /* characters in its last component (NAME_MAX 255 less the temp name's) */
};

/* Replaces `path` with `size` bytes of `data`. On failure the destination is untouched, the
 * temp file removed, and the message says which step failed and why. */
int atomic_file_write(const char *path, const void *data, size_t size);

/* A destination being written: atomic_file_begin, then atomic_file_write_all or the stream,
 * then atomic_file_commit (or atomic_file_abort). */
typedef struct {
    const char *path; /* as given, for messages */
    char *target;     /* the file replaced: `path` with symbolic links followed */
    char *temp;       /* the temp file beside `target` */
    int fd;           /* the temp file; after a commit with keep_open, the new file; else -1 */
    FILE *stream;     /* atomic_file_stream's stdio stream on fd, or NULL */
    int keep_open;    /* set before the commit: leave fd open on the renamed file (the caller closes it) */
} atomic_file;

/* Checks `path` (as atomic_file_check, without the folder's write permission, which the temp
 * file's creation then tests), removes stale temp files of dead dlca processes for it, and
 * creates the temp file. On failure nothing is left and `f` needs no abort. */
int atomic_file_begin(atomic_file *f, const char *path);

/* Writes `size` bytes to the temp file (or, after a commit with keep_open, to the file). */
int atomic_file_write_all(atomic_file *f, const void *data, size_t size);

/* A stdio stream on the temp file (binary, fully buffered); NULL with the message set. */
FILE *atomic_file_stream(atomic_file *f);

/* Flushes, sets the permissions, fsyncs, closes (unless keep_open) and renames the temp file over
 * the target, then syncs the folder. On failure the target is untouched and the temp removed. */
int atomic_file_commit(atomic_file *f);

/* Closes and removes the temp file; the target is untouched. Safe on a zeroed or committed `f`. */
void atomic_file_abort(atomic_file *f);

/* Can `path` be written, checked before any work: not empty, not too long, not naming a folder
 * (a trailing /), not a directory, device, FIFO or socket (after following symbolic links), its
 * folder exists and is writable. `what` names it in the message: "--out" gives
 * "--out /dev/full: is a character device, not a regular file". */
int atomic_file_check(const char *path, const char *what);

/* Whether `a` and `b` name the same file: by device and inode where both exist (hard links,
 * symbolic links, ./a vs a), else by the canonical folder (realpath) and the name, links
 * followed. Paths that cannot be resolved compare as their text. */
int atomic_file_same(const char *a, const char *b);

/* Whether `path` exists (following symbolic links; a dangling link does not). */
int atomic_file_exists(const char *path);

/* A lock on a destination against other dlca processes: flock(2) on `.NAME.dlca-lock` beside the
 * target (links followed), holding the owner's PID. The kernel drops it when the process dies. */
typedef struct {
    int fd;
    char *path; /* the lock file; NULL when not held */
} atomic_file_lock;

/* The lock file of `path` (malloc'ed), or NULL when out of memory or `path` cannot be resolved. */
char *atomic_file_lock_path(const char *path);

/* Takes the lock of `path` without waiting. Held by another process: fails with
 * "<what> <path> is being written by another dlca (pid N)". */
int atomic_file_lock_take(atomic_file_lock *lock, const char *path, const char *what);

/* Releases the lock and removes its file. Safe on a zeroed lock that was never taken. */
void atomic_file_lock_release(atomic_file_lock *lock);

#endif
