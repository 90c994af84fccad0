/* train_log.c: progress line, CSV log and loss-curve plot of a training run (the log replaced
 * atomically by its first row, then appended to; see train_log.h). */
#include "train_log.h"

#include "atomic_file.h"
#include "error.h"
#include "image_png.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

static const char header[] = "step,soft_loss,hard_loss,seconds\n";

char *train_log_plot_path(const char *csv_path)
{
    size_t n = strlen(csv_path), stem = n > 4 && strcmp(csv_path + n - 4, ".csv") == 0 ? n - 4 : n;
    char *plot = malloc(stem + sizeof "-loss.png");
    if (!plot) return NULL;
    memcpy(plot, csv_path, stem);
    memcpy(plot + stem, "-loss.png", sizeof "-loss.png");
    return plot;
}

/* Reads back the rows of an earlier run up to `last_step` (and its header) into `kept`. */
static int load_rows(train_log *log, FILE *in, uint64_t last_step, FILE *kept)
{
    char line[TRAIN_LOG_LINE_MAX + 2];
    for (size_t number = 1; fgets(line, sizeof line, in); number++) {
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n')
            return err_set(DLCA_ERR, "%s: line %zu is longer than %d characters: not a dlca log (give another --log)",
                           log->csv_path, number, TRAIN_LOG_LINE_MAX);
        double step, soft, hard, seconds;
        if (sscanf(line, "%lf,%lf,%lf,%lf", &step, &soft, &hard, &seconds) != 4) {
            if (strncmp(line, "step,", 5) == 0) fputs(line, kept);
            continue;
        }
        if (step > (double)last_step) break;
        fputs(line, kept);
        if (remember(log, step, soft, hard)) return DLCA_ERR;
    }
    if (ferror(in)) return err_set(DLCA_ERR, "%s: cannot read the log to resume it: %s", log->csv_path, strerror(errno));
    return DLCA_OK;
}

/* The earlier log, when there is one: only a regular file is read (O_NONBLOCK: a FIFO must not
 * hang the open); a missing log is no error. */
static int load_earlier(train_log *log, uint64_t last_step)
{
    int fd = open(log->csv_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return DLCA_OK;
    if (fd < 0) return err_set(DLCA_ERR, "%s: cannot read the log to resume it: %s", log->csv_path, strerror(errno));
    struct stat st;
    FILE *in = NULL, *kept = NULL;
    int rc = DLCA_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = err_set(DLCA_ERR, "%s: the log is not a regular file, so it cannot be resumed", log->csv_path);
    else if (!(in = fdopen(fd, "r")) || !(kept = open_memstream(&log->kept, &log->kept_size)))
        rc = err_set(DLCA_ERR_NOMEM, "out of memory reading %s", log->csv_path);
    if (!rc) rc = load_rows(log, in, last_step, kept);
    if (kept && fclose(kept) != 0 && !rc) rc = err_set(DLCA_ERR_NOMEM, "out of memory reading %s", log->csv_path);
    if (in) fclose(in);
    else close(fd);
    return rc;
}

int train_log_open(train_log *log, const char *path, int resume, uint64_t resume_step, int tty)
{
    memset(log, 0, sizeof *log);
    log->tty = tty, log->csv_fd = -1;
    log->csv_path = strdup(path);
    log->plot_path = train_log_plot_path(path);
    if (!log->csv_path || !log->plot_path) return err_set(DLCA_ERR_NOMEM, "out of memory for the log's paths");
    if (resume && load_earlier(log, resume_step)) return DLCA_ERR;
    if (log->kept_size == 0) {
        free(log->kept);
        if (!(log->kept = strdup(header))) return err_set(DLCA_ERR_NOMEM, "out of memory for the log");
        log->kept_size = sizeof header - 1;
    }
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

static int write_all(int fd, const char *data, size_t size)
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

/* The first row: the log is replaced by the kept rows and this one, atomically, and stays open. */
static int start_log(train_log *log, const char *row, size_t size)
{
    atomic_file file;
    if (atomic_file_begin(&file, log->csv_path)) return DLCA_ERR;
    file.keep_open = 1;
    if (atomic_file_write_all(&file, log->kept, log->kept_size) || atomic_file_write_all(&file, row, size) ||
        atomic_file_commit(&file)) {
        atomic_file_abort(&file);
        return DLCA_ERR;
    }
    log->csv_fd = file.fd, log->started = 1;
    free(log->kept), log->kept = NULL, log->kept_size = 0;
    return DLCA_OK;
}

/* One row as the log holds it; its length, or -1 when it does not fit. */
static int format_row(char *row, size_t size, uint64_t step, double soft, double hard, double seconds)
{
    int n = snprintf(row, size, "%llu,%.9g,%.9g,%.3f\n", (unsigned long long)step, soft, hard, seconds);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

int train_log_write(const char *csv_path, const uint64_t *steps, const double *soft, const double *hard,
                    const double *seconds, size_t count, const image_plot_mark *mark)
{
    char *text = NULL, *plot = train_log_plot_path(csv_path);
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    double *x = malloc((count ? count : 1) * sizeof(double));
    int rc = out && plot && x ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for the log %s", csv_path);
    if (!rc) fputs(header, out);
    for (size_t i = 0; !rc && i < count; i++) {
        char row[160];
        if (format_row(row, sizeof row, steps[i], soft[i], hard[i], seconds[i]) < 0)
            rc = err_set(DLCA_ERR, "%s: a log row does not fit %zu characters", csv_path, sizeof row);
        else fputs(row, out);
        x[i] = (double)steps[i];
    }
    if (out && fclose(out) != 0 && !rc) rc = err_set(DLCA_ERR_NOMEM, "out of memory for the log %s", csv_path);
    if (!rc) rc = atomic_file_write(csv_path, text, size);
    if (!rc && count >= 2) rc = image_write_loss_curve(plot, x, soft, hard, (int)count, 640, 400, mark);
    free(text), free(plot), free(x);
    return rc;
}

/* The loss curve of the rows so far (from two on), with the run's mark where it named one. */
static int draw_plot(const train_log *log)
{
    if (log->count < 2) return DLCA_OK;
    return image_write_loss_curve(log->plot_path, log->steps, log->soft, log->hard, (int)log->count, 640, 400,
                                  log->marked ? &log->mark : NULL);
}

int train_log_row(train_log *log, uint64_t step, double soft, double hard, double seconds)
{
    char row[160];
    int n = format_row(row, sizeof row, step, soft, hard, seconds);
    if (n < 0) return err_set(DLCA_ERR, "%s: a log row does not fit %zu characters", log->csv_path, sizeof row);
    if (!log->started) {
        if (start_log(log, row, (size_t)n)) return DLCA_ERR;
    } else if (write_all(log->csv_fd, row, (size_t)n) != 0) { /* one write: a kill never tears a row */
        return err_set(DLCA_ERR, "%s: cannot write the log: %s", log->csv_path, strerror(errno));
    }
    if (remember(log, (double)step, soft, hard)) return DLCA_ERR;
    return draw_plot(log);
}

int train_log_mark(train_log *log, uint64_t step, double hard)
{
    log->marked = 1, log->mark = (image_plot_mark){(double)step, hard};
    return draw_plot(log);
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
    if (log->count < 2) train_log_message(log, "wrote %s and %s", model_path, log->csv_path);
    else train_log_message(log, "wrote %s, %s and %s", model_path, log->csv_path, log->plot_path);
}

void train_log_close(train_log *log)
{
    if (log->started) close(log->csv_fd);
    free(log->csv_path), free(log->plot_path), free(log->kept);
    free(log->steps), free(log->soft), free(log->hard);
    memset(log, 0, sizeof *log);
}
