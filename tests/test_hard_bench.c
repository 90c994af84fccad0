/* test_hard_bench: hard_bench runs, reports a rate and refuses bad arguments (the speed itself
 * is measured by `dlca bench --hard`, not here); where a C compiler exists, the compiled export
 * runs too and matches the engine's bits (width 100: a partial last word). */
#include "check.h"
#include "hard_bench.h"
#include "hard_bench_compiled.h"
#include "hard_circuit.h"
#include "hard_fixtures.h"

#include <stdio.h>

int main(void)
{
    ca_model m;
    if (hard_test_model(&m, 1, 4, 1, CA_BOUNDARY_PERIODIC, 1.0, 3, 3, 1, 1)) {
        CHECK(0, "model: %s", err_message());
        return test_finish("test_hard_bench");
    }
    hard_bench_random_ops(&m, 1);
    hard_netlist net;
    hard_stats stats;
    CHECK(hard_circuit_build(&net, &m, &stats) == DLCA_OK && stats.constant == 0 && stats.wire == 0 && net.n_gates > 20,
          "random two-input ops leave a live circuit: %d gates", net.n_gates);
    hard_netlist_free(&net);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    double rate = 0.0;
    int rc = hard_bench(&m, NULL, 64, 100, 3, 2, out, &rate);
    fclose(out);
    CHECK(rc == DLCA_OK, "hard_bench: %s", err_message());
    CHECK(rate > 0.0, "rate %g", rate);
    CHECK(text && strstr(text, "cell updates/s") && strstr(text, "64x100 periodic"), "report: %s", text ? text : "");
    printf("%s", text ? text : "");
    CHECK(hard_bench(&m, NULL, 64, 64, 0, 2, NULL, NULL) == DLCA_ERR, "0 runs refused");
    int missing = 0;
    if (hard_have_tool("cc")) {
        CHECK(strstr(text, "compiled circuit (dlca export --format c") != NULL, "no compiled line: %s", text);
        CHECK(hard_circuit_build(&net, &m, NULL) == DLCA_OK, "build: %s", err_message());
        m.config.fire_rate = 0.5; /* the fire mask too */
        rc = hard_bench_compiled(&net, &m.config, NULL, 9, 130, 3, 3, NULL, &rate);
        CHECK(rc == DLCA_OK && rate > 0.0, "compiled async: %s, rate %g", rc ? err_message() : "ok", rate);
        hard_netlist_free(&net);
    } else {
        missing = hard_missing_tool("test_hard_bench", "cc", "gcc");
    }
    free(text);
    ca_model_free(&m);
    int rc_tests = test_finish("test_hard_bench");
    return rc_tests ? rc_tests : missing;
}
