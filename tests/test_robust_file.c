/* test_robust_file: what test_ca_file leaves out about bad model files. Streams that never end
 * (/dev/zero) and files over 1 GiB are refused without reading them; configs asking for absurd
 * sizes are refused before anything is allocated from them; a model whose config is valid but
 * whose grid and batch cannot fit in memory makes train, eval and run fail with one line (from
 * their memory estimates), not a crash; and every kind of damage (magic, version, truncation,
 * CRC, NaN, wiring) reaches the user of `dlca info`, `run`, `eval` and `export` as one line
 * naming the file, exit 1. Hostile contents of intact files are refused the same way: a target
 * with fewer channels than the loss reads, preset names, train steps. Under
 * ASan, run with ASAN_OPTIONS=allocator_may_return_null=1 (as .ci/run does): dlca handles a
 * failed malloc, and that is what is tested. */
#include "ca_file.h"
#include "ca_fixtures.h"
#include "crc32.h"
#include "error.h"
#include "hard_export.h"
#include "robust.h"
#include "robust_model.h"

#include <fcntl.h>
#include <math.h>
#include <sys/resource.h>

/* ---- bytes ---- */

typedef struct {
    uint8_t data[4096];
    size_t size;
} header_bytes;

static void put32(header_bytes *h, uint32_t v)
{
    for (int i = 0; i < 4; i++) h->data[h->size++] = (uint8_t)(v >> (8 * i));
}

static void put64(header_bytes *h, uint64_t v) { put32(h, (uint32_t)v), put32(h, (uint32_t)(v >> 32)); }

static void put_f64(header_bytes *h, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put64(h, bits);
}

/* Magic, version, flags and the config of ca_file.h, written by hand so that sizes the writer
 * (rightly) cannot produce can be asked for; the file ends after gate_count. */
static void header_of(header_bytes *h, const ca_config *c, uint64_t gate_count)
{
    h->size = 0;
    memcpy(h->data, ca_file_magic, CA_FILE_MAGIC_SIZE), h->size = CA_FILE_MAGIC_SIZE;
    put32(h, CA_FILE_VERSION), put32(h, 0);
    memset(h->data + h->size, 0, CA_NAME_LENGTH);
    memcpy(h->data + h->size, c->preset, strlen(c->preset)), h->size += CA_NAME_LENGTH;
    put32(h, (uint32_t)c->height), put32(h, (uint32_t)c->width), put32(h, (uint32_t)c->boundary);
    put32(h, (uint32_t)c->channels), put32(h, (uint32_t)c->kernels);
    put32(h, (uint32_t)c->perception_depth);
    for (int i = 0; i < c->perception_depth; i++) put32(h, (uint32_t)c->perception_widths[i]);
    put32(h, (uint32_t)c->update_depth);
    for (int i = 0; i < c->update_depth; i++) put32(h, (uint32_t)c->update_widths[i]);
    put32(h, (uint32_t)c->update_wiring), put32(h, (uint32_t)c->steps), put_f64(h, c->fire_rate);
    put32(h, (uint32_t)c->loss_channels), put32(h, (uint32_t)c->start), put32(h, (uint32_t)c->target);
    put32(h, (uint32_t)c->batch), put32(h, (uint32_t)c->train_steps), put_f64(h, c->learning_rate), put64(h, c->seed);
    put32(h, (uint32_t)c->lr_schedule), put32(h, (uint32_t)c->warmup), put_f64(h, c->lr_final);
    put_f64(h, c->init_logit);
    put32(h, (uint32_t)c->pool), put32(h, (uint32_t)c->window), put32(h, (uint32_t)c->damage);
    put32(h, (uint32_t)c->window_loss), put32(h, (uint32_t)c->perception_wiring), put32(h, (uint32_t)c->pool_starts);
    put_f64(h, c->weight_decay);
    put64(h, gate_count);
}

static long max_rss_kib(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

/* Loads `data`: must fail with `needle` in the message, without growing this process by 64 MiB. */
static void expect_cheap_refusal(const uint8_t *data, size_t size, const char *needle, const char *what)
{
    ca_model m;
    ca_train_state s;
    ca_target_image t;
    long before = max_rss_kib();
    int status = ca_file_load_memory(data, size, "absurd.dlca", &m, &s, &t);
    long grown = max_rss_kib() - before;
    CHECK(status != DLCA_OK, "%s: refused", what);
    CHECK(strstr(err_message(), needle) != NULL, "%s: message '%s' has '%s'", what, err_message(), needle);
    CHECK(grown < 64 * 1024, "%s: refusing it took %ld KiB", what, grown);
    if (status == DLCA_OK) ca_model_free(&m), ca_train_state_free(&s), ca_target_image_free(&t);
}

/* ---- tests ---- */

static void test_endless_and_huge_files(void)
{
    ca_model m;
    long before = max_rss_kib();
    CHECK(ca_file_load("/dev/zero", &m, NULL, NULL) != DLCA_OK, "/dev/zero is refused");
    CHECK(strstr(err_message(), "/dev/zero: not a dlca model"), "/dev/zero: %s", err_message());
    CHECK(max_rss_kib() - before < 64 * 1024, "/dev/zero was read whole (%ld KiB)", max_rss_kib() - before);

    /* A sparse file one byte over the limit: refused from its size, not read. */
    char big[512];
    snprintf(big, sizeof big, "%s", robust_path("big.dlca"));
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int made = fd >= 0 && ftruncate(fd, (off_t)CA_FILE_MAX_SIZE + 1) == 0;
    if (fd >= 0) close(fd);
    CHECK(made, "could not make a sparse 1 GiB file");
    before = max_rss_kib();
    CHECK(ca_file_load(big, &m, NULL, NULL) != DLCA_OK, "a file over 1 GiB is refused");
    CHECK(strstr(err_message(), "over the 1 GiB limit"), "over 1 GiB: %s", err_message());
    CHECK(max_rss_kib() - before < 64 * 1024, "the big file was read (%ld KiB)", max_rss_kib() - before);
    remove(big);
    char args[1024];
    robust_refused("/dev/zero: not a dlca model", NULL, "info /dev/zero");
    snprintf(args, sizeof args, "run /dev/urandom --out '%s'", robust_path("x.png"));
    robust_refused("/dev/urandom: not a dlca model", "x.png", args);
}

/* Configs whose sizes are in range one by one but absurd together, or out of range. */
static void test_absurd_configs(void)
{
    ca_config c;
    header_bytes h;
    /* C + K*C*bits = 4096 + 4096*4096*8 inputs per cell: over the 2^24 a file may ask for. */
    tiny_config(&c, CA_BOUNDARY_ZERO, 1.0, 2, 3);
    c.channels = 4096, c.kernels = 4096;
    c.perception_depth = 2, c.perception_widths[1] = 8;
    c.update_depth = 1, c.update_widths[0] = 4096;
    header_of(&h, &c, 4096 + 8 * 4096);
    expect_cheap_refusal(h.data, h.size, "over the 16777216 a file may ask for", "134M inputs per cell");
    /* 32 update layers of 65536 gates: 2M gates, but the wiring lists are not in the file. */
    tiny_config(&c, CA_BOUNDARY_ZERO, 1.0, 2, 3);
    c.update_depth = CA_MAX_LAYERS;
    for (int i = 0; i < CA_MAX_LAYERS; i++) c.update_widths[i] = 65536;
    c.update_widths[CA_MAX_LAYERS - 1] = c.channels;
    header_of(&h, &c, 1u << 21);
    expect_cheap_refusal(h.data, h.size, "truncated at perception layer 0 n_in", "2M gates without their wiring");
    /* Each field one past its range, and negative numbers read as two's complement. */
    static const struct {
        size_t offset; /* in the config, after the 16-byte preamble */
        uint32_t value;
        const char *needle;
    } fields[] = {{32, 0x4001, "grid height = 16385"}, {36, 0xffffffffu, "grid width = -1"},
                  {44, 4097, "channels = 4097"}, {48, 0x80000000u, "kernels = -2147483648"}};
    tiny_config(&c, CA_BOUNDARY_ZERO, 1.0, 2, 3);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        header_of(&h, &c, 40);
        for (int b = 0; b < 4; b++) h.data[16 + fields[i].offset + (size_t)b] = (uint8_t)(fields[i].value >> (8 * b));
        expect_cheap_refusal(h.data, h.size, fields[i].needle, fields[i].needle);
    }
    /* A batch of 2^16 passes the config check (the largest --batch), but 2^16 + 1 must not. */
    c.batch = CA_MAX_BATCH + 1;
    header_of(&h, &c, 40);
    expect_cheap_refusal(h.data, h.size, "batch = 65537 is outside 1..65536", "batch 2^16 + 1");
}

/* A valid file with the largest grid and batch a config may have: 4096x4096 and 2^16, 1.1e12
 * cells. Loading is fine (the model does not depend on the grid); everything that would
 * allocate the grid must say no, from its memory estimate (test_robust_limits has more). */
static void test_unaffordable_model(void)
{
    ca_config c;
    ca_model m;
    tiny_config(&c, CA_BOUNDARY_PERIODIC, 1.0, 2, 3);
    c.height = c.width = CA_MAX_SIDE, c.batch = CA_MAX_BATCH;
    if (ca_model_init(&m, &c)) {
        CHECK(0, "model: %s", err_message());
        return;
    }
    size_t n = m.gate_count * GATE_OP_COUNT;
    float *zeros = calloc(n, sizeof(float));
    ca_train_state state = {3, 1.0, zeros, zeros, {0}, NULL};
    char path[512];
    snprintf(path, sizeof path, "%s", robust_path("huge_grid.dlca"));
    CHECK(ca_file_save(path, &m, &state, NULL) == DLCA_OK, "save: %s", err_message());
    ca_model_free(&m), free(zeros);
    char args[2048];
    snprintf(args, sizeof args, "train --resume '%s' --device cpu --steps 10", path);
    robust_refused("needs about 344064.1 GiB of memory, over the --max-memory limit of 4.0 GiB: give --max-memory 344064.1", NULL, args);
    snprintf(args, sizeof args, "eval '%s' --device cpu", path);
    robust_refused("more than --max-memory can allow", NULL, args);
    snprintf(args, sizeof args, "info '%s'", path);
    char err[8192];
    CHECK(robust_run(err, sizeof err, "%s", args) == 0, "info on a valid file exits 0: %s", err);
    snprintf(args, sizeof args, "run '%s' --device cpu --grid 8x8 --steps 2 --out '%s'", path, robust_path("ok.png"));
    CHECK(robust_run(err, sizeof err, "%s", args) == 0, "run on an 8x8 grid of it works: %s", err);
}

/* The tiny model with state, as bytes, and where its logits start. */
static uint8_t *tiny_file(size_t *size, size_t *logits_at)
{
    ca_config c;
    ca_model m;
    tiny_config(&c, CA_BOUNDARY_ZERO, 1.0, 2, 3);
    uint8_t *data = NULL;
    *size = 0;
    if (ca_model_init(&m, &c)) return NULL;
    for (size_t i = 0; i < m.gate_count * GATE_OP_COUNT; i++) m.logits[i] = (float)(i % 7) - 3.0f;
    size_t at = 16 + 168 + 4 * (size_t)(c.perception_depth + c.update_depth) + 8;
    for (int l = 0; l < c.perception_depth; l++) at += 8 + 8 * (size_t)m.perception[l].n_out;
    for (int l = 0; l < c.update_depth; l++) at += 8 + 8 * (size_t)m.update[l].n_out;
    *logits_at = at;
    if (ca_file_save_memory(&data, size, &m, NULL, NULL)) data = NULL;
    ca_model_free(&m);
    return data;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, size, f) == size, "cannot write %s", path);
    if (f) fclose(f);
}

static void fix_crc(uint8_t *data, size_t size)
{
    uint32_t crc = crc32_update(0, data, size - 4);
    for (int i = 0; i < 4; i++) data[size - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
}

/* Each damage, as every command that reads a model meets it. */
static void test_damage_through_the_binary(void)
{
    size_t size, logits;
    uint8_t *good = tiny_file(&size, &logits);
    if (!good) {
        CHECK(0, "tiny model: %s", err_message());
        return;
    }
    uint8_t *bad = malloc(size);
    float nan_value = NAN;
    char path[512];
    snprintf(path, sizeof path, "%s", robust_path("damaged.dlca"));
    struct {
        const char *what, *needle;
        size_t cut;      /* bytes kept (size: all) */
        size_t at;       /* byte to change (with value != 0) */
        uint8_t value;   /* its new value, or 0 for no change */
        int fix;         /* CRC made right afterwards */
        int nan_logit;   /* logits[1] = NaN */
    } cases[] = {
        {"wrong magic", "not a dlca model", 0, 0, 'X', 1, 0},
        {"unknown version", "unknown format version 7", 0, 8, 7, 1, 0},
        {"truncated", "truncated at logits", 0, 0, 0, 0, 0},
        {"CRC mismatch", "CRC mismatch", 0, 0, 0, 0, 0},
        {"NaN logit", "logits[1] (gate 0, op 1) is NaN", 0, 0, 0, 1, 1},
        {"wiring out of range", "outside 0..", 0, 0, 0xff, 1, 0},
    };
    cases[2].cut = logits + 10;
    cases[3].at = logits + 2, cases[3].value = (uint8_t)(good[logits + 2] ^ 0x01);
    cases[5].at = logits - 1; /* the high byte of the last input_b of the last layer */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = cases[i].cut ? cases[i].cut : size;
        memcpy(bad, good, size);
        if (cases[i].value) bad[cases[i].at] = cases[i].value;
        if (cases[i].nan_logit) memcpy(bad + logits + 4, &nan_value, 4);
        if (cases[i].fix) fix_crc(bad, size);
        write_file(path, bad, n);
        char args[4096], needle[600];
        snprintf(needle, sizeof needle, "%s: ", path);
        static const char *const commands[] = {"info '%s'", "eval '%s' --device cpu", "run '%s' --device cpu --out '%s'",
                                               "export '%s' --format c --out '%s'", "train --resume '%s' --device cpu --out '%s'"};
        for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
            snprintf(args, sizeof args, commands[k], path, robust_path("x.out"));
            robust_refused(needle, "x.out", args);
            char err[8192];
            robust_run(err, sizeof err, "%s", args);
            CHECK(strstr(err, cases[i].needle) != NULL, "%s via '%s': '%s' lacks '%s'", cases[i].what, args, err,
                  cases[i].needle);
        }
    }
    free(bad), free(good);
}

/* A valid-CRC model whose target picture has fewer channels than the config's loss reads: eval,
 * train --resume and the GPU upload read past the target (ASan: ca_task_target). The loader
 * refuses it, so no command gets as far. Made by saving a valid 1-loss-channel model with a
 * 1-channel target, then patching the loss channels to 3. */
static void test_target_fewer_channels_than_loss(void)
{
    ca_config c;
    ca_model m;
    small_preset(&c, "image"); /* C = 6, a picture target */
    c.loss_channels = 1;
    if (ca_model_init(&m, &c) != DLCA_OK) {
        CHECK(0, "model: %s", err_message());
        return;
    }
    size_t plane = (size_t)c.height * (size_t)c.width;
    uint8_t *bits = malloc(plane);
    for (size_t i = 0; bits && i < plane; i++) bits[i] = (uint8_t)(i % 3 == 0);
    ca_target_image target = {1, c.height, c.width, bits};
    float *zeros = calloc(m.gate_count * GATE_OP_COUNT, sizeof(float));
    ca_train_state state = {1, 1.0, zeros, zeros, {0}, NULL};
    char path[512];
    snprintf(path, sizeof path, "%s", robust_path("thin_target.dlca"));
    CHECK(robust_save_patched(path, &m, &state, &target, "loss_channels", 3) == 0, "write %s", path);
    ca_model loaded;
    ca_target_image loaded_target;
    CHECK(ca_file_load(path, &loaded, NULL, &loaded_target) != DLCA_OK, "a 1-channel target for 3 loss channels loads");
    CHECK(strstr(err_message(), "target image has 1 channel, but the config's loss reads 3") != NULL, "load: %s",
          err_message());
    static const char *const commands[] = {"info '%s'", "eval '%s' --device cpu", "eval '%s'",
                                           "run '%s' --device cpu --out '%s'", "train --resume '%s' --device cpu --out '%s'",
                                           "train --resume '%s' --out '%s'"};
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        char args[4096];
        snprintf(args, sizeof args, commands[k], path, robust_path("x.out"));
        robust_refused("target image has 1 channel, but the config's loss reads 3", "x.out", args);
        robust_refused(path, "x.out", args);
    }
    /* The writer refuses to make such a file in the first place. */
    m.config.loss_channels = 3;
    CHECK(ca_file_save(robust_path("x.out"), &m, &state, &target) != DLCA_OK, "a 1-channel target for 3 loss channels saves");
    CHECK(strstr(err_message(), "loss reads 3") != NULL, "save: %s", err_message());
    CHECK(!robust_exists(robust_path("x.out")), "the refused save leaves no file");
    free(bits), free(zeros), ca_model_free(&m);
}

/* Preset names are printable ASCII without C comment markers: the name goes into exported C and
 * Verilog comments (a name with a star-slash put a symbol into the compiled C, one with a
 * newline a module into the Verilog) and into `dlca info`'s output (terminal escapes). Each
 * hostile name is refused at load by every command, in one line that holds no raw byte of it. */
static void test_hostile_preset_names(void)
{
    static const struct {
        const char *name, *needle;
    } names[] = {
        {"\x1b[2J\x1b]0;pwned\x07red", "the preset name has byte 0x1b at position 0"},
        {"x */ int injected; /*", "holds a comment marker"},
        {"a/*b", "holds a comment marker"},
        {"gol\nmodule evil;", "the preset name has byte 0x0a at position 3"},
        {"", "the preset name is empty"},
        {"del\x7f", "byte 0x7f at position 3"},
        {"caf\xc3\xa9", "byte 0xc3 at position 3"},
    };
    ca_config c;
    ca_model m;
    tiny_config(&c, CA_BOUNDARY_ZERO, 1.0, 2, 3);
    if (ca_model_init(&m, &c) != DLCA_OK) {
        CHECK(0, "model: %s", err_message());
        return;
    }
    float *zeros = calloc(m.gate_count * GATE_OP_COUNT, sizeof(float));
    ca_train_state state = {1, 1.0, zeros, zeros, {0}, NULL};
    size_t size;
    uint8_t *data = robust_model_bytes(&m, &state, NULL, &size);
    char path[512];
    snprintf(path, sizeof path, "%s", robust_path("named.dlca"));
    for (size_t i = 0; data && i < sizeof names / sizeof names[0]; i++) {
        memset(data + robust_field_at(&c, "preset"), 0, CA_NAME_LENGTH);
        memcpy(data + robust_field_at(&c, "preset"), names[i].name, strlen(names[i].name));
        robust_fix_crc(data, size);
        CHECK(robust_write_bytes(path, data, size) == 0, "write %s", path);
        static const char *const commands[] = {"info '%s'", "eval '%s' --device cpu", "run '%s' --device cpu --out '%s'",
                                               "export '%s' --format c --out '%s'",
                                               "export '%s' --format verilog --out '%s'",
                                               "train --resume '%s' --device cpu --out '%s'"};
        for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
            char args[4096], err[8192];
            snprintf(args, sizeof args, commands[k], path, robust_path("x.out"));
            robust_refused(names[i].needle, "x.out", args);
            robust_run(err, sizeof err, "%s", args);
            CHECK(!strchr(err, 0x1b) && !strchr(err, 0x07) && !strchr(err, 0x7f) && !strchr(err, (char)0xc3),
                  "'%s': the message repeats a raw byte of the name: %s", args, err);
        }
    }
    free(data), free(zeros), ca_model_free(&m);
}

/* Defence in depth: hard_export_write escapes what it puts in comments even when the config
 * never went through the loader, and the model's file name (the user's) as well. */
static void test_export_escapes_comments(void)
{
    ca_config c;
    ca_model m;
    hard_netlist net;
    tiny_config(&c, CA_BOUNDARY_ZERO, 1.0, 2, 3);
    if (ca_model_init(&m, &c) != DLCA_OK || hard_circuit_build(&net, &m, NULL) != DLCA_OK) {
        CHECK(0, "model: %s", err_message());
        return;
    }
    static const char *const hostile[][2] = {
        {"x */ int injected; /*", "model.dlca"},
        {"gol\nmodule evil; endmodule //", "model.dlca"},
        {"gol", "a*/ int from_the_path; /*b.dlca"},
        {"gol", "a\nmodule from_the_path; endmodule\n.dlca"},
        {"\x1b[31m", "\x1b]0;title\x07.dlca"},
    };
    static const hard_export_format formats[] = {HARD_EXPORT_C, HARD_EXPORT_VERILOG, HARD_EXPORT_DOT};
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        ca_config config = m.config;
        memset(config.preset, 0, sizeof config.preset);
        memcpy(config.preset, hostile[i][0], strlen(hostile[i][0]));
        hard_export_info info = {&config, hostile[i][1], NULL};
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
            char *text = NULL;
            size_t size = 0;
            FILE *out = open_memstream(&text, &size);
            CHECK(out && hard_export_write(out, &net, formats[f], &info) == DLCA_OK, "export: %s", err_message());
            if (out) fclose(out);
            if (!text) continue;
            /* C: the header comment's own end is the first star-slash; no line starts with "module"
             * but the cell; nothing but printable ASCII and newlines. */
            const char *end = strstr(text, "*/"), *header_end = strstr(text, " */\n#include <stdint.h>");
            if (formats[f] == HARD_EXPORT_C)
                CHECK(end && header_end && end == header_end + 1, "case %zu: the C header comment is closed early", i);
            const char *module = strstr(text, "\nmodule ");
            if (formats[f] == HARD_EXPORT_VERILOG)
                CHECK(module && strncmp(module, "\nmodule dlca_cell", 17) == 0 && !strstr(module + 1, "\nmodule "),
                      "case %zu: a second module in the Verilog", i);
            CHECK(!strstr(text, "\nmodule evil") && !strstr(text, "\nmodule from_the_path") &&
                      !strstr(text, "\n int injected") && !strstr(text, "\n.dlca"),
                  "case %zu, format %zu: the name or path starts a line of its own", i, f);
            int clean = 1;
            for (size_t b = 0; b < size; b++)
                clean &= text[b] == '\n' || (text[b] >= 0x20 && text[b] <= 0x7e);
            CHECK(clean, "case %zu, format %zu: a byte that is not printable reaches the export", i, f);
            free(text);
        }
    }
    hard_netlist_free(&net), ca_model_free(&m);
}

/* train_steps from a file: -1 trained forever on --resume, 0 neither; both are refused at load.
 * A run already at its steps, resumed with --out new.dlca, printed "wrote new.dlca", exited 0
 * and wrote nothing: now it is an error saying which --steps to give, writing nothing and
 * leaving the file as it was; with a larger --steps it trains and writes. */
static void test_train_steps_from_file(void)
{
    ca_config c;
    ca_model m;
    tiny_config(&c, CA_BOUNDARY_ZERO, 1.0, 2, 3);
    if (ca_model_init(&m, &c) != DLCA_OK) {
        CHECK(0, "model: %s", err_message());
        return;
    }
    float *zeros = calloc(m.gate_count * GATE_OP_COUNT, sizeof(float));
    ca_train_state state = {2, 1.0, zeros, zeros, {0}, NULL};
    char path[512], args[4096], err[8192];
    snprintf(path, sizeof path, "%s", robust_path("steps.dlca"));
    static const struct {
        int32_t value;
        const char *needle;
    } bad[] = {{-1, "train steps = -1 is outside 1..100000000"}, {0, "train steps = 0 is outside 1..100000000"},
               {CA_MAX_TRAIN_STEPS + 1, "train steps = 100000001 is outside"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(robust_save_patched(path, &m, &state, NULL, "train_steps", bad[i].value) == 0, "write %s", path);
        snprintf(args, sizeof args, "train --resume '%s' --device cpu --out '%s'", path, robust_path("new.dlca"));
        robust_refused(bad[i].needle, "new.dlca", args);
        snprintf(args, sizeof args, "train --resume '%s' --device cpu --steps 5 --out '%s'", path, robust_path("new.dlca"));
        robust_refused(bad[i].needle, "new.dlca", args);
        snprintf(args, sizeof args, "info '%s'", path);
        robust_refused(bad[i].needle, NULL, args);
    }
    /* Finished: 10 of 10 steps. */
    state.step = (uint64_t)c.train_steps;
    CHECK(ca_file_save(path, &m, &state, NULL) == DLCA_OK, "save: %s", err_message());
    size_t before_size;
    uint8_t *before = robust_model_bytes(&m, &state, NULL, &before_size);
    snprintf(args, sizeof args, "train --resume '%s' --device cpu --out '%s'", path, robust_path("new.dlca"));
    robust_refused("already trained 10 of 10 steps: give --steps N > 10", "new.dlca", args);
    snprintf(args, sizeof args, "train --resume '%s' --device cpu", path);
    robust_refused("already trained 10 of 10 steps: give --steps N > 10", NULL, args);
    snprintf(args, sizeof args, "train --resume '%s' --device cpu --steps 10 --out '%s'", path, robust_path("new.dlca"));
    robust_refused("has already done 10 steps: give --steps N > 10", "new.dlca", args);
    size_t after_size = 0;
    FILE *f = fopen(path, "rb");
    uint8_t *after = malloc(before_size + 1);
    if (f && after) after_size = fread(after, 1, before_size + 1, f);
    if (f) fclose(f);
    CHECK(before && after && after_size == before_size && memcmp(before, after, before_size) == 0,
          "the refused resumes leave %s as it was", path);
    snprintf(args, sizeof args, "train --resume '%s' --device cpu --steps 12 --every 1 --out '%s'", path,
             robust_path("new.dlca"));
    int status = robust_run(err, sizeof err, "%s", args);
    ca_model more;
    ca_train_state more_state;
    int loaded = status == 0 && ca_file_load(robust_path("new.dlca"), &more, &more_state, NULL) == DLCA_OK;
    CHECK(loaded && more_state.step == 12 && more.config.train_steps == 12,
          "--steps 12 trains on to step 12 and writes new.dlca (%d): %s", status, err);
    if (loaded) ca_model_free(&more), ca_train_state_free(&more_state);
    free(before), free(after), free(zeros), ca_model_free(&m);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (robust_init(argv[0], "robust_file")) return 1;
    test_endless_and_huge_files();
    test_absurd_configs();
    test_unaffordable_model();
    test_damage_through_the_binary();
    test_target_fewer_channels_than_loss();
    test_hostile_preset_names();
    test_export_escapes_comments();
    test_train_steps_from_file();
    robust_cleanup();
    return test_finish("test_robust_file");
}
