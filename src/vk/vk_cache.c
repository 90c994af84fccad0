/* vk_cache.c: the persistent pipeline cache (vk_cache.h): key, file checks, load, save. */
#include "vk_cache.h"

#include "atomic_file.h"
#include "crc32.h"
#include "error.h"
#include "vk_check.h"
#include "vk_context.h"
#include "vk_pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dlca's header before the driver's data, all fields little-endian:
 *   0 magic "DLCAPIPE", 8 u32 format version, 12 u32 vendorID, 16 u32 deviceID, 20 u32
 *   driverVersion, 24 pipelineCacheUUID[16], 40 u64 key (vk_cache.h), 48 u64 data bytes,
 *   56 u32 CRC-32 of the data, 60 u32 CRC-32 of bytes 0..59. */
enum { HEADER_BYTES = 64, FORMAT_VERSION = 1, VULKAN_HEADER_BYTES = 32 };
static const char magic[8] = {'D', 'L', 'C', 'A', 'P', 'I', 'P', 'E'};

const char *vk_cache_state_name(vk_cache_state state)
{
    switch (state) {
    case VK_CACHE_NEW: return "new";
    case VK_CACHE_LOADED: return "loaded";
    case VK_CACHE_IGNORED: return "ignored";
    default: return "off";
    }
}

/* The one note a context prints about its cache; later ones are dropped (the first says what
 * went wrong, and every cause leaves the run as it would be without a cache). */
static void note(vk_context *vk, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void note(vk_context *vk, const char *format, ...)
{
    if (vk->cache.noted) return;
    vk->cache.noted = 1;
    char text[1024];
    va_list list;
    va_start(list, format);
    vsnprintf(text, sizeof text, format, list);
    va_end(list);
    fprintf(stderr, "dlca: note: pipeline cache %s: %s\n", vk->cache.path, text);
}

/* ---- the key ---- */

enum { HASH_PRIME = 0x100000001b3ull };
static const uint64_t hash_start = 0xcbf29ce484222325ull;

static uint64_t hash_bytes(uint64_t h, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * HASH_PRIME;
    return h;
}

/* A word at a time over four independent lanes, folded at the end: the SPIR-V is megabytes,
 * hashed at every start, and one chain of multiplies would wait on itself (2 ms against 0.5). */
static uint64_t hash_words(uint64_t h, const uint32_t *words, size_t count)
{
    uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
    size_t i = 0;
    for (; i + 4 <= count; i += 4)
        for (int k = 0; k < 4; k++) lane[k] = (lane[k] ^ words[i + (size_t)k]) * HASH_PRIME;
    for (; i < count; i++) lane[0] = (lane[0] ^ words[i]) * HASH_PRIME;
    for (int k = 1; k < 4; k++) lane[0] = hash_bytes(lane[0], &lane[k], sizeof lane[k]);
    return lane[0];
}

uint64_t vk_cache_build_hash(void)
{
    uint64_t h = hash_bytes(hash_start, DLCA_VERSION, sizeof DLCA_VERSION);
    for (size_t i = 0; i < vk_shader_count(); i++) {
        const vk_shader_code *s = vk_shader_at(i);
        uint64_t size = s->size;
        h = hash_bytes(h, s->name, strlen(s->name) + 1);
        h = hash_bytes(h, &size, sizeof size);
        h = hash_words(h, s->code, s->size / 4);
    }
    return h;
}

/* The device, the driver (its version often stays put across Mesa releases, so its name and
 * info string too) and the build. */
static uint64_t cache_key(const vk_context *vk)
{
    VkPhysicalDeviceDriverProperties driver = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &driver};
    vkGetPhysicalDeviceProperties2(vk->physical, &props);
    uint32_t ids[4] = {vk->props.vendorID, vk->props.deviceID, vk->props.driverVersion, (uint32_t)driver.driverID};
    uint64_t h = hash_bytes(hash_start, ids, sizeof ids);
    h = hash_bytes(h, vk->props.pipelineCacheUUID, VK_UUID_SIZE);
    h = hash_bytes(h, driver.driverName, strnlen(driver.driverName, VK_MAX_DRIVER_NAME_SIZE));
    h = hash_bytes(h, driver.driverInfo, strnlen(driver.driverInfo, VK_MAX_DRIVER_INFO_SIZE));
    uint64_t build = vk_cache_build_hash();
    return hash_bytes(h, &build, sizeof build);
}

/* ---- the header ---- */

static void put32(unsigned char *at, uint32_t v)
{
    for (int i = 0; i < 4; i++) at[i] = (unsigned char)(v >> 8 * i);
}

static void put64(unsigned char *at, uint64_t v)
{
    for (int i = 0; i < 8; i++) at[i] = (unsigned char)(v >> 8 * i);
}

static uint32_t get32(const unsigned char *at)
{
    return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

static uint64_t get64(const unsigned char *at) { return (uint64_t)get32(at) | (uint64_t)get32(at + 4) << 32; }

static void header_write(const vk_context *vk, uint64_t key, const unsigned char *data, size_t size,
                         unsigned char *h)
{
    memcpy(h, magic, sizeof magic);
    put32(h + 8, FORMAT_VERSION);
    put32(h + 12, vk->props.vendorID), put32(h + 16, vk->props.deviceID), put32(h + 20, vk->props.driverVersion);
    memcpy(h + 24, vk->props.pipelineCacheUUID, VK_UUID_SIZE);
    put64(h + 40, key), put64(h + 48, size);
    put32(h + 56, crc32_update(0, data, size));
    put32(h + 60, crc32_update(0, h, 60));
}

/* Why the file's `size` bytes cannot be given to this device, or NULL when they can. Checks dlca's
 * header and then the driver's (VkPipelineCacheHeaderVersionOne), whose fields the spec fixes. */
static const char *file_problem(const vk_context *vk, uint64_t key, const unsigned char *file, size_t size)
{
    if (size < HEADER_BYTES || memcmp(file, magic, sizeof magic) != 0) return "not a dlca pipeline cache";
    if (get32(file + 60) != crc32_update(0, file, 60)) return "its header is corrupt";
    if (get32(file + 8) != FORMAT_VERSION) return "written by another version of dlca";
    if (get32(file + 12) != vk->props.vendorID || get32(file + 16) != vk->props.deviceID ||
        get32(file + 20) != vk->props.driverVersion || memcmp(file + 24, vk->props.pipelineCacheUUID, VK_UUID_SIZE) ||
        get64(file + 40) != key)
        return "made for another device, driver or dlca build";
    const unsigned char *data = file + HEADER_BYTES;
    if (get64(file + 48) != size - HEADER_BYTES) return "truncated";
    if (get32(file + 56) != crc32_update(0, data, size - HEADER_BYTES)) return "its data is corrupt";
    size_t n = size - HEADER_BYTES;
    if (n < VULKAN_HEADER_BYTES || get32(data) < VULKAN_HEADER_BYTES || get32(data) > n)
        return "the driver's header is missing";
    if (get32(data + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || get32(data + 8) != vk->props.vendorID ||
        get32(data + 12) != vk->props.deviceID || memcmp(data + 16, vk->props.pipelineCacheUUID, VK_UUID_SIZE))
        return "the driver's header names another device or driver";
    return NULL;
}

/* ---- reading ---- */

/* The file's bytes (malloc'ed), or NULL with why[] set ("" when there is no file: a first run). */
static unsigned char *file_read(const char *path, size_t *size, char why[160])
{
    why[0] = '\0', *size = 0;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) snprintf(why, 160, "cannot read it: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    unsigned char *data = NULL;
    if (fstat(fd, &st) != 0) snprintf(why, 160, "cannot read it: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode)) snprintf(why, 160, "not a regular file (left as it is)");
    else if (st.st_size > (off_t)VK_CACHE_MAX_BYTES + HEADER_BYTES)
        snprintf(why, 160, "%lld MiB, over the cap of %d MiB", (long long)(st.st_size >> 20), VK_CACHE_MAX_BYTES >> 20);
    else if (!(data = malloc(st.st_size ? (size_t)st.st_size : 1))) snprintf(why, 160, "out of memory reading it");
    size_t n = 0;
    while (data && n < (size_t)st.st_size) {
        ssize_t got = read(fd, data + n, (size_t)st.st_size - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            snprintf(why, 160, "cannot read it: %s", got < 0 ? strerror(errno) : "it shrank while being read");
            free(data), data = NULL;
            break;
        }
        n += (size_t)got;
    }
    close(fd);
    *size = n;
    return data;
}

static int cache_create(vk_context *vk, const void *data, size_t size)
{
    VkPipelineCacheCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = size,
        .pInitialData = data,
    };
    if (vkCreatePipelineCache(vk->device, &info, NULL, &vk->cache.handle) == VK_SUCCESS) return DLCA_OK;
    vk->cache.handle = VK_NULL_HANDLE; /* not every driver clears it on failure */
    return DLCA_ERR;
}

void vk_cache_open(vk_context *vk, const char *folder)
{
    vk_cache *c = &vk->cache;
    memset(c, 0, sizeof *c);
    c->max_bytes = VK_CACHE_MAX_BYTES;
    if (!folder || !folder[0]) return;
    char name[64];
    uint64_t key = c->key = cache_key(vk);
    snprintf(name, sizeof name, "pipelines-%04x-%04x-%016llx.bin", vk->props.vendorID & 0xffffu,
             vk->props.deviceID & 0xffffu, (unsigned long long)key);
    size_t n = strlen(folder) + 1 + strlen(name) + 1;
    if (!(c->path = malloc(n))) return; /* no cache; the run itself will meet the shortage */
    snprintf(c->path, n, "%s%s%s", folder, folder[strlen(folder) - 1] == '/' ? "" : "/", name);
    c->state = VK_CACHE_NEW;
    size_t size;
    char why[160];
    unsigned char *file = file_read(c->path, &size, why);
    const char *problem = file ? file_problem(vk, key, file, size) : why[0] ? why : NULL;
    if (file && !problem) {
        if (cache_create(vk, file + HEADER_BYTES, size - HEADER_BYTES) == DLCA_OK)
            c->state = VK_CACHE_LOADED, c->loaded_bytes = size - HEADER_BYTES;
        else
            problem = "the driver refused its data";
    }
    free(file);
    if (problem) c->state = VK_CACHE_IGNORED, note(vk, "%s; ignored, the pipelines are compiled", problem);
    if (!c->handle && cache_create(vk, NULL, 0) != DLCA_OK)
        note(vk, "the driver made no pipeline cache; every pipeline is compiled, nothing saved");
}

/* ---- saving ---- */

/* Makes `folder` and the folders above it that are missing (mode 0700, the XDG rule for
 * cache folders). */
static int folder_make(const char *folder)
{
    char *path = strdup(folder);
    if (!path) return err_set(DLCA_ERR_NOMEM, "out of memory");
    int rc = DLCA_OK;
    for (char *at = path + 1; !rc; at++) {
        if (*at != '/' && *at != '\0') continue;
        char keep = *at;
        *at = '\0';
        struct stat st;
        if (stat(path, &st) != 0 && mkdir(path, 0700) != 0 && errno != EEXIST)
            rc = err_set(DLCA_ERR, "cannot create the folder %s: %s", path, strerror(errno));
        else if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            rc = err_set(DLCA_ERR, "%s is not a folder", path);
        *at = keep;
        if (!keep) break;
    }
    free(path);
    return rc;
}

/* The cache's data with dlca's header before it (malloc'ed), or NULL with the message set. */
static unsigned char *cache_data(vk_context *vk, size_t *size)
{
    size_t n = 0;
    if (VK_STATUS(vkGetPipelineCacheData(vk->device, vk->cache.handle, &n, NULL))) return NULL;
    if (n > vk->cache.max_bytes) {
        /* The file is removed rather than kept: a cache that only grows would stay over the cap,
         * never saved again, and the next run starts a new one with what it uses. */
        struct stat st;
        int removed = lstat(vk->cache.path, &st) != 0 ? errno == ENOENT
                                                      : S_ISREG(st.st_mode) && unlink(vk->cache.path) == 0;
        err_set(DLCA_ERR, "%zu KiB of data, over the cap of %zu KiB (%s)", n >> 10, vk->cache.max_bytes >> 10,
                removed ? "the file is removed: the next run starts a new cache" : "and the file cannot be removed");
        return NULL;
    }
    unsigned char *file = malloc(HEADER_BYTES + (n ? n : 1));
    if (!file) return err_set(DLCA_ERR_NOMEM, "out of memory saving it"), NULL;
    /* VK_INCOMPLETE: it grew since the size was asked for; what fits is still a valid cache. */
    VkResult r = vkGetPipelineCacheData(vk->device, vk->cache.handle, &n, file + HEADER_BYTES);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        VK_STATUS(r);
        free(file);
        return NULL;
    }
    *size = n;
    return file;
}

/* Writes the cache file: its folder first where missing, then header and data in one
 * atomic_file_write. */
static int cache_save(vk_context *vk)
{
    vk_cache *c = &vk->cache;
    char *folder = strdup(c->path), *slash = folder ? strrchr(folder, '/') : NULL;
    if (!folder) return err_set(DLCA_ERR_NOMEM, "out of memory saving it");
    if (slash && slash != folder) *slash = '\0';
    int rc = folder_make(folder);
    free(folder);
    size_t size = 0;
    unsigned char *file = rc ? NULL : cache_data(vk, &size);
    if (!rc && !file) rc = DLCA_ERR;
    if (!rc) {
        header_write(vk, c->key, file + HEADER_BYTES, size, file);
        rc = atomic_file_write(c->path, file, HEADER_BYTES + size);
    }
    if (!rc) c->saved_bytes = size;
    free(file);
    return rc;
}

void vk_cache_close(vk_context *vk)
{
    vk_cache *c = &vk->cache;
    /* A hung device's cache is not trusted; the run failed anyway. */
    if (c->handle && c->path && !vk->hung) {
        char kept[1024]; /* the message of whatever failed before: the caller reports it */
        snprintf(kept, sizeof kept, "%s", err_message());
        size_t size = 0;
        int rc = VK_STATUS(vkGetPipelineCacheData(vk->device, c->handle, &size, NULL));
        /* A context that made no pipeline (`--device auto` trying a CPU driver) has nothing to add. */
        if (!rc && vk->pipelines_created > 0 && size > c->loaded_bytes) rc = cache_save(vk);
        if (rc) note(vk, "%s; not saved", err_message());
        if (kept[0]) err_set(DLCA_ERR, "%s", kept);
        else err_clear();
    }
    if (c->handle) vkDestroyPipelineCache(vk->device, c->handle, NULL);
    free(c->path);
    c->handle = VK_NULL_HANDLE, c->path = NULL;
}
