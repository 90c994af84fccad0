/* test_wiring: unique wiring covers every input with distinct pairs, impossible shapes fail
 * with a message, random and moore wiring keep their contracts, and the CSR reverse lists
 * every (gate, slot) exactly once. */
#include "check.h"
#include "error.h"
#include "wiring.h"

#include <stdlib.h>
#include <string.h>

static void check_reverse(const wiring *w)
{
    int total = w->reverse_start[w->n_in], ok = total == 2 * w->n_out;
    for (int i = 0; i < w->n_in && ok; i++)
        for (int e = w->reverse_start[i]; e < w->reverse_start[i + 1]; e++) {
            int g = w->reverse_entry[e] >> 1, slot = w->reverse_entry[e] & 1;
            ok &= (slot ? w->input_b[g] : w->input_a[g]) == i;
            ok &= e == w->reverse_start[i] || w->reverse_entry[e - 1] < w->reverse_entry[e];
        }
    CHECK(ok, "reverse wiring of %d -> %d lists each (gate, slot) once, ascending", w->n_in, w->n_out);
}

static void check_unique(int n_in, int n_out, uint64_t seed)
{
    rng_state rng;
    rng_init(&rng, seed, 0);
    wiring w;
    if (wiring_init(&w, WIRING_UNIQUE, n_in, n_out, &rng) != DLCA_OK) {
        CHECK(0, "unique %d -> %d failed: %s", n_in, n_out, err_message());
        return;
    }
    char *used = calloc((size_t)n_in, 1), *seen = calloc((size_t)n_in * (size_t)n_in, 1);
    int distinct = 1, all_used = 1;
    for (int g = 0; g < n_out; g++) {
        int a = w.input_a[g], b = w.input_b[g], lo = a < b ? a : b, hi = a < b ? b : a;
        distinct &= a != b && !seen[lo * n_in + hi];
        seen[lo * n_in + hi] = 1;
        used[a] = used[b] = 1;
    }
    for (int i = 0; i < n_in; i++) all_used &= used[i];
    CHECK(distinct, "unique %d -> %d: pairs distinct", n_in, n_out);
    CHECK(all_used, "unique %d -> %d: every input used", n_in, n_out);
    check_reverse(&w);
    free(used), free(seen);
    wiring_free(&w);
}

static void check_refused(wiring_kind kind, int n_in, int n_out, const char *needle)
{
    rng_state rng;
    rng_init(&rng, 1, 0);
    wiring w;
    err_clear();
    int status = wiring_init(&w, kind, n_in, n_out, &rng);
    CHECK(status != DLCA_OK, "%s %d -> %d must fail", wiring_kind_name(kind), n_in, n_out);
    CHECK(strstr(err_message(), needle) != NULL, "message '%s' names '%s'", err_message(), needle);
}

static void test_unique(void)
{
    static const int shapes[][2] = {{2, 1}, {3, 2}, {3, 3}, {4, 2}, {8, 4}, {9, 5}, {17, 9}, {17, 128}, {264, 256},
                                    {576, 512}, {640, 512}, {128, 128}, {128, 64}, {8, 8}, {5, 10}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (uint64_t seed = 1; seed <= 3; seed++) check_unique(shapes[i][0], shapes[i][1], seed);
    check_refused(WIRING_UNIQUE, 9, 4, "cannot read all 9 inputs");
    check_refused(WIRING_UNIQUE, 4, 7, "only 6 distinct pairs");
    check_refused(WIRING_UNIQUE, 0, 4, "at least 1 input");
}

static void test_random_and_moore(void)
{
    rng_state rng;
    rng_init(&rng, 9, 0);
    wiring w;
    CHECK(wiring_init(&w, WIRING_RANDOM, 5, 40, &rng) == DLCA_OK, "random: %s", err_message());
    int ok = 1;
    for (int g = 0; g < 40; g++) ok &= w.input_a[g] != w.input_b[g] && w.input_a[g] < 5 && w.input_b[g] < 5;
    CHECK(ok, "random wiring reads two distinct inputs in range");
    check_reverse(&w);
    wiring_free(&w);

    CHECK(wiring_init(&w, WIRING_MOORE, 9, 8, &rng) == DLCA_OK, "moore: %s", err_message());
    int mask = 0;
    for (int g = 0; g < 8; g++) {
        mask |= 1 << w.input_a[g];
        CHECK(w.input_b[g] == 4, "moore gate %d reads the centre as b", g);
    }
    CHECK(mask == 0x1ef, "moore gates read each of the 8 neighbours once (mask %x)", mask);
    check_reverse(&w);
    wiring_free(&w);
    /* Three orders (one a kernel): each reads every neighbour once, and they are not all the same. */
    CHECK(wiring_init(&w, WIRING_MOORE, 9, 24, &rng) == DLCA_OK, "moore, 3 orders: %s", err_message());
    int differ = 0;
    for (int order = 0; order < 3 && w.input_a; order++) {
        int seen = 0;
        for (int g = 0; g < 8; g++) {
            seen |= 1 << w.input_a[order * 8 + g];
            differ |= w.input_a[order * 8 + g] != w.input_a[g];
            CHECK(wiring_moore_neighbour(&w, order, g) == w.input_a[order * 8 + g], "kernel %d's gate %d", order, g);
        }
        CHECK(seen == 0x1ef, "moore order %d reads each of the 8 neighbours once (mask %x)", order, seen);
    }
    CHECK(differ, "the three orders are not one order repeated");
    check_reverse(&w);
    wiring_free(&w);
    check_refused(WIRING_MOORE, 8, 8, "3x3 neighbourhood");
    check_refused(WIRING_MOORE, 9, 12, "8 gates an order");
}

static void test_from_lists(void)
{
    int a[3] = {0, 1, 2}, b[3] = {1, 2, 7};
    wiring w;
    CHECK(wiring_init_from(&w, 4, 3, a, b) != DLCA_OK, "index 7 of 4 inputs refused");
    CHECK(strstr(err_message(), "gate 2") != NULL, "message names the gate: %s", err_message());
    b[2] = 3;
    CHECK(wiring_init_from(&w, 4, 3, a, b) == DLCA_OK, "valid lists accepted");
    check_reverse(&w);
    wiring_free(&w);
}

int main(void)
{
    test_unique();
    test_random_and_moore();
    test_from_lists();
    return test_finish("test_wiring");
}
