/* ca_exact.h: is a trained circuit exact? A hard loss of 0 on a training round is necessary but
 * not sufficient: a round is a sample (gol: 20 of the 512 boards; checkerboard: two random
 * starts), and circuits with a hard loss of 0 on their round were found wrong elsewhere (gol
 * circuits wrong on 5-19 of the 512 boards). A circuit is exact when it passes what `dlca eval`
 * checks, as far as that is cheap:
 *   - a Life target on one channel: all 512 3x3 boards give Life's next state (a rule of the
 *     3x3 neighbourhood that is right on every board is Life on any grid, so eval's soup and
 *     glider checks follow);
 *   - every other target: a hard loss of 0 on CA_EXACT_ROUNDS rounds that training never draws
 *     (rounds CA_EXACT_FIRST_ROUND..+15, with their own starts and fire masks; one round of one
 *     sample where every round is the same rollout: a zero or seed-cell start, synchronous, as
 *     image and lizard), then every one of
 *     the preset's generalisation checks of `dlca eval` and the persistence checks the model
 *     trained for (ca_eval_checks).
 * Everything runs the pruned hard circuit on the CPU (hard_cpu), whatever engine trains: a
 * check costs milliseconds, and runs only on circuits whose training round was already right. */
#ifndef DLCA_CA_EXACT_H
#define DLCA_CA_EXACT_H

#include "ca_model.h"

#include <stdint.h>

enum { CA_EXACT_ROUNDS = 16 };
/* Training step s draws round s - 1, so a run would need a billion steps to reach these. */
#define CA_EXACT_FIRST_ROUND 1000000000ull

typedef struct {
    int exact;
    char why[192]; /* when not exact: the first check it fails, e.g. "wrong on 7 of the 512 boards" */
    int eval_check; /* when not exact: it failed one of dlca eval's checks, every unseen round right */
} ca_exact_result;

/* The wrong cell bits of `model`'s hard circuit on training round `round` (its batch, grid, T,
 * start, target and fire mask), summed over the batch: the trainer's hard loss of that round,
 * computed on the CPU. `image` is the target picture ([loss_channels][H][W]) or NULL. */
int ca_exact_round_wrong(const ca_model *model, const double *image, uint64_t round, double *wrong);

/* Whether every training round and sample of `config` is the same rollout: a start no round draws
 * (all zeros, or one seed cell), synchronous. Then one round of one sample stands for all. */
int ca_exact_one_rollout(const ca_config *config);

/* Whether `model`'s hard circuit is exact (see above). Fails only when the check cannot run. */
int ca_exact_check(const ca_model *model, const double *image, ca_exact_result *result);

#endif
