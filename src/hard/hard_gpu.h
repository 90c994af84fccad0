/* hard_gpu.h: the bit-packed hard engine on Vulkan, the GPU twin of hard_cpu.h on 32-bit words:
 * grids are [C][batch * height][words] uints with words = ceil(width / 32), bit x % 32 of word
 * x / 32 is cell x, bits past the row are 0. Each step is one dispatch of one invocation per word
 * over the whole batch.
 *
 * Two ways to run the circuit, the same bits either way:
 *   compiled    (the default) a SPIR-V module made for this circuit and shape at init
 *               (hard_spirv.h): straight-line code, every value in a register;
 *   interpreted glsl/hard_step.comp runs the pruned circuit's slot program, uploaded once, with
 *               the value slots in a device buffer [n_slots][invocations].
 * HARD_GPU_AUTO compiles circuits of at most HARD_GPU_COMPILE_MAX_GATES gates and interprets
 * larger ones: a driver compiles straight-line code in time and registers that grow with the
 * circuit, while the interpreter's cost per gate is flat. */
#ifndef DLCA_HARD_GPU_H
#define DLCA_HARD_GPU_H

#include "ca_shape.h"
#include "hard_circuit.h"
#include "vk_buffer.h"
#include "vk_pipeline.h"

#include <stdint.h>

enum {
    HARD_GPU_COMPILE_MAX_GATES = 1 << 16, /* larger circuits are interpreted under HARD_GPU_AUTO */
    HARD_GPU_LOCAL_SIZE = 128             /* invocations per workgroup of the compiled module */
};

typedef enum { HARD_GPU_AUTO, HARD_GPU_COMPILED, HARD_GPU_INTERPRETED } hard_gpu_kind;

typedef struct {
    vk_context *vk;
    ca_shape shape;
    int channels, words;       /* words: 32-bit words per row */
    uint32_t rows, invocations; /* rows = batch * height; invocations = rows * words */
    uint32_t n_instr, n_slots;
    uint32_t fire_stream, fire_threshold;
    vk_buffer grids[2]; /* ping-pong; grids[current] holds the state */
    int current;
    int compiled;       /* 1: the compiled module runs the step; 0: the interpreter */
    /* compiled */
    vk_pipeline_desc desc; /* the module's pipeline shape: 2 bindings (grid, next grid) */
    vk_pipeline pipeline;
    uint32_t groups[3];    /* the dispatch the module's invocation index was compiled for */
    size_t spirv_words;    /* size of the module, for reports */
    /* interpreted */
    vk_buffer program;  /* outputs [C], then (op | dst << 4, a, b) per instruction */
    vk_buffer slots;    /* [n_slots][invocations] */
} hard_gpu;

/* An engine for `net` on `shape` (batch, height, width, boundary) with fire rate in (0, 1],
 * compiled or interpreted by the rule above. Fails with a clear message when a grid (or the
 * interpreter's slot buffer) would exceed the device's storage-buffer range or memory (use a
 * smaller grid or batch). */
int hard_gpu_init(hard_gpu *engine, vk_context *vk, const hard_netlist *net, ca_shape shape, double fire_rate);

/* hard_gpu_init choosing the way to run the circuit (tests and the bench compare both). */
int hard_gpu_init_kind(hard_gpu *engine, vk_context *vk, const hard_netlist *net, ca_shape shape, double fire_rate,
                       hard_gpu_kind kind);

void hard_gpu_free(hard_gpu *engine);

/* Fire-mask stream (async only), as ca_cpu_set_fire_stream. */
void hard_gpu_set_fire_stream(hard_gpu *engine, uint32_t stream);

/* Grid from / to the float engines' layout [C][cells] doubles (> 0.5 counts as 1). */
int hard_gpu_upload(hard_gpu *engine, const double *grid);
int hard_gpu_download(hard_gpu *engine, double *grid);

/* Records step t (the fire mask's step index) into cmd, with a barrier after it. */
int hard_gpu_record_step(hard_gpu *engine, VkCommandBuffer cmd, uint32_t t);

/* Steps first_step .. first_step + steps - 1 in one submission, and waits. */
int hard_gpu_run(hard_gpu *engine, uint32_t first_step, int steps);

#endif
