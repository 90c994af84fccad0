/* test_bench: `dlca bench` on tiny sizes, on the CPU engine, on a Vulkan device (full and
 * checkpoint cache) and with --hard: it exits 0 and its --json holds sane numbers (positive times
 * in order, counts > 0, gate evals/s consistent with the times and sizes). Never a timed
 * assertion: how fast is for benchmarks, not tests. Without Vulkan the GPU part is skipped
 * (exit 77) unless DLCA_REQUIRE_VULKAN=1. */
#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "vk_context.h"

#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dlca[1024], scratch[256];

/* Runs `dlca <args>` with stdout and stderr in the scratch folder; returns the exit status. */
static int run_dlca(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int run_dlca(const char *format, ...)
{
    char args[4096], command[8192];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(command, sizeof command, "'%s' %s > '%s/stdout.txt' 2> '%s/stderr.txt'", dlca, args, scratch, scratch);
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* A whole file as a string (malloc'd), or NULL. */
static char *slurp(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = calloc(1, 1 << 16);
    if (text) fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    return text;
}

/* bench's JSON is flat, one `"key": value` per line: checks that shape (so a stray line or a
 * missing comma fails) and returns the number of members, or -1. */
static int json_members(const char *text)
{
    if (strncmp(text, "{\n", 2) != 0) return -1;
    int n = 0;
    for (const char *line = text + 2; *line && *line != '}'; n++) {
        const char *end = strchr(line, '\n');
        if (!end || strncmp(line, "  \"", 3) != 0 || !strstr(line, "\": ") || strstr(line, "\": ") > end) return -1;
        int comma = end[-1] == ',', last = end[1] == '}';
        if (comma == last) return -1; /* a comma after every member but the last */
        line = end + 1;
    }
    return strcmp(text + strlen(text) - 2, "}\n") == 0 ? n : -1;
}

/* The number under `key`: 1 with *value set, 0 for null, -1 when missing or not a number. */
static int json_number(const char *text, const char *key, double *value)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\n  \"%s\": ", key);
    const char *at = strstr(text, pattern);
    if (!at) return -1;
    at += strlen(pattern);
    if (strncmp(at, "null", 4) == 0) return 0;
    char *end;
    *value = strtod(at, &end);
    return end != at && (*end == ',' || *end == '\n') ? 1 : -1;
}

/* The number under `key`, failing a check when it is missing or null. */
static double number(const char *text, const char *key)
{
    double value = 0.0;
    int found = json_number(text, key, &value);
    CHECK(found == 1, "JSON has a number under \"%s\" (%d)", key, found);
    return found == 1 ? value : 0.0;
}

static int has_string(const char *text, const char *key, const char *value)
{
    char pattern[256];
    snprintf(pattern, sizeof pattern, "\n  \"%s\": \"%s\"", key, value);
    return strstr(text, pattern) != NULL;
}

/* median, p10, p90, min, max of `name`_ms: positive and in order. */
static double check_spread(const char *text, const char *name)
{
    char key[64];
    double v[5];
    const char *suffix[] = {"min", "p10", "median", "p90", "max"};
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "%s_ms_%s", name, suffix[i]);
        v[i] = number(text, key);
    }
    CHECK(v[0] > 0.0, "%s: min %g ms > 0", name, v[0]);
    for (int i = 0; i < 4; i++) CHECK(v[i] <= v[i + 1], "%s: %s %g <= %s %g", name, suffix[i], v[i], suffix[i + 1], v[i + 1]);
    return v[2];
}

/* What both engines report: sizes, gate counts and gate evals/s consistent with the wall clock. */
static void check_common(const char *text, const char *preset, int batch, int T, int cells_per_sample)
{
    CHECK(json_members(text) > 20, "JSON is one flat object (%d members)", json_members(text));
    CHECK(has_string(text, "mode", "train") && has_string(text, "preset", preset), "mode train, preset %s", preset);
    CHECK(number(text, "batch") == batch && number(text, "T") == T, "batch %d, T %d", batch, T);
    double cells = number(text, "cells"), rows = number(text, "gate_evals_per_cell_step");
    double forward = number(text, "forward_gate_evals"), per_step = number(text, "gate_evals_per_step");
    CHECK(cells == (double)batch * cells_per_sample, "cells %g", cells);
    CHECK(rows >= number(text, "model_gates") && rows > 0, "evaluations per cell and step %g", rows);
    CHECK(forward == rows * cells * T && per_step == 2.0 * forward, "gate counts %g, %g", forward, per_step);
    double wall = check_spread(text, "wall");
    CHECK_CLOSE(number(text, "gate_evals_per_s_wall"), per_step / (1e-3 * wall), 0.0, 1e-6, "evals/s by wall clock");
    CHECK(number(text, "steps") == 3 && number(text, "warmup") >= 1, "3 steps after 1 warm-up or more (a GPU warms up 1 s)");
    /* The start-up report: the command's start to the end of the first step, in parts that add up
     * (test_pipeline_cache.c checks the GPU's cache and context parts). */
    double startup = number(text, "startup_ms"), parts = number(text, "startup_setup_ms") +
                     number(text, "startup_context_ms") + number(text, "startup_pipelines_ms") +
                     number(text, "startup_engine_ms") + number(text, "startup_first_step_ms");
    CHECK(startup > 0.0 && fabs(parts - startup) <= 0.01 * startup + 1.0, "start-up %g ms, its parts %g ms", startup,
          parts);
}

static void test_cpu(void)
{
    int status = run_dlca("bench --device cpu --preset gol --batch 2 --T 1 --steps 3 --warmup 1 --json '%s/cpu.json'",
                          scratch);
    CHECK(status == 0, "bench on the CPU engine exits 0 (%d)", status);
    char *text = slurp("cpu.json"), *out = slurp("stdout.txt");
    if (!text || !out) {
        CHECK(0, "cpu.json and stdout are written");
    } else {
        check_common(text, "gol", 2, 1, 9);
        double v;
        CHECK(has_string(text, "engine", "cpu") && json_number(text, "gpu_ms_median", &v) == 0 &&
                  json_number(text, "dispatches_per_step", &v) == 0 && json_number(text, "startup_queues", &v) == 0,
              "CPU engine: GPU numbers are null");
        CHECK(strstr(out, "gate evals/s") && strstr(out, "wall clock"), "table on stdout: %s", out);
        CHECK(has_string(text, "perception_wiring", "shared"), "gol's kernels share one moore order");
    }
    free(text), free(out);
    /* --perception-wiring: the benchmarked model's moore order a kernel; a bad value refused */
    status = run_dlca("bench --device cpu --preset gol --batch 2 --T 1 --steps 1 --warmup 0 --perception-wiring "
                      "per-kernel --json '%s/cpu.json'", scratch);
    text = slurp("cpu.json");
    CHECK(status == 0 && text && has_string(text, "perception_wiring", "per-kernel"),
          "bench --perception-wiring per-kernel benchmarks a moore order a kernel (%d)", status);
    free(text);
    status = run_dlca("bench --device cpu --perception-wiring sideways --steps 1");
    char *err = slurp("stderr.txt");
    CHECK(status != 0 && err && strstr(err, "--perception-wiring: 'sideways' is not one of shared, per-kernel"),
          "a bad --perception-wiring is refused: %s", err ? err : "");
    free(err);
}

/* One GPU run; returns the JSON (caller frees) after the checks both cache modes share. */
static char *bench_gpu(int device, const char *cache, int timestamps)
{
    int status = run_dlca("bench --device %d --preset gol --batch 2 --T 2 --cache %s --steps 3 --warmup 1 "
                          "--json '%s/gpu.json'", device, cache, scratch);
    char *err = slurp("stderr.txt");
    CHECK(status == 0, "bench --cache %s on device %d exits 0 (%d): %s", cache, device, status, err ? err : "");
    free(err);
    char *text = slurp("gpu.json");
    if (!text) {
        CHECK(0, "gpu.json is written");
        return NULL;
    }
    check_common(text, "gol", 2, 2, 9);
    CHECK(has_string(text, "engine", "gpu") && has_string(text, "cache", cache), "engine gpu, cache %s", cache);
    /* one model: one queue (ca_backend_queues), unless DLCA_QUEUES says otherwise */
    if (!getenv("DLCA_QUEUES"))
        CHECK(number(text, "startup_queues") == 1, "a bench of one model opens one queue (%g)",
              number(text, "startup_queues"));
    CHECK(number(text, "dispatches_per_step") >= 10 && number(text, "submissions_per_step") >= 1,
          "dispatches %g and submissions %g per step", number(text, "dispatches_per_step"),
          number(text, "submissions_per_step"));
    CHECK(number(text, "peak_device_bytes") >= number(text, "engine_device_bytes") &&
              number(text, "engine_device_bytes") > 0,
          "peak device memory %g >= the engine's %g", number(text, "peak_device_bytes"),
          number(text, "engine_device_bytes"));
    if (!timestamps) return text;
    double gpu = check_spread(text, "gpu"), forward = check_spread(text, "forward");
    double backward = check_spread(text, "backward");
    check_spread(text, "loss"), check_spread(text, "optimizer");
    /* Per step the GPU interval lies inside the wall-clock one, so every order statistic does too. */
    CHECK(gpu <= number(text, "wall_ms_median") && number(text, "gpu_ms_max") <= number(text, "wall_ms_max"),
          "GPU time %g within the wall clock", gpu);
    CHECK(forward < gpu && backward < gpu, "forward %g and backward %g are parts of the step %g", forward, backward, gpu);
    double per_step = number(text, "gate_evals_per_step");
    CHECK_CLOSE(number(text, "gate_evals_per_s_gpu"), per_step / (1e-3 * gpu), 0.0, 1e-6, "evals/s by GPU time");
    CHECK_CLOSE(number(text, "forward_gate_evals_per_s"), 0.5 * per_step / (1e-3 * forward), 0.0, 1e-6, "forward evals/s");
    CHECK_CLOSE(number(text, "backward_gate_evals_per_s"), 0.5 * per_step / (1e-3 * backward), 0.0, 1e-6,
                "backward evals/s");
    return text;
}

/* --kernels: one timeline row per dispatch of a step, in recording order, each a kernel name and a
 * time >= 0, and the rows add up to the printed sum. */
static void test_kernels(int device)
{
    int status = run_dlca("bench --device %d --preset gol --batch 2 --T 2 --steps 2 --warmup 1 --kernels --json "
                          "'%s/kernels.json'", device, scratch);
    char *out = slurp("stdout.txt"), *json = slurp("kernels.json");
    CHECK(status == 0 && out && json, "bench --kernels exits 0 (%d)", status);
    if (!out || !json) {
        free(out), free(json);
        return;
    }
    const char *at = strstr(out, "timeline of a step");
    CHECK(at != NULL, "a timeline is printed: %s", out);
    int rows = 0, named = 1, first_is_task = 0;
    double total = 0.0, sum = -1.0;
    for (const char *line = at ? strchr(at, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
        int k;
        char name[64];
        double us;
        if (sscanf(line + 1, " %d %63s %lf", &k, name, &us) == 3) {
            rows++;
            named = named && k == rows && us >= 0.0 && strlen(name) > 2;
            if (rows == 1) first_is_task = strcmp(name, "task_round") == 0;
            total += us;
        } else if (sscanf(line + 1, " sum %lf", &sum) == 1) {
            break;
        } else {
            break;
        }
    }
    double dispatches = number(json, "dispatches_per_step");
    CHECK(rows > 0 && rows == (int)(dispatches + 0.5), "one row per dispatch: %d rows, %g dispatches", rows, dispatches);
    CHECK(named && first_is_task, "rows numbered in order, named, times >= 0, the round's task first");
    CHECK(sum >= 0.0 && fabs(sum - total) <= 0.01 * rows + 1e-9, "the sum row %g adds the rows %g", sum, total);
    free(out), free(json);
}

/* --population 3 on DEVICE ("cpu" or a Vulkan index): a step of three members, with and without
 * the hard loss. On a GPU one submission holds the three members' steps, each the dispatches of
 * the single run's step (`single_dispatches`; 0 on the CPU). */
static void test_population(int device, double single_dispatches)
{
    char where[16];
    if (device < 0) snprintf(where, sizeof where, "cpu");
    else snprintf(where, sizeof where, "%d", device);
    int status = run_dlca("bench --device %s --preset gol --batch 2 --T 2 --population 3 --steps 2 --warmup 1 "
                          "--json '%s/pop.json'", where, scratch);
    char *out = slurp("stdout.txt"), *text = slurp("pop.json");
    CHECK(status == 0 && out && text, "bench --population 3 on %s exits 0 (%d)", where, status);
    if (text) {
        CHECK(has_string(text, "mode", "population") && number(text, "members") == 3 &&
                  number(text, "measured_steps") == 2 && number(text, "warmup_steps") >= 1,
              "population on %s: mode, 3 members, 2 measured steps", where);
        double step = check_spread(text, "step"), measured = check_spread(text, "measured_step");
        CHECK(step > 0.0 && measured > 0.0, "step %g and with hard loss %g ms", step, measured);
        CHECK_CLOSE(number(text, "member_step_ms_median"), step / 3.0, 0.0, 1e-9, "a member's share is a third");
        /* gol's rollout is under CA_HARD_HOST_MIN_EVALS: on a GPU the GPU measures it */
        CHECK(has_string(text, "hard_loss_on", device >= 0 ? "gpu" : "cpu"), "hard_loss_on on %s", where);
        if (device >= 0) {
            /* a submission a member, as soon as it is recorded (vk_spread), on a queue a member at
             * most (ca_backend_queues) */
            double queues = number(text, "queues");
            CHECK(queues >= 1 && queues <= 3 && number(text, "submissions_per_step") == 3 &&
                      number(text, "dispatches_per_step") == 3 * single_dispatches,
                  "a submission a member (%g, on %g queues) of 3 x %g dispatches (%g)",
                  number(text, "submissions_per_step"), queues, single_dispatches, number(text, "dispatches_per_step"));
            double record = number(text, "record_ms_median"), run = number(text, "run_ms_median");
            CHECK(record > 0.0 && run > 0.0 && record + run <= 1.5 * step, "a step's parts: recording %g ms, "
                  "running %g ms, of %g", record, run, step);
        } else
            CHECK(has_string(text, "engine", "cpu"), "on the CPU engine");
    }
    CHECK(out && strstr(out, "a population of 3 gol members") && strstr(out, "with hard loss") &&
              strstr(out, device >= 0 ? "a hard rollout in the GPU's step" : "a hard rollout on the CPU engine"),
          "stdout: %s",
          out ? out : "");
    free(out), free(text);
}

static int test_gpu(void)
{
    vk_context vk;
    if (test_vk_context_init(&vk, -1) != DLCA_OK) return test_no_vulkan("test_bench", err_message());
    int device = vk.device_index, timestamps = vk.timestamp_valid_bits > 0;
    vk_context_free(&vk);
    /* The per-layer kernels, where the cache modes differ. */
    setenv("DLCA_FUSED", "0", 1);
    char *full = bench_gpu(device, "full", timestamps), *checkpoint = bench_gpu(device, "checkpoint", timestamps);
    unsetenv("DLCA_FUSED");
    if (full && checkpoint) {
        CHECK(has_string(full, "kernels", "per-layer"), "DLCA_FUSED=0 runs the per-layer kernels");
        /* Checkpointing keeps one step's activations and records each forward step again in backward. */
        CHECK(number(checkpoint, "engine_device_bytes") < number(full, "engine_device_bytes"),
              "checkpoint needs less memory (%g < %g)", number(checkpoint, "engine_device_bytes"),
              number(full, "engine_device_bytes"));
        CHECK(number(checkpoint, "dispatches_per_step") > number(full, "dispatches_per_step"),
              "checkpoint recomputes (%g > %g dispatches)", number(checkpoint, "dispatches_per_step"),
              number(full, "dispatches_per_step"));
    }
    free(full), free(checkpoint);
    /* gol's small grid picks the fused kernels: T = 2 steps in 4T + 16 dispatches, one submission. */
    char *fused = bench_gpu(device, "full", timestamps);
    if (fused) {
        CHECK(has_string(fused, "kernels", "fused"), "the fused kernels run by default on a small grid");
        CHECK(number(fused, "dispatches_per_step") <= 4 * 2 + 16 && number(fused, "submissions_per_step") == 1,
              "fused: %g dispatches (at most 4T + 16 = 24) and %g submissions (1) per step",
              number(fused, "dispatches_per_step"), number(fused, "submissions_per_step"));
    }
    if (fused) test_population(device, number(fused, "dispatches_per_step"));
    free(fused);
    if (timestamps) test_kernels(device);
    return 0;
}

static void test_hard(void)
{
    int status = run_dlca("bench --hard --T 2 --steps 2 --json '%s/hard.json'", scratch);
    CHECK(status == 0, "bench --hard exits 0 (%d)", status);
    char *text = slurp("hard.json"), *out = slurp("stdout.txt");
    if (text && out) {
        CHECK(json_members(text) > 10 && has_string(text, "mode", "hard"), "hard JSON: %s", text);
        CHECK(number(text, "cell_updates_per_s") > 0 && number(text, "pruned_gates") > 0, "rate and circuit size");
        CHECK(number(text, "height") == 512 && number(text, "runs") == 2 && number(text, "steps_per_run") == 2,
              "512x512, 2 runs of 2 steps");
        CHECK(strstr(out, "cell updates/s") != NULL, "stdout names the rate: %s", out);
    } else {
        CHECK(0, "hard.json and stdout are written");
    }
    free(text), free(out);
}

/* --help documents every flag; bad flags exit non-zero with one line. */
static void test_usage(void)
{
    CHECK(run_dlca("bench --help") == 0, "bench --help exits 0");
    char *help = slurp("stdout.txt");
    const char *flags[] = {"--preset", "--batch", "--T", "--device", "--cache", "--steps", "--warmup", "--json", "--hard",
                           "--population"};
    for (size_t i = 0; help && i < sizeof flags / sizeof flags[0]; i++)
        CHECK(strstr(help, flags[i]) != NULL, "--help documents %s", flags[i]);
    free(help);
    const char *bad[] = {"bench --steps 0", "bench --cache some", "bench --bogus 1", "bench --hard --batch 4",
                         "bench --preset glider --device cpu", "bench --population 2 --hard", "bench --population 0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int status = run_dlca("%s", bad[i]);
        char *err = slurp("stderr.txt");
        size_t lines = 0;
        for (const char *p = err; p && *p; p++) lines += *p == '\n';
        CHECK(status != 0 && lines == 1, "'%s' exits non-zero (%d) with one line: %s", bad[i], status, err ? err : "");
        free(err);
    }
}

int main(int argc, char **argv)
{
    char self[900];
    (void)argc;
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(dlca, sizeof dlca, "%s/dlca", dirname(self));
    snprintf(scratch, sizeof scratch, "/tmp/dlca_bench_XXXXXX");
    if (!mkdtemp(scratch)) return fprintf(stderr, "cannot make a scratch folder\n"), 1;
    test_usage();
    test_cpu();
    test_hard();
    test_population(-1, 0.0);
    int skip = test_gpu();
    int rc = test_finish("test_bench");
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch);
    return rc ? rc : skip;
}
