/* test_cli_population: `dlca train --population 3 --seed 5` is the three runs of seeds 5, 6 and 7:
 * on the CPU each member's log and model file (logits, moments, steps done) equal its single
 * run's bit for bit; on Vulkan (every member in one submission a step) its losses are the CPU
 * single runs' within the CPU-vs-Vulkan test's 1e-3, and the single Vulkan run's within 1e-6.
 * --out is the member the table marks. --tries trains populations of the next seeds in turn, and
 * --out is the best of them all. Bad calls are refused in one line. The default run of each
 * preset, and the cores it counts. */
#define _GNU_SOURCE /* sched_setaffinity */
#include "ca_fast_pool.h"
#include "cli_fixtures.h"
#include "cmd_population.h"
#include "vk_test.h"

#include <sched.h>

enum { MEMBERS = 3, FIRST_SEED = 5, STEPS = 8 };

static const char *config = "--preset checkerboard --grid 8x8 --T 6 --steps 8 --every 1";

/* The member rows of the table on stdout (out.txt), marked or not, and into *marked the seed it
 * marks with '*' (-1: none); -1 when out.txt is missing. */
static int table_rows(long *marked)
{
    char text[8192];
    int rows = 0;
    *marked = -1;
    if (fixture_read("out.txt", text, sizeof text) < 0) return -1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        long seed;
        if (sscanf(line, " * %ld", &seed) == 1) *marked = seed, rows++;
        else rows += sscanf(line, " %ld", &seed) == 1;
    }
    return rows;
}

static long marked_seed(void)
{
    long marked;
    table_rows(&marked);
    return marked;
}

static int member_rows(void)
{
    long marked;
    return table_rows(&marked);
}

static void single_runs(void)
{
    for (int i = 0; i < MEMBERS; i++) {
        char err[4096];
        int status = fixture_run(err, sizeof err, "train %s --seed %d --device cpu --out single%d.dlca", config,
                                 FIRST_SEED + i, FIRST_SEED + i);
        CHECK(status == 0, "single run of seed %d: %s", FIRST_SEED + i, err);
    }
}

static void test_cpu(void)
{
    char err[4096], name[128], single[128];
    int status = fixture_run(err, sizeof err, "train %s --seed %d --population %d --device cpu --keep-members cpu "
                             "--out pop.dlca", config, FIRST_SEED, MEMBERS);
    CHECK(status == 0, "a CPU population of %d: %s", MEMBERS, err);
    for (int i = 0; i < MEMBERS; i++) {
        int seed = FIRST_SEED + i;
        double a[16][3], b[16][3];
        snprintf(name, sizeof name, "cpu/checkerboard-seed%d.csv", seed);
        snprintf(single, sizeof single, "single%d.csv", seed);
        int n = fixture_log(name, a, 16), m = fixture_log(single, b, 16);
        CHECK(n == STEPS && m == STEPS && memcmp(a, b, sizeof a[0] * STEPS) == 0,
              "seed %d: the member's log is its single run's, bit for bit (%d and %d rows)", seed, n, m);
        snprintf(name, sizeof name, "cpu/checkerboard-seed%d.dlca", seed);
        snprintf(single, sizeof single, "single%d.dlca", seed);
        CHECK(fixture_same_run(name, single), "seed %d: the member's model file holds its single run's logits, "
              "moments and steps", seed);
    }
    long best = marked_seed();
    CHECK(best >= FIRST_SEED && best < FIRST_SEED + MEMBERS, "the table marks the member written as --out (%ld)", best);
    snprintf(single, sizeof single, "single%ld.dlca", best);
    CHECK(fixture_same_run("pop.dlca", single), "--out is the marked member, seed %ld", best);
    double rows[16][3];
    CHECK(fixture_log("pop.csv", rows, 16) == STEPS, "--out's log is beside it");
    CHECK(fixture_exists("pop-loss.png") && fixture_exists("cpu/checkerboard-seed5-loss.png"), "and the loss plots");
}

static void test_vulkan(void)
{
    vk_context vk;
    if (test_vk_context_init(&vk, -1) != DLCA_OK) {
        CHECK(getenv("DLCA_REQUIRE_VULKAN") == NULL, "no Vulkan device: %s", err_message());
        return;
    }
    int index = vk.device_index;
    vk_context_free(&vk);
    char err[32768], name[128], single[128];
    int status = fixture_run(err, sizeof err, "train %s --seed %d --population %d --device %d --keep-members gpu "
                             "--out gpop.dlca", config, FIRST_SEED, MEMBERS, index);
    CHECK(status == 0, "a Vulkan population of %d: %s", MEMBERS, err);
    status = fixture_run(err, sizeof err, "train %s --seed %d --device %d --population 1 --out gpu%d.dlca", config, FIRST_SEED + 1,
                         index, FIRST_SEED + 1);
    CHECK(status == 0, "a single Vulkan run: %s", err);
    for (int i = 0; i < MEMBERS; i++) {
        int seed = FIRST_SEED + i;
        double gpu[16][3], cpu[16][3];
        snprintf(name, sizeof name, "gpu/checkerboard-seed%d.csv", seed);
        snprintf(single, sizeof single, "single%d.csv", seed);
        int n = fixture_log(name, gpu, 16), m = fixture_log(single, cpu, 16);
        CHECK(n == STEPS && m == STEPS, "seed %d: %d and %d rows", seed, n, m);
        for (int k = 0; k < n && k < m; k++) {
            CHECK_CLOSE(gpu[k][1], cpu[k][1], 0.0, 1e-3, "seed %d: soft loss at step %g", seed, cpu[k][0]);
            CHECK_CLOSE(gpu[k][2], cpu[k][2], 0.0, 1e-3, "seed %d: hard loss at step %g", seed, cpu[k][0]);
        }
    }
    /* The same kernels in the same order as the member's own run: equal but for a persistent
     * kernel giving up on a busy GPU (then float rounding). */
    double member[16][3], alone[16][3];
    snprintf(name, sizeof name, "gpu/checkerboard-seed%d.csv", FIRST_SEED + 1);
    snprintf(single, sizeof single, "gpu%d.csv", FIRST_SEED + 1);
    int n = fixture_log(name, member, 16), m = fixture_log(single, alone, 16);
    CHECK(n == STEPS && m == STEPS, "the middle member and its single Vulkan run: %d and %d rows", n, m);
    for (int k = 0; k < n && k < m; k++) {
        CHECK_CLOSE(member[k][1], alone[k][1], 0.0, 1e-6, "seed %d alone on Vulkan: soft loss at step %g",
                    FIRST_SEED + 1, alone[k][0]);
        CHECK(member[k][2] == alone[k][2], "seed %d alone on Vulkan: hard loss at step %g", FIRST_SEED + 1, alone[k][0]);
    }
    /* Without --population a GPU trains up to sixteen checkerboard seeds, two at a time, and says
     * so: in one step none is exact, so all eight tries run unless a search repairs a member. The
     * per-layer kernels, which every seed shares, keep lavapipe from compiling sixteen seeds' fused
     * ones. */
    setenv("DLCA_FUSED", "0", 1);
    status = fixture_run(err, sizeof err, "train %s --steps 1 --seed 40 --device %d --out gdefault.dlca", config, index);
    unsetenv("DLCA_FUSED");
    CHECK(status == 0 && strstr(err, "up to 16 seeds, 2 side by side at a time until one is verified exact, the "
                                "default on a GPU") && strstr(err, "seeds 40 to 41, try 1/8"),
          "the checkerboard's GPU default is 8 tries of 2, said on stderr: %s", err);
    /* One search at a time runs while the next tries train (the first try's always), a try that
     * ends while one runs goes unsearched, and the last try's search runs alone after it. */
    int beside = 0, searches = 0, unsearched = 0;
    for (const char *p = err; (p = strstr(p, "repairing ")); p++) searches++;
    for (const char *p = err; (p = strstr(p, ", while the next population trains")); p++) beside++;
    const char *last = NULL;
    for (const char *p = err; (p = strstr(p, "not searching seeds ")); p++) unsearched++;
    for (const char *p = err; (p = strstr(p, "repairing ")); p++) last = p;
    const char *end = last ? strchr(last, '\n') : NULL;
    int last_alone = last && end && !memmem(last, (size_t)(end - last), ", while", 7);
    /* A search may repair a one-step circuit (the search is time-bounded, so whether it does in
     * time depends on the machine): then the training beside it stops and that circuit is written. */
    if (strstr(err, "verified exact by changing"))
        CHECK(beside >= 1 && searches + unsearched <= 8 && strstr(err, ", repaired), ") && member_rows() >= 2 &&
                  member_rows() <= 16 && member_rows() % 2 == 0,
              "a repaired member is written and ends the tries (%d beside, %d searches, %d unsearched, %d rows): %s",
              beside, searches, unsearched, member_rows(), err);
    else
        CHECK(strstr(err, "seeds 54 to 55, try 8/8") && member_rows() == 16 && marked_seed() >= 40 &&
                  marked_seed() < 56 && beside >= 1 && searches == beside + 1 && searches + unsearched == 8 &&
                  last_alone,
              "all 8 tries, 16 rows; tries 1-7 searched beside the next training or said unsearched, the 8th's "
              "search alone, last (%d rows, marked %ld; %d beside, %d searches, %d unsearched): %s",
              member_rows(), marked_seed(), beside, searches, unsearched, err);
}

/* --tries 3 of 2 members, none exact in 8 steps: three populations in turn, seeds 5 to 10, the
 * table lists all six, --out is the best of all (the marked one's own file), and the members of
 * later tries are their single runs too. */
static void test_tries(void)
{
    char err[4096], name[128], single[128];
    int status = fixture_run(err, sizeof err, "train %s --seed %d --population 2 --tries 3 --device cpu --keep-members "
                             "tries --out tries.dlca", config, FIRST_SEED);
    CHECK(status == 0, "three tries of two: %s", err);
    CHECK(strstr(err, "seeds 5 to 6, try 1/3") && strstr(err, "seeds 7 to 8, try 2/3") &&
              strstr(err, "seeds 9 to 10, try 3/3"),
          "each try says its seeds: %s", err);
    long best = marked_seed();
    CHECK(member_rows() == 6 && best >= FIRST_SEED && best < FIRST_SEED + 6, "the table lists the 6 members of the 3 "
          "tries and marks one (%d rows, marked %ld)", member_rows(), best);
    snprintf(name, sizeof name, "tries/checkerboard-seed%ld.dlca", best);
    CHECK(fixture_same_run("tries.dlca", name), "--out is the marked member, seed %ld, of whichever try", best);
    for (int seed = FIRST_SEED + 2; seed < FIRST_SEED + MEMBERS; seed++) {
        double a[16][3], b[16][3];
        snprintf(name, sizeof name, "tries/checkerboard-seed%d.csv", seed);
        snprintf(single, sizeof single, "single%d.csv", seed);
        int n = fixture_log(name, a, 16), m = fixture_log(single, b, 16);
        /* the wall seconds differ; the losses are the single run's */
        int same = n == STEPS && m == STEPS;
        for (int k = 0; same && k < n; k++) same = a[k][0] == b[k][0] && a[k][1] == b[k][1] && a[k][2] == b[k][2];
        CHECK(same, "seed %d, trained in the second try: its single run's losses (%d and %d rows)", seed, n, m);
    }
    CHECK(fixture_exists("tries/checkerboard-seed10.dlca") && !fixture_exists("tries/checkerboard-seed11.dlca"),
          "every try's members are kept, and no more");
}

/* --repair-members 1: of two inexact members only the better-ranked one is searched. */
static void test_repair_members(void)
{
    char err[8192];
    int status = fixture_run(err, sizeof err, "train %s --seed 5 --population 2 --device cpu --repair 0.2 "
                             "--repair-members 1 --out members.dlca", config);
    int searched = 0;
    for (const char *p = err; (p = strstr(p, "repair: seed ")); p++) searched++;
    CHECK(status == 0 && strstr(err, "repairing the best 1 of 2 inexact members") && searched == 1,
          "one of the two members searched (%d lines): %s", searched, err);
}

/* The default on the CPU engine is the single run: no note, no table. */
static void test_cpu_default(void)
{
    char err[4096];
    int status = fixture_run(err, sizeof err, "train %s --steps 1 --device cpu --out cdefault.dlca", config);
    CHECK(status == 0 && !strstr(err, "side by side") && member_rows() == 0, "the CPU default is one run (%d rows): %s",
          member_rows(), err);
}

/* Without flags a GPU run tries 2 seeds at a time, up to 16, and searches 5 s a member with the
 * cores shared; the lizard up to 32 seeds, 50 s on every core for one member a population (so also
 * with its network changed). "Every core" is those this process may run on: pinned to one, one
 * thread. */
static void test_default_run(void)
{
    static const char *const shared[] = {"gol", "checkerboard", "checkerboard-async", "image"};
    ca_config c;
    for (int i = 0; i < 4; i++) {
        ca_config_preset(&c, shared[i]);
        c.channels = 4;
        cmd_default_run d = cmd_population_default_run(&c);
        CHECK(d.population == 2 && d.tries == 8 && d.repair == 5.0 && d.repair_threads == 0 && d.repair_members == 0,
              "%s (also with its network changed): 2 x 8 seeds, 5 s searches sharing the cores (%d x %d, %g s, %d "
              "threads)", shared[i], d.population, d.tries, d.repair, d.repair_threads);
    }
    ca_config_preset(&c, "lizard");
    c.update_widths[0] = 512;
    cmd_default_run d = cmd_population_default_run(&c);
    CHECK(d.population == 2 && d.tries == 16 && d.repair == 50.0 && d.repair_threads == ca_fast_default_threads() &&
              d.repair_members == 1,
          "lizard: 2 x 16 seeds, 50 s searches of one member on all %d cores (%d x %d, %g s, %d threads)",
          ca_fast_default_threads(), d.population, d.tries, d.repair, d.repair_threads);
    cpu_set_t all, one;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0, "this process's cores");
    CHECK(ca_fast_default_threads() == CPU_COUNT(&all), "the default threads are this process's %d cores, not %d",
          CPU_COUNT(&all), ca_fast_default_threads());
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &all)) {
            CPU_SET(cpu, &one);
            break;
        }
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "pinned to one core");
    CHECK(ca_fast_default_threads() == 1, "pinned to one core: %d default threads", ca_fast_default_threads());
    ca_config_preset(&c, "lizard");
    CHECK(cmd_population_default_run(&c).repair_threads == 1, "pinned to one core: the lizard's search on one thread");
    CHECK(sched_setaffinity(0, sizeof all, &all) == 0, "every core again");
}

static void test_refused(void)
{
    char args[1024];
    fixture_refused("--population", "train --population 0");
    fixture_refused("--population", "train --resume single5.dlca --population 2");
    fixture_refused("--keep-members", "train --keep-members somewhere --device cpu");
    fixture_refused("--keep-members", "train --keep-members somewhere --population 1");
    fixture_refused("--tries", "train --tries 0");
    fixture_refused("--repair-members", "train --repair-members -1");
    fixture_refused("--tries", "train --tries 2 --no-stop-exact");
    fixture_refused("--tries", "train --resume single5.dlca --tries 2");
    fixture_refused("--tries", "train --population 4096 --tries 20 --device cpu");
    snprintf(args, sizeof args, "train %s --population 3 --device cpu --max-memory 0.001 --out big.dlca", config);
    fixture_refused("population of 3", args);
    CHECK(!fixture_exists("big.dlca"), "a refused population writes no model");
    /* the members' files exist from test_cpu: not replaced without --force */
    snprintf(args, sizeof args, "train %s --seed 5 --population 2 --device cpu --keep-members cpu --out other.dlca",
             config);
    fixture_refused("--force", args);
    snprintf(args, sizeof args, "train %s --population 2 --device cpu --keep-members single5.csv --out other.dlca",
             config);
    fixture_refused("not a folder", args);
    CHECK(!fixture_exists("other.dlca"), "nor do the refused --keep-members");
}

int main(int argc, char **argv)
{
    (void)argc;
    if (fixture_begin(argv[0], "population")) return 1;
    single_runs();
    test_cpu();
    test_tries();
    test_cpu_default();
    test_repair_members();
    test_default_run();
    test_vulkan();
    test_refused();
    fixture_end();
    return test_finish("test_cli_population");
}
