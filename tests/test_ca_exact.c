/* test_ca_exact: the exact check (ca_exact.h). The shipped gol and checkerboard circuits are
 * exact. One gate of the gol circuit changed so that a few of the 512 boards go wrong leaves
 * training rounds with a hard loss of 0, and the check still says no, naming the wrong boards:
 * the reason a hard loss of 0 is not enough. A changed checkerboard circuit fails on an unseen
 * round or one of eval's checks. And ca_exact_round_wrong is the trainer's hard loss of the
 * round, fire masks included (an async config on the CPU engine). A run's watch checks an
 * inexact circuit once: the same ops again (other logits) are inexact without a check, and any
 * other circuit is checked. The exact check's pass/fail evaluation gives full evaluation's
 * verdicts and stops at the first failure. */
#include "ca_exact.h"
#include "ca_eval.h"
#include "ca_file.h"
#include "ca_target.h"
#include "ca_fixtures.h"
#include "ca_train.h"
#include "ca_watch.h"
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

/* The watch's checks of `broken` (inexact), then of it with other logits but the same ops, then
 * of `exact_logits`. */
static void test_watch_memo(const ca_model *broken, const float *exact_logits)
{
    ca_watch w;
    if (ca_watch_init(&w, broken, NULL, 1)) {
        CHECK(0, "watch: %s", err_message());
        return;
    }
    size_t n = broken->gate_count * GATE_OP_COUNT;
    int exact[4] = {-1, -1, -1, -1}, checks[4];
    memcpy(w.logits, broken->logits, n * sizeof(float));
    ca_watch_check(&w, 10, &exact[0], NULL), checks[0] = w.checks;
    for (size_t g = 0; g < broken->gate_count; g++) /* every logit up by 0.5: the same argmax */
        for (int i = 0; i < GATE_OP_COUNT; i++) w.logits[g * GATE_OP_COUNT + (size_t)i] += 0.5f;
    ca_watch_check(&w, 11, &exact[1], NULL), checks[1] = w.checks;
    memcpy(w.logits, exact_logits, n * sizeof(float));
    ca_watch_check(&w, 12, &exact[2], NULL), checks[2] = w.checks;
    memcpy(w.logits, broken->logits, n * sizeof(float));
    ca_watch_check(&w, 13, &exact[3], NULL), checks[3] = w.checks;
    CHECK(exact[0] == 0 && exact[1] == 0 && exact[2] == 1 && exact[3] == 0, "watch: inexact, inexact, exact, "
          "inexact (%d %d %d %d)", exact[0], exact[1], exact[2], exact[3]);
    CHECK(checks[0] == 1 && checks[1] == 1 && checks[2] == 2 && checks[3] == 2 && w.inexact == 3 &&
              w.first_inexact_step == 10,
          "watch: the same inexact ops are not checked again (checks %d %d %d %d, %d inexact, first at %llu)",
          checks[0], checks[1], checks[2], checks[3], w.inexact, (unsigned long long)w.first_inexact_step);
    ca_watch_free(&w);
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
    ca_eval_context context = {&m, CA_BACKEND_CPU, NULL, NULL, 0};
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
    test_watch_memo(&m, saved);
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
    CHECK(ca_exact_check(&m, NULL, &r) == DLCA_OK && !r.exact && strstr(r.why, "unseen round 1000000000") &&
              !r.eval_check,
          "a broken one is not, on an unseen round: '%s' (eval check %d)", r.why, r.eval_check);
    ca_model_free(&m);
}

/* Pass or fail only (the exact check's eval context): the same verdicts as a full evaluation, in
 * fewer steps. The shipped image model grows its picture and loses it after T: its 'persists'
 * fails at the first wrong step, so 'regrows' does not run; image-persist passes both, with
 * errors of 0 either way, and the image model's unseen rounds take one rollout (every round of
 * its zero start is the same) and pass. */
static void test_pass_fail(void)
{
    static const char *names[] = {"image.dlca", "image-persist.dlca"};
    for (int k = 0; k < 2; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/models/%s", DLCA_ASSET_DIR, names[k]);
        ca_model m;
        ca_target_image target;
        if (ca_file_load(path, &m, NULL, &target) != DLCA_OK) {
            CHECK(0, "load %s: %s", path, err_message());
            continue;
        }
        double *image = ca_target_values(&target);
        ca_eval_context full = {&m, CA_BACKEND_CPU, NULL, image, 0}, quick = full;
        quick.pass_fail = 1;
        ca_check a[CA_EVAL_MAX_CHECKS], b[CA_EVAL_MAX_CHECKS];
        int na = 0, nb = 0, both = CA_EVAL_PERSISTS | CA_EVAL_REGROWS;
        CHECK(ca_eval_persistence(&full, both, a, &na) == DLCA_OK && ca_eval_persistence(&quick, both, b, &nb) == DLCA_OK,
              "%s: persistence: %s", names[k], err_message());
        if (k == 0) {
            CHECK(na == 2 && nb == 1 && !a[0].passed && !b[0].passed && b[0].error > 0.0 && b[0].error <= a[0].error,
                  "%s: persists fails both ways (errors %g, first wrong step %g), and pass/fail stops there (%d, %d "
                  "checks)", names[k], na ? a[0].error : -1.0, nb ? b[0].error : -1.0, na, nb);
        } else {
            CHECK(na == 2 && nb == 2 && a[0].passed && a[1].passed && b[0].passed && b[1].passed,
                  "%s: persists and regrows pass both ways (%d, %d checks)", names[k], na, nb);
        }
        ca_exact_result r;
        CHECK(ca_exact_check(&m, image, &r) == DLCA_OK && r.exact, "%s is exact for its own training: %s", names[k],
              r.why);
        free(image);
        ca_target_image_free(&target);
        ca_model_free(&m);
    }
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
    test_pass_fail();
    return test_finish("test_ca_exact");
}
