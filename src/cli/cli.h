/* cli.h: what every dlca subcommand shares: range-checked flag values and the option loop.
 * Errors go through err_set with the flag's name, so main can print one clear line. */
#ifndef DLCA_CLI_H
#define DLCA_CLI_H

#include <stddef.h>
#include <stdint.h>

/* One subcommand: `name` is what follows "dlca", run returns the process exit status. */
typedef struct {
    const char *name;
    const char *summary; /* one line for `dlca --help` */
    int (*run)(int argc, char **argv);
} cli_command;

/* Integer value of `flag` in [min, max]; rejects trailing junk and overflow. */
int cli_int(const char *flag, const char *text, long long min, long long max, long long *out);

/* Finite real value of `flag` in [min, max]. */
int cli_double(const char *flag, const char *text, double min, double max, double *out);

/* "HxW" with both sides in [1, max]. */
int cli_grid(const char *flag, const char *text, int max, int *height, int *width);

/* Value following flag argv[*i] (advancing *i), or an error naming the flag. */
int cli_value(int argc, char **argv, int *i, const char **value);

/* `text` (read from a file) as it may reach a terminal: printable ASCII as is, every other byte
 * as \xNN, so no escape sequence gets through; cut to fit `size`. Returns `out`. */
const char *cli_printable(const char *text, char *out, size_t size);

/* An output file `path` of flag `flag` checked before any work (atomic_file_check) and, by
 * identity (./m.dlca, links), refused when it is the input model `model` (NULL: no model). */
int cli_output_not_model(const char *path, const char *flag, const char *model);

/* Prints "dlca <command>: <message>" to stderr and returns the exit status 2 (usage) or 1. */
int cli_fail(const char *command, int usage);

#endif
