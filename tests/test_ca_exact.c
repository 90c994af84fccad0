/* test_ca_exact: the exact check (ca_exact.h). The shipped gol and checkerboard circuits are
 * exact. One gate of the gol circuit changed so that a few of the 512 boards go wrong leaves
 * training rounds with a hard loss of 0, and the check still says no, naming the wrong boards:
 * the reason a hard loss of 0 is not enough. A changed checkerboard circuit fails on an unseen
 * round or one of eval's checks. And ca_exact_round_wrong is the trainer's hard loss of the
 * round, fire masks included (an async config on the CPU engine). */
#include "ca_exact.h"
#include "ca_eval.h"
#include "ca_file.h"
#include "ca_fixtures.h"
#include "ca_train.h"
#include "check.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

static int load(const char *name, ca_model *m)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", DLCA_ASSET_DIR, name);
    if (ca_file_load(path, m, NULL, NULL) == DLCA_OK) return 1;
    CHECK(0, "load %s: %s", path, err_message());
    return 0;
}

/* Gate g's logits made to pick `op`. */
static void force_op(ca_model *m, size_t g, int op)
{
    float *z = &m->logits[g * GATE_OP_COUNT];
    for (int i = 0; i < GATE_OP_COUNT; i++) z[i] = i == op ? 20.0f : 0.0f;
}

static void test_gol(void)
{
    ca_model m;
    if (!load("gol.dlca", &m)) return;
    ca_exact_result r;
    CHECK(ca_exact_check(&m, NULL, &r) == DLCA_OK && r.exact, "the shipped gol circuit is exact: %s", r.why);
    /* The first gate (from the last layer back) whose change breaks a few boards only. */
    size_t n = m.gate_count * GATE_OP_COUNT;
    float *saved = malloc(n * sizeof(float));
    memcpy(saved, m.logits, n * sizeof(float));
    ca_eval_context context = {&m, CA_BACKEND_CPU, NULL, NULL};
    int wrong = 0;
    for (size_t g = m.gate_count; g-- > 0 && !(wrong >= 1 && wrong <= 40);) {
        for (int op = 0; op < GATE_OP_COUNT && !(wrong >= 1 && wrong <= 40); op++) {
            memcpy(m.logits, saved, n * sizeof(float));
            force_op(&m, g, op);
            double accuracy;
            if (ca_eval_life_accuracy(&context, &accuracy)) break;
            wrong = (int)(512.0 * (1.0 - accuracy) + 0.5);
        }
    }
    CHECK(wrong >= 1 && wrong <= 40, "a one-gate change breaks 1..40 boards (%d)", wrong);
    uint64_t round = 0;
    double hard = 1.0;
    for (; round < 4000 && hard != 0.0; round++)
        if (ca_exact_round_wrong(&m, NULL, round, &hard)) break;
    CHECK(hard == 0.0, "it has a hard loss of 0 on training round %llu", (unsigned long long)round - 1);
    char want[64];
    snprintf(want, sizeof want, "wrong on %d of the 512 boards", wrong);
    CHECK(ca_exact_check(&m, NULL, &r) == DLCA_OK && !r.exact && strcmp(r.why, want) == 0,
          "yet it is not exact: '%s' (want '%s')", r.why, want);
    free(saved);
    ca_model_free(&m);
}

static void test_checkerboard(void)
{
    ca_model m;
    if (!load("checkerboard.dlca", &m)) return;
    ca_exact_result r;
    CHECK(ca_exact_check(&m, NULL, &r) == DLCA_OK && r.exact, "the shipped checkerboard circuit is exact: %s", r.why);
    double hard = -1.0;
    CHECK(ca_exact_round_wrong(&m, NULL, 123, &hard) == DLCA_OK && hard == 0.0, "and right on round 123 (%g)", hard);
    /* every gate of the last update layer made FALSE: channel 0 stays 0 */
    size_t last = m.update_gate_base[m.config.update_depth - 1];
    for (size_t g = last; g < m.gate_count; g++) force_op(&m, g, 0);
    CHECK(ca_exact_check(&m, NULL, &r) == DLCA_OK && !r.exact && strstr(r.why, "unseen round 1000000000"),
          "a broken one is not: '%s'", r.why);
    ca_model_free(&m);
}

/* The trainer's hard loss of step s is ca_exact_round_wrong of the snapshot's circuit on round s - 1. */
static void test_round_wrong(void)
{
    ca_config c;
    ca_config_preset(&c, "checkerboard-async");
    c.height = c.width = 6, c.steps = 4, c.batch = 2, c.train_steps = 6, c.seed = 3;
    ca_model m;
    ca_trainer t;
    ca_options cpu = {.cpu_threads = 1};
    if (ca_model_init(&m, &c) || ca_trainer_init(&t, &m, NULL, CA_BACKEND_CPU, NULL, &cpu)) {
        CHECK(0, "trainer: %s", err_message());
        return;
    }
    size_t n = m.gate_count * GATE_OP_COUNT;
    ca_model view = m;
    view.logits = malloc(n * sizeof(float));
    int same = 0, nonzero = 0;
    for (int s = 0; s < 6; s++) {
        double soft, hard, wrong = -1.0;
        if (ca_trainer_step(&t, &soft, &hard) || ca_trainer_read_snapshot(&t, &t.measured, view.logits, NULL, NULL) ||
            ca_exact_round_wrong(&view, NULL, t.step - 1, &wrong))
            break;
        same += wrong == hard && t.measured.step == t.step;
        nonzero += hard > 0.0;
    }
    CHECK(same == 6 && nonzero > 0, "6 of 6 steps: the CPU check's wrong bits are the trainer's hard loss (%d, %d "
          "nonzero)", same, nonzero);
    /* the snapshot is the state before the update: not the logits after it */
    CHECK(ca_trainer_sync(&t) == DLCA_OK && memcmp(view.logits, m.logits, n * sizeof(float)) != 0,
          "the snapshot is the circuit before the step's update");
    free(view.logits);
    ca_trainer_free(&t);
    ca_model_free(&m);
}

int main(void)
{
    test_gol();
    test_checkerboard();
    test_round_wrong();
    return test_finish("test_ca_exact");
}
