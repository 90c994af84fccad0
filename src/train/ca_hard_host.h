/* ca_hard_host.h: the hard loss of a GPU training step, measured on the host while the GPU runs
 * the step. The hard loss is the wrong bits of the argmax circuit's rollout of the step's round
 * (ca_exact_round_wrong: the pruned circuit on the bit-packed CPU engine, bit for bit the GPU's
 * hard rollout), and costs the CPU a fraction of what a float hard rollout costs the GPU's
 * queue (a lizard member: ~1 ms of an H200 a step); on a thread of its own it overlaps the
 * step instead of lengthening it. The trainer says where it applies (ca_train.h, hard_on_host). */
#ifndef DLCA_CA_HARD_HOST_H
#define DLCA_CA_HARD_HOST_H

#include "ca_model.h"

#include <pthread.h>
#include <stdint.h>

/* The hard rollouts measured on the host by default: those of at least this many gate
 * evaluations (gate rows x cells x T). Below, the GPU's rollout (a few short dispatches) costs
 * a step less than the thread's start and the circuit's build: gol, 3e5, a step of 4 members
 * 0.39 ms with the GPU's rollout against 0.43 on the host (H200); checkerboard (4.7e7) and the
 * lizard (7.8e7) are far above. */
#define CA_HARD_HOST_MIN_EVALS 1e6

typedef struct {
    ca_model model;      /* the trainer's model (config and wiring shared), logits its own: the
                            measured circuit's ops as one-hot rows */
    const double *image; /* target picture or NULL */
    uint64_t round;
    pthread_t thread;
    int running;         /* a measurement is under way (on the thread, or done inline) */
    int on_thread;
    int rc;
    double wrong;
    char error[256];
} ca_hard_host;

/* Room for `model`'s circuit (its config and wiring are read, not copied: they must outlive h). */
int ca_hard_host_init(ca_hard_host *h, const ca_model *model, const double *image);

/* Waits for a measurement under way, then frees. Zeroed or NULL is fine. */
void ca_hard_host_free(ca_hard_host *h);

/* Starts measuring round `round` of the circuit whose gate g (model order) is op ops[g] (0..15).
 * Runs on a thread of its own, or inline where one cannot be made. Fails while one is under way. */
int ca_hard_host_start(ca_hard_host *h, const uint8_t *ops, uint64_t round);

/* Waits for the measurement: *wrong the round's wrong cell bits (its batch summed). Fails with
 * its message where it failed, or where none was started. */
int ca_hard_host_wait(ca_hard_host *h, double *wrong);

#endif
