/* wiring.c: unique / random / moore layer wiring and its CSR reverse. */
#include "wiring.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

const char *wiring_kind_name(wiring_kind kind)
{
    static const char *const names[] = {"unique", "random", "moore"};
    return (unsigned)kind < 3 ? names[kind] : "unknown";
}

static int wiring_alloc(wiring *w, int n_in, int n_out)
{
    memset(w, 0, sizeof *w);
    w->n_in = n_in;
    w->n_out = n_out;
    w->input_a = malloc(sizeof(int) * (size_t)n_out);
    w->input_b = malloc(sizeof(int) * (size_t)n_out);
    w->reverse_start = calloc((size_t)n_in + 1, sizeof(int));
    w->reverse_entry = malloc(sizeof(int) * 2 * (size_t)n_out);
    if (!w->input_a || !w->input_b || !w->reverse_start || !w->reverse_entry) {
        wiring_free(w);
        return err_set(DLCA_ERR_NOMEM, "out of memory for a wiring of %d gates", n_out);
    }
    return DLCA_OK;
}

/* Counting sort of (gate, slot) by input: entries for one input come out in ascending
 * gate*2+slot order, which fixes the summation order of the backward gather. */
static int wiring_build_reverse(wiring *w)
{
    int *fill = w->reverse_start;
    memset(fill, 0, sizeof(int) * ((size_t)w->n_in + 1));
    for (int g = 0; g < w->n_out; g++) {
        fill[w->input_a[g] + 1]++;
        fill[w->input_b[g] + 1]++;
    }
    for (int i = 0; i < w->n_in; i++) fill[i + 1] += fill[i];
    int *next = malloc(sizeof(int) * (size_t)w->n_in);
    if (!next) return err_set(DLCA_ERR_NOMEM, "out of memory for the reverse wiring of %d inputs", w->n_in);
    memcpy(next, fill, sizeof(int) * (size_t)w->n_in);
    for (int g = 0; g < w->n_out; g++) {
        w->reverse_entry[next[w->input_a[g]]++] = 2 * g;
        w->reverse_entry[next[w->input_b[g]]++] = 2 * g + 1;
    }
    free(next);
    return DLCA_OK;
}

/* Pairs at distance 1 first (even starts, then odd), then distances 2, 3, ...: the first
 * ceil(n_in/2) pairs already cover every input. For odd n_in the pair (n_in-2, n_in-1) is
 * moved into the first round so the last input is covered too. */
static void unique_pairs(int *pair_a, int *pair_b, int n_in, int n_out)
{
    int count = 0;
    for (int i = 0; i + 1 < n_in && count < n_out; i += 2, count++) {
        pair_a[count] = i;
        pair_b[count] = i + 1;
    }
    int odd_tail = (n_in % 2 == 1 && n_in >= 3);
    if (odd_tail && count < n_out) {
        pair_a[count] = n_in - 2;
        pair_b[count] = n_in - 1;
        count++;
    }
    for (int i = 1; i + 1 < n_in - odd_tail && count < n_out; i += 2, count++) {
        pair_a[count] = i;
        pair_b[count] = i + 1;
    }
    for (int distance = 2; distance < n_in && count < n_out; distance++)
        for (int i = 0; i + distance < n_in && count < n_out; i++, count++) {
            pair_a[count] = i;
            pair_b[count] = i + distance;
        }
}

static int wiring_unique(wiring *w, int n_in, int n_out, rng_state *rng)
{
    long long possible = (long long)n_in * (n_in - 1) / 2;
    if (2LL * n_out < n_in)
        return err_set(DLCA_ERR, "unique wiring impossible: %d gates cannot read all %d inputs (needs at least %d gates)",
                       n_out, n_in, (n_in + 1) / 2);
    if (n_out > possible)
        return err_set(DLCA_ERR, "unique wiring impossible: %d gates but only %lld distinct pairs of %d inputs", n_out,
                       possible, n_in);
    if (wiring_alloc(w, n_in, n_out)) return DLCA_ERR_NOMEM;
    int *order = malloc(sizeof(int) * (size_t)n_out);
    int *pair_a = malloc(sizeof(int) * (size_t)n_out), *pair_b = malloc(sizeof(int) * (size_t)n_out);
    if (!order || !pair_a || !pair_b) {
        free(order), free(pair_a), free(pair_b), wiring_free(w);
        return err_set(DLCA_ERR_NOMEM, "out of memory for a wiring of %d gates", n_out);
    }
    unique_pairs(pair_a, pair_b, n_in, n_out);
    for (int g = 0; g < n_out; g++) order[g] = g;
    rng_shuffle(rng, order, (size_t)n_out);
    for (int g = 0; g < n_out; g++) {
        w->input_a[g] = pair_a[order[g]];
        w->input_b[g] = pair_b[order[g]];
    }
    free(order), free(pair_a), free(pair_b);
    return DLCA_OK;
}

static int wiring_random(wiring *w, int n_in, int n_out, rng_state *rng)
{
    if (n_in < 2) return err_set(DLCA_ERR, "random wiring needs at least 2 inputs, got %d", n_in);
    if (wiring_alloc(w, n_in, n_out)) return DLCA_ERR_NOMEM;
    for (int g = 0; g < n_out; g++) {
        int a = (int)rng_below(rng, (uint32_t)n_in);
        int b = (int)rng_below(rng, (uint32_t)n_in - 1);
        w->input_a[g] = a;
        w->input_b[g] = b >= a ? b + 1 : b;
    }
    return DLCA_OK;
}

static int wiring_moore(wiring *w, int n_in, int n_out, rng_state *rng)
{
    if (n_in != 9 || n_out < 8 || n_out % 8 != 0)
        return err_set(DLCA_ERR, "moore wiring maps the 9 cells of a 3x3 neighbourhood to 8 gates an order, "
                       "got %d -> %d", n_in, n_out);
    if (wiring_alloc(w, n_in, n_out)) return DLCA_ERR_NOMEM;
    for (int order = 0; order < n_out / 8; order++) {
        int neighbours[8] = {0, 1, 2, 3, 5, 6, 7, 8};
        rng_shuffle(rng, neighbours, 8);
        for (int g = 0; g < 8; g++) {
            w->input_a[order * 8 + g] = neighbours[g];
            w->input_b[order * 8 + g] = 4;
        }
    }
    return DLCA_OK;
}

int wiring_init(wiring *w, wiring_kind kind, int n_in, int n_out, rng_state *rng)
{
    memset(w, 0, sizeof *w);
    if (n_in < 1 || n_out < 1) return err_set(DLCA_ERR, "a layer needs at least 1 input and 1 gate, got %d -> %d", n_in, n_out);
    int status;
    switch (kind) {
    case WIRING_UNIQUE: status = wiring_unique(w, n_in, n_out, rng); break;
    case WIRING_RANDOM: status = wiring_random(w, n_in, n_out, rng); break;
    case WIRING_MOORE: status = wiring_moore(w, n_in, n_out, rng); break;
    default: return err_set(DLCA_ERR, "unknown wiring kind %d", (int)kind);
    }
    if (status == DLCA_OK) status = wiring_build_reverse(w);
    if (status != DLCA_OK) wiring_free(w);
    return status;
}

int wiring_init_from(wiring *w, int n_in, int n_out, const int *input_a, const int *input_b)
{
    memset(w, 0, sizeof *w);
    if (n_in < 1 || n_out < 1) return err_set(DLCA_ERR, "a layer needs at least 1 input and 1 gate, got %d -> %d", n_in, n_out);
    for (int g = 0; g < n_out; g++)
        if (input_a[g] < 0 || input_a[g] >= n_in || input_b[g] < 0 || input_b[g] >= n_in)
            return err_set(DLCA_ERR, "gate %d reads inputs (%d, %d), outside 0..%d", g, input_a[g], input_b[g], n_in - 1);
    if (wiring_alloc(w, n_in, n_out)) return DLCA_ERR_NOMEM;
    memcpy(w->input_a, input_a, sizeof(int) * (size_t)n_out);
    memcpy(w->input_b, input_b, sizeof(int) * (size_t)n_out);
    int status = wiring_build_reverse(w);
    if (status != DLCA_OK) wiring_free(w);
    return status;
}

void wiring_free(wiring *w)
{
    free(w->input_a);
    free(w->input_b);
    free(w->reverse_start);
    free(w->reverse_entry);
    memset(w, 0, sizeof *w);
}
