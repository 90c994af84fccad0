/* test_cli_train: `dlca train`, `run`, `eval` and `info` as a user calls them: gol trains on the
 * CPU until its circuit is verified exact and stops there; a resumed run logs exactly the losses
 * of an uninterrupted one and writes the same model (its best circuit carried in the file); the
 * CPU and Vulkan engines give the same loss curve within 1e-3; the CSV, plot, model and frames
 * are written; bad input gives one clear line, a non-zero exit and no output file; --from starts
 * a run from a model's circuit. */
#include "ca_eval.h"
#include "ca_file.h"
#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "vk_context.h"

#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dlca[1024], scratch[256];

/* Runs `dlca <args>` with stderr captured in `err` (its first line); returns the exit status. */
static int run_dlca(char *err, size_t err_size, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int run_dlca(char *err, size_t err_size, const char *format, ...)
{
    char args[4096], command[8192], err_path[512];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", scratch);
    snprintf(command, sizeof command, "%s'%s' %s > '%s/stdout.txt' 2> '%s'",
             strstr(args, "chk.dlca") ? "DLCA_CHECK_STAGES=1 " : "", dlca, args, scratch, err_path);
    int status = system(command);
    if (err) {
        err[0] = '\0';
        FILE *f = fopen(err_path, "r");
        if (f) {
            size_t n = fread(err, 1, err_size - 1, f);
            err[n] = '\0';
            fclose(f);
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Rows of a training CSV: step, soft, hard. */
static int read_csv(const char *path, double rows[][3], int max_rows)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int n = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f) && n < max_rows)
        if (sscanf(line, "%lf,%lf,%lf", &rows[n][0], &rows[n][1], &rows[n][2]) == 3) n++;
    fclose(f);
    return n;
}

static void test_gol_to_zero(void)
{
    char err[4096];
    int status = run_dlca(err, sizeof err, "train --preset gol --device cpu --every 500 --out '%s/gol.dlca'", scratch);
    CHECK(status == 0, "gol training exits 0 (status %d): %s", status, err);
    CHECK(strstr(err, "verified exact") != NULL, "it says it stopped at a verified-exact circuit: %s", err);
    char path[512];
    snprintf(path, sizeof path, "%s/gol.csv", scratch);
    double rows[64][3];
    int n = read_csv(path, rows, 64), every = 1;
    for (int i = 0; i + 1 < n; i++) every &= rows[i][0] == 500.0 * (i + 1);
    CHECK(n >= 2 && every && rows[n - 1][0] > rows[n - 2][0] && rows[n - 1][0] <= 3000,
          "gol.csv has a row every 500 steps and one at the exact step (%d rows)", n);
    CHECK(n > 0 && rows[n - 1][2] == 0.0, "hard loss 0 at the end (%g)", n > 0 ? rows[n - 1][2] : -1.0);
    snprintf(path, sizeof path, "%s/gol-loss.png", scratch);
    CHECK(exists(path), "the loss curve %s is written", path);
    ca_model model;
    snprintf(path, sizeof path, "%s/gol.dlca", scratch);
    if (ca_file_load(path, &model, NULL, NULL)) {
        CHECK(0, "load: %s", err_message());
        return;
    }
    ca_eval_context context = {&model, CA_BACKEND_CPU, NULL, NULL, 0};
    double accuracy = 0.0;
    CHECK(ca_eval_life_accuracy(&context, &accuracy) == DLCA_OK && accuracy == 1.0,
          "the trained circuit is Life on all 512 neighbourhoods (%.4f)", accuracy);
    ca_model_free(&model);
    status = run_dlca(err, sizeof err, "eval '%s/gol.dlca' --device cpu", scratch);
    CHECK(status == 0, "dlca eval exits 0: %s", err);
    status = run_dlca(err, sizeof err, "run '%s/gol.dlca' --device cpu --grid 24x24 --steps 8 --out '%s/gol_run.png'",
                      scratch, scratch);
    snprintf(path, sizeof path, "%s/gol_run.png", scratch);
    CHECK(status == 0 && exists(path), "dlca run writes the strip: %s", err);
}

/* Same losses for 2N steps in one go and for N steps, then resumed to 2N (with `resume_extra`).
 * Called once a preset, so the fresh runs replace the last preset's files: --force. */
static void test_resume(const char *preset, const char *extra, const char *resume_extra)
{
    char err[4096], a[512], b[512];
    int s1 = run_dlca(err, sizeof err, "train --preset %s %s --device cpu --steps 12 --every 2 --force --out '%s/whole.dlca'",
                      preset, extra, scratch);
    int s2 = run_dlca(err, sizeof err, "train --preset %s %s --device cpu --steps 6 --every 2 --force --out '%s/part.dlca'",
                      preset, extra, scratch);
    int s3 = run_dlca(err, sizeof err, "train --resume '%s/part.dlca' --steps 12 --every 2 --device cpu %s", scratch,
                      resume_extra);
    CHECK(s1 == 0 && s2 == 0 && s3 == 0, "%s: train, train, resume exit 0 (%d %d %d): %s", preset, s1, s2, s3, err);
    snprintf(a, sizeof a, "%s/whole.csv", scratch);
    snprintf(b, sizeof b, "%s/part.csv", scratch);
    double whole[16][3], part[16][3];
    int n = read_csv(a, whole, 16), m = read_csv(b, part, 16);
    CHECK(n == 6 && m == 6, "%s: 6 rows each (%d, %d)", preset, n, m);
    int same = n == m;
    for (int i = 0; same && i < n; i++) same = memcmp(whole[i], part[i], sizeof whole[i]) == 0;
    CHECK(same, "%s: the resumed run logs exactly the uninterrupted losses", preset);
    /* the same circuit written at the end, best or final, with the same best carried */
    ca_model ma, mb;
    ca_train_state sa, sb;
    snprintf(a, sizeof a, "%s/whole.dlca", scratch);
    snprintf(b, sizeof b, "%s/part.dlca", scratch);
    if (ca_file_load(a, &ma, &sa, NULL) || ca_file_load(b, &mb, &sb, NULL)) {
        CHECK(0, "%s: load: %s", preset, err_message());
        return;
    }
    size_t values = ma.gate_count * 16 * sizeof(float);
    CHECK(sa.step == sb.step && memcmp(ma.logits, mb.logits, values) == 0 && memcmp(sa.moment1, sb.moment1, values) == 0,
          "%s: the resumed run writes the uninterrupted run's model (%llu and %llu steps done)", preset,
          (unsigned long long)sa.step, (unsigned long long)sb.step);
    CHECK(sa.best.step > 0 && sa.best.step == sb.best.step && sa.best.wrong == sb.best.wrong &&
              memcmp(sa.best.logits, sb.best.logits, values) == 0,
          "%s: and carries the same best circuit (measured at steps %llu and %llu)", preset,
          (unsigned long long)sa.best.step, (unsigned long long)sb.best.step);
    ca_model_free(&ma), ca_model_free(&mb), ca_train_state_free(&sa), ca_train_state_free(&sb);
}

/* A run broken off after a checkpoint (a NaN poured in at step 7: the checkpoint of step 6
 * stays) and resumed writes what the whole run writes, even where that is a best circuit
 * measured before the checkpoint: the file carries it. The seed is the first whose whole run
 * writes a best from before step 6. */
static void test_best_carried(void)
{
    const char *common = "--preset checkerboard --grid 8x8 --T 6 --steps 12 --every 3 --device cpu --force";
    char err[4096], path[512], inject[1100];
    snprintf(inject, sizeof inject, "%s", dlca);
    snprintf(inject + strlen(inject) - strlen("dlca"), sizeof inject - strlen(inject) + 4, "dlca_inject_nan");
    ca_model m;
    ca_train_state s;
    int seed = 0;
    for (int k = 1; k <= 12 && !seed; k++) {
        int status = run_dlca(err, sizeof err, "train %s --seed %d --out '%s/bw.dlca'", common, k, scratch);
        snprintf(path, sizeof path, "%s/bw.dlca", scratch);
        if (status != 0 || ca_file_load(path, &m, &s, NULL)) break;
        if (s.step < 5) seed = k;
        ca_model_free(&m), ca_train_state_free(&s);
    }
    CHECK(seed > 0, "a seed of 1..12 writes a best circuit from before step 6");
    if (!seed) return;
    char command[4096];
    snprintf(command, sizeof command, "'%s' 7 train %s --seed %d --out '%s/bp.dlca' > /dev/null 2>&1", inject, common,
             seed, scratch);
    CHECK(system(command) != 0, "the poisoned run fails at step 7");
    int status = run_dlca(err, sizeof err, "train --resume '%s/bp.dlca' --steps 12 --every 3 --device cpu", scratch);
    CHECK(status == 0, "the resumed run: %s", err);
    ca_model a, b;
    ca_train_state sa, sb;
    snprintf(path, sizeof path, "%s/bw.dlca", scratch);
    int loaded = ca_file_load(path, &a, &sa, NULL) == DLCA_OK;
    snprintf(path, sizeof path, "%s/bp.dlca", scratch);
    loaded = loaded && ca_file_load(path, &b, &sb, NULL) == DLCA_OK;
    CHECK(loaded, "load: %s", err_message());
    if (!loaded) return;
    size_t values = a.gate_count * 16 * sizeof(float);
    CHECK(sa.step == sb.step && memcmp(a.logits, b.logits, values) == 0,
          "seed %d: the resumed run writes the whole run's best circuit (%llu and %llu steps done)", seed,
          (unsigned long long)sa.step, (unsigned long long)sb.step);
    uint64_t best_step = sa.step + 1;
    ca_model_free(&a), ca_model_free(&b), ca_train_state_free(&sa), ca_train_state_free(&sb);
    /* --keep-final: the final circuit, the best only in the file's best section */
    status = run_dlca(err, sizeof err, "train %s --seed %d --keep-final --out '%s/bf.dlca'", common, seed, scratch);
    snprintf(path, sizeof path, "%s/bf.dlca", scratch);
    loaded = status == 0 && ca_file_load(path, &a, &sa, NULL) == DLCA_OK;
    CHECK(loaded && sa.step == 12 && sa.best.step == best_step,
          "--keep-final writes the final circuit (%llu steps done) and carries the best of step %llu", loaded ?
          (unsigned long long)sa.step : 0ull, (unsigned long long)best_step);
    if (loaded) ca_model_free(&a), ca_train_state_free(&sa);
}

static void test_cpu_matches_vulkan(void)
{
    vk_context vk;
    if (test_vk_context_init(&vk, -1) != DLCA_OK) {
        CHECK(getenv("DLCA_REQUIRE_VULKAN") == NULL, "no Vulkan device: %s", err_message());
        return;
    }
    int index = vk.device_index;
    vk_context_free(&vk);
    char err[4096], path[512];
    const char *common = "--preset checkerboard --grid 8x8 --T 6 --steps 8 --every 1";
    int s1 = run_dlca(err, sizeof err, "train %s --device cpu --out '%s/cpu.dlca'", common, scratch);
    int s2 = run_dlca(err, sizeof err, "train %s --device %d --population 1 --out '%s/gpu.dlca'", common, index, scratch);
    CHECK(s1 == 0 && s2 == 0, "checkerboard on cpu and Vulkan exit 0 (%d %d): %s", s1, s2, err);
    double cpu[16][3], gpu[16][3];
    snprintf(path, sizeof path, "%s/cpu.csv", scratch);
    int n = read_csv(path, cpu, 16);
    snprintf(path, sizeof path, "%s/gpu.csv", scratch);
    int m = read_csv(path, gpu, 16);
    CHECK(n == 8 && m == 8, "8 rows each (%d, %d)", n, m);
    for (int i = 0; i < n && i < m; i++) {
        CHECK_CLOSE(gpu[i][1], cpu[i][1], 0.0, 1e-3, "soft loss at step %g", cpu[i][0]);
        CHECK_CLOSE(gpu[i][2], cpu[i][2], 0.0, 1e-3, "hard loss at step %g", cpu[i][0]);
    }
    CHECK(n == 8 && cpu[7][1] < cpu[0][1], "the loss falls (%g -> %g)", cpu[0][1], n == 8 ? cpu[7][1] : 0.0);
    /* The debug switch: every stage of the GPU step checked against the CPU engine. */
    int s3 = run_dlca(err, sizeof err,
                      "train --preset checkerboard-async --grid 6x6 --T 3 --steps 2 --every 1 --device %d --population 1 --out '%s/chk.dlca'",
                      index, scratch);
    CHECK(s3 == 0, "DLCA_CHECK_STAGES=1 training passes every stage check: %s", err);
    /* 20 steps back the grid gradients fade to ~1e-9, where float32 keeps few digits: the check
     * measures them against the loss gradient's scale (it failed there at 0.18 before). */
    int s4 = run_dlca(err, sizeof err, "train --preset checkerboard --steps 2 --every 1 --device %d --population 1 --out '%s/cb-chk.dlca'",
                      index, scratch);
    CHECK(s4 == 0, "DLCA_CHECK_STAGES=1 on checkerboard, T=20, passes: %s", err);
}

/* A bad call: non-zero exit, one line naming `needle`, and no model file `left`. */
static void expect_refused(const char *needle, const char *left, const char *args)
{
    char err[4096], path[512] = "";
    int status = run_dlca(err, sizeof err, "%s", args);
    size_t lines = 0;
    for (const char *p = err; *p; p++) lines += *p == '\n';
    CHECK(status != 0, "'%s' exits non-zero", args);
    CHECK(lines == 1, "'%s' prints one line, got %zu: %s", args, lines, err);
    CHECK(strstr(err, needle) != NULL, "'%s': message '%s' names '%s'", args, err, needle);
    if (left) snprintf(path, sizeof path, "%s/%s", scratch, left);
    CHECK(!left || !exists(path), "'%s' leaves no %s", args, left);
}

static void test_bad_input(void)
{
    char args[4096], png[512];
    snprintf(png, sizeof png, "%s/garbage.png", scratch);
    FILE *f = fopen(png, "w");
    if (f) fputs("not a png", f), fclose(f);
    expect_refused("--bogus", NULL, "train --bogus 1");
    expect_refused("--steps", NULL, "train --steps 0");
    expect_refused("--grid", NULL, "train --grid 0x5");
    expect_refused("--lr", NULL, "train --lr fast");
    expect_refused("--cache", NULL, "train --cache some");
    expect_refused("preset", NULL, "train --preset glider");
    snprintf(args, sizeof args, "train --preset image --target '%s/lizard20.png' --out '%s/x.dlca' --device cpu",
             DLCA_ASSET_DIR, scratch);
    expect_refused("16x16", "x.dlca", args);
    snprintf(args, sizeof args, "train --preset lizard --target '%s' --out '%s/x.dlca' --device cpu", png, scratch);
    expect_refused("not a PNG", "x.dlca", args);
    snprintf(args, sizeof args, "train --resume '%s/missing.dlca' --out '%s/x.dlca'", scratch, scratch);
    expect_refused("missing.dlca", "x.dlca", args);
    snprintf(args, sizeof args, "train --resume '%s/gol.dlca' --batch 4", scratch);
    expect_refused("--resume", NULL, args);
    snprintf(args, sizeof args, "run '%s' --out '%s/x.png'", png, scratch);
    expect_refused("garbage.png", "x.png", args);
    snprintf(args, sizeof args, "eval '%s/nothing.dlca'", scratch);
    expect_refused("nothing.dlca", NULL, args);
    snprintf(args, sizeof args, "run '%s/gol.dlca' --damage 1,2,3@4 --out '%s/x.png'", scratch, scratch);
    expect_refused("--damage", "x.png", args);
    expect_refused("unknown command", NULL, "frobnicate");
}

/* Whether two models' layers read the same inputs. */
static int same_wiring(const ca_model *a, const ca_model *b)
{
    int same = a->config.perception_depth == b->config.perception_depth &&
               a->config.update_depth == b->config.update_depth;
    for (int pass = 0; same && pass < 2; pass++) {
        int depth = pass ? a->config.update_depth : a->config.perception_depth;
        for (int l = 0; same && l < depth; l++) {
            const wiring *x = pass ? &a->update[l] : &a->perception[l], *y = pass ? &b->update[l] : &b->perception[l];
            size_t bytes = (size_t)x->n_out * sizeof *x->input_a;
            same = x->n_in == y->n_in && x->n_out == y->n_out && memcmp(x->input_a, y->input_a, bytes) == 0 &&
                   memcmp(x->input_b, y->input_b, bytes) == 0;
        }
    }
    return same;
}

/* --from: a new run starts from a model's circuit. One AdamW step of lr from fresh moments moves
 * each logit by at most lr (1 + weight decay x |logit|), so every logit of the new file lies that
 * close to the old one's, which a fresh pass-through start does not; the wiring is the old file's
 * though the seed (which draws a fresh model's wiring) differs; the config is the old one's under
 * the flags, from step 0. Flags that change the network are refused. */
static void test_from(void)
{
    char err[4096], a[512], b[512], args[4096];
    snprintf(a, sizeof a, "%s/from-a.dlca", scratch);
    snprintf(b, sizeof b, "%s/from-b.dlca", scratch);
    int s1 = run_dlca(err, sizeof err, "train --preset checkerboard --grid 8x8 --T 4 --steps 6 --seed 3 --device cpu "
                      "--no-stop-exact --keep-final --out '%s'", a);
    int s2 = run_dlca(err, sizeof err, "train --from '%s' --seed 9 --pool 4 --window 2 --window-loss every --steps 1 "
                      "--lr 0.001 --device cpu --out '%s'", a, b);
    CHECK(s1 == 0 && s2 == 0, "train, then train --from it, exit 0 (%d %d): %s", s1, s2, err);
    CHECK(strstr(err, "starting from the circuit of") != NULL, "--from says where it starts: %s", err);
    ca_model ma, mb, fresh;
    ca_train_state state;
    if (ca_file_load(a, &ma, NULL, NULL) || ca_file_load(b, &mb, &state, NULL)) {
        CHECK(0, "--from: load: %s", err_message());
        return;
    }
    const ca_config *c = &mb.config;
    CHECK(c->seed == 9 && c->pool == 4 && c->window == 2 && c->train_steps == 1 && c->height == 8 && c->steps == 4 &&
              strcmp(c->preset, "checkerboard") == 0 && state.step == 1,
          "--from: the old config under the flags, one step from 0 (seed %llu, pool %d, window %d, %llu steps done)",
          (unsigned long long)c->seed, c->pool, c->window, (unsigned long long)state.step);
    CHECK(same_wiring(&ma, &mb), "--from: the new file has the old one's wiring");
    int fresh_made = ca_model_init(&fresh, c) == DLCA_OK;
    CHECK(fresh_made && !same_wiring(&fresh, &mb), "--from: a fresh model of seed 9 is wired otherwise (so the check "
                                                    "above can fail)");
    double worst = 0.0, moved = 0.0, fresh_far = 0.0;
    for (size_t i = 0; mb.gate_count == ma.gate_count && i < ma.gate_count * 16; i++) {
        double bound = 0.001 * (1.0 + 1e-2 * fabs(ma.logits[i])) + 1e-6, step = fabs(mb.logits[i] - ma.logits[i]);
        if (step / bound > worst) worst = step / bound;
        if (step > moved) moved = step;
        double far = fresh_made ? fabs(fresh.logits[i] - ma.logits[i]) : 0.0;
        if (far > fresh_far) fresh_far = far;
    }
    CHECK(mb.gate_count == ma.gate_count && worst <= 1.0 && moved > 0.0,
          "--from: every logit one step of lr 0.001 from the old file's (worst %.3f of the bound, largest move %g)",
          worst, moved);
    CHECK(fresh_far > 0.01, "--from: a fresh start's logits are up to %g from the old file's (so the check above can "
          "fail)", fresh_far);
    if (fresh_made) ca_model_free(&fresh);
    ca_model_free(&ma), ca_model_free(&mb), ca_train_state_free(&state);
    snprintf(args, sizeof args, "train --from '%s' --update 128x10,64,32,16,8,8 --device cpu --out '%s/x.dlca'", a,
             scratch);
    expect_refused("keeps the network", "x.dlca", args);
    snprintf(args, sizeof args, "train --from '%s' --preset gol --device cpu --out '%s/x.dlca'", a, scratch);
    expect_refused("give one preset", "x.dlca", args);
    snprintf(args, sizeof args, "train --from '%s' --population 2 --out '%s/x.dlca'", a, scratch);
    expect_refused("--population", "x.dlca", args);
    snprintf(args, sizeof args, "train --from '%s' --resume '%s'", a, a);
    expect_refused("give one", NULL, args);
    snprintf(args, sizeof args, "train --from '%s/missing.dlca' --out '%s/x.dlca'", scratch, scratch);
    expect_refused("missing.dlca", "x.dlca", args);
    /* the log would replace the model trained on: refused before anything is written */
    snprintf(args, sizeof args, "train --from '%s' --log '%s' --device cpu --out '%s/x.dlca'", a, a, scratch);
    expect_refused("same file", "x.dlca", args);
    ca_model still;
    CHECK(ca_file_load(a, &still, NULL, NULL) == DLCA_OK, "--from's file is left a model: %s", err_message());
    ca_model_free(&still);
    /* A picture: the file's goes with its grid; --target gives one for another grid. */
    snprintf(a, sizeof a, "%s/from-image.dlca", scratch);
    s1 = run_dlca(err, sizeof err, "train --preset image --T 2 --steps 1 --device cpu --no-stop-exact --out '%s'", a);
    CHECK(s1 == 0, "an image model to start from: %s", err);
    snprintf(args, sizeof args, "train --from '%s' --grid 18x18 --steps 1 --device cpu --out '%s/x.dlca'", a, scratch);
    expect_refused("give --target", "x.dlca", args);
    s2 = run_dlca(err, sizeof err, "train --from '%s' --grid 18x18 --target '%s/image16.png' --steps 1 --device cpu "
                  "--no-stop-exact --out '%s/from-image18.dlca'", a, DLCA_ASSET_DIR, scratch);
    CHECK(s2 == 0, "--from with --grid and --target trains: %s", err);
}

int main(int argc, char **argv)
{
    char self[900];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(dlca, sizeof dlca, "%s/dlca", dirname(self));
    snprintf(scratch, sizeof scratch, "/tmp/dlca_cli_XXXXXX");
    if (!mkdtemp(scratch)) return fprintf(stderr, "cannot make a scratch folder\n"), 1;
    (void)argc;
    test_gol_to_zero();
    test_resume("gol", "", "");
    test_resume("checkerboard-async", "--grid 6x6 --T 4", "");
    /* A pool's grids are in the checkpoint (flag 3): the resumed rounds start from the same pool.
     * --keep-final: the file at step 6 is that step's state, not a best circuit's (whose pool is
     * not kept). */
    test_resume("checkerboard", "--grid 8x8 --T 4 --pool 4 --window 2 --window-loss every --damage 1 --keep-final",
                "--keep-final");
    test_best_carried();
    test_cpu_matches_vulkan();
    test_bad_input();
    test_from();
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    if (!getenv("DLCA_TEST_KEEP") && system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch);
    return test_finish("test_cli_train");
}
