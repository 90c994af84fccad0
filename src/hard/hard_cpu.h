/* hard_cpu.h: the bit-packed hard engine: a pruned circuit run on 64 cells per uint64_t.
 *
 * Grid layout: [C][batch * height][words] uint64_t with words = ceil(width / 64); channel ch of
 * cell (b, y, x) is bit x % 64 of word (ch * batch*height + b*height + y) * words + x / 64.
 * Bits past `width` in a row's last word are always 0. A step computes, per channel the circuit
 * reads, each row shifted by one cell left and right (once per step), then gathers the input
 * slots it reads, runs the circuit's slot program over blocks of words and applies the async
 * fire mask: the same rng_fires bits as ca_cpu and ca_gpu for cell (b*H + y)*W + x, so a rollout
 * equals the float engines' hard rollout bit for bit. */
#ifndef DLCA_HARD_CPU_H
#define DLCA_HARD_CPU_H

#include "ca_shape.h"
#include "hard_circuit.h"

#include <stdint.h>

/* Words evaluated together per program pass (`block`): as many as HARD_CPU_BLOCK_MAX to spread
 * the per-instruction dispatch, as few as HARD_CPU_BLOCK_MIN so that the value slots
 * (n_slots * block words) stay within HARD_CPU_SLOT_BYTES, about half a core's L2. */
enum { HARD_CPU_BLOCK_MIN = 32, HARD_CPU_BLOCK_MAX = 256, HARD_CPU_SLOT_BYTES = 512 * 1024 };

typedef struct {
    hard_program program;
    ca_shape shape;
    int channels, words; /* words: 64-bit words per row */
    int block;           /* words per program pass; may be lowered to a multiple of 8 (tests do, to
                          * cross block boundaries on small grids) */
    size_t rows;         /* batch * height */
    uint32_t fire_stream, fire_threshold;
    uint64_t *grid, *next;  /* [C][rows][words] */
    uint64_t *left, *right; /* [C][rows][words]: bit x holds cell x-1 (left) or x+1 (right) of the row */
    uint64_t *slots;        /* [n_slots][block] */
    size_t slot_bytes;      /* room in slots */
    /* The input slots the program reads (an instruction's input, or an output passed through)
     * and the channels they belong to: only those are gathered and those channels' rows shifted,
     * since a pruned circuit reads a few of its 9C inputs. */
    int *read_slots, n_read_slots;
    int *read_channels, n_read;
    /* On rows of one word (grids up to 64 cells wide): the rows above and below each row ([0] and
     * [1]: row index, and a mask of all ones, or 0 and 0 outside a zero boundary), so that a
     * gather is a load by index, found once for the engine's shape. */
    uint32_t *neighbour_row[2];
    uint64_t *neighbour_mask[2];
} hard_cpu;

/* Words of `bits` bits needed for a row of `width` cells. */
static inline int hard_row_words(int width, int bits) { return (width + bits - 1) / bits; }

/* An engine running `net` on `shape` (batch, height, width, boundary). fire_rate in (0, 1]:
 * 1 is synchronous; otherwise each cell takes its new state with that probability. */
int hard_cpu_init(hard_cpu *engine, const hard_netlist *net, ca_shape shape, double fire_rate);

void hard_cpu_free(hard_cpu *engine);

/* Runs `net` (the same channels) from now on, keeping the grid: for a search that tries many
 * circuits on one engine. */
int hard_cpu_set_netlist(hard_cpu *engine, const hard_netlist *net);

/* Fire-mask stream (async only), as ca_cpu_set_fire_stream. */
void hard_cpu_set_fire_stream(hard_cpu *engine, uint32_t stream);

/* Grid from / to the float engines' layout [C][cells] doubles (> 0.5 counts as 1). */
void hard_cpu_pack(hard_cpu *engine, const double *grid);
void hard_cpu_unpack(const hard_cpu *engine, double *grid);

/* One CA step; `t` is the step index the fire mask is drawn for (ca_cpu's t). */
void hard_cpu_step(hard_cpu *engine, uint32_t t);

/* Steps first_step, first_step + 1, ..., first_step + steps - 1. */
void hard_cpu_run(hard_cpu *engine, uint32_t first_step, int steps);

/* The 64-cell fire mask of `word` of row `row` at step t: bit i set when cell x = 64 word + i
 * fires (always for a synchronous engine; bits past the row are 0). */
uint64_t hard_cpu_fire_word(const hard_cpu *engine, uint32_t t, size_t row, int word);

#endif
