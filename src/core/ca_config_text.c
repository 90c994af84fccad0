/* ca_config_text.c: the key table of ca_config_text.h, its parsers and printers, config files,
 * and building a config from assignments. */
#include "ca_config_text.h"

#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ values ---- */

static int parse_int(const char *name, const char *text, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE)
        return err_set(DLCA_ERR, "%s: '%s' is not a whole number", name, text);
    if (value < min || value > max) return err_set(DLCA_ERR, "%s: %lld is outside %lld..%lld", name, value, min, max);
    *out = value;
    return DLCA_OK;
}

static int parse_real(const char *name, const char *text, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(value))
        return err_set(DLCA_ERR, "%s: '%s' is not a number", name, text);
    if (value < min || value > max) return err_set(DLCA_ERR, "%s: %g is outside %g..%g", name, value, min, max);
    *out = value;
    return DLCA_OK;
}

/* The shortest %g that strtod reads back as exactly `value`. */
static void print_real(double value, char *out, size_t size)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(out, size, "%.*g", digits, value);
        if (strtod(out, NULL) == value) return;
    }
}

/* One of `names` (NULL-terminated) by index. */
static int parse_choice(const char *name, const char *text, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(text, names[i]) == 0) return *out = i, DLCA_OK;
    char known[200] = "";
    for (int i = 0; names[i]; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", names[i]);
    return err_set(DLCA_ERR, "%s: '%s' is not one of %s", name, text, known);
}

static const char *const boundary_names[] = {"periodic", "zero", NULL};
static const char *const wiring_names[] = {"unique", "random", NULL};
static const char *const start_names[] = {"boards", "random", "zeros", "seed-cell", NULL};
static const char *const target_names[] = {"life", "checkerboard", "image", NULL};
static const char *const window_loss_names[] = {"last", "every", NULL};
static const char *const perception_wiring_names[] = {"shared", "per-kernel", NULL};

static const char *choice_name(const char *const *names, int count, int value)
{
    return value >= 0 && value < count ? names[value] : "?";
}

/* A list of whole numbers "a,b,c" where each item may be "NxK" (K copies of N) when `repeats`. */
static int parse_widths(const char *name, const char *text, int repeats, int max_width, int *widths, int *depth)
{
    char item[64];
    int n = 0;
    for (const char *p = text;;) {
        const char *comma = strchr(p, ',');
        size_t length = comma ? (size_t)(comma - p) : strlen(p);
        if (length == 0 || length >= sizeof item)
            return err_set(DLCA_ERR, "%s: '%s' is not a list like %s", name, text, repeats ? "256x10,128,8" : "8,4,2");
        memcpy(item, p, length);
        item[length] = '\0';
        char *x = repeats ? strchr(item, 'x') : NULL;
        long long width, count = 1;
        if (x) *x = '\0';
        if (parse_int(name, item, 1, max_width, &width) || (x && parse_int(name, x + 1, 1, CA_MAX_LAYERS, &count)))
            return DLCA_ERR;
        if (n + count > CA_MAX_LAYERS)
            return err_set(DLCA_ERR, "%s: '%s' has more than %d layers", name, text, CA_MAX_LAYERS);
        for (long long i = 0; i < count; i++) widths[n++] = (int)width;
        if (!comma) break;
        p = comma + 1;
    }
    *depth = n;
    return DLCA_OK;
}

/* "a,b,c", runs of three or more equal widths as "NxK" when `repeats` ("8,8" reads better than "8x2"). */
static void print_widths(const int *widths, int depth, int repeats, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < depth && used < size;) {
        int run = 1;
        while (repeats && i + run < depth && widths[i + run] == widths[i]) run++;
        if (run < 3) run = 1;
        int n = run > 1 ? snprintf(out + used, size - used, "%s%dx%d", i ? "," : "", widths[i], run)
                        : snprintf(out + used, size - used, "%s%d", i ? "," : "", widths[i]);
        used += n > 0 ? (size_t)n : 0;
        i += run;
    }
}

/* ------------------------------------------------------------- the keys ---- */

static int parse_preset(ca_config *c, const char *t, const char *name)
{
    ca_config known;
    if (ca_config_preset(&known, t)) {
        char why[256];
        snprintf(why, sizeof why, "%s", err_message());
        return err_set(DLCA_ERR, "%s: %s", name, why);
    }
    snprintf(c->preset, sizeof c->preset, "%.*s", CA_NAME_LENGTH - 1, t); /* a known name: it fits */
    return DLCA_OK;
}
static void print_preset(const ca_config *c, char *o, size_t n) { snprintf(o, n, "%s", c->preset); }

static int parse_grid(ca_config *c, const char *t, const char *name)
{
    const char *x = strchr(t, 'x');
    char first[32];
    long long h, w;
    if (!x || x == t || (size_t)(x - t) >= sizeof first) return err_set(DLCA_ERR, "%s: '%s' is not HxW (e.g. 16x16)", name, t);
    memcpy(first, t, (size_t)(x - t));
    first[x - t] = '\0';
    if (parse_int(name, first, 1, CA_MAX_SIDE, &h) || parse_int(name, x + 1, 1, CA_MAX_SIDE, &w)) return DLCA_ERR;
    c->height = (int)h, c->width = (int)w;
    return DLCA_OK;
}
static void print_grid(const ca_config *c, char *o, size_t n) { snprintf(o, n, "%dx%d", c->height, c->width); }

/* A key whose value is one of `names` (count of them), kept in c->field as `type`. */
#define CHOICE_KEY(key, field, type, names, count)                                                                     \
    static int parse_##key(ca_config *c, const char *t, const char *name)                                              \
    {                                                                                                                  \
        int v = 0;                                                                                                     \
        if (parse_choice(name, t, names, &v)) return DLCA_ERR;                                                         \
        c->field = (type)v;                                                                                            \
        return DLCA_OK;                                                                                                \
    }                                                                                                                  \
    static void print_##key(const ca_config *c, char *o, size_t n)                                                     \
    {                                                                                                                  \
        snprintf(o, n, "%s", choice_name(names, count, (int)c->field));                                                \
    }

CHOICE_KEY(boundary, boundary, ca_boundary, boundary_names, 2)

#define INT_KEY(field, low, high)                                                                                      \
    static int parse_##field(ca_config *c, const char *t, const char *name)                                            \
    {                                                                                                                  \
        long long v = 0;                                                                                                \
        if (parse_int(name, t, low, high, &v)) return DLCA_ERR;                                                        \
        c->field = (int)v;                                                                                             \
        return DLCA_OK;                                                                                                \
    }                                                                                                                  \
    static void print_##field(const ca_config *c, char *o, size_t n) { snprintf(o, n, "%d", c->field); }

INT_KEY(channels, 1, CA_MAX_CHANNELS)
INT_KEY(kernels, 1, CA_MAX_KERNELS)
INT_KEY(steps, 1, CA_MAX_T)
INT_KEY(loss_channels, 1, CA_MAX_CHANNELS)
INT_KEY(batch, 1, CA_MAX_BATCH)
INT_KEY(train_steps, 1, CA_MAX_TRAIN_STEPS)
INT_KEY(warmup, 0, CA_MAX_TRAIN_STEPS)
INT_KEY(pool, 0, CA_MAX_POOL)
INT_KEY(window, 0, CA_MAX_T)
INT_KEY(damage, 0, CA_MAX_BATCH)
INT_KEY(pool_starts, 1, CA_MAX_BATCH)

CHOICE_KEY(window_loss, window_loss, ca_window_loss, window_loss_names, 2)

static int parse_perception(ca_config *c, const char *t, const char *name)
{
    int widths[CA_MAX_LAYERS], depth;
    if (parse_widths(name, t, 0, 8, widths, &depth)) return DLCA_ERR;
    memset(c->perception_widths, 0, sizeof c->perception_widths);
    memcpy(c->perception_widths, widths, (size_t)depth * sizeof(int));
    c->perception_depth = depth;
    return DLCA_OK;
}
static void print_perception(const ca_config *c, char *o, size_t n) { print_widths(c->perception_widths, c->perception_depth, 0, o, n); }

static int parse_update(ca_config *c, const char *t, const char *name)
{
    int widths[CA_MAX_LAYERS], depth;
    if (parse_widths(name, t, 1, CA_MAX_UPDATE_WIDTH, widths, &depth)) return DLCA_ERR;
    memset(c->update_widths, 0, sizeof c->update_widths);
    memcpy(c->update_widths, widths, (size_t)depth * sizeof(int));
    c->update_depth = depth;
    return DLCA_OK;
}
static void print_update(const ca_config *c, char *o, size_t n) { print_widths(c->update_widths, c->update_depth, 1, o, n); }

CHOICE_KEY(wiring, update_wiring, wiring_kind, wiring_names, 2)
CHOICE_KEY(perception_wiring, perception_wiring, ca_perception_wiring, perception_wiring_names, CA_PERCEPTION_KINDS)

static int parse_fire_rate(ca_config *c, const char *t, const char *name) { return parse_real(name, t, CA_MIN_FIRE_RATE, 1.0, &c->fire_rate); }
static void print_fire_rate(const ca_config *c, char *o, size_t n) { print_real(c->fire_rate, o, n); }

CHOICE_KEY(start, start, ca_start, start_names, 4)
CHOICE_KEY(target, target, ca_target, target_names, 3)

static int parse_learning_rate(ca_config *c, const char *t, const char *name)
{
    return parse_real(name, t, CA_MIN_LEARNING_RATE, CA_MAX_LEARNING_RATE, &c->learning_rate);
}
static void print_learning_rate(const ca_config *c, char *o, size_t n) { print_real(c->learning_rate, o, n); }

static int parse_seed(ca_config *c, const char *t, const char *name)
{
    long long v = 0;
    if (parse_int(name, t, 0, INT64_MAX, &v)) return DLCA_ERR;
    c->seed = (uint64_t)v;
    return DLCA_OK;
}
static void print_seed(const ca_config *c, char *o, size_t n) { snprintf(o, n, "%llu", (unsigned long long)c->seed); }

CHOICE_KEY(lr_schedule, lr_schedule, ca_lr_kind, ca_lr_names, CA_LR_KINDS)

static int parse_init_logit(ca_config *c, const char *t, const char *name)
{
    return parse_real(name, t, 1e-9, 50.0, &c->init_logit);
}
static void print_init_logit(const ca_config *c, char *o, size_t n) { print_real(c->init_logit, o, n); }

static int parse_lr_final(ca_config *c, const char *t, const char *name) { return parse_real(name, t, 0.0, 1.0, &c->lr_final); }
static void print_lr_final(const ca_config *c, char *o, size_t n) { print_real(c->lr_final, o, n); }
static int parse_weight_decay(ca_config *c, const char *t, const char *name)
{
    return parse_real(name, t, 0.0, 1.0, &c->weight_decay);
}
static void print_weight_decay(const ca_config *c, char *o, size_t n) { print_real(c->weight_decay, o, n); }

/* Every field of ca_config, in the order `dlca info` prints them. */
const ca_config_key ca_config_keys[] = {
    {"preset", NULL, "NAME",
     "what the other keys change: gol, checkerboard, checkerboard-async, lizard, image or image-persist",
     parse_preset, print_preset},
    {"grid", NULL, "HxW", "grid height x width, each 1..4096", parse_grid, print_grid},
    {"boundary", NULL, "B", "periodic or zero", parse_boundary, print_boundary},
    {"channels", NULL, "N", "C, bits per cell; the last update layer follows it unless --update is given", parse_channels,
     print_channels},
    {"kernels", NULL, "N", "K perception kernels", parse_kernels, print_kernels},
    {"perception", NULL, "8,4,2", "gates per perception layer of each kernel; the first is 8 (moore wiring)",
     parse_perception, print_perception},
    {"perception-wiring", NULL, "W",
     "the first perception layer's neighbour order: shared (one for every kernel) or per-kernel (one a kernel)",
     parse_perception_wiring, print_perception_wiring},
    {"update", NULL, "256x10,128,...,C", "gates per update layer, NxK = K layers of N; the last has C gates",
     parse_update, print_update},
    {"wiring", NULL, "W", "update wiring: unique (each input used) or random", parse_wiring, print_wiring},
    {"steps-per-rollout", "T", "N", "T, CA steps per rollout (--T is the same flag)", parse_steps, print_steps},
    {"fire-rate", "async", "RATE", "probability a cell updates a step, in (0, 1]; 1 = synchronous (also --async)",
     parse_fire_rate, print_fire_rate},
    {"loss-channels", NULL, "N", "the loss compares channels 0..N-1", parse_loss_channels, print_loss_channels},
    {"start", NULL, "S", "start state: boards (3x3 Life boards), random, zeros or seed-cell", parse_start, print_start},
    {"target-kind", NULL, "T", "what the last grid is compared with: life, checkerboard or image (--target)",
     parse_target, print_target},
    {"batch", NULL, "N", "samples per training step", parse_batch, print_batch},
    {"steps", NULL, "N", "training steps", parse_train_steps, print_train_steps},
    {"learning-rate", "lr", "X", "AdamW learning rate (also --lr)", parse_learning_rate, print_learning_rate},
    {"seed", NULL, "N", "fixes every random choice: wiring, starts, fire masks", parse_seed, print_seed},
    {"lr-schedule", NULL, "S", "learning rate over the run: constant, step, exp, cosine or onecycle", parse_lr_schedule,
     print_lr_schedule},
    {"warmup", NULL, "N", "steps of linear learning-rate warm-up first (0: none)", parse_warmup, print_warmup},
    {"lr-final", NULL, "X", "where step, exp, cosine and onecycle end, as a fraction of the learning rate (0..1)",
     parse_lr_final, print_lr_final},
    {"init-logit", NULL, "X",
     "gates start as pass-through A with this logit, others 0 (0..50]; checkerboard-async and lizard 8, else 7",
     parse_init_logit, print_init_logit},
    {"weight-decay", NULL, "X", "AdamW's decoupled weight decay on the gate logits, 0..1 (default 0.01)",
     parse_weight_decay, print_weight_decay},
    {"pool", NULL, "N",
     "persistence rounds (half) start from a pool of N of their final grids, the farthest starts (0: none)",
     parse_pool, print_pool},
    {"window", NULL, "K", "persistence rounds (half) run T+1..T+K CA steps: the target must hold that long",
     parse_window, print_window},
    {"damage", NULL, "N", "N of a persistence round's pool grids (the closest to the target) get a rectangle erased",
     parse_damage, print_damage},
    {"pool-starts", NULL, "N",
     "N of a persistence round's grids, the farthest from the target, start from the preset's starts (default 1)",
     parse_pool_starts, print_pool_starts},
    {"window-loss", NULL, "W", "last: a round asks for the target at its last step; every: at each step T..T+u (the mean)",
     parse_window_loss, print_window_loss},
};
const int ca_config_key_count = (int)(sizeof ca_config_keys / sizeof ca_config_keys[0]);

const ca_config_key *ca_config_key_find(const char *name)
{
    for (int i = 0; i < ca_config_key_count; i++)
        if (strcmp(name, ca_config_keys[i].key) == 0 || (ca_config_keys[i].alias && strcmp(name, ca_config_keys[i].alias) == 0))
            return &ca_config_keys[i];
    return NULL;
}

void ca_config_print(const ca_config *c, FILE *out)
{
    char value[CA_CONFIG_VALUE_MAX];
    for (int i = 0; i < ca_config_key_count; i++) {
        ca_config_keys[i].print(c, value, sizeof value);
        fprintf(out, "%s = %s\n", ca_config_keys[i].key, value);
    }
}

/* ---------------------------------------------------------- assignments ---- */

static int known_keys(char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < ca_config_key_count && used < size; i++) {
        int n = snprintf(out + used, size - used, "%s%s", i ? ", " : "", ca_config_keys[i].key);
        used += n > 0 ? (size_t)n : 0;
    }
    return DLCA_OK;
}

int ca_config_assign(ca_config_assignments *list, const char *name, const char *value, const char *origin)
{
    const ca_config_key *key = ca_config_key_find(name);
    if (!key) {
        char keys[400];
        known_keys(keys, sizeof keys);
        return err_set(DLCA_ERR, "%s: unknown key '%s' (keys: %s)", origin, name, keys);
    }
    if (strlen(value) >= CA_CONFIG_VALUE_MAX)
        return err_set(DLCA_ERR, "%s: the value is longer than %d characters", origin, CA_CONFIG_VALUE_MAX - 1);
    if (list->count == list->capacity) {
        int capacity = list->capacity ? 2 * list->capacity : 16;
        ca_config_assignment *items = realloc(list->items, (size_t)capacity * sizeof *items);
        if (!items) return err_set(DLCA_ERR_NOMEM, "out of memory for the config");
        list->items = items, list->capacity = capacity;
    }
    ca_config_assignment *a = &list->items[list->count++];
    a->key = key;
    snprintf(a->value, sizeof a->value, "%s", value);
    snprintf(a->origin, sizeof a->origin, "%s", origin);
    return DLCA_OK;
}

int ca_config_assigned(const ca_config_assignments *list, const char *key)
{
    for (int i = 0; i < list->count; i++)
        if (strcmp(list->items[i].key->key, key) == 0) return 1;
    return 0;
}

void ca_config_assignments_free(ca_config_assignments *list)
{
    free(list->items);
    memset(list, 0, sizeof *list);
}

/* `text` without leading and trailing blanks, in place. */
static char *trim(char *text)
{
    while (*text == ' ' || *text == '\t') text++;
    size_t n = strlen(text);
    while (n && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r')) text[--n] = '\0';
    return text;
}

/* One line (already cut at '#' and trimmed) of file `name`. `lines[k]` is where key k was set. */
static int parse_line(ca_config_assignments *list, char *line, const char *name, int number, int *lines)
{
    char origin[CA_CONFIG_ORIGIN_MAX];
    char *equals = strchr(line, '=');
    if (!equals) return err_set(DLCA_ERR, "%.200s:%d: '%.60s' is not 'key = value'", name, number, line);
    *equals = '\0';
    char *key = trim(line), *value = trim(equals + 1);
    const ca_config_key *row = ca_config_key_find(key);
    snprintf(origin, sizeof origin, "%.200s:%d: %.60s", name, number, key);
    if (!key[0]) return err_set(DLCA_ERR, "%.200s:%d: no key before '='", name, number);
    if (!row) return ca_config_assign(list, key, value, origin); /* says it is unknown */
    if (strcmp(key, row->key) != 0)
        return err_set(DLCA_ERR, "%s: in a file the key is '%s' ('%s' is its flag's short name)", origin, row->key, key);
    if (!value[0]) return err_set(DLCA_ERR, "%s: no value after '='", origin);
    int k = (int)(row - ca_config_keys);
    if (lines[k]) return err_set(DLCA_ERR, "%s: already set on line %d", origin, lines[k]);
    lines[k] = number;
    return ca_config_assign(list, key, value, origin);
}

int ca_config_parse_text(ca_config_assignments *list, const char *text, size_t size, const char *name)
{
    int lines[sizeof ca_config_keys / sizeof ca_config_keys[0]] = {0};
    if (memchr(text, '\0', size)) return err_set(DLCA_ERR, "%s: holds a NUL byte: not a config file", name);
    char line[CA_CONFIG_VALUE_MAX + 128];
    size_t start = 0;
    for (int number = 1; start < size; number++) {
        const char *end = memchr(text + start, '\n', size - start);
        size_t length = end ? (size_t)(end - (text + start)) : size - start;
        if (length >= sizeof line) return err_set(DLCA_ERR, "%s:%d: the line is longer than %zu characters", name, number, sizeof line - 1);
        memcpy(line, text + start, length);
        line[length] = '\0';
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *content = trim(line);
        if (content[0] && parse_line(list, content, name, number, lines)) return DLCA_ERR;
        start += length + 1;
    }
    return DLCA_OK;
}

int ca_config_load_text(ca_config_assignments *list, const char *path)
{
    /* O_NONBLOCK: a FIFO must not hang the open; fstat then refuses anything but a regular file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return err_set(DLCA_ERR, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    int rc = DLCA_OK;
    char *text = NULL;
    if (fstat(fd, &st) != 0) rc = err_set(DLCA_ERR, "cannot read %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode)) rc = err_set(DLCA_ERR, "%s: not a regular file", path);
    else if (st.st_size > CA_CONFIG_FILE_MAX)
        rc = err_set(DLCA_ERR, "%s: %lld bytes is more than a config file's %d", path, (long long)st.st_size, CA_CONFIG_FILE_MAX);
    else if (!(text = malloc((size_t)st.st_size + 1))) rc = err_set(DLCA_ERR_NOMEM, "out of memory for %s", path);
    ssize_t got = 0;
    if (!rc) got = read(fd, text, (size_t)st.st_size + 1);
    if (!rc && (got < 0 || got > st.st_size)) rc = err_set(DLCA_ERR, "cannot read %s: it changed or failed while read", path);
    if (!rc) rc = ca_config_parse_text(list, text, (size_t)got, path);
    free(text);
    close(fd);
    return rc;
}

/* ------------------------------------------------------------- building ---- */

/* How an assignment is shown in a message: "--channels 4" or "m.conf:3: channels = 4". */
static void shown(const ca_config_assignment *a, char *out, size_t size)
{
    snprintf(out, size, a->origin[0] == '-' ? "%s %s" : "%s = %s", a->origin, a->value);
}

/* Applies the assignments other than `skip` (-1: none) onto `base`, then the channels rule. */
static int apply(ca_config *c, const ca_config *base, const ca_config_assignments *list, int skip)
{
    *c = *base;
    int channels = 0, update = 0;
    for (int i = 0; i < list->count; i++) {
        const ca_config_assignment *a = &list->items[i];
        if (i == skip || a->key->parse == parse_preset) continue;
        if (a->key->parse(c, a->value, a->origin)) return DLCA_ERR;
        channels |= a->key->parse == parse_channels, update |= a->key->parse == parse_update;
    }
    if (channels && !update && c->update_depth > 0) c->update_widths[c->update_depth - 1] = c->channels;
    return DLCA_OK;
}

/* Whether assignment i is the one that sets its key (no later assignment of the same key). */
static int in_effect(const ca_config_assignments *list, int i)
{
    for (int j = i + 1; j < list->count; j++)
        if (list->items[j].key == list->items[i].key) return 0;
    return 1;
}

/* ca_config_check failed with `why`: names the assignment of the key the message is about
 * ("config: damage = 2 ..." names --damage, whatever flag came last); else the last assignment
 * without which the config passes (or fails otherwise), which is the value to change. */
static int name_culprit(const ca_config *base, const ca_config_assignments *list, const char *why)
{
    char what[CA_CONFIG_ORIGIN_MAX + CA_CONFIG_VALUE_MAX + 8];
    for (int i = list->count - 1; i >= 0; i--) {
        char about[96];
        snprintf(about, sizeof about, "config: %s = ", list->items[i].key->key);
        if (!in_effect(list, i) || strncmp(why, about, strlen(about)) != 0) continue;
        shown(&list->items[i], what, sizeof what);
        return err_set(DLCA_ERR, "%s: %s", what, why);
    }
    for (int i = list->count - 1; i >= 0; i--) {
        const ca_config_assignment *a = &list->items[i];
        if (!in_effect(list, i) || a->key->parse == parse_preset) continue;
        ca_config without;
        if (apply(&without, base, list, i) != DLCA_OK) continue;
        if (ca_config_check(&without) == DLCA_OK || strcmp(err_message(), why) != 0) {
            shown(a, what, sizeof what);
            return err_set(DLCA_ERR, "%s: %s", what, why);
        }
    }
    return err_set(DLCA_ERR, "%s", why);
}

int ca_config_build(ca_config *c, const ca_config_assignments *list, const char *default_preset)
{
    const ca_config_assignment *preset = NULL;
    for (int i = 0; i < list->count; i++) {
        const ca_config_assignment *a = &list->items[i];
        if (a->key->parse != parse_preset) continue;
        if (preset && strcmp(preset->value, a->value) != 0) {
            char first[CA_CONFIG_ORIGIN_MAX + CA_CONFIG_VALUE_MAX + 8], second[sizeof first];
            shown(preset, first, sizeof first), shown(a, second, sizeof second);
            return err_set(DLCA_ERR, "%s contradicts %s: give one preset", second, first);
        }
        preset = a;
    }
    ca_config base;
    if (preset) {
        if (parse_preset(&base, preset->value, preset->origin)) return DLCA_ERR;
        ca_config_preset(&base, preset->value);
    } else if (ca_config_preset(&base, default_preset)) {
        return DLCA_ERR;
    }
    if (apply(c, &base, list, -1)) return DLCA_ERR;
    if (ca_config_check(c) == DLCA_OK) return DLCA_OK;
    char why[512];
    snprintf(why, sizeof why, "%s", err_message());
    return name_culprit(&base, list, why);
}
