/* ca_file_load.c: reading a model file (format in ca_file.h) and checking all of it. Every
 * read is bounds-checked, so a short file names the field it ends in; every count is checked
 * against the config before anything is allocated from it; the CRC is checked last. A content
 * error also says when the CRC does not match, i.e. the file is damaged rather than mis-made. */
#include "ca_file.h"

#include "crc32.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The update network reads C + K*C*bits inputs per cell. The config allows up to 134M; a file
 * asking for more than this is refused as absurd, since its reverse wiring alone would take
 * gigabytes for a file of a few hundred bytes. */
enum { MAX_LAYER_INPUTS = 1 << 24, FIELD_NAME_LENGTH = 64 };

typedef struct {
    const uint8_t *data;
    size_t size, pos;
    const char *name; /* the file, for messages */
    uint32_t version; /* the file's format version, once read */
} byte_source;

/* What is parsed before the model exists: the wirings hold only n_in, n_out and input lists. */
typedef struct {
    uint32_t flags;
    ca_config config;
    uint64_t gate_count;
    wiring perception[CA_MAX_LAYERS], update[CA_MAX_LAYERS];
} file_parts;

/* Returns the status of `call` unless it is DLCA_OK: the parser is a long chain of reads. */
#define TRY(call)                                       \
    do {                                                \
        int try_status_ = (call);                       \
        if (try_status_ != DLCA_OK) return try_status_; \
    } while (0)

static uint32_t le32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t le64(const uint8_t *b) { return le32(b) | (uint64_t)le32(b + 4) << 32; }

static float f32_at(const uint8_t *b)
{
    uint32_t bits = le32(b);
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* A content error: names the file, and says so when the stored CRC does not match either. */
__attribute__((format(printf, 2, 3))) static int corrupt(const byte_source *r, const char *fmt, ...)
{
    char text[768];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    int damaged = r->size >= 4 && crc32_update(0, r->data, r->size - 4) != le32(r->data + r->size - 4);
    return err_set(DLCA_ERR, "%s: %s%s", r->name, text, damaged ? " (and the CRC does not match: the file is damaged)" : "");
}

/* Steps over n bytes of `field`, or reports where the file ends and returns NULL. */
static const uint8_t *take(byte_source *r, size_t n, const char *field)
{
    if (n > r->size - r->pos) {
        err_set(DLCA_ERR, "%s: truncated at %s: it needs %zu bytes at offset %zu, but the file is %zu bytes", r->name,
                field, n, r->pos, r->size);
        return NULL;
    }
    const uint8_t *at = r->data + r->pos;
    r->pos += n;
    return at;
}

static int get_u32(byte_source *r, const char *field, uint32_t *value)
{
    const uint8_t *b = take(r, 4, field);
    if (!b) return DLCA_ERR;
    *value = le32(b);
    return DLCA_OK;
}

static int get_u64(byte_source *r, const char *field, uint64_t *value)
{
    const uint8_t *b = take(r, 8, field);
    if (!b) return DLCA_ERR;
    *value = le64(b);
    return DLCA_OK;
}

/* int32_t is two's complement, so the copy is exact for every bit pattern. */
static int get_i32(byte_source *r, const char *field, int *value)
{
    uint32_t bits;
    int32_t signed_value;
    TRY(get_u32(r, field, &bits));
    memcpy(&signed_value, &bits, sizeof signed_value);
    *value = signed_value;
    return DLCA_OK;
}

static int get_f64(byte_source *r, const char *field, double *value)
{
    uint64_t bits;
    TRY(get_u64(r, field, &bits));
    memcpy(value, &bits, sizeof *value);
    return DLCA_OK;
}

static int read_preamble(byte_source *r, uint32_t *flags)
{
    size_t shown = r->size < CA_FILE_MAGIC_SIZE ? r->size : CA_FILE_MAGIC_SIZE;
    uint32_t version;
    if (r->size == 0) return err_set(DLCA_ERR, "%s: empty file, not a dlca model", r->name);
    if (memcmp(r->data, ca_file_magic, shown) != 0)
        return err_set(DLCA_ERR, "%s: not a dlca model (wrong magic bytes)", r->name);
    if (!take(r, CA_FILE_MAGIC_SIZE, "the magic")) return DLCA_ERR;
    TRY(get_u32(r, "the format version", &version));
    if (version < 1 || version > CA_FILE_VERSION)
        return err_set(DLCA_ERR, "%s: unknown format version %u (this build reads versions 1 to %d)", r->name, version,
                       CA_FILE_VERSION);
    r->version = version;
    TRY(get_u32(r, "the flags", flags));
    if (*flags & ~(uint32_t)(CA_FILE_FLAG_STATE | CA_FILE_FLAG_TARGET | CA_FILE_FLAG_BEST | CA_FILE_FLAG_POOL))
        return corrupt(r, "unknown flags 0x%08x (version %u knows bits 0 to 3)", *flags, r->version);
    if ((*flags & CA_FILE_FLAG_BEST) && !(*flags & CA_FILE_FLAG_STATE))
        return corrupt(r, "flags 0x%08x: a best circuit (bit 2) without a training state (bit 0)", *flags);
    if ((*flags & CA_FILE_FLAG_POOL) && !(*flags & CA_FILE_FLAG_STATE))
        return corrupt(r, "flags 0x%08x: a sample pool (bit 3) without a training state (bit 0)", *flags);
    return DLCA_OK;
}

/* NUL-padded: the padding must be zeros too, so a file has exactly one spelling per config. */
static int read_preset(byte_source *r, char *preset)
{
    const uint8_t *b = take(r, CA_NAME_LENGTH, "config preset name");
    if (!b) return DLCA_ERR;
    const uint8_t *nul = memchr(b, 0, CA_NAME_LENGTH);
    if (!nul) return corrupt(r, "config: the preset name has no NUL within its %d bytes", CA_NAME_LENGTH);
    for (const uint8_t *pad = nul; pad < b + CA_NAME_LENGTH; pad++)
        if (*pad) return corrupt(r, "config: the preset name's padding is not all zero bytes");
    memcpy(preset, b, CA_NAME_LENGTH);
    return DLCA_OK;
}

/* The depth is checked before the widths are read, so it never indexes past CA_MAX_LAYERS. */
static int read_widths(byte_source *r, const char *part, int *depth, int *widths)
{
    char field[FIELD_NAME_LENGTH];
    snprintf(field, sizeof field, "config %s depth", part);
    TRY(get_i32(r, field, depth));
    if (*depth < 1 || *depth > CA_MAX_LAYERS)
        return corrupt(r, "config: %s depth = %d is outside 1..%d", part, *depth, CA_MAX_LAYERS);
    snprintf(field, sizeof field, "config %s widths", part);
    for (int i = 0; i < *depth; i++) TRY(get_i32(r, field, &widths[i]));
    return DLCA_OK;
}

static int read_config_fields(byte_source *r, ca_config *c)
{
    int boundary, update_wiring, start, target;
    TRY(read_preset(r, c->preset));
    TRY(get_i32(r, "config height", &c->height));
    TRY(get_i32(r, "config width", &c->width));
    TRY(get_i32(r, "config boundary", &boundary));
    TRY(get_i32(r, "config channels", &c->channels));
    TRY(get_i32(r, "config kernels", &c->kernels));
    TRY(read_widths(r, "perception", &c->perception_depth, c->perception_widths));
    TRY(read_widths(r, "update", &c->update_depth, c->update_widths));
    TRY(get_i32(r, "config update wiring", &update_wiring));
    TRY(get_i32(r, "config steps", &c->steps));
    TRY(get_f64(r, "config fire rate", &c->fire_rate));
    TRY(get_i32(r, "config loss channels", &c->loss_channels));
    TRY(get_i32(r, "config start", &start));
    TRY(get_i32(r, "config target", &target));
    TRY(get_i32(r, "config batch", &c->batch));
    TRY(get_i32(r, "config train steps", &c->train_steps));
    TRY(get_f64(r, "config learning rate", &c->learning_rate));
    TRY(get_u64(r, "config seed", &c->seed));
    uint32_t schedule = CA_LR_CONSTANT, warmup = 0;
    c->lr_final = 0.0, c->init_logit = CA_INIT_LOGIT_V1;
    if (r->version >= 2) {
        TRY(get_u32(r, "config lr schedule", &schedule));
        TRY(get_u32(r, "config warmup", &warmup));
        TRY(get_f64(r, "config lr final", &c->lr_final));
        TRY(get_f64(r, "config init logit", &c->init_logit));
    }
    uint32_t pool = 0, window = 0, damage = 0;
    if (r->version >= 3) {
        TRY(get_u32(r, "config pool", &pool));
        TRY(get_u32(r, "config window", &window));
        TRY(get_u32(r, "config damage", &damage));
    }
    if (pool > CA_MAX_POOL || window > CA_MAX_T || damage > CA_MAX_BATCH)
        return corrupt(r, "config: pool %u, window %u or damage %u is out of range", pool, window, damage);
    c->pool = (int)pool, c->window = (int)window, c->damage = (int)damage;
    uint32_t window_loss = CA_WINDOW_LOSS_LAST;
    if (r->version >= 4) TRY(get_u32(r, "config window loss", &window_loss));
    if (window_loss >= CA_WINDOW_LOSS_KINDS) return corrupt(r, "config: window loss %u is out of range", window_loss);
    c->window_loss = (ca_window_loss)window_loss;
    uint32_t perception_wiring = CA_PERCEPTION_SHARED;
    if (r->version >= 5) TRY(get_u32(r, "config perception wiring", &perception_wiring));
    if (perception_wiring >= CA_PERCEPTION_KINDS)
        return corrupt(r, "config: perception wiring %u is out of range", perception_wiring);
    c->perception_wiring = (ca_perception_wiring)perception_wiring;
    uint32_t pool_starts = 1;
    if (r->version >= 6) TRY(get_u32(r, "config pool starts", &pool_starts));
    if (pool_starts < 1 || pool_starts > CA_MAX_BATCH)
        return corrupt(r, "config: pool starts %u is out of range", pool_starts);
    c->pool_starts = (int)pool_starts;
    c->weight_decay = CA_WEIGHT_DECAY; /* its range ca_config_check's, as the other reals' */
    if (r->version >= 6) TRY(get_f64(r, "config weight decay", &c->weight_decay));
    if (schedule >= CA_LR_KINDS || warmup > (uint32_t)CA_MAX_TRAIN_STEPS)
        return corrupt(r, "config: lr schedule %u or warm-up %u is out of range", schedule, warmup);
    c->lr_schedule = (ca_lr_kind)schedule, c->warmup = (int)warmup;
    c->boundary = (ca_boundary)boundary, c->update_wiring = (wiring_kind)update_wiring;
    c->start = (ca_start)start, c->target = (ca_target)target;
    return DLCA_OK;
}

static int read_config(byte_source *r, ca_config *c)
{
    TRY(read_config_fields(r, c));
    if (ca_config_check(c)) return corrupt(r, "%s", err_message());
    if (ca_config_update_inputs(c) > MAX_LAYER_INPUTS)
        return corrupt(r, "config: the update network would read %d inputs per cell, over the %d a file may ask for",
                       ca_config_update_inputs(c), MAX_LAYER_INPUTS);
    return DLCA_OK;
}

/* One input list; checked against n_in here so the message names the file, layer and gate. */
static int read_inputs(byte_source *r, int **inputs, int n_in, int n_out, const char *layer, const char *slot)
{
    char field[FIELD_NAME_LENGTH];
    snprintf(field, sizeof field, "%s %s", layer, slot);
    const uint8_t *b = take(r, (size_t)n_out * 4, field);
    if (!b) return DLCA_ERR;
    for (int g = 0; g < n_out; g++) {
        uint32_t input = le32(b + 4 * (size_t)g);
        if (input >= (uint32_t)n_in)
            return corrupt(r, "%s: gate %d reads %s = %u, outside 0..%d", layer, g, slot, input, n_in - 1);
    }
    *inputs = malloc(sizeof(int) * (size_t)n_out);
    if (!*inputs) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for %s", r->name, field);
    for (int g = 0; g < n_out; g++) (*inputs)[g] = (int)le32(b + 4 * (size_t)g);
    return DLCA_OK;
}

/* The shape must be right before the lists are read, because n_out says how many follow.
 * (ca_model_init_wired checks the same rule again when the model is built.) */
static int read_layer(byte_source *r, wiring *w, const ca_config *c, int update, int l)
{
    int n_in, n_out;
    ca_config_layer_shape(c, update, l, &n_in, &n_out);
    char layer[FIELD_NAME_LENGTH / 2], field[FIELD_NAME_LENGTH];
    uint32_t file_in, file_out;
    snprintf(layer, sizeof layer, "%s layer %d", update ? "update" : "perception", l);
    snprintf(field, sizeof field, "%s n_in", layer);
    TRY(get_u32(r, field, &file_in));
    snprintf(field, sizeof field, "%s n_out", layer);
    TRY(get_u32(r, field, &file_out));
    if (file_in != (uint32_t)n_in || file_out != (uint32_t)n_out)
        return corrupt(r, "%s: wiring is %u -> %u, but the config implies %d -> %d", layer, file_in, file_out, n_in,
                       n_out);
    w->n_in = n_in, w->n_out = n_out;
    TRY(read_inputs(r, &w->input_a, n_in, n_out, layer, "input_a"));
    return read_inputs(r, &w->input_b, n_in, n_out, layer, "input_b");
}

static int read_wirings(byte_source *r, file_parts *p)
{
    for (int l = 0; l < p->config.perception_depth; l++) TRY(read_layer(r, &p->perception[l], &p->config, 0, l));
    for (int l = 0; l < p->config.update_depth; l++) TRY(read_layer(r, &p->update[l], &p->config, 1, l));
    return DLCA_OK;
}

/* n floats of `field` into dest (NULL: check only). NaN/Inf are refused everywhere; negative
 * values where `nonnegative` (Adam's second moment is a mean of squares). */
static int read_floats(byte_source *r, const char *field, size_t n, int nonnegative, float *dest)
{
    const uint8_t *b = take(r, n * 4, field);
    if (!b) return DLCA_ERR;
    for (size_t i = 0; i < n; i++) {
        float value = f32_at(b + 4 * i);
        if (!isfinite(value) || (nonnegative && value < 0.0f))
            return corrupt(r, "%s[%zu] (gate %zu, op %zu) is %s", field, i, i / GATE_OP_COUNT, i % GATE_OP_COUNT,
                           isnan(value) ? "NaN" : isinf(value) ? "infinite" : "negative");
        if (dest) dest[i] = value;
    }
    return DLCA_OK;
}

/* A moment array, allocated only once the file is known to hold it. */
static int read_moment(byte_source *r, const char *field, size_t n, int nonnegative, float **out)
{
    if (n * 4 > r->size - r->pos) {
        take(r, n * 4, field); /* fails, and says where the file ends */
        return DLCA_ERR;
    }
    if (out && !(*out = malloc(n * sizeof(float))))
        return err_set(DLCA_ERR_NOMEM, "%s: out of memory for %s of %zu values", r->name, field, n);
    return read_floats(r, field, n, nonnegative, out ? *out : NULL);
}

static int read_state(byte_source *r, size_t values, ca_train_state *state)
{
    uint64_t step;
    double seconds;
    TRY(get_u64(r, "training step", &step));
    TRY(get_f64(r, "training seconds", &seconds));
    if (!isfinite(seconds) || seconds < 0.0) return corrupt(r, "training seconds %g is not a finite time", seconds);
    if (state) state->step = step, state->seconds = seconds;
    TRY(read_moment(r, "moment1", values, 0, state ? &state->moment1 : NULL));
    return read_moment(r, "moment2", values, 1, state ? &state->moment2 : NULL);
}

static int read_best(byte_source *r, size_t values, ca_best_state *best)
{
    uint64_t step, exact_step;
    double wrong, soft;
    uint32_t exact;
    TRY(get_u64(r, "best step", &step));
    TRY(get_u64(r, "exact step", &exact_step));
    TRY(get_f64(r, "best hard loss", &wrong));
    TRY(get_f64(r, "best soft loss", &soft));
    TRY(get_u32(r, "best exact", &exact));
    if (step == 0) return corrupt(r, "the best circuit's step is 0 (steps count from 1)");
    if (!isfinite(wrong) || wrong < 0.0 || !isfinite(soft) || soft < 0.0)
        return corrupt(r, "the best circuit's losses %g and %g are not finite and >= 0", wrong, soft);
    if (exact > 1) return corrupt(r, "the best circuit's exact flag is %u, not 0 or 1", exact);
    if (best) best->step = step, best->exact_step = exact_step, best->wrong = wrong, best->soft = soft, best->exact = (int)exact;
    TRY(read_moment(r, "best logits", values, 0, best ? &best->logits : NULL));
    TRY(read_moment(r, "best moment1", values, 0, best ? &best->moment1 : NULL));
    return read_moment(r, "best moment2", values, 1, best ? &best->moment2 : NULL);
}

/* Flag 3: the pool's grids as bits, allocated only when the state is wanted. */
static int read_pool(byte_source *r, const ca_config *c, ca_train_state *state)
{
    uint32_t pool, channels, cells;
    TRY(get_u32(r, "pool size", &pool));
    TRY(get_u32(r, "pool channels", &channels));
    TRY(get_u32(r, "pool cells", &cells));
    if (c->pool == 0 || pool != (uint32_t)c->pool || channels != (uint32_t)c->channels ||
        cells != (uint32_t)(c->height * c->width))
        return corrupt(r, "the sample pool is %u grids of %u channels x %u cells, but the config's is %d of %d x %d", pool,
                       channels, cells, c->pool, c->channels, c->height * c->width);
    size_t bytes = ca_file_pool_bytes(c), used = ca_file_pool_bits(c);
    const uint8_t *b = take(r, bytes, "pool bits");
    if (!b) return DLCA_ERR;
    if (used % 8 && b[bytes - 1] >> (used % 8))
        return corrupt(r, "the pool's last byte 0x%02x sets bits past its %zu grid bits", b[bytes - 1], used);
    if (!state) return DLCA_OK;
    if (!(state->pool = malloc(bytes))) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for the pool", r->name);
    memcpy(state->pool, b, bytes);
    return DLCA_OK;
}

static int read_target(byte_source *r, const ca_config *c, ca_target_image *target)
{
    uint32_t channels, height, width;
    TRY(get_u32(r, "target channels", &channels));
    TRY(get_u32(r, "target height", &height));
    TRY(get_u32(r, "target width", &width));
    if (channels < 1 || channels > (uint32_t)c->channels || height != (uint32_t)c->height || width != (uint32_t)c->width)
        return corrupt(r, "target image is %u channels of %ux%u, but the grid is %dx%d with %d channels", channels,
                       height, width, c->height, c->width, c->channels);
    /* The loss reads channels 0 .. loss_channels-1 of the target: fewer would be read past its end. */
    if (channels < (uint32_t)c->loss_channels)
        return corrupt(r, "target image has %u channel%s, but the config's loss reads %d", channels,
                       channels == 1 ? "" : "s", c->loss_channels);
    size_t plane = (size_t)height * width, n = channels * plane;
    const uint8_t *b = take(r, n, "target bits");
    if (!b) return DLCA_ERR;
    for (size_t i = 0; i < n; i++)
        if (b[i] > 1)
            return corrupt(r, "target bit (channel %zu, y %zu, x %zu) is %u, not 0 or 1", i / plane, i % plane / width,
                           i % width, b[i]);
    if (!target) return DLCA_OK;
    if (!(target->bits = malloc(n))) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for the target image", r->name);
    memcpy(target->bits, b, n);
    target->channels = (int)channels, target->height = (int)height, target->width = (int)width;
    return DLCA_OK;
}

static int read_crc(byte_source *r)
{
    size_t covered = r->pos;
    uint32_t stored;
    TRY(get_u32(r, "the CRC", &stored));
    if (r->pos != r->size)
        return err_set(DLCA_ERR, "%s: %zu trailing bytes after the CRC, which ends at offset %zu", r->name,
                       r->size - r->pos, r->pos);
    uint32_t computed = crc32_update(0, r->data, covered);
    if (computed != stored)
        return err_set(DLCA_ERR, "%s: CRC mismatch: expected 0x%08x (computed over %zu bytes), found 0x%08x: the file is damaged",
                       r->name, computed, covered, stored);
    return DLCA_OK;
}

/* ca_model_init_wired's own message is kept, prefixed with the file. */
static int build_model(byte_source *r, file_parts *p, ca_model *model)
{
    int status = ca_model_init_wired(model, &p->config, p->perception, p->update);
    if (status == DLCA_ERR_NOMEM) {
        char reason[768];
        snprintf(reason, sizeof reason, "%s", err_message());
        return err_set(status, "%s: %s", r->name, reason);
    }
    if (status != DLCA_OK) return corrupt(r, "%s", err_message());
    if (p->gate_count != model->gate_count)
        return corrupt(r, "gate_count is %llu, but the config implies %zu", (unsigned long long)p->gate_count,
                       model->gate_count);
    return DLCA_OK;
}

static int parse(byte_source *r, file_parts *p, ca_model *model, ca_train_state *state, ca_target_image *target)
{
    TRY(read_preamble(r, &p->flags));
    TRY(read_config(r, &p->config));
    TRY(get_u64(r, "gate_count", &p->gate_count));
    TRY(read_wirings(r, p));
    TRY(build_model(r, p, model));
    size_t values = model->gate_count * GATE_OP_COUNT;
    TRY(read_floats(r, "logits", values, 0, model->logits));
    if (p->flags & CA_FILE_FLAG_STATE) TRY(read_state(r, values, state));
    if (p->flags & CA_FILE_FLAG_TARGET) TRY(read_target(r, &p->config, target));
    if (p->flags & CA_FILE_FLAG_BEST) TRY(read_best(r, values, state ? &state->best : NULL));
    if (p->flags & CA_FILE_FLAG_POOL) TRY(read_pool(r, &p->config, state));
    return read_crc(r);
}

int ca_file_load_memory(const uint8_t *data, size_t size, const char *name, ca_model *model, ca_train_state *state,
                        ca_target_image *target)
{
    memset(model, 0, sizeof *model);
    if (state) memset(state, 0, sizeof *state);
    if (target) memset(target, 0, sizeof *target);
    byte_source r = {data, size, 0, name, 0};
    file_parts parts;
    memset(&parts, 0, sizeof parts);
    int status = parse(&r, &parts, model, state, target);
    for (int l = 0; l < CA_MAX_LAYERS; l++) wiring_free(&parts.perception[l]), wiring_free(&parts.update[l]);
    if (status != DLCA_OK) {
        ca_model_free(model);
        if (state) ca_train_state_free(state);
        if (target) ca_target_image_free(target);
    }
    return status;
}

/* Reads up to CA_FILE_MAX_SIZE + 1 bytes, so a file that grows while being read is still caught. */
static int read_fd(int fd, const char *path, size_t capacity, uint8_t **data, size_t *size)
{
    uint8_t *buffer = malloc(capacity);
    size_t n = 0;
    for (;;) {
        if (!buffer) return err_set(DLCA_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, capacity);
        if (n == capacity) {
            if (capacity > CA_FILE_MAX_SIZE) break;
            capacity = capacity > CA_FILE_MAX_SIZE / 2 ? CA_FILE_MAX_SIZE + 1 : capacity * 2;
            uint8_t *grown = realloc(buffer, capacity);
            if (!grown) free(buffer);
            buffer = grown;
            continue;
        }
        ssize_t got = read(fd, buffer + n, capacity - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int saved = errno;
            free(buffer);
            return err_set(DLCA_ERR, "%s: cannot read: %s", path, strerror(saved));
        }
        if (got == 0) break;
        n += (size_t)got;
        /* Not a model: the parser says so from these bytes, without slurping 1 GiB of /dev/zero. */
        if (n >= CA_FILE_MAGIC_SIZE && memcmp(buffer, ca_file_magic, CA_FILE_MAGIC_SIZE) != 0) break;
    }
    if (n > CA_FILE_MAX_SIZE) {
        free(buffer);
        return err_set(DLCA_ERR, "%s: larger than %zu bytes (1 GiB), the limit for a model file", path, CA_FILE_MAX_SIZE);
    }
    *data = buffer, *size = n;
    return DLCA_OK;
}

static int read_whole_file(const char *path, uint8_t **data, size_t *size)
{
    struct stat st;
    size_t capacity = 1 << 16;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return err_set(DLCA_ERR, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        if ((unsigned long long)st.st_size > CA_FILE_MAX_SIZE) {
            close(fd);
            return err_set(DLCA_ERR, "%s: the file is %lld bytes, over the 1 GiB limit for a model file", path,
                           (long long)st.st_size);
        }
        capacity = (size_t)st.st_size + 1; /* one spare byte sees the end without growing */
    }
    int status = read_fd(fd, path, capacity, data, size);
    close(fd);
    return status;
}

int ca_file_load(const char *path, ca_model *model, ca_train_state *state, ca_target_image *target)
{
    uint8_t *data = NULL;
    size_t size = 0;
    memset(model, 0, sizeof *model);
    if (state) memset(state, 0, sizeof *state);
    if (target) memset(target, 0, sizeof *target);
    int status = read_whole_file(path, &data, &size);
    if (status != DLCA_OK) return status;
    status = ca_file_load_memory(data, size, path, model, state, target);
    free(data);
    return status;
}
