/* hard_gpu.h: the bit-packed hard engine on Vulkan (glsl/hard_step.comp), the GPU twin of
 * hard_cpu.h on 32-bit words: grids are [C][batch * height][words] uints with
 * words = ceil(width / 32), bit x % 32 of word x / 32 is cell x, bits past the row are 0.
 * The pruned circuit's slot program is uploaded once; each step is one dispatch of one
 * invocation per word, with value slots in a device buffer [n_slots][invocations]. */
#ifndef DLCA_HARD_GPU_H
#define DLCA_HARD_GPU_H

#include "ca_cpu_layer.h"
#include "hard_circuit.h"
#include "vk_buffer.h"

#include <stdint.h>

typedef struct {
    vk_context *vk;
    ca_shape shape;
    int channels, words;       /* words: 32-bit words per row */
    uint32_t rows, invocations; /* rows = batch * height; invocations = rows * words */
    uint32_t n_instr, n_slots;
    uint32_t fire_stream, fire_threshold;
    vk_buffer grids[2]; /* ping-pong; grids[current] holds the state */
    vk_buffer program;  /* outputs [C], then (op | dst << 4, a, b) per instruction */
    vk_buffer slots;    /* [n_slots][invocations] */
    int current;
} hard_gpu;

/* An engine for `net` on `shape` (batch, height, width, boundary) with fire rate in (0, 1].
 * Fails with a clear message when the slot buffer would exceed the device's storage-buffer
 * range (use a smaller grid or batch). */
int hard_gpu_init(hard_gpu *engine, vk_context *vk, const hard_netlist *net, ca_shape shape, double fire_rate);

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
