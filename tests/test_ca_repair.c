/* test_ca_repair: the local search that makes a nearly exact circuit exact (ca_repair.h), and
 * `dlca repair`. A shipped exact circuit is left alone. The same circuit with one gate's op
 * flipped to a near tie (its logit just above the winner's) is inexact, and the search finds an
 * exact circuit again by single-gate changes: for the synchronous checkerboard (8 rounds of two
 * random starts), the asynchronous one (fire masks per round) and the image (one rollout). Only
 * the gates the search changed differ from the broken model's ops, and the exact check, run here
 * again, agrees. A fresh model (every gate pass-through) cannot be repaired in the time given: the
 * model comes back unchanged, bit for bit. The command writes only an exact circuit, refuses bad
 * flags in one line, and writes nothing (exit 1) when it finds none. */
#include "ca_exact.h"
#include "ca_file.h"
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

/* Breaks the exact circuit `m`: the first update gate (from the last layer down) whose op, moved
 * to a near tie with another op, makes the circuit inexact. Returns that gate, or -1. */
static long break_one_gate(ca_model *m, const double *image)
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
                ca_exact_result r;
                if (ca_exact_check(m, image, &r) == DLCA_OK && !r.exact) return (long)gate;
                z[q] = was;
            }
        }
    return -1;
}

static void test_repairs(const char *name)
{
    ca_model m;
    ca_target_image t;
    if (!load(name, &m, &t)) return;
    double *image = t.bits ? ca_target_values(&t) : NULL;
    ca_repair_options o = {30.0, CA_REPAIR_ROUNDS, NULL, NULL};
    ca_repair_result r;
    CHECK(ca_repair(&m, image, &o, &r) == DLCA_OK && r.exact && r.already_exact && r.tries == 0,
          "%s: an exact circuit is left alone", name);
    long broken = break_one_gate(&m, image);
    CHECK(broken >= 0, "%s: one gate near a tie breaks the circuit", name);
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
    ca_repair_options o = {0.3, 2, NULL, NULL};
    ca_repair_result r;
    CHECK(ca_repair(&m, NULL, &o, &r) == DLCA_OK && !r.exact && r.why[0] && r.wrong_after > 0,
          "a fresh model is not repaired in 0.3 s (%s)", r.why);
    CHECK(memcmp(before, m.logits, n * sizeof(float)) == 0, "an unrepaired model comes back unchanged");
    ca_repair_options bad[] = {{0.0, 2, NULL, NULL}, {1.0, 0, NULL, NULL}, {1.0, CA_REPAIR_ROUNDS + 1, NULL, NULL}};
    for (int i = 0; i < 3; i++)
        CHECK(ca_repair(&m, NULL, &bad[i], &r) == DLCA_ERR, "bad options %d refused: %s", i, err_message());
    free(before);
    ca_model_free(&m);
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
    CHECK(fixture_run(NULL, 0, "repair fixed.dlca --out again.dlca") == 0 && fixture_exists("again.dlca"),
          "an exact model is written unchanged");
    CHECK(fixture_run(NULL, 0, "train --preset checkerboard --grid 8x8 --T 4 --steps 1 --device cpu --out fresh.dlca") == 0,
          "a fresh model trained");
    CHECK(fixture_run(NULL, 0, "repair fresh.dlca --out none.dlca --seconds 0.3 --rounds 1") == 1 &&
              !fixture_exists("none.dlca"),
          "no exact circuit: exit 1 and nothing written");
    fixture_refused("--out", "repair broken.dlca");
    fixture_refused("--seconds", "repair broken.dlca --out x.dlca --seconds 0");
    fixture_refused("--rounds", "repair broken.dlca --out x.dlca --rounds 9");
    fixture_refused("exists", "repair broken.dlca --out fixed.dlca");
    fixture_refused("itself", "repair broken.dlca --out broken.dlca --force");
    fixture_refused("missing.dlca", "repair missing.dlca --out x.dlca");
}

int main(int argc, char **argv)
{
    (void)argc;
    if (fixture_begin(argv[0], "repair")) return 1;
    test_repairs("checkerboard.dlca");
    test_repairs("checkerboard-async.dlca");
    test_repairs("image.dlca");
    test_unrepairable();
    test_command();
    fixture_end();
    return test_finish("test_ca_repair");
}
