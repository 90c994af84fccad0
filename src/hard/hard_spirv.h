/* hard_spirv.h: a SPIR-V compute module made at run time for one pruned hard circuit on one grid
 * shape, so that the GPU hard engine (hard_gpu.h) runs the circuit as straight-line integer code
 * with every value in a register instead of interpreting a slot program from memory.
 *
 * The module is one step of the bit-packed engine on 32-bit words, the same step as
 * glsl/hard_step.comp: invocation i = row * words + w (row = b * height + y) gathers the 9
 * neighbour words of every channel the circuit reads (the left and right columns shifted by one
 * cell, wrapping on a periodic boundary, zero on a zero one), evaluates the gates with
 * OpBitwiseAnd/Or/Xor and OpNot, applies the async fire mask (rng_fires of src/core/rng.h, drawn for
 * cell row * width + x at push-constant step `step` and stream `stream`) and stores the new words.
 *
 * Interface (the table shape of vk_pipeline.h): SPIR-V 1.3 (Vulkan 1.1+), set 0 binding 0 the
 * grid [C][rows][words] uints (read), binding 1 the next grid (written), push constants
 * vk_push_hard_step of which only `stream` and `step` are read: everything else is baked in as
 * constants, so one module serves one shape. The invocation index is
 * gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * row_stride. */
#ifndef DLCA_HARD_SPIRV_H
#define DLCA_HARD_SPIRV_H

#include "hard_circuit.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t channels;    /* C, as the netlist's */
    uint32_t height, width;
    uint32_t words;       /* ceil(width / 32) */
    uint32_t rows;        /* batch * height */
    uint32_t invocations; /* rows * words; C * invocations must fit in 32 bits */
    uint32_t local_size;  /* LocalSize x of the module */
    uint32_t row_stride;  /* invocations per unit of gl_GlobalInvocationID.y: groups_x * local_size */
    int periodic;         /* 1: periodic boundary, 0: zero boundary */
    uint32_t threshold;   /* rng_fire_threshold of the fire rate; >= 2^24: synchronous, no mask */
} hard_spirv_shape;

/* Emits the module for `net` on `shape` into a malloc'd array *code of *n_words words (the
 * caller frees it). Fails on an invalid netlist or shape, or out of memory. */
int hard_spirv_emit(const hard_netlist *net, const hard_spirv_shape *shape, uint32_t **code, size_t *n_words);

#endif
