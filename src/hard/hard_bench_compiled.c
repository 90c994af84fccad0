/* hard_bench_compiled.c: timing the circuit as `dlca export --format c` writes it, compiled by
 * the system's C compiler and loaded with dlopen, against the bit-packed engine's bits. */
#define _GNU_SOURCE /* mkdtemp, dlopen */
#include "hard_bench_compiled.h"

#include "error.h"
#include "hard_cpu.h"
#include "hard_export.h"
#include "rng.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void (*dlca_step_fn)(uint64_t *next, const uint64_t *grid, int batch, int height, int width, int periodic,
                             uint32_t stream, uint32_t step);

typedef struct {
    char dir[64], source[96], library[96];
    void *handle;
    dlca_step_fn step;
} compiled_circuit;

static double thread_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void compiled_free(compiled_circuit *c)
{
    if (c->handle) dlclose(c->handle);
    if (c->source[0]) unlink(c->source);
    if (c->library[0]) unlink(c->library);
    if (c->dir[0]) rmdir(c->dir);
    memset(c, 0, sizeof *c);
}

/* Writes the C export into a fresh temporary folder, compiles it to a shared library and loads
 * it. A missing or failing compiler is not an error of dlca's: *why says what happened. */
static int compiled_build(compiled_circuit *c, const hard_netlist *net, const ca_config *config, const char *cc,
                          const char *tmp, const char **why)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "%s/dlca-bench-XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    if (!mkdtemp(c->dir)) return c->dir[0] = 0, err_set(DLCA_ERR, "cannot make a temporary folder %s", c->dir);
    snprintf(c->source, sizeof c->source, "%s/circuit.c", c->dir);
    snprintf(c->library, sizeof c->library, "%s/circuit.so", c->dir);
    hard_export_info info = {config, "dlca bench --hard", NULL};
    int rc = hard_export_file(c->source, net, HARD_EXPORT_C, &info);
    if (rc) return rc;
    char command[512];
    snprintf(command, sizeof command, "%s -std=c99 -O3 -march=native -shared -fPIC -o %s %s >/dev/null 2>&1", cc,
             c->library, c->source);
    if (system(command) != 0) return *why = "the C compiler failed or is missing (set DLCA_CC)", DLCA_OK;
    c->handle = dlopen(c->library, RTLD_NOW | RTLD_LOCAL);
    if (c->handle) c->step = (dlca_step_fn)(uintptr_t)dlsym(c->handle, "dlca_step");
    if (!c->step) *why = "the compiled circuit did not load";
    return DLCA_OK;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs both from the same random grid; the compiled circuit must match the engine bit for bit. */
static int check_and_time(const compiled_circuit *c, hard_cpu *engine, int runs, int steps, double *seconds)
{
    size_t n = (size_t)engine->channels * engine->rows * (size_t)engine->words;
    uint64_t *grid = malloc(n * sizeof(uint64_t)), *next = malloc(n * sizeof(uint64_t));
    if (!grid || !next) return free(grid), free(next), err_set(DLCA_ERR_NOMEM, "out of memory");
    rng_state rng;
    rng_init(&rng, 1, 3);
    for (size_t r = 0; r < (size_t)engine->channels * engine->rows; r++)
        for (int w = 0; w < engine->words; w++) {
            int used = engine->shape.width - 64 * w;
            engine->grid[r * (size_t)engine->words + (size_t)w] = rng_next(&rng) & (used >= 64 ? ~0ULL : (1ULL << used) - 1);
        }
    memcpy(grid, engine->grid, n * sizeof(uint64_t));
    for (int r = 0; r <= runs; r++) {
        double start = thread_seconds();
        for (int t = 0; t < steps; t++) {
            c->step(next, grid, engine->shape.batch, engine->shape.height, engine->shape.width, 1,
                    engine->fire_stream, (uint32_t)(r * steps + t));
            uint64_t *swap = grid;
            grid = next, next = swap;
        }
        if (r > 0) seconds[r - 1] = thread_seconds() - start; /* run 0 warms up and is checked */
        if (r == 0) hard_cpu_run(engine, 0, steps);
        if (r == 0 && memcmp(grid, engine->grid, n * sizeof(uint64_t)) != 0) {
            free(grid), free(next);
            return err_set(DLCA_ERR, "the compiled circuit differs from the hard engine after %d steps", steps);
        }
    }
    free(grid), free(next);
    return DLCA_OK;
}

int hard_bench_compiled(const hard_netlist *net, const ca_config *config, const hard_compiler *compiler, int height,
                        int width, int runs, int steps, FILE *out, double *median_rate)
{
    const char *cc = compiler && compiler->cc ? compiler->cc : "cc", *why = NULL;
    const char *tmp = compiler ? compiler->tmpdir : NULL;
    compiled_circuit c;
    hard_cpu engine;
    double *seconds = malloc((size_t)runs * sizeof(double));
    if (median_rate) *median_rate = 0.0;
    if (!seconds) return err_set(DLCA_ERR_NOMEM, "out of memory");
    int rc = compiled_build(&c, net, config, cc, tmp, &why);
    if (!rc && !why) rc = hard_cpu_init(&engine, net, (ca_shape){1, height, width, CA_BOUNDARY_PERIODIC}, config->fire_rate);
    if (!rc && !why && engine.stack > 1) { /* the exported step keeps a row a word: compared word for word */
        why = "the engine stacks rows of 32 cells or fewer, the compiled circuit does not";
        hard_cpu_free(&engine);
    }
    if (!rc && !why) {
        hard_cpu_set_fire_stream(&engine, 1);
        rc = check_and_time(&c, &engine, runs, steps, seconds);
        hard_cpu_free(&engine);
    }
    compiled_free(&c);
    if (!rc && why && out) fprintf(out, "compiled circuit: not timed: %s\n", why);
    if (!rc && !why) {
        qsort(seconds, (size_t)runs, sizeof(double), compare_doubles);
        double updates = (double)height * (double)width * (double)steps;
        double median = runs % 2 ? seconds[runs / 2] : 0.5 * (seconds[runs / 2 - 1] + seconds[runs / 2]);
        if (out)
            fprintf(out,
                    "compiled circuit (dlca export --format c, %s -O3 -march=native), same grid, 1 thread, same bits as "
                    "the engine:\n  median %.3g cell updates/s (best %.3g) over %d runs of %d steps (thread CPU time)\n",
                    cc, updates / median, updates / seconds[0], runs, steps);
        if (median_rate) *median_rate = updates / median;
    }
    free(seconds);
    return rc;
}
