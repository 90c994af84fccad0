#version 450
// hard_step.comp: one step of the bit-packed hard engine (src/hard/hard_cpu.c) on 32-bit words.
// Invocation = word w of row `row` (row = b * height + y): gathers the 9 neighbour words of
// every channel (the left and right columns shifted by one cell, wrapping or zero at the edges),
// runs the pruned circuit's slot program on them and applies the async fire mask.
// Grids: [C][rows][words] uints, bit x % 32 of word x / 32 is cell x, bits past the row are 0.
// Program: outputs [C] (slots), then per instruction (op | dst << 4, a, b); slot s of this
// invocation lives at slots[s * invocations + invocation], so a warp's accesses are coalesced.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer grid_buf { uint grid[]; };
layout(std430, binding = 1) writeonly buffer next_buf { uint next_grid[]; };
layout(std430, binding = 2) readonly buffer program_buf { uint program[]; };
layout(std430, binding = 3) buffer slots_buf { uint slots[]; };
layout(push_constant) uniform push_block { hard_step_push pc; };

// The op is the same for every invocation, so this switch does not diverge.
uint op_eval(uint op, uint a, uint b)
{
    switch (op) {
    case 0u: return 0u;            // FALSE
    case 1u: return a & b;         // AND
    case 2u: return a & ~b;        // A AND NOT B
    case 3u: return a;             // A
    case 4u: return ~a & b;        // NOT A AND B
    case 5u: return b;             // B
    case 6u: return a ^ b;         // XOR
    case 7u: return a | b;         // OR
    case 8u: return ~(a | b);      // NOR
    case 9u: return ~(a ^ b);      // XNOR
    case 10u: return ~b;           // NOT B
    case 11u: return a | ~b;       // A OR NOT B
    case 12u: return ~a;           // NOT A
    case 13u: return ~a | b;       // NOT A OR B
    case 14u: return ~(a & b);     // NAND
    default: return 0xffffffffu;   // TRUE
    }
}

// Bits of word w that are cells of the row.
uint valid_bits(uint w)
{
    uint used = pc.width - 32u * w;
    return used >= 32u ? 0xffffffffu : (1u << used) - 1u;
}

void slot_store(uint slot, uint inv, uint value) { slots[slot * pc.invocations + inv] = value; }

uint slot_load(uint slot, uint inv) { return slots[slot * pc.invocations + inv]; }

// Input slots ch*9 + (dy+1)*3 + (dx+1) of this word.
void gather(uint inv, uint row, uint w)
{
    uint y = row % pc.height, last_bit = (pc.width - 1u) % 32u;
    bool periodic = pc.periodic != 0u;
    for (int dy = -1; dy <= 1; dy++) {
        int yy = int(y) + dy;
        bool inside = periodic || (yy >= 0 && yy < int(pc.height));
        yy = (yy + int(pc.height)) % int(pc.height);
        for (uint ch = 0u; ch < pc.channels; ch++) {
            uint left = 0u, centre = 0u, right = 0u;
            if (inside) {
                uint base = (ch * pc.rows + row - y + uint(yy)) * pc.words;
                centre = grid[base + w];
                uint from_left = w > 0u ? grid[base + w - 1u] >> 31 : (periodic ? grid[base + pc.words - 1u] >> last_bit & 1u : 0u);
                uint from_right = w + 1u < pc.words ? grid[base + w + 1u] << 31 : (periodic ? (grid[base] & 1u) << last_bit : 0u);
                left = centre << 1 | from_left;
                right = centre >> 1 | from_right;
            }
            uint slot = ch * 9u + uint(dy + 1) * 3u;
            slot_store(slot, inv, left);
            slot_store(slot + 1u, inv, centre);
            slot_store(slot + 2u, inv, right);
        }
    }
}

uint fire_mask(uint row, uint w)
{
    if (pc.threshold >= (1u << 24)) return valid_bits(w);
    uint first = row * pc.width + 32u * w, mask = 0u;
    for (uint i = 0u; i < 32u; i++)
        if (rng_fires(pc.stream, pc.step, first + i, pc.threshold)) mask |= 1u << i;
    return mask & valid_bits(w);
}

void main()
{
    uint inv = global_index();
    if (inv >= pc.invocations) return;
    uint row = inv / pc.words, w = inv % pc.words;
    gather(inv, row, w);
    for (uint i = 0u; i < pc.n_instr; i++) {
        uint at = pc.channels + 3u * i, code = program[at];
        uint a = slot_load(program[at + 1u], inv), b = slot_load(program[at + 2u], inv);
        slot_store(code >> 4, inv, op_eval(code & 15u, a, b));
    }
    uint fire = fire_mask(row, w), keep = ~fire & valid_bits(w);
    for (uint ch = 0u; ch < pc.channels; ch++) {
        uint at = (ch * pc.rows + row) * pc.words + w;
        next_grid[at] = (slot_load(program[ch], inv) & fire) | (grid[at] & keep);
    }
}
