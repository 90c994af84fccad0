/* atomic_file.c: the one way dlca writes a file (see atomic_file.h): an exclusive temp file
 * beside the destination, fsync, rename, folder sync; destination checks, identity and locks. */
#define _DEFAULT_SOURCE /* flock */
#include "atomic_file.h"

#include "error.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

enum { LINK_HOPS = 40 };
static const char temp_infix[] = ".dlca-tmp.", lock_suffix[] = ".dlca-lock";

/* ------------------------------------------------------------------ paths ---- */

/* `dir` + "/" + `name` (no doubled slash after the root); NULL when out of memory. */
static char *join(const char *dir, const char *name)
{
    size_t d = strlen(dir), n = strlen(name);
    int slash = d > 0 && dir[d - 1] != '/';
    char *path = malloc(d + (size_t)slash + n + 1);
    if (!path) return NULL;
    memcpy(path, dir, d);
    if (slash) path[d] = '/';
    memcpy(path + d + (size_t)slash, name, n + 1);
    return path;
}

/* The folder of `path` (malloc'ed: "." without a slash, "/" for the root) and, in *name, its
 * last component (pointing into `path`). */
static char *folder_of(const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    if (!slash) return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (!dir) return NULL;
    memcpy(dir, path, n);
    dir[n] = '\0';
    return dir;
}

/* `path` with `extra` inserted before its last component and `suffix` after it:
 * "a/b.dlca" -> "a/.b.dlca<suffix>" with extra ".". */
static char *beside(const char *path, const char *extra, const char *suffix)
{
    const char *slash = strrchr(path, '/');
    size_t head = slash ? (size_t)(slash - path) + 1 : 0, e = strlen(extra), rest = strlen(path) - head;
    char *out = malloc(head + e + rest + strlen(suffix) + 1);
    if (!out) return NULL;
    memcpy(out, path, head);
    memcpy(out + head, extra, e);
    memcpy(out + head + e, path + head, rest);
    strcpy(out + head + e + rest, suffix);
    return out;
}

/* A failed check: "<what> <path>: <problem>", or "cannot write <path>: <problem>" without `what`.
 * Paths of thousands of characters show their first and last characters only. */
static int refuse(const char *what, const char *path, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int refuse(const char *what, const char *path, const char *format, ...)
{
    char problem[9000], shown[128];
    va_list args;
    va_start(args, format);
    vsnprintf(problem, sizeof problem, format, args);
    va_end(args);
    size_t n = strlen(path);
    if (n > 120) snprintf(shown, sizeof shown, "%.60s...%s", path, path + n - 40);
    else snprintf(shown, sizeof shown, "%s", path);
    if (what) return err_set(DLCA_ERR, "%s %s: %s", what, shown, problem);
    return err_set(DLCA_ERR, "cannot write %s: %s", shown, problem);
}

/* `path` with the symbolic links of its last component followed, to a file that need not exist
 * (a dangling link names the file it would create). Sets *target (malloc'ed). */
static int follow_links(const char *path, const char *what, char **target)
{
    char *current = strdup(path);
    *target = NULL;
    if (!current) return err_set(DLCA_ERR_NOMEM, "out of memory");
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(current, &st) != 0 || !S_ISLNK(st.st_mode)) break;
        if (hops == LINK_HOPS) {
            free(current);
            return refuse(what, path, "more than %d symbolic links in a row", LINK_HOPS);
        }
        char link[PATH_MAX];
        ssize_t n = readlink(current, link, sizeof link - 1);
        if (n < 0) {
            int saved = errno;
            free(current);
            return refuse(what, path, "cannot read the symbolic link: %s", strerror(saved));
        }
        link[n] = '\0';
        char *next;
        if (link[0] == '/' || !strchr(current, '/')) {
            next = strdup(link);
        } else {
            const char *name;
            char *dir = folder_of(current, &name);
            next = dir ? join(dir, link) : NULL;
            free(dir);
        }
        free(current);
        if (!(current = next)) return err_set(DLCA_ERR_NOMEM, "out of memory");
        if (strlen(current) > ATOMIC_FILE_PATH_MAX) {
            size_t length = strlen(current);
            free(current);
            return refuse(what, path, "is a symbolic link to a path of %zu characters; dlca writes paths of at most %d",
                          length, ATOMIC_FILE_PATH_MAX);
        }
    }
    *target = current;
    return DLCA_OK;
}

static const char *kind_name(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    return "something else";
}

/* The checks of atomic_file_check; sets *target, the file to replace. `writable`: also ask the
 * folder for write permission (a begin creates the temp file instead, which tells the truth). */
static int check_destination(const char *path, const char *what, int writable, char **target)
{
    size_t length = strlen(path);
    *target = NULL;
    if (length == 0) return what ? err_set(DLCA_ERR, "%s: the path is empty", what) : err_set(DLCA_ERR, "cannot write a file with an empty path");
    if (length > ATOMIC_FILE_PATH_MAX)
        return refuse(what, path, "the path is %zu characters long; dlca writes paths of at most %d", length,
                      ATOMIC_FILE_PATH_MAX);
    if (path[length - 1] == '/') return refuse(what, path, "names a directory (it ends in /), not a file");
    if (follow_links(path, what, target)) return DLCA_ERR;
    const char *name;
    char *dir = folder_of(*target, &name);
    struct stat st;
    int status = DLCA_OK;
    if (!dir) {
        status = err_set(DLCA_ERR_NOMEM, "out of memory");
    } else if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        status = refuse(what, path, "names a directory, not a file");
    } else if (strlen(name) > ATOMIC_FILE_NAME_MAX) {
        status = refuse(what, path, "the file name is %zu characters long; dlca writes names of at most %d (it keeps "
                                    "a temp file .NAME.dlca-tmp.PID beside each)", strlen(name), ATOMIC_FILE_NAME_MAX);
    } else if (stat(*target, &st) == 0) {
        if (!S_ISREG(st.st_mode)) status = refuse(what, path, "is %s, not a regular file", kind_name(st.st_mode));
    } else if (errno != ENOENT) {
        status = refuse(what, path, "%s", strerror(errno));
    }
    if (!status && stat(dir, &st) != 0)
        status = errno == ENOENT ? refuse(what, path, "the directory %s does not exist", dir)
                                 : refuse(what, path, "cannot use the directory %s: %s", dir, strerror(errno));
    else if (!status && !S_ISDIR(st.st_mode))
        status = refuse(what, path, "%s is not a directory", dir);
    else if (!status && writable && access(dir, W_OK | X_OK) != 0)
        status = refuse(what, path, "cannot write in the directory %s: %s", dir, strerror(errno));
    free(dir);
    if (status) free(*target), *target = NULL;
    return status;
}

int atomic_file_check(const char *path, const char *what)
{
    char *target;
    int status = check_destination(path, what, 1, &target);
    free(target);
    return status;
}

int atomic_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* What a path names: a file's device and inode when it exists, else the canonical path it
 * would have (the folder through realpath, then the name). */
typedef struct {
    int exists;
    dev_t dev;
    ino_t ino;
    char *name;
} identity;

static void identify(const char *path, identity *id)
{
    char *target = NULL;
    struct stat st;
    memset(id, 0, sizeof *id);
    if (follow_links(path, NULL, &target)) target = NULL;
    const char *file = target ? target : path;
    if (stat(file, &st) == 0) {
        id->exists = 1, id->dev = st.st_dev, id->ino = st.st_ino;
    } else {
        const char *name;
        char *dir = folder_of(file, &name), *real = dir ? realpath(dir, NULL) : NULL;
        id->name = real ? join(real, name) : strdup(file);
        free(dir), free(real);
    }
    free(target);
}

int atomic_file_same(const char *a, const char *b)
{
    identity x, y;
    identify(a, &x), identify(b, &y);
    int same;
    if (x.exists || y.exists) same = x.exists && y.exists && x.dev == y.dev && x.ino == y.ino;
    else same = x.name && y.name ? strcmp(x.name, y.name) == 0 : strcmp(a, b) == 0;
    free(x.name), free(y.name);
    return same;
}

/* ---------------------------------------------------------------- writing ---- */

static int write_all(int fd, const uint8_t *data, size_t size)
{
    while (size > 0) {
        ssize_t written = write(fd, data, size);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) {
            if (written == 0) errno = EIO;
            return -1;
        }
        data += written, size -= (size_t)written;
    }
    return 0;
}

/* An existing file keeps its permissions; a new one gets what open(2) would give it. */
static mode_t file_mode(const char *target)
{
    struct stat st;
    if (stat(target, &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 07777;
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

/* Makes the rename durable. Filesystems that cannot sync a directory say EINVAL; that is fine. */
static int sync_directory(const char *path, const char *target)
{
    const char *name;
    char *dir = folder_of(target, &name);
    if (!dir) return err_set(DLCA_ERR_NOMEM, "out of memory saving %s", path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), status = DLCA_OK;
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        status = err_set(DLCA_ERR, "saved %s, but syncing its directory %s failed: %s", path, dir, strerror(errno));
    if (fd >= 0) close(fd);
    free(dir);
    return status;
}

/* Removes the temp files of `name` in `dir` whose writer is gone: this process's own (it has none
 * open for `name` when it begins one) and those of PIDs that are not alive. */
static void remove_stale_temps(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    if (!d) return;
    size_t n = strlen(name), infix = sizeof temp_infix - 1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *s = e->d_name, *digits = s + 1 + n + infix;
        if (s[0] != '.' || strncmp(s + 1, name, n) != 0 || strncmp(s + 1 + n, temp_infix, infix) != 0) continue;
        char *end;
        errno = 0;
        long pid = strtol(digits, &end, 10);
        if (!isdigit((unsigned char)digits[0]) || *end != '\0' || errno != 0 || pid <= 0 || pid > INT_MAX) continue;
        if (pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
        unlinkat(dirfd(d), s, 0);
    }
    closedir(d);
}

int atomic_file_begin(atomic_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->fd = -1, f->path = path;
    if (check_destination(path, NULL, 0, &f->target)) return DLCA_ERR;
    const char *name;
    char *dir = folder_of(f->target, &name), pid[32];
    if (dir) remove_stale_temps(dir, name);
    free(dir);
    snprintf(pid, sizeof pid, "%s%ld", temp_infix, (long)getpid());
    if (!(f->temp = beside(f->target, ".", pid))) {
        free(f->target), f->target = NULL;
        return err_set(DLCA_ERR_NOMEM, "out of memory saving %s", path);
    }
    f->fd = open(f->temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f->fd < 0) {
        int saved = errno;
        err_set(DLCA_ERR, "cannot save %s: cannot create a temp file beside it (%s): %s", path, f->temp, strerror(saved));
        free(f->temp), free(f->target);
        f->temp = f->target = NULL;
        return DLCA_ERR;
    }
    return DLCA_OK;
}

int atomic_file_write_all(atomic_file *f, const void *data, size_t size)
{
    if (write_all(f->fd, data, size) == 0) return DLCA_OK;
    if (f->temp) return err_set(DLCA_ERR, "cannot save %s: writing the temp file %s failed: %s", f->path, f->temp, strerror(errno));
    return err_set(DLCA_ERR, "cannot write %s: %s", f->path, strerror(errno));
}

FILE *atomic_file_stream(atomic_file *f)
{
    if (!f->stream && !(f->stream = fdopen(f->fd, "wb")))
        err_set(DLCA_ERR, "cannot save %s: %s", f->path, strerror(errno));
    return f->stream;
}

int atomic_file_commit(atomic_file *f)
{
    const char *failed = NULL;
    int saved = 0, close_it = !f->keep_open;
    struct stat st;
    if (f->stream && fflush(f->stream) != 0) failed = "writing", saved = errno;
    if (!failed && fchmod(f->fd, file_mode(f->target)) != 0) failed = "setting the permissions of", saved = errno;
    if (!failed && fsync(f->fd) != 0) failed = "syncing", saved = errno;
    if (failed || close_it) {
        int closed = f->stream ? fclose(f->stream) : close(f->fd);
        if (closed != 0 && !failed) failed = "closing", saved = errno;
        f->stream = NULL, f->fd = -1;
    }
    /* Checked again at the last moment: a device or folder put there since must not be replaced. */
    if (!failed && stat(f->target, &st) == 0 && !S_ISREG(st.st_mode)) {
        err_set(DLCA_ERR, "cannot save %s: it is %s now, not a regular file", f->path, kind_name(st.st_mode));
    } else if (!failed && rename(f->temp, f->target) != 0) {
        failed = "renaming", saved = errno;
    } else if (!failed) {
        free(f->temp), f->temp = NULL;
        int status = sync_directory(f->path, f->target);
        free(f->target), f->target = NULL;
        return status;
    }
    if (failed) err_set(DLCA_ERR, "cannot save %s: %s the temp file %s failed: %s", f->path, failed, f->temp, strerror(saved));
    atomic_file_abort(f);
    return DLCA_ERR;
}

void atomic_file_abort(atomic_file *f)
{
    if (f->temp) {
        if (f->stream) fclose(f->stream);
        else if (f->fd >= 0) close(f->fd);
        f->stream = NULL, f->fd = -1;
        unlink(f->temp);
    }
    free(f->temp), free(f->target);
    f->temp = f->target = NULL;
}

int atomic_file_write(const char *path, const void *data, size_t size)
{
    atomic_file f;
    if (atomic_file_begin(&f, path)) return DLCA_ERR;
    if (atomic_file_write_all(&f, data, size) == DLCA_OK && atomic_file_commit(&f) == DLCA_OK) return DLCA_OK;
    atomic_file_abort(&f);
    return DLCA_ERR;
}

/* ------------------------------------------------------------------ locks ---- */

char *atomic_file_lock_path(const char *path)
{
    char *target, *lock;
    if (follow_links(path, NULL, &target)) return NULL;
    lock = beside(target, ".", lock_suffix);
    free(target);
    return lock;
}

int atomic_file_lock_take(atomic_file_lock *lock, const char *path, const char *what)
{
    memset(lock, 0, sizeof *lock);
    lock->fd = -1;
    char *file = atomic_file_lock_path(path);
    if (!file) return DLCA_ERR;
    /* The holder removes the file as it lets go: a lock got on a file no longer there is retried. */
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = open(file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) {
            int saved = errno;
            refuse(what, path, "cannot create its lock file %s: %s", file, strerror(saved));
            free(file);
            return DLCA_ERR;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int saved = errno;
            char text[32] = "";
            ssize_t n = saved == EWOULDBLOCK ? pread(fd, text, sizeof text - 1, 0) : -1;
            long pid = n > 0 ? strtol(text, NULL, 10) : 0;
            close(fd);
            if (saved != EWOULDBLOCK) refuse(what, path, "cannot lock %s: %s", file, strerror(saved));
            else if (pid > 0)
                err_set(DLCA_ERR, "%s %s is being written by another dlca (pid %ld): wait for it, or choose another path",
                        what, path, pid);
            else err_set(DLCA_ERR, "%s %s is being written by another dlca: wait for it, or choose another path", what, path);
            free(file);
            return DLCA_ERR;
        }
        struct stat held, now;
        if (fstat(fd, &held) == 0 && stat(file, &now) == 0 && held.st_dev == now.st_dev && held.st_ino == now.st_ino) {
            char text[32];
            int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
            if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
                /* The lock holds without the PID; only the other process's message loses it. */
            }
            lock->fd = fd, lock->path = file;
            return DLCA_OK;
        }
        close(fd);
    }
    free(file);
    return refuse(what, path, "its lock file keeps being replaced");
}

void atomic_file_lock_release(atomic_file_lock *lock)
{
    if (!lock->path) return;
    unlink(lock->path); /* before letting go, so a waiting process retries on a fresh file */
    close(lock->fd);
    free(lock->path);
    lock->path = NULL, lock->fd = -1;
}
