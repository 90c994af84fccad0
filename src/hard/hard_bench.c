/* hard_bench.c: timing hard_cpu on a big periodic grid. */
#include "hard_bench.h"

#include "error.h"
#include "hard_bench_compiled.h"
#include "hard_cpu.h"
#include "rng.h"

#include <stdlib.h>
#include <time.h>

/* CPU time of this thread: on a shared machine, wall time would count other processes. */
static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Random bits straight into the packed grid, keeping the bits that are no cell 0. */
static void random_start(hard_cpu *e, uint64_t seed)
{
    rng_state rng;
    rng_init(&rng, seed, 1);
    size_t rows = (size_t)e->channels * e->rows;
    for (size_t r = 0; r < rows; r++)
        for (int w = 0; w < e->words; w++)
            e->grid[r * (size_t)e->words + (size_t)w] = rng_next(&rng) & hard_cpu_cell_bits(e, r % e->rows, w);
}

/* Seconds per run of `steps` steps, one entry per run. */
static void time_runs(hard_cpu *e, int runs, int steps, double *seconds)
{
    hard_cpu_run(e, 0, 1); /* warm the caches and the slot buffer */
    for (int r = 0; r < runs; r++) {
        double start = now_seconds();
        hard_cpu_run(e, (uint32_t)(1 + r * steps), steps);
        seconds[r] = now_seconds() - start;
    }
}

int hard_bench(const ca_model *model, const hard_compiler *compiler, int height, int width, int runs, int steps,
               FILE *out, double *median_rate)
{
    if (runs < 1 || steps < 1) return err_set(DLCA_ERR, "hard bench: %d runs of %d steps", runs, steps);
    hard_netlist net;
    hard_stats stats;
    hard_cpu engine;
    int rc = hard_circuit_build(&net, model, &stats);
    if (rc) return rc;
    rc = hard_cpu_init(&engine, &net, (ca_shape){1, height, width, CA_BOUNDARY_PERIODIC}, model->config.fire_rate);
    if (rc) return hard_netlist_free(&net), rc;
    double *seconds = malloc((size_t)runs * sizeof(double));
    if (!seconds) {
        hard_cpu_free(&engine), hard_netlist_free(&net);
        return err_set(DLCA_ERR_NOMEM, "out of memory");
    }
    random_start(&engine, 1);
    hard_cpu_set_fire_stream(&engine, 1);
    time_runs(&engine, runs, steps, seconds);
    qsort(seconds, (size_t)runs, sizeof(double), compare_doubles);
    double updates = (double)height * (double)width * (double)steps;
    double median = runs % 2 ? seconds[runs / 2] : 0.5 * (seconds[runs / 2 - 1] + seconds[runs / 2]);
    if (out)
        fprintf(out,
                "hard engine: %zu model gates -> %zu gates after pruning (%d value slots), %dx%d periodic, "
                "%s, 1 thread\n"
                "  median %.3g cell updates/s (best %.3g) over %d runs of %d steps (thread CPU time)\n",
                stats.model_gates, stats.after.total, engine.program.n_slots, height, width,
                model->config.fire_rate < 1.0 ? "async" : "sync", updates / median, updates / seconds[0], runs, steps);
    if (median_rate) *median_rate = updates / median;
    free(seconds);
    hard_cpu_free(&engine);
    rc = hard_bench_compiled(&net, &model->config, compiler, height, width, runs, steps, out, NULL);
    hard_netlist_free(&net);
    return rc;
}

void hard_bench_random_ops(ca_model *m, uint64_t seed)
{
    static const int two_input[10] = {GATE_AND, GATE_A_AND_NOT_B, GATE_NOT_A_AND_B, GATE_XOR, GATE_OR,
                                      GATE_NOR, GATE_XNOR, GATE_A_OR_NOT_B, GATE_NOT_A_OR_B, GATE_NAND};
    rng_state rng;
    rng_init(&rng, seed, 7);
    for (size_t g = 0; g < m->gate_count; g++) {
        float *z = m->logits + g * GATE_OP_COUNT;
        for (int i = 0; i < GATE_OP_COUNT; i++) z[i] = 0.0f;
        z[two_input[rng_below(&rng, 10)]] = 1.0f;
    }
}
