/* test_hard_gpu_compiled: the compiled GPU hard engine (SPIR-V made per circuit by hard_spirv.c)
 * against the bit-packed CPU engine, bit for bit, step by step and as one multi-step submission:
 * every shipped model (gol sync, checkerboard-async for the fire mask, the wide image and lizard
 * circuits), both boundaries, widths that are not multiples of 32, batches > 1, circuits of
 * 0 gates (outputs are inputs) and of constant gates, and an unpruned circuit with all 16 ops.
 * The interpreter (the fallback) runs the same cases. A control checks that the comparison sees
 * a one-step difference, and the module passes spirv-val when that tool is installed. */
#include "ca_file.h"
#include "check.h"
#include "vk_test.h"
#include "hard_cpu.h"
#include "hard_fixtures.h"
#include "hard_gpu.h"
#include "hard_spirv.h"
#include "vk_context.h"

#include <stdio.h>
#include <unistd.h>

static const char *test_name = "test_hard_gpu_compiled";

typedef struct {
    int height, width, batch;
    ca_boundary boundary;
} grid_case;

/* Grids that cross the 32-bit word edges: partial last words, one word, one column, one row. */
static const grid_case grids[] = {
    {5, 70, 3, CA_BOUNDARY_PERIODIC}, {5, 70, 3, CA_BOUNDARY_ZERO}, {4, 64, 2, CA_BOUNDARY_ZERO},
    {3, 33, 2, CA_BOUNDARY_PERIODIC}, {1, 31, 2, CA_BOUNDARY_PERIODIC}, {6, 1, 2, CA_BOUNDARY_ZERO},
};

static int differs(const double *a, const double *b, size_t n) { return memcmp(a, b, n * sizeof(double)) != 0; }

/* Runs `net` on both engines from one random grid; returns the number of failed comparisons. */
static int compare_engines(vk_context *vk, const char *what, const hard_netlist *net, grid_case gc, double fire_rate,
                           hard_gpu_kind kind, uint64_t seed)
{
    enum { STEPS = 3, MORE = 9, FIRST_T = 5 };
    char name[256];
    snprintf(name, sizeof name, "%s on %dx%d x%d %s, fire %.2f, %s", what, gc.height, gc.width, gc.batch,
             ca_boundary_name(gc.boundary), fire_rate, kind == HARD_GPU_INTERPRETED ? "interpreted" : "compiled");
    ca_shape shape = {gc.batch, gc.height, gc.width, gc.boundary};
    size_t n = (size_t)net->channels * ca_shape_cells(shape);
    double *start = malloc(n * sizeof(double)), *want = malloc(n * sizeof(double)), *got = malloc(n * sizeof(double));
    hard_cpu cpu;
    hard_gpu gpu;
    int rc = !start || !want || !got ? err_set(DLCA_ERR_NOMEM, "out of memory") : DLCA_OK;
    if (!rc) rc = hard_cpu_init(&cpu, net, shape, fire_rate);
    if (!rc && (rc = hard_gpu_init_kind(&gpu, vk, net, shape, fire_rate, kind))) hard_cpu_free(&cpu);
    if (rc) {
        CHECK(0, "%s: set-up: %s", name, err_message());
        free(start), free(want), free(got);
        return 1;
    }
    int failed_before = check_failed;
    CHECK(gpu.compiled == (kind != HARD_GPU_INTERPRETED), "%s: compiled %d", name, gpu.compiled);
    rng_state rng;
    rng_init(&rng, seed, 9);
    hard_random_grid(start, n, &rng);
    uint32_t stream = (uint32_t)rng_next(&rng);
    hard_cpu_set_fire_stream(&cpu, stream), hard_gpu_set_fire_stream(&gpu, stream);
    hard_cpu_pack(&cpu, start);
    rc = hard_gpu_upload(&gpu, start);
    int first_bad = -1;
    for (int t = FIRST_T; t < FIRST_T + STEPS && !rc; t++) {
        hard_cpu_step(&cpu, (uint32_t)t);
        rc = hard_gpu_run(&gpu, (uint32_t)t, 1);
        if (!rc) rc = hard_gpu_download(&gpu, got);
        hard_cpu_unpack(&cpu, want);
        if (!rc && first_bad < 0 && differs(got, want, n)) first_bad = t;
    }
    CHECK(rc == DLCA_OK, "%s: GPU run: %s", name, err_message());
    CHECK(first_bad < 0, "%s: GPU differs from the CPU engine after step %d", name, first_bad);
    hard_cpu_run(&cpu, FIRST_T + STEPS, MORE);
    if (!rc) rc = hard_gpu_run(&gpu, FIRST_T + STEPS, MORE);
    if (!rc) rc = hard_gpu_download(&gpu, got);
    hard_cpu_unpack(&cpu, want);
    CHECK(!rc && !differs(got, want, n), "%s: %d steps in one submission differ", name, MORE);
    size_t changed = 0;
    for (size_t i = 0; i < n; i++) changed += (want[i] > 0.5) != (start[i] > 0.5);
    printf("  %-78s %6zu of %6zu bits changed, %3d gates%s\n", name, changed, n, net->n_gates,
           check_failed > failed_before ? "  FAILED" : "");
    hard_gpu_free(&gpu);
    hard_cpu_free(&cpu);
    free(start), free(want), free(got);
    return check_failed - failed_before;
}

static void compare_both(vk_context *vk, const char *what, const hard_netlist *net, grid_case gc, double fire_rate,
                         uint64_t seed)
{
    compare_engines(vk, what, net, gc, fire_rate, HARD_GPU_COMPILED, seed);
    compare_engines(vk, what, net, gc, fire_rate, HARD_GPU_INTERPRETED, seed);
}

/* The shipped models: sync and async (their own fire rate) on every grid case. */
static void test_shipped_models(vk_context *vk)
{
    const char *models[] = {"gol", "checkerboard-async", "checkerboard", "image", "lizard"};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/models/%s.dlca", DLCA_ASSET_DIR, models[m]);
        ca_model model;
        hard_netlist net;
        if (ca_file_load(path, &model, NULL, NULL)) {
            CHECK(0, "%s: %s", path, err_message());
            continue;
        }
        int rc = hard_circuit_build(&net, &model, NULL);
        CHECK(rc == DLCA_OK, "%s: circuit: %s", models[m], err_message());
        if (!rc) {
            /* The big circuits (64 and 128 channels) on fewer grids: lavapipe is slow. */
            size_t count = net.channels > 8 ? 2 : sizeof grids / sizeof grids[0];
            for (size_t g = 0; g < count; g++) compare_both(vk, models[m], &net, grids[g], model.config.fire_rate, 40 + g);
            if (strcmp(models[m], "checkerboard-async") == 0)
                CHECK(model.config.fire_rate < 1.0, "checkerboard-async is async (fire rate %g)", model.config.fire_rate);
            hard_netlist_free(&net);
        }
        ca_model_free(&model);
    }
}

/* A netlist of `channels` channels and no gates: channel ch becomes input node outputs[ch]. */
static void test_zero_gates(vk_context *vk)
{
    int32_t outputs[3] = {0 * 9 + 3 /* W of channel 0 */, 2 * 9 + 8 /* SE of channel 2 */, 1 * 9 + 1 /* N of 1 */};
    hard_netlist net = {3, 27, 0, NULL, outputs};
    CHECK(hard_netlist_check(&net) == DLCA_OK, "0-gate netlist is valid: %s", err_message());
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
        compare_both(vk, "0 gates, shifted inputs", &net, grids[g], 1.0, 70 + g);
        compare_both(vk, "0 gates, shifted inputs", &net, grids[g], 0.5, 80 + g);
    }
    /* Every one of the 9 neighbours as the output, one channel. */
    for (int32_t j = 0; j < 9; j++) {
        int32_t out = j;
        hard_netlist one = {1, 9, 0, NULL, &out};
        char what[64];
        snprintf(what, sizeof what, "0 gates, output = %s", hard_neighbour_names[j]);
        compare_engines(vk, what, &one, grids[j % 2], 1.0, HARD_GPU_COMPILED, 90 + (uint64_t)j);
    }
    /* Constant outputs: a FALSE and a TRUE gate. */
    hard_gate constants[2] = {{GATE_FALSE, 0, 0}, {GATE_TRUE, 0, 0}};
    int32_t constant_outputs[2] = {9 * 2 + 0, 9 * 2 + 1};
    hard_netlist constant_net = {2, 18, 2, constants, constant_outputs};
    CHECK(hard_netlist_check(&constant_net) == DLCA_OK, "constant netlist is valid: %s", err_message());
    compare_both(vk, "constant outputs", &constant_net, grids[0], 1.0, 100);
    compare_both(vk, "constant outputs", &constant_net, grids[3], 0.3, 101);
}

/* Unpruned random circuits: every one of the 16 ops, wires and constants included. */
static void test_all_ops(vk_context *vk)
{
    size_t seen[GATE_OP_COUNT] = {0};
    for (int i = 0; i < 3; i++) {
        ca_model model;
        if (hard_test_model(&model, 2, 2, 1 + i % 2, grids[i].boundary, 1.0, 3, 3, 1, 200 + (uint64_t)i)) {
            CHECK(0, "model: %s", err_message());
            continue;
        }
        rng_state rng;
        rng_init(&rng, 300 + (uint64_t)i, 6);
        hard_random_ops(&model, &rng, HARD_OPS_ALL);
        hard_netlist net;
        if (hard_circuit_extract(&net, &model) == DLCA_OK) {
            for (int g = 0; g < net.n_gates; g++) seen[net.gates[g].op]++;
            compare_both(vk, "unpruned, all ops", &net, grids[i], i == 1 ? 0.7 : 1.0, 400 + (uint64_t)i);
            hard_netlist_free(&net);
        } else {
            CHECK(0, "extract: %s", err_message());
        }
        ca_model_free(&model);
    }
    for (int op = 0; op < GATE_OP_COUNT; op++) CHECK(seen[op] > 0, "op %s was tested", gate_op_names[op]);
}

/* The comparison can fail: one extra GPU step on a live circuit is seen as a difference. */
static void test_control(vk_context *vk)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/models/gol.dlca", DLCA_ASSET_DIR);
    ca_model model;
    hard_netlist net;
    if (ca_file_load(path, &model, NULL, NULL) || hard_circuit_build(&net, &model, NULL)) {
        CHECK(0, "gol: %s", err_message());
        return;
    }
    ca_shape shape = {2, 8, 40, CA_BOUNDARY_PERIODIC};
    size_t n = ca_shape_cells(shape);
    double *start = malloc(n * sizeof(double)), *want = malloc(n * sizeof(double)), *got = malloc(n * sizeof(double));
    hard_cpu cpu;
    hard_gpu gpu;
    rng_state rng;
    rng_init(&rng, 5, 1);
    hard_random_grid(start, n, &rng);
    int rc = hard_cpu_init(&cpu, &net, shape, 1.0);
    if (!rc && (rc = hard_gpu_init(&gpu, vk, &net, shape, 1.0))) hard_cpu_free(&cpu);
    if (!rc) {
        hard_cpu_pack(&cpu, start);
        rc = hard_gpu_upload(&gpu, start);
        hard_cpu_run(&cpu, 0, 2);
        if (!rc) rc = hard_gpu_run(&gpu, 0, 3);
        if (!rc) rc = hard_gpu_download(&gpu, got);
        hard_cpu_unpack(&cpu, want);
        CHECK(!rc && differs(got, want, n), "3 GPU steps differ from 2 CPU steps (%s)", rc ? err_message() : "");
        CHECK(gpu.compiled, "gol is compiled by default");
        hard_gpu_free(&gpu), hard_cpu_free(&cpu);
    }
    CHECK(rc == DLCA_OK, "control: %s", err_message());
    free(start), free(want), free(got);
    hard_netlist_free(&net);
    ca_model_free(&model);
}

/* spirv-val accepts the module for Vulkan 1.2, when the tool is installed (development only). */
static void test_spirv_val(void)
{
    if (!hard_have_tool("spirv-val")) {
        printf("  spirv-val not installed: module validation not run (apt-get install spirv-tools)\n");
        return;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/models/checkerboard-async.dlca", DLCA_ASSET_DIR);
    ca_model model;
    hard_netlist net;
    if (ca_file_load(path, &model, NULL, NULL) || hard_circuit_build(&net, &model, NULL)) {
        CHECK(0, "checkerboard-async: %s", err_message());
        return;
    }
    for (int periodic = 0; periodic < 2; periodic++) {
        hard_spirv_shape shape = {(uint32_t)net.channels, 5, 70, 3, 15, 45, 64, 128, periodic, 1u << 23};
        uint32_t *code;
        size_t words;
        int rc = hard_spirv_emit(&net, &shape, &code, &words);
        CHECK(rc == DLCA_OK, "emit: %s", err_message());
        if (rc) continue;
        char file[] = "/tmp/dlca_hard_spirv_XXXXXX";
        int fd = mkstemp(file);
        CHECK(fd >= 0 && write(fd, code, words * 4) == (ssize_t)(words * 4), "writing %s", file);
        if (fd >= 0) close(fd);
        char command[512];
        snprintf(command, sizeof command, "spirv-val --target-env vulkan1.2 %s", file);
        CHECK(system(command) == 0, "spirv-val accepts the module (periodic %d)", periodic);
        unlink(file);
        free(code);
    }
    hard_spirv_shape bad = {(uint32_t)net.channels, 5, 70, 2, 15, 45, 64, 128, 1, 1u << 24};
    uint32_t *code = NULL;
    size_t words = 0;
    CHECK(hard_spirv_emit(&net, &bad, &code, &words) == DLCA_ERR && !code, "a wrong word count is refused");
    hard_netlist_free(&net);
    ca_model_free(&model);
}

int main(void)
{
    vk_context vk;
    int rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    test_shipped_models(&vk);
    test_zero_gates(&vk);
    test_all_ops(&vk);
    test_control(&vk);
    test_spirv_val();
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    return test_finish(test_name);
}
