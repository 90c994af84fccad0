/* test_hard_gpu: the default GPU hard engine (the compiled module; test_hard_gpu_compiled runs
 * the interpreter too) against the bit-packed CPU engine, bit for bit: both
 * boundaries, sync and async, 1- and 2-bit perception, 1 to 3 channels, widths around and
 * across the 32-bit word size, step by step and as one multi-step submission. */
#include "check.h"
#include "vk_test.h"
#include "hard_cpu.h"
#include "hard_fixtures.h"
#include "hard_gpu.h"
#include "vk_context.h"

#include <stdio.h>

static const char *test_name = "test_hard_gpu";

typedef struct {
    int channels, kernels, bits, height, width, batch;
} shape_case;

static void test_case(vk_context *vk, shape_case sc, ca_boundary boundary, double fire_rate, hard_ops_mode mode,
                      uint64_t seed)
{
    enum { STEPS = 4, MORE = 12 };
    char name[160];
    snprintf(name, sizeof name, "C%d K%d %d-bit %dx%d x%d %s fire %.1f ops %d", sc.channels, sc.kernels, sc.bits,
             sc.height, sc.width, sc.batch, ca_boundary_name(boundary), fire_rate, (int)mode);
    ca_model model;
    if (hard_test_model(&model, sc.channels, sc.kernels, sc.bits, boundary, fire_rate, sc.height, sc.width, 1, seed)) {
        CHECK(0, "%s: model: %s", name, err_message());
        return;
    }
    rng_state rng;
    rng_init(&rng, seed, 6);
    hard_random_ops(&model, &rng, mode);
    ca_shape shape = {sc.batch, sc.height, sc.width, boundary};
    size_t n = (size_t)sc.channels * ca_shape_cells(shape);
    double *want = malloc(n * sizeof(double)), *got = malloc(n * sizeof(double));
    hard_netlist net;
    hard_cpu cpu;
    hard_gpu gpu;
    int rc = hard_circuit_build(&net, &model, NULL);
    if (!rc) rc = hard_cpu_init(&cpu, &net, shape, fire_rate);
    if (!rc) rc = hard_gpu_init(&gpu, vk, &net, shape, fire_rate);
    if (rc) {
        CHECK(0, "%s: set-up: %s", name, err_message());
        free(want), free(got), ca_model_free(&model);
        return;
    }
    hard_random_grid(want, n, &rng);
    uint32_t stream = (uint32_t)rng_next(&rng);
    hard_cpu_set_fire_stream(&cpu, stream), hard_gpu_set_fire_stream(&gpu, stream);
    hard_cpu_pack(&cpu, want);
    rc = hard_gpu_upload(&gpu, want);
    int first_bad = -1;
    for (int t = 0; t < STEPS && !rc; t++) {
        hard_cpu_step(&cpu, (uint32_t)t);
        rc = hard_gpu_run(&gpu, (uint32_t)t, 1);
        if (!rc) rc = hard_gpu_download(&gpu, got);
        hard_cpu_unpack(&cpu, want);
        if (!rc && first_bad < 0 && memcmp(got, want, n * sizeof(double)) != 0) first_bad = t;
    }
    CHECK(rc == DLCA_OK, "%s: GPU run: %s", name, err_message());
    CHECK(first_bad < 0, "%s: GPU differs from the CPU engine after step %d", name, first_bad);
    hard_cpu_run(&cpu, STEPS, MORE);
    if (!rc) rc = hard_gpu_run(&gpu, STEPS, MORE);
    if (!rc) rc = hard_gpu_download(&gpu, got);
    hard_cpu_unpack(&cpu, want);
    CHECK(!rc && memcmp(got, want, n * sizeof(double)) == 0, "%s: %d steps in one submission differ", name, MORE);
    int ones = 0;
    for (size_t i = 0; i < n; i++) ones += want[i] > 0.5;
    printf("%-60s %5d/%zu bits set after %d steps, %d gates, %u slots\n", name, ones, n, STEPS + MORE, net.n_gates,
           gpu.n_slots);
    hard_gpu_free(&gpu);
    hard_cpu_free(&cpu);
    hard_netlist_free(&net);
    free(want), free(got);
    ca_model_free(&model);
}

int main(void)
{
    vk_context vk;
    int rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    const shape_case shapes[] = {
        {2, 2, 2, 5, 70, 2}, /* two full words and a partial one */
        {1, 3, 1, 4, 32, 2}, /* exactly one word */
        {3, 2, 1, 3, 33, 1}, /* a word and one bit */
        {2, 2, 1, 1, 64, 2}, /* one row */
        {1, 2, 2, 6, 1, 2},  /* one column */
        {1, 2, 1, 9, 200, 1},
    };
    uint64_t seed = 300;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int boundary = 0; boundary < 2; boundary++)
            for (int async = 0; async < 2; async++)
                test_case(&vk, shapes[i], (ca_boundary)boundary, async ? 0.6 : 1.0,
                          boundary && async ? HARD_OPS_ALL : HARD_OPS_TWO_INPUT, seed++);
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    return test_finish(test_name);
}
