/* hard_bench.h: the speed of the bit-packed hard engine, for `dlca bench --hard`. */
#ifndef DLCA_HARD_BENCH_H
#define DLCA_HARD_BENCH_H

#include "ca_model.h"
#include "hard_bench_compiled.h"

#include <stdint.h>
#include <stdio.h>

/* Prunes `model`'s hard circuit and times hard_cpu (single thread) on one height x width
 * periodic grid from random bits: `runs` runs of `steps` steps each, after one warm-up step.
 * Time is the thread's CPU time, so other processes on a shared machine do not count. Prints the
 * circuit size and the median and best cell updates per second to `out` (may be NULL);
 * *median_rate (may be NULL) gets the median. The compiled C export is timed too (compiler: see
 * hard_bench_compiled.h). */
int hard_bench(const ca_model *model, const hard_compiler *compiler, int height, int width, int runs, int steps,
               FILE *out, double *median_rate);

/* Sets every gate's logits so that its argmax is a random op that reads both inputs, drawn from
 * `seed`: a stand-in for a trained model when timing (a fresh model is all pass-through and
 * prunes to nothing). */
void hard_bench_random_ops(ca_model *model, uint64_t seed);

#endif
