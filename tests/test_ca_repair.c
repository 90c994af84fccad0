/* test_ca_repair: the local search that makes a nearly exact circuit exact (ca_repair.h), and
 * `dlca repair`. A shipped exact circuit is left alone. The same circuit with one gate's op
 * flipped to a near tie (its logit just above the winner's) is inexact, and the search finds an
 * exact circuit again by single-gate changes: for the synchronous checkerboard (8 rounds of two
 * random starts), the asynchronous one (fire masks per round) and the image (one rollout). Only
 * the gates the search changed differ from the broken model's ops, and the exact check, run here
 * again, agrees; the search's first count of wrong bits (its rounds run in chunks side by side)
 * is theirs one round at a time on the exact check's engine, there and on the async checkerboard
 * stopped at step 4 (whose wrong bits depend on every round's fire masks). A circuit right on its
 * rounds and wrong on unseen ones is searched with the fresh rounds it gets wrong added. Two breaks
 * of the gol circuit that lure the single changes into a minimum are repaired past it, by the
 * breakout's weights, and on three threads by the same walk. Circuits right
 * on their training grid and wrong on eval's wider one (the lizard's torus, the checkerboard's 64x64
 * grid) are searched on that grid too. A fresh model (every gate pass-through) cannot be
 * repaired in the time given: the model comes back unchanged, bit for bit. The command writes only an exact circuit (the
 * same on three threads as on one), refuses bad flags in one line, and writes nothing (exit 1) when it finds none. */
#include "ca_exact.h"
#include "ca_file.h"
#include "ca_population.h"
#include "ca_repair.h"
#include "ca_target.h"
#include "check.h"
#include "cli_fixtures.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

static int load(const char *name, ca_model *m, ca_target_image *t)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s", DLCA_ASSET_DIR, name);
    if (ca_file_load(path, m, NULL, t) == DLCA_OK) return 1;
    CHECK(0, "load %s: %s", path, err_message());
    return 0;
}

/* The breaks a test wants: the circuit inexact, and for some tests more. */
typedef int (*break_wanted)(ca_model *m, const double *image);

static int inexact(ca_model *m, const double *image)
{
    ca_exact_result r;
    return ca_exact_check(m, image, &r) == DLCA_OK && !r.exact;
}

/* Inexact, with step T of the one rollout right: only a later step is wrong. */
static int wrong_after_T(ca_model *m, const double *image)
{
    double at_T = -1.0;
    return ca_exact_round_wrong(m, image, 0, &at_T) == DLCA_OK && at_T == 0.0 && inexact(m, image);
}

/* Right on the first repair round, wrong on one of the next seven. */
static int wrong_after_first_round(ca_model *m, const double *image)
{
    double first = -1.0, later = 0.0;
    if (ca_exact_round_wrong(m, image, CA_REPAIR_FIRST_ROUND, &first) != DLCA_OK || first != 0.0) return 0;
    for (uint64_t k = 1; k < CA_REPAIR_ROUNDS && later == 0.0; k++)
        if (ca_exact_round_wrong(m, image, CA_REPAIR_FIRST_ROUND + k, &later)) later = 0.0;
    return later > 0.0;
}

/* Right on the one training rollout, wrong elsewhere (the lizard: on its eval's torus). */
static int wrong_off_the_training_grid(ca_model *m, const double *image)
{
    double wrong = -1.0;
    return ca_exact_round_wrong(m, image, 0, &wrong) == DLCA_OK && wrong == 0.0 && inexact(m, image);
}

/* Breaks the exact circuit `m`: the first update gate (from the last layer down) whose op, moved
 * to a near tie with another op, gives a break `wanted` accepts. Returns that gate, or -1. */
static long break_gate_as(ca_model *m, const double *image, break_wanted wanted)
{
    const ca_config *c = &m->config;
    for (int l = c->update_depth - 1; l >= 0; l--)
        for (int g = 0; g < c->update_widths[l]; g++) {
            size_t gate = m->update_gate_base[l] + (size_t)g;
            float *z = m->logits + gate * GATE_OP_COUNT;
            int top = ca_model_gate_op(m, gate);
            for (int q = 0; q < GATE_OP_COUNT; q++) {
                if (q == top) continue;
                float was = z[q];
                z[q] = z[top] + 0.25f;
                if (wanted(m, image)) return (long)gate;
                z[q] = was;
            }
        }
    return -1;
}

static long break_one_gate(ca_model *m, const double *image) { return break_gate_as(m, image, inexact); }

/* The search's first count of wrong bits, its rounds run in chunks side by side, is theirs one
 * round at a time on the exact check's engine: on 8 rounds (chunks of 1, 2 and 5 rounds) and 13
 * (1, 2, 4, 6). The model is as it was after. */
static void check_first_count(ca_model *m, const double *image, const char *name)
{
    size_t logits = m->gate_count * GATE_OP_COUNT * sizeof(float);
    float *saved = malloc(logits);
    if (!saved) return;
    memcpy(saved, m->logits, logits);
    for (int rounds = 8; rounds <= 13; rounds += 5) {
        double want = 0.0, wrong = 0.0;
        for (int k = 0; k < rounds; k++)
            want += ca_exact_round_wrong(m, image, CA_REPAIR_FIRST_ROUND + (uint64_t)k, &wrong) == DLCA_OK ? wrong : -1e9;
        ca_repair_options o = {0.05, rounds, NULL, NULL, 1, NULL, NULL, 0, 0};
        ca_repair_result r;
        CHECK(ca_repair(m, image, &o, &r) == DLCA_OK && (double)r.wrong_before == want,
              "%s: %zu wrong bits on %d repair rounds, %g one round at a time", name, r.wrong_before, rounds, want);
        memcpy(m->logits, saved, logits);
    }
    free(saved);
}

/* check_first_count on the shipped async checkerboard stopped at step 4, still converging: its
 * wrong bits depend on every round's fire masks. */
static void test_first_count_async(void)
{
    ca_model m;
    ca_target_image t;
    if (!load("checkerboard-async.dlca", &m, &t)) return;
    m.config.steps = 4;
    check_first_count(&m, NULL, "checkerboard-async at step 4");
    ca_target_image_free(&t);
    ca_model_free(&m);
}

static void test_repairs(const char *name)
{
    ca_model m;
    ca_target_image t;
    if (!load(name, &m, &t)) return;
    double *image = t.bits ? ca_target_values(&t) : NULL;
    ca_repair_options o = {30.0, CA_REPAIR_ROUNDS, NULL, NULL, 1, NULL, NULL, 0, 0};
    ca_repair_result r;
    CHECK(ca_repair(&m, image, &o, &r) == DLCA_OK && r.exact && r.already_exact && r.tries == 0,
          "%s: an exact circuit is left alone", name);
    long broken = break_one_gate(&m, image);
    CHECK(broken >= 0, "%s: one gate near a tie breaks the circuit", name);
    if (broken >= 0 && !ca_exact_one_rollout(&m.config)) check_first_count(&m, image, name);
    if (broken >= 0) {
        int *ops = malloc(m.gate_count * sizeof(int));
        for (size_t g = 0; g < m.gate_count; g++) ops[g] = ca_model_gate_op(&m, g);
        int rc = ca_repair(&m, image, &o, &r);
        CHECK(rc == DLCA_OK && r.exact && !r.already_exact && r.wrong_before > 0 && r.wrong_after == 0 &&
                  r.changes >= 1 && r.tries >= 1,
              "%s: repaired (%s): %zu -> %zu wrong bits, %d changes, %zu tries", name, rc ? err_message() : r.why,
              r.wrong_before, r.wrong_after, r.changes, r.tries);
        int differ = 0;
        for (size_t g = 0; g < m.gate_count; g++) differ += ca_model_gate_op(&m, g) != ops[g];
        CHECK(differ == r.changes, "%s: %d gates changed op, the search says %d", name, differ, r.changes);
        ca_exact_result e;
        CHECK(ca_exact_check(&m, image, &e) == DLCA_OK && e.exact, "%s: the repaired model is exact (%s)", name,
              e.why);
        free(ops);
    }
    free(image);
    ca_target_image_free(&t);
    ca_model_free(&m);
}

/* A model trained to hold its picture (image-persist: a pool and a window) broken where step T
 * stays right and a later step goes wrong: the search must count the steps after T, as the
 * exact check's `persists` does, or it sees nothing to repair. */
static void test_persistence(void)
{
    ca_model m;
    ca_target_image t;
    if (!load("image-persist.dlca", &m, &t)) return;
    double *image = ca_target_values(&t);
    long broken = break_gate_as(&m, image, wrong_after_T);
    CHECK(broken >= 0, "image-persist: a gate whose tie leaves step T right and breaks a later step");
    if (broken >= 0) {
        ca_repair_options o = {30.0, CA_REPAIR_ROUNDS, NULL, NULL, 1, NULL, NULL, 0, 0};
        ca_repair_result r;
        int rc = ca_repair(&m, image, &o, &r);
        CHECK(rc == DLCA_OK && r.exact && r.wrong_before > 0 && r.changes >= 1,
              "image-persist: repaired past T (%s): %zu wrong bits before, %d changes", rc ? err_message() : r.why,
              r.wrong_before, r.changes);
    }
    free(image);
    ca_target_image_free(&t);
    ca_model_free(&m);
}

/* A break that the first repair round does not see (right there, wrong on one of the next seven):
 * a search starting from one round finds nothing to change, so only searching again on more
 * rounds (2, 4, 8) repairs it. */
static void test_more_rounds(void)
{
    ca_model m;
    ca_target_image t;
    if (!load("checkerboard.dlca", &m, &t)) return;
    long broken = break_gate_as(&m, NULL, wrong_after_first_round);
    CHECK(broken >= 0, "checkerboard: a gate whose tie leaves the first repair round right and breaks a later one");
    if (broken >= 0) {
        ca_repair_options capped = {30.0, 1, NULL, NULL, 1, NULL, NULL, 1, 0};
        ca_repair_result r;
        int rc = ca_repair(&m, NULL, &capped, &r);
        CHECK(rc == DLCA_OK && !r.exact && r.rounds == 1 && strstr(r.why, "right on 1 repair round;"),
              "most_rounds 1: right on its one round, not searched on more (%s; %d rounds)", rc ? err_message() : r.why,
              r.rounds);
        ca_repair_options o = {30.0, 1, NULL, NULL, 1, NULL, NULL, 0, 0};
        rc = ca_repair(&m, NULL, &o, &r);
        CHECK(rc == DLCA_OK && r.exact && r.wrong_before == 0 && r.changes >= 1 && r.rounds >= 2 &&
                  r.rounds <= CA_REPAIR_ROUNDS,
              "repaired on more rounds than the one it started from (%s): %zu wrong bits on it, %d changes, %d rounds",
              rc ? err_message() : r.why, r.wrong_before, r.changes, r.rounds);
    }
    ca_target_image_free(&t);
    ca_model_free(&m);
}

/* The shipped checkerboard with model gate 2608 tied to op 1: right on the first 4 repair rounds,
 * wrong on 66 of the 256 after them and on an unseen round (a lab scan of the ties from the last
 * layer down). Searched from 4 rounds with at most 6, two fresh rounds it gets wrong join them and
 * the search repairs it there; doubling could not grow past 4 (8 > 6). */
static void test_probed_rounds(void)
{
    ca_model m;
    ca_target_image t;
    if (!load("checkerboard.dlca", &m, &t)) return;
    enum { GATE = 2608, OP = 1, FIRST = 4, MOST = 6 };
    CHECK(m.gate_count > GATE, "checkerboard: %zu gates", m.gate_count);
    if (m.gate_count <= GATE) return ca_target_image_free(&t), ca_model_free(&m);
    float *z = m.logits + (size_t)GATE * GATE_OP_COUNT;
    z[OP] = z[ca_model_gate_op(&m, GATE)] + 0.25f;
    double wrong = 0.0, first = 0.0;
    for (uint64_t k = 0; k < FIRST; k++)
        first += ca_exact_round_wrong(&m, NULL, CA_REPAIR_FIRST_ROUND + k, &wrong) == DLCA_OK ? wrong : 1e9;
    CHECK(first == 0.0 && inexact(&m, NULL), "checkerboard, gate %d tied to op %d: right on %d repair rounds (%g wrong), "
          "inexact", GATE, OP, FIRST, first);
    ca_repair_options o = {30.0, FIRST, NULL, NULL, 1, NULL, NULL, MOST, 0};
    ca_repair_result r;
    int rc = ca_repair(&m, NULL, &o, &r);
    CHECK(rc == DLCA_OK && r.exact && r.wrong_before == 0 && r.rounds == MOST && r.changes >= 1,
          "repaired on its %d rounds and the probed ones it got wrong (%s): %d rounds, %d changes", FIRST,
          rc ? err_message() : r.why, r.rounds, r.changes);
    ca_target_image_free(&t);
    ca_model_free(&m);
}

/* How far the rounds grow: past CA_REPAIR_MAX_ROUNDS while the counted bits stay within
 * CA_REPAIR_GROW_BITS, never below it, one where every round is the same rollout. */
static void test_most_rounds(void)
{
    struct {
        const char *preset;
        int grid, batch, window, want;
    } cases[] = {
        {"checkerboard", 16, 2, 0, CA_REPAIR_GROW_ROUNDS},      /* 512 bits a round */
        {"checkerboard-async", 14, 1, 0, CA_REPAIR_GROW_ROUNDS}, /* 196 */
        {"checkerboard", 64, 4, 0, 256},                         /* 16384: 4 Mi / 16384 */
        {"checkerboard", 64, 2, 0, 512},                         /* 8192 */
        {"checkerboard", 16, 2, 4, CA_REPAIR_MAX_ROUNDS},        /* to 10T: 181 x 512 */
        {"image", 16, 1, 0, 1},                                  /* one rollout */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ca_config c;
        if (ca_config_preset(&c, cases[i].preset)) {
            CHECK(0, "preset %s: %s", cases[i].preset, err_message());
            continue;
        }
        c.height = c.width = cases[i].grid, c.batch = cases[i].batch, c.window = cases[i].window;
        int most = ca_repair_most_rounds(&c);
        CHECK(most == cases[i].want, "%s on %dx%d, batch %d, window %d: grows to %d rounds (want %d)",
              cases[i].preset, cases[i].grid, cases[i].grid, cases[i].batch, cases[i].window, most, cases[i].want);
    }
}

/* lizard-torus (seed 84 of the lizard preset, trained on an H100): right on its 20x20 training
 * grid, one cell wrong on the eval's 40x40 torus. Searching the training rollout alone finds
 * nothing to change; once that circuit fails the exact check the search counts the torus too
 * (or, given the time, makes it exact). */
static void test_torus(void)
{
    ca_model m;
    ca_target_image t;
    if (!load("lizard-torus.dlca", &m, &t)) return;
    double *image = ca_target_values(&t);
    CHECK(wrong_off_the_training_grid(&m, image), "lizard-torus: right on the training grid, inexact");
    /* 8 s: two exact checks and a search of the training rollout come first (under a
     * sanitizer, seconds), and the torus is searched only while time is left */
    ca_repair_options o = {8.0, CA_REPAIR_ROUNDS, NULL, NULL, 1, NULL, NULL, 0, 0};
    ca_repair_result r;
    int rc = ca_repair(&m, image, &o, &r);
    CHECK(rc == DLCA_OK && r.wrong_before == 0 && (r.exact || (strstr(r.why, "and the wider grid") && r.wrong_after > 0)),
          "lizard-torus: the search counts the torus's wrong bits (%s): %zu wrong bits on the training rollout, %zu "
          "after, exact %d",
          rc ? err_message() : r.why, r.wrong_before, r.wrong_after, r.exact);
    free(image);
    ca_target_image_free(&t);
    ca_model_free(&m);
}

/* The shipped checkerboard with model gate 2319 (the update network's last layer but one) tied to
 * op 2: right on every training and unseen round, wrong on eval's 64x64 grid after 80 steps (a
 * lab scan of the single ties from the last layer down; 4 of the 32,610 do this). A search of the
 * rounds alone sees no wrong bit; once that circuit fails the 64x64 check, it counts that grid
 * too and repairs it. */
static void test_wider_checkerboard(void)
{
    ca_model m;
    ca_target_image t;
    if (!load("checkerboard.dlca", &m, &t)) return;
    enum { GATE = 2319, OP = 2 };
    ca_exact_result e = {0};
    CHECK(m.gate_count > GATE, "checkerboard: %zu gates", m.gate_count);
    if (m.gate_count <= GATE) return ca_target_image_free(&t), ca_model_free(&m);
    float *z = m.logits + (size_t)GATE * GATE_OP_COUNT;
    z[OP] = z[ca_model_gate_op(&m, GATE)] + 0.25f;
    CHECK(ca_exact_check(&m, NULL, &e) == DLCA_OK && !e.exact && e.eval_check && strstr(e.why, "64x64"),
          "checkerboard, gate %d tied to op %d: right on the unseen rounds, wrong on the 64x64 grid (%s)", GATE, OP,
          e.why);
    ca_repair_options o = {30.0, CA_REPAIR_ROUNDS, NULL, NULL, 1, NULL, NULL, 0, 0};
    ca_repair_result r;
    int rc = ca_repair(&m, NULL, &o, &r);
    CHECK(rc == DLCA_OK && r.exact && r.wrong_before == 0 && r.rounds == CA_REPAIR_ROUNDS && r.changes >= 1,
          "checkerboard, gate %d tied: repaired through the 64x64 grid (%s): %zu wrong bits on the rounds before, %d "
          "rounds, %d changes",
          GATE, rc ? err_message() : r.why, r.wrong_before, r.rounds, r.changes);
    CHECK(ca_exact_check(&m, NULL, &e) == DLCA_OK && e.exact, "checkerboard, repaired: exact (%s)", e.why);
    ca_target_image_free(&t);
    ca_model_free(&m);
}

/* The breakout: the shipped gol circuit with its output gate tied to FALSE and a gate of the layer
 * before tied to another op. Single changes lure the search into a minimum (some change makes a
 * few cells 1 before the output gate's own is tried), where a search of single changes alone
 * stops; raising the weights of the bits wrong there walks on to an exact circuit. The first
 * such pair of breaks (some are repaired without meeting a minimum) is the test. */
static void test_breakout(void)
{
    ca_model m;
    ca_target_image t;
    if (!load("gol.dlca", &m, &t)) return;
    const ca_config *c = &m.config;
    size_t n = m.gate_count * GATE_OP_COUNT, out = m.update_gate_base[c->update_depth - 1];
    float *saved = malloc(n * sizeof(float));
    memcpy(saved, m.logits, n * sizeof(float));
    int met = 0;
    for (int h = 0; h < c->update_widths[c->update_depth - 2] && !met; h += 7)
        for (int q = 12; q < GATE_OP_COUNT && !met; q += 3) { /* from 12: ~4 s (a sanitized build 30) */
            size_t partner = m.update_gate_base[c->update_depth - 2] + (size_t)h;
            memcpy(m.logits, saved, n * sizeof(float));
            float *zo = m.logits + out * GATE_OP_COUNT, *zp = m.logits + partner * GATE_OP_COUNT;
            int top_out = ca_model_gate_op(&m, out), top_partner = ca_model_gate_op(&m, partner);
            if (top_out == GATE_FALSE || q == top_partner) continue;
            zo[GATE_FALSE] = zo[top_out] + 0.25f, zp[q] = zp[top_partner] + 0.25f;
            if (!inexact(&m, NULL)) continue;
            ca_repair_options o = {150.0, CA_REPAIR_ROUNDS, NULL, NULL, 1, NULL, NULL, 0, 0};
            ca_repair_result r;
            int rc = ca_repair(&m, NULL, &o, &r);
            if (rc) {
                CHECK(0, "gol: repair failed: %s", err_message());
                break;
            }
            if (r.minima == 0) continue; /* repaired (or not) by single changes alone */
            met = 1;
            ca_exact_result e;
            CHECK(r.exact && r.changes >= 2 && ca_exact_check(&m, NULL, &e) == DLCA_OK && e.exact,
                  "gol: output gate and gate %d of the layer before broken, %zu wrong bits: exact past %d minima of "
                  "single changes (%s), %d changes in %.1f s",
                  h, r.wrong_before, r.minima, r.why, r.changes, r.seconds);
            /* The same search on three threads walks the same way to the same circuit. */
            float *one = malloc(n * sizeof(float));
            memcpy(one, m.logits, n * sizeof(float));
            memcpy(m.logits, saved, n * sizeof(float));
            zo[GATE_FALSE] = zo[top_out] + 0.25f, zp[q] = zp[top_partner] + 0.25f;
            ca_repair_result r3;
            o.threads = 3;
            rc = ca_repair(&m, NULL, &o, &r3);
            CHECK(rc == DLCA_OK && r3.exact && r3.tries == r.tries && r3.minima == r.minima &&
                      r3.changes == r.changes && memcmp(one, m.logits, n * sizeof(float)) == 0,
                  "gol: on three threads the same search: %zu tries, %d minima, %d changes (one thread: %zu, %d, %d; "
                  "%s)",
                  r3.tries, r3.minima, r3.changes, r.tries, r.minima, r.changes, rc ? err_message() : r3.why);
            /* Bounded by half its tries, on one thread and on three: ended there, the same way. */
            ca_repair_result half[2];
            float *after = malloc(n * sizeof(float));
            for (int k = 0; k < 2 && !rc; k++) {
                memcpy(m.logits, saved, n * sizeof(float));
                zo[GATE_FALSE] = zo[top_out] + 0.25f, zp[q] = zp[top_partner] + 0.25f;
                o.threads = k ? 3 : 1, o.max_tries = r.tries / 2;
                rc = ca_repair(&m, NULL, &o, &half[k]);
                if (k == 0) memcpy(after, m.logits, n * sizeof(float));
            }
            CHECK(rc == DLCA_OK && !half[0].exact && half[0].out_of_tries && half[0].tries == r.tries / 2 &&
                      strncmp(half[0].why, "out of tries", 12) == 0,
                  "gol: bounded by %zu tries the search ends there: %zu tries, %s", r.tries / 2, half[0].tries,
                  rc ? err_message() : half[0].why);
            CHECK(rc == DLCA_OK && half[1].tries == half[0].tries && half[1].minima == half[0].minima &&
                      half[1].wrong_after == half[0].wrong_after && half[1].wrong_fewest == half[0].wrong_fewest &&
                      memcmp(after, m.logits, n * sizeof(float)) == 0,
                  "gol: bounded by tries, three threads end where one does (%zu tries, %d minima, %zu wrong; one "
                  "thread %zu, %d, %zu)",
                  half[1].tries, half[1].minima, half[1].wrong_after, half[0].tries, half[0].minima,
                  half[0].wrong_after);
            o.max_tries = 0;
            free(after);
            free(one);
        }
    CHECK(met, "gol: a pair of breaks whose repair meets a minimum of single changes");
    free(saved);
    ca_target_image_free(&t);
    ca_model_free(&m);
}

/* ca_population_repair: member 0 holds the shipped checkerboard circuit broken at one gate (its
 * config and seed, so its wiring), member 1 a fresh model. With `first` and one thread only the
 * better-ranked member 0 is searched, and repaired; then member 1 is searched and not repaired.
 * The repaired member is written without training state and passes the exact check. With a
 * limit of one member, only the best-ranked is searched. */
/* Counts a population search's progress notes. */
static void count_note(void *user, uint64_t seed, size_t wrong, size_t tries, int changes, int minima, double seconds)
{
    (void)seed, (void)wrong, (void)tries, (void)changes, (void)minima, (void)seconds;
    ++*(int *)user;
}

static void test_population(void)
{
    ca_model shipped;
    ca_target_image t;
    if (!load("checkerboard.dlca", &shipped, &t)) return;
    long broken = break_one_gate(&shipped, NULL);
    ca_population p;
    if (broken < 0 || ca_population_init(&p, &shipped.config, 2, NULL, CA_BACKEND_CPU, NULL, NULL, 1)) {
        CHECK(0, "a population of the broken circuit and a fresh one: %s", err_message());
        ca_model_free(&shipped), ca_target_image_free(&t);
        return;
    }
    size_t n = shipped.gate_count * GATE_OP_COUNT;
    memcpy(p.members[0].model.logits, shipped.logits, n * sizeof(float));
    p.members[0].out = (ca_mark){500, 3.0, 0.01, 0, 0, 0.0};
    p.members[1].out = (ca_mark){500, 90.0, 20.0, 0, 0, 0.0};
    int repaired = -1;
    int notes = 0; /* every kept change is noted: the repair keeps at least one */
    ca_population_search first = {30.0, 1, 0, 1, 0, count_note, &notes, 0.0, NULL, 0};
    int rc = ca_population_repair(&p, &first, &repaired);
    CHECK(rc == DLCA_OK && repaired == 1 && p.members[0].repaired && p.members[0].out.exact,
          "the broken member is repaired (%s)", rc ? err_message() : p.members[0].repair.why);
    CHECK(!p.members[1].repaired && p.members[1].repair.seconds == 0.0, "with first, the other is not searched");
    CHECK(ca_population_exact_count(&p) == 1 && ca_population_best(&p) == 0, "the repaired member counts as exact");
    CHECK(notes > 0, "the search's progress is passed on (%d notes)", notes);
    /* Side by side with first: once member 0 is repaired the fresh member's search under way ends
     * (cancelled), long before its 30 s, or never started. */
    p.members[0].repaired = 0, p.members[0].out = (ca_mark){500, 3.0, 0.01, 0, 0, 0.0};
    memcpy(p.members[0].model.logits, shipped.logits, n * sizeof(float));
    ca_population_search side = {30.0, 2, 1, 1, 0, NULL, NULL, 0.0, NULL, 0};
    rc = ca_population_repair(&p, &side, &repaired);
    const ca_repair_result *other = &p.members[1].repair;
    CHECK(rc == DLCA_OK && repaired == 1 && p.members[0].repaired && !p.members[1].repaired &&
              (other->seconds == 0.0 || (other->cancelled && other->seconds < 15.0)),
          "side by side with first: the other search ends once one member is repaired (%s, cancelled %d, %.2f s)",
          rc ? err_message() : other->why, other->cancelled, other->seconds);
    memset(&p.members[1].repair, 0, sizeof p.members[1].repair);
    ca_population_search all = {0.3, 2, 0, 0, 0, NULL, NULL, 0.0, NULL, 0};
    rc = ca_population_repair(&p, &all, &repaired);
    CHECK(rc == DLCA_OK && repaired == 0 && !p.members[1].repaired && p.members[1].repair.seconds > 0.0 &&
              !p.members[1].out.exact,
          "the fresh member is searched, not repaired (%s)", p.members[1].repair.why);
    char path[600];
    snprintf(path, sizeof path, "%s/member0.dlca", fixture_scratch);
    CHECK(ca_population_save(&p, 0, path, NULL) == DLCA_OK, "the repaired member written: %s", err_message());
    ca_model saved;
    ca_train_state state;
    if (ca_file_load(path, &saved, &state, NULL) == DLCA_OK) {
        ca_exact_result e;
        CHECK(state.moment1 == NULL, "written without training state");
        CHECK(ca_exact_check(&saved, NULL, &e) == DLCA_OK && e.exact, "the written member is exact (%s)", e.why);
        ca_train_state_free(&state);
        ca_model_free(&saved);
    } else {
        CHECK(0, "load %s: %s", path, err_message());
    }
    volatile sig_atomic_t stop = 1;
    ca_population_search stopped = {30.0, 2, 0, 0, 0, NULL, NULL, 0.0, &stop, 0};
    p.members[1].repair.seconds = 0.0;
    rc = ca_population_repair(&p, &stopped, &repaired);
    CHECK(rc == DLCA_OK && repaired == 0 && p.members[1].repair.seconds == 0.0,
          "interrupted: no search starts (%.2f s)", p.members[1].repair.seconds);
    ca_population_search bad = {0.0, 1, 0, 0, 0, NULL, NULL, 0.0, NULL, 0};
    CHECK(ca_population_repair(&p, &bad, &repaired) == DLCA_ERR, "0 seconds refused");
    bad.seconds = 1.0, bad.most = -1;
    CHECK(ca_population_repair(&p, &bad, &repaired) == DLCA_ERR, "a negative member count refused");
    ca_population_free(&p);
    /* `most`: of two fresh members, only the better-ranked one (member 1 here) is searched. */
    if (ca_population_init(&p, &shipped.config, 2, NULL, CA_BACKEND_CPU, NULL, NULL, 1) == DLCA_OK) {
        p.members[0].out = (ca_mark){500, 90.0, 20.0, 0, 0, 0.0};
        p.members[1].out = (ca_mark){500, 40.0, 10.0, 0, 0, 0.0};
        ca_population_search best = {0.2, 2, 1, 0, 1, NULL, NULL, 0.0, NULL, 0};
        rc = ca_population_repair(&p, &best, &repaired);
        CHECK(rc == DLCA_OK && repaired == 0 && p.members[1].repair.seconds > 0.0 && p.members[0].repair.seconds == 0.0,
              "most 1: the best-ranked member alone is searched (%.2f s and %.2f s)", p.members[1].repair.seconds,
              p.members[0].repair.seconds);
        ca_population_free(&p);
    } else {
        CHECK(0, "a population of two fresh members: %s", err_message());
    }
    ca_model_free(&shipped);
    ca_target_image_free(&t);
}

/* ca_population_repair_start: the search on a thread of its own while another population trains
 * on this one. Member 0 holds the shipped checkerboard circuit broken at one gate: it is repaired,
 * and the training, told by `repaired` (ca_population_run.cancel), stops long before its budget.
 * A search that repairs nothing (a fresh member) leaves the training to its budget. */
static void test_background(void)
{
    ca_model shipped;
    ca_target_image t;
    if (!load("checkerboard.dlca", &shipped, &t)) return;
    ca_config small = shipped.config;
    small.height = small.width = 8, small.steps = 6, small.train_steps = 2000;
    ca_population searched, trained;
    long broken = break_one_gate(&shipped, NULL);
    if (broken < 0 || ca_population_init(&searched, &shipped.config, 2, NULL, CA_BACKEND_CPU, NULL, NULL, 1)) {
        CHECK(0, "a population of the broken circuit and a fresh one: %s", err_message());
        ca_model_free(&shipped), ca_target_image_free(&t);
        return;
    }
    memcpy(searched.members[0].model.logits, shipped.logits, shipped.gate_count * GATE_OP_COUNT * sizeof(float));
    searched.members[0].out = (ca_mark){500, 3.0, 0.01, 0, 0, 0.0};
    searched.members[1].out = (ca_mark){500, 90.0, 20.0, 0, 0, 0.0};
    ca_population_search search = {30.0, 1, 0, 1, 1, NULL, NULL, 0.0, NULL, 0};
    ca_population_background b;
    int repaired = -1, rc = ca_population_repair_start(&b, &searched, &search);
    CHECK(rc == DLCA_OK, "the search starts: %s", rc ? err_message() : "");
    if (!rc && ca_population_init(&trained, &small, 1, NULL, CA_BACKEND_CPU, NULL, NULL, 1000) == DLCA_OK) {
        ca_population_run run = {CA_STOP_NONE, 0, 0, NULL, NULL, NULL, 0.0, &b.repaired};
        int trained_rc = ca_population_train(&trained, &run);
        rc = ca_population_repair_wait(&b, &repaired);
        CHECK(trained_rc == DLCA_OK && rc == DLCA_OK && repaired == 1 && searched.members[0].repaired &&
                  searched.members[0].out.exact,
              "the broken member is repaired beside the training (%s)", searched.members[0].repair.why);
        CHECK(searched.members[1].repair.seconds == 0.0, "most 1: the fresh member is not searched");
        /* step 0 where the search ended before the first step (a busy machine's scheduling) */
        CHECK(trained.members[0].stop_step < trained.total, "the training stops once it is: step %llu of %llu",
              (unsigned long long)trained.members[0].stop_step, (unsigned long long)trained.total);
        ca_population_free(&trained);
    } else if (!rc) {
        CHECK(0, "a population to train: %s", err_message());
        ca_population_repair_wait(&b, &repaired);
    }
    ca_population_free(&searched);
    /* a fresh member: nothing repaired, the training not stopped */
    small.train_steps = 30;
    if (ca_population_init(&searched, &shipped.config, 1, NULL, CA_BACKEND_CPU, NULL, NULL, 1) == DLCA_OK &&
        ca_population_init(&trained, &small, 1, NULL, CA_BACKEND_CPU, NULL, NULL, 1000) == DLCA_OK) {
        searched.members[0].out = (ca_mark){500, 90.0, 20.0, 0, 0, 0.0};
        search.seconds = 0.3;
        rc = ca_population_repair_start(&b, &searched, &search);
        ca_population_run run = {CA_STOP_NONE, 0, 0, NULL, NULL, NULL, 0.0, &b.repaired};
        int trained_rc = rc ? DLCA_ERR : ca_population_train(&trained, &run);
        if (!rc) rc = ca_population_repair_wait(&b, &repaired);
        CHECK(rc == DLCA_OK && trained_rc == DLCA_OK && repaired == 0 && searched.members[0].repair.seconds > 0.0 &&
                  trained.members[0].stop_step == trained.total,
              "a search that repairs nothing: the training runs its %llu steps (stopped at %llu; %s)",
              (unsigned long long)trained.total, (unsigned long long)trained.members[0].stop_step,
              rc ? err_message() : "");
        ca_population_free(&trained), ca_population_free(&searched);
    } else {
        CHECK(0, "populations for the search that repairs nothing: %s", err_message());
    }
    /* cancelled (the next try found an exact member): a 30 s search of a fresh member ends at once */
    if (ca_population_init(&searched, &shipped.config, 1, NULL, CA_BACKEND_CPU, NULL, NULL, 1) == DLCA_OK) {
        searched.members[0].out = (ca_mark){500, 90.0, 20.0, 0, 0, 0.0};
        search.seconds = 30.0;
        rc = ca_population_repair_start(&b, &searched, &search);
        if (!rc) ca_population_repair_cancel(&b);
        if (!rc) rc = ca_population_repair_wait(&b, &repaired);
        const ca_repair_result *r = &searched.members[0].repair;
        CHECK(rc == DLCA_OK && repaired == 0 && (r->seconds == 0.0 || (r->cancelled && r->seconds < 15.0)),
              "a cancelled search ends long before its 30 s (cancelled %d, %.2f s: %s)", r->cancelled, r->seconds,
              rc ? err_message() : r->why);
        ca_population_free(&searched);
    } else {
        CHECK(0, "a population for the cancelled search: %s", err_message());
    }
    search.seconds = 0.0;
    CHECK(ca_population_repair_start(&b, &searched, &search) == DLCA_ERR, "0 seconds refused before a thread starts");
    ca_model_free(&shipped);
    ca_target_image_free(&t);
}

/* How a population's searches share the threads: one a search while they outnumber the threads,
 * else the threads divided among them; a fixed number each runs threads / that side by side. */
static void test_repair_plan(void)
{
    static const int cases[][5] = {/* searches, threads, search_threads -> side, each */
                                   {4, 16, 0, 4, 4},  {16, 16, 0, 16, 1}, {20, 16, 0, 16, 1}, {3, 16, 0, 3, 5},
                                   {16, 16, 16, 1, 16}, {5, 16, 4, 4, 4},  {2, 16, 4, 2, 4},   {3, 2, 0, 2, 1},
                                   {1, 1, 8, 1, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int side = -1, each = -1;
        ca_population_repair_plan(cases[i][0], cases[i][1], cases[i][2], &side, &each);
        CHECK(side == cases[i][3] && each == cases[i][4], "%d searches on %d threads, %d each asked: %d x %d (want %d x %d)",
              cases[i][0], cases[i][1], cases[i][2], side, each, cases[i][3], cases[i][4]);
    }
}

static void test_unrepairable(void)
{
    ca_config c;
    ca_model m;
    if (ca_config_preset(&c, "checkerboard") || ca_model_init(&m, &c)) {
        CHECK(0, "fresh model: %s", err_message());
        return;
    }
    size_t n = m.gate_count * GATE_OP_COUNT;
    float *before = malloc(n * sizeof(float));
    memcpy(before, m.logits, n * sizeof(float));
    ca_repair_options o = {0.3, 2, NULL, NULL, 1, NULL, NULL, 0, 0};
    ca_repair_result r;
    CHECK(ca_repair(&m, NULL, &o, &r) == DLCA_OK && !r.exact && r.why[0] && r.wrong_after > 0,
          "a fresh model is not repaired in 0.3 s (%s)", r.why);
    CHECK(memcmp(before, m.logits, n * sizeof(float)) == 0, "an unrepaired model comes back unchanged");
    /* An interrupt (Ctrl-C's flag) ends the search before its first batch of tries. */
    volatile sig_atomic_t stop = 1;
    ca_repair_options stopped = {30.0, 2, NULL, NULL, 2, &stop, NULL, 0, 0};
    CHECK(ca_repair(&m, NULL, &stopped, &r) == DLCA_OK && r.interrupted && r.tries == 0 && !r.exact &&
              strncmp(r.why, "interrupted", 11) == 0,
          "an interrupted search ends at once, saying so (%zu tries: %s)", r.tries, r.why);
    CHECK(memcmp(before, m.logits, n * sizeof(float)) == 0, "an interrupted model comes back unchanged");
    /* A cancel (another thread's: a population's other member was repaired) ends it as well. */
    atomic_int cancel;
    atomic_init(&cancel, 1);
    ca_repair_options cancelled = {30.0, 2, NULL, NULL, 2, NULL, &cancel, 0, 0};
    CHECK(ca_repair(&m, NULL, &cancelled, &r) == DLCA_OK && r.cancelled && !r.interrupted && r.tries == 0 &&
              !r.exact && strncmp(r.why, "stopped", 7) == 0,
          "a cancelled search ends at once, saying so (%zu tries: %s)", r.tries, r.why);
    CHECK(memcmp(before, m.logits, n * sizeof(float)) == 0, "a cancelled model comes back unchanged");
    ca_repair_options bad[] = {{0.0, 2, NULL, NULL, 1, NULL, NULL, 0, 0},
                               {1.0, 0, NULL, NULL, 1, NULL, NULL, 0, 0},
                               {1.0, CA_REPAIR_MAX_ROUNDS + 1, NULL, NULL, 1, NULL, NULL, 0, 0},
                               {1.0, 2, NULL, NULL, -1, NULL, NULL, 0, 0},
                               {1.0, 2, NULL, NULL, CA_REPAIR_MAX_THREADS + 1, NULL, NULL, 0, 0},
                               {1.0, 4, NULL, NULL, 1, NULL, NULL, 2, 0},
                               {1.0, 2, NULL, NULL, 1, NULL, NULL, CA_REPAIR_GROW_ROUNDS + 1, 0}};
    for (int i = 0; i < 7; i++)
        CHECK(ca_repair(&m, NULL, &bad[i], &r) == DLCA_ERR, "bad options %d refused: %s", i, err_message());
    free(before);
    ca_model_free(&m);
}

/* dlca train --repair: a run resumed from the shipped checkerboard broken at one gate (its
 * training state kept), one step to the budget, then the search: the file written is exact and
 * has no training state. Without --repair the same run writes an inexact circuit. */
static void test_train(void)
{
    ca_model m;
    ca_train_state state;
    char path[600];
    snprintf(path, sizeof path, "%s/models/checkerboard.dlca", DLCA_ASSET_DIR);
    if (ca_file_load(path, &m, &state, NULL)) {
        CHECK(0, "load %s: %s", path, err_message());
        return;
    }
    long broken = break_one_gate(&m, NULL);
    snprintf(path, sizeof path, "%s/resume.dlca", fixture_scratch);
    CHECK(broken >= 0 && ca_file_save(path, &m, &state, NULL) == DLCA_OK, "the broken run written with its state");
    ca_train_state_free(&state);
    ca_model_free(&m);
    char err[4096];
    CHECK(fixture_run(err, sizeof err, "train --resume resume.dlca --steps %d --device cpu --out plain.dlca", 501) == 0,
          "the resumed run without --repair");
    CHECK(fixture_run(NULL, 0, "eval plain.dlca --device cpu") != 0, "without --repair it ends inexact");
    int status = fixture_run(err, sizeof err, "train --resume resume.dlca --steps 501 --device cpu --out run-fixed.dlca "
                                              "--repair 60");
    CHECK(status == 0 && strstr(err, "verified exact by changing"), "the resumed run with --repair: %s", err);
    ca_model fixed;
    snprintf(path, sizeof path, "%s/run-fixed.dlca", fixture_scratch);
    if (ca_file_load(path, &fixed, &state, NULL) == DLCA_OK) {
        ca_exact_result e;
        CHECK(state.moment1 == NULL, "the repaired run is written without training state");
        CHECK(ca_exact_check(&fixed, NULL, &e) == DLCA_OK && e.exact, "the repaired run is exact (%s)", e.why);
        ca_train_state_free(&state);
        ca_model_free(&fixed);
    } else {
        CHECK(0, "load %s: %s", path, err_message());
    }
    fixture_refused("--repair", "train --preset checkerboard --device cpu --repair -1 --out r.dlca");
}

/* dlca repair on a broken checkerboard file, a fresh model and bad flags. */
static void test_command(void)
{
    ca_model m;
    ca_target_image t;
    if (!load("checkerboard.dlca", &m, &t)) return;
    char path[600];
    snprintf(path, sizeof path, "%s/broken.dlca", fixture_scratch);
    CHECK(break_one_gate(&m, NULL) >= 0 && ca_file_save(path, &m, NULL, NULL) == DLCA_OK, "broken file written");
    ca_model_free(&m);
    ca_target_image_free(&t);
    CHECK(fixture_run(NULL, 0, "repair broken.dlca --out fixed.dlca --seconds 60") == 0 && fixture_exists("fixed.dlca"),
          "dlca repair writes the repaired model");
    CHECK(fixture_run(NULL, 0, "eval fixed.dlca --device cpu") == 0, "dlca eval passes the repaired model");
    /* on three threads: the same search, so the same logits */
    ca_model one, three;
    ca_train_state s1, s3;
    CHECK(fixture_run(NULL, 0, "repair broken.dlca --out fixed3.dlca --seconds 60 --threads 3") == 0,
          "dlca repair --threads 3 writes the repaired model");
    if (fixture_model("fixed.dlca", &one, &s1) == 0) {
        if (fixture_model("fixed3.dlca", &three, &s3) == 0) {
            CHECK(one.gate_count == three.gate_count &&
                      memcmp(one.logits, three.logits, one.gate_count * GATE_OP_COUNT * sizeof(float)) == 0,
                  "--threads 3 writes the logits one thread writes");
            ca_model_free(&three), ca_train_state_free(&s3);
        } else {
            CHECK(0, "fixed3.dlca loads");
        }
        ca_model_free(&one), ca_train_state_free(&s1);
    } else {
        CHECK(0, "fixed.dlca loads");
    }
    CHECK(fixture_run(NULL, 0, "repair fixed.dlca --out again.dlca") == 0 && fixture_exists("again.dlca"),
          "an exact model is written unchanged");
    CHECK(fixture_run(NULL, 0, "train --preset checkerboard --grid 8x8 --T 4 --steps 1 --device cpu --out fresh.dlca") == 0,
          "a fresh model trained");
    CHECK(fixture_run(NULL, 0, "repair fresh.dlca --out none.dlca --seconds 0.3 --rounds 1") == 1 &&
              !fixture_exists("none.dlca"),
          "no exact circuit: exit 1 and nothing written");
    /* --tries: the search ends there, says so, and writes nothing (exit 1) */
    char out[4096];
    CHECK(fixture_run(NULL, 0, "repair broken.dlca --out tries.dlca --tries 1") == 1 && !fixture_exists("tries.dlca") &&
              fixture_read("out.txt", out, sizeof out) > 0 && strstr(out, "out of tries with") &&
              strstr(out, "after 1 tries"),
          "dlca repair --tries 1: out of tries, nothing written (%s)", out);
    /* ... and in dlca sweep's and dlca train's searches */
    char err[4096];
    int status = fixture_run(err, sizeof err, "sweep --preset checkerboard --seeds 1-2 --grid 8x8 --T 4 --steps 2 "
                                              "--device cpu --repair 30 --repair-tries 3");
    CHECK(status == 0 && strstr(err, "out of tries with") && strstr(err, "after 3 tries"),
          "dlca sweep --repair-tries 3: %s", err);
    status = fixture_run(err, sizeof err, "train --preset checkerboard --grid 8x8 --T 4 --steps 2 --device cpu "
                                          "--repair 30 --repair-tries 3 --out tries-run.dlca");
    CHECK(status == 0 && strstr(err, "out of tries with") && strstr(err, "after 3 tries"),
          "dlca train --repair-tries 3: %s", err);
    fixture_refused("--tries", "repair broken.dlca --out x.dlca --tries 0");
    fixture_refused("--repair-tries", "train --preset checkerboard --device cpu --repair-tries 0 --out x.dlca");
    fixture_refused("--repair-tries", "sweep --preset checkerboard --seeds 1-2 --device cpu --repair-tries x");
    fixture_refused("--out", "repair broken.dlca");
    fixture_refused("--seconds", "repair broken.dlca --out x.dlca --seconds 0");
    fixture_refused("--rounds", "repair broken.dlca --out x.dlca --rounds 65");
    fixture_refused("--threads", "repair broken.dlca --out x.dlca --threads 0");
    fixture_refused("--repair-threads", "train --preset checkerboard --device cpu --repair-threads 0 --out x.dlca");
    fixture_refused("--repair-threads", "sweep --preset checkerboard --seeds 1-2 --device cpu --repair-threads 300");
    fixture_refused("exists", "repair broken.dlca --out fixed.dlca");
    fixture_refused("itself", "repair broken.dlca --out broken.dlca --force");
    fixture_refused("missing.dlca", "repair missing.dlca --out x.dlca");
}

int main(int argc, char **argv)
{
    (void)argc;
    if (fixture_begin(argv[0], "repair")) return 1;
    test_first_count_async();
    test_repairs("checkerboard.dlca");
    test_repairs("checkerboard-async.dlca");
    test_repairs("image.dlca");
    test_persistence();
    test_more_rounds();
    test_probed_rounds();
    test_most_rounds();
    test_torus();
    test_wider_checkerboard();
    test_breakout();
    test_population();
    test_background();
    test_repair_plan();
    test_unrepairable();
    test_command();
    test_train();
    fixture_end();
    return test_finish("test_ca_repair");
}
