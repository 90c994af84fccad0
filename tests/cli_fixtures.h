/* cli_fixtures.h: running `dlca` as a user does, for the command-line tests of populations and
 * sweeps: the binary beside the test, a scratch folder, stderr captured, CSV logs read back,
 * model files compared. */
#ifndef DLCA_CLI_FIXTURES_H
#define DLCA_CLI_FIXTURES_H

#include "ca_file.h"
#include "check.h"
#include "error.h"
#include "gates.h"

#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char fixture_dlca[1024], fixture_scratch[256];

/* Finds dlca beside the test and makes the scratch folder; 0 on success. */
static inline int fixture_begin(const char *argv0, const char *name)
{
    char self[900], cwd[600] = "."; /* the commands run in the scratch folder: an absolute path */
    if (argv0[0] != '/' && !getcwd(cwd, sizeof cwd)) return fprintf(stderr, "cannot read the working folder\n"), 1;
    if (argv0[0] == '/') snprintf(self, sizeof self, "%s", argv0);
    else snprintf(self, sizeof self, "%s/%s", cwd, argv0);
    snprintf(fixture_dlca, sizeof fixture_dlca, "%s/dlca", dirname(self));
    snprintf(fixture_scratch, sizeof fixture_scratch, "/tmp/dlca_%s_XXXXXX", name);
    if (!mkdtemp(fixture_scratch)) return fprintf(stderr, "cannot make a scratch folder\n"), 1;
    return 0;
}

/* Removes the scratch folder unless DLCA_TEST_KEEP is set. */
static inline void fixture_end(void)
{
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", fixture_scratch);
    if (!getenv("DLCA_TEST_KEEP") && system(command) != 0) fprintf(stderr, "could not remove %s\n", fixture_scratch);
}

/* Runs `dlca <args>` in the scratch folder, stdout into out.txt, stderr into `err` (NULL: dropped);
 * returns the exit status. */
static int fixture_run(char *err, size_t err_size, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int fixture_run(char *err, size_t err_size, const char *format, ...)
{
    char args[4096], command[8192];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(command, sizeof command, "cd '%s' && '%s' %s > out.txt 2> err.txt", fixture_scratch, fixture_dlca, args);
    int status = system(command);
    if (err) {
        char path[512];
        err[0] = '\0';
        snprintf(path, sizeof path, "%s/err.txt", fixture_scratch);
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(err, 1, err_size - 1, f);
            err[n] = '\0';
            fclose(f);
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* A file of the scratch folder into `text` (cut to fit); its length, or -1. */
static inline long fixture_read(const char *name, char *text, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", fixture_scratch, name);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(text, 1, size - 1, f);
    text[n] = '\0';
    fclose(f);
    return (long)n;
}

static inline int fixture_exists(const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", fixture_scratch, name);
    return stat(path, &st) == 0;
}

/* Rows of a training log of the scratch folder: step, soft, hard; the count or -1. */
static inline int fixture_log(const char *name, double rows[][3], int max_rows)
{
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/%s", fixture_scratch, name);
    FILE *f = fopen(path, "r");
    int n = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f) && n < max_rows)
        if (sscanf(line, "%lf,%lf,%lf", &rows[n][0], &rows[n][1], &rows[n][2]) == 3) n++;
    fclose(f);
    return n;
}

/* Loads a model file of the scratch folder with its training state; 0 on success. */
static inline int fixture_model(const char *name, ca_model *model, ca_train_state *state)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", fixture_scratch, name);
    if (ca_file_load(path, model, state, NULL) == DLCA_OK) return 0;
    fprintf(stderr, "load %s: %s\n", name, err_message());
    return 1;
}

/* Whether two model files hold the same run: config, logits, moments and steps done, bit for bit
 * (the training seconds aside). */
static inline int fixture_same_run(const char *a, const char *b)
{
    ca_model ma, mb;
    ca_train_state sa, sb;
    if (fixture_model(a, &ma, &sa)) return 0;
    if (fixture_model(b, &mb, &sb)) return ca_model_free(&ma), ca_train_state_free(&sa), 0;
    size_t n = ma.gate_count * GATE_OP_COUNT * sizeof(float);
    int same = ma.gate_count == mb.gate_count && ma.config.seed == mb.config.seed && sa.step == sb.step &&
               sa.moment1 && sb.moment1 && memcmp(ma.logits, mb.logits, n) == 0 &&
               memcmp(sa.moment1, sb.moment1, n) == 0 && memcmp(sa.moment2, sb.moment2, n) == 0;
    ca_model_free(&ma), ca_model_free(&mb), ca_train_state_free(&sa), ca_train_state_free(&sb);
    return same;
}

/* A refused call: non-zero exit, one line on stderr that names `needle`. */
static inline void fixture_refused(const char *needle, const char *args)
{
    char err[4096];
    int status = fixture_run(err, sizeof err, "%s", args);
    size_t lines = 0;
    for (const char *p = err; *p; p++) lines += *p == '\n';
    CHECK(status != 0, "'%s' exits non-zero", args);
    CHECK(lines == 1, "'%s' prints one line, got %zu: %s", args, lines, err);
    CHECK(strstr(err, needle) != NULL, "'%s': message '%s' names '%s'", args, err, needle);
}

#endif
