/* test_hard_bench: hard_bench runs, reports a rate and refuses bad arguments (the speed itself
 * is measured by `dlca bench --hard`, not here). */
#include "check.h"
#include "hard_bench.h"
#include "hard_fixtures.h"

#include <stdio.h>

int main(void)
{
    ca_model m;
    if (hard_test_model(&m, 1, 4, 1, CA_BOUNDARY_PERIODIC, 1.0, 3, 3, 1, 1)) {
        CHECK(0, "model: %s", err_message());
        return test_finish("test_hard_bench");
    }
    rng_state rng;
    rng_init(&rng, 1, 1);
    hard_random_ops(&m, &rng, HARD_OPS_TWO_INPUT);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    double rate = 0.0;
    int rc = hard_bench(&m, 64, 100, 3, 2, out, &rate);
    fclose(out);
    CHECK(rc == DLCA_OK, "hard_bench: %s", err_message());
    CHECK(rate > 0.0, "rate %g", rate);
    CHECK(text && strstr(text, "cell updates/s") && strstr(text, "64x100 periodic"), "report: %s", text ? text : "");
    printf("%s", text ? text : "");
    CHECK(hard_bench(&m, 64, 64, 0, 2, NULL, NULL) == DLCA_ERR, "0 runs refused");
    free(text);
    ca_model_free(&m);
    return test_finish("test_hard_bench");
}
