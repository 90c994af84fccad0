/* test_robust_checkpoint: nothing a `dlca train` run has saved is ever lost, on the CPU engine.
 * SIGINT, SIGTERM and SIGHUP save and exit 0 (SIGHUP not under nohup), a `dlca sweep` they
 * stop writes what it has, and a `dlca repair` search they stop ends at once, saying where it got; kill -9 at random moments while it checkpoints
 * every step always leaves a loadable checkpoint that never goes back, and the next run that
 * saves removes the temp files the killed ones left; kill -9 while a resumed run cuts its long
 * CSV log back leaves the log whole, old or new, never empty; a write that hits the file-size
 * limit or a full disk (a small tmpfs, when this process may mount one) fails with one line
 * saying the previous checkpoint is intact, and it is, byte for byte; a read-only disk is refused
 * before training; a NaN (DLCA_TEST_INJECT_NAN) stops the run naming the step and keeps the last
 * good checkpoint. */
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

/* Temp files (atomic_file.h: .NAME.dlca-tmp.PID) of an interrupted or failed save left in `dir`. */
static int temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    int count = 0;
    for (struct dirent *e; d && (e = readdir(d));) count += strstr(e->d_name, ".dlca-tmp.") != NULL;
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

/* Waits up to `seconds` for `needle` in the log at `log`, read into text each time; whether it came. */
static int wait_for_text(const char *log, const char *needle, double seconds, char *text, size_t size)
{
    for (int i = 0; i < (int)(seconds * 100); i++) {
        robust_sleep_ms(10);
        robust_read_text(log, text, size);
        if (strstr(text, needle)) return 1;
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

/* A sweep stopped by SIGTERM mid-run prints and writes what it has, the preset marked with the
 * steps it ran, and exits 0; the presets after it do not start. */
static void test_sweep_signal(void)
{
    char log[512], json[512], csv[512], text[16384];
    snprintf(log, sizeof log, "%s", robust_path("sweep.txt"));
    snprintf(json, sizeof json, "%s", robust_path("sweep.json"));
    snprintf(csv, sizeof csv, "%s", robust_path("sweep.csv"));
    remove(json), remove(csv);
    char *argv[] = {NULL, "sweep", "--preset", "checkerboard,gol", "--grid", "8x8", "--T", "4", "--device", "cpu",
                    "--seeds", "1-2", "--steps", "100000000", "--every", "20", "--json", json, "--csv", csv, NULL};
    pid_t pid = robust_spawn(argv, log, NULL, NULL, 0);
    /* the first progress line: the handler is installed and training under way */
    int started = wait_for_text(log, "step 20/100000000", 120.0, text, sizeof text);
    CHECK(started, "sweep: no progress line within 120 s: %s", text);
    kill(pid, SIGTERM);
    int status = robust_wait_timeout(pid, 120.0);
    robust_read_text(log, text, sizeof text);
    CHECK(status == 0 && strstr(text, "interrupted at step ") && strstr(text, "the summary of checkerboard covers"),
          "sweep: SIGTERM stops it with exit 0, saying where (%d): %s", status, text);
    CHECK(strstr(text, "\ncheckerboard ") && !strstr(text, "sweeping gol"), "sweep: checkerboard's summary printed, "
          "gol not started: %s", text);
    char written[8192] = "";
    robust_read_text(json, written, sizeof written);
    const char *done = strstr(written, "\"steps_done\": ");
    long long steps = done ? atoll(done + 14) : -1;
    CHECK(strstr(written, "\"interrupted\": true") && steps >= 20 && steps < 100000000,
          "sweep: the JSON marks the preset interrupted after %lld steps: %s", steps, written);
    robust_read_text(csv, written, sizeof written);
    CHECK(strstr(written, "checkerboard,1,") && strstr(written, "checkerboard,2,"), "sweep: the CSV has both seeds: %s",
          written);
}

/* Under nohup (SIGHUP ignored when dlca starts) a hangup is still ignored: the run goes on. */
static void test_nohup(void)
{
    char out[512], log[512], text[16384];
    snprintf(out, sizeof out, "%s", robust_path("nohup.dlca"));
    snprintf(log, sizeof log, "%s", robust_path("nohup.txt"));
    remove(out);
    char *argv[] = {NULL, "train", "--preset", "checkerboard", "--grid", "8x8", "--T", "4", "--device", "cpu",
                    "--steps", "100000000", "--every", "20", "--out", out, NULL};
    signal(SIGHUP, SIG_IGN); /* inherited through fork and exec, as nohup does it */
    pid_t pid = robust_spawn(argv, log, NULL, NULL, 0);
    signal(SIGHUP, SIG_DFL);
    CHECK(wait_for_file(out, 120.0), "nohup: no first checkpoint within 120 s");
    kill(pid, SIGHUP);
    robust_sleep_ms(300);
    CHECK(waitpid(pid, NULL, WNOHANG) == 0, "nohup: the run goes on after SIGHUP");
    kill(pid, SIGTERM);
    int status = robust_wait(pid);
    robust_read_text(log, text, sizeof text);
    CHECK(status == 0 && strstr(text, "interrupted at step"), "nohup: SIGTERM still saves and exits 0 (%d): %s", status,
          text);
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
    /* The next run that saves the model, the log and the plot removes what the dead ones left. */
    char steps[32];
    snprintf(steps, sizeof steps, "%lld", last + 2);
    char *finish[] = {NULL, "train", "--resume", out, "--device", "cpu", "--steps", steps, "--every", "1", NULL};
    int status = robust_wait(robust_spawn(finish, log, NULL, NULL, 0));
    robust_read_text(log, text, sizeof text);
    CHECK(status == 0, "the run after the kills exits 0 (%d): %s", status, text);
    CHECK(temp_files(robust_scratch) == 0, "and leaves no temp file of the killed runs (%d)", temp_files(robust_scratch));
}

/* kill -9 while a resumed run replaces its long CSV log with the rows up to the checkpoint: the
 * log is always whole: the old one byte for byte, or the kept rows followed by whole new rows;
 * never empty or cut (it was truncated in place and rewritten: 0 bytes in 3 of 3 kills with
 * 80 MB). Half the kills come the moment the log is seen to change, the others at random. */
static void test_kill_9_log(void)
{
    char out[512], csv[512], log[512], text[16384];
    snprintf(out, sizeof out, "%s", robust_path("shrink.dlca"));
    snprintf(csv, sizeof csv, "%s", robust_path("shrink.csv"));
    snprintf(log, sizeof log, "%s", robust_path("shrink.txt"));
    int status = robust_run(text, sizeof text, "train " SMALL_RUN " --steps 4 --every 2 --out '%s'", out);
    CHECK(status == 0, "the first run exits 0: %s", text);
    /* 8 MB of rows the resume keeps (steps up to the checkpoint's 4), then rows past it, to drop. */
    FILE *f = fopen(csv, "a");
    for (int i = 0; f && i < 250000; i++) fprintf(f, "4,0.%09d,%d,%d.000\n", i, i % 64, i);
    if (f) fclose(f);
    size_t model_size, kept_size, old_size;
    unsigned char *model = read_all(out, &model_size), *kept = read_all(csv, &kept_size);
    f = fopen(csv, "a");
    for (int step = 5; f && step < 1000; step++) fprintf(f, "%d,0.5,1,2.000\n", step);
    if (f) fclose(f);
    unsigned char *old = read_all(csv, &old_size);
    if (!model || !kept || !old || kept_size < 1000000) {
        CHECK(0, "no run to resume");
        free(model), free(kept), free(old);
        return;
    }
    srand(4242);
    int saw_old = 0, saw_new = 0;
    for (int i = 0; i < 8; i++) {
        FILE *m = fopen(out, "wb"), *c = fopen(csv, "wb");
        if (m) fwrite(model, 1, model_size, m), fclose(m);
        if (c) fwrite(old, 1, old_size, c), fclose(c);
        struct stat before, now_st;
        stat(csv, &before);
        char *argv[] = {NULL, "train", "--resume", out, "--device", "cpu", "--steps", "100000000", "--every", "1", NULL};
        pid_t pid = robust_spawn(argv, log, NULL, NULL, 0);
        if (i % 2 == 0) {
            for (long us = 0; us < 60000000L; us += 100) { /* until the log changes in any way */
                if (stat(csv, &now_st) != 0 || now_st.st_ino != before.st_ino || now_st.st_size != before.st_size) break;
                struct timespec ts = {0, 100000};
                nanosleep(&ts, NULL);
            }
        } else {
            robust_sleep_ms(rand() % 1500);
        }
        kill(pid, SIGKILL);
        robust_wait(pid);
        size_t size;
        unsigned char *now = read_all(csv, &size);
        int is_old = now && size == old_size && memcmp(now, old, size) == 0;
        int is_new = now && size > kept_size && memcmp(now, kept, kept_size) == 0 && now[size - 1] == '\n';
        long expect = 5; /* the new rows: 5, 6, 7... each whole */
        for (size_t at = kept_size; is_new && at < size;) {
            long step;
            double soft, hard, seconds;
            char *end = memchr(now + at, '\n', size - at);
            is_new = end && sscanf((char *)now + at, "%ld,%lf,%lf,%lf", &step, &soft, &hard, &seconds) == 4 &&
                     step == expect++;
            at = end ? (size_t)(end - (char *)now) + 1 : size;
        }
        CHECK(is_old || is_new, "kill %d: the log is the old one or the kept rows and whole new rows (%zu of %zu bytes)",
              i, size, old_size);
        saw_old += is_old, saw_new += is_new && !is_old;
        free(now);
    }
    printf("kill -9 while the log is cut back: %d kills left the old log, %d the new one\n", saw_old, saw_new);
    CHECK(saw_new > 0, "some kills came after the log was replaced");
    /* Unkilled, the resumed log is exactly the kept rows and its own. */
    FILE *m = fopen(out, "wb"), *c = fopen(csv, "wb");
    if (m) fwrite(model, 1, model_size, m), fclose(m);
    if (c) fwrite(old, 1, old_size, c), fclose(c);
    status = robust_run(text, sizeof text, "train --resume '%s' --device cpu --steps 6 --every 1", out);
    size_t size;
    unsigned char *now = read_all(csv, &size);
    CHECK(status == 0 && now && size > kept_size && memcmp(now, kept, kept_size) == 0 && size < kept_size + 200,
          "the resumed log keeps the rows up to step 4 and adds steps 5 and 6 (%d, %zu bytes): %s", status, size, text);
    CHECK(temp_files(robust_scratch) == 0, "no temp file left");
    free(now), free(model), free(kept), free(old);
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

    /* Read-only: refused before training, in one line, the checkpoint untouched. */
    CHECK(mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0, "remount read-only: %s", strerror(errno));
    status = robust_run(text, sizeof text, "train --resume '%s' --device cpu --steps 8 --every 2 --log '%s'", out,
                        robust_path("ro.csv"));
    CHECK(status == 1 && robust_lines(text) == 1 && strstr(text, "cannot write in the directory") &&
              strstr(text, "Read-only file system"),
          "read-only disk: refused up front in one line (%d): %s", status, text);
    CHECK(same_bytes(out, bytes, size) && checkpoint_step(out) == 2, "read-only disk: %s still holds step 2", out);
    free(bytes);
    CHECK(umount(dir) == 0, "umount %s: %s", dir, strerror(errno));
}

/* A NaN in step 5 stops the run there; the step 4 checkpoint stays. A NaN in step 1 leaves no file. */
/* dlca repair under SIGINT: the search (of a lizard near miss, for up to 600 s) ends at once with
 * exit 1 (not repaired), says it was interrupted and where it got, and writes nothing. */
static void test_repair_signal(void)
{
    char log[512], out[512], text[16384];
    snprintf(log, sizeof log, "%s", robust_path("repair.txt"));
    snprintf(out, sizeof out, "%s", robust_path("repair.dlca"));
    remove(out);
    char *argv[] = {NULL, "repair", DLCA_ASSET_DIR "/models/lizard-torus.dlca", "--out", out, "--seconds", "600",
                    "--threads", "1", NULL};
    pid_t pid = robust_spawn(argv, log, NULL, NULL, 0);
    /* its first progress line: the handler is installed and the search under way */
    int started = wait_for_text(log, "repair: ", 120.0, text, sizeof text);
    CHECK(started, "repair: no progress line within 120 s: %s", text);
    kill(pid, SIGINT);
    int status = robust_wait_timeout(pid, 60.0);
    robust_read_text(log, text, sizeof text);
    CHECK(status == 1 && strstr(text, "not repaired: interrupted with ") && strstr(text, "wrote nothing"),
          "repair: SIGINT ends the search with exit 1, saying where it got (%d): %s", status, text);
    CHECK(!robust_exists(out), "repair: nothing written");
}

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
    test_signal(SIGHUP, "SIGHUP");
    test_nohup();
    test_sweep_signal();
    test_repair_signal();
    test_nan();
    test_file_size_limit();
    test_kill_9();
    test_kill_9_log();
    test_full_disk(); /* last: it may leave this process in its own mount namespace */
    robust_cleanup();
    return test_finish("test_robust_checkpoint");
}
