/* commands.h: the dlca subcommands; each takes argv from its own name on and returns the
 * process exit status (0 ok, 1 failed, 2 bad usage), printing its own errors. */
#ifndef DLCA_COMMANDS_H
#define DLCA_COMMANDS_H

#include "ca_options.h"

#include <stddef.h>

int cmd_train(int argc, char **argv);

/* cmd_train with the test seam of `seam` (ca_options.before_step; NULL: none). */
int cli_train(int argc, char **argv, const ca_options *seam);
int cmd_run(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_repair(int argc, char **argv);

/* dlca repair's progress line on stderr (ca_repair_options.progress; user unused), which dlca
 * train --repair prints too. */
void cmd_repair_progress(void *user, size_t wrong, size_t tries, int changes, int minima, double seconds);
int cmd_bench(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_sweep(int argc, char **argv);

#endif
