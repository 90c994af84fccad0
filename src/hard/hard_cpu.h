/* hard_cpu.h: the bit-packed hard engine: a pruned circuit run on 64 cells per uint64_t.
 *
 * Grid layout: [C][rows][words] uint64_t with words = ceil(width / 64). Over 32 cells wide a row
 * is a grid row (rows = batch * height): channel ch of cell (b, y, x) is bit x % 64 of word
 * (ch * rows + b*height + y) * words + x / 64. Up to 32 wide a word stacks k = 64 / width grid
 * rows of one sample (rows = batch * ceil(height / k)): cell (b, y, x) is bit (y % k) width + x of
 * word ch * rows + b ceil(height / k) + y / k (hard_cpu_cell maps back). Bits that are no cell are
 * always 0. A step computes, per channel the circuit
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

/* On grids up to 32 cells wide a word holds `stack` = 64 / width rows of a sample, row y of the
 * sample in word y / stack at bits (y % stack) width ..: a 20-cell row alone would leave 44 of
 * 64 bits idle in every gather, gate and output. For each word (a "row" of the engine, `rows` of
 * them) the rows above and below its rows: the word's own bits moved by one row (`same` of them)
 * and one row of another word (`other`, bits from `from` on, under `mask`) put at bit `to`; mask
 * 0 outside a zero boundary. Arrays of [rows] each, so that a gather runs as vectors. */
typedef struct {
    uint64_t *other, *from, *to, *mask, *same;
} hard_cpu_vertical;

typedef struct {
    hard_program program;
    ca_shape shape;
    int channels, words; /* words: 64-bit words per row (1 where rows are stacked) */
    int stack;           /* grid rows a word holds: 64 / width up to 32 cells wide, else 1 */
    int sample_words;    /* word rows of one sample: height / stack, rounded up */
    int block;           /* words per program pass; may be lowered to a multiple of 8 (tests do, to
                          * cross block boundaries on small grids) */
    size_t rows;         /* word rows: batch * sample_words (batch * height unless stacked); a
                          * channel's plane in grid, next, left and right is rows * words */
    size_t rows_run;     /* word rows a step runs: the first samples' (hard_cpu_use_batch), rows
                          * by default */
    uint32_t fire_stream, fire_threshold;
    /* Masks drawn ahead (hard_cpu_use_fire_masks; not owned): steps fire_first.. fire_first +
     * fire_steps - 1, [step][rows][words]; NULL: each step draws its own. */
    const uint64_t *fire_masks;
    uint32_t fire_first;
    int fire_steps;
    uint64_t *grid, *next;  /* [C][rows][words] */
    uint64_t *left, *right; /* [C][rows][words]: bit x holds cell x-1 (left) or x+1 (right) of the row */
    uint64_t *slots;        /* [n_slots][block] */
    size_t slot_bytes;      /* room in slots */
    /* The input slots the program reads (an instruction's input, or an output passed through)
     * and the channels they belong to: only those are gathered and those channels' rows shifted,
     * since a pruned circuit reads a few of its 9C inputs. */
    int *read_slots, n_read_slots;
    int *read_channels, n_read;
    /* On rows of one word (grids up to 64 cells wide), found once for the engine's shape: each
     * word row's rows above ([0]) and below ([1]), the bits that are cells (`valid`), and the
     * first and last bit of every stacked row (`first_bits`, `last_bits`) that a shift along
     * the rows must not carry across. */
    hard_cpu_vertical vertical[2];
    uint64_t *valid;
    uint64_t first_bits, last_bits;
} hard_cpu;

/* The cell (b H W + y W + x, within one channel) of bit `bit` of word `at` of a channel's
 * [rows][words] plane. */
static inline size_t hard_cpu_cell(const hard_cpu *e, size_t at, int bit)
{
    size_t row = at / (size_t)e->words, w = at % (size_t)e->words, width = (size_t)e->shape.width;
    if (e->stack == 1) return row * width + w * 64 + (size_t)bit;
    size_t b = row / (size_t)e->sample_words;
    size_t y = row % (size_t)e->sample_words * (size_t)e->stack + (size_t)bit / width;
    return (b * (size_t)e->shape.height + y) * width + (size_t)bit % width;
}

/* Words of `bits` bits needed for a row of `width` cells. */
static inline int hard_row_words(int width, int bits) { return (width + bits - 1) / bits; }

/* An engine running `net` on `shape` (batch, height, width, boundary). fire_rate in (0, 1]:
 * 1 is synchronous; otherwise each cell takes its new state with that probability. */
int hard_cpu_init(hard_cpu *engine, const hard_netlist *net, ca_shape shape, double fire_rate);

void hard_cpu_free(hard_cpu *engine);

/* Runs `net` (the same channels) from now on, keeping the grid: for a search that tries many
 * circuits on one engine. */
int hard_cpu_set_netlist(hard_cpu *engine, const hard_netlist *net);

/* Steps run the first `batch` samples (1 .. shape.batch; anything else: all) alone, and the
 * other samples' cells hold nothing defined after a step: for a search that runs rollouts of a few
 * samples or of many on one engine. The fire masks' plane (hard_cpu_fire_plane) is then theirs.
 * Samples never read each other's cells, so the first samples step as an engine of that batch
 * would. */
void hard_cpu_use_batch(hard_cpu *engine, int batch);

/* Fire-mask stream (async only), as ca_cpu_set_fire_stream. Forgets masks drawn ahead. */
void hard_cpu_set_fire_stream(hard_cpu *engine, uint32_t stream);

/* Words of the fire masks of one step: rows_run * words. */
size_t hard_cpu_fire_plane(const hard_cpu *engine);

/* The fire masks of steps first_step .. first_step + steps - 1 on the stream now set, as the
 * steps draw them, into masks ([steps][hard_cpu_fire_plane]). Drawing a mask costs 64 hashes a
 * word, far more than an async step of a small circuit: a search that runs the same rounds
 * again and again draws them once. */
void hard_cpu_draw_fire_masks(const hard_cpu *engine, uint32_t first_step, int steps, uint64_t *masks);

/* Steps first_step .. first_step + steps - 1 take their fire masks from `masks` (drawn by
 * hard_cpu_draw_fire_masks on an engine of the same shape; not owned, read only, so engines may
 * share them) until hard_cpu_set_fire_stream; other steps draw their own on the stream set. */
void hard_cpu_use_fire_masks(hard_cpu *engine, const uint64_t *masks, uint32_t first_step, int steps);

/* Sets (value 1) or clears (0) cells x0 .. x1 - 1 of grid row `row` (b H + y) in every channel,
 * in place: painting a running grid. */
void hard_cpu_set_cells(hard_cpu *engine, size_t row, int x0, int x1, int value);

/* Grid from / to the float engines' layout [C][cells] doubles (> 0.5 counts as 1). */
void hard_cpu_pack(hard_cpu *engine, const double *grid);
void hard_cpu_unpack(const hard_cpu *engine, double *grid);

/* hard_cpu_unpack of channels 0 .. channels - 1 only (the others in grid left as they are): a
 * caller that reads the loss channels each step skips the hidden ones. */
void hard_cpu_unpack_channels(const hard_cpu *engine, double *grid, int channels);

/* One CA step; `t` is the step index the fire mask is drawn for (ca_cpu's t). */
void hard_cpu_step(hard_cpu *engine, uint32_t t);

/* Steps first_step, first_step + 1, ..., first_step + steps - 1. */
void hard_cpu_run(hard_cpu *engine, uint32_t first_step, int steps);

/* The bits of word `word` of word row `row` (of a channel's [rows][words] plane) that are cells:
 * what a grid may hold there (the others stay 0). */
uint64_t hard_cpu_cell_bits(const hard_cpu *engine, size_t row, int word);

/* The 64-cell fire mask of `word` of grid row `row` (b H + y, whether stacked or not) at step t:
 * bit i set when cell x = 64 word + i fires (always for a synchronous engine; bits past the row are 0). */
uint64_t hard_cpu_fire_word(const hard_cpu *engine, uint32_t t, size_t row, int word);

#endif
