/* robust.h: what the test_robust_* tests share: the dlca binary beside the test, a scratch
 * folder, running dlca with stderr captured (through the shell, or forked for signals and
 * limits), and the "refused cleanly" check: a non-zero exit (never a signal), exactly one line
 * on stderr naming what was wrong, and no sanitizer report. Header-only, like check.h. */
#ifndef DLCA_ROBUST_H
#define DLCA_ROBUST_H

#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char robust_dlca[1024], robust_inject_nan[1040], robust_scratch[256];
/* Seconds robust_run lets dlca run before killing it (timeout(1): status 124); 0: no limit. A
 * test whose regression would hang (a FIFO opened for writing, a second trainer not refused)
 * sets it, so it fails instead of stalling until ctest's timeout. */
static int robust_time_limit;

/* Finds dlca beside argv0 and makes the scratch folder; returns 0 or prints why and returns 1. */
static inline int robust_init(const char *argv0, const char *name)
{
    char self[900];
    snprintf(self, sizeof self, "%s", argv0);
    snprintf(robust_dlca, sizeof robust_dlca, "%s/dlca", dirname(self));
    snprintf(robust_inject_nan, sizeof robust_inject_nan, "%s_inject_nan", robust_dlca);
    snprintf(robust_scratch, sizeof robust_scratch, "/tmp/dlca_%s_XXXXXX", name);
    if (access(robust_dlca, X_OK) != 0) return fprintf(stderr, "%s: no dlca binary at %s\n", name, robust_dlca), 1;
    if (!mkdtemp(robust_scratch)) return fprintf(stderr, "%s: cannot make a scratch folder\n", name), 1;
    return 0;
}

static inline void robust_cleanup(void)
{
    char command[512];
    const char *keep = getenv("DLCA_TEST_KEEP");
    if (keep && keep[0] == '1') return (void)fprintf(stderr, "kept %s\n", robust_scratch);
    snprintf(command, sizeof command, "rm -rf '%s'", robust_scratch);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", robust_scratch);
}

/* A path in the scratch folder; two may be in use at once. */
static inline const char *robust_path(const char *name)
{
    static char paths[4][512];
    static int next;
    next = (next + 1) % 4;
    snprintf(paths[next], sizeof paths[next], "%s/%s", robust_scratch, name);
    return paths[next];
}

static inline int robust_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static inline void robust_read_text(const char *path, char *text, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, size - 1, f) : 0;
    text[n] = '\0';
    if (f) fclose(f);
}

/* Exit status of a waited-for child; 128 + the signal when a signal ended it. */
static inline int robust_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

/* Drops ASan's "failed to allocate" warnings: with allocator_may_return_null=1 (see .ci/run)
 * ASan prints one for every malloc it refuses, and dlca's own line is what is under test. */
static inline void robust_drop_sanitizer_warnings(char *text)
{
    char *line = text, *out = text;
    while (*line) {
        char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        int drop = strstr(line, "WARNING: AddressSanitizer failed to allocate") != NULL &&
                   (!end || strstr(line, "WARNING: AddressSanitizer failed to allocate") < end);
        if (!drop) memmove(out, line, n), out += n;
        line += n;
    }
    *out = '\0';
}

/* Runs `dlca <args>` through the shell with stderr in `err`; returns the exit status. */
static inline int robust_run(char *err, size_t err_size, const char *format, ...) __attribute__((format(printf, 3, 4)));
static inline int robust_run(char *err, size_t err_size, const char *format, ...)
{
    char args[4096], command[8192], err_path[512];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", robust_scratch);
    char limit[64] = "";
    if (robust_time_limit > 0) snprintf(limit, sizeof limit, "timeout -k 5 %d ", robust_time_limit);
    snprintf(command, sizeof command, "%s'%s' %s > '%s/stdout.txt' 2> '%s'", limit, robust_dlca, args, robust_scratch,
             err_path);
    int status = system(command);
    robust_read_text(err_path, err, err_size);
    robust_drop_sanitizer_warnings(err);
    return status == -1 ? 127 : robust_status(status);
}

static inline size_t robust_lines(const char *text)
{
    size_t lines = 0;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    return lines;
}

/* The last line of `text` (without its newline) into `line`. */
static inline void robust_last_line(const char *text, char *line, size_t size)
{
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == '\n') n--;
    size_t start = n;
    while (start > 0 && text[start - 1] != '\n') start--;
    snprintf(line, size, "%.*s", (int)(n - start), text + start);
}

/* dlca <args> must exit 1 or 2 (not crash), print one line containing `needle`, and leave no
 * file `left` in the scratch folder (NULL: no file to check). */
static inline void robust_refused(const char *needle, const char *left, const char *args)
{
    char err[8192];
    if (left) remove(robust_path(left));
    int status = robust_run(err, sizeof err, "%s", args);
    CHECK(status == 1 || status == 2, "'%s' exits 1 or 2, not %d: %s", args, status, err);
    CHECK(robust_lines(err) == 1, "'%s' prints one line, got %zu: %s", args, robust_lines(err), err);
    CHECK(strstr(err, needle) != NULL, "'%s': message '%s' names '%s'", args, err, needle);
    CHECK(!left || !robust_exists(robust_path(left)), "'%s' leaves no %s", args, left);
}

/* Starts dlca with argv (NULL-terminated, argv[0] ignored), stdout and stderr to `log`, the
 * variable `env_name` set to `env_value` (when not NULL; DLCA_TEST_INJECT_NAN=N runs it through
 * dlca_inject_nan N instead, which poisons a logit before step N); `file_limit` > 0 sets RLIMIT_FSIZE with SIGXFSZ ignored,
 * so an oversized write fails with EFBIG as on a full quota. Returns the pid, or -1. */
static inline pid_t robust_spawn(char **argv, const char *log, const char *env_name, const char *env_value,
                                  long file_limit)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 1), dup2(fd, 2), close(fd);
    if (env_name) setenv(env_name, env_value, 1);
    if (file_limit > 0) {
        struct rlimit limit = {(rlim_t)file_limit, (rlim_t)file_limit};
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &limit);
    }
    argv[0] = robust_dlca;
    if (env_name && strcmp(env_name, "DLCA_TEST_INJECT_NAN") == 0) {
        char *with_step[64] = {robust_inject_nan, (char *)env_value};
        for (int i = 1; argv[i] && i < 61; i++) with_step[i + 1] = argv[i];
        execv(robust_inject_nan, with_step);
        _exit(127);
    }
    execv(robust_dlca, argv);
    _exit(127);
}

static inline int robust_wait(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return robust_status(status);
}

static inline void robust_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* robust_wait with a deadline: a child still running after `seconds` (a hang, an endless read)
 * is killed and reported as 124, like timeout(1). */
static inline int robust_wait_timeout(pid_t pid, double seconds)
{
    for (long waited = 0; waited < (long)(seconds * 1000); waited += 10) {
        int status;
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) return robust_status(status);
        if (done < 0 && errno != EINTR) return -1;
        robust_sleep_ms(10);
    }
    kill(pid, SIGKILL);
    robust_wait(pid);
    return 124;
}

/* Runs dlca with argv (NULL-terminated, argv[0] ignored; no shell, so paths of any length pass),
 * stdout and stderr into `text`, at most `seconds`; returns the exit status (124: timed out). */
static inline int robust_run_argv(char **argv, char *text, size_t size, double seconds, const char *env_name,
                                  const char *env_value)
{
    char log[512];
    snprintf(log, sizeof log, "%s/argv_output.txt", robust_scratch);
    int status = robust_wait_timeout(robust_spawn(argv, log, env_name, env_value, 0), seconds);
    robust_read_text(log, text, size);
    robust_drop_sanitizer_warnings(text);
    remove(log);
    return status;
}

#endif
