/* test_robust_paths: what dlca writes, and where, through the binary (and the writers in
 * process). Every output is checked before any work: two outputs that are the same file however
 * spelt (./a, hard and symbolic links, the plot beside the log, the model being resumed) are
 * refused and nothing is touched; devices, FIFOs, sockets, directories and missing directories
 * are refused at once, never replaced; a symbolic link is written through and stays a link;
 * over-long paths are refused whole, never truncated. Temp files are created exclusively and
 * stale ones of dead processes removed; a run that fails at step 1 leaves the earlier log; a
 * second trainer on the same output is refused naming the first one's PID; endless inputs
 * (/dev/zero, a FIFO, a giant script) are refused without being read. CPU only, tiny runs. */
#define _GNU_SOURCE /* mknod, makedev */
#include "atomic_file.h"
#include "ca_config.h"
#include "ca_file.h"
#include "error.h"
#include "image_png.h"
#include "robust.h"
#include "train_log.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

/* Game of Life, 2 steps: a model in a few milliseconds. */
#define TINY "--preset gol --steps 2 --every 1 --device cpu"

static char dir[512]; /* this test's folder in the scratch folder; every file below is in it */

static const char *at(const char *name)
{
    static char paths[4][1024];
    static int next;
    next = (next + 1) % 4;
    snprintf(paths[next], sizeof paths[next], "%s/%s", dir, name);
    return paths[next];
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

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (f) fputs(text, f), fclose(f);
}

/* A snapshot of a file's bytes, to prove later that nothing replaced or truncated it. */
typedef struct {
    unsigned char *bytes;
    size_t size;
} snapshot;

static snapshot take(const char *path)
{
    snapshot s;
    s.bytes = read_all(path, &s.size);
    return s;
}

static int unchanged(const char *path, snapshot s)
{
    size_t size;
    unsigned char *now = read_all(path, &size);
    int same = now && s.bytes && size == s.size && memcmp(now, s.bytes, size) == 0;
    free(now);
    return same;
}

/* Entries of `folder` (hidden ones included) whose name contains `needle` ("": all). */
static int entries(const char *folder, const char *needle)
{
    DIR *d = opendir(folder);
    int count = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        count += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, needle) != NULL;
    if (d) closedir(d);
    return count;
}

static long long model_step(const char *path)
{
    ca_model m;
    ca_train_state state;
    if (ca_file_load(path, &m, &state, NULL) != DLCA_OK) return -1;
    long long step = state.moment1 ? (long long)state.step : -1;
    ca_model_free(&m), ca_train_state_free(&state);
    return step;
}

static int make_model(const char *name)
{
    char err[8192];
    int status = robust_run(err, sizeof err, "train " TINY " --keep-final --out '%s'", at(name));
    CHECK(status == 0, "training %s exits 0: %s", name, err);
    return status;
}

/* robust_refused, and the refusal came at once (before any training), leaving `folder` with the
 * same number of entries as before. */
static void refused_at_once(const char *needle, const char *args)
{
    int before = entries(dir, "");
    time_t start = time(NULL);
    robust_refused(needle, NULL, args);
    CHECK(time(NULL) - start < 30, "'%s' took %ld s to be refused", args, (long)(time(NULL) - start));
    CHECK(entries(dir, "") == before, "'%s' left %d new entries in %s", args, entries(dir, "") - before, dir);
}

/* Finding 2 (and 17's export): outputs that are the same file, however spelt, are refused up
 * front and the model survives byte for byte. */
static void test_same_file(void)
{
    char args[4096];
    if (make_model("keep.dlca")) return;
    snapshot keep = take(at("keep.dlca"));
    snprintf(args, sizeof args, "train " TINY " --force --out '%s' --log '%s'", at("keep.dlca"), at("keep.dlca"));
    refused_at_once("are the same file", args);
    snprintf(args, sizeof args, "train --resume '%s' --steps 4 --device cpu --log '%s'", at("keep.dlca"), at("keep.dlca"));
    refused_at_once("--resume", args);
    refused_at_once("--log", args);
    snprintf(args, sizeof args, "train " TINY " --out '%s/./new.dlca' --log '%s'", dir, at("new.dlca"));
    refused_at_once("are the same file", args);
    CHECK(link(at("keep.dlca"), at("hard.csv")) == 0, "hard link: %s", strerror(errno));
    snprintf(args, sizeof args, "train --resume '%s' --steps 4 --device cpu --log '%s'", at("keep.dlca"), at("hard.csv"));
    refused_at_once("are the same file", args);
    CHECK(symlink("keep.dlca", at("soft.csv")) == 0, "symlink: %s", strerror(errno));
    snprintf(args, sizeof args, "train --resume '%s' --steps 4 --device cpu --log '%s'", at("keep.dlca"), at("soft.csv"));
    refused_at_once("are the same file", args);
    /* The plot beside the log (<log>-loss.png) is an output too: not the model, not the resumed file. */
    snprintf(args, sizeof args, "train " TINY " --out '%s' --log '%s'", at("p-loss.png"), at("p.csv"));
    refused_at_once("the loss plot", args);
    CHECK(link(at("keep.dlca"), at("r-loss.png")) == 0, "hard link: %s", strerror(errno));
    snprintf(args, sizeof args, "train --resume '%s' --steps 4 --device cpu --out '%s' --log '%s'", at("r-loss.png"),
             at("r2.dlca"), at("r.csv"));
    refused_at_once("the loss plot", args);
    /* dlca export onto its own model. */
    snprintf(args, sizeof args, "export '%s' --format c --out '%s/./keep.dlca'", at("keep.dlca"), dir);
    refused_at_once("is the model", args);
    snprintf(args, sizeof args, "export '%s' --format dot --out '%s'", at("keep.dlca"), at("hard.csv"));
    refused_at_once("is the model", args);
    snprintf(args, sizeof args, "bench --hard '%s' --device cpu --json '%s'", at("keep.dlca"), at("hard.csv"));
    refused_at_once("is the model", args);
    CHECK(unchanged(at("keep.dlca"), keep), "keep.dlca is byte for byte what it was");
    /* Resuming into itself, through a spelling of its own, is continuing: allowed. */
    char err[8192];
    int status = robust_run(err, sizeof err, "train --resume '%s' --out '%s/./keep.dlca' --steps 3 --keep-final --device cpu",
                            at("keep.dlca"), dir);
    CHECK(status == 0 && model_step(at("keep.dlca")) == 3, "--resume X --out ./X continues X (%d): %s", status, err);
    free(keep.bytes);
}

/* Finding 5 and 14: devices, FIFOs, sockets and directories are refused before any work, and stay
 * what they were; so is a missing directory. */
static void test_not_regular(void)
{
    char args[4096], device[1024] = "";
    struct stat st;
    /* A character device: our own node for /dev/full when we may make one, else (as a user, who
     * cannot replace it anyway) /dev/full itself; never /dev/full as root, in case this regresses. */
    if (mknod(at("full"), S_IFCHR | 0666, makedev(1, 7)) == 0) snprintf(device, sizeof device, "%s", at("full"));
    else if (geteuid() != 0) snprintf(device, sizeof device, "/dev/full");
    else printf("not regular: cannot make a device node here (%s); FIFO, socket and directory only\n", strerror(errno));
    if (device[0]) {
        snprintf(args, sizeof args, "train " TINY " --out '%s'", device);
        refused_at_once("is a character device, not a regular file", args);
        snprintf(args, sizeof args, "train " TINY " --out '%s' --log '%s'", at("dev.dlca"), device);
        refused_at_once("--log", args);
        snprintf(args, sizeof args, "train " TINY " --out '%s' --log '%s'", at("dev.dlca"), device);
        refused_at_once("is a character device", args);
        CHECK(stat(device, &st) == 0 && S_ISCHR(st.st_mode), "%s is still a character device", device);
    }
    CHECK(mkfifo(at("fifo.dlca"), 0644) == 0, "mkfifo: %s", strerror(errno));
    snprintf(args, sizeof args, "train " TINY " --out '%s'", at("fifo.dlca"));
    refused_at_once("is a FIFO", args);
    CHECK(lstat(at("fifo.dlca"), &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is still a FIFO");
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(at("sock.csv")) < sizeof address.sun_path) {
        snprintf(address.sun_path, sizeof address.sun_path, "%s", at("sock.csv"));
        CHECK(sock >= 0 && bind(sock, (struct sockaddr *)&address, sizeof address) == 0, "bind: %s", strerror(errno));
        snprintf(args, sizeof args, "train " TINY " --out '%s' --log '%s'", at("s.dlca"), at("sock.csv"));
        refused_at_once("is a socket", args);
    }
    if (sock >= 0) close(sock);
    CHECK(mkdir(at("adir"), 0755) == 0, "mkdir: %s", strerror(errno));
    snprintf(args, sizeof args, "train " TINY " --out '%s'", at("adir"));
    refused_at_once("is a directory, not a regular file", args); /* and no adir.csv */
    snprintf(args, sizeof args, "train " TINY " --out '%s/'", at("adir"));
    refused_at_once("ends in /", args);
    snprintf(args, sizeof args, "train " TINY " --out '%s'", at("no-such-dir/m.dlca"));
    refused_at_once("does not exist", args);
    snprintf(args, sizeof args, "train " TINY " --out '%s' --log '%s'", at("m.dlca"), at("no-such-dir/m.csv"));
    refused_at_once("--log", args);
    if (model_step(at("keep.dlca")) >= 0) {
        snprintf(args, sizeof args, "export '%s' --format c --out '%s'", at("keep.dlca"), at("adir"));
        refused_at_once("is a directory", args);
        snprintf(args, sizeof args, "export '%s' --format c --out '%s'", at("keep.dlca"), at("fifo.dlca"));
        refused_at_once("is a FIFO", args);
        snprintf(args, sizeof args, "bench --hard '%s' --device cpu --json '%s'", at("keep.dlca"), at("adir"));
        refused_at_once("--json", args);
    }
    /* The writers themselves refuse too, whoever calls them. */
    unsigned char rgb[3 * 4] = {0};
    CHECK(image_write_rgb(at("fifo.dlca"), rgb, 2, 2) != DLCA_OK && strstr(err_message(), "is a FIFO"),
          "image_write_rgb refuses a FIFO: %s", err_message());
    CHECK(atomic_file_write(at("adir"), "x", 1) != DLCA_OK && strstr(err_message(), "is a directory"),
          "atomic_file_write refuses a directory: %s", err_message());
    CHECK(entries(dir, "dlca-tmp") == 0, "no temp file left");
}

/* Finding 5: a symbolic link is written through to its target and stays a link. */
static void test_symlinks(void)
{
    char err[8192], args[4096], target[1024];
    struct stat st;
    if (make_model("real.dlca")) return;
    CHECK(symlink("real.dlca", at("link.dlca")) == 0, "symlink: %s", strerror(errno));
    int status = robust_run(err, sizeof err, "train --resume '%s' --steps 4 --every 1 --device cpu", at("link.dlca"));
    ssize_t n = readlink(at("link.dlca"), target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    CHECK(status == 0, "resuming through a link exits 0: %s", err);
    CHECK(lstat(at("link.dlca"), &st) == 0 && S_ISLNK(st.st_mode) && strcmp(target, "real.dlca") == 0,
          "link.dlca is still a link to real.dlca ('%s')", target);
    CHECK(model_step(at("real.dlca")) == 4, "the link's target holds step 4 (%lld)", model_step(at("real.dlca")));
    /* --force through a link replaces the target, not the link. */
    status = robust_run(err, sizeof err, "train " TINY " --force --out '%s'", at("link.dlca"));
    CHECK(status == 0 && lstat(at("link.dlca"), &st) == 0 && S_ISLNK(st.st_mode) && model_step(at("real.dlca")) == 2,
          "--force through the link keeps the link and replaces real.dlca (%d): %s", status, err);
    /* A dangling link names the file to create, in the target's own directory. */
    CHECK(mkdir(at("sub"), 0755) == 0, "mkdir: %s", strerror(errno));
    CHECK(symlink("sub/new.dlca", at("dangling.dlca")) == 0, "symlink: %s", strerror(errno));
    status = robust_run(err, sizeof err, "train " TINY " --out '%s' --log '%s'", at("dangling.dlca"), at("sub/new.csv"));
    CHECK(status == 0 && lstat(at("dangling.dlca"), &st) == 0 && S_ISLNK(st.st_mode) && model_step(at("sub/new.dlca")) == 2,
          "a dangling link is written through to sub/new.dlca (%d): %s", status, err);
    CHECK(entries(dir, "dlca-tmp") == 0 && entries(at("sub"), "dlca-tmp") == 0, "no temp file left");
    /* A link to a directory or a FIFO is what it points at. */
    CHECK(symlink("sub", at("to-dir.dlca")) == 0, "symlink: %s", strerror(errno));
    snprintf(args, sizeof args, "train " TINY " --out '%s'", at("to-dir.dlca"));
    refused_at_once("is a directory", args);
    if (mkfifo(at("sub/fifo"), 0644) == 0 && symlink("sub/fifo", at("to-fifo.csv")) == 0) {
        snprintf(args, sizeof args, "train " TINY " --out '%s' --log '%s'", at("f.dlca"), at("to-fifo.csv"));
        refused_at_once("is a FIFO", args);
    }
    /* The PNG writer (plots, strips, screenshots) writes through a link too. */
    unsigned char rgb[3 * 4] = {0};
    CHECK(symlink("sub/picture.png", at("picture.png")) == 0, "symlink: %s", strerror(errno));
    CHECK(image_write_rgb(at("picture.png"), rgb, 2, 2) == DLCA_OK, "PNG through a link: %s", err_message());
    CHECK(lstat(at("picture.png"), &st) == 0 && S_ISLNK(st.st_mode) && robust_exists(at("sub/picture.png")),
          "the PNG link stays a link and its target is written");
}

/* Finding 8: temp files are created exclusively, never through what is already there. One named
 * as this process's temp file would be (a symlink to a victim, or a directory) is never followed. */
static void test_exclusive_temps(void)
{
    char temp[1024];
    unsigned char rgb[3 * 4] = {0};
    write_text(at("victim.txt"), "precious\n");
    snapshot victim = take(at("victim.txt"));
    const char *dests[] = {"plant.png", "plant.dlca", "plant.csv"};
    for (int k = 0; k < 3; k++) {
        snprintf(temp, sizeof temp, "%s/.%s.dlca-tmp.%ld", dir, dests[k], (long)getpid());
        CHECK(symlink(at("victim.txt"), temp) == 0, "plant %s: %s", temp, strerror(errno));
        int rc;
        if (k == 0) {
            rc = image_write_rgb(at(dests[k]), rgb, 2, 2);
        } else if (k == 1) {
            ca_config config;
            ca_model model;
            rc = ca_config_preset(&config, "gol") || ca_model_init(&model, &config);
            if (!rc) rc = ca_file_save(at(dests[k]), &model, NULL, NULL), ca_model_free(&model);
        } else {
            train_log log;
            rc = train_log_open(&log, at(dests[k]), 0, 0, 0);
            if (!rc) rc = train_log_row(&log, 1, 0.5, 1.0, 0.1);
            train_log_close(&log);
        }
        CHECK(rc == DLCA_OK, "%s is written despite the planted link: %s", dests[k], err_message());
        CHECK(unchanged(at("victim.txt"), victim), "%s: the link's target is untouched", dests[k]);
        struct stat st;
        CHECK(lstat(temp, &st) != 0, "%s: the planted link is gone and no temp file is left", dests[k]);
    }
    /* A directory of that name cannot be removed: the exclusive create fails, the write with it. */
    write_text(at("old.png"), "old picture\n");
    snapshot old = take(at("old.png"));
    snprintf(temp, sizeof temp, "%s/.old.png.dlca-tmp.%ld", dir, (long)getpid());
    CHECK(mkdir(temp, 0755) == 0, "mkdir %s: %s", temp, strerror(errno));
    CHECK(image_write_rgb(at("old.png"), rgb, 2, 2) != DLCA_OK && strstr(err_message(), "cannot create a temp file"),
          "an occupied temp name fails the write: %s", err_message());
    CHECK(unchanged(at("old.png"), old), "and the old file stays");
    rmdir(temp);
    /* Permissions: a new file gets 0666 & ~umask, an existing one keeps its own. */
    mode_t mask = umask(022);
    struct stat st;
    CHECK(atomic_file_write(at("mode.txt"), "a", 1) == DLCA_OK && stat(at("mode.txt"), &st) == 0 &&
              (st.st_mode & 0777) == 0644, "a new file is 0644 under umask 022 (%o)", (unsigned)(st.st_mode & 0777));
    chmod(at("mode.txt"), 0640);
    CHECK(atomic_file_write(at("mode.txt"), "b", 1) == DLCA_OK && stat(at("mode.txt"), &st) == 0 &&
              (st.st_mode & 0777) == 0640, "a replaced file keeps 0640 (%o)", (unsigned)(st.st_mode & 0777));
    umask(mask);
    free(victim.bytes), free(old.bytes);
}

/* A PID that is surely not alive: a child that has exited and been reaped. */
static long dead_pid(void)
{
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    robust_wait(pid);
    return (long)pid;
}

/* Finding 12: the next save removes the temp files its destination's dead writers left, and
 * only those. */
static void test_stale_temps(void)
{
    char name[256], err[8192];
    long dead = dead_pid();
    snprintf(name, sizeof name, ".st.dlca.dlca-tmp.%ld", dead);
    write_text(at(name), "stale");
    snprintf(name, sizeof name, ".st.dlca.dlca-tmp.%ld", (long)getpid()); /* alive: this test */
    write_text(at(name), "in use");
    snprintf(name, sizeof name, ".other.dlca.dlca-tmp.%ld", dead); /* another destination's */
    write_text(at(name), "not ours");
    snprintf(name, sizeof name, "st.dlca.tmp.%ld", dead); /* not a dlca temp name */
    write_text(at(name), "user file");
    int status = robust_run(err, sizeof err, "train " TINY " --out '%s'", at("st.dlca"));
    CHECK(status == 0, "the run exits 0: %s", err);
    snprintf(name, sizeof name, ".st.dlca.dlca-tmp.%ld", dead);
    CHECK(!robust_exists(at(name)), "the dead writer's temp file is removed");
    snprintf(name, sizeof name, ".st.dlca.dlca-tmp.%ld", (long)getpid());
    CHECK(robust_exists(at(name)), "a live process's temp file stays");
    snprintf(name, sizeof name, ".other.dlca.dlca-tmp.%ld", dead);
    CHECK(robust_exists(at(name)), "another destination's temp file stays");
    snprintf(name, sizeof name, "st.dlca.tmp.%ld", dead);
    CHECK(robust_exists(at(name)), "a file that only looks like a temp file stays");
    snprintf(name, sizeof name, ".st.dlca.dlca-tmp.%ld", (long)getpid());
    remove(at(name)); /* the tests below count temp files */
    snprintf(name, sizeof name, ".other.dlca.dlca-tmp.%ld", dead);
    remove(at(name));
}

/* Finding 13: a path over ATOMIC_FILE_PATH_MAX characters is refused whole, before any work,
 * with one line that is not cut off; nothing is written under a truncated name. */
static void test_long_paths(void)
{
    static char path[5000], err[16384];
    char name[300], want[128];
    /* Folders "d/d/d/..." up to 3990 characters, so that only the lengths are wrong below. */
    snprintf(path, sizeof path, "%s/d", dir);
    mkdir(path, 0755);
    while (strlen(path) < 3990) strcat(path, "/d"), mkdir(path, 0755);
    size_t folder = strlen(path);
    int before = entries(dir, "");
    while (strlen(path) < 4092) strcat(path, "/d");
    strcat(path, "/m.dlca"); /* over 4096: the CSV used to land in a truncated m.d */
    char *out_long[] = {NULL, "train", "--preset", "gol", "--steps", "2", "--device", "cpu", "--out", path, NULL};
    int status = robust_run_argv(out_long, err, sizeof err, 60, NULL, NULL);
    snprintf(want, sizeof want, "the path is %zu characters long; dlca writes paths of at most %d", strlen(path),
             ATOMIC_FILE_PATH_MAX);
    CHECK(status == 1 && robust_lines(err) == 1 && strstr(err, "--out") && strstr(err, want),
          "an over-long --out is refused in one whole line (%d): %s", status, err);
    char *log_long[] = {NULL, "train", "--preset", "gol", "--steps", "2", "--device", "cpu",
                        "--out", (char *)at("short.dlca"), "--log", path, NULL};
    status = robust_run_argv(log_long, err, sizeof err, 60, NULL, NULL);
    CHECK(status == 1 && robust_lines(err) == 1 && strstr(err, "--log") && strstr(err, "characters long"),
          "an over-long --log is refused (%d): %s", status, err);
    if (model_step(at("keep.dlca")) >= 0) {
        char *export_long[] = {NULL, "export", (char *)at("keep.dlca"), "--format", "c", "--out", path, NULL};
        status = robust_run_argv(export_long, err, sizeof err, 60, NULL, NULL);
        CHECK(status == 1 && robust_lines(err) == 1 && strstr(err, "characters long"),
              "an over-long export --out is refused (%d): %s", status, err);
    }
    /* A log of exactly the limit, in a folder that exists, is fine; its plot (+9 characters) is not. */
    path[folder] = '\0';
    strcat(path, "/");
    while (strlen(path) < ATOMIC_FILE_PATH_MAX - 4) strcat(path, "x");
    strcat(path, ".log");
    status = robust_run_argv(log_long, err, sizeof err, 60, NULL, NULL);
    CHECK(status == 1 && robust_lines(err) == 1 && strstr(err, "the loss plot") && strstr(err, "4009 characters long"),
          "a plot path over the limit is refused (%d): %s", status, err);
    memset(name, 'n', 240);
    strcpy(name + 240, ".dlca");
    char *name_long[] = {NULL, "train", "--preset", "gol", "--steps", "2", "--device", "cpu", "--out", (char *)at(name), NULL};
    status = robust_run_argv(name_long, err, sizeof err, 60, NULL, NULL);
    CHECK(status == 1 && robust_lines(err) == 1 && strstr(err, "the file name is 245 characters long"),
          "an over-long file name is refused (%d): %s", status, err);
    CHECK(entries(dir, "") == before, "nothing was written (%d new entries)", entries(dir, "") - before);
    path[folder] = '\0';
    CHECK(entries(path, "") == 0, "nothing was written in the deepest folder either");
}

/* Finding 9: a run that fails at step 1 leaves the earlier log (and a --force'd model) as they were. */
static void test_failed_run_keeps_files(void)
{
    char text[16384], last[4096];
    write_text(at("old.csv"), "step,soft_loss,hard_loss,seconds\n1,2,3,4\n");
    snapshot log = take(at("old.csv"));
    char *fresh[] = {NULL, "train", "--preset", "gol", "--steps", "4", "--every", "1", "--device", "cpu",
                     "--out", (char *)at("n9.dlca"), "--log", (char *)at("old.csv"), NULL};
    int status = robust_run_argv(fresh, text, sizeof text, 60, "DLCA_TEST_INJECT_NAN", "1");
    robust_last_line(text, last, sizeof last);
    CHECK(status == 1 && strstr(last, "at step 1") && strstr(last, "was not written by this run"),
          "NaN at step 1 fails saying nothing was written (%d): %s", status, last);
    CHECK(unchanged(at("old.csv"), log), "the earlier log is byte for byte what it was");
    CHECK(!robust_exists(at("n9.dlca")) && !robust_exists(at("old-loss.png")), "no model, no plot");
    if (make_model("forced.dlca")) return;
    snapshot model = take(at("forced.dlca")), forced_log = take(at("forced.csv"));
    char *force[] = {NULL, "train", "--preset", "gol", "--steps", "4", "--every", "1", "--device", "cpu",
                     "--force", "--out", (char *)at("forced.dlca"), NULL};
    status = robust_run_argv(force, text, sizeof text, 60, "DLCA_TEST_INJECT_NAN", "1");
    robust_last_line(text, last, sizeof last);
    CHECK(status == 1 && strstr(last, "was not written by this run"), "--force, NaN at step 1: exit 1 (%d): %s", status,
          last);
    CHECK(unchanged(at("forced.dlca"), model) && unchanged(at("forced.csv"), forced_log),
          "--force replaces nothing until the run has something to write");
    CHECK(entries(dir, "dlca-tmp") == 0, "no temp file left");
    free(log.bytes), free(model.bytes), free(forced_log.bytes);
}

/* Every line of a CSV log is a header or a whole row, steps increasing. */
static int well_formed_log(const char *path, int *rows)
{
    FILE *f = fopen(path, "r");
    char line[1100];
    double last = -1.0;
    int ok = f != NULL;
    *rows = 0;
    while (ok && fgets(line, sizeof line, f)) {
        double step, soft, hard, seconds;
        char end;
        if (strncmp(line, "step,", 5) == 0) continue;
        ok = sscanf(line, "%lf,%lf,%lf,%lf%c", &step, &soft, &hard, &seconds, &end) == 5 && end == '\n' && step > last;
        last = step, ++*rows;
    }
    if (f) fclose(f);
    return ok;
}

/* Finding 11: a second trainer on the same --out (or --log) is refused, naming the first one's
 * PID; the lock goes with the first one. */
static void test_two_trainers(void)
{
    char text[16384], args[4096], pid_text[64];
    char *first[] = {NULL, "train", "--preset", "checkerboard", "--grid", "8x8", "--T", "4", "--device", "cpu",
                     "--steps", "100000000", "--every", "1", "--out", (char *)at("tw.dlca"), NULL};
    pid_t pid = robust_spawn(first, at("tw.txt"), NULL, NULL, 0);
    for (int i = 0; i < 12000 && !robust_exists(at("tw.dlca")); i++) robust_sleep_ms(10);
    CHECK(robust_exists(at("tw.dlca")), "the first trainer checkpoints");
    snprintf(pid_text, sizeof pid_text, "is being written by another dlca (pid %ld)", (long)pid);
    snprintf(args, sizeof args, "train --preset checkerboard --grid 8x8 --T 4 --device cpu --steps 4 --force --out '%s'",
             at("tw.dlca"));
    robust_refused(pid_text, NULL, args);
    snprintf(args, sizeof args, "train --resume '%s' --device cpu --steps 100000000", at("tw.dlca"));
    robust_refused(pid_text, NULL, args);
    snprintf(args, sizeof args, "train " TINY " --out '%s' --log '%s'", at("tw2.dlca"), at("tw.csv"));
    robust_refused("--log", NULL, args);
    robust_refused(pid_text, NULL, args);
    CHECK(!robust_exists(at("tw2.dlca")), "the refused trainer wrote no model");
    kill(pid, SIGTERM);
    int status = robust_wait_timeout(pid, 60);
    robust_read_text(at("tw.txt"), text, sizeof text);
    CHECK(status == 0, "the first trainer exits 0 on SIGTERM (%d): %s", status, text);
    CHECK(entries(dir, "dlca-lock") == 0, "its lock files are gone");
    int rows;
    CHECK(well_formed_log(at("tw.csv"), &rows) && rows > 0, "tw.csv holds whole rows of one run only (%d)", rows);
    long long step = model_step(at("tw.dlca"));
    char err[8192];
    status = robust_run(err, sizeof err, "train --resume '%s' --device cpu --steps %lld", at("tw.dlca"), step + 2);
    CHECK(status == 0, "once it is gone, the model can be resumed (%d): %s", status, err);
}

/* Finding 15: inputs that never end are refused without reading them: /dev/zero or a FIFO as the
 * log to resume, a log line longer than any dlca writes, and dlca-view --script on the same. */
static void test_endless_inputs(void)
{
    char text[16384];
    if (model_step(at("keep.dlca")) < 0) return;
    snapshot keep = take(at("keep.dlca"));
    mkfifo(at("log.fifo"), 0644);
    const char *logs[] = {"/dev/zero", at("log.fifo")};
    for (int k = 0; k < 2; k++) {
        char *argv[] = {NULL, "train", "--resume", (char *)at("keep.dlca"), "--steps", "40", "--device", "cpu",
                        "--log", (char *)logs[k], NULL};
        int status = robust_run_argv(argv, text, sizeof text, 30, NULL, NULL);
        CHECK(status == 1 && robust_lines(text) == 1 && strstr(text, "not a regular file"),
              "--log %s with --resume is refused at once (%d): %s", logs[k], status, text);
    }
    FILE *f = fopen(at("long.csv"), "w");
    if (f) {
        fputs("step,soft_loss,hard_loss,seconds\n", f);
        for (int i = 0; i < 5000; i++) fputc('7', f);
        fputs("\n", f), fclose(f);
    }
    snapshot long_log = take(at("long.csv"));
    char *argv[] = {NULL, "train", "--resume", (char *)at("keep.dlca"), "--steps", "40", "--device", "cpu",
                    "--log", (char *)at("long.csv"), NULL};
    int status = robust_run_argv(argv, text, sizeof text, 60, NULL, NULL);
    CHECK(status == 1 && robust_lines(text) == 1 && strstr(text, "line 2 is longer than 1024 characters"),
          "a log line of 5000 characters is refused (%d): %s", status, text);
    CHECK(unchanged(at("long.csv"), long_log) && unchanged(at("keep.dlca"), keep), "and neither file is touched");
    free(keep.bytes), free(long_log.bytes);

    char viewer[1100];
    snprintf(viewer, sizeof viewer, "%s", robust_dlca);
    *strrchr(viewer, '/') = '\0';
    strcat(viewer, "/viewer/dlca-view");
    if (access(viewer, X_OK) != 0) {
        printf("endless inputs: no dlca-view (DLCA_BUILD_VIEWER=OFF): the viewer's part skipped\n");
        return;
    }
    FILE *big = fopen(at("big.script"), "w");
    if (big) {
        for (int i = 0; i < (2 << 20) / 8; i++) fputs("step 1; ", big);
        fclose(big);
    }
    char fifo[1024], big_script[1024], view_err[1024];
    snprintf(fifo, sizeof fifo, "%s", at("log.fifo"));
    snprintf(big_script, sizeof big_script, "%s", at("big.script"));
    snprintf(view_err, sizeof view_err, "%s", at("view.txt"));
    const char *scripts[][2] = {{"/dev/zero", "not a regular file"}, {fifo, "not a regular file"},
                                {big_script, "a script may have"}, {dir, "not a regular file"}};
    for (int k = 0; k < 4; k++) {
        char command[4096];
        snprintf(command, sizeof command, "exec timeout 30 '%s' --headless --device cpu --script '%s' 2> '%s'", viewer,
                 scripts[k][0], view_err);
        int rc = system(command);
        robust_read_text(view_err, text, sizeof text);
        robust_drop_sanitizer_warnings(text);
        CHECK(rc != -1 && robust_status(rc) == 1 && robust_lines(text) == 1 && strstr(text, scripts[k][1]),
              "dlca-view --script %s is refused at once (%d): %s", scripts[k][0], robust_status(rc), text);
    }
    /* A screenshot folder whose path leaves no room for the name: refused, not cut (finding 13). */
    static char long_dir[4300], command[9000];
    snprintf(long_dir, sizeof long_dir, "%s", dir);
    while (strlen(long_dir) < 4200) strcat(long_dir, "/d");
    snprintf(command, sizeof command, "exec timeout 30 '%s' --headless --device cpu --screenshot-dir '%s' --keys 'key s' "
             "2> '%s'", viewer, long_dir, view_err);
    int rc = system(command);
    robust_read_text(view_err, text, sizeof text);
    robust_drop_sanitizer_warnings(text);
    CHECK(rc != -1 && robust_status(rc) == 1 && robust_lines(text) == 1 && strstr(text, "is too long"),
          "dlca-view --screenshot-dir of 4200 characters is refused (%d): %s", robust_status(rc), text);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (robust_init(argv[0], "robust_paths")) return 1;
    robust_time_limit = 60; /* an old dlca would wait on a FIFO forever, or train beside another */
    snprintf(dir, sizeof dir, "%s/p", robust_scratch);
    mkdir(dir, 0755);
    test_same_file();
    test_not_regular();
    test_symlinks();
    test_exclusive_temps();
    test_stale_temps();
    test_long_paths();
    test_failed_run_keeps_files();
    test_two_trainers();
    test_endless_inputs();
    robust_cleanup();
    return test_finish("test_robust_paths");
}
