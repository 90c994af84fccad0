/* test_vk_cache.c: the persistent pipeline cache (src/vk/vk_cache.h) through the vk API. A first
 * context in an empty folder creates it and saves the cache; the next reads it (and, where the
 * driver keeps pipelines and says so, finds them there); one that makes nothing new writes
 * nothing. Every unusable file (truncated, empty, flipped bytes in either header or the data,
 * another build's key, another device's driver header, past the size cap, a directory or a FIFO in
 * its place) and an unwritable folder are one note on stderr, a context that works, and (where
 * the path can hold a file) a good file again afterwards; a directory or FIFO in its place is left
 * as it is. A cache grown past the cap is not saved and its file removed, with one note. "" is
 * off: no VkPipelineCache, nothing written. With DLCA_VALIDATE=1 any validation
 * message fails the test. */
#include "check.h"
#include "crc32.h"
#include "error.h"
#include "vk_cache.h"
#include "vk_context.h"
#include "vk_pipeline.h"
#include "vk_test.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *test_name = "test_vk_cache";
static char scratch[256];
static vk_context_options base; /* the environment's options, the folder set by each session */
static int device_index, validation_errors;

/* What one context did with its cache: open, make pipelines (or not), close. */
typedef struct {
    int rc, notes;
    vk_cache_state state;
    size_t loaded, saved;
    uint32_t made, hits;
    int feedback;
    char path[512], err[4096];
} session_result;

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

/* One context on `folder` with stderr captured (the notes), making pipelines when `make`. */
static session_result session(const char *folder, int make)
{
    session_result r;
    memset(&r, 0, sizeof r);
    vk_context_options o = base;
    snprintf(o.pipeline_cache, sizeof o.pipeline_cache, "%s", folder);
    char err_path[300];
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", scratch);
    fflush(stderr);
    int saved = dup(2), fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (saved < 0 || fd < 0) {
        r.rc = DLCA_ERR;
        return r;
    }
    dup2(fd, 2);
    close(fd);
    vk_context vk;
    r.rc = vk_context_init(&vk, device_index, &o);
    if (!r.rc) {
        r.state = vk.cache.state, r.loaded = vk.cache.loaded_bytes, r.feedback = vk.creation_feedback;
        snprintf(r.path, sizeof r.path, "%s", vk.cache.path ? vk.cache.path : "");
        if (make) r.rc = make_pipelines(&vk);
        r.made = vk.pipelines_created, r.hits = vk.pipeline_cache_hits;
        vk_cache_close(&vk); /* vk_context_free's own call then finds it closed */
        r.saved = vk.cache.saved_bytes;
        validation_errors += vk.validation_errors;
        vk_context_free(&vk);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(err_path, "r");
    size_t n = f ? fread(r.err, 1, sizeof r.err - 1, f) : 0;
    r.err[n] = '\0';
    if (f) fclose(f);
    r.notes = count_notes(r.err);
    if (r.rc) /* the failure's own message, for the check that reports it */
        snprintf(r.err + n, sizeof r.err - n, "%s(failed: %s)", n ? " " : "", err_message());
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
    CHECK(r.rc == DLCA_OK, "%s: the context works: %s", what, err_message());
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
    CHECK(first.rc == DLCA_OK, "first context: %s", err_message());
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

/* A context on `folder` that makes a pipeline and then finds its cache over a cap lowered to 16
 * bytes (every driver's data has a 32-byte header): the number of notes, the text in err. */
static int close_over_cap(const char *folder, char *err, size_t size, size_t *written)
{
    vk_context_options o = base;
    snprintf(o.pipeline_cache, sizeof o.pipeline_cache, "%s", folder);
    char err_path[300];
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", scratch);
    fflush(stderr);
    int saved = dup(2), fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (saved < 0 || fd < 0) return -1;
    dup2(fd, 2), close(fd);
    vk_context vk;
    const vk_pipeline *p;
    int rc = vk_context_init(&vk, device_index, &o);
    if (!rc) rc = vk_pipeline_get(&vk, VK_PIPE_BUFFER_FILL, &p);
    if (!rc) vk.cache.max_bytes = 16, vk_cache_close(&vk);
    *written = rc ? 1 : vk.cache.saved_bytes;
    if (!rc) validation_errors += vk.validation_errors, vk_context_free(&vk);
    fflush(stderr);
    dup2(saved, 2), close(saved);
    FILE *f = fopen(err_path, "r");
    size_t n = f ? fread(err, 1, size - 1, f) : 0;
    err[n] = '\0';
    if (f) fclose(f);
    CHECK(rc == DLCA_OK, "a context with a lowered cap: %s", err_message());
    return count_notes(err);
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
    CHECK(r.rc == DLCA_OK && r.made == 3, "under a file: the context works (%s)", err_message());
    CHECK(r.notes == 1 && r.saved == 0, "under a file: one note, nothing saved (%d: %s)", r.notes, r.err);
    if (geteuid() == 0) return; /* root writes in a folder of mode 0500 */
    const char *folder = scratch_path("read-only");
    CHECK(mkdir(folder, 0500) == 0, "a read-only folder");
    r = session(folder, 1);
    CHECK(r.rc == DLCA_OK && r.notes == 1 && r.saved == 0, "read-only folder: one note, nothing saved (%d: %s)",
          r.notes, r.err);
}

/* Two contexts on one folder at once, each adding: the later save wins and the file is good. */
static void test_two_writers(const char *folder)
{
    vk_context_options o = base;
    snprintf(o.pipeline_cache, sizeof o.pipeline_cache, "%s", folder);
    vk_context a, b;
    int rc = vk_context_init(&a, device_index, &o);
    if (!rc) rc = vk_context_init(&b, device_index, &o);
    CHECK(rc == DLCA_OK, "two contexts: %s", err_message());
    if (rc) return;
    CHECK(make_pipelines(&a) == DLCA_OK && make_pipelines(&b) == DLCA_OK, "both make pipelines");
    validation_errors += a.validation_errors + b.validation_errors;
    vk_context_free(&a);
    vk_context_free(&b);
    session_result r = session(folder, 0);
    CHECK(r.state == VK_CACHE_LOADED && r.notes == 0, "the file is good after both (state %s, %d notes)",
          vk_cache_state_name(r.state), r.notes);
}

int main(void)
{
    vk_context probe;
    int rc = test_vk_context_init(&probe, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);
    device_index = probe.device_index;
    validation_errors += probe.validation_errors;
    vk_context_free(&probe);
    base = test_vk_options();
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
