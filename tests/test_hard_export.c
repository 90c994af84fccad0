/* test_hard_export: the C and Graphviz exports.
 * - C: the generated file is compiled with `cc -std=c99 -Wall -Wextra -Werror` beside a small
 *   driver, run for 100 steps, and every step's grid is compared with the float engine's hard
 *   rollout (ca_cpu, hard coefficients): both boundaries, sync and async, 1 to 3 channels, a
 *   width that is not a multiple of 64 and above it.
 * - dot: every gate and output appears, and tools/render_circuit.sh renders a PNG.
 * - hard_export_file writes atomically: the same bytes as hard_export_write, no temp file left,
 *   and a clear error for a path it cannot write. */
#include "check.h"
#include "hard_export.h"
#include "hard_fixtures.h"

#include <stdio.h>
#include <unistd.h>

static const char *test_name = "test_hard_export";
static char dir[] = "/tmp/dlca_hard_export_XXXXXX";

/* Reads batch, height, width, periodic, stream, steps and the packed grid from argv[1]; writes
 * every step's grid to argv[2]. */
static const char driver_source[] =
    "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "void dlca_step(uint64_t *next, const uint64_t *grid, int batch, int height, int width, int periodic,\n"
    "               uint32_t stream, uint32_t step);\n"
    "int main(int argc, char **argv)\n{\n"
    "    int32_t h[6];\n"
    "    FILE *in = fopen(argv[1], \"rb\"), *out = fopen(argv[2], \"wb\");\n"
    "    if (argc < 3 || !in || !out || fread(h, sizeof h, 1, in) != 1) return 2;\n"
    "    size_t n = (size_t)DLCA_CHANNELS * (size_t)h[0] * (size_t)h[1] * (size_t)((h[2] + 63) / 64);\n"
    "    uint64_t *grid = malloc(n * 8), *next = malloc(n * 8);\n"
    "    if (!grid || !next || fread(grid, 8, n, in) != n) return 3;\n"
    "    for (int t = 0; t < h[5]; t++) {\n"
    "        dlca_step(next, grid, h[0], h[1], h[2], h[3], (uint32_t)h[4], (uint32_t)t);\n"
    "        memcpy(grid, next, n * 8);\n"
    "        fwrite(grid, 8, n, out);\n"
    "    }\n"
    "    return fclose(out) != 0;\n}\n";

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return DLCA_ERR;
    fputs(text, f);
    return fclose(f) ? DLCA_ERR : DLCA_OK;
}

static int build_net(ca_model *m, hard_netlist *net, hard_stats *stats, int channels, int bits, ca_boundary boundary,
                     double fire_rate, int height, int width, int steps, uint64_t seed)
{
    if (hard_test_model(m, channels, 3, bits, boundary, fire_rate, height, width, steps, seed)) return DLCA_ERR;
    rng_state rng;
    rng_init(&rng, seed, 8);
    hard_random_ops(m, &rng, HARD_OPS_TWO_INPUT);
    if (hard_circuit_build(net, m, stats)) {
        ca_model_free(m);
        return DLCA_ERR;
    }
    return DLCA_OK;
}

/* Packs a [C][cells] double grid as the generated dlca_step expects: 64-bit words per row. */
static void pack_rows(uint64_t *words, const double *grid, int channels, size_t rows, int width)
{
    size_t per_row = (size_t)(width + 63) / 64;
    memset(words, 0, (size_t)channels * rows * per_row * 8);
    for (size_t r = 0; r < (size_t)channels * rows; r++)
        for (int x = 0; x < width; x++)
            words[r * per_row + (size_t)x / 64] |= (uint64_t)(grid[r * (size_t)width + (size_t)x] > 0.5) << (x % 64);
}

/* Steps after which the grid differs from the one before. */
static int changing_steps(const double *grids, size_t n, int steps)
{
    int changed = 0;
    for (int t = 0; t < steps; t++) changed += memcmp(grids + (size_t)t * n, grids + (size_t)(t + 1) * n, n * sizeof(double)) != 0;
    return changed;
}

/* A random model whose rollout keeps changing (most random circuits settle in a few steps,
 * which would leave most of the 100 steps untested): the liveliest of a few seeds. */
static int lively_model(ca_model *m, hard_netlist *net, hard_stats *stats, double *grids, int channels, int bits,
                        ca_shape shape, double fire_rate, int steps, uint64_t seed, uint32_t *stream)
{
    size_t n = (size_t)channels * ca_shape_cells(shape);
    int best = -1;
    uint64_t best_seed = seed;
    for (int attempt = 0; attempt < 24 && best < steps; attempt++) {
        uint64_t s = seed + 100 * (uint64_t)attempt;
        ca_model trial;
        hard_netlist trial_net;
        if (build_net(&trial, &trial_net, NULL, channels, bits, shape.boundary, fire_rate, shape.height, shape.width,
                      steps, s))
            return DLCA_ERR;
        rng_state rng;
        rng_init(&rng, s, 2);
        hard_random_grid(grids, n, &rng);
        int rc = hard_float_rollout(&trial, shape, grids, (uint32_t)s, grids), changed = changing_steps(grids, n, steps);
        hard_netlist_free(&trial_net);
        ca_model_free(&trial);
        if (rc) return rc;
        if (changed > best) best = changed, best_seed = s;
    }
    if (build_net(m, net, stats, channels, bits, shape.boundary, fire_rate, shape.height, shape.width, steps, best_seed))
        return DLCA_ERR;
    rng_state rng;
    rng_init(&rng, best_seed, 2);
    hard_random_grid(grids, n, &rng);
    *stream = (uint32_t)best_seed;
    return hard_float_rollout(m, shape, grids, *stream, grids);
}

static void test_c_case(int channels, int bits, ca_boundary boundary, double fire_rate, uint64_t seed)
{
    enum { STEPS = 100, HEIGHT = 5, WIDTH = 70, BATCH = 2 };
    char name[96], gen[256], drv[256], prog[256], in_path[256], out_path[256], command[1400];
    snprintf(name, sizeof name, "C export C%d %d-bit %s fire %.1f", channels, bits, ca_boundary_name(boundary), fire_rate);
    ca_shape shape = {BATCH, HEIGHT, WIDTH, boundary};
    size_t cells = ca_shape_cells(shape), n = (size_t)channels * cells, words = (size_t)channels * BATCH * HEIGHT * 2;
    double *grids = malloc((STEPS + 1) * n * sizeof(double));
    uint64_t *packed = malloc(words * 8), *got = malloc(STEPS * words * 8);
    ca_model m;
    hard_netlist net;
    hard_stats stats;
    uint32_t stream;
    if (lively_model(&m, &net, &stats, grids, channels, bits, shape, fire_rate, STEPS, seed, &stream)) {
        CHECK(0, "%s: set-up: %s", name, err_message());
        free(grids), free(packed), free(got);
        return;
    }
    snprintf(gen, sizeof gen, "%s/step_%llu.c", dir, (unsigned long long)seed);
    snprintf(drv, sizeof drv, "%s/driver_%llu.c", dir, (unsigned long long)seed);
    snprintf(prog, sizeof prog, "%s/step_%llu", dir, (unsigned long long)seed);
    snprintf(in_path, sizeof in_path, "%s/in_%llu.bin", dir, (unsigned long long)seed);
    snprintf(out_path, sizeof out_path, "%s/out_%llu.bin", dir, (unsigned long long)seed);
    hard_export_info info = {&m.config, "test model", &stats};
    int rc = hard_export_file(gen, &net, HARD_EXPORT_C, &info);
    CHECK(rc == DLCA_OK, "%s: export: %s", name, err_message());
    char define[64];
    snprintf(define, sizeof define, "#define DLCA_CHANNELS %d\n", channels);
    char *source = malloc(strlen(define) + sizeof driver_source);
    strcpy(source, define), strcat(source, driver_source);
    rc = rc ? rc : write_text(drv, source);
    free(source);
    snprintf(command, sizeof command, "cc -std=c99 -O1 -Wall -Wextra -Werror -o %s %s %s", prog, gen, drv);
    int compiled = !rc && system(command) == 0;
    CHECK(compiled, "%s: `%s` failed", name, command);

    pack_rows(packed, grids, channels, BATCH * HEIGHT, WIDTH);
    int32_t header[6] = {BATCH, HEIGHT, WIDTH, boundary == CA_BOUNDARY_PERIODIC, (int32_t)stream, STEPS};
    FILE *f = fopen(in_path, "wb");
    int ran = 0;
    if (f && compiled) {
        fwrite(header, sizeof header, 1, f), fwrite(packed, 8, words, f);
        fclose(f), f = NULL;
        snprintf(command, sizeof command, "%s %s %s", prog, in_path, out_path);
        ran = system(command) == 0;
        f = fopen(out_path, "rb");
        ran = ran && f && fread(got, 8, STEPS * words, f) == STEPS * words;
    }
    if (f) fclose(f);
    CHECK(!compiled || ran, "%s: running the generated step failed", name);
    int first_bad = -1;
    for (int t = 0; ran && t < STEPS && first_bad < 0; t++) {
        pack_rows(packed, grids + (size_t)(t + 1) * n, channels, BATCH * HEIGHT, WIDTH);
        if (memcmp(packed, got + (size_t)t * words, words * 8) != 0) first_bad = t;
    }
    CHECK(ran && first_bad < 0, "%s: differs from the float hard rollout after step %d", name, first_bad);
    int changed = changing_steps(grids, n, STEPS);
    CHECK(changed >= 10, "%s: the rollout changes in only %d steps", name, changed);
    printf("%-44s %d gates, the grid changes in %d of %d steps\n", name, net.n_gates, changed, STEPS);
    free(grids), free(packed), free(got);
    hard_netlist_free(&net);
    ca_model_free(&m);
}

/* tools/render_circuit.sh, found from this file's path (CMake compiles it by absolute path). */
static const char *render_script_path(char *buf, size_t size)
{
    const char *slash = strrchr(__FILE__, '/');
    int dir_length = slash ? (int)(slash - __FILE__) : 0;
    snprintf(buf, size, "%.*s%s../tools/render_circuit.sh", dir_length, __FILE__, slash ? "/" : "");
    return buf;
}

static void test_dot(void)
{
    char render_script[512];
    render_script_path(render_script, sizeof render_script);
    ca_model m;
    hard_netlist net;
    hard_stats stats;
    if (build_net(&m, &net, &stats, 2, 1, CA_BOUNDARY_PERIODIC, 1.0, 4, 4, 1, 9)) {
        CHECK(0, "dot: set-up: %s", err_message());
        return;
    }
    char path[256], png[256], command[1100];
    snprintf(path, sizeof path, "%s/circuit.dot", dir);
    snprintf(png, sizeof png, "%s/circuit.png", dir);
    hard_export_info info = {&m.config, "test model", &stats};
    CHECK(hard_export_file(path, &net, HARD_EXPORT_DOT, &info) == DLCA_OK, "dot export: %s", err_message());
    char *text = NULL;
    size_t size = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        fseek(f, 0, SEEK_END), size = (size_t)ftell(f), fseek(f, 0, SEEK_SET);
        text = calloc(size + 1, 1);
        if (fread(text, 1, size, f) != size) text[0] = '\0';
        fclose(f);
    }
    int missing = 0;
    for (int g = 0; text && g < net.n_gates; g++) {
        char node[48];
        snprintf(node, sizeof node, "g%d [label=\"%s\"]", g, gate_op_names[net.gates[g].op]);
        missing += strstr(text, node) == NULL;
    }
    CHECK(text && strstr(text, "digraph dlca {") && strstr(text, "next c0") && strstr(text, "next c1"),
          "dot file has the graph and both outputs");
    CHECK(missing == 0 && net.n_gates > 0, "dot: %d of %d gates missing", missing, net.n_gates);
    free(text);
    if (!hard_have_tool("dot")) {
        int status = hard_missing_tool(test_name, "dot", "graphviz");
        CHECK(status == 77, "rendering needs Graphviz");
    } else {
        snprintf(command, sizeof command, "sh %s %s %s", render_script, path, png);
        CHECK(system(command) == 0 && access(png, R_OK) == 0, "`%s` renders a PNG", command);
    }
    hard_netlist_free(&net);
    ca_model_free(&m);
}

static void test_atomic_write(void)
{
    ca_model m;
    hard_netlist net;
    if (build_net(&m, &net, NULL, 1, 1, CA_BOUNDARY_ZERO, 1.0, 4, 4, 1, 10)) {
        CHECK(0, "atomic: set-up: %s", err_message());
        return;
    }
    hard_export_info info = {&m.config, NULL, NULL};
    char path[256], *want = NULL, got[65536];
    size_t want_size = 0;
    FILE *mem = open_memstream(&want, &want_size);
    CHECK(hard_export_write(mem, &net, HARD_EXPORT_VERILOG, &info) == DLCA_OK, "write to a stream");
    fclose(mem);
    snprintf(path, sizeof path, "%s/cell.v", dir);
    CHECK(write_text(path, "old contents\n") == DLCA_OK, "old file");
    CHECK(hard_export_file(path, &net, HARD_EXPORT_VERILOG, &info) == DLCA_OK, "atomic export: %s", err_message());
    FILE *f = fopen(path, "r");
    size_t got_size = f ? fread(got, 1, sizeof got, f) : 0;
    if (f) fclose(f);
    CHECK(got_size == want_size && memcmp(got, want, want_size) == 0, "the file holds exactly the export");
    char command[400];
    snprintf(command, sizeof command, "ls -A %s | grep -q tmp", dir);
    CHECK(system(command) != 0, "no temp file left in %s", dir);
    snprintf(path, sizeof path, "%s/no/such/dir/cell.v", dir);
    CHECK(hard_export_file(path, &net, HARD_EXPORT_VERILOG, &info) == DLCA_ERR && strstr(err_message(), path),
          "unwritable path names itself: %s", err_message());
    hard_export_format format;
    CHECK(hard_export_format_parse("vhdl", &format) == DLCA_ERR && strstr(err_message(), "verilog"),
          "unknown format lists the known ones: %s", err_message());
    free(want);
    hard_netlist_free(&net);
    ca_model_free(&m);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        fprintf(stderr, "%s: cannot create a temp directory\n", test_name);
        return 1;
    }
    if (!hard_have_tool("cc")) return hard_missing_tool(test_name, "cc", "build-essential");
    test_c_case(1, 1, CA_BOUNDARY_PERIODIC, 1.0, 1);
    test_c_case(1, 2, CA_BOUNDARY_ZERO, 0.6, 2);
    test_c_case(2, 1, CA_BOUNDARY_ZERO, 1.0, 3);
    test_c_case(3, 2, CA_BOUNDARY_PERIODIC, 0.6, 4);
    test_dot();
    test_atomic_write();
    char command[300];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    if (system(command) != 0) fprintf(stderr, "%s: could not remove %s\n", test_name, dir);
    return test_finish(test_name);
}
