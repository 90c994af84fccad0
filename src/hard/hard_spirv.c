/* hard_spirv.c: emits the SPIR-V module of hard_spirv.h word by word.
 *
 * A module is written into four sections that SPIR-V requires in this order, and joined at the
 * end when the id bound is known: the preamble (capability, memory model, entry point, local
 * size), annotations (decorations), globals (types, constants, variables) and the function.
 * Everything the step computes is in one basic block after the bounds check, so every value is
 * an SSA id and dominance holds in emission order: the gather emits a neighbour word only the
 * first time a gate, an output or the fire mask reads it. */
#include "hard_spirv.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* The SPIR-V numbers this emitter uses (SPIR-V specification, unified 1.x). */
enum {
    SPV_MAGIC = 0x07230203, SPV_VERSION_1_3 = 0x00010300,
    /* opcodes */
    SPV_OP_MEMORY_MODEL = 14, SPV_OP_ENTRY_POINT = 15, SPV_OP_EXECUTION_MODE = 16, SPV_OP_CAPABILITY = 17,
    SPV_OP_TYPE_VOID = 19, SPV_OP_TYPE_BOOL = 20, SPV_OP_TYPE_INT = 21, SPV_OP_TYPE_VECTOR = 23,
    SPV_OP_TYPE_RUNTIME_ARRAY = 29, SPV_OP_TYPE_STRUCT = 30, SPV_OP_TYPE_POINTER = 32, SPV_OP_TYPE_FUNCTION = 33,
    SPV_OP_CONSTANT = 43, SPV_OP_FUNCTION = 54, SPV_OP_FUNCTION_END = 56, SPV_OP_VARIABLE = 59, SPV_OP_LOAD = 61,
    SPV_OP_STORE = 62, SPV_OP_ACCESS_CHAIN = 65, SPV_OP_DECORATE = 71, SPV_OP_MEMBER_DECORATE = 72,
    SPV_OP_COMPOSITE_EXTRACT = 81, SPV_OP_IADD = 128, SPV_OP_ISUB = 130, SPV_OP_IMUL = 132, SPV_OP_UDIV = 134,
    SPV_OP_UMOD = 137, SPV_OP_SELECT = 169, SPV_OP_IEQUAL = 170, SPV_OP_ULESS_THAN = 176,
    SPV_OP_SHIFT_RIGHT_LOGICAL = 194, SPV_OP_SHIFT_LEFT_LOGICAL = 196, SPV_OP_BITWISE_OR = 197,
    SPV_OP_BITWISE_XOR = 198, SPV_OP_BITWISE_AND = 199, SPV_OP_NOT = 200, SPV_OP_SELECTION_MERGE = 247,
    SPV_OP_LABEL = 248, SPV_OP_BRANCH = 249, SPV_OP_BRANCH_CONDITIONAL = 250, SPV_OP_RETURN = 253,
    /* operands */
    SPV_CAPABILITY_SHADER = 1, SPV_ADDRESSING_LOGICAL = 0, SPV_MEMORY_GLSL450 = 1, SPV_MODEL_GLCOMPUTE = 5,
    SPV_MODE_LOCAL_SIZE = 17, SPV_DECORATION_BLOCK = 2, SPV_DECORATION_ARRAY_STRIDE = 6,
    SPV_DECORATION_BUILTIN = 11, SPV_DECORATION_NON_WRITABLE = 24, SPV_DECORATION_NON_READABLE = 25,
    SPV_DECORATION_BINDING = 33, SPV_DECORATION_SET = 34, SPV_DECORATION_OFFSET = 35,
    SPV_BUILTIN_GLOBAL_INVOCATION_ID = 28, SPV_STORAGE_INPUT = 1, SPV_STORAGE_PUSH_CONSTANT = 9,
    SPV_STORAGE_STORAGE_BUFFER = 12
};

/* vk_push_hard_step's members (vk_push.h): 12 uints; the module reads these two. */
enum { PUSH_MEMBERS = 12, PUSH_STREAM = 9, PUSH_STEP = 11 };

typedef struct {
    uint32_t *w;
    size_t n, cap;
} spv_section;

typedef struct {
    uint32_t value, id;
} spv_constant;

typedef struct {
    spv_section preamble, annotations, globals, body;
    uint32_t bound; /* next unused id */
    int nomem;
    spv_constant *constants;
    size_t n_constants, cap_constants;
    /* types and variables */
    uint32_t t_void, t_fn, t_uint, t_bool, t_uvec3, t_ptr_input_uvec3, t_ptr_buffer_uint, t_ptr_push_uint;
    uint32_t v_gid, v_grid, v_next, v_push, f_main;
} spv_builder;

static void section_word(spv_builder *b, spv_section *s, uint32_t word)
{
    if (b->nomem) return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        uint32_t *w = realloc(s->w, cap * sizeof *w);
        if (!w) {
            b->nomem = 1;
            return;
        }
        s->w = w, s->cap = cap;
    }
    s->w[s->n++] = word;
}

/* One instruction: opcode and `count` operand words. */
static void emit(spv_builder *b, spv_section *s, uint32_t op, const uint32_t *operands, uint32_t count)
{
    section_word(b, s, (count + 1) << 16 | op);
    for (uint32_t i = 0; i < count; i++) section_word(b, s, operands[i]);
}

#define EMIT(b, s, op, ...)                                                               \
    do {                                                                                  \
        const uint32_t operands_[] = {__VA_ARGS__};                                       \
        emit((b), (s), (op), operands_, (uint32_t)(sizeof operands_ / sizeof operands_[0])); \
    } while (0)

static uint32_t new_id(spv_builder *b) { return b->bound++; }

/* The id of uint constant `value`, declared on first use. */
static uint32_t constant(spv_builder *b, uint32_t value)
{
    for (size_t i = 0; i < b->n_constants; i++)
        if (b->constants[i].value == value) return b->constants[i].id;
    if (b->n_constants == b->cap_constants) {
        size_t cap = b->cap_constants ? 2 * b->cap_constants : 64;
        spv_constant *c = realloc(b->constants, cap * sizeof *c);
        if (!c) {
            b->nomem = 1;
            return 0;
        }
        b->constants = c, b->cap_constants = cap;
    }
    uint32_t id = new_id(b);
    b->constants[b->n_constants++] = (spv_constant){value, id};
    EMIT(b, &b->globals, SPV_OP_CONSTANT, b->t_uint, id, value);
    return id;
}

/* ---- instructions in the function body; each returns its result id ---- */

static uint32_t op2(spv_builder *b, uint32_t op, uint32_t type, uint32_t x, uint32_t y)
{
    uint32_t id = new_id(b);
    EMIT(b, &b->body, op, type, id, x, y);
    return id;
}

static uint32_t u2(spv_builder *b, uint32_t op, uint32_t x, uint32_t y) { return op2(b, op, b->t_uint, x, y); }
static uint32_t band(spv_builder *b, uint32_t x, uint32_t y) { return u2(b, SPV_OP_BITWISE_AND, x, y); }
static uint32_t bor(spv_builder *b, uint32_t x, uint32_t y) { return u2(b, SPV_OP_BITWISE_OR, x, y); }
static uint32_t bxor(spv_builder *b, uint32_t x, uint32_t y) { return u2(b, SPV_OP_BITWISE_XOR, x, y); }
static uint32_t shr(spv_builder *b, uint32_t x, uint32_t bits) { return u2(b, SPV_OP_SHIFT_RIGHT_LOGICAL, x, constant(b, bits)); }
static uint32_t shl(spv_builder *b, uint32_t x, uint32_t bits) { return u2(b, SPV_OP_SHIFT_LEFT_LOGICAL, x, constant(b, bits)); }
static uint32_t add_const(spv_builder *b, uint32_t x, uint32_t c) { return c ? u2(b, SPV_OP_IADD, x, constant(b, c)) : x; }
static uint32_t equal_const(spv_builder *b, uint32_t x, uint32_t c) { return op2(b, SPV_OP_IEQUAL, b->t_bool, x, constant(b, c)); }

static uint32_t bnot(spv_builder *b, uint32_t x)
{
    uint32_t id = new_id(b);
    EMIT(b, &b->body, SPV_OP_NOT, b->t_uint, id, x);
    return id;
}

static uint32_t select_u(spv_builder *b, uint32_t condition, uint32_t if_true, uint32_t if_false)
{
    uint32_t id = new_id(b);
    EMIT(b, &b->body, SPV_OP_SELECT, b->t_uint, id, condition, if_true, if_false);
    return id;
}

static int is_power_of_two(uint32_t x) { return x && !(x & (x - 1)); }

static uint32_t log2_u32(uint32_t x)
{
    uint32_t n = 0;
    while (x >>= 1) n++;
    return n;
}

/* x / d and x % d for a constant d; powers of two as shifts and masks. */
static uint32_t div_const(spv_builder *b, uint32_t x, uint32_t d)
{
    if (d == 1) return x;
    return is_power_of_two(d) ? shr(b, x, log2_u32(d)) : u2(b, SPV_OP_UDIV, x, constant(b, d));
}

static uint32_t mod_const(spv_builder *b, uint32_t x, uint32_t d)
{
    if (d == 1) return constant(b, 0);
    return is_power_of_two(d) ? band(b, x, constant(b, d - 1)) : u2(b, SPV_OP_UMOD, x, constant(b, d));
}

static uint32_t mul_const(spv_builder *b, uint32_t x, uint32_t c)
{
    if (c == 1) return x;
    return is_power_of_two(c) ? shl(b, x, log2_u32(c)) : u2(b, SPV_OP_IMUL, x, constant(b, c));
}

/* Element `index` of a storage buffer variable. */
static uint32_t buffer_pointer(spv_builder *b, uint32_t variable, uint32_t index)
{
    uint32_t id = new_id(b);
    EMIT(b, &b->body, SPV_OP_ACCESS_CHAIN, b->t_ptr_buffer_uint, id, variable, constant(b, 0), index);
    return id;
}

static uint32_t load(spv_builder *b, uint32_t pointer)
{
    uint32_t id = new_id(b);
    EMIT(b, &b->body, SPV_OP_LOAD, b->t_uint, id, pointer);
    return id;
}

static uint32_t grid_load(spv_builder *b, uint32_t index) { return load(b, buffer_pointer(b, b->v_grid, index)); }

static uint32_t push_load(spv_builder *b, uint32_t member)
{
    uint32_t pointer = new_id(b);
    EMIT(b, &b->body, SPV_OP_ACCESS_CHAIN, b->t_ptr_push_uint, pointer, b->v_push, constant(b, member));
    return load(b, pointer);
}

/* rng_hash32 (lowbias32) of src/core/rng.h, op for op. */
static uint32_t hash32(spv_builder *b, uint32_t x)
{
    x = bxor(b, x, shr(b, x, 16));
    x = u2(b, SPV_OP_IMUL, x, constant(b, 0x7feb352du));
    x = bxor(b, x, shr(b, x, 15));
    x = u2(b, SPV_OP_IMUL, x, constant(b, 0x846ca68bu));
    return bxor(b, x, shr(b, x, 16));
}

/* ---- module skeleton ---- */

static void declare_types(spv_builder *b)
{
    spv_section *a = &b->annotations, *g = &b->globals;
    b->t_void = new_id(b), b->t_fn = new_id(b), b->t_uint = new_id(b), b->t_bool = new_id(b);
    b->t_uvec3 = new_id(b), b->t_ptr_input_uvec3 = new_id(b);
    EMIT(b, g, SPV_OP_TYPE_VOID, b->t_void);
    EMIT(b, g, SPV_OP_TYPE_FUNCTION, b->t_fn, b->t_void);
    EMIT(b, g, SPV_OP_TYPE_INT, b->t_uint, 32, 0);
    EMIT(b, g, SPV_OP_TYPE_BOOL, b->t_bool);
    EMIT(b, g, SPV_OP_TYPE_VECTOR, b->t_uvec3, b->t_uint, 3);
    EMIT(b, g, SPV_OP_TYPE_POINTER, b->t_ptr_input_uvec3, SPV_STORAGE_INPUT, b->t_uvec3);

    /* Two block types, so that the grid's member can be NonWritable (a read-only path for the
     * loads) and the next grid's NonReadable, as glslang emits readonly / writeonly. */
    uint32_t t_array = new_id(b), t_grid = new_id(b), t_next = new_id(b);
    uint32_t t_ptr_grid = new_id(b), t_ptr_next = new_id(b);
    b->t_ptr_buffer_uint = new_id(b);
    EMIT(b, a, SPV_OP_DECORATE, t_array, SPV_DECORATION_ARRAY_STRIDE, 4);
    EMIT(b, a, SPV_OP_DECORATE, t_grid, SPV_DECORATION_BLOCK);
    EMIT(b, a, SPV_OP_MEMBER_DECORATE, t_grid, 0, SPV_DECORATION_OFFSET, 0);
    EMIT(b, a, SPV_OP_MEMBER_DECORATE, t_grid, 0, SPV_DECORATION_NON_WRITABLE);
    EMIT(b, a, SPV_OP_DECORATE, t_next, SPV_DECORATION_BLOCK);
    EMIT(b, a, SPV_OP_MEMBER_DECORATE, t_next, 0, SPV_DECORATION_OFFSET, 0);
    EMIT(b, a, SPV_OP_MEMBER_DECORATE, t_next, 0, SPV_DECORATION_NON_READABLE);
    EMIT(b, g, SPV_OP_TYPE_RUNTIME_ARRAY, t_array, b->t_uint);
    EMIT(b, g, SPV_OP_TYPE_STRUCT, t_grid, t_array);
    EMIT(b, g, SPV_OP_TYPE_STRUCT, t_next, t_array);
    EMIT(b, g, SPV_OP_TYPE_POINTER, t_ptr_grid, SPV_STORAGE_STORAGE_BUFFER, t_grid);
    EMIT(b, g, SPV_OP_TYPE_POINTER, t_ptr_next, SPV_STORAGE_STORAGE_BUFFER, t_next);
    EMIT(b, g, SPV_OP_TYPE_POINTER, b->t_ptr_buffer_uint, SPV_STORAGE_STORAGE_BUFFER, b->t_uint);

    /* The push block: all of vk_push_hard_step, so the module's block is the pipeline's range. */
    uint32_t t_push = new_id(b), t_ptr_push = new_id(b);
    b->t_ptr_push_uint = new_id(b);
    EMIT(b, a, SPV_OP_DECORATE, t_push, SPV_DECORATION_BLOCK);
    for (uint32_t m = 0; m < PUSH_MEMBERS; m++) EMIT(b, a, SPV_OP_MEMBER_DECORATE, t_push, m, SPV_DECORATION_OFFSET, 4 * m);
    section_word(b, g, (2 + PUSH_MEMBERS) << 16 | SPV_OP_TYPE_STRUCT);
    section_word(b, g, t_push);
    for (uint32_t m = 0; m < PUSH_MEMBERS; m++) section_word(b, g, b->t_uint);
    EMIT(b, g, SPV_OP_TYPE_POINTER, t_ptr_push, SPV_STORAGE_PUSH_CONSTANT, t_push);
    EMIT(b, g, SPV_OP_TYPE_POINTER, b->t_ptr_push_uint, SPV_STORAGE_PUSH_CONSTANT, b->t_uint);

    b->v_gid = new_id(b), b->v_grid = new_id(b), b->v_next = new_id(b), b->v_push = new_id(b);
    EMIT(b, a, SPV_OP_DECORATE, b->v_gid, SPV_DECORATION_BUILTIN, SPV_BUILTIN_GLOBAL_INVOCATION_ID);
    EMIT(b, a, SPV_OP_DECORATE, b->v_grid, SPV_DECORATION_SET, 0);
    EMIT(b, a, SPV_OP_DECORATE, b->v_grid, SPV_DECORATION_BINDING, 0);
    EMIT(b, a, SPV_OP_DECORATE, b->v_next, SPV_DECORATION_SET, 0);
    EMIT(b, a, SPV_OP_DECORATE, b->v_next, SPV_DECORATION_BINDING, 1);
    EMIT(b, g, SPV_OP_VARIABLE, b->t_ptr_input_uvec3, b->v_gid, SPV_STORAGE_INPUT);
    EMIT(b, g, SPV_OP_VARIABLE, t_ptr_grid, b->v_grid, SPV_STORAGE_STORAGE_BUFFER);
    EMIT(b, g, SPV_OP_VARIABLE, t_ptr_next, b->v_next, SPV_STORAGE_STORAGE_BUFFER);
    EMIT(b, g, SPV_OP_VARIABLE, t_ptr_push, b->v_push, SPV_STORAGE_PUSH_CONSTANT);
    b->f_main = new_id(b);
}

static void write_preamble(spv_builder *b, uint32_t local_size)
{
    spv_section *p = &b->preamble;
    EMIT(b, p, SPV_OP_CAPABILITY, SPV_CAPABILITY_SHADER);
    EMIT(b, p, SPV_OP_MEMORY_MODEL, SPV_ADDRESSING_LOGICAL, SPV_MEMORY_GLSL450);
    /* "main" as a literal string: 4 characters and the terminating NUL, padded to 2 words. */
    uint32_t name[2] = {0, 0};
    memcpy(name, "main", 4);
    EMIT(b, p, SPV_OP_ENTRY_POINT, SPV_MODEL_GLCOMPUTE, b->f_main, name[0], name[1], b->v_gid);
    EMIT(b, p, SPV_OP_EXECUTION_MODE, b->f_main, SPV_MODE_LOCAL_SIZE, local_size, 1, 1);
}

/* ---- the step ---- */

/* Per-invocation values the gather shares, each emitted on first use (0 = not yet). */
typedef struct {
    const hard_spirv_shape *s;
    uint32_t inv, row, w, y;
    uint32_t first_word, last_word;  /* bools: w == 0, w == words - 1 */
    uint32_t word_left, word_right;  /* the neighbouring words' indices in the row, wrapping */
    uint32_t row_index[3][3];        /* [dy+1][dx+1]: index of the word read for column side dx, channel 0 */
    uint32_t row_mask[3];            /* zero boundary: ~0 when row y+dy is inside, else 0 */
    uint32_t valid;                  /* bits of word w that are cells of the row */
    int n_inputs;
    uint32_t *node;                  /* [n_inputs + n_gates]: SSA id of each node's word */
} step_ctx;

static void shared_words(spv_builder *b, step_ctx *c)
{
    const hard_spirv_shape *s = c->s;
    if (c->word_left) return;
    c->first_word = equal_const(b, c->w, 0);
    c->last_word = equal_const(b, c->w, s->words - 1);
    if (s->words == 1) {
        c->word_left = c->word_right = c->w;
        return;
    }
    c->word_left = select_u(b, c->first_word, constant(b, s->words - 1), add_const(b, c->w, UINT32_MAX));
    c->word_right = select_u(b, c->last_word, constant(b, 0), add_const(b, c->w, 1));
}

/* Row y + dy of the same grid (wrapped; for a zero boundary any row, masked by row_mask), and
 * the indices of its words w - 1, w, w + 1 in channel 0. */
static void row_indices(spv_builder *b, step_ctx *c, int dy)
{
    const hard_spirv_shape *s = c->s;
    uint32_t *index = c->row_index[dy + 1];
    if (index[1]) return;
    shared_words(b, c);
    uint32_t row = c->row;
    if (dy != 0) {
        uint32_t edge = equal_const(b, c->y, dy < 0 ? 0 : s->height - 1);
        uint32_t step = add_const(b, row, dy < 0 ? UINT32_MAX : 1);
        if (s->periodic) {
            /* y + dy wraps to the other edge of the same grid: row -/+ (height - 1). */
            uint32_t wrapped = dy < 0 ? add_const(b, row, s->height - 1) : add_const(b, row, 1u - s->height);
            row = select_u(b, edge, wrapped, step);
        } else {
            row = select_u(b, edge, row, step);
            c->row_mask[dy + 1] = select_u(b, edge, constant(b, 0), constant(b, UINT32_MAX));
        }
    }
    uint32_t base = mul_const(b, row, s->words);
    index[0] = u2(b, SPV_OP_IADD, base, c->word_left);
    index[1] = u2(b, SPV_OP_IADD, base, c->w);
    index[2] = u2(b, SPV_OP_IADD, base, c->word_right);
}

static uint32_t row_masked(spv_builder *b, step_ctx *c, int dy, uint32_t value)
{
    return c->row_mask[dy + 1] ? band(b, value, c->row_mask[dy + 1]) : value;
}

/* The word of input node ch * 9 + j: bit i is cell (y + dy, 32 w + i + dx) of channel ch,
 * exactly hard_step.comp's gather. */
static uint32_t input_word(spv_builder *b, step_ctx *c, int node)
{
    if (c->node[node]) return c->node[node];
    const hard_spirv_shape *s = c->s;
    uint32_t ch = (uint32_t)node / HARD_NEIGHBOURS, j = (uint32_t)node % HARD_NEIGHBOURS;
    int dy = (int)(j / 3) - 1, dx = (int)(j % 3) - 1;
    uint32_t channel_base = ch * s->invocations;
    row_indices(b, c, dy);
    uint32_t centre_node = ch * HARD_NEIGHBOURS + (uint32_t)(dy + 1) * 3 + 1;
    if (!c->node[centre_node])
        c->node[centre_node] = row_masked(b, c, dy, grid_load(b, add_const(b, c->row_index[dy + 1][1], channel_base)));
    uint32_t centre = c->node[centre_node];
    if (dx == 0) return centre;
    uint32_t last_bit = (s->width - 1) % 32;
    uint32_t neighbour = grid_load(b, add_const(b, c->row_index[dy + 1][dx + 1], channel_base));
    uint32_t carry, shifted;
    if (dx < 0) {
        /* bit i = cell 32 w + i - 1: the centre shifted up, the last cell of word w - 1 into bit 0
         * (at the row's start: the row's last cell when periodic, else 0). */
        uint32_t inner = shr(b, neighbour, 31);
        if (s->periodic)
            carry = last_bit == 31 ? inner
                                   : select_u(b, c->first_word, band(b, shr(b, neighbour, last_bit), constant(b, 1)), inner);
        else
            carry = select_u(b, c->first_word, constant(b, 0), inner);
        shifted = shl(b, centre, 1);
    } else {
        /* bit i = cell 32 w + i + 1: the centre shifted down, the first cell of word w + 1 into
         * bit 31 (at the row's end: into the last cell's bit, the row's first cell or 0). */
        uint32_t inner = shl(b, neighbour, 31);
        if (s->periodic)
            carry = last_bit == 31 ? inner
                                   : select_u(b, c->last_word, shl(b, band(b, neighbour, constant(b, 1)), last_bit), inner);
        else
            carry = select_u(b, c->last_word, constant(b, 0), inner);
        shifted = shr(b, centre, 1);
    }
    /* The centre is already masked; the carry comes from an unmasked word of the same row. */
    return c->node[node] = row_masked(b, c, dy, bor(b, shifted, carry));
}

static uint32_t node_word(spv_builder *b, step_ctx *c, int node)
{
    return node < c->n_inputs ? input_word(b, c, node) : c->node[node];
}

/* The gate's op on its input words a and b (here y: b is the builder), gate_hard's bit order,
 * the same table as hard_step.comp's op_eval. */
static uint32_t gate_word(spv_builder *b, int op, uint32_t a, uint32_t y)
{
    switch (op) {
    case GATE_FALSE: return constant(b, 0);
    case GATE_AND: return band(b, a, y);
    case GATE_A_AND_NOT_B: return band(b, a, bnot(b, y));
    case GATE_A: return a;
    case GATE_NOT_A_AND_B: return band(b, bnot(b, a), y);
    case GATE_B: return y;
    case GATE_XOR: return bxor(b, a, y);
    case GATE_OR: return bor(b, a, y);
    case GATE_NOR: return bnot(b, bor(b, a, y));
    case GATE_XNOR: return bnot(b, bxor(b, a, y));
    case GATE_NOT_B: return bnot(b, y);
    case GATE_A_OR_NOT_B: return bor(b, a, bnot(b, y));
    case GATE_NOT_A: return bnot(b, a);
    case GATE_NOT_A_OR_B: return bor(b, bnot(b, a), y);
    case GATE_NAND: return bnot(b, band(b, a, y));
    default: return constant(b, UINT32_MAX); /* GATE_TRUE */
    }
}

/* Bit i set when cell 32 w + i of the row fires at this step (rng_fires), masked to the row. */
static uint32_t fire_mask(spv_builder *b, step_ctx *c)
{
    const hard_spirv_shape *s = c->s;
    /* rng_fires(stream, t, cell, threshold) = (hash(hash(stream ^ hash(t)) ^ cell) >> 8) < threshold,
     * and (h >> 8) < threshold is h < threshold << 8 for a 24-bit threshold. */
    uint32_t key = hash32(b, bxor(b, push_load(b, PUSH_STREAM), hash32(b, push_load(b, PUSH_STEP))));
    uint32_t first = u2(b, SPV_OP_IADD, mul_const(b, c->row, s->width), shl(b, c->w, 5));
    uint32_t below = constant(b, s->threshold << 8), mask = constant(b, 0);
    uint32_t cells = s->width < 32 ? s->width : 32;
    for (uint32_t i = 0; i < cells; i++) {
        uint32_t h = hash32(b, bxor(b, key, add_const(b, first, i)));
        uint32_t fires = op2(b, SPV_OP_ULESS_THAN, b->t_bool, h, below);
        mask = bor(b, mask, select_u(b, fires, constant(b, 1u << i), constant(b, 0)));
    }
    return c->valid ? band(b, mask, c->valid) : mask;
}

static void step_body(spv_builder *b, const hard_netlist *net, step_ctx *c)
{
    const hard_spirv_shape *s = c->s;
    uint32_t gid = new_id(b), x = new_id(b), y = new_id(b);
    EMIT(b, &b->body, SPV_OP_LOAD, b->t_uvec3, gid, b->v_gid);
    EMIT(b, &b->body, SPV_OP_COMPOSITE_EXTRACT, b->t_uint, x, gid, 0);
    EMIT(b, &b->body, SPV_OP_COMPOSITE_EXTRACT, b->t_uint, y, gid, 1);
    c->inv = u2(b, SPV_OP_IADD, x, mul_const(b, y, s->row_stride));
    uint32_t inside = op2(b, SPV_OP_ULESS_THAN, b->t_bool, c->inv, constant(b, s->invocations));
    uint32_t work = new_id(b), done = new_id(b);
    EMIT(b, &b->body, SPV_OP_SELECTION_MERGE, done, 0);
    EMIT(b, &b->body, SPV_OP_BRANCH_CONDITIONAL, inside, work, done);
    EMIT(b, &b->body, SPV_OP_LABEL, work);

    c->row = div_const(b, c->inv, s->words);
    c->w = mod_const(b, c->inv, s->words);
    c->y = mod_const(b, c->row, s->height);
    if (s->width % 32) {
        shared_words(b, c);
        c->valid = select_u(b, c->last_word, constant(b, (1u << s->width % 32) - 1), constant(b, UINT32_MAX));
    }
    for (int g = 0; g < net->n_gates; g++) {
        const hard_gate *gate = &net->gates[g];
        uint32_t a_word = node_word(b, c, gate->a), b_word = node_word(b, c, gate->b);
        c->node[net->n_inputs + g] = gate_word(b, gate->op, a_word, b_word);
    }
    int async = s->threshold < 1u << 24;
    uint32_t fire = async ? fire_mask(b, c) : 0, keep = 0;
    if (async) keep = c->valid ? band(b, bnot(b, fire), c->valid) : bnot(b, fire);
    for (uint32_t ch = 0; ch < s->channels; ch++) {
        uint32_t out = node_word(b, c, net->outputs[ch]);
        if (async) {
            uint32_t old = input_word(b, c, (int)(ch * HARD_NEIGHBOURS + 4));
            out = bor(b, band(b, out, fire), band(b, old, keep));
        } else if (c->valid) {
            out = band(b, out, c->valid);
        }
        uint32_t pointer = buffer_pointer(b, b->v_next, add_const(b, c->inv, ch * s->invocations));
        EMIT(b, &b->body, SPV_OP_STORE, pointer, out);
    }
    EMIT(b, &b->body, SPV_OP_BRANCH, done);
    EMIT(b, &b->body, SPV_OP_LABEL, done);
}

static int shape_check(const hard_netlist *net, const hard_spirv_shape *s)
{
    uint64_t words = ((uint64_t)s->width + 31) / 32;
    if (s->channels != (uint32_t)net->channels || s->height < 1 || s->width < 1 || s->words != words ||
        s->rows < s->height || s->rows % s->height || (uint64_t)s->rows * words != s->invocations ||
        (uint64_t)s->channels * s->invocations > UINT32_MAX || (uint64_t)s->rows * s->width > UINT32_MAX ||
        s->local_size < 1 || s->row_stride < s->local_size || s->row_stride % s->local_size)
        return err_set(DLCA_ERR, "hard SPIR-V: inconsistent shape (C %u, %u rows of %ux%u, %u words, %u invocations)",
                       s->channels, s->rows, s->height, s->width, s->words, s->invocations);
    return DLCA_OK;
}

static void builder_free(spv_builder *b)
{
    free(b->preamble.w), free(b->annotations.w), free(b->globals.w), free(b->body.w);
    free(b->constants);
}

int hard_spirv_emit(const hard_netlist *net, const hard_spirv_shape *shape, uint32_t **code, size_t *n_words)
{
    *code = NULL, *n_words = 0;
    int rc = hard_netlist_check(net);
    if (!rc) rc = shape_check(net, shape);
    if (rc) return rc;
    spv_builder b;
    memset(&b, 0, sizeof b);
    b.bound = 1; /* id 0 is not an id */
    step_ctx c;
    memset(&c, 0, sizeof c);
    c.s = shape, c.n_inputs = net->n_inputs;
    c.node = calloc((size_t)net->n_inputs + (size_t)net->n_gates, sizeof *c.node);
    if (!c.node) return err_set(DLCA_ERR_NOMEM, "out of memory compiling a circuit of %d gates", net->n_gates);

    declare_types(&b);
    write_preamble(&b, shape->local_size);
    EMIT(&b, &b.body, SPV_OP_FUNCTION, b.t_void, b.f_main, 0, b.t_fn);
    EMIT(&b, &b.body, SPV_OP_LABEL, new_id(&b));
    step_body(&b, net, &c);
    section_word(&b, &b.body, 1u << 16 | SPV_OP_RETURN);
    section_word(&b, &b.body, 1u << 16 | SPV_OP_FUNCTION_END);
    free(c.node);

    size_t total = 5 + b.preamble.n + b.annotations.n + b.globals.n + b.body.n;
    uint32_t *out = b.nomem ? NULL : malloc(total * sizeof *out);
    if (!out) {
        builder_free(&b);
        return err_set(DLCA_ERR_NOMEM, "out of memory compiling a circuit of %d gates", net->n_gates);
    }
    uint32_t header[5] = {SPV_MAGIC, SPV_VERSION_1_3, 0 /* generator: unregistered */, b.bound, 0};
    size_t at = 0;
    memcpy(out, header, sizeof header), at += 5;
    const spv_section *sections[] = {&b.preamble, &b.annotations, &b.globals, &b.body};
    for (size_t i = 0; i < 4; i++) {
        memcpy(out + at, sections[i]->w, sections[i]->n * sizeof *out);
        at += sections[i]->n;
    }
    builder_free(&b);
    *code = out, *n_words = total;
    return DLCA_OK;
}
