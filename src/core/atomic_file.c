/* atomic_file.c: temp file, fsync, rename, directory sync. */
#include "atomic_file.h"

#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Keeps an existing file's permissions; a new one gets rw-r--r-- (mkstemp's 0600 is too tight). */
static mode_t file_mode(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 07777;
    return 0644;
}

/* Makes the rename durable. Filesystems that cannot sync a directory say EINVAL; that is fine. */
static int sync_directory(const char *path)
{
    char *dir = strdup(path);
    if (!dir) return err_set(DLCA_ERR_NOMEM, "out of memory saving %s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = '\0'; /* "/model.dlca": the root */
    else if (slash) *slash = '\0';
    const char *name = slash ? dir : ".";
    int fd = open(name, O_RDONLY | O_DIRECTORY), status = DLCA_OK;
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        status = err_set(DLCA_ERR, "saved %s, but syncing its directory %s failed: %s", path, name, strerror(errno));
    if (fd >= 0) close(fd);
    free(dir);
    return status;
}

/* Writes, syncs and closes the temp file `fd`, then renames it over `path`; returns the failed
 * step's name (errno set) or NULL. */
static const char *commit_temp(int fd, const char *temp, const char *path, const uint8_t *data, size_t size)
{
    const char *failed = NULL;
    if (write_all(fd, data, size)) failed = "writing";
    else if (fchmod(fd, file_mode(path))) failed = "setting the permissions of";
    else if (fsync(fd)) failed = "syncing";
    int saved = errno;
    if (close(fd) && !failed) failed = "closing", saved = errno;
    if (!failed && rename(temp, path)) failed = "renaming", saved = errno;
    errno = saved;
    return failed;
}

int atomic_file_write(const char *path, const void *data, size_t size)
{
    static const char suffix[] = ".tmp.XXXXXX";
    size_t length = strlen(path);
    char *temp = malloc(length + sizeof suffix);
    if (!temp) return err_set(DLCA_ERR_NOMEM, "out of memory saving %s", path);
    memcpy(temp, path, length);
    memcpy(temp + length, suffix, sizeof suffix);
    int fd = mkstemp(temp);
    if (fd < 0) {
        int saved = errno;
        free(temp);
        return err_set(DLCA_ERR, "cannot save %s: cannot create a temp file beside it: %s", path, strerror(saved));
    }
    const char *failed = commit_temp(fd, temp, path, (const uint8_t *)data, size);
    if (failed) {
        int saved = errno;
        unlink(temp);
        err_set(DLCA_ERR, "cannot save %s: %s the temp file %s failed: %s", path, failed, temp, strerror(saved));
        free(temp);
        return DLCA_ERR;
    }
    free(temp);
    return sync_directory(path);
}

