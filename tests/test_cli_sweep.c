/* test_cli_sweep: `dlca sweep` on the CPU with a small gol network, seeds 1-6 for 1500 steps:
 * the summary (exact/S, medians, exact seeds), the JSON and the Markdown row agree with the
 * per-seed CSV; every seed's single `dlca train` stops at the sweep's exact step (or trains to
 * the budget, ending with the sweep's losses), and an exact one writes a circuit that passes the
 * exact check, the one the sweep kept (--keep-exact); --keep-members keeps every seed's circuit,
 * exact or not, the one dlca train writes. Then the stop of a population: of three members the
 * first verified exact is the one written, at its exact step, and the others stop there too; with
 * --tries, a try follows one without an exact member and none follows one with. Bad calls are
 * refused. */
#include "ca_exact.h"
#include "cli_fixtures.h"
#include "mini_json.h"

#include <math.h>

enum { SEEDS = 6, BUDGET = 1500 };

static const char *config = "--preset gol --update 64x6,32,16,8,4,2,1 --lr 0.1 --device cpu";

typedef struct {
    long seed, exact_step; /* 0: never */
    double soft, hard, best;
    int repaired;
} seed_row;

/* A sweep's CSV; the row count. */
static int read_rows(const char *name, seed_row *rows)
{
    char text[8192], preset[64], step[32];
    if (fixture_read(name, text, sizeof text) < 0) return -1;
    int n = 0;
    char *line = strtok(text, "\n");
    CHECK(line && strcmp(line, "preset,seed,exact_step,final_soft,final_hard,best_hard,repaired") == 0,
          "the CSV's header");
    for (line = strtok(NULL, "\n"); line && n < SEEDS + 1; line = strtok(NULL, "\n")) {
        seed_row *r = &rows[n];
        /* exact_step may be empty: read it as text */
        char *fields[7];
        int k = 0;
        for (char *p = line, *f = line; k < 7; p++)
            if (*p == ',' || *p == '\0') {
                int end = *p == '\0';
                *p = '\0', fields[k++] = f, f = p + 1;
                if (end) break;
            }
        if (k != 7) return -1;
        snprintf(preset, sizeof preset, "%s", fields[0]);
        snprintf(step, sizeof step, "%s", fields[2]);
        r->seed = strtol(fields[1], NULL, 10), r->exact_step = step[0] ? strtol(step, NULL, 10) : 0;
        r->soft = strtod(fields[3], NULL), r->hard = strtod(fields[4], NULL), r->best = strtod(fields[5], NULL);
        r->repaired = (int)strtol(fields[6], NULL, 10);
        CHECK(strcmp(preset, "gol") == 0, "row %d is gol's", n);
        n++;
    }
    return n;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* The summary line, the Markdown row and the JSON against the rows. */
static void check_summary(const seed_row *rows, int n)
{
    double exact[SEEDS], all[SEEDS];
    int count = 0;
    char seeds[128] = "", text[8192];
    for (int i = 0; i < n; i++) {
        all[i] = rows[i].exact_step ? (double)rows[i].exact_step : INFINITY;
        if (!rows[i].exact_step) continue;
        exact[count++] = (double)rows[i].exact_step;
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%ld", count > 1 ? " " : "", rows[i].seed);
    }
    CHECK(count > 0, "some seed reaches an exact circuit in %d steps (else this test checks too little)", BUDGET);
    double m_exact = count ? median(exact, count) : NAN, m_all = median(all, n);
    char want_exact[32], want_all[32], ratio[32];
    snprintf(want_exact, sizeof want_exact, "%g", m_exact);
    snprintf(want_all, sizeof want_all, isinf(m_all) ? "never" : "%g", m_all);
    snprintf(ratio, sizeof ratio, "%d/%d", count, n);
    CHECK(fixture_read("out.txt", text, sizeof text) > 0, "the summary is on stdout");
    char *line = strstr(text, "\ngol ");
    char got_ratio[32], got_exact[32], got_all[32], got_seeds[128] = "";
    double wall;
    char per[32];
    int fields = line ? sscanf(line + 1, "gol %31s %31s %31s %lf %31s %127[^\n]", got_ratio, got_exact, got_all, &wall,
                               per, got_seeds)
                      : 0;
    CHECK(fields == 6, "the summary line has its columns (%d)", fields);
    if (fields == 6) {
        CHECK(strcmp(got_ratio, ratio) == 0, "exact/S: %s, the CSV says %s", got_ratio, ratio);
        CHECK(strcmp(got_exact, want_exact) == 0, "median steps to exact: %s, the CSV says %s", got_exact, want_exact);
        CHECK(strcmp(got_all, want_all) == 0, "median steps over all: %s, the CSV says %s", got_all, want_all);
        CHECK(strcmp(got_seeds, seeds) == 0, "exact seeds: '%s', the CSV says '%s'", got_seeds, seeds);
        CHECK(count > 0 && fabs(strtod(per, NULL) - wall / count) <= 0.01 * wall / count + 0.01,
              "wall s per exact %s is the wall %g over %d", per, wall, count);
    }
    char row[256];
    snprintf(row, sizeof row, "| gol | --update 64x6,32,16,8,4,2,1 --lr 0.1 --steps %d | %s | %s |", BUDGET, ratio,
             want_exact);
    CHECK(strstr(text, row) != NULL, "the Markdown row starts '%s'", row);
    CHECK(strstr(text, "| cpu | abc123 |") != NULL, "and ends with the device and the commit");
    int written = fixture_read("sweep.json", text, sizeof text) > 0;
    CHECK(written && mj_valid(text), "the JSON is written and valid");
    if (!written) return;
    CHECK(mj_number_at(text, "presets.0.exact") == count && mj_number_at(text, "presets.0.runs") == n,
          "the JSON's exact and runs");
    CHECK(mj_number_at(text, "presets.0.median_steps_to_exact") == m_exact, "the JSON's median steps to exact");
    for (int i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "presets.0.runs_by_seed.%d.exact_step", i);
        if (rows[i].exact_step) CHECK(mj_number_at(text, path) == rows[i].exact_step, "the JSON's exact step of seed %ld", rows[i].seed);
        else CHECK(mj_is(text, path, "null"), "the JSON's exact step of seed %ld is null", rows[i].seed);
        /* 'inexact' counts refused circuits; 'first_inexact' names why the first was, null when none */
        char count_path[80], why_path[80];
        snprintf(count_path, sizeof count_path, "presets.0.runs_by_seed.%d.inexact", i);
        snprintf(why_path, sizeof why_path, "presets.0.runs_by_seed.%d.first_inexact", i);
        double refused = mj_number_at(text, count_path);
        CHECK(refused >= 0.0 && (refused == 0.0) == mj_is(text, why_path, "null"), "seed %ld: inexact %g with a reason "
              "exactly when it is above 0", rows[i].seed, refused);
        /* gol trains for no persistence: no run's best has a shortfall */
        snprintf(path, sizeof path, "presets.0.runs_by_seed.%d.best_shortfall", i);
        CHECK(mj_number_at(text, path) == 0.0, "seed %ld: best_shortfall 0 without persistence training", rows[i].seed);
    }
}

/* The same sweep with --repair: training is the same (the same exact steps), and of the seeds it
 * left inexact some are made exact by the search (on this small network a few gates from right:
 * at least one, else this checks too little); those count as exact at the budget, are marked 'r',
 * and their kept circuits pass the exact check. Then dlca train --tries on the first repaired
 * seed: its population of one is repaired, written, and no further try runs. */
static void check_repair(const seed_row *plain, int n)
{
    char err[8192], text[16384];
    int status = fixture_run(err, sizeof err, "sweep %s --seeds 1-%d --steps %d --every 500 --csv repair.csv "
                             "--json repair.json --markdown --repair 30 --keep-exact kept-repair", config, SEEDS, BUDGET);
    CHECK(status == 0, "the sweep with --repair exits 0: %s", err);
    seed_row rows[SEEDS + 1];
    CHECK(read_rows("repair.csv", rows) == n, "its CSV has a row per seed");
    int exact = 0, repaired = 0, first_repaired = -1;
    char seeds[128] = "";
    for (int i = 0; i < n; i++) {
        CHECK(rows[i].exact_step == plain[i].exact_step, "seed %ld: the same exact step (%ld, %ld)", rows[i].seed,
              rows[i].exact_step, plain[i].exact_step);
        CHECK(!rows[i].repaired || !rows[i].exact_step, "seed %ld: only a seed training left inexact is repaired",
              rows[i].seed);
        if (!rows[i].exact_step && !rows[i].repaired) continue;
        exact++, repaired += rows[i].repaired;
        if (rows[i].repaired && first_repaired < 0) first_repaired = i;
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%ld%s", exact > 1 ? " " : "", rows[i].seed,
                 rows[i].repaired ? "r" : "");
        char path[600];
        snprintf(path, sizeof path, "%s/kept-repair/gol-seed%ld.dlca", fixture_scratch, rows[i].seed);
        ca_model m;
        ca_train_state state;
        if (ca_file_load(path, &m, &state, NULL) == DLCA_OK) {
            ca_exact_result e;
            CHECK(ca_exact_check(&m, NULL, &e) == DLCA_OK && e.exact, "seed %ld: the kept circuit is exact", rows[i].seed);
            CHECK((state.moment1 == NULL) == rows[i].repaired, "seed %ld: training state kept unless repaired",
                  rows[i].seed);
            ca_train_state_free(&state);
            ca_model_free(&m);
        } else {
            CHECK(0, "seed %ld: %s", rows[i].seed, err_message());
        }
    }
    CHECK(repaired > 0, "the search repairs some seed training left inexact");
    CHECK(fixture_read("out.txt", text, sizeof text) > 0, "the summary is on stdout");
    char ratio[64];
    snprintf(ratio, sizeof ratio, "%d/%d", exact, n);
    char *line = strstr(text, "\ngol ");
    CHECK(line && strstr(line, ratio) && strstr(line, seeds), "the summary counts %s, seeds %s: %.200s", ratio, seeds,
          line ? line + 1 : "(none)");
    CHECK(strstr(text, "--lr 0.1 --steps 1500 --repair 30 |") != NULL, "the Markdown method names --repair");
    CHECK(fixture_read("repair.json", text, sizeof text) > 0 && mj_number_at(text, "presets.0.exact") == exact &&
              mj_number_at(text, "presets.0.repaired") == repaired,
          "the JSON's exact and repaired");
    /* what each seed's search took: none for a seed training made exact, some tries for the others */
    for (int i = 0; i < n; i++) {
        char path[128];
        snprintf(path, sizeof path, "presets.0.runs_by_seed.%d.repair_tries", i);
        double tries = mj_number_at(text, path);
        snprintf(path, sizeof path, "presets.0.runs_by_seed.%d.repair_seconds", i);
        double seconds = mj_number_at(text, path);
        CHECK(rows[i].exact_step ? tries == 0.0 && seconds == 0.0 : tries >= 1.0 && seconds > 0.0,
              "seed %ld: its search's tries %g and seconds %g in the JSON (exact by training at %ld)", rows[i].seed,
              tries, seconds, rows[i].exact_step);
    }
    if (first_repaired < 0) return;
    /* The same search as the sweep's, which stops once exact (seed 4: ~22 s of one core, past
     * several minima): room to 120 s, so a loaded machine (ctest -j) still finds it. */
    status = fixture_run(err, sizeof err, "train %s --steps %d --every 500 --seed %ld --population 1 --tries 2 "
                         "--repair 120 --out pop-repair.dlca", config, BUDGET, rows[first_repaired].seed);
    CHECK(status == 0 && strstr(err, "verified exact by changing") && strstr(err, "repaired)"),
          "train --tries repairs seed %ld: %s", rows[first_repaired].seed, err);
    CHECK(strstr(err, "try 2/2") == NULL, "no second try after the repair");
    CHECK(fixture_read("out.txt", text, sizeof text) > 0 && strstr(text, "repaired"), "the table marks it repaired");
}

/* Each seed alone: dlca train stops where the sweep's member stopped, with the same losses. */
static void check_single_runs(const seed_row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        const seed_row *r = &rows[i];
        char err[4096], name[64];
        int status = fixture_run(err, sizeof err, "train %s --steps %d --every 500 --seed %ld --out s%ld.dlca", config,
                                 BUDGET, r->seed, r->seed);
        CHECK(status == 0, "seed %ld alone: %s", r->seed, err);
        double log[16][3];
        snprintf(name, sizeof name, "s%ld.csv", r->seed);
        int rows_read = fixture_log(name, log, 16);
        if (rows_read < 1) {
            CHECK(0, "seed %ld: its log", r->seed);
            continue;
        }
        const double *last = log[rows_read - 1];
        long stop = r->exact_step ? r->exact_step : BUDGET;
        CHECK(last[0] == stop, "seed %ld stops at step %ld, as in the sweep (%g)", r->seed, stop, last[0]);
        CHECK(last[1] == r->soft && last[2] == r->hard,
              "seed %ld: its last soft and hard loss are the sweep's (%.9g %g, %.9g %g)", r->seed, last[1], last[2],
              r->soft, r->hard);
        /* --keep-exact kept the exact seeds' circuits, the same run dlca train writes, and no other */
        char kept[64], path[512];
        snprintf(kept, sizeof kept, "kept/gol-seed%ld.dlca", r->seed);
        snprintf(path, sizeof path, "%s/%s", fixture_scratch, kept);
        snprintf(name, sizeof name, "s%ld.dlca", r->seed);
        if (r->exact_step)
            CHECK(fixture_same_run(kept, name), "seed %ld: the sweep kept %s, the run dlca train wrote", r->seed, kept);
        else
            CHECK(access(path, F_OK) != 0, "seed %ld, never exact, has no kept circuit", r->seed);
        /* --keep-members kept every seed's circuit, exact or not, as dlca train writes it */
        snprintf(kept, sizeof kept, "members/gol-seed%ld.dlca", r->seed);
        CHECK(fixture_same_run(kept, name), "seed %ld: --keep-members kept %s, the run dlca train wrote", r->seed,
              kept);
        if (!r->exact_step) continue;
        ca_model model;
        ca_train_state state;
        snprintf(name, sizeof name, "s%ld.dlca", r->seed);
        if (fixture_model(name, &model, &state)) continue;
        ca_exact_result exact;
        CHECK(ca_exact_check(&model, NULL, &exact) == DLCA_OK && exact.exact, "seed %ld writes an exact circuit: %s",
              r->seed, exact.why);
        CHECK(state.step == (uint64_t)r->exact_step - 1 && state.best.exact_step == (uint64_t)r->exact_step,
              "seed %ld: the file holds the state before step %ld's update (%llu steps done)", r->seed, r->exact_step,
              (unsigned long long)state.step);
        ca_model_free(&model), ca_train_state_free(&state);
    }
}

/* The population around the earliest exact seed stops at the first exact step of its members
 * and writes that member. */
static void check_population_stop(const seed_row *rows, int n)
{
    int first = -1;
    for (int i = 0; i < n; i++)
        if (rows[i].exact_step && (first < 0 || rows[i].exact_step < rows[first].exact_step)) first = i;
    if (first < 0) return;
    int lo = first > 0 ? first - 1 : first, hi = lo + 3 <= n ? lo + 3 : n, winner = -1;
    for (int i = lo; i < hi; i++)
        if (rows[i].exact_step && (winner < 0 || rows[i].exact_step < rows[winner].exact_step)) winner = i;
    char err[4096], text[4096], single[64];
    int status = fixture_run(err, sizeof err, "train %s --steps %d --every 500 --seed %ld --population %d --out pop.dlca",
                             config, BUDGET, rows[lo].seed, hi - lo);
    CHECK(status == 0, "the population of seeds %ld..%ld: %s", rows[lo].seed, rows[hi - 1].seed, err);
    snprintf(single, sizeof single, "s%ld.dlca", rows[winner].seed);
    CHECK(fixture_same_run("pop.dlca", single), "--out is seed %ld's exact circuit, as its own run wrote it",
          rows[winner].seed);
    CHECK(fixture_read("out.txt", text, sizeof text) > 0, "the table");
    char want[128];
    snprintf(want, sizeof want, "*   %-8ld", rows[winner].seed);
    CHECK(strstr(text, want) != NULL, "the table marks seed %ld: %s", rows[winner].seed, text);
    int stopped = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        long seed, steps;
        double soft, hard;
        if (sscanf(line + 3, "%ld %lf %lf %ld", &seed, &soft, &hard, &steps) == 4)
            stopped += steps == rows[winner].exact_step;
    }
    CHECK(stopped == hi - lo, "every member stopped at step %ld (%d of %d)", rows[winner].exact_step, stopped, hi - lo);
    double log[16][3];
    int count = fixture_log("pop.csv", log, 16);
    CHECK(count > 0 && log[count - 1][0] == rows[winner].exact_step && log[count - 1][2] == 0.0,
          "--out's log ends at its exact step with a hard loss of 0");
}

/* --tries: a try without an exact member is followed by the next seeds' try, which stops at its
 * exact member: a seed that is exact after one that is not, as populations of one. */
static void check_tries(const seed_row *rows, int n)
{
    int e = -1;
    for (int i = 1; i < n && e < 0; i++)
        if (rows[i].exact_step && !rows[i - 1].exact_step) e = i;
    CHECK(e > 0, "the sweep has an exact seed after one that is not (else this test cannot run)");
    if (e <= 0) return;
    char err[4096], single[64];
    int status = fixture_run(err, sizeof err, "train %s --steps %d --every 500 --seed %ld --population 1 --tries 3 "
                             "--out tries.dlca", config, BUDGET, rows[e - 1].seed);
    CHECK(status == 0, "tries from seed %ld: %s", rows[e - 1].seed, err);
    CHECK(strstr(err, "try 2/3") && !strstr(err, "try 3/3"), "seed %ld's try follows, the third does not: %s",
          rows[e].seed, err);
    snprintf(single, sizeof single, "s%ld.dlca", rows[e].seed);
    CHECK(fixture_same_run("tries.dlca", single), "--out is seed %ld's exact circuit, as its own run wrote it",
          rows[e].seed);
}

static void test_refused(void)
{
    fixture_refused("--seeds", "sweep --preset gol --seeds 5-2");
    fixture_refused("--seeds", "sweep --preset gol");
    fixture_refused("--preset", "sweep --seeds 1-2");
    fixture_refused("glider", "sweep --preset gol,glider --seeds 1-2");
    fixture_refused("--seed", "sweep --preset gol --seeds 1-2 --seed 3");
    fixture_refused("--lr", "sweep --preset gol --seeds 1-2 --lr fast");
    fixture_refused("population of 2", "sweep --preset gol --seeds 1-2 --device cpu --max-memory 0.001");
    /* a kept circuit is never replaced: refused before training, as is a folder that is a file */
    int exists = 0;
    for (int s = 1; s <= SEEDS; s++) {
        char path[512];
        snprintf(path, sizeof path, "%s/kept/gol-seed%d.dlca", fixture_scratch, s);
        exists |= access(path, F_OK) == 0;
    }
    if (exists) fixture_refused("exists", "sweep --preset gol --seeds 1-6 --steps 10 --device cpu --keep-exact kept");
    fixture_refused("not a folder", "sweep --preset gol --seeds 1-2 --device cpu --keep-exact sweep.csv");
    fixture_refused("--keep-members", "sweep --preset gol --seeds 1-2 --device cpu --keep-members sweep.csv");
}

/* A lizard picture within 2 cells of its periodic grid's edge is noted once, naming the preset. */
static void test_border_note(void)
{
    char err[4096];
    int status = fixture_run(err, sizeof err, "sweep --preset lizard --grid 20x20 --channels 8 --kernels 2 "
                             "--update 64,32,16,8 --seeds 1-1 --steps 1 --device cpu");
    const char *note = strstr(err, "note: lizard: the picture reaches the 20x20 grid's edge");
    CHECK(status == 0 && note && !strstr(note + 1, "note:"), "one note for the 20x20 lizard (%d): %s", status, err);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (fixture_begin(argv[0], "sweep")) return 1;
    char err[4096];
    int status = fixture_run(err, sizeof err, "sweep %s --seeds 1-%d --steps %d --every 500 --csv sweep.csv "
                             "--json sweep.json --markdown --commit abc123 --keep-exact kept --keep-members members",
                             config, SEEDS, BUDGET);
    CHECK(status == 0, "the sweep exits 0: %s", err);
    seed_row rows[SEEDS + 1];
    int n = read_rows("sweep.csv", rows);
    CHECK(n == SEEDS, "one CSV row per seed (%d)", n);
    int repaired = 0;
    for (int i = 0; i < n; i++) repaired += rows[i].repaired;
    CHECK(repaired == 0, "without --repair no seed is repaired");
    if (n == SEEDS) {
        check_summary(rows, n);
        check_single_runs(rows, n);
        check_population_stop(rows, n);
        check_tries(rows, n);
        check_repair(rows, n);
    }
    test_refused();
    test_border_note();
    fixture_end();
    return test_finish("test_cli_sweep");
}
