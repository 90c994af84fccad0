/* test_cmd_export: `dlca export` end to end: a saved model exported in each format gives
 * exactly hard_export_write's text of its pruned circuit; --help works; usage errors exit 2
 * and a missing model exits 1, without creating the output file. */
#include "ca_file.h"
#include "check.h"
#include "commands.h"
#include "hard_export.h"
#include "hard_fixtures.h"

#include <stdio.h>
#include <unistd.h>

static char dir[] = "/tmp/dlca_cmd_export_XXXXXX";

static int run(int argc, const char **argv) { return cmd_export(argc, (char **)argv); }

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(*size + 1);
    if (text && fread(text, 1, *size, f) != *size) *size = 0;
    if (text) text[*size] = '\0';
    fclose(f);
    return text;
}

static void test_format(ca_model *m, const char *model_path, const char *format_name, hard_export_format format)
{
    char out[256];
    snprintf(out, sizeof out, "%s/circuit.%s", dir, format_name);
    const char *argv[] = {"export", model_path, "--format", format_name, "--out", out, "--stats"};
    CHECK(run(7, argv) == 0, "export --format %s exits 0: %s", format_name, err_message());
    hard_netlist net;
    hard_stats stats;
    char *want = NULL, *got = NULL;
    size_t want_size = 0, got_size = 0;
    if (hard_circuit_build(&net, m, &stats) == DLCA_OK) {
        hard_export_info info = {&m->config, model_path, &stats};
        FILE *mem = open_memstream(&want, &want_size);
        hard_export_write(mem, &net, format, &info);
        fclose(mem);
        hard_netlist_free(&net);
    }
    got = read_file(out, &got_size);
    CHECK(got && want && got_size == want_size && memcmp(got, want, want_size) == 0,
          "%s file is the pruned circuit of the saved model (%zu bytes, want %zu)", format_name, got_size, want_size);
    free(want), free(got);
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    ca_model m;
    char model_path[256], out[256];
    snprintf(model_path, sizeof model_path, "%s/model.dlca", dir);
    snprintf(out, sizeof out, "%s/never.c", dir);
    rng_state rng;
    rng_init(&rng, 3, 3);
    if (hard_test_model(&m, 2, 3, 2, CA_BOUNDARY_ZERO, 0.6, 8, 8, 4, 3)) {
        CHECK(0, "model: %s", err_message());
        return test_finish("test_cmd_export");
    }
    hard_random_ops(&m, &rng, HARD_OPS_TWO_INPUT);
    int saved = ca_file_save(model_path, &m, NULL, NULL);
    CHECK(saved == DLCA_OK, "save the model: %s", err_message());
    if (saved == DLCA_OK) {
        test_format(&m, model_path, "c", HARD_EXPORT_C);
        test_format(&m, model_path, "verilog", HARD_EXPORT_VERILOG);
        test_format(&m, model_path, "dot", HARD_EXPORT_DOT);
    }
    const char *help[] = {"export", "--help"};
    CHECK(run(2, help) == 0, "--help exits 0");
    const char *none[] = {"export"};
    CHECK(run(1, none) == 2 && strstr(err_message(), "model"), "no model: usage error: %s", err_message());
    const char *no_format[] = {"export", model_path, "--out", out};
    CHECK(run(4, no_format) == 2 && strstr(err_message(), "--format"), "no --format: %s", err_message());
    const char *bad_format[] = {"export", model_path, "--format", "vhdl", "--out", out};
    CHECK(run(6, bad_format) == 2 && strstr(err_message(), "vhdl"), "unknown format: %s", err_message());
    const char *no_out[] = {"export", model_path, "--format", "c"};
    CHECK(run(4, no_out) == 2 && strstr(err_message(), "--out"), "no --out: %s", err_message());
    const char *no_value[] = {"export", model_path, "--out", out, "--format"};
    CHECK(run(5, no_value) == 2, "--format without a value: %s", err_message());
    const char *two_models[] = {"export", model_path, model_path, "--format", "c", "--out", out};
    CHECK(run(7, two_models) == 2, "two models: %s", err_message());
    const char *unknown[] = {"export", model_path, "--format", "c", "--out", out, "--fast"};
    CHECK(run(7, unknown) == 2 && strstr(err_message(), "--fast"), "unknown option: %s", err_message());
    char missing[256];
    snprintf(missing, sizeof missing, "%s/missing.dlca", dir);
    const char *no_model[] = {"export", missing, "--format", "c", "--out", out};
    CHECK(run(6, no_model) == 1 && strstr(err_message(), "missing.dlca"), "missing model: %s", err_message());
    CHECK(access(out, F_OK) != 0, "no output file after the failures");
    ca_model_free(&m);
    char command[300];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return test_finish("test_cmd_export");
}
