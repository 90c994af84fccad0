/* test_ca_gradcheck: every backward of the CPU engine against central finite differences in
 * double (eps 1e-6): a gate layer, the moore perception layer, one CA step and a 3-step
 * rollout (its loss at the final grid, or at grids 1..3: a window loss), for both boundaries, sync and async (fixed mask), 1-bit and 2-bit perception.
 * Errors are relative to the largest gradient magnitude and must stay below 1e-6. */
#include "ca_cpu.h"
#include "ca_fixtures.h"
#include "check.h"
#include "error.h"

#include <stdlib.h>

static const double eps = 1e-6, tolerance = 1e-6;

static double weighted_sum(const double *values, const double *weights, size_t n)
{
    double total = 0.0;
    for (size_t i = 0; i < n; i++) total += values[i] * weights[i];
    return total;
}

static void all_coefficients(double *coeffs, const double *logits, size_t gates)
{
    for (size_t g = 0; g < gates; g++) gate_coefficients(coeffs + 4 * g, logits + 16 * g);
}

/* ---- one gate layer: loss = sum(weights * out) ---- */
typedef struct {
    wiring w;
    size_t cells;
    double *inputs, *weights, *logits, *coeffs, *out;
    const double **rows;
} layer_case;

static double layer_loss(layer_case *lc)
{
    all_coefficients(lc->coeffs, lc->logits, (size_t)lc->w.n_out);
    gate_layer_forward(lc->out, lc->rows, &lc->w, lc->coeffs, lc->cells);
    return weighted_sum(lc->out, lc->weights, (size_t)lc->w.n_out * lc->cells);
}

/* Central difference of `loss` in every element of `values`. */
static void finite_differences(double *fd, double *values, size_t n, double (*loss)(void *), void *context)
{
    for (size_t i = 0; i < n; i++) {
        double keep = values[i];
        values[i] = keep + eps;
        double up = loss(context);
        values[i] = keep - eps;
        double down = loss(context);
        values[i] = keep;
        fd[i] = (up - down) / (2 * eps);
    }
}

static double layer_loss_thunk(void *context) { return layer_loss(context); }

static void test_gate_layer(wiring_kind kind, int n_in, int n_out)
{
    layer_case lc = {.cells = 6};
    rng_state rng;
    rng_init(&rng, 11, (uint64_t)n_in);
    CHECK(wiring_init(&lc.w, kind, n_in, n_out, &rng) == DLCA_OK, "wiring: %s", err_message());
    size_t n_values = (size_t)n_in * lc.cells, n_out_values = (size_t)n_out * lc.cells, n_logits = (size_t)n_out * 16;
    lc.inputs = malloc(n_values * sizeof(double)), lc.weights = malloc(n_out_values * sizeof(double));
    lc.logits = malloc(n_logits * sizeof(double)), lc.coeffs = malloc((size_t)n_out * 4 * sizeof(double));
    lc.out = malloc(n_out_values * sizeof(double)), lc.rows = malloc((size_t)n_in * sizeof(double *));
    double *din = calloc(n_values, sizeof(double)), **din_rows = malloc((size_t)n_in * sizeof(double *));
    double *s = calloc((size_t)n_out * 4, sizeof(double)), *dlogits = malloc(n_logits * sizeof(double));
    double *fd_in = malloc(n_values * sizeof(double)), *fd_logits = malloc(n_logits * sizeof(double));
    random_unit(lc.inputs, n_values, &rng), random_logits(lc.logits, (size_t)n_out, 2.0, &rng);
    for (size_t i = 0; i < n_out_values; i++) lc.weights[i] = 2.0 * rng_uniform(&rng) - 1.0;
    for (int i = 0; i < n_in; i++) lc.rows[i] = lc.inputs + (size_t)i * lc.cells, din_rows[i] = din + (size_t)i * lc.cells;

    layer_loss(&lc);
    gate_layer_backward(din_rows, s, lc.weights, lc.rows, &lc.w, lc.coeffs, lc.cells);
    for (int g = 0; g < n_out; g++) gate_logits_backward(dlogits + 16 * g, lc.logits + 16 * g, s + 4 * g);
    finite_differences(fd_in, lc.inputs, n_values, layer_loss_thunk, &lc);
    finite_differences(fd_logits, lc.logits, n_logits, layer_loss_thunk, &lc);
    double e_in = relative_error(din, fd_in, n_values), e_logits = relative_error(dlogits, fd_logits, n_logits);
    CHECK(e_in < tolerance, "%s layer %d->%d input gradient relative error %.3g", wiring_kind_name(kind), n_in, n_out, e_in);
    CHECK(e_logits < tolerance, "%s layer %d->%d logit gradient relative error %.3g", wiring_kind_name(kind), n_in, n_out,
          e_logits);
    free(lc.inputs), free(lc.weights), free(lc.logits), free(lc.coeffs), free(lc.out), free((void *)lc.rows);
    free(din), free(din_rows), free(s), free(dlogits), free(fd_in), free(fd_logits);
    wiring_free(&lc.w);
}

/* ---- the moore layer: loss = sum(weights * out) over K kernels x C channels ---- */
typedef struct {
    wiring w;
    ca_shape shape;
    int kernels, channels;
    double *grid, *weights, *logits, *coeffs, *out;
} moore_case;

static double moore_loss(void *context)
{
    moore_case *mc = context;
    all_coefficients(mc->coeffs, mc->logits, (size_t)mc->kernels * 8);
    moore_layer_forward(mc->out, mc->grid, &mc->w, mc->coeffs, mc->kernels, mc->channels, mc->shape);
    return weighted_sum(mc->out, mc->weights, (size_t)mc->kernels * (size_t)mc->channels * 8 * ca_shape_cells(mc->shape));
}

/* orders: 1 (every kernel's gate i reads the same neighbour) or 2 (a neighbour order a kernel). */
static void test_moore_layer(ca_boundary boundary, int orders)
{
    moore_case mc = {.shape = {2, 3, 4, boundary}, .kernels = 2, .channels = 2};
    rng_state rng;
    rng_init(&rng, 12, boundary);
    wiring_init(&mc.w, WIRING_MOORE, 9, 8 * orders, &rng);
    size_t cells = ca_shape_cells(mc.shape), n_grid = 2 * cells, n_out = 2 * 2 * 8 * cells, n_logits = 2 * 8 * 16;
    mc.grid = malloc(n_grid * sizeof(double)), mc.weights = malloc(n_out * sizeof(double));
    mc.logits = malloc(n_logits * sizeof(double)), mc.coeffs = malloc(2 * 8 * 4 * sizeof(double));
    mc.out = malloc(n_out * sizeof(double));
    double *dgrid = calloc(n_grid, sizeof(double)), *s = calloc(2 * 8 * 4, sizeof(double));
    double *dlogits = malloc(n_logits * sizeof(double)), *fd_grid = malloc(n_grid * sizeof(double));
    double *fd_logits = malloc(n_logits * sizeof(double));
    random_unit(mc.grid, n_grid, &rng), random_logits(mc.logits, 16, 2.0, &rng);
    for (size_t i = 0; i < n_out; i++) mc.weights[i] = 2.0 * rng_uniform(&rng) - 1.0;

    moore_loss(&mc);
    moore_layer_backward(dgrid, s, mc.weights, mc.grid, &mc.w, mc.coeffs, 2, 2, mc.shape);
    for (int g = 0; g < 16; g++) gate_logits_backward(dlogits + 16 * g, mc.logits + 16 * g, s + 4 * g);
    finite_differences(fd_grid, mc.grid, n_grid, moore_loss, &mc);
    finite_differences(fd_logits, mc.logits, n_logits, moore_loss, &mc);
    double e_grid = relative_error(dgrid, fd_grid, n_grid), e_logits = relative_error(dlogits, fd_logits, n_logits);
    CHECK(e_grid < tolerance, "moore (%s, %d orders) grid gradient relative error %.3g", ca_boundary_name(boundary),
          orders, e_grid);
    CHECK(e_logits < tolerance, "moore (%s, %d orders) logit gradient relative error %.3g", ca_boundary_name(boundary),
          orders, e_logits);
    free(mc.grid), free(mc.weights), free(mc.logits), free(mc.coeffs), free(mc.out);
    free(dgrid), free(s), free(dlogits), free(fd_grid), free(fd_logits);
    wiring_free(&mc.w);
}

/* ---- a whole rollout of the engine: loss = sum of squares against a random target; with a
 * window from step `from` (< T) the sum over grids from..T of (t + 1) x theirs (ca_cpu_backward_window;
 * the weights tell the grids' blocks apart) ---- */
typedef struct {
    ca_model model;
    ca_cpu engine;
    double *logits, *grid0, *target;
    int from; /* T: the final grid's loss alone */
} rollout_case;

static double rollout_loss(void *context)
{
    rollout_case *rc = context;
    size_t n_grid = (size_t)rc->model.config.channels * rc->engine.cells;
    ca_cpu_coefficients(&rc->engine, rc->logits, 0);
    memcpy(ca_cpu_grid(&rc->engine, 0), rc->grid0, n_grid * sizeof(double));
    ca_cpu_forward(&rc->engine);
    int steps = rc->model.config.steps;
    double loss = 0.0;
    for (int t = rc->from; t <= steps; t++)
        loss += (rc->from < steps ? t + 1 : 1) *
                fixture_loss(&rc->model, rc->engine.cells, ca_cpu_grid(&rc->engine, t), rc->target, NULL);
    return loss;
}

/* The window's loss gradient: the final grid's into dgrid, grids from..T-1's into dwindow. */
static void window_gradient(rollout_case *rc, double *dwindow)
{
    int steps = rc->model.config.steps;
    size_t cells = rc->engine.cells, n = (size_t)rc->model.config.channels * cells;
    size_t rows = (size_t)rc->model.config.loss_channels * cells;
    double *d = malloc(n * sizeof(double));
    for (int t = rc->from; t <= steps; t++) {
        fixture_loss(&rc->model, cells, ca_cpu_grid(&rc->engine, t), rc->target, d);
        double w = rc->from < steps ? t + 1 : 1;
        double *to = t == steps ? rc->engine.dgrid : dwindow + (size_t)(t - rc->from) * rows;
        for (size_t i = 0; i < (t == steps ? n : rows); i++) to[i] = w * d[i];
    }
    free(d);
}

static void test_rollout(ca_boundary boundary, double fire_rate, int bits, int steps, int from,
                         ca_perception_wiring perception)
{
    rollout_case rc;
    ca_config config;
    tiny_config(&config, boundary, fire_rate, bits, steps);
    config.perception_wiring = perception;
    if (ca_model_init(&rc.model, &config) || ca_cpu_init(&rc.engine, &rc.model, 2, 0, 0)) {
        CHECK(0, "set-up: %s", err_message());
        return;
    }
    ca_cpu_set_fire_stream(&rc.engine, 12345);
    size_t n_logits = rc.model.gate_count * 16, n_grid = (size_t)config.channels * rc.engine.cells;
    rc.logits = malloc(n_logits * sizeof(double)), rc.grid0 = malloc(n_grid * sizeof(double));
    rc.target = malloc(n_grid * sizeof(double));
    double *dlogits = malloc(n_logits * sizeof(double)), *fd_logits = malloc(n_logits * sizeof(double));
    double *dgrid0 = malloc(n_grid * sizeof(double)), *fd_grid = malloc(n_grid * sizeof(double));
    rng_state rng;
    rng_init(&rng, 13, (uint64_t)steps);
    peaked_logits(rc.logits, rc.model.gate_count, &rng);
    random_unit(rc.grid0, n_grid, &rng), random_unit(rc.target, n_grid, &rng);

    rc.from = from;
    double *dwindow = malloc((size_t)(steps + 1) * n_grid * sizeof(double));
    rollout_loss(&rc);
    window_gradient(&rc, dwindow);
    if (from < steps) ca_cpu_backward_window(&rc.engine, dwindow, from);
    else ca_cpu_backward(&rc.engine);
    free(dwindow);
    fixture_logits_gradient(&rc.model, rc.engine.coeff_grad, rc.logits, dlogits);
    memcpy(dgrid0, rc.engine.dgrid, n_grid * sizeof(double));
    finite_differences(fd_logits, rc.logits, n_logits, rollout_loss, &rc);
    finite_differences(fd_grid, rc.grid0, n_grid, rollout_loss, &rc);
    double e_logits = relative_error(dlogits, fd_logits, n_logits), e_grid = relative_error(dgrid0, fd_grid, n_grid);
    const char *mode = fire_rate < 1.0 ? "async" : "sync";
    const char *order = perception == CA_PERCEPTION_PER_KERNEL ? ", a moore order a kernel" : "";
    CHECK(e_logits < tolerance, "T=%d (loss from %d) %s %s %d-bit%s: logit gradient relative error %.3g", steps, from,
          ca_boundary_name(boundary), mode, bits, order, e_logits);
    CHECK(e_grid < tolerance, "T=%d (loss from %d) %s %s %d-bit%s: start-grid gradient relative error %.3g", steps,
          from, ca_boundary_name(boundary), mode, bits, order, e_grid);
    double largest = 0.0;
    for (size_t i = 0; i < n_logits; i++) largest = fmax(largest, fabs(dlogits[i]));
    CHECK(largest > 1e-6, "gradients are not vanishing (largest %.3g)", largest);
    free(rc.logits), free(rc.grid0), free(rc.target), free(dlogits), free(fd_logits), free(dgrid0), free(fd_grid);
    ca_cpu_free(&rc.engine);
    ca_model_free(&rc.model);
}

int main(void)
{
    test_gate_layer(WIRING_UNIQUE, 7, 5);
    test_gate_layer(WIRING_UNIQUE, 10, 6);
    test_gate_layer(WIRING_RANDOM, 4, 9);
    for (int orders = 1; orders <= 2; orders++) {
        test_moore_layer(CA_BOUNDARY_PERIODIC, orders);
        test_moore_layer(CA_BOUNDARY_ZERO, orders);
    }
    for (int boundary = 0; boundary < 2; boundary++)
        for (int async = 0; async < 2; async++)
            for (int bits = 1; bits <= 2; bits++) {
                test_rollout((ca_boundary)boundary, async ? 0.6 : 1.0, bits, 1, 1, CA_PERCEPTION_SHARED);
                test_rollout((ca_boundary)boundary, async ? 0.6 : 1.0, bits, 3, 3, CA_PERCEPTION_SHARED);
                test_rollout((ca_boundary)boundary, async ? 0.6 : 1.0, bits, 3, 1, CA_PERCEPTION_SHARED); /* a window */
                test_rollout((ca_boundary)boundary, async ? 0.6 : 1.0, bits, 1, 1, CA_PERCEPTION_PER_KERNEL);
                test_rollout((ca_boundary)boundary, async ? 0.6 : 1.0, bits, 2, 2, CA_PERCEPTION_PER_KERNEL);
            }
    return test_finish("test_ca_gradcheck");
}
