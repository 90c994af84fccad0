/* test_ca_presets: every preset of docs/design.md section 4 builds a model with the expected layer
 * and gate counts; bad configs are refused with a message naming the field; the start states
 * and targets follow their definitions (Life's rule, the 2x2 checkerboard). */
#include "ca_cpu.h"
#include "ca_model.h"
#include "ca_task.h"
#include "check.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    int update_inputs, update_depth;
    size_t gates;
    float init_logit; /* the sweeps' choice (README, Exact circuits) */
} preset_expectation;

static void test_presets(void)
{
    /* Gate counts: K * sum(perception widths) + sum(update widths), from docs/design.md section 4. */
    static const preset_expectation expected[] = {
        {"gol", 1 + 16 * 1, 17, 16 * 15 + 10 * 128 + 64 + 32 + 16 + 8 + 4 + 2 + 1, 7.0f},
        {"checkerboard", 8 + 16 * 8 * 2, 16, 16 * 14 + 10 * 256 + 128 + 64 + 32 + 16 + 8 + 8, 7.0f},
        {"checkerboard-async", 8 + 16 * 8 * 2, 20, 16 * 14 + 14 * 256 + 128 + 64 + 32 + 16 + 8 + 8, 8.0f},
        {"lizard", 128 + 8 * 128 * 2, 9, 8 * 14 + 2048 + 5 * 1024 + 512 + 256 + 128, 8.0f},
        {"image", 64 + 4 * 64 * 2, 11, 4 * 14 + 1024 + 7 * 512 + 256 + 128 + 64, 7.0f},
        {"image-persist", 64 + 4 * 64 * 2, 11, 4 * 14 + 1024 + 7 * 512 + 256 + 128 + 64, 7.0f},
    };
    int listed = 0;
    while (ca_preset_names[listed]) listed++;
    CHECK(listed == (int)(sizeof expected / sizeof expected[0]), "every preset (%d) has its expectations", listed);
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        ca_config config;
        ca_model model;
        CHECK(ca_config_preset(&config, expected[i].name) == DLCA_OK, "preset %s", expected[i].name);
        CHECK(ca_config_update_inputs(&config) == expected[i].update_inputs, "%s update inputs %d", expected[i].name,
              ca_config_update_inputs(&config));
        CHECK(config.update_depth == expected[i].update_depth, "%s update depth %d", expected[i].name, config.update_depth);
        if (ca_model_init(&model, &config) != DLCA_OK) {
            CHECK(0, "%s: %s", expected[i].name, err_message());
            continue;
        }
        CHECK(model.gate_count == expected[i].gates, "%s has %zu gates, expected %zu", expected[i].name, model.gate_count,
              expected[i].gates);
        CHECK(model.logits[GATE_A] == expected[i].init_logit && model.logits[0] == 0.0f,
              "%s starts as pass-through with logit %g (%g)", expected[i].name, (double)expected[i].init_logit,
              (double)model.logits[GATE_A]);
        ca_model_free(&model);
    }
    ca_config config;
    CHECK(ca_config_preset(&config, "glider") != DLCA_OK, "unknown preset refused");
    CHECK(strstr(err_message(), "glider") && strstr(err_message(), "checkerboard") &&
              strstr(err_message(), "image-persist"),
          "message lists every preset: %s", err_message());
    /* image-persist is image trained to keep its picture: a pool, a window with the loss at every
     * step, a batch of 4 and twice the steps, nothing else changed */
    ca_config image, persist;
    CHECK(ca_config_preset(&image, "image") == DLCA_OK && ca_config_preset(&persist, "image-persist") == DLCA_OK,
          "image and image-persist");
    CHECK(persist.pool == 64 && persist.window == 15 && persist.window_loss == CA_WINDOW_LOSS_EVERY &&
              persist.batch == 4 && persist.train_steps == 6000 && persist.pool_starts == 1 && persist.damage == 0,
          "image-persist: pool 64, window 15 (every step), batch 4, 6000 steps");
    persist.pool = image.pool, persist.window = image.window, persist.window_loss = image.window_loss;
    persist.batch = image.batch, persist.train_steps = image.train_steps;
    memcpy(persist.preset, image.preset, sizeof image.preset);
    CHECK(memcmp(&persist, &image, sizeof image) == 0, "image-persist differs from image in those fields alone");
}

static void expect_refused(ca_config config, const char *needle)
{
    ca_model model;
    CHECK(ca_model_init(&model, &config) != DLCA_OK, "config with bad %s refused", needle);
    CHECK(strstr(err_message(), needle) != NULL, "message '%s' names '%s'", err_message(), needle);
}

static void test_bad_configs(void)
{
    ca_config good, bad;
    ca_config_preset(&good, "checkerboard");
    bad = good, bad.update_widths[bad.update_depth - 1] = 7, expect_refused(bad, "C = 8");
    bad = good, bad.perception_widths[0] = 6, expect_refused(bad, "moore");
    bad = good, bad.steps = 0, expect_refused(bad, "steps T");
    bad = good, bad.fire_rate = 1.5, expect_refused(bad, "fire rate");
    bad = good, bad.warmup = bad.train_steps + 1, expect_refused(bad, "the run's steps");
    bad = good, bad.loss_channels = 9, expect_refused(bad, "loss channels");
    bad = good, bad.update_widths[0] = 100, expect_refused(bad, "update layer 0");
}

static void test_life_target(void)
{
    ca_shape s = {1, 5, 5, CA_BOUNDARY_ZERO};
    double grid[25] = {0}, next[25], again[25];
    grid[1 * 5 + 2] = grid[2 * 5 + 2] = grid[3 * 5 + 2] = 1; /* a vertical blinker */
    ca_task_life_step(next, grid, s);
    CHECK(next[2 * 5 + 1] == 1 && next[2 * 5 + 2] == 1 && next[2 * 5 + 3] == 1 && next[1 * 5 + 2] == 0,
          "blinker turns horizontal");
    ca_task_life_step(again, next, s);
    CHECK(memcmp(again, grid, sizeof grid) == 0, "blinker has period 2");

    ca_config config;
    ca_config_preset(&config, "gol");
    ca_shape boards = {512, 3, 3, CA_BOUNDARY_PERIODIC};
    double *start = calloc(512 * 9, sizeof(double)), *target = malloc(512 * 9 * sizeof(double));
    for (int b = 0; b < 512; b++) ca_task_board(start, boards, b, b);
    ca_task_target(&config, boards, start, NULL, target);
    int wrong = 0;
    for (int b = 0; b < 512; b++) {
        int alive = b >> 4 & 1, count = __builtin_popcount((unsigned)b & ~16u);
        int want = count == 3 || (alive && count == 2);
        wrong += (int)target[b * 9 + 4] != want;
    }
    CHECK(wrong == 0, "Life target of the centre cell right on all 512 boards (%d wrong)", wrong);
    free(start), free(target);
}

static void test_starts(void)
{
    ca_config config;
    ca_config_preset(&config, "checkerboard");
    ca_shape s = {2, 16, 16, CA_BOUNDARY_ZERO};
    size_t n = 8 * ca_shape_cells(s);
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *target = malloc(n * sizeof(double));
    ca_task_start(&config, s, 3, a);
    ca_task_start(&config, s, 4, b);
    double ones = 0;
    for (size_t i = 0; i < n; i++) ones += a[i];
    CHECK(ones > 0.45 * (double)n && ones < 0.55 * (double)n, "random start is about half ones (%g of %zu)", ones, n);
    CHECK(memcmp(a, b, n * sizeof(double)) != 0, "rounds draw different starts");
    ca_task_target(&config, s, a, NULL, target);
    CHECK(target[0] == 0 && target[1] == 0 && target[2] == 1 && target[16 * 2] == 1 && target[16 * 2 + 2] == 0,
          "2x2-square checkerboard");
    config.start = CA_START_SEED_CELL;
    ca_task_start(&config, s, 0, a);
    ones = 0;
    for (size_t i = 0; i < n; i++) ones += a[i];
    CHECK(ones == 2 * 8 && a[8 * 16 + 8] == 1, "seed cell: centre all ones, rest zeros");
    free(a), free(b), free(target);
}

int main(void)
{
    test_presets();
    test_bad_configs();
    test_life_target();
    test_starts();
    return test_finish("test_ca_presets");
}
