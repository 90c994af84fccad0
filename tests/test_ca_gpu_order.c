/* test_ca_gpu_order: the GPU engine's gate order (src/ca_gpu_order.c) is the same model: each
 * update layer's gates a permutation of the model's, the last layer and the perception kept,
 * the same rollout and the same S (on the CPU engine, in double) with the logits moved along;
 * and it has fewer shared-memory bank conflicts than the model's own order; on the presets and
 * on a randomly wired model whose widths leave a short last half-warp. */
#include "ca_cpu.h"
#include "ca_gpu_order.h"
#include "ca_fixtures.h"
#include "check.h"
#include "error.h"
#include "gates.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_rows(const ca_model *m, const uint32_t *row)
{
    char *seen = calloc(m->gate_count, 1);
    int permutation = seen != NULL, layers_kept = 1;
    for (size_t g = 0; seen && g < m->gate_count; g++) {
        permutation &= row[g] < m->gate_count && !seen[row[g]];
        if (row[g] < m->gate_count) seen[row[g]] = 1;
    }
    const ca_config *c = &m->config;
    size_t last = m->update_gate_base[c->update_depth - 1];
    for (size_t g = 0; g < m->gate_count; g++) {
        int kept = g < m->update_gate_base[0] || g >= last;
        int l = 0;
        while (l + 1 < c->update_depth && g >= m->update_gate_base[l + 1]) l++;
        size_t end = m->update_gate_base[l] + (size_t)c->update_widths[l];
        layers_kept &= kept ? row[g] == g : row[g] >= m->update_gate_base[l] && row[g] < end;
    }
    CHECK(permutation, "%s: every gate has a row of its own", c->preset);
    CHECK(layers_kept, "%s: perception and last update layer keep their order, the others stay in their layer", c->preset);
    free(seen);
}

/* Forward and backward of T steps on the CPU engine from a random grid and logits. */
static int rollout(const ca_model *m, const double *logits, const double *start, const double *target, ca_cpu *e)
{
    if (ca_cpu_init(e, m, 1, 0, 0)) return DLCA_ERR;
    ca_cpu_coefficients(e, logits, 0);
    memcpy(ca_cpu_grid(e, 0), start, sizeof(double) * (size_t)m->config.channels * e->cells);
    ca_cpu_forward(e);
    fixture_loss(m, e->cells, ca_cpu_grid(e, m->config.steps), target, e->dgrid);
    ca_cpu_backward(e);
    return DLCA_OK;
}

static void check_same_model(const ca_model *m, const ca_model *d, const uint32_t *row)
{
    const ca_config *c = &m->config;
    size_t cells = (size_t)c->height * (size_t)c->width, n = (size_t)c->channels * cells;
    double *logits = malloc(sizeof(double) * m->gate_count * GATE_OP_COUNT);
    double *moved = malloc(sizeof(double) * m->gate_count * GATE_OP_COUNT);
    double *start = malloc(sizeof(double) * n), *target = malloc(sizeof(double) * n);
    rng_state rng;
    rng_init(&rng, 5, 1);
    for (size_t i = 0; i < m->gate_count * GATE_OP_COUNT; i++) logits[i] = 4.0 * rng_uniform(&rng) - 2.0;
    for (size_t g = 0; g < m->gate_count; g++)
        memcpy(moved + row[g] * GATE_OP_COUNT, logits + g * GATE_OP_COUNT, GATE_OP_COUNT * sizeof(double));
    for (size_t i = 0; i < n; i++) start[i] = rng_uniform(&rng), target[i] = rng_uniform(&rng);
    ca_cpu a, b;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    if (rollout(m, logits, start, target, &a) || rollout(d, moved, start, target, &b)) {
        CHECK(0, "%s: CPU engines: %s", c->preset, err_message());
    } else {
        int same_grid = memcmp(ca_cpu_grid(&a, c->steps), ca_cpu_grid(&b, c->steps), sizeof(double) * n) == 0;
        CHECK(same_grid, "%s: the reordered model rolls out to the same bits", c->preset);
        double worst = 0.0;
        for (size_t g = 0; g < m->gate_count; g++)
            for (int j = 0; j < 4; j++) {
                double x = a.coeff_grad[g * 4 + j], y = b.coeff_grad[row[g] * 4 + j];
                worst = fmax(worst, fabs(x - y) / fmax(1.0, fabs(x)));
            }
        CHECK(worst <= 1e-12, "%s: S of every gate as the model's (relative error %.3g)", c->preset, worst);
    }
    ca_cpu_free(&a), ca_cpu_free(&b);
    free(logits), free(moved), free(start), free(target);
}

static void check_config(const ca_config *config, const char *name, double most_conflicts)
{
    ca_config c = *config;
    ca_model m, d;
    if (ca_model_init(&m, &c)) {
        CHECK(0, "%s: %s", name, err_message());
        return;
    }
    uint32_t *row = malloc(sizeof(uint32_t) * m.gate_count);
    if (!row || ca_gpu_order_model(&m, &d, row)) {
        CHECK(0, "%s: ordering: %s", name, err_message());
        free(row), ca_model_free(&m);
        return;
    }
    check_rows(&m, row);
    check_same_model(&m, &d, row);
    size_t before = ca_gpu_order_conflicts(&m), after = ca_gpu_order_conflicts(&d);
    printf("%s: bank conflicts %zu in the model's order, %zu in the engine's\n", name, before, after);
    CHECK(after <= most_conflicts * before, "%s: conflicts %zu -> %zu", name, before, after);
    free(row);
    ca_model_free(&d), ca_model_free(&m);
}

static void check_preset(const char *name, double most_conflicts)
{
    ca_config c;
    if (ca_config_preset(&c, name)) {
        CHECK(0, "%s: %s", name, err_message());
        return;
    }
    check_config(&c, name, most_conflicts);
}

int main(void)
{
    check_preset("checkerboard", 0.7);
    check_preset("checkerboard-async", 0.7);
    check_preset("gol", 1.0);
    check_preset("image", 0.7);
    /* Random wiring (uneven fan-out, so banks with more gates than half-warps) and widths that
     * leave a short last half-warp. */
    ca_config odd;
    ca_config_preset(&odd, "checkerboard");
    snprintf(odd.preset, sizeof odd.preset, "random wiring 200-100-37-8");
    odd.update_wiring = WIRING_RANDOM, odd.update_depth = 4, odd.steps = 4;
    static const int widths[] = {200, 100, 37, 8};
    for (int l = 0; l < 4; l++) odd.update_widths[l] = widths[l];
    check_config(&odd, odd.preset, 0.85);
    return test_finish("test_ca_gpu_order");
}
