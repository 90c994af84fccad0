/* cmd_runs.c: `dlca runs [DIR]`: the models in a folder, one line each, sorted by name: file,
 * preset, steps done of the total, the last logged soft and hard loss (from the CSV that `dlca
 * train` writes beside the model, at or before the model's step), and `dlca eval`'s verdict: its
 * checks run on the CPU engine (0.1-0.3 s for each shipped model on the 2-core VM; --no-eval
 * leaves them out). A file that cannot be read is listed with the reason, never fatal. */
#include "ca_eval.h"
#include "ca_file.h"
#include "ca_memory.h"
#include "ca_target.h"
#include "cli.h"
#include "commands.h"
#include "error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { RUNS_MAX_FILES = 100000, CSV_LINE_MAX = 1024 };

typedef struct {
    char *name;
    char preset[4 * CA_NAME_LENGTH + 1];
    char steps[64], soft[32], hard[32], verdict[64];
    char *problem; /* why it could not be read (malloc'ed), or NULL */
} run_row;

static void print_help(void)
{
    printf("usage: dlca runs [DIR]\n"
           "\n"
           "Lists the models in DIR (default: here), sorted by name, one line each: the file, its\n"
           "preset, training steps done of the total, and the soft and hard loss last logged (from\n"
           "<model>.csv beside it, the log dlca train writes by default, at or before the model's\n"
           "step; '-' without one). A model is a file named *.dlca or one starting with the model\n"
           "file's magic bytes; hidden files (dlca's temp and lock files) are skipped. A model that\n"
           "cannot be read is listed with the reason and the listing goes on.\n"
           "\n"
           "The last column is dlca eval's verdict, its checks run on the CPU engine: 'pass 2/2',\n"
           "'FAIL 1/2' (checks passed of all), or why there is none ('over 4 GiB': a model whose\n"
           "checks need more host memory than dlca eval's default limit). 'dlca eval MODEL' gives\n"
           "each check's error.\n"
           "\n"
           "  --no-eval   leave the verdict out (a tenth of a second to a few seconds a model)\n");
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Is `path` a model to list: named *.dlca, or a regular file that starts with the magic? A FIFO
 * or device is never opened (O_NONBLOCK, then fstat before any read). */
static int is_candidate(const char *path, const char *name)
{
    if (ends_with(name, ".dlca")) return 1;
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return 0;
    struct stat st;
    unsigned char magic[CA_FILE_MAGIC_SIZE];
    int yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, magic, sizeof magic) == (ssize_t)sizeof magic &&
              memcmp(magic, ca_file_magic, sizeof magic) == 0;
    close(fd);
    return yes;
}

/* The last row of the CSV at `path` whose step is at most `step`: its losses, else "-". */
static void read_losses(const char *path, unsigned long long step, run_row *row)
{
    double soft = 0.0, hard = 0.0;
    int found = 0, fd = open(path, O_RDONLY | O_NONBLOCK);
    struct stat st;
    FILE *f = NULL;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) f = fdopen(fd, "r");
    if (!f && fd >= 0) close(fd);
    char line[CSV_LINE_MAX];
    while (f && fgets(line, sizeof line, f)) {
        double s, a, b;
        char tail;
        if (sscanf(line, "%lf,%lf,%lf,%*f%c", &s, &a, &b, &tail) >= 3 && s >= 0 && s <= (double)step)
            soft = a, hard = b, found = 1;
    }
    if (f) fclose(f);
    snprintf(row->soft, sizeof row->soft, found ? "%.4g" : "-", soft); /* a logged NaN prints as nan */
    snprintf(row->hard, sizeof row->hard, found ? "%.4g" : "-", hard);
}

/* dlca eval's checks of `m` on the CPU engine, as "pass N/N" or "FAIL K/N", or why not. */
static void verdict(const ca_model *m, const ca_target_image *target, run_row *row)
{
    double *image = target->bits ? ca_target_values(target) : NULL;
    ca_eval_context context = {m, CA_BACKEND_CPU, NULL, image, 0};
    ca_check checks[CA_EVAL_MAX_CHECKS];
    int count = 0, passed = 0;
    if (target->bits && !image) snprintf(row->verdict, sizeof row->verdict, "- (out of memory)");
    else if (ca_memory_check(ca_eval_memory(&context), CA_MEMORY_DEFAULT_GIB, "eval"))
        snprintf(row->verdict, sizeof row->verdict, "- (over %g GiB)", CA_MEMORY_DEFAULT_GIB);
    else if (ca_eval_checks(&context, checks, &count))
        snprintf(row->verdict, sizeof row->verdict, "- (eval failed)");
    else {
        for (int i = 0; i < count; i++) passed += checks[i].passed;
        snprintf(row->verdict, sizeof row->verdict, "%s %d/%d", passed == count ? "pass" : "FAIL", passed, count);
    }
    free(image);
}

static void describe(run_row *row, const char *dir, const char *name, int eval)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ca_model m;
    ca_train_state state;
    ca_target_image target;
    if (ca_file_load(path, &m, &state, &target)) {
        row->problem = strdup(err_message());
        return;
    }
    snprintf(row->verdict, sizeof row->verdict, "-");
    if (eval) verdict(&m, &target, row);
    ca_target_image_free(&target);
    cli_printable(m.config.preset, row->preset, sizeof row->preset);
    unsigned long long done = state.moment1 ? (unsigned long long)state.step : 0;
    if (state.moment1) snprintf(row->steps, sizeof row->steps, "%llu/%d", done, m.config.train_steps);
    else snprintf(row->steps, sizeof row->steps, "-/%d", m.config.train_steps);
    char csv[8200];
    size_t n = strlen(path);
    snprintf(csv, sizeof csv, "%.*s.csv", (int)(ends_with(path, ".dlca") ? n - 5 : n), path);
    read_losses(csv, done, row);
    ca_train_state_free(&state);
    ca_model_free(&m);
}

static int by_name(const void *a, const void *b) { return strcmp(((const run_row *)a)->name, ((const run_row *)b)->name); }

static void free_rows(run_row *rows, int count)
{
    for (int i = 0; i < count; i++) free(rows[i].name), free(rows[i].problem);
    free(rows);
}

/* The candidates of `dir`, named and not yet described. */
static int list_folder(const char *dir, run_row **out, int *count)
{
    DIR *d = opendir(dir);
    if (!d) return err_set(DLCA_ERR, "cannot list %s: %s", dir, strerror(errno));
    run_row *rows = NULL;
    int n = 0, capacity = 0, rc = DLCA_OK;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!is_candidate(path, e->d_name)) continue;
        if (n == RUNS_MAX_FILES) rc = err_set(DLCA_ERR, "%s: more than %d models", dir, RUNS_MAX_FILES);
        else if (n == capacity) {
            capacity = capacity ? 2 * capacity : 32;
            run_row *more = realloc(rows, (size_t)capacity * sizeof *rows);
            if (!more) rc = err_set(DLCA_ERR_NOMEM, "out of memory listing %s", dir);
            else rows = more;
        }
        if (rc) break;
        memset(&rows[n], 0, sizeof rows[n]);
        if (!(rows[n].name = strdup(e->d_name))) rc = err_set(DLCA_ERR_NOMEM, "out of memory listing %s", dir);
        else n++;
    }
    closedir(d);
    if (rc) return free_rows(rows, n), rc;
    *out = rows, *count = n;
    return DLCA_OK;
}

static int width_of(const char *text, int at_least)
{
    int n = (int)strlen(text);
    return n > at_least ? n : at_least;
}

int cmd_runs(int argc, char **argv)
{
    const char *dir = NULL;
    int eval = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return print_help(), 0;
        if (strcmp(argv[i], "--no-eval") == 0) {
            eval = 0;
            continue;
        }
        if (strncmp(argv[i], "--", 2) == 0) {
            err_set(DLCA_ERR, "unknown option '%s' (see dlca runs --help)", argv[i]);
            return cli_fail("runs", 1);
        }
        if (dir) {
            err_set(DLCA_ERR, "unexpected argument '%s' (one DIR only)", argv[i]);
            return cli_fail("runs", 1);
        }
        dir = argv[i];
    }
    if (!dir) dir = ".";
    run_row *rows = NULL;
    int count = 0;
    if (list_folder(dir, &rows, &count)) return cli_fail("runs", 0);
    qsort(rows, (size_t)count, sizeof *rows, by_name);
    int w_name = 4, w_preset = 6, w_steps = 5;
    for (int i = 0; i < count; i++) {
        char shown[1024];
        describe(&rows[i], dir, rows[i].name, eval);
        w_name = width_of(cli_printable(rows[i].name, shown, sizeof shown), w_name);
        if (!rows[i].problem) w_preset = width_of(rows[i].preset, w_preset), w_steps = width_of(rows[i].steps, w_steps);
    }
    printf("%-*s  %-*s  %-*s  %-10s  %-10s  %s\n", w_name, "file", w_preset, "preset", w_steps, "steps", "soft loss",
           "hard loss", "eval");
    for (int i = 0; i < count; i++) {
        char shown[1024], why[1024];
        cli_printable(rows[i].name, shown, sizeof shown);
        if (rows[i].problem)
            printf("%-*s  unreadable: %s\n", w_name, shown, cli_printable(rows[i].problem, why, sizeof why));
        else
            printf("%-*s  %-*s  %-*s  %-10s  %-10s  %s\n", w_name, shown, w_preset, rows[i].preset, w_steps,
                   rows[i].steps, rows[i].soft, rows[i].hard, rows[i].verdict);
    }
    if (count == 0) printf("(no models in %s)\n", dir);
    free_rows(rows, count);
    return 0;
}
