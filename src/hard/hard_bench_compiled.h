/* hard_bench_compiled.h: the speed of the circuit exported as C and compiled, for
 * `dlca bench --hard`: what a user gets from `dlca export --format c` and `cc -O3`. */
#ifndef DLCA_HARD_BENCH_COMPILED_H
#define DLCA_HARD_BENCH_COMPILED_H

#include "ca_config.h"
#include "hard_circuit.h"

#include <stdio.h>

/* The C compiler and the folder for its temporary files (NULL: cc and /tmp). */
typedef struct {
    const char *cc, *tmpdir;
} hard_compiler;

/* Exports `net` as C into a temporary folder, compiles it with compiler->cc -O3 -march=native
 * into a shared library, loads it, checks its bits against hard_cpu after `steps`
 * steps from a random grid, then times `runs` runs of `steps` steps on one height x width grid
 * periodic grid (thread CPU time). Prints the median and best cell updates/s to `out`; *median_rate gets the
 * median, or 0 with a printed reason when no compiler works. A mismatch is an error. */
int hard_bench_compiled(const hard_netlist *net, const ca_config *config, const hard_compiler *compiler, int height,
                        int width, int runs, int steps, FILE *out, double *median_rate);

#endif
