/* test_ca_hard: the engine's hard rollout against a separate boolean simulator written with
 * gate_hard on ints, and the soft rollout with saturated one-hot logits (1e3) against the hard
 * one: all three must agree bit for bit, on both boundaries, sync and async. */
#include "ca_cpu.h"
#include "ca_fixtures.h"
#include "ca_task.h"
#include "check.h"
#include "error.h"

#include <stdlib.h>

/* Bit of channel row `row` at neighbour j of `cell`, with its own boundary arithmetic. */
static int neighbour_bit(const int *row, ca_shape s, size_t cell, int j)
{
    size_t plane = (size_t)s.height * (size_t)s.width;
    int y = (int)(cell % plane) / s.width + j / 3 - 1, x = (int)(cell % plane) % s.width + j % 3 - 1;
    if (s.boundary == CA_BOUNDARY_ZERO && (y < 0 || y >= s.height || x < 0 || x >= s.width)) return 0;
    y = (y + s.height) % s.height, x = (x + s.width) % s.width;
    return row[cell / plane * plane + (size_t)y * (size_t)s.width + (size_t)x];
}

/* One cell's update as a pure boolean circuit. `bits` holds the whole grid [C][cells]. */
static void boolean_cell(const ca_model *m, ca_shape s, const int *ops, const int *bits, size_t cell, int *out)
{
    const ca_config *c = &m->config;
    size_t cells = ca_shape_cells(s);
    int input[4096], layer[8], next[4096], width_in = c->channels;
    for (int ch = 0; ch < c->channels; ch++) input[ch] = bits[(size_t)ch * cells + cell];
    for (int k = 0; k < c->kernels; k++)
        for (int ch = 0; ch < c->channels; ch++) {
            const int *row = bits + (size_t)ch * cells;
            int width = 8, order = c->perception_wiring == CA_PERCEPTION_PER_KERNEL ? 8 * k : 0;
            for (int g = 0; g < 8; g++)
                layer[g] = gate_hard(ops[m->perception_gate_base[0] + (size_t)k * 8 + (size_t)g],
                                     neighbour_bit(row, s, cell, m->perception[0].input_a[order + g]), row[cell]);
            for (int l = 1; l < c->perception_depth; l++) {
                const wiring *w = &m->perception[l];
                for (int g = 0; g < w->n_out; g++)
                    next[g] = gate_hard(ops[m->perception_gate_base[l] + (size_t)k * (size_t)w->n_out + (size_t)g],
                                        layer[w->input_a[g]], layer[w->input_b[g]]);
                width = w->n_out;
                for (int g = 0; g < width; g++) layer[g] = next[g];
            }
            for (int g = 0; g < width; g++) input[width_in++] = layer[g];
        }
    for (int l = 0; l < c->update_depth; l++) {
        const wiring *w = &m->update[l];
        for (int g = 0; g < w->n_out; g++)
            next[g] = gate_hard(ops[m->update_gate_base[l] + (size_t)g], input[w->input_a[g]], input[w->input_b[g]]);
        for (int g = 0; g < w->n_out; g++) input[g] = next[g];
    }
    for (int ch = 0; ch < c->channels; ch++) out[ch] = input[ch];
}

static void test_case(ca_boundary boundary, double fire_rate, int bits_out, ca_perception_wiring perception)
{
    ca_config config;
    tiny_config(&config, boundary, fire_rate, bits_out, 4);
    config.perception_wiring = perception;
    ca_model model;
    ca_cpu engine;
    if (ca_model_init(&model, &config) || ca_cpu_init(&engine, &model, 2, 0, 0)) {
        CHECK(0, "set-up: %s", err_message());
        return;
    }
    size_t gates = model.gate_count, cells = engine.cells, n_grid = (size_t)config.channels * cells;
    double *logits = malloc(gates * 16 * sizeof(double)), *saturated = calloc(gates * 16, sizeof(double));
    double *start = malloc(n_grid * sizeof(double)), *hard_final = malloc(n_grid * sizeof(double));
    int *ops = malloc(gates * sizeof(int)), *bits = malloc(n_grid * sizeof(int)), *next_bits = malloc(n_grid * sizeof(int));
    rng_state rng;
    rng_init(&rng, 21, (uint64_t)boundary * 4 + (uint64_t)bits_out);
    random_logits(logits, gates, 3.0, &rng);
    for (size_t g = 0; g < gates; g++) saturated[g * 16 + (size_t)(ops[g] = gate_argmax(logits + g * 16))] = 1e3;
    ca_task_start(&config, engine.shape, 0, start);
    ca_cpu_set_fire_stream(&engine, 99);

    ca_cpu_coefficients(&engine, logits, 1);
    memcpy(ca_cpu_grid(&engine, 0), start, n_grid * sizeof(double));
    ca_cpu_forward(&engine);
    memcpy(hard_final, ca_cpu_grid(&engine, config.steps), n_grid * sizeof(double));

    ca_cpu_coefficients(&engine, saturated, 0);
    memcpy(ca_cpu_grid(&engine, 0), start, n_grid * sizeof(double));
    ca_cpu_forward(&engine);
    CHECK(memcmp(hard_final, ca_cpu_grid(&engine, config.steps), n_grid * sizeof(double)) == 0,
          "%s fire %.1f %d-bit: saturated soft rollout equals the hard rollout", ca_boundary_name(boundary), fire_rate, bits_out);

    for (size_t i = 0; i < n_grid; i++) bits[i] = (int)start[i];
    uint32_t threshold = rng_fire_threshold(fire_rate);
    for (int t = 0; t < config.steps; t++) {
        for (size_t cell = 0; cell < cells; cell++) {
            int out[64];
            boolean_cell(&model, engine.shape, ops, bits, cell, out);
            int fire = rng_fires(99, (uint32_t)t, (uint32_t)cell, threshold);
            for (int ch = 0; ch < config.channels; ch++)
                next_bits[(size_t)ch * cells + cell] = fire ? out[ch] : bits[(size_t)ch * cells + cell];
        }
        memcpy(bits, next_bits, n_grid * sizeof(int));
    }
    int same = 1, ones = 0;
    for (size_t i = 0; i < n_grid; i++) same &= bits[i] == (int)hard_final[i], ones += bits[i];
    CHECK(same, "%s fire %.1f %d-bit: hard rollout equals the boolean simulator", ca_boundary_name(boundary), fire_rate,
          bits_out);
    printf("%s fire %.1f %d-bit: %d of %zu bits set after %d steps\n", ca_boundary_name(boundary), fire_rate, bits_out,
           ones, n_grid, config.steps);
    free(logits), free(saturated), free(start), free(hard_final), free(ops), free(bits), free(next_bits);
    ca_cpu_free(&engine);
    ca_model_free(&model);
}

int main(void)
{
    for (int boundary = 0; boundary < 2; boundary++)
        for (int bits = 1; bits <= 2; bits++) {
            test_case((ca_boundary)boundary, 1.0, bits, CA_PERCEPTION_SHARED);
            test_case((ca_boundary)boundary, 0.6, bits, CA_PERCEPTION_SHARED);
            test_case((ca_boundary)boundary, 1.0, bits, CA_PERCEPTION_PER_KERNEL); /* a moore order a kernel */
        }
    return test_finish("test_ca_hard");
}
