/* dlca_inject_nan: `dlca_inject_nan STEP train ARGS...` runs `dlca train ARGS...` with one logit
 * poisoned with NaN before training step STEP (1-based), through the trainer's test seam
 * (ca_options.before_step), so the robustness tests watch a real NaN run through forward, loss
 * and gradient on any engine. A test tool, not installed. */
#include "cli.h"
#include "commands.h"
#include "error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int poison(void *context, uint64_t step, ca_model *model)
{
    if (step != *(const uint64_t *)context) return 0;
    model->logits[0] = NAN;
    return 1;
}

int main(int argc, char **argv)
{
    long long step;
    if (argc < 3 || strcmp(argv[2], "train") != 0 || cli_int("STEP", argv[1], 1, 1000000000, &step)) {
        fprintf(stderr, "usage: dlca_inject_nan STEP train [ARGS...]\n");
        return 2;
    }
    uint64_t at = (uint64_t)step;
    ca_options seam = {.before_step = poison, .before_step_context = &at};
    return cli_train(argc - 2, argv + 2, &seam);
}
