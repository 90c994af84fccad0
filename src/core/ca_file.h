/* ca_file.h: the model file (.dlca), which train/resume, run, eval, the viewer and export share.
 * Little-endian, written field by field (version 6; version 1 files, which end the config at
 * the seed, load with a constant learning rate, version 1 and 2 files without a pool,
 * versions 1 to 3 with the loss at a round's last step, versions 1 to 4 with one moore
 * order shared by every kernel, and versions 1 to 5 with one start a persistence round and a
 * weight decay of 0.01):
 *   magic "DLCA\r\n\x1a\n", u32 version, u32 flags (bit 0: training state, bit 1: target image,
 *   bit 2: the run's best circuit, bit 3: the sample pool; bits 2 and 3 only beside bit 0)
 *   config: preset[32] NUL-padded, i32 height, width, boundary, channels, kernels,
 *           perception_depth, perception_widths[depth], update_depth, update_widths[depth],
 *           update_wiring, steps, f64 fire_rate, i32 loss_channels, start, target, batch,
 *           train_steps, f64 learning_rate, u64 seed,
 *           (version 2) u32 lr_schedule, u32 warmup, f64 lr_final, f64 init_logit,
 *           (version 3) u32 pool, u32 window, u32 damage, (version 4) u32 window_loss,
 *           (version 5) u32 perception_wiring, (version 6) u32 pool_starts, f64 weight_decay
 *   u64 gate_count; per layer (perception, then update): u32 n_in, n_out, input_a[n_out], input_b[n_out]
 *           (the moore layer: 8 gates, or 8 a kernel where perception_wiring is per-kernel)
 *   f32 logits[gate_count][16]
 *   flag 0: u64 step, f64 seconds, f32 moment1[gate_count*16], f32 moment2[gate_count*16]
 *   flag 1: u32 channels, height, width, u8 bits[channels][height][width] (each 0 or 1)
 *   flag 2: u64 best_step (>= 1), u64 exact_step, f64 best_wrong, f64 best_soft, u32 best_exact
 *           (0 or 1), f32 logits[gate_count*16], moment1[gate_count*16], moment2[gate_count*16]
 *   flag 3: u32 pool (= the config's), channels (= C), cells (= H W), u8 bits[ceil(pool C cells / 8)]:
 *           grid bit i (sample, channel, cell) is bit i % 8 of byte i / 8; the last byte's unused
 *           bits are 0
 *   u32 CRC-32 (zlib's) of every byte before it; nothing after it. */
#ifndef DLCA_CA_FILE_H
#define DLCA_CA_FILE_H

#include "ca_model.h"

#include <stddef.h>
#include <stdint.h>

enum { CA_FILE_VERSION = 6, CA_FILE_MAGIC_SIZE = 8 };
/* Flag 2 is an optional part, not a new layout, so it needed no new version: a reader that does not
 * know the flag refuses the file naming it ("unknown flags"), rather than misread it. */
enum { CA_FILE_FLAG_STATE = 1u << 0, CA_FILE_FLAG_TARGET = 1u << 1, CA_FILE_FLAG_BEST = 1u << 2 };
/* Flag 3 likewise: the sample pool (ca_pool.h) of a checkpoint, so a run trained from a pool
 * resumes with the grids it had. */
enum { CA_FILE_FLAG_POOL = 1u << 3 };

/* Flag 3's grid bits for `config` (pool x C x H x W; 0 without a pool), and the bytes they take. */
size_t ca_file_pool_bits(const ca_config *config);
size_t ca_file_pool_bytes(const ca_config *config);

/* "DLCA\r\n\x1a\n": the CR-LF and ^Z catch text-mode transfers, as in PNG's signature. */
extern const uint8_t ca_file_magic[CA_FILE_MAGIC_SIZE];

/* Files larger than this are refused before they are read. */
#define CA_FILE_MAX_SIZE ((size_t)1 << 30)

/* The best circuit a run has measured (src/train/ca_watch.h), kept so that a resumed run writes
 * at its end what the uninterrupted run would: the state before the update of the step that
 * measured it. Arrays are [gate_count * 16]. */
typedef struct {
    uint64_t step;        /* the step that measured it (1-based); 0: none, and the file has no flag 2 */
    uint64_t exact_step;  /* the run's first step whose circuit was verified exact; 0: none */
    double wrong, soft;   /* its hard loss (wrong cell bits) and soft loss on that step's round */
    int exact;            /* verified exact (src/train/ca_exact.h) */
    float *logits, *moment1, *moment2;
} ca_best_state;

/* AdamW state for resuming. moment1/moment2 are [gate_count * 16]; NULL after a load when the
 * file has none. */
typedef struct {
    uint64_t step;   /* optimizer steps done */
    double seconds;  /* training time so far */
    float *moment1, *moment2;
    ca_best_state best; /* flag 2 */
    uint8_t *pool;      /* flag 3: the pool's grids as bits, ca_file_pool_bytes of them; NULL: none */
} ca_train_state;

/* The training target as bits [channels][height][width] (height/width = the config's grid,
 * loss channels <= channels <= the config's C); bits is NULL after a load when the file has none. */
typedef struct {
    int channels, height, width;
    uint8_t *bits;
} ca_target_image;

/* Writes `model` (and the optional state and target) to `path` atomically: a temp file in the
 * same directory, fsync'd and renamed over `path`. On failure `path` is untouched. */
int ca_file_save(const char *path, const ca_model *model, const ca_train_state *state, const ca_target_image *target);

/* Reads and checks a model file into `model`; `state` / `target` may be NULL to skip them (they
 * are still checked). On failure nothing is allocated, the outputs are zeroed and the message
 * names the file and what is wrong. */
int ca_file_load(const char *path, ca_model *model, ca_train_state *state, ca_target_image *target);

/* ca_file_load on bytes already in memory; `name` stands for the file in messages. */
int ca_file_load_memory(const uint8_t *data, size_t size, const char *name, ca_model *model, ca_train_state *state,
                        ca_target_image *target);

/* Serialises to a malloc'd buffer (what ca_file_save writes), for tests and tools that embed. */
int ca_file_save_memory(uint8_t **data, size_t *size, const ca_model *model, const ca_train_state *state,
                        const ca_target_image *target);

/* Free what a load allocated and zero the struct; safe on a zeroed one. */
void ca_train_state_free(ca_train_state *state);
void ca_target_image_free(ca_target_image *target);

#endif
