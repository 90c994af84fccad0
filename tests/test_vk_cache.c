/* test_vk_cache.c: the persistent pipeline cache (src/vk/vk_cache.h) through the vk API. A first
 * context in an empty folder creates it and saves the cache; the next reads it (and, where the
 * driver keeps pipelines and says so, finds them there); one that makes nothing new writes
 * nothing. Every unusable file (truncated, empty, flipped bytes in either header or the data,
 * another build's key, another device's driver header, past the size cap, a directory or a FIFO in
 * its place) and an unwritable folder are one note on stderr, a context that works, and (where
 * the path can hold a file) a good file again afterwards; a directory or FIFO in its place is left
 * as it is. A cache grown past the cap is not saved and its file removed, with one note. "" is
 * off: no VkPipelineCache, nothing written. With DLCA_VALIDATE=1 any validation
 * message fails the test.
 *
 * Every Vulkan context of this test lives in a short-lived child process (in_child), and the
 * test's own process never initialises Vulkan, not even to probe for a device: NVIDIA's driver
 * refuses vkCreateInstance after about 30 instances in one process, and this test makes more than
 * that. A child returns plain data (a struct, through a pipe, with its validation message count)
 * and never checks anything; every CHECK is the parent's, and a child that dies, returns short
 * or (in a sanitizer build) leaks is a failed check. */
#include "check.h"
#include "crc32.h"
#include "error.h"
#include "vk_cache.h"
#include "vk_context.h"
#include "vk_pipeline.h"
#include "vk_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* A sanitizer build checks each child for leaks before it ends (an _exit runs no LeakSanitizer). */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_LEAK_CHECK 1
#endif
#endif
#ifdef TEST_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
#endif

static const char *test_name = "test_vk_cache";
static char scratch[256];
static vk_context_options base; /* the environment's options, the folder set by each session */
static int device_index, validation_errors;

/* What one context did with its cache: open, make pipelines (or not), close. err: the child's
 * stderr (the notes); error: err_message() at its end; validation: its validation messages. */
typedef struct {
    int rc, notes, validation;
    vk_cache_state state;
    size_t loaded, saved;
    uint32_t made, hits;
    int feedback;
    char path[512], err[4096], error[1024];
} session_result;

enum { CHILD_LEAKED = 3 }; /* a child's exit status: LeakSanitizer found leaks (its report on stderr) */

/* Runs fn(in, out) in a child process and copies the `size` bytes fn left at `out` back through
 * a pipe. 0, or -1 with `out` zeroed and a failed check naming `what` when the child could not
 * start, died or returned less (the caller then marks its result failed); a child that leaked
 * (sanitizer builds) is a failed check too, its data kept. The child
 * inherits the parent's stderr as it is (the parent never redirects its own; fn leaves the
 * child's as it found it) and ends with _exit, so it neither flushes the parent's stdio buffers
 * (flushed here first) nor runs its exit handlers. */
static int in_child(const char *what, void (*fn)(const void *in, void *out), const void *in, void *out, size_t size)
{
    int fds[2];
    memset(out, 0, size);
    fflush(NULL);
    if (pipe(fds) != 0) {
        CHECK(0, "%s: no pipe to a child process: %s", what, strerror(errno));
        return -1;
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC), fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) {
        CHECK(0, "%s: no child process: %s", what, strerror(errno));
        close(fds[0]), close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        fn(in, out);
        int leaked = 0;
#ifdef TEST_LEAK_CHECK
        leaked = __lsan_do_recoverable_leak_check(); /* 0 unless ASAN_OPTIONS has detect_leaks */
#endif
        fflush(NULL);
        for (size_t done = 0; done < size;) {
            ssize_t n = write(fds[1], (const char *)out + done, size - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) _exit(2);
            done += (size_t)n;
        }
        _exit(leaked ? CHILD_LEAKED : 0);
    }
    close(fds[1]); /* the child's end is then its alone: a dead child is end-of-file here */
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fds[0], (char *)out + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fds[0]);
    int status = 0;
    pid_t waited;
    while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
    if (waited == pid && WIFEXITED(status) && got == size) {
        if (WEXITSTATUS(status) == 0) return 0;
        if (WEXITSTATUS(status) == CHILD_LEAKED) { /* its data is good: only the leak fails */
            CHECK(0, "%s: the child process leaked memory (LeakSanitizer's report above)", what);
            return 0;
        }
    }
    memset(out, 0, size);
    if (waited != pid)
        CHECK(0, "%s: waiting for the child process: %s", what, strerror(errno));
    else if (WIFSIGNALED(status))
        CHECK(0, "%s: the child process died of signal %d (%s) after returning %zu of %zu bytes", what,
              WTERMSIG(status), strsignal(WTERMSIG(status)), got, size);
    else
        CHECK(0, "%s: the child process exited with status %d after returning %zu of %zu bytes", what,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1, got, size);
    return -1;
}

/* The table's buffer_fill, the same specialised, and the same from SPIR-V given at run time: one
 * pipeline of each way dlca makes them. */
static int make_pipelines(vk_context *vk)
{
    const uint32_t seven[1] = {7};
    const vk_pipeline *table;
    vk_pipeline special = {0}, spirv = {0};
    const vk_shader_code *code = vk_shader_find("buffer_fill");
    int rc = vk_pipeline_get(vk, VK_PIPE_BUFFER_FILL, &table);
    if (!rc) rc = vk_pipeline_create_specialized(vk, VK_PIPE_BUFFER_FILL, seven, 1, &special);
    if (!rc) rc = vk_pipeline_create_spirv(vk, &vk_pipeline_descs[VK_PIPE_BUFFER_FILL], code->code, code->size, &spirv);
    vk_pipeline_destroy(vk, &special);
    vk_pipeline_destroy(vk, &spirv);
    return rc;
}

/* Counts the lines of `text` holding the cache's note. */
static int count_notes(const char *text)
{
    int n = 0;
    for (const char *at = text; (at = strstr(at, "dlca: note: pipeline cache")) != NULL; at++) n++;
    return n;
}

/* Where a child captures its stderr. */
static const char *stderr_path(void)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/stderr.txt", scratch);
    return path;
}

static int child_stderr = -1; /* in a child between capture_stderr and collect_stderr: its stderr */

/* In a child: its stderr into the scratch folder's stderr.txt, until collect_stderr (the
 * parent's stays as it is). 0 or DLCA_ERR. */
static int capture_stderr(void)
{
    fflush(stderr);
    child_stderr = dup(2);
    int fd = open(stderr_path(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (child_stderr < 0 || fd < 0 || dup2(fd, 2) < 0) {
        if (fd >= 0) close(fd);
        return DLCA_ERR;
    }
    close(fd);
    return DLCA_OK;
}

/* In a child, after capture_stderr: its stderr back, what it wrote into `err`, and
 * err_message() into `error` with "(failed: ...)" added to `err` when rc says so, the notes
 * among it, its validation messages. */
static void collect_stderr(session_result *r)
{
    fflush(stderr);
    if (child_stderr >= 0) dup2(child_stderr, 2), close(child_stderr), child_stderr = -1;
    FILE *f = fopen(stderr_path(), "r");
    size_t n = f ? fread(r->err, 1, sizeof r->err - 1, f) : 0;
    r->err[n] = '\0';
    if (f) fclose(f);
    r->notes = count_notes(r->err);
    r->validation = vk_validation_message_count();
    snprintf(r->error, sizeof r->error, "%s", err_message());
    if (r->rc) /* the failure's own message, for the check that reports it */
        snprintf(r->err + n, sizeof r->err - n, "%s(failed: %s)", n ? " " : "", err_message());
}

typedef struct {
    const char *folder;
    int make;
} session_args;

/* The child of session(). */
static void session_child(const void *in, void *out)
{
    const session_args *a = in;
    session_result *r = out;
    vk_context_options o = base;
    snprintf(o.pipeline_cache, sizeof o.pipeline_cache, "%s", a->folder);
    if (capture_stderr()) {
        r->rc = err_set(DLCA_ERR, "cannot capture stderr in %s: %s", scratch, strerror(errno));
        collect_stderr(r);
        return;
    }
    vk_context vk;
    r->rc = vk_context_init(&vk, device_index, &o);
    if (!r->rc) {
        r->state = vk.cache.state, r->loaded = vk.cache.loaded_bytes, r->feedback = vk.creation_feedback;
        snprintf(r->path, sizeof r->path, "%s", vk.cache.path ? vk.cache.path : "");
        if (a->make) r->rc = make_pipelines(&vk);
        r->made = vk.pipelines_created, r->hits = vk.pipeline_cache_hits;
        vk_cache_close(&vk); /* vk_context_free's own call then finds it closed */
        r->saved = vk.cache.saved_bytes;
        vk_context_free(&vk);
    }
    collect_stderr(r);
}

/* Adds a child's validation messages to the count, shown with what it wrote around them. */
static void add_validation(int count, const char *text)
{
    validation_errors += count;
    if (count) fprintf(stderr, "%s: %d validation messages in:\n%s\n", test_name, count, text);
}

/* After a child that captured its stderr failed: what it wrote there (a sanitizer's report, a
 * crash's last words) shown and kept in r->err, r marked failed (notes -1: none counted). */
static void session_failed(session_result *r)
{
    FILE *f = fopen(stderr_path(), "r");
    size_t n = f ? fread(r->err, 1, sizeof r->err - 1, f) : 0;
    r->err[n] = '\0';
    if (f) fclose(f);
    if (n) fprintf(stderr, "%s: the failed child process's stderr:\n%s\n", test_name, r->err);
    snprintf(r->err + n, sizeof r->err - n, "%s(failed: the child process failed)", n ? " " : "");
    snprintf(r->error, sizeof r->error, "the child process failed");
    r->rc = DLCA_ERR, r->notes = -1;
}

/* One context on `folder`, in a child, with its stderr captured (the notes), making pipelines
 * when `make`. */
static session_result session(const char *folder, int make)
{
    session_args a = {folder, make};
    session_result r;
    char what[600];
    snprintf(what, sizeof what, "a context on %s%s", folder[0] ? folder : "\"\"", make ? " making pipelines" : "");
    unlink(stderr_path()); /* session_failed shows none of an earlier child's */
    if (in_child(what, session_child, &a, &r, sizeof r)) session_failed(&r);
    add_validation(r.validation, r.err);
    return r;
}

static const char *scratch_path(const char *name)
{
    static char paths[2][512];
    static int next;
    next ^= 1;
    snprintf(paths[next], sizeof paths[next], "%s/%s", scratch, name);
    return paths[next];
}

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    *size = 0;
    if (f && fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        rewind(f);
        data = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (data) *size = fread(data, 1, (size_t)n, f);
    }
    if (f) fclose(f);
    return data;
}

static void write_all(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, size, f) == size, "writing %s", path);
    if (f) fclose(f);
}

static void put32(unsigned char *at, uint32_t v)
{
    for (int i = 0; i < 4; i++) at[i] = (unsigned char)(v >> 8 * i);
}

/* The file's two CRCs made right again after a deliberate change (vk_cache.c's layout: the data's
 * CRC at 56, the header's over bytes 0..59 at 60), so only the change itself is wrong. */
static void fix_crcs(unsigned char *file, size_t size)
{
    put32(file + 56, crc32_update(0, file + 64, size - 64));
    put32(file + 60, crc32_update(0, file, 60));
}

/* A good cache file at `path` (made by a session), damaged by `damage`, read by a context: one
 * note, the context works, and the file is good again afterwards. */
static void check_damaged(const char *folder, const char *path, const char *what,
                          void (*damage)(unsigned char *file, size_t *size))
{
    size_t size;
    unsigned char *file = read_all(path, &size);
    CHECK(file && size > 64, "%s: the good file to damage (%zu bytes)", what, size);
    if (!file || size <= 64) return free(file);
    damage(file, &size);
    write_all(path, file, size);
    free(file);
    session_result r = session(folder, 1);
    CHECK(r.rc == DLCA_OK, "%s: the context works: %s", what, r.error);
    CHECK(r.state == VK_CACHE_IGNORED && r.loaded == 0, "%s: ignored (state %s)", what, vk_cache_state_name(r.state));
    CHECK(r.notes == 1, "%s: one note, got %d: %s", what, r.notes, r.err);
    CHECK(r.saved > 0, "%s: the cache is saved again", what);
    r = session(folder, 0);
    CHECK(r.state == VK_CACHE_LOADED && r.notes == 0, "%s: the next context reads the new file (state %s, %d notes)",
          what, vk_cache_state_name(r.state), r.notes);
}

static void cut_one(unsigned char *file, size_t *size) { (void)file, (*size)--; }
static void cut_to_ten(unsigned char *file, size_t *size) { (void)file, *size = 10; }
static void empty(unsigned char *file, size_t *size) { (void)file, *size = 0; }
static void flip_data(unsigned char *file, size_t *size) { file[*size - 1] ^= 0x40; }
static void flip_header(unsigned char *file, size_t *size) { (void)size, file[20] ^= 0x01; }
static void foreign_key(unsigned char *file, size_t *size) { file[40] ^= 0xff, fix_crcs(file, *size); }
static void foreign_vendor(unsigned char *file, size_t *size) { file[64 + 8] ^= 0xff, fix_crcs(file, *size); }
static void foreign_uuid(unsigned char *file, size_t *size) { file[64 + 16] ^= 0xff, fix_crcs(file, *size); }
static void other_version(unsigned char *file, size_t *size) { put32(file + 64 + 4, 2), fix_crcs(file, *size); }
static void garbage(unsigned char *file, size_t *size)
{
    for (size_t i = 0; i < *size; i++) file[i] = (unsigned char)(i * 131u + 7u);
}

static void test_off(void)
{
    session_result r = session("", 1);
    CHECK(r.rc == DLCA_OK && r.state == VK_CACHE_OFF && r.path[0] == '\0', "\"\" is off (state %s)",
          vk_cache_state_name(r.state));
    CHECK(r.saved == 0 && r.notes == 0, "off: nothing saved, no note");
}

/* The first context creates folder and file; the second reads it and, making nothing, writes
 * nothing; one making the same pipelines again finds them where the driver keeps them. */
static void test_first_and_second(const char *folder)
{
    session_result first = session(folder, 1);
    CHECK(first.rc == DLCA_OK, "first context: %s", first.error);
    CHECK(first.state == VK_CACHE_NEW && first.notes == 0, "a folder not there yet: a new cache, no note (%s, %d: %s)",
          vk_cache_state_name(first.state), first.notes, first.err);
    CHECK(first.made == 3, "three pipelines made, got %u", first.made);
    CHECK(first.saved >= 32, "saved at the end (%zu bytes of data)", first.saved);
    struct stat st;
    CHECK(stat(first.path, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == 64 + first.saved,
          "the file %s holds the header and the data", first.path);
    CHECK(stat(folder, &st) == 0 && (st.st_mode & 0777) == 0700, "the folder is made 0700");
    printf("%s: %s, %zu bytes of driver data, creation feedback %s\n", test_name, first.path, first.saved,
           first.feedback ? "on" : "off");

    session_result reader = session(folder, 0);
    CHECK(reader.state == VK_CACHE_LOADED && reader.loaded == first.saved && reader.notes == 0,
          "the second context reads it (state %s, %zu bytes, %d notes)", vk_cache_state_name(reader.state),
          reader.loaded, reader.notes);
    CHECK(reader.saved == 0, "a context that made no pipeline writes nothing");

    session_result again = session(folder, 1);
    CHECK(again.state == VK_CACHE_LOADED && again.notes == 0, "the third context reads it too");
    CHECK(again.saved == 0 || again.saved > again.loaded, "written only when it grew (%zu after %zu)", again.saved,
          again.loaded);
    /* A driver whose data holds more than its header keeps pipelines: where it also reports
     * creation feedback, the same pipelines come from the cache. */
    if (again.feedback && again.loaded > 32)
        CHECK(again.hits >= 3, "the three pipelines are found in the cache (%u hits)", again.hits);
    printf("%s: the same pipelines again: %u of %u found in the cache\n", test_name, again.hits, again.made);
}

static void test_damaged(const char *folder, const char *path)
{
    check_damaged(folder, path, "truncated by a byte", cut_one);
    check_damaged(folder, path, "truncated to 10 bytes", cut_to_ten);
    check_damaged(folder, path, "empty", empty);
    check_damaged(folder, path, "a flipped byte in the data", flip_data);
    check_damaged(folder, path, "a flipped byte in dlca's header", flip_header);
    check_damaged(folder, path, "another build's key", foreign_key);
    check_damaged(folder, path, "another vendor in the driver's header", foreign_vendor);
    check_damaged(folder, path, "another pipelineCacheUUID in the driver's header", foreign_uuid);
    check_damaged(folder, path, "another driver header version", other_version);
    check_damaged(folder, path, "garbage", garbage);
}

/* Past the size cap (a sparse file): not read, one note, replaced by a good one. */
static void test_too_big(const char *folder, const char *path)
{
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)VK_CACHE_MAX_BYTES + 65) == 0, "a sparse file past the cap");
    if (fd >= 0) close(fd);
    session_result r = session(folder, 1);
    CHECK(r.rc == DLCA_OK && r.state == VK_CACHE_IGNORED && r.notes == 1, "past the cap: ignored with one note (%s)",
          r.err);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size < VK_CACHE_MAX_BYTES, "replaced by a good file");
}

/* The child of close_over_cap(): rc, notes, err, error, validation and saved (the bytes written). */
static void close_over_cap_child(const void *in, void *out)
{
    session_result *r = out;
    vk_context_options o = base;
    snprintf(o.pipeline_cache, sizeof o.pipeline_cache, "%s", (const char *)in);
    if (capture_stderr()) {
        r->rc = err_set(DLCA_ERR, "cannot capture stderr in %s: %s", scratch, strerror(errno));
        collect_stderr(r);
        return;
    }
    vk_context vk;
    const vk_pipeline *p;
    r->rc = vk_context_init(&vk, device_index, &o);
    if (!r->rc) r->rc = vk_pipeline_get(&vk, VK_PIPE_BUFFER_FILL, &p);
    if (!r->rc) vk.cache.max_bytes = 16, vk_cache_close(&vk);
    r->saved = r->rc ? 1 : vk.cache.saved_bytes;
    vk_context_free(&vk); /* safe on a context that failed to start */
    collect_stderr(r);
}

/* A context on `folder` (in a child) that makes a pipeline and then finds its cache over a cap
 * lowered to 16 bytes (every driver's data has a 32-byte header): the number of notes, the text
 * in err. */
static int close_over_cap(const char *folder, char *err, size_t size, size_t *written)
{
    session_result r;
    unlink(stderr_path());
    if (in_child("a context with a lowered cap", close_over_cap_child, folder, &r, sizeof r))
        session_failed(&r), r.saved = 1;
    add_validation(r.validation, r.err);
    snprintf(err, size, "%s", r.err);
    *written = r.saved;
    CHECK(r.rc == DLCA_OK, "a context with a lowered cap: %s", r.error);
    return r.notes;
}

/* A cache grown past the cap is not saved, and a file there is removed, so the next context
 * starts a new cache (rather than none, for ever). */
static void test_grown_past_cap(const char *folder, const char *path)
{
    char err[4096];
    size_t written;
    struct stat st;
    unlink(path);
    int notes = close_over_cap(folder, err, sizeof err, &written);
    CHECK(written == 0 && notes == 1 && strstr(err, "over the cap"), "past the cap: not saved, one note: %s", err);
    CHECK(stat(path, &st) != 0, "past the cap: no file");
    write_all(path, "not a cache", 11); /* ignored (a note), then over the cap: removed, no second note */
    notes = close_over_cap(folder, err, sizeof err, &written);
    CHECK(written == 0 && notes == 1, "an ignored file, then past the cap: one note: %s", err);
    CHECK(stat(path, &st) != 0, "past the cap: the file is removed");
    session_result r = session(folder, 1);
    CHECK(r.state == VK_CACHE_NEW && r.notes == 0 && r.saved > 0, "the next context starts a new cache");
}

/* A directory or a FIFO where the file goes: one note, no wait on the FIFO, left as it was. */
static void test_not_regular(const char *folder, const char *path)
{
    struct stat st;
    CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0, "a directory in the file's place");
    session_result r = session(folder, 1);
    CHECK(r.rc == DLCA_OK && r.state == VK_CACHE_IGNORED && r.notes == 1, "a directory: one note (%d: %s)", r.notes,
          r.err);
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "the directory is left alone");
    CHECK(rmdir(path) == 0 && mkfifo(path, 0600) == 0, "a FIFO in the file's place");
    r = session(folder, 1);
    CHECK(r.rc == DLCA_OK && r.state == VK_CACHE_IGNORED && r.notes == 1, "a FIFO: one note (%d: %s)", r.notes, r.err);
    CHECK(stat(path, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is left alone");
    unlink(path);
}

/* A folder that cannot be made (a file is in the way) or written: one note, and the run goes on. */
static void test_unwritable(void)
{
    write_all(scratch_path("a-file"), "x", 1);
    session_result r = session(scratch_path("a-file/cache"), 1);
    CHECK(r.rc == DLCA_OK && r.made == 3, "under a file: the context works (%s)", r.error);
    CHECK(r.notes == 1 && r.saved == 0, "under a file: one note, nothing saved (%d: %s)", r.notes, r.err);
    if (geteuid() == 0) return; /* root writes in a folder of mode 0500 */
    const char *folder = scratch_path("read-only");
    CHECK(mkdir(folder, 0500) == 0, "a read-only folder");
    r = session(folder, 1);
    CHECK(r.rc == DLCA_OK && r.notes == 1 && r.saved == 0, "read-only folder: one note, nothing saved (%d: %s)",
          r.notes, r.err);
}

/* What a child with one or two contexts reports: the contexts' status, the pipelines' (two
 * writers), the device (the probe), err_message(), its validation messages. */
typedef struct {
    int rc, made, device_index, validation;
    char error[1024];
} context_result;

static void context_result_end(context_result *r)
{
    snprintf(r->error, sizeof r->error, "%s", err_message());
    r->validation = vk_validation_message_count();
}

/* The child of test_two_writers(). */
static void two_writers_child(const void *in, void *out)
{
    context_result *r = out;
    vk_context_options o = base;
    snprintf(o.pipeline_cache, sizeof o.pipeline_cache, "%s", (const char *)in);
    vk_context a, b;
    memset(&b, 0, sizeof b);
    r->rc = vk_context_init(&a, device_index, &o);
    if (!r->rc) r->rc = vk_context_init(&b, device_index, &o);
    if (!r->rc) {
        r->made = make_pipelines(&a);
        if (!r->made) r->made = make_pipelines(&b);
    }
    context_result_end(r); /* the message before vk_context_free */
    vk_context_free(&a);
    vk_context_free(&b);
    r->validation = vk_validation_message_count();
}

/* Two contexts on one folder at once (in one child), each adding: the later save wins and the
 * file is good. */
static void test_two_writers(const char *folder)
{
    context_result w;
    if (in_child("two contexts", two_writers_child, folder, &w, sizeof w)) {
        w.rc = DLCA_ERR;
        snprintf(w.error, sizeof w.error, "the child process failed");
    }
    validation_errors += w.validation;
    CHECK(w.rc == DLCA_OK, "two contexts: %s", w.error);
    if (w.rc) return;
    CHECK(w.made == DLCA_OK, "both make pipelines: %s", w.error);
    session_result r = session(folder, 0);
    CHECK(r.state == VK_CACHE_LOADED && r.notes == 0, "the file is good after both (state %s, %d notes)",
          vk_cache_state_name(r.state), r.notes);
}

/* The child of main's probe: the environment's device (DLCA_DEVICE), or why there is none. */
static void probe_child(const void *in, void *out)
{
    context_result *r = out;
    vk_context probe;
    (void)in;
    r->rc = test_vk_context_init(&probe, -1);
    r->device_index = r->rc ? -1 : probe.device_index;
    context_result_end(r);
    if (!r->rc) vk_context_free(&probe);
    r->validation = vk_validation_message_count();
}

int main(void)
{
    base = test_vk_options();
    context_result probe;
    if (in_child("the device probe", probe_child, NULL, &probe, sizeof probe)) {
        probe.rc = DLCA_ERR;
        snprintf(probe.error, sizeof probe.error, "the child process failed");
    }
    if (probe.rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, probe.error);
    CHECK(probe.rc == DLCA_OK, "vk_context_init: %s", probe.error);
    if (probe.rc) return test_finish(test_name);
    device_index = probe.device_index;
    validation_errors += probe.validation;
    snprintf(scratch, sizeof scratch, "/tmp/dlca_test_vk_cache_XXXXXX");
    if (!mkdtemp(scratch)) return fprintf(stderr, "%s: cannot make a scratch folder\n", test_name), 1;

    char folder[300];
    snprintf(folder, sizeof folder, "%s/cache/dlca", scratch); /* two levels not there yet */
    test_off();
    session_result first = session(folder, 0); /* makes nothing: no file */
    struct stat st;
    CHECK(first.state == VK_CACHE_NEW && stat(first.path, &st) != 0, "a context that makes no pipeline writes no file");
    test_first_and_second(folder);
    test_damaged(folder, first.path);
    test_too_big(folder, first.path);
    test_grown_past_cap(folder, first.path);
    test_not_regular(folder, first.path);
    test_unwritable();
    test_two_writers(folder);

    CHECK(validation_errors == 0, "%d validation messages", validation_errors);
    char command[400];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    if (system(command) != 0) fprintf(stderr, "%s: could not remove %s\n", test_name, scratch);
    return test_finish(test_name);
}
