/* ca_config.c: the presets and config validation. */
#include "ca_config.h"

#include "error.h"

#include <stdio.h>
#include <string.h>

const char *const ca_preset_names[] = {"gol", "checkerboard", "checkerboard-async", "lizard", "image", "image-persist",
                                        NULL};
const char *const ca_lr_names[] = {"constant", "step", "exp", "cosine", "onecycle", NULL};
_Static_assert(CA_LR_KINDS == 5, "a name for every schedule");

const char *ca_boundary_name(ca_boundary boundary)
{
    return boundary == CA_BOUNDARY_PERIODIC ? "periodic" : "zero";
}

/* Appends `count` copies of `width` to the update widths. */
static void repeat_width(ca_config *c, int count, int width)
{
    for (int i = 0; i < count && c->update_depth < CA_MAX_LAYERS; i++) c->update_widths[c->update_depth++] = width;
}

static void set_perception(ca_config *c, int kernels, int depth)
{
    static const int widths[4] = {8, 4, 2, 1};
    c->kernels = kernels;
    c->perception_depth = depth;
    for (int i = 0; i < depth; i++) c->perception_widths[i] = widths[i];
}

static void set_tail(ca_config *c, const int *widths, int count)
{
    for (int i = 0; i < count; i++) repeat_width(c, 1, widths[i]);
}

int ca_config_preset(ca_config *c, const char *name)
{
    memset(c, 0, sizeof *c);
    c->update_wiring = WIRING_UNIQUE;
    c->fire_rate = 1.0;
    c->loss_channels = 1;
    c->seed = 1;
    c->init_logit = CA_INIT_LOGIT;
    c->pool_starts = 1;
    c->weight_decay = CA_WEIGHT_DECAY;
    if (strcmp(name, "gol") == 0) {
        static const int tail[] = {64, 32, 16, 8, 4, 2, 1};
        c->height = c->width = 3, c->boundary = CA_BOUNDARY_PERIODIC, c->channels = 1;
        set_perception(c, 16, 4);
        /* 10 layers of 128: the paper's notebook lists [17, 128 x 10, 64, ..., 1], where 17 is
         * the input width (1 + 16 kernels), not 17 layers (docs/design.md section 4). Seeds 1-16,
         * 3000 steps, exact runs: 10 layers 15 at init logit 7 against 9 at 10 (CPU), 16 against
         * 10 (H100); 17 layers 13 against 6 (CPU), 12 against 7 (H100). */
        repeat_width(c, 10, 128), set_tail(c, tail, 7);
        c->init_logit = CA_INIT_LOGIT_SWEPT;
        c->steps = 1, c->batch = 20, c->train_steps = 3000, c->learning_rate = 0.05;
        c->start = CA_START_BOARDS, c->target = CA_TARGET_LIFE;
    } else if (strcmp(name, "checkerboard") == 0 || strcmp(name, "checkerboard-async") == 0) {
        static const int tail[] = {128, 64, 32, 16, 8, 8};
        int async = strcmp(name, "checkerboard-async") == 0;
        c->height = c->width = async ? 14 : 16, c->boundary = CA_BOUNDARY_ZERO, c->channels = 8;
        set_perception(c, 16, 3);
        repeat_width(c, async ? 14 : 10, 256), set_tail(c, tail, 6);
        c->steps = async ? 50 : 20, c->batch = async ? 1 : 2, c->train_steps = async ? 800 : 500;
        c->learning_rate = 0.05, c->fire_rate = async ? 0.6 : 1.0;
        /* Seeds 1-16 on an H100: 5 exact at 7 against 2 at 10. Async, seeds 1-96: 26 exact at 8
         * against 17 at 10 (1 at 7 of seeds 1-16). */
        c->init_logit = async ? CA_INIT_LOGIT_ASYNC : CA_INIT_LOGIT_SWEPT;
        /* A moore order a kernel: seeds 1-64 on an H200, 30 exact against 17 with one order for
         * all (the CPU engine: 35 against 17); async, seeds 1-256, 98 against 72
         * (docs/exact-circuits.md, section 21). */
        c->perception_wiring = CA_PERCEPTION_PER_KERNEL;
        c->start = CA_START_RANDOM, c->target = CA_TARGET_CHECKERBOARD;
    } else if (strcmp(name, "lizard") == 0) {
        static const int tail[] = {512, 256, 128};
        /* The 20x20 picture on 24x24, a border of 2 off cells: on a periodic grid a silhouette that
         * reaches the edge meets its own wrapped copy, which eval's torus does not have. Seeds 1-16
         * on an H200 with --repair 30, 24x24 against 20x20: the lizard 15 against 13, the turtle
         * 13 against 0, the letter A 8 against 7, the butterfly 5 by step 1085 against 1 by 2948
         * (docs/exact-circuits.md, section 27). */
        c->height = c->width = 24, c->boundary = CA_BOUNDARY_PERIODIC, c->channels = 128;
        /* Two perception bits a kernel and a first update layer of 2048 that reads each input
         * (unique wiring): seeds 1-16 end a median of 16.5 wrong cells from exact, where the
         * paper's one bit and 512 end 62.5 (docs/exact-circuits.md, sections 5, 12, 13 and 22).
         * Init logit 8: seeds 1-64 on an H200, 28 exact by training alone against 14 at 7
         * (section 24). Then 8 kernels and 5 layers of 1024: seeds 1-96 on an H200, 60 exact by
         * training alone against 43 with 4 kernels and 7 layers, ahead in 5 of 6 blocks of 16;
         * 8 kernels with 7 layers made as many (72 of seeds 1-112 against 71) at 11.2 sweep
         * seconds per exact against 10.1 (section 25). */
        set_perception(c, 8, 3);
        repeat_width(c, 1, 2048), repeat_width(c, 5, 1024), set_tail(c, tail, 3);
        c->steps = 12, c->batch = 1, c->train_steps = 3500, c->learning_rate = 0.06;
        c->init_logit = CA_INIT_LOGIT_LIZARD;
        /* A moore order a kernel, as image: seeds 1-8 on an H200, 1 exact by training alone
         * against 0 (docs/exact-circuits.md, section 21). */
        c->perception_wiring = CA_PERCEPTION_PER_KERNEL;
        c->start = CA_START_SEED_CELL, c->target = CA_TARGET_IMAGE;
    } else if (strcmp(name, "image") == 0 || strcmp(name, "image-persist") == 0) {
        static const int tail[] = {256, 128, 64};
        c->height = c->width = 16, c->boundary = CA_BOUNDARY_ZERO, c->channels = 64;
        set_perception(c, 4, 3);
        /* A first update layer of 1024, so that each of its 576 inputs is read about 3.6 times
         * (512 read each about 1.8 times): seeds 1-32 on an H200, 19 exact against 9
         * (docs/exact-circuits.md, section 22). */
        repeat_width(c, 1, 1024), repeat_width(c, 7, 512), set_tail(c, tail, 3);
        c->steps = 15, c->batch = 1, c->train_steps = 3000, c->learning_rate = 0.06;
        /* Seeds 1-16: 5 exact at 7 against 0 at 10 on an H100; 2 against 1 on the CPU. A moore
         * order a kernel: seeds 1-96 on an H200, 32 exact against 17 with one order for all
         * (docs/exact-circuits.md, section 21). */
        c->init_logit = CA_INIT_LOGIT_SWEPT;
        c->perception_wiring = CA_PERCEPTION_PER_KERNEL;
        c->loss_channels = 3, c->start = CA_START_ZEROS, c->target = CA_TARGET_IMAGE;
        /* image-persist: image trained to keep its picture, as the best sweep so far (seeds 1-16 on
         * an H200 with a 30 s repair: 7 grow it at T and hold it to 10T, against 6 at 37f4c24
         * and 2 for the whole trajectory without a pool; docs/persistence.md). Half the rounds
         * start from a pool of 64 grids and ask for the picture at every step T..T+u, u <= 15;
         * such runs need about twice image's steps. */
        if (strcmp(name, "image-persist") == 0)
            c->batch = 4, c->pool = 64, c->window = 15, c->window_loss = CA_WINDOW_LOSS_EVERY, c->train_steps = 6000;
    } else {
        char known[160] = "";
        for (int i = 0; ca_preset_names[i]; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", ca_preset_names[i]);
        return err_set(DLCA_ERR, "unknown preset '%s' (known: %s)", name, known);
    }
    snprintf(c->preset, sizeof c->preset, "%s", name);
    return DLCA_OK;
}

int ca_config_perception_bits(const ca_config *c)
{
    return c->perception_depth > 0 ? c->perception_widths[c->perception_depth - 1] : 0;
}

int ca_config_moore_orders(const ca_config *c)
{
    return c->perception_wiring == CA_PERCEPTION_PER_KERNEL ? c->kernels : 1;
}

void ca_config_layer_shape(const ca_config *c, int update, int l, int *n_in, int *n_out)
{
    if (update) {
        *n_in = l == 0 ? ca_config_update_inputs(c) : c->update_widths[l - 1];
        *n_out = c->update_widths[l];
    } else {
        *n_in = l == 0 ? 9 : c->perception_widths[l - 1];
        *n_out = l == 0 ? 8 * ca_config_moore_orders(c) : c->perception_widths[l];
    }
}

int ca_config_update_inputs(const ca_config *c)
{
    return c->channels + c->kernels * c->channels * ca_config_perception_bits(c);
}

static int check_range(const char *field, long long value, long long low, long long high)
{
    if (value < low || value > high)
        return err_set(DLCA_ERR, "config: %s = %lld is outside %lld..%lld", field, value, low, high);
    return DLCA_OK;
}

static int check_perception(const ca_config *c)
{
    if (check_range("kernels", c->kernels, 1, CA_MAX_KERNELS) || check_range("perception depth", c->perception_depth, 1, CA_MAX_LAYERS))
        return DLCA_ERR;
    if (c->perception_widths[0] != 8)
        return err_set(DLCA_ERR, "config: the first perception layer is moore wiring and has 8 gates, not %d",
                       c->perception_widths[0]);
    for (int i = 1; i < c->perception_depth; i++)
        if (check_range("perception width", c->perception_widths[i], 1, 8)) return DLCA_ERR;
    return DLCA_OK;
}

static int check_update(const ca_config *c)
{
    if (check_range("update depth", c->update_depth, 1, CA_MAX_LAYERS)) return DLCA_ERR;
    for (int i = 0; i < c->update_depth; i++)
        if (check_range("update width", c->update_widths[i], 1, CA_MAX_UPDATE_WIDTH)) return DLCA_ERR;
    if (c->update_widths[c->update_depth - 1] != c->channels)
        return err_set(DLCA_ERR, "config: the last update layer must have C = %d gates, not %d", c->channels,
                       c->update_widths[c->update_depth - 1]);
    return DLCA_OK;
}

int ca_config_check_name(const char *name)
{
    size_t n = strnlen(name, CA_NAME_LENGTH);
    if (n == 0) return err_set(DLCA_ERR, "config: the preset name is empty");
    if (n == CA_NAME_LENGTH)
        return err_set(DLCA_ERR, "config: the preset name is not NUL-terminated within %d bytes", CA_NAME_LENGTH);
    for (size_t i = 0; i < n; i++) {
        unsigned char byte = (unsigned char)name[i];
        if (byte < 0x20 || byte > 0x7e)
            return err_set(DLCA_ERR, "config: the preset name has byte 0x%02x at position %zu: a name is printable ASCII",
                           byte, i);
    }
    if (strstr(name, "*/") || strstr(name, "/*"))
        return err_set(DLCA_ERR, "config: the preset name '%s' holds a comment marker (\"/*\" or \"*/\")", name);
    return DLCA_OK;
}

/* The pool holds whole grids and is compared with one target, so the target may not depend on
 * the start (Life's does); pool_starts samples of a round start afresh, at least one, and at least
 * one from the pool, so a batch of 1 would never draw from it; damage erases pool samples. */
static int check_persistence(const ca_config *c)
{
    if (check_range("window", c->window, 0, CA_MAX_T - c->steps)) return DLCA_ERR;
    if (c->pool != 0 && check_range("pool", c->pool, c->batch, CA_MAX_POOL)) return DLCA_ERR;
    if (c->pool != 0 && c->batch < 2)
        return err_set(DLCA_ERR, "config: a pool needs a batch of 2 or more (one sample of each round starts afresh), "
                       "not %d", c->batch);
    if (c->pool == 0 && c->pool_starts != 1)
        return err_set(DLCA_ERR, "config: pool-starts = %d needs a pool (it is how many of a persistence round's grids "
                                 "start afresh instead of from the pool)", c->pool_starts);
    if (c->pool != 0 && (c->pool_starts < 1 || c->pool_starts > c->batch - 1))
        return err_set(DLCA_ERR, "config: pool-starts = %d is outside 1..%d (batch - 1: one sample a round comes from "
                                 "the pool)", c->pool_starts, c->batch - 1);
    if (c->damage < 0 || c->damage > (c->pool ? c->batch - c->pool_starts : 0))
        return err_set(DLCA_ERR, c->pool ? "config: damage = %d is outside 0..%d (batch - pool-starts: the samples "
                                           "that start afresh stay whole)"
                                         : "config: damage = %d needs a pool (damage erases pool samples)",
                       c->damage, c->pool ? c->batch - c->pool_starts : 0);
    if (check_range("window loss", (int)c->window_loss, 0, CA_WINDOW_LOSS_KINDS - 1)) return DLCA_ERR;
    if (c->window_loss == CA_WINDOW_LOSS_EVERY && c->window == 0)
        return err_set(DLCA_ERR, "config: window-loss = every needs a window (the steps T..T+u it asks for the target)");
    if (c->window_loss == CA_WINDOW_LOSS_EVERY && c->target == CA_TARGET_LIFE)
        return err_set(DLCA_ERR, "config: window-loss = every needs a target that holds from step to step (Life's moves)");
    if (c->pool && c->target == CA_TARGET_LIFE)
        return err_set(DLCA_ERR, "config: a pool needs a target that does not depend on the start (Life's does)");
    double values = (double)c->pool * c->channels * c->height * c->width;
    if (values > (double)CA_MAX_POOL_VALUES)
        return err_set(DLCA_ERR, "config: a pool of %d grids of %d x %d x %d bits would hold %.0f values, over %d",
                       c->pool, c->channels, c->height, c->width, values, CA_MAX_POOL_VALUES);
    return DLCA_OK;
}

int ca_config_check(const ca_config *c)
{
    if (ca_config_check_name(c->preset)) return DLCA_ERR;
    if (check_range("grid height", c->height, 1, CA_MAX_SIDE) || check_range("grid width", c->width, 1, CA_MAX_SIDE) ||
        check_range("channels", c->channels, 1, CA_MAX_CHANNELS) || check_range("steps T", c->steps, 1, CA_MAX_T) ||
        check_range("batch", c->batch, 1, CA_MAX_BATCH) || check_range("loss channels", c->loss_channels, 1, c->channels) ||
        check_range("train steps", c->train_steps, 1, CA_MAX_TRAIN_STEPS) ||
        check_range("boundary", c->boundary, 0, 1) || check_range("start", c->start, 0, 3) ||
        check_range("target", c->target, 0, 2) || check_range("update wiring", c->update_wiring, 0, 1) ||
        check_range("perception wiring", c->perception_wiring, 0, CA_PERCEPTION_KINDS - 1))
        return DLCA_ERR;
    if (!(c->fire_rate >= CA_MIN_FIRE_RATE && c->fire_rate <= 1.0))
        return err_set(DLCA_ERR, "config: fire rate %g is outside %g..1", c->fire_rate, CA_MIN_FIRE_RATE);
    if (!(c->learning_rate >= CA_MIN_LEARNING_RATE && c->learning_rate <= CA_MAX_LEARNING_RATE))
        return err_set(DLCA_ERR, "config: learning rate %g is outside %g..%g", c->learning_rate, CA_MIN_LEARNING_RATE,
                       CA_MAX_LEARNING_RATE);
    if (check_range("lr schedule", c->lr_schedule, 0, CA_LR_KINDS - 1) ||
        check_range("warmup (steps, at most the run's steps)", c->warmup, 0, c->train_steps))
        return DLCA_ERR;
    if (!(c->init_logit > 0.0 && c->init_logit <= 50.0))
        return err_set(DLCA_ERR, "config: init_logit %g is outside (0, 50]", c->init_logit);
    if (!(c->lr_final >= 0.0 && c->lr_final <= 1.0))
        return err_set(DLCA_ERR, "config: lr_final %g is outside 0..1", c->lr_final);
    if (!(c->weight_decay >= 0.0 && c->weight_decay <= 1.0))
        return err_set(DLCA_ERR, "config: weight decay %g is outside 0..1", c->weight_decay);
    if ((c->lr_schedule == CA_LR_STEP || c->lr_schedule == CA_LR_EXP) && c->lr_final == 0.0)
        return err_set(DLCA_ERR, "config: the %s schedule needs lr_final > 0", ca_lr_names[c->lr_schedule]);
    if (check_perception(c) || check_update(c)) return DLCA_ERR;
    return check_persistence(c);
}

size_t ca_config_layout_rows(const ca_config *c, size_t *perception_row, size_t *update_row)
{
    size_t row = 0;
    for (int l = 0; l < c->perception_depth; l++) {
        perception_row[l] = row;
        row += (size_t)c->kernels * (size_t)c->channels * (size_t)c->perception_widths[l];
    }
    for (int l = 0; l < c->update_depth; l++) {
        update_row[l] = row;
        row += (size_t)c->update_widths[l];
    }
    return row;
}
