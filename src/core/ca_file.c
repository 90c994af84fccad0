/* ca_file.c: writing a model file (format in ca_file.h). The bytes are built in memory field
 * by field, then written atomically: temp file, fsync, rename, fsync of the directory, so a
 * crash or a full disk never leaves a half-written model at the destination. */
#include "ca_file.h"

#include "atomic_file.h"
#include "crc32.h"
#include "error.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const uint8_t ca_file_magic[CA_FILE_MAGIC_SIZE] = {'D', 'L', 'C', 'A', '\r', '\n', 0x1a, '\n'};

/* A growing byte buffer; `failed` latches an allocation failure so the put_* calls need no checks. */
typedef struct {
    uint8_t *data;
    size_t size, capacity;
    int failed;
} byte_sink;

static void put_bytes(byte_sink *s, const void *bytes, size_t n)
{
    if (s->failed) return;
    if (n > s->capacity - s->size) {
        size_t capacity = s->capacity ? s->capacity : 4096;
        while (capacity - s->size < n) {
            if (capacity > SIZE_MAX / 2) {
                s->failed = 1;
                return;
            }
            capacity *= 2;
        }
        uint8_t *grown = realloc(s->data, capacity);
        if (!grown) {
            s->failed = 1;
            return;
        }
        s->data = grown, s->capacity = capacity;
    }
    memcpy(s->data + s->size, bytes, n);
    s->size += n;
}

static void put_u32(byte_sink *s, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put_bytes(s, b, 4);
}

static void put_u64(byte_sink *s, uint64_t v)
{
    put_u32(s, (uint32_t)v);
    put_u32(s, (uint32_t)(v >> 32));
}

/* Two's complement, as the reader's memcpy into int32_t expects. */
static void put_i32(byte_sink *s, int v) { put_u32(s, (uint32_t)(int32_t)v); }

static void put_f32(byte_sink *s, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_u32(s, bits);
}

static void put_f64(byte_sink *s, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_u64(s, bits);
}

static void put_f32_array(byte_sink *s, const float *values, size_t n)
{
    for (size_t i = 0; i < n; i++) put_f32(s, values[i]);
}

/* The name is NUL-padded so equal configs give equal bytes, whatever follows the NUL in memory. */
static void put_config(byte_sink *s, const ca_config *c)
{
    char name[CA_NAME_LENGTH] = {0};
    memcpy(name, c->preset, strnlen(c->preset, CA_NAME_LENGTH));
    put_bytes(s, name, CA_NAME_LENGTH);
    put_i32(s, c->height), put_i32(s, c->width), put_i32(s, (int)c->boundary);
    put_i32(s, c->channels), put_i32(s, c->kernels);
    put_i32(s, c->perception_depth);
    for (int i = 0; i < c->perception_depth; i++) put_i32(s, c->perception_widths[i]);
    put_i32(s, c->update_depth);
    for (int i = 0; i < c->update_depth; i++) put_i32(s, c->update_widths[i]);
    put_i32(s, (int)c->update_wiring), put_i32(s, c->steps), put_f64(s, c->fire_rate);
    put_i32(s, c->loss_channels), put_i32(s, (int)c->start), put_i32(s, (int)c->target);
    put_i32(s, c->batch), put_i32(s, c->train_steps), put_f64(s, c->learning_rate);
    put_u64(s, c->seed);
    put_u32(s, (uint32_t)c->lr_schedule), put_u32(s, (uint32_t)c->warmup), put_f64(s, c->lr_final);
    put_f64(s, c->init_logit);
    put_u32(s, (uint32_t)c->pool), put_u32(s, (uint32_t)c->window), put_u32(s, (uint32_t)c->damage);
    put_u32(s, (uint32_t)c->window_loss);
    put_u32(s, (uint32_t)c->perception_wiring);
    put_u32(s, (uint32_t)c->pool_starts);
    put_f64(s, c->weight_decay);
}

static void put_wiring(byte_sink *s, const wiring *w)
{
    put_u32(s, (uint32_t)w->n_in), put_u32(s, (uint32_t)w->n_out);
    for (int g = 0; g < w->n_out; g++) put_u32(s, (uint32_t)w->input_a[g]);
    for (int g = 0; g < w->n_out; g++) put_u32(s, (uint32_t)w->input_b[g]);
}

static void put_model(byte_sink *s, const ca_model *m, const ca_train_state *state, const ca_target_image *target)
{
    const ca_config *c = &m->config;
    size_t values = m->gate_count * GATE_OP_COUNT;
    put_bytes(s, ca_file_magic, CA_FILE_MAGIC_SIZE);
    put_u32(s, CA_FILE_VERSION);
    int best = state && state->best.step > 0, pool = state && state->pool;
    put_u32(s, (state ? CA_FILE_FLAG_STATE : 0u) | (target ? CA_FILE_FLAG_TARGET : 0u) | (best ? CA_FILE_FLAG_BEST : 0u) |
                   (pool ? CA_FILE_FLAG_POOL : 0u));
    put_config(s, c);
    put_u64(s, m->gate_count);
    for (int l = 0; l < c->perception_depth; l++) put_wiring(s, &m->perception[l]);
    for (int l = 0; l < c->update_depth; l++) put_wiring(s, &m->update[l]);
    put_f32_array(s, m->logits, values);
    if (state) {
        put_u64(s, state->step), put_f64(s, state->seconds);
        put_f32_array(s, state->moment1, values);
        put_f32_array(s, state->moment2, values);
    }
    if (target) {
        put_u32(s, (uint32_t)target->channels), put_u32(s, (uint32_t)target->height), put_u32(s, (uint32_t)target->width);
        put_bytes(s, target->bits, (size_t)target->channels * (size_t)target->height * (size_t)target->width);
    }
    if (best) {
        const ca_best_state *b = &state->best;
        put_u64(s, b->step), put_u64(s, b->exact_step), put_f64(s, b->wrong), put_f64(s, b->soft);
        put_u32(s, (uint32_t)b->exact);
        put_f32_array(s, b->logits, values);
        put_f32_array(s, b->moment1, values);
        put_f32_array(s, b->moment2, values);
    }
    if (pool) {
        put_u32(s, (uint32_t)c->pool), put_u32(s, (uint32_t)c->channels), put_u32(s, (uint32_t)(c->height * c->width));
        put_bytes(s, state->pool, ca_file_pool_bytes(c));
    }
    if (!s->failed) put_u32(s, crc32_update(0, s->data, s->size));
}

/* Index of the first NaN/Inf in values (negative ones too when `nonnegative`), or n. */
static size_t first_bad(const float *values, size_t n, int nonnegative)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(values[i]) || (nonnegative && values[i] < 0.0f)) return i;
    return n;
}

static int check_best(const ca_best_state *b, size_t values)
{
    size_t bad;
    if (!b->logits || !b->moment1 || !b->moment2) return err_set(DLCA_ERR, "the best circuit has no logits or moments");
    if (!(b->wrong >= 0.0) || !isfinite(b->wrong) || !(b->soft >= 0.0) || !isfinite(b->soft) || (b->exact != 0 && b->exact != 1))
        return err_set(DLCA_ERR, "the best circuit's losses (%g, %g) or exact flag (%d) are out of range", b->wrong,
                       b->soft, b->exact);
    if ((bad = first_bad(b->logits, values, 0)) < values)
        return err_set(DLCA_ERR, "the best circuit's logits[%zu] = %g is not finite", bad, (double)b->logits[bad]);
    if ((bad = first_bad(b->moment1, values, 0)) < values || (bad = first_bad(b->moment2, values, 1)) < values)
        return err_set(DLCA_ERR, "the best circuit's moments at %zu are not finite (or moment2 < 0)", bad);
    return DLCA_OK;
}

size_t ca_file_pool_bits(const ca_config *c)
{
    return (size_t)c->pool * (size_t)c->channels * (size_t)c->height * (size_t)c->width;
}

size_t ca_file_pool_bytes(const ca_config *c) { return (ca_file_pool_bits(c) + 7) / 8; }

/* The pool's bits fit the config: it has a pool, and the last byte's unused bits are 0. */
static int check_pool(const uint8_t *bits, const ca_config *c)
{
    size_t bytes = ca_file_pool_bytes(c), used = ca_file_pool_bits(c);
    if (bytes == 0) return err_set(DLCA_ERR, "a sample pool is stored, but the config has none (pool = 0)");
    if (used % 8 && bits[bytes - 1] >> (used % 8))
        return err_set(DLCA_ERR, "the pool's last byte 0x%02x sets bits past its %zu grid bits", bits[bytes - 1], used);
    return DLCA_OK;
}

static int check_state(const ca_train_state *state, size_t values, const ca_config *c)
{
    size_t bad;
    if (state->best.step > 0 && check_best(&state->best, values)) return DLCA_ERR;
    if (state->pool && check_pool(state->pool, c)) return DLCA_ERR;
    if (!state->moment1 || !state->moment2) return err_set(DLCA_ERR, "the training state has no moments");
    if (!isfinite(state->seconds) || state->seconds < 0.0)
        return err_set(DLCA_ERR, "training seconds %g is not a finite time", state->seconds);
    if ((bad = first_bad(state->moment1, values, 0)) < values)
        return err_set(DLCA_ERR, "moment1[%zu] = %g is not finite", bad, (double)state->moment1[bad]);
    if ((bad = first_bad(state->moment2, values, 1)) < values)
        return err_set(DLCA_ERR, "moment2[%zu] = %g is not finite and >= 0", bad, (double)state->moment2[bad]);
    return DLCA_OK;
}

static int check_target(const ca_target_image *t, const ca_config *c)
{
    if (!t->bits || t->channels < 1 || t->channels > c->channels || t->height != c->height || t->width != c->width)
        return err_set(DLCA_ERR, "target image %dx%dx%d does not fit the %dx%d grid of %d channels", t->channels,
                       t->height, t->width, c->height, c->width, c->channels);
    if (t->channels < c->loss_channels)
        return err_set(DLCA_ERR, "target image has %d channel%s, but the config's loss reads %d", t->channels,
                       t->channels == 1 ? "" : "s", c->loss_channels);
    size_t n = (size_t)t->channels * (size_t)t->height * (size_t)t->width;
    for (size_t i = 0; i < n; i++)
        if (t->bits[i] > 1) return err_set(DLCA_ERR, "target bit %zu is %d, not 0 or 1", i, t->bits[i]);
    return DLCA_OK;
}

/* Refuses what the loader would refuse, so a save never produces a file that cannot be read. */
static int check_savable(const ca_model *m, const ca_train_state *state, const ca_target_image *target)
{
    size_t values = m->gate_count * GATE_OP_COUNT, bad;
    if (!m->logits || m->gate_count == 0) return err_set(DLCA_ERR, "the model has no logits");
    if (ca_config_check(&m->config)) return DLCA_ERR;
    if (!memchr(m->config.preset, '\0', CA_NAME_LENGTH))
        return err_set(DLCA_ERR, "the preset name is not NUL-terminated within %d bytes", CA_NAME_LENGTH);
    if ((bad = first_bad(m->logits, values, 0)) < values)
        return err_set(DLCA_ERR, "logits[%zu] (gate %zu) = %g is not finite", bad, bad / GATE_OP_COUNT,
                       (double)m->logits[bad]);
    if (state && check_state(state, values, &m->config)) return DLCA_ERR;
    if (target && check_target(target, &m->config)) return DLCA_ERR;
    return DLCA_OK;
}

int ca_file_save_memory(uint8_t **data, size_t *size, const ca_model *model, const ca_train_state *state,
                        const ca_target_image *target)
{
    *data = NULL, *size = 0;
    if (check_savable(model, state, target)) return DLCA_ERR;
    byte_sink sink = {0};
    put_model(&sink, model, state, target);
    if (sink.failed) {
        free(sink.data);
        return err_set(DLCA_ERR_NOMEM, "out of memory serialising a model of %zu gates", model->gate_count);
    }
    *data = sink.data, *size = sink.size;
    return DLCA_OK;
}

int ca_file_save(const char *path, const ca_model *model, const ca_train_state *state, const ca_target_image *target)
{
    uint8_t *data;
    size_t size;
    int status = ca_file_save_memory(&data, &size, model, state, target);
    if (status != DLCA_OK) {
        char reason[768];
        snprintf(reason, sizeof reason, "%s", err_message());
        return err_set(status, "cannot save %s: %s", path, reason);
    }
    status = atomic_file_write(path, data, size);
    free(data);
    return status;
}

void ca_train_state_free(ca_train_state *state)
{
    free(state->moment1);
    free(state->moment2);
    free(state->best.logits), free(state->best.moment1), free(state->best.moment2);
    free(state->pool);
    memset(state, 0, sizeof *state);
}

void ca_target_image_free(ca_target_image *target)
{
    free(target->bits);
    memset(target, 0, sizeof *target);
}
