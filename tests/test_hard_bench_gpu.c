/* test_hard_bench_gpu: hard_bench_gpu and `dlca bench --hard MODEL --device N --batch B` run on
 * tiny sizes, report positive rates for the compiled and the interpreted circuit, write the GPU
 * keys to --json, and refuse a batch beyond the device's memory in one line naming the largest
 * that fits (the speed itself is measured on a real GPU, not here). */
#include "ca_file.h"
#include "check.h"
#include "vk_test.h"
#include "error.h"
#include "hard_bench_gpu.h"
#include "vk_context.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *test_name = "test_hard_bench_gpu";
static char dlca[1024], scratch[256];

static int load_model(const char *name, ca_model *model)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/models/%s.dlca", DLCA_ASSET_DIR, name);
    int rc = ca_file_load(path, model, NULL, NULL);
    CHECK(rc == DLCA_OK, "%s: %s", path, err_message());
    return rc;
}

/* hard_bench_gpu on `model`: a report and positive rates. */
static void bench_case(vk_context *vk, const char *name, const ca_model *model, hard_gpu_kind kind)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    hard_bench_gpu_result r;
    memset(&r, 0, sizeof r);
    int rc = hard_bench_gpu(vk, model, 3, 40, 70, 3, 2, kind, out, &r);
    fclose(out);
    int compiled = kind != HARD_GPU_INTERPRETED;
    CHECK(rc == DLCA_OK, "%s: hard_bench_gpu: %s", name, err_message());
    CHECK(r.rate > 0.0 && r.wall_rate > 0.0 && r.wall_ms > 0.0, "%s: rates %g, wall %g", name, r.rate, r.wall_rate);
    CHECK(r.has_gpu_times == (vk->timestamp_valid_bits != 0) && (r.gpu_rate > 0.0) == r.has_gpu_times,
          "%s: GPU rate %g with timestamps %d", name, r.gpu_rate, r.has_gpu_times);
    CHECK(r.compiled == compiled && r.gates > 0 && r.engine_bytes >= 2 * 3 * 40 * 3 * 4 * (size_t)model->config.channels,
          "%s: compiled %d, %zu gates, %zu bytes", name, r.compiled, r.gates, r.engine_bytes);
    CHECK(text && strstr(text, "cell updates/s") && strstr(text, "batch 3 of 40x70 periodic") &&
              strstr(text, compiled ? "compiled" : "interpreted"),
          "%s: report: %s", name, text ? text : "");
    printf("%s", text ? text : "");
    free(text);
}

static void test_library(vk_context *vk)
{
    ca_model gol, async;
    if (load_model("gol", &gol)) return;
    bench_case(vk, "gol", &gol, HARD_GPU_AUTO);
    bench_case(vk, "gol", &gol, HARD_GPU_INTERPRETED);
    if (!load_model("checkerboard-async", &async)) {
        bench_case(vk, "checkerboard-async", &async, HARD_GPU_AUTO);
        ca_model_free(&async);
    }
    CHECK(hard_bench_gpu(vk, &gol, 1, 8, 8, 0, 2, HARD_GPU_AUTO, NULL, NULL) == DLCA_ERR, "0 runs refused");
    CHECK(hard_bench_gpu(vk, &gol, 0, 8, 8, 1, 2, HARD_GPU_AUTO, NULL, NULL) == DLCA_ERR, "batch 0 refused");
    size_t before = vk->device_bytes;
    int rc = hard_bench_gpu(vk, &gol, 1 << 20, 512, 512, 1, 1, HARD_GPU_AUTO, NULL, NULL);
    CHECK(rc == DLCA_ERR && strstr(err_message(), "fits at most --batch"), "2^20 grids refused: %s", err_message());
    CHECK(vk->device_bytes == before, "nothing allocated for a refused batch");
    ca_model_free(&gol);
}

static char *slurp(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = calloc(1 << 16, 1);
    size_t got = text ? fread(text, 1, (1 << 16) - 1, f) : 0;
    if (text) text[got] = '\0';
    fclose(f);
    return text;
}

static int run_dlca(const char *args)
{
    char command[4096];
    snprintf(command, sizeof command, "'%s' %s > '%s/stdout.txt' 2> '%s/stderr.txt'", dlca, args, scratch, scratch);
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The number after "key": in a flat JSON object, or -1. */
static double json_number_of(const char *text, const char *key)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\"%s\": ", key);
    const char *at = text ? strstr(text, pattern) : NULL;
    return at ? strtod(at + strlen(pattern), NULL) : -1.0;
}

static void test_cli(const vk_context *vk)
{
    char args[2048];
    snprintf(args, sizeof args, "bench --hard '%s/models/gol.dlca' --device %d --batch 2 --T 2 --steps 2 --json '%s/h.json'",
             DLCA_ASSET_DIR, vk->device_index, scratch);
    int status = run_dlca(args);
    char *json = slurp("h.json"), *out = slurp("stdout.txt"), *err = slurp("stderr.txt");
    CHECK(status == 0, "%s exits 0 (%d): %s", args, status, err ? err : "");
    CHECK(json && strstr(json, "\"engine\": \"hard_gpu\"") && strstr(json, "\"circuit\": \"compiled\""),
          "JSON names the GPU engine: %s", json ? json : "");
    CHECK(json_number_of(json, "batch") == 2 && json_number_of(json, "steps_per_run") == 2 &&
              json_number_of(json, "runs") == 2 && json_number_of(json, "height") == 512,
          "batch 2 of 512x512, 2 runs of 2 steps");
    CHECK(json_number_of(json, "cell_updates_per_s") > 0 && json_number_of(json, "cell_updates_per_s_wall") > 0,
          "rates in the JSON");
    CHECK(out && strstr(out, "batch 2 of 512x512") && strstr(out, "cell updates/s"), "stdout: %s", out ? out : "");
    free(json), free(out), free(err);

    /* 65536 grids of 128 channels (2 x 256 GiB) fit no GPU: refused in one line. */
    snprintf(args, sizeof args, "bench --hard '%s/models/lizard.dlca' --device %d --batch 65536 --T 1 --steps 1",
             DLCA_ASSET_DIR, vk->device_index);
    status = run_dlca(args);
    err = slurp("stderr.txt");
    size_t lines = 0;
    for (const char *p = err; p && *p; p++) lines += *p == '\n';
    CHECK(status != 0 && lines == 1 && strstr(err, "fits at most --batch"), "batch 65536 refused in one line (%d): %s",
          status, err ? err : "");
    free(err);
}

int main(int argc, char **argv)
{
    (void)argc;
    char self[900];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(dlca, sizeof dlca, "%s/dlca", dirname(self));
    vk_context vk;
    int rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    snprintf(scratch, sizeof scratch, "/tmp/dlca_hard_bench_gpu_XXXXXX");
    if (!mkdtemp(scratch)) return fprintf(stderr, "cannot make a scratch folder\n"), 1;
    test_library(&vk);
    test_cli(&vk);
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch);
    return test_finish(test_name);
}
