/* cmd_train_options.h: `dlca train`'s command line: its flags, their help and parsing, and the
 * config they build (cmd_train.c runs what they ask). */
#ifndef DLCA_CMD_TRAIN_OPTIONS_H
#define DLCA_CMD_TRAIN_OPTIONS_H

#include "ca_config_text.h"
#include "ca_options.h"

#include <signal.h>

typedef struct {
    const char *target, *device, *out, *log, *resume, *config, *keep_members;
    const char *from; /* --from: a model file whose circuit (wiring and logits) a new run starts from */
    int force, stop_exact, keep_final;
    ca_cache cache;
    long long every, check_every, population, tries;
    double max_memory; /* GiB */
    double repair;     /* seconds of dlca repair's search when a run ends inexact; 0: none;
                          < 0: not given (the default run's on a GPU, else 0) */
    long long repair_threads; /* threads a search; 0: not given (the default run's) */
    long long repair_tries;   /* tries a search at most; 0: no bound but the seconds */
    long long repair_members; /* a population's best-ranked inexact members searched; 0: all;
                                 -1: not given (the default run's) */
    /* The config's keys given as flags (--channels 4, --lr 0.1), applied on --config's. */
    ca_config_assignments flags;
    long long steps; /* --steps, which --resume takes as the new total */
    int has_steps;
    volatile sig_atomic_t *stop; /* set by Ctrl-C, SIGTERM or SIGHUP (cli_stop.h): save and stop */
} cmd_train_options;

/* The help text, on stdout. */
void cmd_train_help(void);

/* The flags into *o (defaults first; *help set by --help or -h); refuses a bad flag, value or
 * combination in one line. o->flags is the caller's to free (ca_config_assignments_free), also
 * after a failure. */
int cmd_train_parse(int argc, char **argv, cmd_train_options *o, int *help);

/* The config: the preset, then `base` (every key of it; --from's model, else NULL), then
 * --config's file, then the flags (ca_config_text.h). `base_name` names base in messages. */
int cmd_train_config(ca_config *config, const cmd_train_options *o, const ca_config *base, const char *base_name);

#endif
