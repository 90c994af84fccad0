/* test_robust_checkpoint: nothing a `dlca train` run has saved is ever lost, on the CPU engine.
 * SIGINT and SIGTERM save and exit 0; kill -9 at random moments while it checkpoints every step
 * always leaves a loadable checkpoint that never goes back; a write that hits the file-size
 * limit, a full disk (a small tmpfs, when this process may mount one) or a read-only one fails
 * with one line saying the previous checkpoint is intact, and it is, byte for byte; a NaN
 * (DLCA_TEST_INJECT_NAN) stops the run naming the step and keeps the last good checkpoint. */
#define _GNU_SOURCE /* unshare, CLONE_NEWNS */
#include "ca_file.h"
#include "error.h"
#include "robust.h"

#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>

/* A small run: 8x8 checkerboard, T=4, so a step and a save take milliseconds. */
#define SMALL_RUN "--preset checkerboard --grid 8x8 --T 4 --device cpu"

/* The step a checkpoint holds, or -1 (message printed) when it does not load. */
static long long checkpoint_step(const char *path)
{
    ca_model m;
    ca_train_state state;
    if (ca_file_load(path, &m, &state, NULL) != DLCA_OK) {
        fprintf(stderr, "  %s does not load: %s\n", path, err_message());
        return -1;
    }
    long long step = state.moment1 ? (long long)state.step : -1;
    ca_model_free(&m), ca_train_state_free(&state);
    return step;
}

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    *size = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        rewind(f);
        data = malloc(n > 0 ? (size_t)n : 1);
        if (data) *size = fread(data, 1, (size_t)(n > 0 ? n : 0), f);
    }
    fclose(f);
    return data;
}

static int same_bytes(const char *path, const unsigned char *want, size_t want_size)
{
    size_t size;
    unsigned char *got = read_all(path, &size);
    int same = got && size == want_size && memcmp(got, want, size) == 0;
    free(got);
    return same;
}

/* Temp files of an interrupted or failed save left in `dir`. */
static int temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    int count = 0;
    for (struct dirent *e; d && (e = readdir(d));) count += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return count;
}

/* Waits up to `seconds` for `path` to exist. */
static int wait_for_file(const char *path, double seconds)
{
    for (int i = 0; i < (int)(seconds * 100); i++) {
        if (robust_exists(path)) return 1;
        robust_sleep_ms(10);
    }
    return 0;
}

static void test_signal(int signal_number, const char *name)
{
    char out[512], log[512], text[16384], want[64];
    snprintf(out, sizeof out, "%s", robust_path("signal.dlca"));
    snprintf(log, sizeof log, "%s", robust_path("signal.txt"));
    remove(out);
    char *argv[] = {NULL, "train", "--preset", "checkerboard", "--grid", "8x8", "--T", "4", "--device", "cpu",
                    "--steps", "100000000", "--every", "20", "--out", out, NULL};
    pid_t pid = robust_spawn(argv, log, NULL, NULL, 0);
    /* After the first checkpoint the handler is surely installed and training is under way. */
    int started = wait_for_file(out, 120.0);
    CHECK(started, "%s: no first checkpoint within 120 s", name);
    kill(pid, signal_number);
    int status = robust_wait(pid);
    robust_read_text(log, text, sizeof text);
    CHECK(status == 0, "%s: exit 0 after the signal, got %d: %s", name, status, text);
    long long step = checkpoint_step(out);
    CHECK(step >= 20, "%s: a loadable checkpoint with step >= 20 (%lld)", name, step);
    snprintf(want, sizeof want, "interrupted at step %lld", step);
    CHECK(strstr(text, want) != NULL, "%s: the run says '%s': %s", name, want, text);
}

/* Thirty runs killed at random moments, each resuming the last: the file always loads, and its
 * step never goes back (a torn save would lose steps or fail to load). */
static void test_kill_9(void)
{
    char out[512], log[512], text[16384];
    snprintf(out, sizeof out, "%s", robust_path("k9.dlca"));
    snprintf(log, sizeof log, "%s", robust_path("k9.txt"));
    srand(12345);
    long long last = -1;
    int killed = 0, loads = 0, present = 0;
    for (int i = 0; i < 30; i++) {
        int resume = robust_exists(out);
        char *fresh[] = {NULL, "train", "--preset", "checkerboard", "--grid", "8x8", "--T", "4", "--device", "cpu",
                         "--steps", "100000000", "--every", "1", "--out", out, NULL};
        char *again[] = {NULL, "train", "--resume", out, "--device", "cpu", "--steps", "100000000", "--every", "1", NULL};
        pid_t pid = robust_spawn(resume ? again : fresh, log, NULL, NULL, 0);
        robust_sleep_ms(100 + rand() % 700);
        kill(pid, SIGKILL);
        int status = robust_wait(pid);
        killed += status == 128 + SIGKILL;
        if (status != 128 + SIGKILL) {
            robust_read_text(log, text, sizeof text);
            CHECK(0, "run %d ended by itself (status %d) before the kill: %s", i, status, text);
        }
        if (!robust_exists(out)) continue;
        present++;
        long long step = checkpoint_step(out);
        loads += step >= 0;
        CHECK(step >= last, "run %d: the checkpoint went back from step %lld to %lld", i, last, step);
        if (step >= 0) last = step;
    }
    CHECK(killed == 30, "all 30 runs were killed mid-training (%d)", killed);
    CHECK(present > 0 && loads == present, "every checkpoint left loads (%d of %d)", loads, present);
    CHECK(last > 0, "the runs made progress across kills (last step %lld)", last);
    printf("kill -9: 30 kills, checkpoint at step %lld, %d temp files of interrupted saves left\n", last,
           temp_files(robust_scratch));
}

/* Trains `steps` steps, checkpointing every 2, into `out`; returns its exit status. */
static int train_fresh(const char *out, const char *log, int steps, char *err, size_t err_size)
{
    return robust_run(err, err_size, "train " SMALL_RUN " --steps %d --every 2 --out '%s' --log '%s'", steps, out, log);
}

/* A failed save: exit 1, the last line says why (`reason`) and that `out` holds step `step`,
 * and `out` still has exactly the bytes of that checkpoint. */
static void expect_intact(const char *what, int status, const char *text, const char *reason, const char *out,
                          long long step, const unsigned char *bytes, size_t size)
{
    char last[2048], holds[64];
    robust_last_line(text, last, sizeof last);
    snprintf(holds, sizeof holds, "is intact and holds step %lld", step);
    CHECK(status == 1, "%s: exit 1, got %d: %s", what, status, text);
    CHECK(strstr(last, reason) && strstr(last, holds), "%s: the last line names '%s' and '%s': %s", what, reason, holds,
          last);
    CHECK(same_bytes(out, bytes, size), "%s: %s is byte for byte the step %lld checkpoint", what, out, step);
    CHECK(checkpoint_step(out) == step, "%s: %s loads with step %lld", what, out, step);
}

/* RLIMIT_FSIZE below the checkpoint's size: the write fails with EFBIG halfway through the temp file. */
static void test_file_size_limit(void)
{
    char out[512], log[512], text[16384];
    snprintf(out, sizeof out, "%s", robust_path("limit.dlca"));
    snprintf(log, sizeof log, "%s", robust_path("limit.csv"));
    int status = train_fresh(out, log, 4, text, sizeof text);
    CHECK(status == 0, "the first run exits 0: %s", text);
    size_t size;
    unsigned char *bytes = read_all(out, &size);
    if (!bytes || size < 4096) {
        CHECK(0, "no checkpoint to protect (%zu bytes)", size);
        free(bytes);
        return;
    }
    char *argv[] = {NULL, "train", "--resume", out, "--device", "cpu", "--steps", "8", "--every", "2", NULL};
    const char *run_log = robust_path("limit.txt");
    status = robust_wait(robust_spawn(argv, run_log, NULL, NULL, (long)(size / 2)));
    robust_read_text(run_log, text, sizeof text);
    expect_intact("file size limit", status, text, "File too large", out, 4, bytes, size);
    CHECK(temp_files(robust_scratch) == 0, "no temp file left by the failed save");
    free(bytes);
}

/* A private mount namespace (root only), so the tmpfs vanishes with this process. */
static int private_tmpfs(const char *dir, size_t bytes, char *why, size_t why_size)
{
    char options[64];
    snprintf(options, sizeof options, "size=%zuk", (bytes + 1023) / 1024);
    if (unshare(CLONE_NEWNS) != 0) return snprintf(why, why_size, "unshare: %s", strerror(errno)), -1;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return snprintf(why, why_size, "making / private: %s", strerror(errno)), -1;
    if (mkdir(dir, 0755) != 0 || mount("dlca_test", dir, "tmpfs", 0, options) != 0)
        return snprintf(why, why_size, "mount tmpfs: %s", strerror(errno)), -1;
    return 0;
}

/* A tmpfs with room for one checkpoint and a half: the first save fits, the second cannot
 * (its temp file needs a whole checkpoint beside the old one). Then read-only. */
static void test_full_disk(void)
{
    char dir[512], out[600], log[512], text[16384], why[256];
    snprintf(dir, sizeof dir, "%s", robust_path("full"));
    snprintf(out, sizeof out, "%s/m.dlca", dir);
    snprintf(log, sizeof log, "%s", robust_path("full.csv"));
    /* The size of one checkpoint, from a run on the ordinary disk. */
    const char *probe = robust_path("probe.dlca");
    int status = train_fresh(probe, robust_path("probe.csv"), 2, text, sizeof text);
    size_t size;
    unsigned char *probe_bytes = read_all(probe, &size);
    free(probe_bytes);
    CHECK(status == 0 && size > 0, "the probe run exits 0: %s", text);
    if (private_tmpfs(dir, size + size / 2, why, sizeof why) != 0) {
        printf("full disk: no tmpfs here (%s); the file-size limit test stands in\n", why);
        return;
    }
    status = train_fresh(out, log, 8, text, sizeof text);
    unsigned char *bytes = read_all(out, &size);
    expect_intact("full disk", status, text, "No space left on device", out, 2, bytes, size);
    CHECK(temp_files(dir) == 0, "no temp file left on the full disk");

    CHECK(mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0, "remount read-only: %s", strerror(errno));
    status = robust_run(text, sizeof text, "train --resume '%s' --device cpu --steps 8 --every 2 --log '%s'", out,
                        robust_path("ro.csv"));
    expect_intact("read-only disk", status, text, "Read-only file system", out, 2, bytes, size);
    free(bytes);
    CHECK(umount(dir) == 0, "umount %s: %s", dir, strerror(errno));
}

/* A NaN in step 5 stops the run there; the step 4 checkpoint stays. A NaN in step 1 leaves no file. */
static void test_nan(void)
{
    char out[512], text[16384], last[2048];
    snprintf(out, sizeof out, "%s", robust_path("nan.dlca"));
    char *argv[] = {NULL, "train", "--preset", "checkerboard", "--grid", "8x8", "--T", "4", "--device", "cpu",
                    "--steps", "10", "--every", "2", "--out", out, NULL};
    const char *log = robust_path("nan.txt");
    int status = robust_wait(robust_spawn(argv, log, "DLCA_TEST_INJECT_NAN", "5", 0));
    robust_read_text(log, text, sizeof text);
    robust_last_line(text, last, sizeof last);
    CHECK(status == 1, "NaN: exit 1, got %d: %s", status, text);
    CHECK(strstr(last, "not finite at step 5") && strstr(last, "is intact and holds step 4"),
          "NaN: the last line names step 5 and the kept step 4: %s", last);
    CHECK(checkpoint_step(out) == 4, "NaN: %s holds step 4", out);

    remove(out);
    status = robust_wait(robust_spawn(argv, log, "DLCA_TEST_INJECT_NAN", "1", 0));
    robust_read_text(log, text, sizeof text);
    robust_last_line(text, last, sizeof last);
    CHECK(status == 1 && strstr(last, "at step 1") && strstr(last, "was not written"),
          "NaN at step 1: exit 1 and says nothing was written (%d): %s", status, last);
    CHECK(!robust_exists(out), "NaN at step 1: no model file");
}

int main(int argc, char **argv)
{
    (void)argc;
    if (robust_init(argv[0], "robust_checkpoint")) return 1;
    test_signal(SIGINT, "SIGINT");
    test_signal(SIGTERM, "SIGTERM");
    test_nan();
    test_file_size_limit();
    test_kill_9();
    test_full_disk(); /* last: it may leave this process in its own mount namespace */
    robust_cleanup();
    return test_finish("test_robust_checkpoint");
}
