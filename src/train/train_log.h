/* train_log.h: what `dlca train` tells the user: a live progress line on a terminal (plain
 * lines otherwise), the CSV log (step,soft_loss,hard_loss,seconds) and its loss-curve PNG. */
#ifndef DLCA_TRAIN_LOG_H
#define DLCA_TRAIN_LOG_H

#include "image_png.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    char *csv_path, *plot_path;
    int csv_fd;              /* the log, open for appending once this run wrote its first row */
    int started;             /* csv_fd is open */
    char *kept;              /* what the new log starts with: the header, or an earlier run's rows */
    size_t kept_size;
    int tty;
    double *steps, *soft, *hard; /* every logged row, for the plot */
    size_t count, capacity;
    double last_draw;            /* when the progress line was last redrawn */
    int line_open;               /* a progress line without its newline is on the terminal */
    int marked;                  /* the plot marks `mark` (train_log_mark), else its best row */
    image_plot_mark mark;
} train_log;

/* The longest line read back from an earlier log: dlca's rows are under 100 characters. */
enum { TRAIN_LOG_LINE_MAX = 1024 };

/* The loss-curve plot of the log at `csv_path`: the path with -loss.png for .csv (malloc'ed;
 * NULL when out of memory). */
char *train_log_plot_path(const char *csv_path);

/* Prepares the CSV at `path`. With `resume`, reads back the rows up to `resume_step` of an
 * existing log (a regular file, lines of at most TRAIN_LOG_LINE_MAX characters), to keep.
 * Nothing is written yet: the first train_log_row replaces the log atomically with the kept rows
 * (or the header) and its row, and later rows are appended, one write(2) each. So a run that
 * fails before its first row leaves the earlier log as it was, and a kill never leaves it
 * truncated. */
int train_log_open(train_log *log, const char *path, int resume, uint64_t resume_step, int tty);

/* Updates the progress line: step/total, soft loss, hard loss (< 0: not measured this step),
 * steps per second and the time left. */
void train_log_progress(train_log *log, uint64_t step, uint64_t total, double soft, double hard, double rate);

/* Appends a row to the CSV (the first replaces the log, see train_log_open) and redraws the loss
 * curve (from the second row on). */
int train_log_row(train_log *log, uint64_t step, double soft, double hard, double seconds);

/* Names the circuit the run writes (its step and wrong cells), which the plot marks from now on
 * instead of the best row logged, and redraws the plot (from two rows on). */
int train_log_mark(train_log *log, uint64_t step, double hard);

/* Writes a whole log at once, atomically: the header and `count` rows as train_log_row formats
 * them, and the loss curve beside it (from two rows on), marking `mark` (NULL: the best row). For
 * runs that keep their rows in memory (populations: ca_population.h). */
int train_log_write(const char *csv_path, const uint64_t *steps, const double *soft, const double *hard,
                    const double *seconds, size_t count, const image_plot_mark *mark);

/* A line of its own (after any progress line). */
void train_log_message(train_log *log, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* The closing line: where the model, the log and the plot went (NULL: stopped early or failed). */
void train_log_finish(train_log *log, const char *model_path);

void train_log_close(train_log *log);

#endif
