/* rng.c: splitmix64 streams and the fire-mask helpers. */
#include "rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_init(rng_state *rng, uint64_t seed, uint64_t stream)
{
    uint64_t mix = seed ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    rng->state = splitmix64(&mix);
}

uint64_t rng_next(rng_state *rng) { return splitmix64(&rng->state); }

uint32_t rng_below(rng_state *rng, uint32_t n)
{
    /* Lemire's multiply-shift with rejection of the short tail. */
    uint64_t m = (uint64_t)(uint32_t)(rng_next(rng) >> 32) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t tail = (uint32_t)(-n) % n;
        while (low < tail) {
            m = (uint64_t)(uint32_t)(rng_next(rng) >> 32) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

double rng_uniform(rng_state *rng) { return (double)(rng_next(rng) >> 11) * 0x1.0p-53; }

void rng_shuffle(rng_state *rng, int *values, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_below(rng, (uint32_t)i);
        int swap = values[i - 1];
        values[i - 1] = values[j];
        values[j] = swap;
    }
}

uint32_t rng_fire_stream(uint64_t seed, uint64_t round)
{
    uint64_t mix = seed ^ (round * 0x9e3779b97f4a7c15ULL);
    return (uint32_t)(splitmix64(&mix) >> 32);
}

uint32_t rng_fire_threshold(double rate)
{
    if (rate <= 0.0) return 0;
    if (rate >= 1.0) return 1u << 24;
    return (uint32_t)(rate * (double)(1u << 24) + 0.5);
}

uint32_t rng_task_stream(uint64_t seed, uint64_t round)
{
    /* A different constant from rng_fire_stream keeps start bits and fire masks independent. */
    uint64_t mix = seed ^ (round * 0xc2b2ae3d27d4eb4fULL) ^ 0x165667b19e3779f9ULL;
    return (uint32_t)(splitmix64(&mix) >> 32);
}
