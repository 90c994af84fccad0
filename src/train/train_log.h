/* train_log.h: what `dlca train` tells the user: a live progress line on a terminal (plain
 * lines otherwise), the CSV log (step,soft_loss,hard_loss,seconds) and its loss-curve PNG. */
#ifndef DLCA_TRAIN_LOG_H
#define DLCA_TRAIN_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    FILE *csv;
    char csv_path[4096], plot_path[4096];
    int tty;
    double *steps, *soft, *hard; /* every logged row, for the plot */
    size_t count, capacity;
    double last_draw;            /* when the progress line was last redrawn */
    int line_open;               /* a progress line without its newline is on the terminal */
} train_log;

/* Opens the CSV at `path` (the plot is `path` with -loss.png for .csv). With `resume`, keeps the
 * rows up to `resume_step` of an existing log and appends; otherwise starts a new one. */
int train_log_open(train_log *log, const char *path, int resume, uint64_t resume_step, int tty);

/* Updates the progress line: step/total, soft loss, hard loss (< 0: not measured this step),
 * steps per second and the time left. */
void train_log_progress(train_log *log, uint64_t step, uint64_t total, double soft, double hard, double rate);

/* Appends a row to the CSV (flushed) and redraws the loss curve. */
int train_log_row(train_log *log, uint64_t step, double soft, double hard, double seconds);

/* A line of its own (after any progress line). */
void train_log_message(train_log *log, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* The closing line: where the model went (NULL: stopped early or failed). */
void train_log_finish(train_log *log, const char *model_path);

void train_log_close(train_log *log);

#endif
