/* fuzz_ca_file.c: libFuzzer target for the model-file loader. Any bytes must either load (and
 * then save to exactly the same bytes, since the format has one spelling per model; an older
 * version's file saves as the current version, which must then be a fixed point) or be
 * refused with a one-line message naming the file; ASan/UBSan catch any read past the input.
 * Each input is tried twice: as it is, and with its last 4 bytes replaced by the right CRC, so
 * mutations also reach the checks behind the CRC and the accepting path. Seeds: tests/corpus/
 * and tests/fuzz/corpus_ca_file/. */
#include "ca_file.h"
#include "crc32.h"
#include "error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Serialises a loaded model; aborts when it cannot. */
static uint8_t *save(const ca_model *m, const ca_train_state *state, const ca_target_image *target, size_t *size)
{
    uint8_t *bytes;
    if (ca_file_save_memory(&bytes, size, m, state->moment1 ? state : NULL, target->bits ? target : NULL)) {
        fprintf(stderr, "a loaded model cannot be saved: %s\n", err_message());
        abort();
    }
    return bytes;
}

/* The version field follows the 8-byte magic, little-endian. */
static uint32_t file_version(const uint8_t *data)
{
    return (uint32_t)data[8] | (uint32_t)data[9] << 8 | (uint32_t)data[10] << 16 | (uint32_t)data[11] << 24;
}

/* A loaded current-version model must serialise back to the input, byte for byte; an older
 * version's saves as the current version, and that must load and save to itself. */
static void check_round_trip(const uint8_t *data, size_t size, const ca_model *m, const ca_train_state *state,
                             const ca_target_image *target)
{
    size_t again_size;
    uint8_t *again = save(m, state, target, &again_size);
    if (file_version(data) == CA_FILE_VERSION) {
        if (again_size != size || memcmp(again, data, size) != 0) {
            fprintf(stderr, "a loaded model saves to different bytes (%zu vs %zu)\n", again_size, size);
            abort();
        }
        free(again);
        return;
    }
    ca_model m2;
    ca_train_state state2;
    ca_target_image target2;
    if (ca_file_load_memory(again, again_size, "fuzz.dlca", &m2, &state2, &target2) != DLCA_OK) {
        fprintf(stderr, "an upgraded model does not load: %s\n", err_message());
        abort();
    }
    size_t third_size;
    uint8_t *third = save(&m2, &state2, &target2, &third_size);
    if (third_size != again_size || memcmp(third, again, again_size) != 0) {
        fprintf(stderr, "an upgraded model saves to different bytes (%zu vs %zu)\n", third_size, again_size);
        abort();
    }
    free(third), free(again);
    ca_model_free(&m2), ca_train_state_free(&state2), ca_target_image_free(&target2);
}

static void load(const uint8_t *data, size_t size)
{
    ca_model m;
    ca_train_state state;
    ca_target_image target;
    err_clear();
    if (ca_file_load_memory(data, size, "fuzz.dlca", &m, &state, &target) != DLCA_OK) {
        /* One line naming the file: the contract every caller prints as is. */
        if (strncmp(err_message(), "fuzz.dlca: ", 11) != 0 || strchr(err_message(), '\n')) {
            fprintf(stderr, "refused without a one-line message naming the file: '%s'\n", err_message());
            abort();
        }
        return;
    }
    check_round_trip(data, size, &m, &state, &target);
    ca_model_free(&m), ca_train_state_free(&state), ca_target_image_free(&target);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load(data, size);
    if (size < 4) return 0;
    uint8_t *fixed = malloc(size);
    if (!fixed) return 0;
    memcpy(fixed, data, size);
    uint32_t crc = crc32_update(0, fixed, size - 4);
    for (int i = 0; i < 4; i++) fixed[size - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
    load(fixed, size);
    free(fixed);
    return 0;
}
