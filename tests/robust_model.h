/* robust_model.h: hostile model files for the test_robust_* tests. A file is written valid by
 * ca_file_save_memory, then one field is patched and the CRC made right again, so the loader
 * sees a file that is intact but asks for something it must refuse (the writer, rightly, cannot
 * produce it). Offsets follow the layout in ca_file.h. Header-only, like robust.h. */
#ifndef DLCA_ROBUST_MODEL_H
#define DLCA_ROBUST_MODEL_H

#include "ca_file.h"
#include "crc32.h"
#include "error.h"
#include "robust.h"

#include <stdint.h>
#include <string.h>

/* Offset of config field `name` in a file of config `c` (names as in ca_config), or 0. */
static inline size_t robust_field_at(const ca_config *c, const char *name)
{
    static const char *const before_widths[] = {"height", "width", "boundary", "channels", "kernels"};
    static const struct {
        const char *name;
        size_t bytes;
    } after_widths[] = {{"update_wiring", 4}, {"steps", 4},  {"fire_rate", 8},   {"loss_channels", 4},
                        {"start", 4},         {"target", 4}, {"batch", 4},       {"train_steps", 4},
                        {"learning_rate", 8}, {"seed", 8}};
    size_t at = CA_FILE_MAGIC_SIZE + 8; /* magic, version, flags */
    if (strcmp(name, "preset") == 0) return at;
    at += CA_NAME_LENGTH;
    for (size_t i = 0; i < sizeof before_widths / sizeof before_widths[0]; i++, at += 4)
        if (strcmp(name, before_widths[i]) == 0) return at;
    at += 4 + 4 * (size_t)c->perception_depth + 4 + 4 * (size_t)c->update_depth;
    for (size_t i = 0; i < sizeof after_widths / sizeof after_widths[0]; i++) {
        if (strcmp(name, after_widths[i].name) == 0) return at;
        at += after_widths[i].bytes;
    }
    return 0;
}

static inline void robust_put32(uint8_t *at, uint32_t value)
{
    for (int i = 0; i < 4; i++) at[i] = (uint8_t)(value >> (8 * i));
}

static inline void robust_put_f64(uint8_t *at, double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    robust_put32(at, (uint32_t)bits), robust_put32(at + 4, (uint32_t)(bits >> 32));
}

/* The CRC of everything before the last 4 bytes, into them. */
static inline void robust_fix_crc(uint8_t *data, size_t size)
{
    robust_put32(data + size - 4, crc32_update(0, data, size - 4));
}

static inline int robust_write_bytes(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* Serialises `m` (with the optional state and target) into a malloc'd buffer; NULL on failure. */
static inline uint8_t *robust_model_bytes(const ca_model *m, const ca_train_state *state,
                                          const ca_target_image *target, size_t *size)
{
    uint8_t *data = NULL;
    if (ca_file_save_memory(&data, size, m, state, target) != DLCA_OK) {
        CHECK(0, "saving the model to patch: %s", err_message());
        return NULL;
    }
    return data;
}

/* Writes `m` to `path` with i32 field `name` of its config set to `value`, CRC fixed. */
static inline int robust_save_patched(const char *path, const ca_model *m, const ca_train_state *state,
                                      const ca_target_image *target, const char *name, int32_t value)
{
    size_t size, at = robust_field_at(&m->config, name);
    uint8_t *data = robust_model_bytes(m, state, target, &size);
    if (!data || at == 0) return free(data), -1;
    robust_put32(data + at, (uint32_t)value);
    robust_fix_crc(data, size);
    int rc = robust_write_bytes(path, data, size);
    free(data);
    return rc;
}

/* A model of `c` with zero moments at `step` (state) written to `path` as is; 0 or -1. */
static inline int robust_save_model(const char *path, const ca_config *c, uint64_t step, const ca_target_image *target)
{
    ca_model m;
    if (ca_model_init(&m, c) != DLCA_OK) {
        CHECK(0, "model: %s", err_message());
        return -1;
    }
    float *zeros = calloc(m.gate_count * GATE_OP_COUNT, sizeof(float));
    ca_train_state state = {step, 1.0, zeros, zeros, {0}, NULL};
    int rc = zeros && ca_file_save(path, &m, &state, target) == DLCA_OK ? 0 : -1;
    CHECK(rc == 0, "save %s: %s", path, err_message());
    free(zeros), ca_model_free(&m);
    return rc;
}

#endif
