/* wiring.h: which inputs each gate of a layer reads, and the reverse (CSR) view that the
 * backward pass gathers through, so no two threads ever add into the same input gradient. */
#ifndef DLCA_WIRING_H
#define DLCA_WIRING_H

#include "rng.h"

typedef enum { WIRING_UNIQUE, WIRING_RANDOM, WIRING_MOORE } wiring_kind;

typedef struct {
    int n_in, n_out;
    int *input_a, *input_b; /* [n_out]: the inputs gate g reads as a and b */
    int *reverse_start;     /* [n_in + 1]: input i is read by reverse_entry[reverse_start[i] .. reverse_start[i+1]) */
    int *reverse_entry;     /* [2 n_out]: gate * 2 + slot (slot 0 = a, 1 = b), ascending */
} wiring;

/* Builds a layer of `kind` from n_in inputs to n_out gates, drawing from `rng`.
 * unique: distinct pairs covering every input (needs 2 n_out >= n_in and n_out <= n_in (n_in-1)/2);
 * random: two distinct inputs per gate; moore: n_in = 9, n_out = 8 per order (one order, or one per
 * perception kernel), a = a neighbour, each of the 8 once an order, b = the centre (4). */
int wiring_init(wiring *w, wiring_kind kind, int n_in, int n_out, rng_state *rng);

/* Builds a layer from given input lists (as read from a model file), checking every index. */
int wiring_init_from(wiring *w, int n_in, int n_out, const int *input_a, const int *input_b);

void wiring_free(wiring *w);

/* The neighbour (0..8 but 4) gate i of kernel k reads in a moore layer: of its one order (8 gates,
 * shared by every kernel) or of kernel k's (8 gates a kernel). */
static inline int wiring_moore_neighbour(const wiring *w, int k, int i)
{
    return w->input_a[(w->n_out > 8 ? 8 * k : 0) + i];
}

/* Name of a wiring kind ("unique", "random", "moore"). */
const char *wiring_kind_name(wiring_kind kind);

#endif
