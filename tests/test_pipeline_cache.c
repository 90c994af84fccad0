/* test_pipeline_cache.c: the persistent pipeline cache and the start-up report through the real
 * dlca. `dlca bench` in an empty cache folder creates the file and reports start-up parts that add
 * up; the next run reads it (the report says "loaded", with the bytes read); a truncated, flipped
 * or foreign file and an unwritable folder give one note on stderr and a run that succeeds;
 * DLCA_PIPELINE_CACHE=off and --cold write nothing; without DLCA_PIPELINE_CACHE the cache goes to
 * $XDG_CACHE_HOME/dlca (an absolute one), else $HOME/.cache/dlca; `dlca train` uses it too; a
 * folder name too long is refused in one line. Runs are short and mostly use the per-layer kernels
 * (DLCA_FUSED=0: lavapipe compiles the fused ones for seconds); test_vk_cache.c holds the cache's
 * file checks one by one. Without Vulkan: skipped (exit 77) unless DLCA_REQUIRE_VULKAN=1. */
#include "crc32.h"
#include "error.h"
#include "robust.h"
#include "vk_context.h"
#include "vk_test.h"

#include <dirent.h>
#include <stdlib.h>

static const char *test_name = "test_pipeline_cache";
static int device;

/* The number under "key" in the flat JSON `text`: 1 with *value, 0 for null, -1 when missing. */
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
    return end != at ? 1 : -1;
}

static double number(const char *text, const char *key)
{
    double value = -1.0;
    CHECK(json_number(text, key, &value) == 1, "JSON has a number under %s", key);
    return value;
}

/* Whether the flat JSON `text` has "key": "value". */
static int json_has(const char *text, const char *key, const char *value)
{
    char pattern[160];
    snprintf(pattern, sizeof pattern, "\n  \"%s\": \"%s\"", key, value);
    return strstr(text, pattern) != NULL;
}

static int count_notes(const char *text)
{
    int n = 0;
    for (const char *at = text; (at = strstr(at, "dlca: note: pipeline cache")) != NULL; at++) n++;
    return n;
}

/* `dlca bench` on a tiny gol with the extra arguments; its stderr into err, its JSON into json. */
static int bench(char *err, size_t err_size, char *json, size_t json_size, const char *extra)
{
    remove(robust_path("bench.json"));
    int status = robust_run(err, err_size, "bench --device %d --preset gol --batch 2 --T 1 --steps 1 --warmup 0 %s "
                                           "--json '%s'", device, extra, robust_path("bench.json"));
    robust_read_text(robust_path("bench.json"), json, json_size);
    return status;
}

/* The cache file in `folder` (its one pipelines-*.bin) into `path`; 0 when there is none. */
static int cache_file(const char *folder, char *path, size_t size)
{
    DIR *dir = opendir(folder);
    struct dirent *entry;
    int found = 0;
    while (dir && (entry = readdir(dir)) != NULL)
        if (strncmp(entry->d_name, "pipelines-", 10) == 0 && strstr(entry->d_name, ".bin"))
            found++, snprintf(path, size, "%s/%s", folder, entry->d_name);
    if (dir) closedir(dir);
    return found == 1;
}

/* Whether anything at all is inside `folder` (which need not exist). */
static int folder_empty(const char *folder)
{
    DIR *dir = opendir(folder);
    struct dirent *entry;
    int empty = 1;
    while (dir && (entry = readdir(dir)) != NULL)
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) empty = 0;
    if (dir) closedir(dir);
    return empty;
}

/* A new cache, then a read one; the start-up report's parts add up to its total. */
static void test_new_then_loaded(const char *folder)
{
    char err[8192], json[1 << 15], path[600];
    setenv("DLCA_PIPELINE_CACHE", folder, 1);
    int status = bench(err, sizeof err, json, sizeof json, "");
    CHECK(status == 0, "bench with an empty cache folder exits 0 (%d): %s", status, err);
    CHECK(count_notes(err) == 0, "a first run gives no note: %s", err);
    CHECK(json_has(json, "pipeline_cache", "new"), "a first run's cache is new");
    CHECK(cache_file(folder, path, sizeof path), "the run created the cache file in %s", folder);
    double total = number(json, "startup_ms"), parts = 0.0;
    const char *keys[] = {"startup_setup_ms", "startup_context_ms", "startup_pipelines_ms", "startup_engine_ms",
                          "startup_first_step_ms"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        double part = number(json, keys[i]);
        CHECK(part >= 0.0, "%s = %g is not negative", keys[i], part);
        parts += part;
    }
    CHECK(total > 0.0 && fabs(parts - total) <= 0.01 * total + 1.0, "the parts (%g ms) add up to the total (%g ms)",
          parts, total);
    CHECK(number(json, "startup_pipelines") >= 1 && number(json, "startup_pipelines_ms") > 0.0,
          "pipelines were made before the first step ended");
    CHECK(number(json, "startup_instance_ms") > 0.0 && number(json, "startup_device_ms") > 0.0,
          "the context's parts are timed");

    size_t before_size = 0, after_size = 0;
    char before[4096], after[4096];
    struct stat st;
    if (stat(path, &st) == 0) before_size = (size_t)st.st_size;
    robust_read_text(path, before, sizeof before);
    status = bench(err, sizeof err, json, sizeof json, "");
    CHECK(status == 0 && count_notes(err) == 0, "a second run exits 0 without a note (%d): %s", status, err);
    CHECK(json_has(json, "pipeline_cache", "loaded") && number(json, "pipeline_cache_read_bytes") > 0,
          "the second run reads the cache");
    double hits = 0.0;
    if (json_number(json, "startup_pipeline_cache_hits", &hits) == 1)
        printf("%s: second run: %g of %g pipelines found in the cache\n", test_name, hits,
               number(json, "startup_pipelines"));
    if (stat(path, &st) == 0) after_size = (size_t)st.st_size;
    robust_read_text(path, after, sizeof after);
    CHECK(after_size >= before_size, "the file did not shrink");
    if (after_size == before_size && before_size < sizeof before)
        CHECK(memcmp(before, after, before_size) == 0, "a cache that did not grow is not rewritten");
}

static void put32(unsigned char *at, uint32_t v)
{
    for (int i = 0; i < 4; i++) at[i] = (unsigned char)(v >> 8 * i);
}

/* Damages the cache file: 0 truncates it, 1 flips a byte of the data, 2 makes its key another
 * build's (both CRCs made right again, so only the key is wrong). */
static void damage(const char *path, int how)
{
    FILE *f = fopen(path, "rb");
    long size = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    unsigned char *data = size > 64 ? malloc((size_t)size) : NULL; /* a real GPU's cache runs to megabytes */
    size_t n = 0;
    if (f && data && fseek(f, 0, SEEK_SET) == 0) n = fread(data, 1, (size_t)size, f);
    if (f) fclose(f);
    CHECK(data && n == (size_t)size, "the cache file %s to damage (%ld bytes)", path, size);
    if (!data || n != (size_t)size) {
        free(data);
        return;
    }
    if (how == 0) n = n / 2;
    if (how == 1) data[n - 1] ^= 0x10;
    if (how == 2) {
        data[41] ^= 0xff;
        put32(data + 56, crc32_update(0, data + 64, n - 64));
        put32(data + 60, crc32_update(0, data, 60));
    }
    f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n, "writing the damaged file");
    if (f) fclose(f);
    free(data);
}

static void test_damaged(const char *folder)
{
    const char *what[] = {"truncated", "a flipped byte", "another build's key"};
    char err[8192], json[1 << 15], path[600];
    setenv("DLCA_PIPELINE_CACHE", folder, 1);
    for (int how = 0; how < 3; how++) {
        if (!cache_file(folder, path, sizeof path)) return;
        damage(path, how);
        int status = bench(err, sizeof err, json, sizeof json, "");
        CHECK(status == 0, "%s cache: the run succeeds (%d): %s", what[how], status, err);
        CHECK(count_notes(err) == 1 && robust_lines(err) == 1, "%s cache: one note and nothing else: %s", what[how],
              err);
        CHECK(json_has(json, "pipeline_cache", "ignored"), "%s cache: the report says ignored", what[how]);
        status = bench(err, sizeof err, json, sizeof json, "");
        CHECK(status == 0 && count_notes(err) == 0 && json_has(json, "pipeline_cache", "loaded"),
              "%s cache: the next run reads the file saved after it: %s", what[how], err);
    }
}

static void test_unwritable(void)
{
    char err[8192], json[1 << 15];
    FILE *f = fopen(robust_path("a-file"), "w");
    if (f) fclose(f);
    setenv("DLCA_PIPELINE_CACHE", robust_path("a-file/cache"), 1);
    int status = bench(err, sizeof err, json, sizeof json, "");
    CHECK(status == 0, "a cache folder under a file: the run succeeds (%d): %s", status, err);
    CHECK(count_notes(err) == 1 && robust_lines(err) == 1, "a cache folder under a file: one note: %s", err);
}

/* off and --cold write nothing; without DLCA_PIPELINE_CACHE: XDG_CACHE_HOME, else HOME. */
static void test_locations(void)
{
    char err[8192], json[1 << 15], path[600], xdg[512], home[512];
    snprintf(xdg, sizeof xdg, "%s", robust_path("xdg"));
    snprintf(home, sizeof home, "%s", robust_path("home"));
    mkdir(xdg, 0700), mkdir(home, 0700);
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    /* dlca's folders there (the driver keeps its own shader cache beside them: Mesa's does). */
    char xdg_dlca[600], home_dlca[600];
    snprintf(xdg_dlca, sizeof xdg_dlca, "%s/dlca", xdg);
    snprintf(home_dlca, sizeof home_dlca, "%s/.cache/dlca", home);
    setenv("DLCA_PIPELINE_CACHE", "off", 1);
    int status = bench(err, sizeof err, json, sizeof json, "");
    CHECK(status == 0 && json_has(json, "pipeline_cache", "off"), "DLCA_PIPELINE_CACHE=off: off (%d): %s", status, err);
    CHECK(folder_empty(xdg_dlca) && folder_empty(home_dlca), "DLCA_PIPELINE_CACHE=off writes nothing");
    setenv("DLCA_PIPELINE_CACHE", robust_path("cold"), 1);
    status = bench(err, sizeof err, json, sizeof json, "--cold");
    CHECK(status == 0 && json_has(json, "pipeline_cache", "off"), "--cold: off (%d): %s", status, err);
    CHECK(folder_empty(robust_path("cold")) && folder_empty(xdg_dlca) && folder_empty(home_dlca),
          "--cold writes nothing");

    unsetenv("DLCA_PIPELINE_CACHE");
    status = bench(err, sizeof err, json, sizeof json, "");
    CHECK(status == 0 && cache_file(xdg_dlca, path, sizeof path), "the cache goes to $XDG_CACHE_HOME/dlca (%d): %s",
          status, err);
    setenv("XDG_CACHE_HOME", "relative/cache", 1); /* not absolute: ignored, as the XDG rules say */
    status = bench(err, sizeof err, json, sizeof json, "");
    CHECK(status == 0 && cache_file(home_dlca, path, sizeof path), "else to $HOME/.cache/dlca (%d): %s", status, err);
    CHECK(!robust_exists("relative"), "a relative XDG_CACHE_HOME is not used");
    unsetenv("XDG_CACHE_HOME");
}

/* The command the cache is for: `dlca train` (the fused kernels, as by default) creates the file
 * and a second run reads it without a note. */
static void test_train(void)
{
    char err[8192], path[600];
    const char *folder = robust_path("train-cache");
    setenv("DLCA_PIPELINE_CACHE", folder, 1);
    unsetenv("DLCA_FUSED");
    for (int run = 0; run < 2; run++) {
        int status = robust_run(err, sizeof err, "train --device %d --population 1 --preset gol --steps 1 --out '%s' --force", device,
                                robust_path("gol.dlca"));
        CHECK(status == 0, "train run %d exits 0 (%d): %s", run + 1, status, err);
        CHECK(count_notes(err) == 0, "train run %d: no note: %s", run + 1, err);
    }
    CHECK(cache_file(folder, path, sizeof path), "dlca train saved its cache in %s", folder);
    setenv("DLCA_FUSED", "0", 1);
}

int main(int argc, char **argv)
{
    vk_context vk;
    int rc = test_vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    device = vk.device_index;
    vk_context_free(&vk);
    if (robust_init(argv[0], test_name)) return 1;
    (void)argc;
    setenv("DLCA_FUSED", "0", 1); /* the per-layer kernels: a quick start on lavapipe */

    test_new_then_loaded(robust_path("cache"));
    test_damaged(robust_path("cache"));
    test_unwritable();
    test_locations();
    test_train();
    char long_name[4200];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    setenv("DLCA_PIPELINE_CACHE", long_name, 1);
    robust_refused("DLCA_PIPELINE_CACHE", NULL, "bench --device cpu --preset gol --steps 1");

    robust_cleanup();
    return test_finish(test_name);
}
