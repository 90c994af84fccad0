/* ca_config.h: everything that defines a DiffLogic CA experiment, and the paper's five
 * presets (docs/design.md section 4). A config plus its seed determines the model exactly. */
#ifndef DLCA_CA_CONFIG_H
#define DLCA_CA_CONFIG_H

#include "wiring.h"

#include <stddef.h>
#include <stdint.h>

enum { CA_MAX_LAYERS = 32, CA_NAME_LENGTH = 32 };

/* The limits every config obeys, whether built from a preset and flags or read from a file:
 * ca_config_check holds both to them and the command line's flags take the same ranges, so a
 * file of a few bytes cannot ask for what the flags refuse (a 16384x16384 grid, T = 100000). */
enum {
    CA_MAX_SIDE = 4096,              /* grid height and width */
    CA_MAX_CHANNELS = 4096,          /* C */
    CA_MAX_KERNELS = 4096,           /* K */
    CA_MAX_UPDATE_WIDTH = 1 << 16,   /* gates in one update layer */
    CA_MAX_T = 10000,                /* CA steps per rollout */
    CA_MAX_BATCH = 1 << 16,          /* samples per training step */
    CA_MAX_TRAIN_STEPS = 100000000,  /* training steps */
    CA_MAX_POOL = 1 << 16,           /* samples in the pool */
    CA_MAX_POOL_VALUES = 1 << 28     /* pool * C * H * W: the pool's doubles (2 GiB) */
};
#define CA_MIN_LEARNING_RATE 1e-8
#define CA_MAX_LEARNING_RATE 100.0
/* Every preset's AdamW weight decay, and every model file's before version 6. */
#define CA_WEIGHT_DECAY 0.01
#define CA_MIN_FIRE_RATE 1e-6 /* the fire rate is in [CA_MIN_FIRE_RATE, 1] */
/* The pass-through logit a preset starts its gates with (init_logit) unless a sweep chose another
 * for it (CA_INIT_LOGIT_SWEPT for gol, checkerboard and image, CA_INIT_LOGIT_ASYNC for
 * checkerboard-async, CA_INIT_LOGIT_LIZARD for the lizard; README, Exact circuits), and what a
 * version 1 model file, which has no such field, was made with. */
#define CA_INIT_LOGIT 10.0
#define CA_INIT_LOGIT_SWEPT 7.0
#define CA_INIT_LOGIT_ASYNC 8.0
#define CA_INIT_LOGIT_LIZARD 8.0
#define CA_INIT_LOGIT_V1 10.0

typedef enum { CA_BOUNDARY_PERIODIC, CA_BOUNDARY_ZERO } ca_boundary;

/* How a rollout starts. */
typedef enum {
    CA_START_BOARDS,    /* channel 0 = one of the 512 3x3 boards per sample (gol) */
    CA_START_RANDOM,    /* every bit uniform random */
    CA_START_ZEROS,     /* all zeros */
    CA_START_SEED_CELL  /* zeros, centre cell all ones */
} ca_start;

/* What the final grid is compared with. */
typedef enum {
    CA_TARGET_LIFE,         /* Game of Life's next state of the start board */
    CA_TARGET_CHECKERBOARD, /* 2x2-square checkerboard */
    CA_TARGET_IMAGE         /* a PNG (lizard, image) */
} ca_target;

/* The learning rate over a run (src/train/ca_train.c maps each onto the tensor library's
 * schedules): constant; step (x sqrt(lr_final) at 1/3 and 2/3 of the steps after the warm-up);
 * exp (x lr_final^(1/steps) a step); cosine (to lr x lr_final); onecycle (up to lr over 30% of
 * the steps, then down to lr x lr_final). A linear warm-up of `warmup` steps comes first. */
/* Where a round of T + u steps asks for the target: at step T + u (last), or at every step from T
 * to T + u, the loss the mean of theirs (every; needs a window). */
typedef enum { CA_WINDOW_LOSS_LAST, CA_WINDOW_LOSS_EVERY, CA_WINDOW_LOSS_KINDS } ca_window_loss;

/* The first perception layer's wiring: which neighbour each of its 8 gates pairs with the centre.
 * shared: one order for every kernel (the paper's model, and every model file before version 5),
 * so every kernel's circuit is the same tree over the same neighbour pairs; per-kernel: an order a
 * kernel, so the kernels group the neighbours differently (docs/exact-circuits.md, section 21). */
typedef enum { CA_PERCEPTION_SHARED, CA_PERCEPTION_PER_KERNEL, CA_PERCEPTION_KINDS } ca_perception_wiring;

typedef enum { CA_LR_CONSTANT, CA_LR_STEP, CA_LR_EXP, CA_LR_COSINE, CA_LR_ONECYCLE, CA_LR_KINDS } ca_lr_kind;

typedef struct {
    char preset[CA_NAME_LENGTH];
    int height, width;
    ca_boundary boundary;
    int channels;                            /* C soft bits per cell */
    int kernels;                             /* K perception kernels */
    int perception_depth;                    /* layers per kernel; the first is moore (8 gates) */
    int perception_widths[CA_MAX_LAYERS];
    int update_depth;                        /* layers of the update network; the last has C gates */
    int update_widths[CA_MAX_LAYERS];
    wiring_kind update_wiring;               /* unique (paper) or random */
    ca_perception_wiring perception_wiring;  /* the moore layer's neighbour order (version 5) */
    int steps;                               /* T: CA steps per rollout */
    double fire_rate;                        /* async: probability a cell updates; 1 = synchronous */
    int loss_channels;                       /* the loss reads channels 0 .. loss_channels-1 */
    ca_start start;
    ca_target target;
    int batch;                               /* samples per training step */
    int train_steps;
    double learning_rate;
    uint64_t seed;
    ca_lr_kind lr_schedule;                  /* constant in every preset until a sweep says otherwise */
    int warmup;                              /* steps of linear warm-up, 0..train_steps */
    double lr_final;                         /* the decaying schedules end at lr x lr_final, 0..1 */
    double init_logit;                       /* every gate starts as pass-through A: this logit on A,
                                                0 on the other 15 ops (0 < init_logit <= 50) */
    double weight_decay;                     /* AdamW's decoupled weight decay on the gate logits, 0..1:
                                                CA_WEIGHT_DECAY in every preset (version 6) */
    /* Training for persistence (docs/design.md section 3; all 0 in every preset until a sweep
     * says otherwise, and in model files before version 3). With a pool or a window, half the
     * rounds are growth rounds (T steps from the preset's starts), half persistence rounds
     * (ca_task_round_steps): */
    int pool;                                /* grids in a pool that persistence rounds start from
                                                (the farthest from starts) and write their final
                                                grids back to (Growing NCA's sample pool); 0: none */
    int window;                              /* persistence rounds run T + u steps, u uniform in
                                                1..window: the target holds that long */
    int damage;                              /* of a persistence round's pool grids, this many (the
                                                closest to the target) have a rectangle erased first */
    int pool_starts;                         /* of a persistence round's grids, this many (the farthest
                                                from the target) start from the preset's starts instead:
                                                1..batch - 1 with a pool (damage then at most batch -
                                                pool_starts), else 1, as in every preset (a config built
                                                field by field sets it; version 6) */
    ca_window_loss window_loss;              /* a persistence round's loss: at its last step only, or
                                                the mean over its steps T..T+u (version 4) */
} ca_config;

/* Fills `config` with preset `name`; error lists the known names. */
int ca_config_preset(ca_config *config, const char *name);

/* Names of the presets, NULL-terminated. */
extern const char *const ca_preset_names[];

/* Checks ranges (the limits above) and consistency (e.g. last update width == C) and the
 * preset name (ca_config_check_name); error says which field. */
int ca_config_check(const ca_config *config);

/* A preset name is 1..CA_NAME_LENGTH-1 printable ASCII characters (space to '~') without a C
 * comment marker (slash-star or star-slash): it goes into exported C and Verilog comments, file
 * names and terminal output. The message never repeats a byte that is not printable. */
int ca_config_check_name(const char *name);

/* Bits each kernel outputs per channel: the last perception width. */
int ca_config_perception_bits(const ca_config *config);

/* Moore layer orders the model holds: 1 where shared, K per kernel. */
int ca_config_moore_orders(const ca_config *config);

/* Inputs and gates of perception (update 0) or update layer l, as its wiring holds them:
 * perception layer 0 reads the 9 cells of a 3x3 neighbourhood with 8 gates an order, update
 * layer 0 a cell's own C bits and its kernels' outputs, every other layer the one before. */
void ca_config_layer_shape(const ca_config *config, int update, int l, int *n_in, int *n_out);

/* Width of the update network's input: C own bits followed by K*C*bits kernel outputs. */
int ca_config_update_inputs(const ca_config *config);

const char *ca_boundary_name(ca_boundary boundary);

/* "constant", "step", "exp", "cosine", "onecycle"; NULL-terminated in ca_lr_names. */
extern const char *const ca_lr_names[];

/* Row layout of one CA step's activations, shared by every engine: perception layer l starts
 * at row perception_row[l] ([K][C][width] rows), update layer l at update_row[l]; returns the
 * rows of a step. */
size_t ca_config_layout_rows(const ca_config *config, size_t *perception_row, size_t *update_row);

#endif
