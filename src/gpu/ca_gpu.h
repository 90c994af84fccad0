/* ca_gpu.h: the Vulkan CA engine in float32, the GPU twin of ca_cpu.h function by function.
 * Functions named like their CPU counterparts record into a command buffer; the host submits
 * once per training step (vk_cmd_finish) and reads numbers back only when it needs them.
 * Activations are rows of `pitch` floats (pitch >= cells, a multiple of 64). */
#ifndef DLCA_CA_GPU_H
#define DLCA_CA_GPU_H

#include "ca_gpu_plan.h"
#include "ca_model.h"
#include "ca_shape.h"
#include "vk_buffer.h"
#include "vk_pipeline.h"

#include <stdint.h>

/* Where a layer's wiring lies in the wiring buffer (words): the gates' inputs, the CSR reverse,
 * and the reverse as a table of `fanout` entries an input (padded with CA_GPU_NO_ENTRY). */
typedef struct {
    uint32_t input_a, input_b, reverse_start, reverse_entry, reverse_table, fanout;
} ca_gpu_wiring;

#define CA_GPU_NO_ENTRY 0xffffffffu
/* The wiring buffer's first words: the perception layers' inputs as the fused kernels read them
 * (glsl/fused_perception.glsl WIRE), input a of gate g of layer l >= 1 at l * 16 + g, b at l * 16
 * + 8 + g, for up to 4 layers of 8 (layer 0's words unused); from CA_GPU_PERCEPTION_WIRES the
 * moore layer's neighbour order of kernel k at CA_GPU_PERCEPTION_WIRES + 8 k (MOORE_WIRE: every
 * kernel's, shared or its own); the layers' ca_gpu_wiring parts follow. */
#define CA_GPU_PERCEPTION_WIRES 64
/* The persistent kernels (glsl/fused_persistent.glsl): what the values they wait for (grids 1..T,
 * the backward's moore rows) hold until written (a NaN no kernel writes), and the roll call's bit
 * for "not every workgroup came". */
#define CA_GPU_EMPTY 0xffffffffu
#define CA_GPU_ROLL_CLOSED 0x80000000u
/* The roll buffer's words: the persistent forward's and backward's roll calls, and the kept
 * forward's (ca_gpu_keep_forward_roll); AdamW's skip flag and ca_gpu_persistent_gave_up read all. */
enum { CA_GPU_ROLL_FORWARD, CA_GPU_ROLL_BACKWARD, CA_GPU_ROLL_KEPT, CA_GPU_ROLL_WORDS };

typedef struct {
    vk_context *vk;
    const ca_model *model; /* device_model: the caller's, its update gates in the engine's order */
    ca_model device_model;
    uint32_t *gate_row; /* [gate_count]: where the model's gate g is in the engine (ca_gpu_order.h) */
    ca_shape shape;
    ca_gpu_options options; /* as asked (ca_gpu_init) */
    ca_gpu_plan plan;      /* which kernels run, their tiles and the buffer sizes (ca_gpu_plan.h) */
    size_t perception_row[CA_MAX_LAYERS], update_row[CA_MAX_LAYERS], step_rows; /* as in ca_cpu */
    /* where each layer's wiring is packed; perception_wiring[0] unused (the moore orders sit at
       CA_GPU_PERCEPTION_WIRES) */
    ca_gpu_wiring perception_wiring[CA_MAX_LAYERS], update_wiring[CA_MAX_LAYERS];
    vk_buffer logits;      /* [gates][16] */
    vk_buffer coeffs;      /* [gates][4] */
    vk_buffer coeff_grad;  /* S: [gates][4] */
    vk_buffer wiring;      /* every layer's input_a, input_b, reverse_start, reverse_entry */
    int steps;             /* the rollout's CA steps: T, or what ca_gpu_set_steps set (<= room) */
    int room;              /* the steps allocated: T + the config's window */
    vk_buffer grids;       /* [room+1][C][pitch] */
    vk_buffer *act;        /* full: room step blocks [step_rows][pitch], act_blocks to a buffer (one
                              allocation is limited, 4 GiB on NVIDIA); checkpoint: one block. Made
                              when the per-layer kernels are to run (the fused ones keep none) */
    uint32_t act_buffers, act_blocks;
    vk_buffer scratch;     /* backward scratch, [2][step_rows][pitch], one allocation for the path
                              that runs: per-layer, the slot gradients (gpu_slot_view); fused, the
                              moore gradients to neighbours (gpu_moore_view) */
    vk_buffer dgrid;       /* [C][pitch] */
    vk_buffer target;      /* [loss_channels][pitch] */
    vk_buffer image;       /* target picture [loss_channels][H][W], for picture presets */
    vk_view coeffs_at, dgrid_at, sums_at; /* where recordings read the coefficients, keep dL/dgrid and
                              put S: the engine's coeffs, dgrid and coeff_grad, or a caller's
                              (ca_gpu_bind) */
    uint32_t layer_count;  /* fused: rows of the layer table */
    vk_pipeline fused_pipelines[5]; /* forward, backward, grid gather, persistent forward and
                                       backward: specialised to the model's shape (fused_perception.glsl,
                                       fused_update_layers.glsl), made when the engine first
                                       runs them */
    vk_pipeline_id fused_ids[5];    /* ... their table rows (fused_ids in ca_gpu_fused.c) */
    int cleared_forward, cleared_backward; /* what the next persistent forward / backward polls is
                                            * cleared already (ca_gpu_coefficients) */
    uint32_t persistent_gave_up; /* the workgroups a persistent kernel could not run at once (the
                                    engine then went back to one dispatch a step); 0: none */
    vk_buffer roll;         /* the persistent kernels' roll calls (forward, backward), zeroed first,
                               and the kept forward's (ca_gpu_keep_forward_roll) */
    vk_buffer moore_steps;  /* persistent backward: every step's moore rows, [room][C*8][pitch] */
    vk_buffer roll_host;    /* host-visible copy of roll after a training step */
    vk_buffer layers;      /* fused: the layer table (ca_fused.glsl), 16 uints a layer; at byte
                              CA_GPU_GATE_ROWS_AT: per gate a uvec4 (first row, rows, row stride) of
                              the rows whose S partials gate_sums_reduce.comp adds */
    vk_buffer sum_partials; /* S partials [chunks or slots][step_rows] vec4 (gate_backward.comp or
                               fused_step_backward.comp), summed by gate_sums_reduce.comp */
    uint32_t fire_stream, fire_threshold;
#ifdef DLCA_CLOCKS
    vk_buffer clocks;       /* the fused step kernels' clock records (glsl/fused_clocks.glsl),
                               [2 kernels][64 steps][512 workgroups][128] uints */
#endif
    int profile;            /* instrumentation (dlca bench): write the ca_gpu_mark timestamps */
    uint32_t profile_first; /* ... at vk->timestamps queries profile_first + mark */
} ca_gpu;

/* Instrumentation (dlca bench): with engine->profile set, a recorded training step writes these
 * GPU timestamps. The coefficients reset the range first, so a hard rollout submitted before the
 * soft step leaves nothing stale. */
typedef enum {
    CA_GPU_MARK_START,          /* before the coefficients */
    CA_GPU_MARK_FORWARD_END,    /* after the T forward steps */
    CA_GPU_MARK_BACKWARD_START, /* after the loss, before BPTT */
    CA_GPU_MARK_BACKWARD_END,   /* after BPTT */
    CA_GPU_MARK_END,            /* after AdamW */
    CA_GPU_MARK_COUNT
} ca_gpu_mark;


/* Allocates the engine on `vk` for `batch` samples of the model's grid (or height x width when
 * both > 0) and uploads the wiring and the model's logits. Out of device memory names the size
 * asked and what would fit (checkpoint, a smaller batch). `options`: NULL for the automatic plan. */
int ca_gpu_init(ca_gpu *engine, vk_context *vk, const ca_model *model, int batch, int height, int width,
                const ca_gpu_options *options);

void ca_gpu_free(ca_gpu *engine);

/* The fused pipelines of engines made with options.defer_pipelines (all on one vk context),
 * compiled at once on the CPU's cores; engines that have theirs or run no fused kernels are
 * skipped. An engine whose pipelines are still missing makes them at its first recording. */
int ca_gpu_create_pipelines(ca_gpu *const *engines, int count);

/* Makes the recordings that follow read the gate coefficients ([gates][4] floats) from `coeffs`,
 * keep dL/dgrid ([C][pitch]) in `dgrid` and put S ([gates][4]) in `sums`: a caller's buffers,
 * such as the tensor library's tensors; NULL: the engine's own (coeffs, dgrid, coeff_grad).
 * Fails when a view is smaller than what it stands for. */
int ca_gpu_bind(ca_gpu *engine, const vk_view *coeffs, const vk_view *dgrid, const vk_view *sums);

/* Rows of `width` doubles a gate, between the model's gate order and the engine's (ca_gpu_order.h):
 * for tensors the trainer keeps in the engine's order (logits, AdamW moments). */
void ca_gpu_rows_to_engine(const ca_gpu *engine, size_t width, const double *model, double *engine_rows);
void ca_gpu_rows_to_model(const ca_gpu *engine, size_t width, const double *engine_rows, double *model);

/* Records dL/d(final grid) for ca_gpu_backward into the dgrid it keeps (ca_gpu_bind): `rows`
 * ([n][pitch] floats, the first n channels' gradient, such as the loss channels') copied into its
 * first n rows, the other C - n rows zeroed, then the barrier before compute reads them. One
 * barrier interval, where a zeroed [C][pitch] tensor with the rows copied in would take two. */
int ca_gpu_load_output_gradient(ca_gpu *engine, VkCommandBuffer cmd, vk_view rows, uint32_t n);

/* Records what the persistent kernels of the next forward (and backward) poll, cleared, without a
 * barrier (so that the next dispatch's covers it); nothing where they do not run. */
int ca_gpu_clear_persistent(ca_gpu *engine, VkCommandBuffer cmd, int forward, int backward);

/* Records instrumentation timestamp `which` where engine->profile is set (dlca bench). */
int ca_gpu_timestamp(ca_gpu *engine, VkCommandBuffer cmd, ca_gpu_mark which);

/* Records a copy of the persistent kernels' roll calls to host memory, for
 * ca_gpu_persistent_gave_up after the fence; nothing where they do not run. */
void ca_gpu_roll_to_host(ca_gpu *engine, VkCommandBuffer cmd);

/* Records, after a forward whose result the step keeps (the trainer's hard rollout, before the
 * soft rollout's clear), a copy of its roll call to word CA_GPU_ROLL_KEPT, which no clear touches: a forward
 * that gave up there would otherwise leave only its never-written grids (a NaN loss) and no trace
 * in the words AdamW's skip flag and ca_gpu_persistent_gave_up read. Nothing where the persistent
 * kernels do not run. */
void ca_gpu_keep_forward_roll(ca_gpu *engine, VkCommandBuffer cmd);

/* Records a copy of grid t ([C][pitch] floats) into `host` (a staging buffer of that size), between
 * barriers: the dispatches before it have written the grid, those after may write it again. */
int ca_gpu_grid_to_host(ca_gpu *engine, VkCommandBuffer cmd, int t, vk_buffer *host);

/* Grid t's region of the grids buffer: [C][pitch] floats, the pitch padding 0. */
vk_view ca_gpu_grid_region(const ca_gpu *engine, int t);

/* The round's target ([loss_channels][pitch] floats, padding 0), as ca_gpu_task_round writes it. */
vk_view ca_gpu_target_region(const ca_gpu *engine);

/* Where step block t lives: its buffer and byte offset in it. */
vk_buffer *ca_gpu_block_buffer(ca_gpu *engine, int t, size_t *offset);

/* Bytes of device memory the engine's buffers hold: what ca_gpu_init allocated on this device. */
size_t ca_gpu_buffer_bytes(const ca_gpu *engine);

/* The engine's row of step-block row `row` as the CPU engine lays a step out (its update layers'
 * rows follow the engine's gate order). */
size_t ca_gpu_step_row(const ca_gpu *engine, size_t row);

/* Grid t ([C][cells] doubles, no padding) to or from the device. */
int ca_gpu_upload_grid(ca_gpu *engine, int t, const double *grid);
int ca_gpu_download_grid(ca_gpu *engine, int t, double *grid);

/* d loss / d grid ([C][cells] doubles) where the engine keeps it (ca_gpu_bind): the loss gradient,
 * or after backward d grid_0. */
int ca_gpu_download_dgrid(ca_gpu *engine, double *dgrid);
int ca_gpu_upload_dgrid(ca_gpu *engine, const double *dgrid);

/* Target [loss_channels][cells] doubles to the device. */
int ca_gpu_upload_target(ca_gpu *engine, const double *target);

/* The target picture ([loss_channels][H][W] doubles) for ca_gpu_task_round. */
int ca_gpu_upload_image(ca_gpu *engine, const double *image);

/* Records the start grid (grid 0) and target of training round `round`, the same values
 * ca_round_inputs computes on the CPU. No barrier after it: the caller's next one must come before
 * anything reads them (each barrier interval costs about as much as a small kernel). */
int ca_gpu_task_round(ca_gpu *engine, VkCommandBuffer cmd, uint64_t round);

/* Fire-mask stream for the next rollouts (async mode only). */
void ca_gpu_set_fire_stream(ca_gpu *engine, uint32_t stream);

/* The next recorded rollouts' CA steps, 1..T + window (a training round's length, ca_train.h). */
int ca_gpu_set_steps(ca_gpu *engine, int steps);

/* Records c = M^T softmax(z) (or the hard rows) for every gate; where the persistent kernels run,
 * what the next rollout's (and, soft, its BPTT's) poll is cleared beside it, one barrier for both. */
int ca_gpu_coefficients(ca_gpu *engine, VkCommandBuffer cmd, int hard);

/* Records one CA step, grid_t -> grid_{t+1}. */
int ca_gpu_step_forward(ca_gpu *engine, VkCommandBuffer cmd, int t);

/* Records engine->steps steps from grid 0 (one dispatch for all of them where persistent_groups is set). */
int ca_gpu_forward(ca_gpu *engine, VkCommandBuffer cmd);

/* After a submitted training step (ca_gpu_adamw copies the roll calls to host memory): whether a
 * persistent kernel gave up, not all its workgroups running at once, which left its results
 * unfinished and made AdamW skip the step. */
int ca_gpu_persistent_gave_up(const ca_gpu *engine);

/* One dispatch a step from now on (after ca_gpu_persistent_gave_up; persistent_gave_up says it). */
int ca_gpu_persistent_off(ca_gpu *engine);

/* Records one step back, leaving the whole dL/dgrid_t in dgrid (the per-layer kernels recompute
 * the step's activations first in checkpoint mode; the fused kernels always do). */
int ca_gpu_step_backward(ca_gpu *engine, VkCommandBuffer cmd, int t);

/* Switches between the fused kernels (on = 1; compiled for this model on first use) and the
 * per-layer ones; fails, changing nothing, when the fused kernels do not fit this model and
 * batch or do not compile. */
int ca_gpu_use_fused(ca_gpu *engine, int on);

/* Zeroes the partial sums of S. */
int ca_gpu_sums_zero(ca_gpu *engine, VkCommandBuffer cmd);

/* S = the sum of the partial sums so far. */
int ca_gpu_sums_finish(ca_gpu *engine, VkCommandBuffer cmd);

/* Fills `rows` (16 uints a layer, perception then update layers) with the fused layer table;
 * returns the number of layers. */
int ca_gpu_fused_layers(const ca_gpu *engine, uint32_t *rows);

/* Fills `values` (CA_GPU_FUSED_CONSTANTS of room) with the specialisation constants of the
 * engine's fused kernels; returns how many. They depend on the model's shape and the plan, not
 * on its wiring (read from the wiring buffer), so every seed of a shape, on the presets' unique
 * wiring, shares its compiled kernels. */
enum { CA_GPU_FUSED_CONSTANTS = 4 + 4 * 16 + 1 + 5 * CA_MAX_LAYERS + 3 + 2 * CA_MAX_LAYERS };
uint32_t ca_gpu_fused_constants(const ca_gpu *engine, uint32_t *values);

/* Records BPTT over all engine->steps steps from dgrid; zeroes S first. */
int ca_gpu_backward(ca_gpu *engine, VkCommandBuffer cmd);

/* ca_gpu_backward where the loss also reads grids from..steps-1 (a window loss), as
 * ca_cpu_backward_window: `dwindow` holds [steps - from][loss_channels][pitch] floats, block
 * t - from added to dL/dgrid_t between steps t and t - 1 of BPTT (1 <= from; dwindow NULL or
 * from >= steps: ca_gpu_backward). The persistent backward runs the window's steps one
 * dispatch each. */
int ca_gpu_backward_window(ca_gpu *engine, VkCommandBuffer cmd, const vk_view *dwindow, int from);

/* Records copies of the loss channels' rows of grids from..steps, one after another, into `to`
 * ([steps - from + 1][loss_channels][pitch] floats), between barriers: a window loss's input. */
int ca_gpu_copy_loss_rows(ca_gpu *engine, VkCommandBuffer cmd, int from, vk_view to);

/* Reads a [gates][width] float buffer (coeffs, coeff_grad) as doubles, in the model's gate order. */
int ca_gpu_read_gate_values(ca_gpu *engine, vk_buffer *buffer, int width, double *values);

#ifdef DLCA_CLOCKS
/* Bytes of the clock records (glsl/fused_clocks.glsl), and a copy of them (from the last
 * training step's fused dispatches; zero where none ran) into `data`. */
enum { CA_GPU_CLOCK_BYTES = 2 * 64 * 512 * 128 * 4 };
int ca_gpu_download_clocks(ca_gpu *engine, void *data);
#endif

#endif
