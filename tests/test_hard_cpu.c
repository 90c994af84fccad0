/* test_hard_cpu: the bit-packed hard engine against the float engine's hard rollout (ca_cpu
 * with hard coefficients from a binary start), bit for bit after every step: both boundaries,
 * sync and async, 1- and 2-bit perception, 1 to 3 channels, widths below, at and above 64 and
 * not multiples of it, heights down to 1, and grids of up to 32 cells wide whose rows are
 * stacked several a word (the last word of a sample full or not, samples of one word); and the
 * same with fire masks drawn ahead for some of the steps (hard_cpu_use_fire_masks), and on an
 * engine of twice the batch running its first samples alone (hard_cpu_use_batch), the others
 * holding other cells, with its masks drawn ahead. */
#include "check.h"
#include "hard_cpu.h"
#include "hard_fixtures.h"

#include <stdio.h>

typedef struct {
    int channels, kernels, bits, height, width, batch, block; /* block: 0 = the engine's choice */
} shape_case;

static int count_ones(const double *grid, size_t n)
{
    int ones = 0;
    for (size_t i = 0; i < n; i++) ones += grid[i] > 0.5;
    return ones;
}

/* From grids[0], `steps` steps of the engine against grids[1..steps] (n values each): the first
 * step after which they differ, or -1. `got` holds a grid. */
static int first_wrong_step(hard_cpu *engine, const double *grids, double *got, size_t n, int steps)
{
    hard_cpu_pack(engine, grids);
    for (int t = 0; t < steps; t++) {
        hard_cpu_step(engine, (uint32_t)t);
        hard_cpu_unpack(engine, got);
        if (memcmp(got, grids + (size_t)(t + 1) * n, n * sizeof(double)) != 0) return t;
    }
    return -1;
}

static void test_case(shape_case sc, ca_boundary boundary, double fire_rate, hard_ops_mode mode, uint64_t seed)
{
    enum { STEPS = 6 };
    char name[160];
    snprintf(name, sizeof name, "C%d K%d %d-bit %dx%d x%d block %d %s fire %.1f ops %d", sc.channels, sc.kernels,
             sc.bits, sc.height, sc.width, sc.batch, sc.block, ca_boundary_name(boundary), fire_rate, (int)mode);
    ca_model model;
    if (hard_test_model(&model, sc.channels, sc.kernels, sc.bits, boundary, fire_rate, sc.height, sc.width, STEPS, seed)) {
        CHECK(0, "%s: model: %s", name, err_message());
        return;
    }
    rng_state rng;
    rng_init(&rng, seed, 5);
    hard_random_ops(&model, &rng, mode);
    ca_shape shape = {sc.batch, sc.height, sc.width, boundary};
    size_t n = (size_t)sc.channels * ca_shape_cells(shape);
    double *grids = malloc((STEPS + 1) * n * sizeof(double)), *got = malloc(n * sizeof(double));
    hard_netlist net;
    hard_cpu engine;
    int rc = hard_circuit_build(&net, &model, NULL);
    if (!rc) rc = hard_cpu_init(&engine, &net, shape, fire_rate);
    if (rc || !grids || !got) {
        CHECK(0, "%s: set-up: %s", name, err_message());
        free(grids), free(got), ca_model_free(&model);
        return;
    }
    hard_random_grid(grids, n, &rng);
    uint32_t stream = (uint32_t)rng_next(&rng);
    rc = hard_float_rollout(&model, shape, grids, stream, grids);
    CHECK(rc == DLCA_OK, "%s: float rollout: %s", name, err_message());
    if (sc.block) engine.block = sc.block;
    hard_cpu_set_fire_stream(&engine, stream);
    int first_bad = rc ? -1 : first_wrong_step(&engine, grids, got, n, STEPS);
    CHECK(first_bad < 0, "%s: differs from the float hard rollout after step %d", name, first_bad);
    /* again with the masks of steps 1..STEPS-2 drawn ahead: step 0 and the last draw their own */
    uint64_t *masks = malloc((size_t)(STEPS - 2) * hard_cpu_fire_plane(&engine) * sizeof(uint64_t));
    CHECK(masks != NULL, "%s: room for the masks", name);
    if (masks) {
        hard_cpu_set_fire_stream(&engine, stream);
        hard_cpu_draw_fire_masks(&engine, 1, STEPS - 2, masks);
        hard_cpu_use_fire_masks(&engine, masks, 1, STEPS - 2);
        first_bad = first_wrong_step(&engine, grids, got, n, STEPS);
        CHECK(first_bad < 0, "%s: with masks drawn ahead, differs from the float hard rollout after step %d", name,
              first_bad);
        free(masks);
    }
    /* an engine of twice the batch running its first samples alone */
    hard_cpu wide;
    ca_shape twice = {2 * sc.batch, sc.height, sc.width, boundary};
    double *start = malloc(2 * n * sizeof(double)), *wide_got = malloc(2 * n * sizeof(double));
    uint64_t *wide_masks = NULL;
    rc = start && wide_got ? hard_cpu_init(&wide, &net, twice, fire_rate) : DLCA_ERR;
    CHECK(rc == DLCA_OK, "%s: the wider engine: %s", name, err_message());
    if (!rc) {
        if (sc.block) wide.block = sc.block;
        hard_cpu_use_batch(&wide, sc.batch);
        CHECK(hard_cpu_fire_plane(&wide) == hard_cpu_fire_plane(&engine), "%s: the wider engine's fire plane", name);
        wide_masks = malloc((size_t)STEPS * hard_cpu_fire_plane(&wide) * sizeof(uint64_t));
        for (int ch = 0; ch < sc.channels; ch++) { /* its channel planes: the case's samples, then others */
            size_t cells = ca_shape_cells(shape);
            memcpy(start + 2 * (size_t)ch * cells, grids + (size_t)ch * cells, cells * sizeof(double));
            hard_random_grid(start + (2 * (size_t)ch + 1) * cells, cells, &rng);
        }
        hard_cpu_pack(&wide, start);
        hard_cpu_set_fire_stream(&wide, stream);
        if (wide_masks) hard_cpu_draw_fire_masks(&wide, 0, STEPS, wide_masks), hard_cpu_use_fire_masks(&wide, wide_masks, 0, STEPS);
        first_bad = -1;
        for (int t = 0; t < STEPS && first_bad < 0 && wide_masks; t++) {
            hard_cpu_step(&wide, (uint32_t)t);
            hard_cpu_unpack(&wide, wide_got);
            size_t cells = ca_shape_cells(shape);
            for (int ch = 0; ch < sc.channels && first_bad < 0; ch++)
                if (memcmp(wide_got + 2 * (size_t)ch * cells, grids + (size_t)(t + 1) * n + (size_t)ch * cells,
                           cells * sizeof(double)) != 0)
                    first_bad = t;
        }
        CHECK(wide_masks && first_bad < 0, "%s: the first samples of twice the batch differ after step %d", name,
              first_bad);
        hard_cpu_free(&wide);
    }
    free(start), free(wide_got), free(wide_masks);
    printf("%-60s %4d/%zu bits set at the end, %d gates\n", name, count_ones(grids + STEPS * n, n), n, net.n_gates);
    hard_cpu_free(&engine);
    hard_netlist_free(&net);
    free(grids), free(got);
    ca_model_free(&model);
}

/* The fire mask words equal rng_fires cell by cell. */
static void test_fire_words(void)
{
    ca_model model;
    hard_netlist net;
    hard_cpu engine;
    ca_shape shape = {2, 3, 100, CA_BOUNDARY_ZERO};
    if (hard_test_model(&model, 1, 2, 1, CA_BOUNDARY_ZERO, 0.6, 3, 100, 1, 3) || hard_circuit_build(&net, &model, NULL) ||
        hard_cpu_init(&engine, &net, shape, 0.6)) {
        CHECK(0, "fire words: set-up: %s", err_message());
        return;
    }
    hard_cpu_set_fire_stream(&engine, 1234);
    int wrong = 0, fired = 0;
    for (size_t row = 0; row < engine.rows; row++)
        for (int x = 0; x < 128; x++) {
            int bit = (int)(hard_cpu_fire_word(&engine, 7, row, x / 64) >> (x % 64) & 1);
            int want = x < 100 && rng_fires(1234, 7, (uint32_t)(row * 100 + (size_t)x), engine.fire_threshold);
            wrong += bit != want, fired += bit;
        }
    CHECK(wrong == 0, "fire mask words: %d bits differ from rng_fires", wrong);
    CHECK(fired > 600 * 0.5 && fired < 600 * 0.7, "fire rate 0.6: %d of 600 fired", fired);
    hard_cpu_free(&engine);
    hard_netlist_free(&net);
    ca_model_free(&model);
}

/* hard_cpu_set_cells paints one grid row's cells in every channel, stacked (20 wide: 3 rows a
 * word) or not (70 wide), and clears them again. */
static void test_set_cells(void)
{
    const int widths[] = {20, 70};
    for (int k = 0; k < 2; k++) {
        ca_model model;
        hard_netlist net;
        hard_cpu engine;
        ca_shape shape = {2, 5, widths[k], CA_BOUNDARY_ZERO};
        size_t cells = ca_shape_cells(shape), n = 2 * cells;
        double *grid = calloc(n, sizeof(double));
        if (!grid || hard_test_model(&model, 2, 2, 1, CA_BOUNDARY_ZERO, 1.0, 5, widths[k], 1, 9) ||
            hard_circuit_build(&net, &model, NULL) || hard_cpu_init(&engine, &net, shape, 1.0)) {
            CHECK(0, "set cells: set-up: %s", err_message());
            free(grid);
            return;
        }
        hard_cpu_pack(&engine, grid);
        hard_cpu_set_cells(&engine, 9, 3, widths[k] - 1, 1); /* sample 1, y 4: the second row of its word */
        hard_cpu_unpack(&engine, grid);
        int wrong = 0;
        for (size_t i = 0; i < n; i++) {
            size_t cell = i % cells, row = cell / (size_t)widths[k], x = cell % (size_t)widths[k];
            wrong += (grid[i] > 0.5) != (row == 9 && x >= 3 && x + 1 < (size_t)widths[k]);
        }
        hard_cpu_set_cells(&engine, 9, 0, widths[k], 0);
        hard_cpu_unpack(&engine, grid);
        for (size_t i = 0; i < n; i++) wrong += grid[i] > 0.5;
        CHECK(wrong == 0, "set cells, %d wide: %d cells wrong", widths[k], wrong);
        hard_cpu_free(&engine);
        hard_netlist_free(&net);
        ca_model_free(&model);
        free(grid);
    }
}

int main(void)
{
    const shape_case shapes[] = {
        {2, 2, 2, 5, 130, 2, 0},  /* two full words and a partial one */
        {1, 3, 1, 4, 64, 2, 0},   /* exactly one word */
        {3, 2, 1, 3, 67, 1, 0},   /* a word and 3 bits */
        {2, 2, 1, 1, 128, 2, 0},  /* one row: y-1 and y+1 are the row itself (periodic) */
        {1, 2, 2, 6, 1, 2, 0},    /* one column */
        {1, 2, 1, 9, 200, 1, 8},  /* 36 words in blocks of 8: blocks cross rows, the last is partial */
        {2, 2, 1, 30, 300, 2, 0}, /* 300 words: more than one block of the engine's own size */
        {1, 2, 1, 20, 20, 1, 0},  /* 3 rows stacked a word: 7 words, the last holding 2 */
        {2, 2, 2, 16, 16, 2, 0},  /* 4 rows a word, the height a multiple of 4 */
        {1, 3, 1, 7, 21, 3, 8},   /* 3 rows a word, the last holding 1; 3 samples in blocks of 8 */
        {1, 2, 1, 1, 32, 2, 0},   /* 2 rows a word, samples of one row: 1 word each */
        {1, 2, 1, 9, 7, 2, 0},    /* 9 rows a word, 9 high: one full word a sample */
        {2, 2, 1, 5, 33, 2, 0},   /* 33 wide: one row a word again */
    };
    uint64_t seed = 100;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int boundary = 0; boundary < 2; boundary++)
            for (int async = 0; async < 2; async++)
                for (int mode = 0; mode < 3; mode++)
                    test_case(shapes[i], (ca_boundary)boundary, async ? 0.6 : 1.0, (hard_ops_mode)mode, seed++);
    test_fire_words();
    test_set_cells();
    return test_finish("test_hard_cpu");
}
