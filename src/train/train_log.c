/* train_log.c: progress line, CSV log and loss-curve plot of a training run. */
#include "train_log.h"

#include "error.h"
#include "image_png.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int remember(train_log *log, double step, double soft, double hard)
{
    if (log->count == log->capacity) {
        size_t capacity = log->capacity ? 2 * log->capacity : 256;
        double *steps = realloc(log->steps, capacity * sizeof(double));
        if (steps) log->steps = steps;
        double *soft_values = realloc(log->soft, capacity * sizeof(double));
        if (soft_values) log->soft = soft_values;
        double *hard_values = realloc(log->hard, capacity * sizeof(double));
        if (hard_values) log->hard = hard_values;
        if (!steps || !soft_values || !hard_values) return err_set(DLCA_ERR_NOMEM, "out of memory for the loss log");
        log->capacity = capacity;
    }
    log->steps[log->count] = step, log->soft[log->count] = soft, log->hard[log->count] = hard;
    log->count++;
    return DLCA_OK;
}

/* Reads back the rows of an earlier run up to `last_step`; the file is then rewritten with them. */
static int load_rows(train_log *log, FILE *in, uint64_t last_step, char **kept, size_t *kept_size)
{
    char line[512];
    FILE *memory = open_memstream(kept, kept_size);
    if (!memory) return err_set(DLCA_ERR_NOMEM, "out of memory reading %s", log->csv_path);
    while (fgets(line, sizeof line, in)) {
        double step, soft, hard, seconds;
        if (sscanf(line, "%lf,%lf,%lf,%lf", &step, &soft, &hard, &seconds) != 4) {
            if (strncmp(line, "step,", 5) == 0) fputs(line, memory);
            continue;
        }
        if (step > (double)last_step) break;
        fputs(line, memory);
        if (remember(log, step, soft, hard)) return fclose(memory), DLCA_ERR;
    }
    fclose(memory);
    return DLCA_OK;
}

int train_log_open(train_log *log, const char *path, int resume, uint64_t resume_step, int tty)
{
    memset(log, 0, sizeof *log);
    log->tty = tty;
    snprintf(log->csv_path, sizeof log->csv_path, "%s", path);
    size_t n = strlen(path);
    int is_csv = n > 4 && strcmp(path + n - 4, ".csv") == 0;
    snprintf(log->plot_path, sizeof log->plot_path, "%.*s-loss.png", (int)(is_csv ? n - 4 : n), path);
    char *kept = NULL;
    size_t kept_size = 0;
    FILE *old = resume ? fopen(path, "r") : NULL;
    if (old) {
        int rc = load_rows(log, old, resume_step, &kept, &kept_size);
        fclose(old);
        if (rc) return free(kept), DLCA_ERR;
    }
    log->csv = fopen(path, "w");
    if (!log->csv) {
        free(kept);
        return err_set(DLCA_ERR, "%s: cannot write the log: %s", path, strerror(errno));
    }
    if (kept_size)
        fwrite(kept, 1, kept_size, log->csv);
    else
        fputs("step,soft_loss,hard_loss,seconds\n", log->csv);
    free(kept);
    fflush(log->csv);
    return DLCA_OK;
}

static void format_duration(char *text, size_t size, double seconds)
{
    if (!(seconds >= 0.0) || seconds > 1e7) snprintf(text, size, "--");
    else if (seconds < 60.0) snprintf(text, size, "%.0fs", seconds);
    else if (seconds < 3600.0) snprintf(text, size, "%dm%02ds", (int)seconds / 60, (int)seconds % 60);
    else snprintf(text, size, "%dh%02dm", (int)seconds / 3600, (int)seconds % 3600 / 60);
}

void train_log_progress(train_log *log, uint64_t step, uint64_t total, double soft, double hard, double rate)
{
    double now = wall_seconds();
    if (hard < 0.0 && (!log->tty || now - log->last_draw < 0.1)) return;
    log->last_draw = now;
    char eta[32], hard_text[32] = "";
    format_duration(eta, sizeof eta, rate > 0.0 ? (double)(total - step) / rate : -1.0);
    if (hard >= 0.0) snprintf(hard_text, sizeof hard_text, "  hard %.6g", hard);
    fprintf(stderr, "%sstep %llu/%llu  soft %.6g%s  %.2f steps/s  ETA %s%s", log->tty ? "\r\033[K" : "",
            (unsigned long long)step, (unsigned long long)total, soft, hard_text, rate, eta,
            log->tty && hard < 0.0 ? "" : "\n");
    log->line_open = log->tty && hard < 0.0;
    fflush(stderr);
}

int train_log_row(train_log *log, uint64_t step, double soft, double hard, double seconds)
{
    if (fprintf(log->csv, "%llu,%.9g,%.9g,%.3f\n", (unsigned long long)step, soft, hard, seconds) < 0 ||
        fflush(log->csv) != 0)
        return err_set(DLCA_ERR, "%s: cannot write the log: %s", log->csv_path, strerror(errno));
    if (remember(log, (double)step, soft, hard)) return DLCA_ERR;
    if (log->count < 2) return DLCA_OK;
    return image_write_loss_curve(log->plot_path, log->steps, log->soft, log->hard, (int)log->count, 640, 400);
}

void train_log_message(train_log *log, const char *format, ...)
{
    if (log->line_open) fputc('\n', stderr), log->line_open = 0;
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
}

void train_log_finish(train_log *log, const char *model_path)
{
    if (!model_path) return;
    train_log_message(log, "wrote %s, %s and %s", model_path, log->csv_path, log->plot_path);
}

void train_log_close(train_log *log)
{
    if (log->csv) fclose(log->csv);
    free(log->steps), free(log->soft), free(log->hard);
    memset(log, 0, sizeof *log);
}
