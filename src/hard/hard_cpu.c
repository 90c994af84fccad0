/* hard_cpu.c: the bit-packed hard engine (layout and contract in hard_cpu.h). */
#include "hard_cpu.h"

#include "error.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

/* e->read_slots and e->read_channels of program p (room for p->n_inputs and p->channels). */
static void find_reads(hard_cpu *e, const hard_program *p)
{
    int *slot = e->read_slots, *channel = e->read_channels;
    for (int i = 0; i < p->n_inputs; i++) slot[i] = 0;
    uint32_t inputs = (uint32_t)p->n_inputs;
    for (int i = 0; i < p->n_instr; i++) {
        if (p->instr[i].a < inputs) slot[p->instr[i].a] = 1;
        if (p->instr[i].b < inputs) slot[p->instr[i].b] = 1;
    }
    for (int ch = 0; ch < p->channels; ch++)
        if (p->outputs[ch] < inputs) slot[p->outputs[ch]] = 1;
    e->n_read_slots = e->n_read = 0;
    for (int i = 0; i < p->n_inputs; i++) /* in place: the list never passes the flag it reads */
        if (slot[i]) {
            int ch = i / HARD_NEIGHBOURS;
            if (e->n_read == 0 || channel[e->n_read - 1] != ch) channel[e->n_read++] = ch;
            slot[e->n_read_slots++] = i;
        }
}

/* Mask of n low bits (n in 0..64). */
static uint64_t low_bits(int n) { return n >= 64 ? ~0ULL : (1ULL << n) - 1; }

/* e->vertical, valid, first_bits and last_bits, for rows of one word. */
static int find_vertical(hard_cpu *e)
{
    int k = e->stack, width = e->shape.width, h = e->shape.height, hs = e->sample_words;
    int periodic = e->shape.boundary == CA_BOUNDARY_PERIODIC;
    uint64_t row_bits = low_bits(width);
    e->first_bits = 0;
    for (int r = 0; r < k; r++) e->first_bits |= 1ULL << (r * width);
    e->last_bits = e->first_bits << (width - 1);
    e->valid = malloc(e->rows * sizeof *e->valid);
    int ok = e->valid != NULL;
    for (int d = 0; d < 2; d++) {
        hard_cpu_vertical *v = &e->vertical[d];
        uint64_t **arrays[] = {&v->other, &v->from, &v->to, &v->mask, &v->same};
        for (int a = 0; a < 5; a++) ok &= (*arrays[a] = malloc(e->rows * sizeof(uint64_t))) != NULL;
    }
    if (!ok) return DLCA_ERR_NOMEM;
    for (size_t w = 0; w < e->rows; w++) {
        size_t b = w / (size_t)hs, sample = b * (size_t)hs;
        int i = (int)(w % (size_t)hs), in_word = h - i * k < k ? h - i * k : k; /* its rows */
        e->valid[w] = low_bits(in_word * width);
        /* above: row r - 1 of the word for r >= 1, and for its first row the row before it (`same`
         * is 0 where a word holds one row, here and below) */
        hard_cpu_vertical *up = &e->vertical[0], *down = &e->vertical[1];
        up->other[w] = w, up->from[w] = up->to[w] = up->mask[w] = 0, up->same[w] = low_bits(k * width) & ~row_bits;
        if (i > 0) up->other[w] = w - 1, up->from[w] = (uint64_t)((k - 1) * width), up->mask[w] = row_bits;
        else if (periodic)
            up->other[w] = sample + (size_t)((h - 1) / k), up->from[w] = (uint64_t)((h - 1) % k * width),
            up->mask[w] = row_bits;
        /* below: row r + 1 of the word for its rows but the last, whose row below comes from the
         * next word (or across the boundary) */
        down->other[w] = w, down->from[w] = down->mask[w] = 0, down->to[w] = (uint64_t)((in_word - 1) * width);
        down->same[w] = low_bits((in_word - 1) * width);
        if (i + 1 < hs) down->other[w] = w + 1, down->mask[w] = row_bits;
        else if (periodic) down->other[w] = sample, down->mask[w] = row_bits;
    }
    return DLCA_OK;
}

int hard_cpu_init(hard_cpu *e, const hard_netlist *net, ca_shape shape, double fire_rate)
{
    memset(e, 0, sizeof *e);
    if (shape.batch < 1 || shape.height < 1 || shape.width < 1 || !(fire_rate > 0.0 && fire_rate <= 1.0))
        return err_set(DLCA_ERR, "hard engine: batch %d of %dx%d, fire rate %g", shape.batch, shape.height,
                       shape.width, fire_rate);
    int rc = hard_program_build(&e->program, net);
    if (rc) return rc;
    e->shape = shape;
    e->channels = net->channels;
    e->words = hard_row_words(shape.width, 64);
    e->stack = shape.width <= 32 ? 64 / shape.width : 1;
    e->sample_words = (shape.height + e->stack - 1) / e->stack;
    e->rows = (size_t)shape.batch * (size_t)e->sample_words;
    e->rows_run = e->rows;
    e->fire_threshold = rng_fire_threshold(fire_rate);
    size_t n = (size_t)e->channels * e->rows * (size_t)e->words;
    e->grid = calloc(n, sizeof(uint64_t));
    e->next = calloc(n, sizeof(uint64_t));
    e->left = calloc(n, sizeof(uint64_t));
    e->right = calloc(n, sizeof(uint64_t));
    e->block = HARD_CPU_BLOCK_MAX;
    while (e->block > HARD_CPU_BLOCK_MIN && (size_t)e->program.n_slots * (size_t)e->block * 8 > HARD_CPU_SLOT_BYTES)
        e->block /= 2;
    size_t slot_bytes = (size_t)e->program.n_slots * (size_t)e->block * sizeof(uint64_t);
    e->slots = aligned_alloc(64, slot_bytes); /* a multiple of 64: block is a multiple of 8 */
    if (e->slots) memset(e->slots, 0, slot_bytes), e->slot_bytes = slot_bytes;
    e->read_slots = malloc((size_t)e->program.n_inputs * sizeof *e->read_slots);
    e->read_channels = malloc((size_t)e->channels * sizeof *e->read_channels);
    if (e->read_slots && e->read_channels) find_reads(e, &e->program);
    int rows_ok = e->words != 1 || find_vertical(e) == DLCA_OK;
    if (!e->grid || !e->next || !e->left || !e->right || !e->slots || !e->read_slots || !e->read_channels || !rows_ok) {
        hard_cpu_free(e);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the hard engine (%zu words per grid)", n);
    }
    return DLCA_OK;
}

void hard_cpu_free(hard_cpu *e)
{
    hard_program_free(&e->program);
    free(e->grid), free(e->next), free(e->left), free(e->right), free(e->slots), free(e->read_slots), free(e->read_channels);
    free(e->valid);
    for (int d = 0; d < 2; d++) {
        hard_cpu_vertical *v = &e->vertical[d];
        free(v->other), free(v->from), free(v->to), free(v->mask), free(v->same);
    }
    memset(e, 0, sizeof *e);
}

int hard_cpu_set_netlist(hard_cpu *e, const hard_netlist *net)
{
    if (net->channels != e->channels)
        return err_set(DLCA_ERR, "hard engine: a circuit of %d channels for an engine of %d", net->channels, e->channels);
    hard_program program;
    if (hard_program_build(&program, net)) return DLCA_ERR;
    size_t slot_bytes = (size_t)program.n_slots * (size_t)e->block * sizeof(uint64_t);
    if (slot_bytes > e->slot_bytes) {
        uint64_t *slots = aligned_alloc(64, slot_bytes);
        if (!slots) {
            hard_program_free(&program);
            return err_set(DLCA_ERR_NOMEM, "out of memory for the hard engine's %d value slots", program.n_slots);
        }
        memset(slots, 0, slot_bytes);
        free(e->slots);
        e->slots = slots, e->slot_bytes = slot_bytes;
    }
    hard_program_free(&e->program);
    e->program = program;
    find_reads(e, &e->program);
    return DLCA_OK;
}

void hard_cpu_use_batch(hard_cpu *e, int batch)
{
    if (batch < 1 || batch > e->shape.batch) batch = e->shape.batch;
    e->rows_run = (size_t)batch * (size_t)e->sample_words;
}

void hard_cpu_set_fire_stream(hard_cpu *e, uint32_t stream)
{
    e->fire_stream = stream;
    e->fire_masks = NULL, e->fire_steps = 0;
}

void hard_cpu_use_fire_masks(hard_cpu *e, const uint64_t *masks, uint32_t first_step, int steps)
{
    e->fire_masks = masks, e->fire_first = first_step, e->fire_steps = masks ? steps : 0;
}

size_t hard_cpu_fire_plane(const hard_cpu *e) { return e->rows_run * (size_t)e->words; }

static uint64_t *row_of(const hard_cpu *e, uint64_t *base, int ch, size_t row)
{
    return base + ((size_t)ch * e->rows + row) * (size_t)e->words;
}

/* The word row and first bit of grid row `row` (b H + y). */
static size_t word_row(const hard_cpu *e, size_t row, int *bit)
{
    size_t h = (size_t)e->shape.height, y = row % h;
    *bit = (int)(y % (size_t)e->stack) * e->shape.width;
    return row / h * (size_t)e->sample_words + y / (size_t)e->stack;
}

void hard_cpu_pack(hard_cpu *e, const double *grid)
{
    size_t rows = (size_t)e->shape.batch * (size_t)e->shape.height, cells = rows * (size_t)e->shape.width;
    size_t n = (size_t)e->channels * e->rows * (size_t)e->words;
    memset(e->grid, 0, n * sizeof(uint64_t));
    for (int ch = 0; ch < e->channels; ch++)
        for (size_t row = 0; row < rows; row++) {
            int at;
            uint64_t *words = row_of(e, e->grid, ch, word_row(e, row, &at));
            const double *values = grid + (size_t)ch * cells + row * (size_t)e->shape.width;
            for (int w = 0; w < e->words; w++) { /* each word built in a register, then stored once */
                int first = 64 * w, n_bits = e->shape.width - first < 64 ? e->shape.width - first : 64;
                uint64_t bits = 0;
                for (int i = 0; i < n_bits; i++) bits |= (uint64_t)(values[first + i] > 0.5) << i;
                words[w] |= bits << at;
            }
        }
}

void hard_cpu_set_cells(hard_cpu *e, size_t row, int x0, int x1, int value)
{
    int at;
    size_t word = word_row(e, row, &at);
    for (int ch = 0; ch < e->channels; ch++) {
        uint64_t *words = row_of(e, e->grid, ch, word);
        for (int x = x0; x < x1; x++) {
            uint64_t bit = 1ULL << (x % 64 + at);
            words[x / 64] = value ? words[x / 64] | bit : words[x / 64] & ~bit;
        }
    }
}

void hard_cpu_unpack(const hard_cpu *e, double *grid) { hard_cpu_unpack_channels(e, grid, e->channels); }

void hard_cpu_unpack_channels(const hard_cpu *e, double *grid, int channels)
{
    size_t rows = (size_t)e->shape.batch * (size_t)e->shape.height, cells = rows * (size_t)e->shape.width;
    for (int ch = 0; ch < channels && ch < e->channels; ch++)
        for (size_t row = 0; row < rows; row++) {
            int at;
            const uint64_t *words = row_of(e, e->grid, ch, word_row(e, row, &at));
            double *values = grid + (size_t)ch * cells + row * (size_t)e->shape.width;
            for (int x = 0; x < e->shape.width; x++) values[x] = (double)(words[x / 64] >> (x % 64 + at) & 1);
        }
}

/* Mask of the bits of `word` that are cells of the row. */
static uint64_t valid_bits(const hard_cpu *e, int word) { return low_bits(e->shape.width - 64 * word); }

uint64_t hard_cpu_cell_bits(const hard_cpu *e, size_t row, int word)
{
    return e->words == 1 ? e->valid[row] : valid_bits(e, word);
}

/* left: bit x = cell x-1; right: bit x = cell x+1; the wrap-around cells on a periodic
 * boundary, 0 on a zero boundary. Bits past the row hold junk that the output mask drops. */
static void shift_row(const hard_cpu *e, const uint64_t *row, uint64_t *left, uint64_t *right)
{
    int n = e->words, last_bit = (e->shape.width - 1) % 64, periodic = e->shape.boundary == CA_BOUNDARY_PERIODIC;
    uint64_t wrap_left = periodic ? row[n - 1] >> last_bit & 1 : 0, wrap_right = periodic ? row[0] & 1 : 0;
    for (int w = 0; w < n; w++) {
        left[w] = row[w] << 1 | (w > 0 ? row[w - 1] >> 63 : wrap_left);
        right[w] = row[w] >> 1 | (w + 1 < n ? row[w + 1] << 63 : wrap_right << last_bit);
    }
}

/* Row of sample b at y + dy, or -1 outside a zero boundary. */
static long long neighbour_row(const hard_cpu *e, size_t row, int dy)
{
    int h = e->shape.height, y = (int)(row % (size_t)h) + dy;
    if (e->shape.boundary == CA_BOUNDARY_PERIODIC)
        y = (y + h) % h;
    else if (y < 0 || y >= h)
        return -1;
    return (long long)(row - row % (size_t)h + (size_t)y);
}

/* The shifted grid that neighbour j (3 (dy + 1) + dx + 1) of a cell reads: left, the grid, right. */
static const uint64_t *neighbour_source(const hard_cpu *e, int j)
{
    return j % 3 == 0 ? e->left : j % 3 == 1 ? e->grid : e->right;
}

/* Words as vectors of 4 (GCC/Clang vector extension: SSE2 pairs, or one AVX2 register). */
typedef uint64_t hard_vec __attribute__((vector_size(32)));
_Static_assert(HARD_CPU_BLOCK_MIN % 8 == 0 && HARD_CPU_BLOCK_MAX % 8 == 0, "a block is whole vectors, 64-byte aligned");

/* On x86-64 GCC and Clang also build an AVX2 copy of the hot loop and pick one at load time
 * (ifunc): twice the speed where AVX2 exists, the portable baseline elsewhere. */
#if defined(__x86_64__) && defined(__linux__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define HARD_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef HARD_VECTOR_CLONES
#define HARD_VECTOR_CLONES
#endif

/* The input slots the program reads (of 0 .. 9C-1: channel, then neighbour 3 (dy + 1) + dx + 1)
 * for lanes lane .. lane + n - 1 = words w .. w + n - 1 of row `row`: a whole run of words each, so
 * the copies are plain loops (on rows of several words). */
static void gather_run(hard_cpu *e, size_t row, int w, int lane, int n)
{
    size_t block = (size_t)e->block;
    long long from[3] = {neighbour_row(e, row, -1), (long long)row, neighbour_row(e, row, 1)};
    for (int r = 0; r < e->n_read_slots; r++) {
        int slot = e->read_slots[r], ch = slot / HARD_NEIGHBOURS, j = slot % HARD_NEIGHBOURS;
        uint64_t *s = e->slots + (size_t)slot * block + (size_t)lane;
        long long y = from[j / 3];
        if (y < 0) {
            for (int i = 0; i < n; i++) s[i] = 0;
            continue;
        }
        const uint64_t *src = neighbour_source(e, j) + ((size_t)ch * e->rows + (size_t)y) * (size_t)e->words + (size_t)w;
        for (int i = 0; i < n; i++) s[i] = src[i];
    }
}

/* The n words from word `first` of a channel's plane `src` moved up (`up`: each bit takes the cell
 * above's) or down by one grid row, into s (vertical: the rows' table, `width` a row's bits). */
HARD_VECTOR_CLONES static void vertical_rows(uint64_t *restrict s, const uint64_t *src, const hard_cpu_vertical *v,
                                             size_t first, int n, int width, int up)
{
    const uint64_t *restrict other = v->other + first, *restrict from = v->from + first, *restrict to = v->to + first;
    const uint64_t *restrict mask = v->mask + first, *restrict same = v->same + first, *x = src + first;
    if (up)
        for (int i = 0; i < n; i++) s[i] = (x[i] << width & same[i]) | (src[other[i]] >> from[i] & mask[i]) << to[i];
    else
        for (int i = 0; i < n; i++) s[i] = (x[i] >> width & same[i]) | (src[other[i]] >> from[i] & mask[i]) << to[i];
}

/* The same for the n lanes of the block from grid word `first` on rows of one word (grids up to
 * 64 cells wide, every preset's), where a run is one word and a copy per row and slot costs more
 * than the word: a slot of the rows' own neighbours (dy = 0) is one copy, the others the word's
 * own rows moved by one and the row from another word (e->vertical). */
static void gather_block(hard_cpu *e, size_t first, int n)
{
    size_t block = (size_t)e->block, plane = e->rows;
    int width = e->shape.width & 63; /* a stacked row's bits (with k = 1, `same` is 0) */
    for (int r = 0; r < e->n_read_slots; r++) {
        int slot = e->read_slots[r], ch = slot / HARD_NEIGHBOURS, j = slot % HARD_NEIGHBOURS;
        uint64_t *restrict s = e->slots + (size_t)slot * block;
        const uint64_t *src = neighbour_source(e, j) + (size_t)ch * plane;
        if (j / 3 == 1) {
            memcpy(s, src + first, (size_t)n * sizeof *s);
            continue;
        }
        vertical_rows(s, src, &e->vertical[j / 3 / 2], first, n, width, j / 3 == 0);
    }
}

/* Every instruction over the first `lanes` (a multiple of 4) of each slot's `block` words: the
 * switch picks the op's bitwise expression once per instruction, and the loop under it has no
 * branches. */
HARD_VECTOR_CLONES static void run_program(const hard_program *p, uint64_t *slots, int block, int lanes)
{
    hard_vec *s = (hard_vec *)slots;
    const size_t stride = (size_t)block / 4, vecs = (size_t)lanes / 4;
    for (int i = 0; i < p->n_instr; i++) {
        const hard_instr *in = &p->instr[i];
        hard_vec *restrict d = s + (size_t)in->dst * stride;
        const hard_vec *a = s + (size_t)in->a * stride, *b = s + (size_t)in->b * stride;
#define HARD_LOOP(expr)                  \
    for (size_t w = 0; w < vecs; w++) {  \
        hard_vec x = a[w], y = b[w];     \
        (void)x, (void)y;                \
        d[w] = (expr);                   \
    }                                    \
    break
        switch (in->op) {
        case GATE_FALSE: HARD_LOOP(x ^ x);
        case GATE_AND: HARD_LOOP(x & y);
        case GATE_A_AND_NOT_B: HARD_LOOP(x & ~y);
        case GATE_A: HARD_LOOP(x);
        case GATE_NOT_A_AND_B: HARD_LOOP(~x & y);
        case GATE_B: HARD_LOOP(y);
        case GATE_XOR: HARD_LOOP(x ^ y);
        case GATE_OR: HARD_LOOP(x | y);
        case GATE_NOR: HARD_LOOP(~(x | y));
        case GATE_XNOR: HARD_LOOP(~(x ^ y));
        case GATE_NOT_B: HARD_LOOP(~y);
        case GATE_A_OR_NOT_B: HARD_LOOP(x | ~y);
        case GATE_NOT_A: HARD_LOOP(~x);
        case GATE_NOT_A_OR_B: HARD_LOOP(~x | y);
        case GATE_NAND: HARD_LOOP(~(x & y));
        default: HARD_LOOP(~(x ^ x)); /* GATE_TRUE */
        }
#undef HARD_LOOP
    }
}

uint64_t hard_cpu_fire_word(const hard_cpu *e, uint32_t t, size_t row, int word)
{
    if (e->fire_threshold >= 1u << 24) return valid_bits(e, word);
    uint32_t step_hash = rng_hash32(e->fire_stream ^ rng_hash32(t));
    uint32_t first = (uint32_t)(row * (size_t)e->shape.width) + (uint32_t)word * 64u;
    uint64_t mask = 0;
    for (uint32_t i = 0; i < 64; i++) mask |= (uint64_t)((rng_hash32(step_hash ^ (first + i)) >> 8) < e->fire_threshold) << i;
    return mask & valid_bits(e, word);
}

/* The fire mask of word `w` of word row `row` (on stacked rows, each row's bits at its place). */
static uint64_t fire_mask(const hard_cpu *e, uint32_t t, size_t row, int w)
{
    if (e->stack == 1) return hard_cpu_fire_word(e, t, row, w);
    if (e->fire_threshold >= 1u << 24) return e->valid[row];
    size_t hs = (size_t)e->sample_words, first = row / hs * (size_t)e->shape.height + row % hs * (size_t)e->stack;
    uint64_t mask = 0;
    for (int r = 0; r < e->stack && (row % hs) * (size_t)e->stack + (size_t)r < (size_t)e->shape.height; r++)
        mask |= hard_cpu_fire_word(e, t, first + (size_t)r, 0) << (r * e->shape.width);
    return mask;
}

void hard_cpu_draw_fire_masks(const hard_cpu *e, uint32_t first_step, int steps, uint64_t *masks)
{
    size_t words = (size_t)e->words, plane = hard_cpu_fire_plane(e);
    for (int k = 0; k < steps; k++)
        for (size_t i = 0; i < plane; i++)
            masks[(size_t)k * plane + i] = fire_mask(e, first_step + (uint32_t)k, i / words, (int)(i % words));
}

/* next = fired ? proposed : old for the n lanes of the block from grid word `first`, with the
 * bits past each row (and past a word's stacked rows) cleared. A lane's word is at first + lane in
 * every channel's plane. */
static void scatter_block(hard_cpu *e, uint32_t t, size_t first, int n)
{
    uint64_t fire[HARD_CPU_BLOCK_MAX], keep[HARD_CPU_BLOCK_MAX];
    size_t words = (size_t)e->words, plane = e->rows * words, block = (size_t)e->block;
    const uint64_t *drawn = e->fire_masks && t - e->fire_first < (uint32_t)e->fire_steps
                                ? e->fire_masks + (size_t)(t - e->fire_first) * hard_cpu_fire_plane(e) + first
                                : NULL;
    for (int i = 0; i < n; i++) {
        size_t row = (first + (size_t)i) / words;
        int w = (int)((first + (size_t)i) % words);
        fire[i] = drawn ? drawn[i] : fire_mask(e, t, row, w);
        keep[i] = ~fire[i] & hard_cpu_cell_bits(e, row, w);
    }
    for (int ch = 0; ch < e->channels; ch++) {
        uint64_t *next = e->next + (size_t)ch * plane + first;
        const uint64_t *old = e->grid + (size_t)ch * plane + first;
        const uint64_t *proposed = e->slots + (size_t)e->program.outputs[ch] * block;
        for (int i = 0; i < n; i++) next[i] = (proposed[i] & fire[i]) | (old[i] & keep[i]);
    }
}

/* Lanes from `lane` on that are words of the same row as lane's word, at most `count` - lane. */
static int run_length(const hard_cpu *e, size_t first, int lane, int count)
{
    int n = e->words - (int)((first + (size_t)lane) % (size_t)e->words);
    return n < count - lane ? n : count - lane;
}

/* shift_row for every row of channel ch, on rows of one word: a loop of shifts with no calls, each
 * stacked row's first and last bit taking the wrapped cell or 0, not its neighbour row's. */
static void shift_one_word_rows(const hard_cpu *e, int ch)
{
    const uint64_t *g = row_of(e, e->grid, ch, 0);
    uint64_t *restrict left = row_of(e, e->left, ch, 0), *restrict right = row_of(e, e->right, ch, 0);
    int last_bit = e->shape.width - 1;
    uint64_t first = e->first_bits, last = e->last_bits;
    if (e->shape.boundary == CA_BOUNDARY_PERIODIC)
        for (size_t row = 0; row < e->rows_run; row++) {
            uint64_t x = g[row];
            left[row] = (x << 1 & ~first) | (x >> last_bit & first);
            right[row] = (x >> 1 & ~last) | (x << last_bit & last);
        }
    else
        for (size_t row = 0; row < e->rows_run; row++) left[row] = g[row] << 1 & ~first, right[row] = g[row] >> 1 & ~last;
}

void hard_cpu_step(hard_cpu *e, uint32_t t)
{
    for (int r = 0; r < e->n_read; r++) {
        int ch = e->read_channels[r];
        if (e->words == 1) {
            shift_one_word_rows(e, ch);
            continue;
        }
        for (size_t row = 0; row < e->rows_run; row++)
            shift_row(e, row_of(e, e->grid, ch, row), row_of(e, e->left, ch, row), row_of(e, e->right, ch, row));
    }
    size_t total = e->rows_run * (size_t)e->words, block = (size_t)e->block, words = (size_t)e->words;
    for (size_t first = 0; first < total; first += block) {
        int n = total - first < block ? (int)(total - first) : (int)block;
        if (words == 1)
            gather_block(e, first, n);
        else
            for (int lane = 0, run; lane < n; lane += run) {
                run = run_length(e, first, lane, n);
                gather_run(e, (first + (size_t)lane) / words, (int)((first + (size_t)lane) % words), lane, run);
            }
        run_program(&e->program, e->slots, e->block, (n + 3) & ~3); /* the lanes in use, whole vectors */
        scatter_block(e, t, first, n);
    }
    uint64_t *swap = e->grid;
    e->grid = e->next, e->next = swap;
}

void hard_cpu_run(hard_cpu *e, uint32_t first_step, int steps)
{
    for (int i = 0; i < steps; i++) hard_cpu_step(e, first_step + (uint32_t)i);
}
