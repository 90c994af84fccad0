/* test_ca_file: the .dlca model file. Every preset round-trips bit for bit; every truncation,
 * byte flip and hand-made defect (with the CRC fixed up, so the right check fires) is refused
 * with a message naming it; failed saves leave the old file intact and no temp file behind;
 * and the committed seed corpus still matches what the writer produces. Section offsets are
 * computed here from the format description, so the test pins the layout too. */
#include "ca_file.h"
#include "ca_fixtures.h"
#include "check.h"
#include "crc32.h"
#include "error.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char temp_dir[256];

/* ---- building models, states and targets ---- */

static void random_float_logits(ca_model *m, rng_state *rng)
{
    for (size_t i = 0; i < m->gate_count * GATE_OP_COUNT; i++) m->logits[i] = (float)(6.0 * rng_uniform(rng) - 3.0);
}

static ca_train_state make_state(const ca_model *m, rng_state *rng)
{
    size_t n = m->gate_count * GATE_OP_COUNT;
    ca_train_state s;
    s.step = 1000 + rng_below(rng, 1000); /* separate statements: initialiser order is unspecified */
    s.seconds = 123.25 * rng_uniform(rng);
    s.moment1 = malloc(n * sizeof(float));
    s.moment2 = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        s.moment1[i] = (float)(rng_uniform(rng) - 0.5) * 1e-2f;
        s.moment2[i] = (float)rng_uniform(rng) * 1e-4f;
    }
    return s;
}

static ca_target_image make_target(const ca_config *c, rng_state *rng)
{
    ca_target_image t = {.channels = c->loss_channels, .height = c->height, .width = c->width};
    size_t n = (size_t)t.channels * (size_t)t.height * (size_t)t.width;
    t.bits = malloc(n);
    for (size_t i = 0; i < n; i++) t.bits[i] = (uint8_t)rng_below(rng, 2);
    return t;
}

/* The tiny model of the seed corpus: fixed seeds, async (fire rate 0.5) so f64 fields are not 1. */
static void tiny_model(ca_model *m, ca_train_state *state, ca_target_image *target)
{
    ca_config c;
    tiny_config(&c, CA_BOUNDARY_ZERO, 0.5, 2, 3);
    c.pool = 5, c.window = 2, c.damage = 1; /* version 3's fields, none 0 */
    c.window_loss = CA_WINDOW_LOSS_EVERY;   /* version 4's */
    c.perception_wiring = CA_PERCEPTION_PER_KERNEL; /* version 5's: a moore order a kernel */
    if (ca_model_init(m, &c)) fprintf(stderr, "tiny model: %s\n", err_message()), exit(1);
    rng_state rng;
    rng_init(&rng, 2024, 0);
    random_float_logits(m, &rng);
    *state = make_state(m, &rng);
    *target = make_target(&c, &rng);
}

/* ---- comparing ---- */

static void check_config_equal(const ca_config *a, const ca_config *b, const char *what)
{
    CHECK(memcmp(a->preset, b->preset, CA_NAME_LENGTH) == 0, "%s: preset name", what);
    CHECK(a->height == b->height && a->width == b->width && a->boundary == b->boundary, "%s: grid", what);
    CHECK(a->channels == b->channels && a->kernels == b->kernels, "%s: channels, kernels", what);
    CHECK(a->perception_depth == b->perception_depth &&
              memcmp(a->perception_widths, b->perception_widths, sizeof a->perception_widths) == 0,
          "%s: perception widths", what);
    CHECK(a->update_depth == b->update_depth && memcmp(a->update_widths, b->update_widths, sizeof a->update_widths) == 0,
          "%s: update widths", what);
    CHECK(a->update_wiring == b->update_wiring && a->steps == b->steps && a->fire_rate == b->fire_rate,
          "%s: wiring kind, steps, fire rate", what);
    CHECK(a->loss_channels == b->loss_channels && a->start == b->start && a->target == b->target, "%s: loss, start, target",
          what);
    CHECK(a->batch == b->batch && a->train_steps == b->train_steps && a->learning_rate == b->learning_rate &&
              a->seed == b->seed,
          "%s: batch, train steps, learning rate, seed", what);
    CHECK(a->lr_schedule == b->lr_schedule && a->warmup == b->warmup && a->lr_final == b->lr_final &&
              a->init_logit == b->init_logit,
          "%s: lr schedule, warm-up, lr final, init logit", what);
    CHECK(a->pool == b->pool && a->window == b->window && a->damage == b->damage, "%s: pool, window, damage", what);
    CHECK(a->window_loss == b->window_loss, "%s: window loss", what);
    CHECK(a->perception_wiring == b->perception_wiring, "%s: perception wiring", what);
    CHECK(a->pool_starts == b->pool_starts, "%s: pool starts", what);
    CHECK(memcmp(a, b, sizeof *a) == 0, "%s: every field (one not named above differs)", what);
}

static int wiring_equal(const wiring *a, const wiring *b)
{
    size_t n_out = (size_t)a->n_out;
    return a->n_in == b->n_in && a->n_out == b->n_out && memcmp(a->input_a, b->input_a, n_out * sizeof(int)) == 0 &&
           memcmp(a->input_b, b->input_b, n_out * sizeof(int)) == 0 &&
           memcmp(a->reverse_start, b->reverse_start, ((size_t)a->n_in + 1) * sizeof(int)) == 0 &&
           memcmp(a->reverse_entry, b->reverse_entry, 2 * n_out * sizeof(int)) == 0;
}

/* Structure only: config, layout and wiring. */
static void check_layout_equal(const ca_model *a, const ca_model *b, const char *what)
{
    check_config_equal(&a->config, &b->config, what);
    CHECK(a->gate_count == b->gate_count, "%s: gate count %zu vs %zu", what, a->gate_count, b->gate_count);
    int same = 1;
    for (int l = 0; l < a->config.perception_depth; l++)
        same &= wiring_equal(&a->perception[l], &b->perception[l]) && a->perception_gate_base[l] == b->perception_gate_base[l];
    for (int l = 0; l < a->config.update_depth; l++)
        same &= wiring_equal(&a->update[l], &b->update[l]) && a->update_gate_base[l] == b->update_gate_base[l];
    CHECK(same, "%s: every layer's wiring and gate base", what);
}

static void check_model_equal(const ca_model *a, const ca_model *b, const char *what)
{
    check_layout_equal(a, b, what);
    if (a->gate_count == b->gate_count && a->logits && b->logits)
        CHECK(memcmp(a->logits, b->logits, a->gate_count * GATE_OP_COUNT * sizeof(float)) == 0, "%s: logits bit for bit",
              what);
}

static void check_state_equal(const ca_train_state *a, const ca_train_state *b, size_t n, const char *what)
{
    CHECK(a->step == b->step && a->seconds == b->seconds, "%s: step and seconds", what);
    CHECK(a->moment1 && a->moment2 && memcmp(a->moment1, b->moment1, n * sizeof(float)) == 0 &&
              memcmp(a->moment2, b->moment2, n * sizeof(float)) == 0,
          "%s: moments bit for bit", what);
}

static void check_target_equal(const ca_target_image *a, const ca_target_image *b, const char *what)
{
    CHECK(a->channels == b->channels && a->height == b->height && a->width == b->width, "%s: target shape", what);
    size_t n = (size_t)b->channels * (size_t)b->height * (size_t)b->width;
    CHECK(a->bits && a->channels == b->channels && memcmp(a->bits, b->bits, n) == 0, "%s: target bits", what);
}

static int is_zero(const void *p, size_t n)
{
    const uint8_t *bytes = p;
    for (size_t i = 0; i < n; i++)
        if (bytes[i]) return 0;
    return 1;
}

/* ---- files and bytes ---- */

static const char *path_in(const char *name)
{
    static char path[2][512];
    static int which;
    which ^= 1;
    snprintf(path[which], sizeof path[which], "%s/%s", temp_dir, name);
    return path[which];
}

static uint8_t *read_bytes(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    *size = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long length = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(length > 0 ? (size_t)length : 1);
    *size = fread(data, 1, (size_t)length, f);
    fclose(f);
    return data;
}

static void write_bytes(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size) fprintf(stderr, "cannot write %s\n", path), exit(1);
    fclose(f);
}

static void put_le32(uint8_t *at, uint32_t v)
{
    for (int i = 0; i < 4; i++) at[i] = (uint8_t)(v >> (8 * i));
}

static void fix_crc(uint8_t *data, size_t size) { put_le32(data + size - 4, crc32_update(0, data, size - 4)); }

/* Section offsets from the format in ca_file.h: 16 bytes of magic, version and flags; a config
 * of 168 bytes plus 4 per width; the u64 gate count; 8 + 8 n_out bytes per layer. */
typedef struct {
    size_t gate_count, wiring, logits, state, target, crc;
} file_layout;

static file_layout layout_of(const ca_model *m, int has_state, int has_target, size_t target_bits)
{
    const ca_config *c = &m->config;
    file_layout f;
    f.gate_count = 16 + 168 + 4 * (size_t)(c->perception_depth + c->update_depth);
    f.wiring = f.gate_count + 8;
    f.logits = f.wiring;
    for (int l = 0; l < c->perception_depth; l++) f.logits += 8 + 8 * (size_t)m->perception[l].n_out;
    for (int l = 0; l < c->update_depth; l++) f.logits += 8 + 8 * (size_t)m->update[l].n_out;
    f.state = f.logits + 64 * m->gate_count;
    f.target = f.state + (has_state ? 16 + 128 * m->gate_count : 0);
    f.crc = f.target + (has_target ? 12 + target_bits : 0);
    return f;
}

/* Offset of update layer l's input_a list. */
static size_t update_inputs_at(const ca_model *m, const file_layout *f, int l)
{
    size_t at = f->wiring;
    for (int p = 0; p < m->config.perception_depth; p++) at += 8 + 8 * (size_t)m->perception[p].n_out;
    for (int u = 0; u < l; u++) at += 8 + 8 * (size_t)m->update[u].n_out;
    return at + 8;
}

/* Loads `data`; expects failure with `needle` in the message and every output zeroed. */
static void expect_refused(const uint8_t *data, size_t size, const char *needle, const char *what)
{
    ca_model m;
    ca_train_state s;
    ca_target_image t;
    err_clear();
    int status = ca_file_load_memory(data, size, "bad.dlca", &m, &s, &t);
    CHECK(status != DLCA_OK, "%s: load must fail", what);
    CHECK(strstr(err_message(), needle) != NULL, "%s: message '%s' should contain '%s'", what, err_message(), needle);
    CHECK(strncmp(err_message(), "bad.dlca: ", 10) == 0, "%s: message '%s' names the file", what, err_message());
    CHECK(is_zero(&m, sizeof m) && is_zero(&s, sizeof s) && is_zero(&t, sizeof t), "%s: outputs zeroed", what);
    if (status == DLCA_OK) ca_model_free(&m), ca_train_state_free(&s), ca_target_image_free(&t);
}

/* ---- tests ---- */

static void test_presets_round_trip(void)
{
    for (int p = 0; ca_preset_names[p]; p++) {
        const char *name = ca_preset_names[p];
        ca_config c;
        ca_model m, loaded;
        ca_train_state state, loaded_state;
        ca_target_image target, loaded_target;
        rng_state rng;
        int bad = ca_config_preset(&c, name);
        /* image with every persistence field and the weight decay off their defaults, so that each
         * makes the trip */
        if (!bad && strcmp(name, "image") == 0)
            c.batch = 4, c.pool = 8, c.window = 3, c.damage = 1, c.pool_starts = 3,
            c.window_loss = CA_WINDOW_LOSS_EVERY, c.weight_decay = 0.25;
        if (bad || ca_model_init(&m, &c)) {
            CHECK(0, "preset %s: %s", name, err_message());
            continue;
        }
        rng_init(&rng, 99, (uint64_t)p);
        random_float_logits(&m, &rng);
        state = make_state(&m, &rng);
        target = make_target(&c, &rng);
        const char *path = path_in("preset.dlca");
        int saved = ca_file_save(path, &m, &state, &target);
        CHECK(saved == DLCA_OK, "preset %s: save: %s", name, err_message());
        int loaded_ok = ca_file_load(path, &loaded, &loaded_state, &loaded_target) == DLCA_OK;
        CHECK(loaded_ok, "preset %s: load: %s", name, err_message());
        if (loaded_ok) {
            check_model_equal(&loaded, &m, name);
            check_state_equal(&loaded_state, &state, m.gate_count * GATE_OP_COUNT, name);
            check_target_equal(&loaded_target, &target, name);
            ca_model_free(&loaded), ca_train_state_free(&loaded_state), ca_target_image_free(&loaded_target);
        }
        /* NULL state and target: skipped, still checked, model identical. */
        loaded_ok = ca_file_load(path, &loaded, NULL, NULL) == DLCA_OK;
        CHECK(loaded_ok, "preset %s: load without state/target: %s", name, err_message());
        if (loaded_ok) check_model_equal(&loaded, &m, name), ca_model_free(&loaded);
        ca_model_free(&m), ca_train_state_free(&state), ca_target_image_free(&target);
    }
}

/* Every combination of the optional sections; absent ones come back zeroed. */
static void test_optional_sections(void)
{
    ca_model m, loaded;
    ca_train_state state, loaded_state;
    ca_target_image target, loaded_target;
    tiny_model(&m, &state, &target);
    for (int mask = 0; mask < 4; mask++) {
        int has_state = mask & 1, has_target = mask & 2;
        uint8_t *data;
        size_t size;
        char what[64];
        snprintf(what, sizeof what, "tiny, state %d, target %d", has_state, !!has_target);
        CHECK(ca_file_save_memory(&data, &size, &m, has_state ? &state : NULL, has_target ? &target : NULL) == DLCA_OK,
              "%s: save: %s", what, err_message());
        file_layout f = layout_of(&m, has_state, has_target, 12);
        CHECK(size == f.crc + 4, "%s: file is %zu bytes, the format says %zu", what, size, f.crc + 4);
        CHECK(data[12] == (uint8_t)mask, "%s: flags byte is %d", what, data[12]);
        int ok = ca_file_load_memory(data, size, what, &loaded, &loaded_state, &loaded_target) == DLCA_OK;
        CHECK(ok, "%s: load: %s", what, err_message());
        if (ok) {
            check_model_equal(&loaded, &m, what);
            if (has_state) check_state_equal(&loaded_state, &state, m.gate_count * GATE_OP_COUNT, what);
            else CHECK(is_zero(&loaded_state, sizeof loaded_state), "%s: absent state is zeroed", what);
            if (has_target) check_target_equal(&loaded_target, &target, what);
            else CHECK(is_zero(&loaded_target, sizeof loaded_target), "%s: absent target is zeroed", what);
            ca_model_free(&loaded), ca_train_state_free(&loaded_state), ca_target_image_free(&loaded_target);
        }
        free(data);
    }
    ca_model_free(&m), ca_train_state_free(&state), ca_target_image_free(&target);
}

/* Flag 3, a checkpoint's sample pool: its bits come back as saved, a file cut inside them or
 * with bits set past the grids' is refused naming the pool, a load without the state skips them,
 * and a pool for a config without one is not saved. */
static void test_pool_section(void)
{
    ca_model m, loaded;
    ca_train_state state, got;
    ca_target_image target;
    tiny_model(&m, &state, &target);
    size_t bytes = ca_file_pool_bytes(&m.config);
    size_t used = (size_t)m.config.pool * (size_t)m.config.channels * (size_t)m.config.height * (size_t)m.config.width;
    CHECK(bytes == (used + 7) / 8 && bytes > 0, "pool bytes %zu for %zu bits", bytes, used);
    state.pool = malloc(bytes);
    rng_state rng;
    rng_init(&rng, 77, 0);
    for (size_t i = 0; i < bytes; i++) state.pool[i] = (uint8_t)rng_below(&rng, 256);
    if (used % 8) state.pool[bytes - 1] &= (uint8_t)((1u << (used % 8)) - 1u);
    uint8_t *data;
    size_t size;
    CHECK(ca_file_save_memory(&data, &size, &m, &state, NULL) == DLCA_OK, "save with a pool: %s", err_message());
    CHECK(data[12] == (CA_FILE_FLAG_STATE | CA_FILE_FLAG_POOL), "flags byte %d: state and pool", data[12]);
    int ok = ca_file_load_memory(data, size, "pool", &loaded, &got, NULL) == DLCA_OK;
    CHECK(ok && got.pool && memcmp(got.pool, state.pool, bytes) == 0, "the pool's bits load as saved: %s",
          ok ? "" : err_message());
    if (ok) ca_model_free(&loaded), ca_train_state_free(&got);
    ok = ca_file_load_memory(data, size, "pool", &loaded, NULL, NULL) == DLCA_OK;
    CHECK(ok, "a load without the state skips the pool: %s", ok ? "" : err_message());
    if (ok) ca_model_free(&loaded);
    /* cut inside the bits (the CRC's 4 bytes and the last 3 of the pool gone) */
    CHECK(ca_file_load_memory(data, size - 7, "cut", &loaded, &got, NULL) != DLCA_OK &&
              strstr(err_message(), "pool bits"),
          "a file cut in the pool's bits: %s", err_message());
    if (used % 8) {
        data[size - 5] |= 0x80; /* the pool's last byte, before the CRC */
        CHECK(ca_file_load_memory(data, size, "pad", &loaded, &got, NULL) != DLCA_OK &&
                  strstr(err_message(), "past its"),
              "bits set past the pool's grids: %s", err_message());
    }
    free(data);
    m.config.pool = 0;
    CHECK(ca_file_save_memory(&data, &size, &m, &state, NULL) != DLCA_OK && strstr(err_message(), "pool"),
          "a pool saved for a config without one is refused: %s", err_message());
    ca_model_free(&m), ca_train_state_free(&state), ca_target_image_free(&target);
}

static void test_truncation(void)
{
    ca_model m;
    ca_train_state state;
    ca_target_image target;
    uint8_t *data;
    size_t size;
    tiny_model(&m, &state, &target);
    ca_file_save_memory(&data, &size, &m, &state, &target);
    file_layout f = layout_of(&m, 1, 1, 12);
    int refused = 0, named = 0;
    for (size_t cut = 0; cut < size; cut++) {
        ca_model loaded;
        ca_train_state s;
        ca_target_image t;
        /* A fresh copy of exactly `cut` bytes, so ASan catches any read past the end. */
        uint8_t *prefix = malloc(cut ? cut : 1);
        memcpy(prefix, data, cut);
        int status = ca_file_load_memory(cut ? prefix : NULL, cut, "cut.dlca", &loaded, &s, &t);
        refused += status != DLCA_OK;
        named += strstr(err_message(), cut ? "truncated at" : "empty file") != NULL;
        if (status == DLCA_OK) ca_model_free(&loaded), ca_train_state_free(&s), ca_target_image_free(&t);
        free(prefix);
    }
    CHECK(refused == (int)size, "every one of %zu truncations refused (%d were)", size, refused);
    CHECK(named == (int)size, "every truncation says 'truncated at' (%d of %zu did)", named, size);

    struct {
        size_t cut;
        const char *field;
    } cases[] = {{4, "the magic"}, {10, "the format version"}, {20, "config preset name"}, {f.gate_count + 3, "gate_count"},
                 {f.wiring + 2, "perception layer 0 n_in"}, {f.logits - 4, "update layer 2 input_b"},
                 {f.logits + 100, "logits"}, {f.state + 10, "training seconds"}, {f.state + 16 + 64, "moment1"},
                 {f.target + 4, "target height"}, {f.target + 14, "target bits"}, {size - 1, "the CRC"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char needle[96];
        snprintf(needle, sizeof needle, "truncated at %s:", cases[i].field);
        expect_refused(data, cases[i].cut, needle, needle);
    }

    /* The same through a real file. */
    write_bytes(path_in("short.dlca"), data, size / 2);
    ca_model loaded;
    CHECK(ca_file_load(path_in("short.dlca"), &loaded, NULL, NULL) != DLCA_OK, "a half file on disk is refused");
    CHECK(strstr(err_message(), "short.dlca: truncated at") != NULL, "message '%s' names file and truncation", err_message());
    free(data);
    ca_model_free(&m), ca_train_state_free(&state), ca_target_image_free(&target);
}

static void test_flipped_bytes(void)
{
    ca_model m;
    ca_train_state state;
    ca_target_image target;
    uint8_t *data;
    size_t size;
    tiny_model(&m, &state, &target);
    ca_file_save_memory(&data, &size, &m, &state, &target);
    file_layout f = layout_of(&m, 1, 1, 12);
    int refused = 0, explained = 0, crc_named = 0, logit_bytes = 0;
    const uint8_t patterns[] = {0x01, 0x80, 0xff};
    for (size_t p = 0; p < sizeof patterns; p++)
        for (size_t at = 0; at < size; at++) {
            ca_model loaded;
            data[at] ^= patterns[p];
            int status = ca_file_load_memory(data, size, "flip.dlca", &loaded, NULL, NULL);
            data[at] ^= patterns[p];
            refused += status != DLCA_OK;
            const char *msg = err_message();
            if (at < 8) explained += strstr(msg, "not a dlca model") != NULL;
            /* version 4 with bits flipped may be another known version, which reads other fields: the CRC says so */
            else if (at < 12) explained += strstr(msg, "unknown format version") || strstr(msg, "CRC");
            else explained += strstr(msg, "CRC") || strstr(msg, "truncated at") || strstr(msg, "trailing bytes");
            /* 0x01 in a logit byte keeps every value finite: only the CRC can notice. */
            if (patterns[p] == 0x01 && at >= f.logits && at < f.state)
                logit_bytes++, crc_named += strstr(msg, "CRC mismatch: expected 0x") != NULL;
            if (status == DLCA_OK) ca_model_free(&loaded);
        }
    CHECK(refused == (int)(3 * size), "all %zu flipped files refused (%d were)", 3 * size, refused);
    CHECK(explained == (int)(3 * size), "each flip explained by magic, version, CRC, truncation or trailing bytes (%d of %zu)",
          explained, 3 * size);
    CHECK(logit_bytes > 0 && crc_named == logit_bytes, "flips in logits give a CRC mismatch (%d of %d)", crc_named,
          logit_bytes);
    free(data);
    ca_model_free(&m), ca_train_state_free(&state), ca_target_image_free(&target);
}

/* Each defect is made by hand with the CRC fixed up, so the check for that defect must fire. */
static void test_defects(void)
{
    ca_model m;
    ca_train_state state;
    ca_target_image target;
    uint8_t *good, *bad;
    size_t size;
    tiny_model(&m, &state, &target);
    ca_file_save_memory(&good, &size, &m, &state, &target);
    file_layout f = layout_of(&m, 1, 1, 12);
    bad = malloc(size + 8);
    size_t update1 = update_inputs_at(&m, &f, 1); /* update layer 1: 6 -> 4 */
    float nan_value = NAN, inf_value = -INFINITY, negative = -1.0f;
    double two = 2.0;
    uint32_t bits;
    uint64_t bits64;
#define DEFECT(edit, fix, needle)             \
    do {                                      \
        memcpy(bad, good, size);              \
        edit;                                 \
        if (fix) fix_crc(bad, size);          \
        expect_refused(bad, size, needle, needle); \
    } while (0)
    DEFECT(memcpy(bad, "\x89PNG\r\n\x1a\n", 8), 1, "not a dlca model");
    DEFECT(put_le32(bad + 8, 7), 1, "unknown format version 7 (this build reads versions 1 to 6)");
    DEFECT(put_le32(bad + f.gate_count - 16, 2), 1, "config: perception wiring 2 is out of range");
    DEFECT(put_le32(bad + f.gate_count - 12, 0), 1, "config: pool starts 0 is out of range");
    DEFECT(put_le32(bad + f.gate_count - 12, 2), 1, "config: pool-starts = 2 is outside 1..1");
    DEFECT((memcpy(&bits64, &two, 8), put_le32(bad + f.gate_count - 8, (uint32_t)bits64),
            put_le32(bad + f.gate_count - 4, (uint32_t)(bits64 >> 32))),
           1, "config: weight decay 2 is outside 0..1");
    /* the moore layer of the tiny model's 2 kernels: 16 + 16 words after its n_in and n_out;
     * kernel 1's order (gates 8..15) reading its first neighbour twice */
    DEFECT(memcpy(bad + f.wiring + 8 + 4 * 9, bad + f.wiring + 8 + 4 * 8, 4), 1,
           "perception layer 0: gate 9 reads a = ");
    DEFECT(put_le32(bad + 12, 16), 1, "unknown flags 0x00000010");
    DEFECT(put_le32(bad + 12, 8), 1, "a sample pool (bit 3) without a training state (bit 0)");
    DEFECT(put_le32(bad + 16 + 44, 0), 1, "config: channels = 0 is outside 1..4096");          /* channels */
    DEFECT(put_le32(bad + 16 + 52, 33), 1, "config: perception depth = 33 is outside 1..32"); /* perception depth */
    DEFECT(memset(bad + 16, 'x', 32), 1, "preset name has no NUL");
    DEFECT(bad[16 + 30] = 'x', 1, "padding is not all zero");
    DEFECT(put_le32(bad + f.gate_count, 41), 1, "gate_count is 41, but the config implies 40");
    DEFECT(put_le32(bad + update1 - 8, 7), 1, "update layer 1: wiring is 7 -> 4, but the config implies 6 -> 4");
    DEFECT(put_le32(bad + update1 + 4, 6), 1, "update layer 1: gate 1 reads input_a = 6, outside 0..5");
    DEFECT(put_le32(bad + update1 + 16 + 12, 0xffffffffU), 1, "update layer 1: gate 3 reads input_b = 4294967295");
    DEFECT(put_le32(bad + f.wiring + 8 + 64, 3), 1, "perception layer 0: gate 0 reads b = 3, but moore wiring");
    DEFECT((memcpy(&bits, &nan_value, 4), put_le32(bad + f.logits + 4 * 21, bits)), 1, "logits[21] (gate 1, op 5) is NaN");
    DEFECT((memcpy(&bits, &inf_value, 4), put_le32(bad + f.logits, bits)), 1, "logits[0] (gate 0, op 0) is infinite");
    DEFECT((memcpy(&bits, &negative, 4), put_le32(bad + f.state + 16 + 64 * m.gate_count + 8, bits)), 1,
           "moment2[2] (gate 0, op 2) is negative");
    DEFECT((memcpy(&bits, &nan_value, 4), put_le32(bad + f.state + 16, bits)), 1, "moment1[0] (gate 0, op 0) is NaN");
    DEFECT(put_le32(bad + f.target + 4, 5), 1, "target image is 1 channels of 5x4, but the grid is 3x4");
    DEFECT(bad[f.target + 12 + 5] = 2, 1, "target bit (channel 0, y 1, x 1) is 2, not 0 or 1");
    /* Without the CRC fix-up the same defect also says the file is damaged. */
    DEFECT(put_le32(bad + update1 + 4, 6), 0, "outside 0..5 (and the CRC does not match: the file is damaged)");
    DEFECT(bad[f.logits + 1] ^= 0x10, 0, "CRC mismatch: expected 0x");
    DEFECT(put_le32(bad + size - 4, 0x12345678U), 0, "found 0x12345678");
#undef DEFECT
    /* A fixed-up defect must not claim damage. */
    memcpy(bad, good, size);
    put_le32(bad + update1 + 4, 6), fix_crc(bad, size);
    expect_refused(bad, size, "outside 0..5", "index with good CRC");
    CHECK(strstr(err_message(), "damaged") == NULL, "a consistent CRC is not called damaged: '%s'", err_message());
    /* Trailing bytes, even with a valid CRC after them. */
    memcpy(bad, good, size);
    bad[size] = 0;
    expect_refused(bad, size + 1, "1 trailing bytes after the CRC", "one trailing byte");
    memcpy(bad + size, bad + size - 4, 4);
    expect_refused(bad, size + 4, "4 trailing bytes", "a repeated CRC");

    free(good), free(bad);
    ca_model_free(&m), ca_train_state_free(&state), ca_target_image_free(&target);
}

static void test_not_model_files(void)
{
    const char *text = "hello, this is not a model file at all";
    expect_refused((const uint8_t *)text, strlen(text), "not a dlca model", "text");
    expect_refused((const uint8_t *)"DLCB", 4, "not a dlca model", "short wrong magic");
    expect_refused((const uint8_t *)"DLC", 3, "truncated at the magic", "short right magic");
    ca_model m;
    CHECK(ca_file_load(path_in("missing.dlca"), &m, NULL, NULL) != DLCA_OK, "a missing file is refused");
    CHECK(strstr(err_message(), "missing.dlca: cannot open: No such file") != NULL, "message: %s", err_message());
    CHECK(ca_file_load(temp_dir, &m, NULL, NULL) != DLCA_OK, "a directory is refused: %s", err_message());
}

static int temp_files_left(void)
{
    DIR *dir = opendir(temp_dir);
    int count = 0;
    for (struct dirent *e; dir && (e = readdir(dir));) count += strstr(e->d_name, ".dlca-tmp.") != NULL;
    if (dir) closedir(dir);
    return count;
}

static int file_is(const char *path, const uint8_t *data, size_t size)
{
    size_t got;
    uint8_t *bytes = read_bytes(path, &got);
    int same = bytes && got == size && memcmp(bytes, data, size) == 0;
    free(bytes);
    return same;
}

static void expect_save_fails(const char *path, const ca_model *m, const char *needle)
{
    err_clear();
    CHECK(ca_file_save(path, m, NULL, NULL) != DLCA_OK, "saving to %s must fail", path);
    CHECK(strstr(err_message(), path) && strstr(err_message(), needle), "message '%s' names %s and '%s'", err_message(),
          path, needle);
}

static void test_save_failures(void)
{
    ca_model m, big;
    ca_train_state state;
    ca_target_image target;
    ca_config c;
    uint8_t *old;
    size_t old_size;
    tiny_model(&m, &state, &target);
    ca_config_preset(&c, "gol");
    ca_model_init(&big, &c);
    char existing[512];
    snprintf(existing, sizeof existing, "%s", path_in("existing.dlca"));
    ca_file_save_memory(&old, &old_size, &m, &state, &target);
    write_bytes(existing, old, old_size);

    char path[600];
    snprintf(path, sizeof path, "%s/no/such/dir/m.dlca", temp_dir);
    expect_save_fails(path, &m, "does not exist");
    snprintf(path, sizeof path, "%s/m.dlca", existing); /* the "directory" is a regular file */
    expect_save_fails(path, &m, "Not a directory");
    expect_save_fails("/proc/dlca_test_model.dlca", &m, "cannot create a temp file");
    mkdir(path_in("a_directory"), 0755); /* refused before a temp file is made (atomic_file.h) */
    expect_save_fails(path_in("a_directory"), &m, "is a directory, not a regular file");

    /* A write that fails halfway (file size limit) leaves the existing file as it was. */
    struct rlimit limit, small;
    getrlimit(RLIMIT_FSIZE, &limit);
    small = limit, small.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    expect_save_fails(existing, &big, "writing the temp file");
    setrlimit(RLIMIT_FSIZE, &limit);
    CHECK(file_is(existing, old, old_size), "a failed write leaves the existing file intact");

    /* A model the loader would refuse is never written. */
    big.logits[7] = NAN;
    expect_save_fails(existing, &big, "logits[7] (gate 0) = nan is not finite");
    big.logits[7] = 0.0f;
    CHECK(file_is(existing, old, old_size), "a refused model leaves the existing file intact");

    if (geteuid() != 0) { /* root writes through mode bits, so only a user can test this */
        chmod(temp_dir, 0500);
        expect_save_fails(existing, &big, "Permission denied");
        chmod(temp_dir, 0700);
        CHECK(file_is(existing, old, old_size), "a read-only directory leaves the existing file intact");
    }
    CHECK(temp_files_left() == 0, "no temp files left behind (%d)", temp_files_left());
    free(old);
    ca_model_free(&m), ca_model_free(&big), ca_train_state_free(&state), ca_target_image_free(&target);
}

/* A smaller model saved over a larger one replaces it completely, with the writer's exact bytes. */
static void test_save_replaces(void)
{
    ca_model m, big, loaded;
    ca_train_state state;
    ca_target_image target;
    ca_config c;
    uint8_t *want;
    size_t want_size;
    tiny_model(&m, &state, &target);
    ca_config_preset(&c, "checkerboard");
    ca_model_init(&big, &c);
    const char *path = path_in("replace.dlca");
    CHECK(ca_file_save(path, &big, NULL, NULL) == DLCA_OK, "save big: %s", err_message());
    chmod(path, 0640);
    CHECK(ca_file_save(path, &m, NULL, &target) == DLCA_OK, "save tiny over it: %s", err_message());
    ca_file_save_memory(&want, &want_size, &m, NULL, &target);
    CHECK(file_is(path, want, want_size), "the file holds exactly the new %zu bytes", want_size);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640, "the file keeps its permissions (0%o)",
          (unsigned)(st.st_mode & 0777));
    CHECK(ca_file_load(path, &loaded, NULL, NULL) == DLCA_OK, "load: %s", err_message());
    check_model_equal(&loaded, &m, "replaced");
    CHECK(temp_files_left() == 0, "no temp files left behind");
    ca_model_free(&loaded);
    free(want);
    ca_model_free(&m), ca_model_free(&big), ca_train_state_free(&state), ca_target_image_free(&target);
}

static void test_init_wired(void)
{
    ca_config c;
    ca_model drawn, wired;
    tiny_config(&c, CA_BOUNDARY_PERIODIC, 1.0, 1, 2);
    c.update_wiring = WIRING_RANDOM;
    ca_model_init(&drawn, &c);
    CHECK(ca_model_init_wired(&wired, &c, drawn.perception, drawn.update) == DLCA_OK, "init_wired: %s", err_message());
    check_layout_equal(&wired, &drawn, "wired copy");
    CHECK(wired.perception[1].input_a != drawn.perception[1].input_a, "the model owns copies of the wiring");
    CHECK(is_zero(wired.logits, wired.gate_count * GATE_OP_COUNT * sizeof(float)), "logits zeroed");
    ca_model_free(&wired);

    wiring swapped = drawn.perception[0];
    int a[8], b[8];
    memcpy(a, swapped.input_a, sizeof a), memcpy(b, swapped.input_b, sizeof b);
    swapped.input_a = b, swapped.input_b = a; /* centre as a: not moore */
    wiring perception[CA_MAX_LAYERS];
    memcpy(perception, drawn.perception, sizeof perception);
    perception[0] = swapped;
    CHECK(ca_model_init_wired(&wired, &c, perception, drawn.update) != DLCA_OK, "a non-moore layer 0 is refused");
    CHECK(strstr(err_message(), "perception layer 0: gate 0 reads b =") != NULL, "message: %s", err_message());
    CHECK(is_zero(&wired, sizeof wired), "a refused model is zeroed");
    perception[0] = drawn.perception[0];
    int dup[8];
    memcpy(dup, drawn.perception[0].input_a, sizeof dup);
    dup[1] = dup[0];
    perception[0].input_a = dup;
    CHECK(ca_model_init_wired(&wired, &c, perception, drawn.update) != DLCA_OK, "a repeated neighbour is refused");
    CHECK(strstr(err_message(), "each of the 8 neighbours once") != NULL, "message: %s", err_message());

    ca_config wider = c;
    wider.update_widths[0] = 8;
    CHECK(ca_model_init_wired(&wired, &wider, drawn.perception, drawn.update) != DLCA_OK, "a layer of the wrong width is refused");
    CHECK(strstr(err_message(), "update layer 0: wiring is 6 -> 6, but the config implies 6 -> 8") != NULL, "message: %s",
          err_message());
    ca_model_free(&drawn);
}

/* tests/corpus/NAME, the corpus model written by an older format version: it loads, with config
 * `want` (the fields that version lacks at their defaults), the same wiring size, logits and step.
 * The loaded config goes into *got (zeroed when it does not load). */
static void check_older_version(const ca_model *m, uint64_t step, const char *name, const ca_config *want,
                                const char *what, ca_config *got)
{
    char path[1024];
    const char *slash = strrchr(__FILE__, '/');
    snprintf(path, sizeof path, "%.*scorpus/%s", slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__, name);
    ca_model loaded;
    ca_train_state state;
    int rc = ca_file_load(path, &loaded, &state, NULL);
    CHECK(rc == DLCA_OK, "a %s file loads: %s", what, err_message());
    memset(got, 0, sizeof *got);
    if (rc != DLCA_OK) return;
    *got = loaded.config;
    CHECK(memcmp(&loaded.config, want, sizeof *want) == 0 && loaded.gate_count == m->gate_count &&
              memcmp(loaded.logits, m->logits, m->gate_count * 16 * sizeof(float)) == 0 && state.step == step,
          "the %s file holds the same model and state, its missing fields at their defaults", what);
    ca_model_free(&loaded), ca_train_state_free(&state);
}

/* tests/corpus/tiny.dlca seeds the fuzzer and pins the format: the writer must still produce it
 * byte for byte. DLCA_WRITE_CORPUS=1 regenerates it (only with a format version bump). */
static void test_corpus(void)
{
    char path[1024];
    const char *slash = strrchr(__FILE__, '/');
    snprintf(path, sizeof path, "%.*scorpus/tiny.dlca", slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__);
    ca_model m;
    ca_train_state state;
    ca_target_image target;
    uint8_t *data;
    size_t size;
    tiny_model(&m, &state, &target);
    ca_file_save_memory(&data, &size, &m, &state, &target);
    const char *regenerate = getenv("DLCA_WRITE_CORPUS");
    if (regenerate && regenerate[0] == '1')
        CHECK(ca_file_save(path, &m, &state, &target) == DLCA_OK, "writing the corpus: %s", err_message());
    CHECK(file_is(path, data, size), "%s matches the writer's %zu bytes", path, size);
    ca_model loaded;
    CHECK(ca_file_load(path, &loaded, NULL, NULL) == DLCA_OK, "the corpus file loads: %s", err_message());
    ca_model_free(&loaded);
    /* tiny_v1.dlca is the same model in format version 1 (no schedule fields): it still loads,
     * with a constant learning rate and without a pool, and equals the model but for those
     * fields; tiny_v2.dlca, in version 2 (no pool fields), loads without a pool; tiny_v3.dlca
     * with the loss at a round's last step; tiny_v4.dlca, in version 4 (no perception wiring
     * field; its moore layer one order of 8 gates), with the order every kernel shares;
     * tiny_v5.dlca, in version 5 (no pool-starts field), with one start a persistence round (the
     * only value a batch of 2 allows, so its config equals the model's). */
    ca_config want = m.config;
    want.lr_schedule = CA_LR_CONSTANT, want.warmup = 0, want.lr_final = 0.0, want.init_logit = CA_INIT_LOGIT_V1;
    want.pool = want.window = want.damage = 0, want.window_loss = CA_WINDOW_LOSS_LAST;
    want.perception_wiring = CA_PERCEPTION_SHARED;
    ca_config got;
    check_older_version(&m, state.step, "tiny_v1.dlca", &want, "version 1", &got);
    CHECK(got.lr_schedule == CA_LR_CONSTANT && got.warmup == 0 && got.learning_rate > 0.0,
          "a version 1 file trains at a constant learning rate");
    want = m.config;
    want.pool = want.window = want.damage = 0, want.window_loss = CA_WINDOW_LOSS_LAST;
    want.perception_wiring = CA_PERCEPTION_SHARED;
    check_older_version(&m, state.step, "tiny_v2.dlca", &want, "version 2", &got);
    want = m.config;
    want.window_loss = CA_WINDOW_LOSS_LAST, want.perception_wiring = CA_PERCEPTION_SHARED;
    check_older_version(&m, state.step, "tiny_v3.dlca", &want, "version 3", &got);
    want = m.config;
    want.perception_wiring = CA_PERCEPTION_SHARED;
    check_older_version(&m, state.step, "tiny_v4.dlca", &want, "version 4", &got);
    check_older_version(&m, state.step, "tiny_v5.dlca", &m.config, "version 5", &got);
    free(data);
    ca_model_free(&m), ca_train_state_free(&state), ca_target_image_free(&target);
}

static void remove_temp_dir(void)
{
    static const char *const names[] = {"preset.dlca", "short.dlca", "existing.dlca", "replace.dlca", "a_directory"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) remove(path_in(names[i]));
    rmdir(temp_dir);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(temp_dir, sizeof temp_dir, "%s/dlca_test_file.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(temp_dir)) return fprintf(stderr, "mkdtemp %s: %s\n", temp_dir, strerror(errno)), 1;
    test_presets_round_trip();
    test_optional_sections();
    test_pool_section();
    test_truncation();
    test_flipped_bytes();
    test_defects();
    test_not_model_files();
    test_save_failures();
    test_save_replaces();
    test_init_wired();
    test_corpus();
    remove_temp_dir();
    return test_finish("test_ca_file");
}
