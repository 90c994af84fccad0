/* rng.h: seeded randomness. A sequential generator (splitmix64) for wiring and start states,
 * and a counter-based hash for the async fire mask, so the CPU and the GPU draw the same mask
 * for the same (stream, step, cell) without sharing any state. */
#ifndef DLCA_RNG_H
#define DLCA_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t state;
} rng_state;

/* A generator for substream `stream` of `seed`: distinct streams are independent. */
void rng_init(rng_state *rng, uint64_t seed, uint64_t stream);

/* Next 64 random bits. */
uint64_t rng_next(rng_state *rng);

/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint32_t rng_below(rng_state *rng, uint32_t n);

/* Uniform double in [0, 1) with 53 random bits. */
double rng_uniform(rng_state *rng);

/* Fisher-Yates shuffle of `values[0..n)`. */
void rng_shuffle(rng_state *rng, int *values, size_t n);

/* A 32-bit integer hash (lowbias32); glsl/common.glsl holds the same function. */
static inline uint32_t rng_hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* Fire-mask stream for one rollout: mixes the seed with the training round. */
uint32_t rng_fire_stream(uint64_t seed, uint64_t round);

/* 24-bit threshold for fire rate r in [0,1]: a cell fires when its 24-bit draw is below it. */
uint32_t rng_fire_threshold(double rate);

/* Does `cell` fire at CA step `t`? Uses only 32-bit integer ops so GLSL matches bit for bit. */
static inline int rng_fires(uint32_t stream, uint32_t t, uint32_t cell, uint32_t threshold)
{
    return (rng_hash32(rng_hash32(stream ^ rng_hash32(t)) ^ cell) >> 8) < threshold;
}

/* Start-state stream for training round `round`: what every random start bit of that round is
 * drawn from, on the CPU and (glsl/task_round.comp) the GPU alike. */
uint32_t rng_task_stream(uint64_t seed, uint64_t round);

/* 32 random bits for item `index` of a stream: bit 31 gives a random cell bit, and the value
 * modulo 512 a uniform 3x3 board (2^32 is a multiple of 512). */
static inline uint32_t rng_task_draw(uint32_t stream, uint32_t index)
{
    return rng_hash32(stream ^ rng_hash32(index + 0x9e3779b9U));
}

#endif
