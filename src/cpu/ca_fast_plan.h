/* ca_fast_plan.h: the fast engine's per-model program. Every gate evaluation of one CA step is
 * an op on rows of a block of cells, numbered once so the hot loops never look at layer kinds:
 *   rows [0, C)            the grid (channel c),
 *   rows [C, 9C)           channel c's neighbour j (j != 4: the centre is the grid row),
 *   rows [9C, 9C + step)   the step's activations, in ca_cpu's row order.
 * A block belongs to one thread, so backward scatters each op's input gradients in op order:
 * deterministic without a reverse (gather) list. */
#ifndef DLCA_CA_FAST_PLAN_H
#define DLCA_CA_FAST_PLAN_H

#include "ca_shape.h"
#include "ca_model.h"

#include <stddef.h>
#include <stdint.h>

/* rows[out] = gate `gate` on rows[a], rows[b]. */
typedef struct {
    uint32_t out, a, b, gate;
} ca_fast_op;

/* A layer: ops [op_begin, op_end); its inputs other than the grid are the rows
 * [input_begin, input_end), whose gradients backward starts from zero. */
typedef struct {
    size_t op_begin, op_end, input_begin, input_end;
} ca_fast_layer;

enum { CA_FAST_DIRECTIONS = 8 };

typedef struct {
    size_t channels, act_base, rows;
    int layer_count; /* moore, the other perception layers, the update layers */
    ca_fast_layer layer[2 * CA_MAX_LAYERS];
    ca_fast_op *ops;
    size_t op_count;
    int32_t *neighbour; /* [8][cells]: the cell read as direction d, -1 outside a zero boundary */
    int32_t *reader;    /* [8][cells]: the cell that reads this one as direction d, or -1 */
} ca_fast_plan;

/* Builds the plan for `model` on grid `shape` with ca_cpu's activation rows. */
int ca_fast_plan_init(ca_fast_plan *plan, const ca_model *model, ca_shape shape, const size_t *perception_row,
                      const size_t *update_row, size_t step_rows);

void ca_fast_plan_free(ca_fast_plan *plan);

/* Row of channel c's neighbour j (0..8, 4 = the centre, which is the grid row). */
static inline uint32_t ca_fast_neighbour_row(const ca_fast_plan *p, int c, int j)
{
    if (j == 4) return (uint32_t)c;
    return (uint32_t)(p->channels + (size_t)c * CA_FAST_DIRECTIONS + (size_t)(j < 4 ? j : j - 1));
}

/* The 3x3 neighbour j (0..8) of direction d (0..7): the centre is skipped. */
static inline int ca_fast_direction_neighbour(int d) { return d < 4 ? d : d + 1; }

#endif
