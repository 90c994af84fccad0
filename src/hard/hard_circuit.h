/* hard_circuit.h: a trained model snapped to boolean logic, as a flat netlist for one cell.
 *
 * A netlist maps the 3x3 neighbourhood of a cell (C*9 input bits) to its C new bits. Node ids:
 *   0 .. 9C-1        input: node ch*9 + j is channel ch of neighbour j = (dy+1)*3 + (dx+1),
 *                    the cell at (y+dy, x+dx); j = 4 is the cell itself
 *   9C + g           gate g: op(node a, node b), reading only nodes with smaller ids
 * and outputs[ch] names the node that becomes channel ch (an input, or a gate). Perception
 * kernels, applied per channel in the model, are explicit gates per channel here.
 *
 * hard_circuit_extract gives the model's circuit as is (op = argmax logit per gate).
 * hard_circuit_prune folds constants, drops pass-through gates (A, B become wires), absorbs
 * negations into the gates that read them (an op with a negated input is another op), merges
 * identical gates and drops gates nothing reads; the result computes exactly the same bits.
 * hard_program then assigns reusable value slots, the form the engines run. */
#ifndef DLCA_HARD_CIRCUIT_H
#define DLCA_HARD_CIRCUIT_H

#include "ca_model.h"
#include "gates.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { HARD_NEIGHBOURS = 9 };

typedef struct {
    int32_t op;   /* gate_op */
    int32_t a, b; /* node ids read as a and b */
} hard_gate;

typedef struct {
    int channels; /* C */
    int n_inputs; /* 9 C */
    int n_gates;
    hard_gate *gates; /* [n_gates]: node n_inputs + g */
    int32_t *outputs; /* [C] */
} hard_netlist;

/* Gate counts by op. */
typedef struct {
    size_t by_op[GATE_OP_COUNT];
    size_t total;
} hard_op_counts;

/* What pruning did. Every gate of the extracted circuit meets exactly one fate, so
 * constant + wire + merged + dead + (after.total - added) == before.total. */
typedef struct {
    size_t model_gates;   /* gates in the model (perception counted once, not per channel) */
    hard_op_counts before; /* the extracted circuit */
    hard_op_counts after;  /* the pruned circuit */
    size_t constant;       /* folded to a constant */
    size_t wire;           /* became a wire: pass-through, an op that ignores an input, or a NOT
                            * (absorbed by the gates that read it) */
    size_t merged;         /* identical to an earlier gate */
    size_t dead;           /* nothing read it */
    size_t added;          /* NOT or constant gates added for outputs that are not a plain node */
    int depth_before, depth_after; /* longest input-to-output path in gates */
} hard_stats;

/* The model's circuit with op = argmax of each gate's logits, unpruned. */
int hard_circuit_extract(hard_netlist *net, const ca_model *model);

/* hard_circuit_extract, and which model gate (its logits row) each netlist gate came from:
 * *model_gate is a new array [net->n_gates] (free it), or NULL on failure. A perception gate
 * becomes one netlist gate per channel; an update gate exactly one. */
int hard_circuit_extract_mapped(hard_netlist *net, const ca_model *model, int32_t **model_gate);

/* The pruned equivalent of `in` into `out` (a new netlist). `stats` may be NULL: then the gate
 * counts and depths are not computed, and only the gates an output depends on through the ops are
 * folded (the same circuit, its gates in another order where an unneeded gate equals a needed
 * one; a repair's try prunes the whole trained circuit to its few such gates). Its model_gates is
 * left as it was. */
int hard_circuit_prune(hard_netlist *out, const hard_netlist *in, hard_stats *stats);

/* hard_circuit_prune without stats, for a caller that prunes netlists of its own many times (the
 * repair, once a try): `in` is not checked (it must pass hard_netlist_check), and `needed` marks
 * the nodes to fold, any superset of hard_netlist_needed's (the rest read as the constant 0). The
 * circuit is the same function; with exactly hard_netlist_needed's marks, the same netlist. */
int hard_circuit_prune_marked(hard_netlist *out, const hard_netlist *in, const uint8_t *needed);

/* Marks in `needed` node n and, through the gates' ops, every node it depends on (as
 * hard_netlist_needed does from the outputs), not looking past nodes marked already but n itself:
 * after a needed gate's op changed, what its new op reads. */
void hard_netlist_mark_needed(const hard_netlist *net, uint8_t *needed, int32_t node);

/* extract + prune; stats (may be NULL) gets model_gates too. */
int hard_circuit_build(hard_netlist *net, const ca_model *model, hard_stats *stats);

void hard_netlist_free(hard_netlist *net);

/* Checks ids, topological order, ops and outputs; error says what is wrong. */
int hard_netlist_check(const hard_netlist *net);

/* Op counts of a netlist. */
void hard_netlist_count(const hard_netlist *net, hard_op_counts *counts);

/* needed[n] (room for n_inputs + n_gates) for every node: 1 where an output depends on it through
 * the gates' ops (from the outputs back, a gate needed reads what its op depends on), else 0.
 * Pruning never needs more; the repair tries only needed gates. */
void hard_netlist_needed(const hard_netlist *net, uint8_t *needed);

/* Longest path from an input to an output, in gates. */
int hard_netlist_depth(const hard_netlist *net);

/* Evaluates 64 neighbourhoods at once: inputs [9C] words (bit i of every word = lane i),
 * outputs [C] words; scratch has n_inputs + n_gates words. The plain reference evaluator. */
void hard_netlist_eval64(const hard_netlist *net, const uint64_t *inputs, uint64_t *outputs, uint64_t *scratch);

/* Prints the op table before and after pruning and what became of the removed gates. */
void hard_stats_print(const hard_stats *stats, FILE *out);

/* op(a, b) on 64 lanes at once, branch-free: the op's algebraic normal form
 * k0 ^ k1 a ^ k2 b ^ k3 ab with all-ones or all-zero masks k. */
static inline uint64_t hard_op64(int op, uint64_t a, uint64_t b)
{
    /* gate_hard's bit order: bit 3 = op(0,0), bit 2 = op(0,1), bit 1 = op(1,0), bit 0 = op(1,1). */
    uint64_t t00 = (uint64_t)(op >> 3 & 1), t01 = (uint64_t)(op >> 2 & 1);
    uint64_t t10 = (uint64_t)(op >> 1 & 1), t11 = (uint64_t)(op & 1);
    uint64_t k0 = -t00, k1 = -(t00 ^ t10), k2 = -(t00 ^ t01), k3 = -(t00 ^ t01 ^ t10 ^ t11);
    return k0 ^ (k1 & a) ^ (k2 & b) ^ (k3 & a & b);
}

/* One instruction of a slot program: slot dst = op(slot a, slot b). */
typedef struct {
    uint32_t op, dst, a, b;
} hard_instr;

/* A netlist with value slots assigned: inputs live in slots 0 .. n_inputs-1, a gate's result
 * in a slot freed by a value no later gate reads (never one of its own inputs), so the
 * working set is the circuit's widest cut rather than its gate count. */
typedef struct {
    int channels, n_inputs;
    int n_instr, n_slots;
    hard_instr *instr;   /* [n_instr], in netlist order */
    uint32_t *outputs;   /* [C]: slot holding new channel ch after the last instruction */
} hard_program;

int hard_program_build(hard_program *program, const hard_netlist *net);

void hard_program_free(hard_program *program);

/* Names of the 9 neighbours ("NW", "N", "NE", "W", "C", "E", "SW", "S", "SE"). */
extern const char *const hard_neighbour_names[HARD_NEIGHBOURS];

#endif
