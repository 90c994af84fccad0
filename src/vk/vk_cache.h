/* vk_cache.h: the persistent pipeline cache. Compiling dlca's pipelines from SPIR-V is most of a
 * run's start-up (seconds for the fused kernels on a GPU driver); a VkPipelineCache saved in the
 * user's cache folder lets the next run skip it. The rules:
 *  - one file a device, driver and dlca build: `pipelines-VVVV-DDDD-KEY.bin` in the folder
 *    (vk_context_options.pipeline_cache), VVVV/DDDD the vendor and device id, KEY a hash of the
 *    device's pipelineCacheUUID, the driver's version, name and info, and every embedded SPIR-V
 *    word (vk_cache_build_hash), so two builds or two GPUs never share a file;
 *  - the file is dlca's header (magic, the key in full, the size and CRC-32 of the data and of
 *    the header) and then the data vkGetPipelineCacheData gave. Before a byte of it reaches the
 *    driver, the header, the CRCs and the driver's own header (VkPipelineCacheHeaderVersionOne:
 *    vendor, device, pipelineCacheUUID) must match this device. A file that does not (truncated,
 *    corrupt, another device's, driver's or build's), one that cannot be read, or a folder that
 *    cannot be written is ignored with ONE note on stderr a context, never an error: the run goes
 *    on and compiles what it needs;
 *  - saved when the context is freed, only when it made pipelines and the data grew since it was
 *    read (a cache the run only read from is left as it is); never past VK_CACHE_MAX_BYTES (past
 *    it the regular file is removed, so the next run starts a new cache rather than none); written
 *    with atomic_file_write (a temp file renamed over the old one), so two dlca processes never
 *    leave a mixed file (the later rename wins; the other's additions are lost, which only costs a
 *    compile), and never over a directory, device, FIFO or socket;
 *  - read with O_NONBLOCK and checked to be a regular file first, so a FIFO cannot stall a run. */
#ifndef DLCA_VK_CACHE_H
#define DLCA_VK_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

struct vk_context;

/* Pipeline cache data dlca reads or writes at most: a cache that grew past it is not saved. The
 * fused kernels are specialised to a model's shape, ~5 MB of NVIDIA pipelines for image: the cap
 * keeps many shapes' (it was set when each seed had its own, 16 a default run). The
 * longest cache folder (vk_context_options.pipeline_cache): room for the file name below the
 * longest path the atomic writer takes. */
enum { VK_CACHE_MAX_BYTES = 256 << 20, VK_CACHE_FOLDER_MAX = 3900 };

typedef enum {
    VK_CACHE_OFF,     /* no persistent cache: none asked for (and no VkPipelineCache at all) */
    VK_CACHE_NEW,     /* no file yet: the cache starts empty and is saved at the end */
    VK_CACHE_LOADED,  /* the file was read and given to the driver */
    VK_CACHE_IGNORED  /* the file (or the folder) was unusable: noted, the cache starts empty */
} vk_cache_state;

typedef struct {
    VkPipelineCache handle; /* VK_NULL_HANDLE when off, or when the driver made none */
    vk_cache_state state;
    char *path;             /* the cache file (malloc'ed); NULL when off */
    uint64_t key;           /* of this device, driver and build (vk_cache.h) */
    size_t loaded_bytes;    /* the driver's data read from the file (0: none) */
    size_t saved_bytes;     /* the driver's data written by vk_cache_close (0: nothing written) */
    size_t max_bytes;       /* data saved at most: VK_CACHE_MAX_BYTES (a test may lower it); more
                               removes the file, so the next run starts a new cache */
    int noted;              /* this context printed its one note */
} vk_cache;

/* Opens the cache of `folder` for this context's device (its device must exist): reads the file
 * when it is usable, creates the VkPipelineCache. NULL or "" folder: off. Never fails the context:
 * whatever goes wrong is one note on stderr and a cache that starts empty (or none). */
void vk_cache_open(struct vk_context *vk, const char *folder);

/* Saves the cache when it grew (creating the folder, mode 0700, where missing), then destroys
 * it; keeps `noted` and the byte counts for a report. Leaves the error channel's message as it
 * was. Safe on a context whose cache is off. */
void vk_cache_close(struct vk_context *vk);

/* A hash of every embedded shader's name and SPIR-V: what identifies this dlca build's kernels. */
uint64_t vk_cache_build_hash(void);

/* "off", "new", "loaded" or "ignored". */
const char *vk_cache_state_name(vk_cache_state state);

#endif
