/* test_hard_verilog: the Verilog export simulated with Icarus Verilog against the float
 * engine's hard step: all 512 neighbourhoods for one-channel models, random neighbourhoods
 * for 2 and 3 channels (1- and 2-bit perception). Without iverilog the test is skipped (77),
 * or fails when DLCA_REQUIRE_TOOLS=1 (CI installs Debian's iverilog). */
#include "check.h"
#include "hard_export.h"
#include "hard_fixtures.h"

#include <stdio.h>

static const char *test_name = "test_hard_verilog";
static char dir[] = "/tmp/dlca_hard_verilog_XXXXXX";

/* Reads `count` vectors of n bits (MSB first) from vectors.txt, prints the outputs in binary. */
static void write_testbench(FILE *f, int n_inputs, int channels, int count)
{
    fprintf(f,
            "module tb;\n"
            "    reg [%d:0] vectors [0:%d];\n"
            "    reg [%d:0] in;\n"
            "    wire [%d:0] out;\n"
            "    integer i;\n"
            "    dlca_cell dut (.in(in), .out(out));\n"
            "    initial begin\n"
            "        $readmemb(\"%s/vectors.txt\", vectors);\n"
            "        for (i = 0; i < %d; i = i + 1) begin\n"
            "            in = vectors[i];\n"
            "            #1 $display(\"%%b\", out);\n"
            "        end\n"
            "        $finish;\n"
            "    end\n"
            "endmodule\n",
            n_inputs - 1, count - 1, n_inputs - 1, channels - 1, dir, count);
}

/* Simulates the module on `hoods` ([count][9C] bits) into got ([count][C]); 0 on success. */
static int simulate(const hard_netlist *net, const hard_export_info *info, const uint8_t *hoods, int count, uint8_t *got)
{
    char path[256], command[1024];
    snprintf(path, sizeof path, "%s/cell.v", dir);
    if (hard_export_file(path, net, HARD_EXPORT_VERILOG, info)) return -1;
    snprintf(path, sizeof path, "%s/tb.v", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    write_testbench(f, net->n_inputs, net->channels, count);
    fclose(f);
    snprintf(path, sizeof path, "%s/vectors.txt", dir);
    if (!(f = fopen(path, "w"))) return -1;
    for (int i = 0; i < count; i++) {
        for (int bit = net->n_inputs - 1; bit >= 0; bit--) fputc('0' + hoods[(size_t)i * (size_t)net->n_inputs + (size_t)bit], f);
        fputc('\n', f);
    }
    fclose(f);
    snprintf(command, sizeof command, "iverilog -g2005 -Wall -o %s/sim %s/tb.v %s/cell.v && vvp -n %s/sim > %s/out.txt", dir,
             dir, dir, dir, dir);
    if (system(command) != 0) return -2;
    snprintf(path, sizeof path, "%s/out.txt", dir);
    if (!(f = fopen(path, "r"))) return -1;
    char line[8192];
    int read = 0;
    while (read < count && fgets(line, sizeof line, f)) {
        if ((int)strspn(line, "01") != net->channels) continue; /* vvp's own messages */
        for (int ch = 0; ch < net->channels; ch++) got[(size_t)read * (size_t)net->channels + (size_t)ch] = line[net->channels - 1 - ch] == '1';
        read++;
    }
    fclose(f);
    return read == count ? 0 : -3;
}

static void test_case(int channels, int bits, hard_ops_mode mode, int count, uint64_t seed)
{
    char name[96];
    snprintf(name, sizeof name, "verilog C%d %d-bit ops %d", channels, bits, (int)mode);
    ca_model m;
    hard_netlist net;
    hard_stats stats;
    rng_state rng;
    rng_init(&rng, seed, 4);
    if (hard_test_model(&m, channels, 4, bits, CA_BOUNDARY_PERIODIC, 1.0, 3, 3, 1, seed)) {
        CHECK(0, "%s: model: %s", name, err_message());
        return;
    }
    hard_random_ops(&m, &rng, mode);
    if (channels == 1) count = 512;
    size_t n = (size_t)count * (size_t)channels * 9;
    uint8_t *hoods = malloc(n), *want = malloc((size_t)count * (size_t)channels), *got = calloc((size_t)count * (size_t)channels, 1);
    for (size_t i = 0; i < n; i++) hoods[i] = channels == 1 ? (uint8_t)(i / 9 >> (i % 9) & 1) : (uint8_t)(rng_next(&rng) >> 63);
    int rc = hard_float_hoods(&m, hoods, count, want);
    if (!rc) rc = hard_circuit_build(&net, &m, &stats);
    if (rc) {
        CHECK(0, "%s: set-up: %s", name, err_message());
    } else {
        hard_export_info info = {&m.config, "test model", &stats};
        int sim = simulate(&net, &info, hoods, count, got);
        CHECK(sim == 0, "%s: simulation failed (%d): %s", name, sim, err_message());
        int wrong = 0, ones = 0;
        for (size_t i = 0; i < (size_t)count * (size_t)channels; i++) wrong += got[i] != want[i], ones += want[i];
        CHECK(sim == 0 && wrong == 0, "%s: %d of %d output bits differ from the engine", name, wrong, count * channels);
        printf("%-32s %4d gates, %d neighbourhoods, %d of %d output bits set\n", name, net.n_gates, count, ones,
               count * channels);
        hard_netlist_free(&net);
    }
    free(hoods), free(want), free(got);
    ca_model_free(&m);
}

int main(void)
{
    if (!hard_have_tool("iverilog") || !hard_have_tool("vvp")) return hard_missing_tool(test_name, "iverilog", "iverilog");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "%s: cannot create a temp directory\n", test_name);
        return 1;
    }
    test_case(1, 1, HARD_OPS_TWO_INPUT, 512, 1);
    test_case(1, 2, HARD_OPS_TWO_INPUT, 512, 2);
    test_case(1, 1, HARD_OPS_ALL, 512, 3);
    test_case(2, 2, HARD_OPS_TWO_INPUT, 1000, 4);
    test_case(3, 1, HARD_OPS_TWO_INPUT, 1000, 5);
    char command[300];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    if (system(command) != 0) fprintf(stderr, "%s: could not remove %s\n", test_name, dir);
    return test_finish(test_name);
}
