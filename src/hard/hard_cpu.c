/* hard_cpu.c: the bit-packed hard engine (layout and contract in hard_cpu.h). */
#include "hard_cpu.h"

#include "error.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

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
    e->rows = (size_t)shape.batch * (size_t)shape.height;
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
    if (!e->grid || !e->next || !e->left || !e->right || !e->slots) {
        hard_cpu_free(e);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the hard engine (%zu words per grid)", n);
    }
    return DLCA_OK;
}

void hard_cpu_free(hard_cpu *e)
{
    hard_program_free(&e->program);
    free(e->grid), free(e->next), free(e->left), free(e->right), free(e->slots);
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
    return DLCA_OK;
}

void hard_cpu_set_fire_stream(hard_cpu *e, uint32_t stream) { e->fire_stream = stream; }

static uint64_t *row_of(const hard_cpu *e, uint64_t *base, int ch, size_t row)
{
    return base + ((size_t)ch * e->rows + row) * (size_t)e->words;
}

void hard_cpu_pack(hard_cpu *e, const double *grid)
{
    size_t cells = e->rows * (size_t)e->shape.width;
    for (int ch = 0; ch < e->channels; ch++)
        for (size_t row = 0; row < e->rows; row++) {
            uint64_t *words = row_of(e, e->grid, ch, row);
            const double *values = grid + (size_t)ch * cells + row * (size_t)e->shape.width;
            for (int w = 0; w < e->words; w++) { /* each word built in a register, then stored once */
                int first = 64 * w, n = e->shape.width - first < 64 ? e->shape.width - first : 64;
                uint64_t bits = 0;
                for (int i = 0; i < n; i++) bits |= (uint64_t)(values[first + i] > 0.5) << i;
                words[w] = bits;
            }
        }
}

void hard_cpu_unpack(const hard_cpu *e, double *grid)
{
    size_t cells = e->rows * (size_t)e->shape.width;
    for (int ch = 0; ch < e->channels; ch++)
        for (size_t row = 0; row < e->rows; row++) {
            const uint64_t *words = row_of(e, e->grid, ch, row);
            double *values = grid + (size_t)ch * cells + row * (size_t)e->shape.width;
            for (int x = 0; x < e->shape.width; x++) values[x] = (double)(words[x / 64] >> (x % 64) & 1);
        }
}

/* Mask of the bits of `word` that are cells of the row. */
static uint64_t valid_bits(const hard_cpu *e, int word)
{
    int used = e->shape.width - 64 * word;
    return used >= 64 ? ~0ULL : (1ULL << used) - 1;
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

/* Input slots 0 .. 9C-1 of lanes lane .. lane + n - 1 = words w .. w + n - 1 of row `row`:
 * whole runs of words, so the copies are plain loops rather than per-word index arithmetic. */
static void gather_run(hard_cpu *e, size_t row, int w, int lane, int n)
{
    size_t block = (size_t)e->block;
    for (int dy = -1; dy <= 1; dy++) {
        long long from = neighbour_row(e, row, dy);
        for (int ch = 0; ch < e->channels; ch++) {
            uint64_t *s = e->slots + ((size_t)ch * HARD_NEIGHBOURS + (size_t)(dy + 1) * 3) * block + (size_t)lane;
            if (from < 0) {
                for (int i = 0; i < n; i++) s[i] = s[block + (size_t)i] = s[2 * block + (size_t)i] = 0;
                continue;
            }
            size_t at = ((size_t)ch * e->rows + (size_t)from) * (size_t)e->words + (size_t)w;
            /* a loop, not memcpy: on grids up to 64 cells wide a run is one word, and a library
             * call per word was most of a narrow grid's step */
            const uint64_t *left = e->left + at, *mid = e->grid + at, *right = e->right + at;
            for (int i = 0; i < n; i++) s[i] = left[i], s[block + (size_t)i] = mid[i], s[2 * block + (size_t)i] = right[i];
        }
    }
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

/* Every instruction over `block` words: the switch picks the op's bitwise expression once per
 * instruction, and the loop under it has no branches. */
HARD_VECTOR_CLONES static void run_program(const hard_program *p, uint64_t *slots, int block)
{
    hard_vec *s = (hard_vec *)slots;
    const size_t vecs = (size_t)block / 4;
    for (int i = 0; i < p->n_instr; i++) {
        const hard_instr *in = &p->instr[i];
        hard_vec *restrict d = s + (size_t)in->dst * vecs;
        const hard_vec *a = s + (size_t)in->a * vecs, *b = s + (size_t)in->b * vecs;
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

/* next = fired ? proposed : old for lanes lane .. lane + n - 1 = words w .. w + n - 1 of `row`,
 * with the bits past the row cleared. */
static void scatter_run(hard_cpu *e, uint32_t t, size_t row, int w, int lane, int n)
{
    uint64_t fire[HARD_CPU_BLOCK_MAX];
    for (int i = 0; i < n; i++) fire[i] = hard_cpu_fire_word(e, t, row, w + i);
    for (int ch = 0; ch < e->channels; ch++) {
        size_t at = ((size_t)ch * e->rows + row) * (size_t)e->words + (size_t)w;
        const uint64_t *proposed = e->slots + (size_t)e->program.outputs[ch] * (size_t)e->block + (size_t)lane;
        for (int i = 0; i < n; i++)
            e->next[at + (size_t)i] = (proposed[i] & fire[i]) | (e->grid[at + (size_t)i] & ~fire[i] & valid_bits(e, w + i));
    }
}

/* Lanes from `lane` on that are words of the same row as lane's word, at most `count` - lane. */
static int run_length(const hard_cpu *e, size_t first, int lane, int count)
{
    int n = e->words - (int)((first + (size_t)lane) % (size_t)e->words);
    return n < count - lane ? n : count - lane;
}

void hard_cpu_step(hard_cpu *e, uint32_t t)
{
    for (int ch = 0; ch < e->channels; ch++)
        for (size_t row = 0; row < e->rows; row++)
            shift_row(e, row_of(e, e->grid, ch, row), row_of(e, e->left, ch, row), row_of(e, e->right, ch, row));
    size_t total = e->rows * (size_t)e->words, block = (size_t)e->block, words = (size_t)e->words;
    for (size_t first = 0; first < total; first += block) {
        int n = total - first < block ? (int)(total - first) : (int)block;
        for (int lane = 0, run; lane < n; lane += run) {
            run = run_length(e, first, lane, n);
            gather_run(e, (first + (size_t)lane) / words, (int)((first + (size_t)lane) % words), lane, run);
        }
        run_program(&e->program, e->slots, e->block);
        for (int lane = 0, run; lane < n; lane += run) {
            run = run_length(e, first, lane, n);
            scatter_run(e, t, (first + (size_t)lane) / words, (int)((first + (size_t)lane) % words), lane, run);
        }
    }
    uint64_t *swap = e->grid;
    e->grid = e->next, e->next = swap;
}

void hard_cpu_run(hard_cpu *e, uint32_t first_step, int steps)
{
    for (int i = 0; i < steps; i++) hard_cpu_step(e, first_step + (uint32_t)i);
}
