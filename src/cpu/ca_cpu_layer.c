/* ca_cpu_layer.c: gate layer and moore layer, forward and backward, in double. */
#include "ca_cpu_layer.h"

#include "gates.h"

void gate_layer_forward(double *out, const double *const *in, const wiring *w, const double *coeffs, size_t cells)
{
    for (int g = 0; g < w->n_out; g++) {
        const double *c = coeffs + 4 * (size_t)g;
        const double *a = in[w->input_a[g]], *b = in[w->input_b[g]];
        double *y = out + (size_t)g * cells;
        for (size_t cell = 0; cell < cells; cell++) y[cell] = gate_eval(c, a[cell], b[cell]);
    }
}

/* S of one gate: sum over cells of dout * [1, a, b, ab]. */
static void gate_coeff_grad(double *s, const double *dout, const double *a, const double *b, size_t cells)
{
    for (size_t cell = 0; cell < cells; cell++) {
        double g = dout[cell];
        s[0] += g;
        s[1] += g * a[cell];
        s[2] += g * b[cell];
        s[3] += g * a[cell] * b[cell];
    }
}

void gate_layer_backward(double *const *din, double *coeff_grad, const double *dout, const double *const *in,
                         const wiring *w, const double *coeffs, size_t cells)
{
    for (int g = 0; g < w->n_out; g++)
        gate_coeff_grad(coeff_grad + 4 * (size_t)g, dout + (size_t)g * cells, in[w->input_a[g]], in[w->input_b[g]],
                        cells);
    for (int i = 0; i < w->n_in; i++) {
        double *d = din[i];
        if (!d) continue;
        for (int e = w->reverse_start[i]; e < w->reverse_start[i + 1]; e++) {
            int g = w->reverse_entry[e] >> 1, slot = w->reverse_entry[e] & 1;
            const double *c = coeffs + 4 * (size_t)g, *dy = dout + (size_t)g * cells;
            const double *other = in[slot ? w->input_a[g] : w->input_b[g]];
            for (size_t cell = 0; cell < cells; cell++)
                d[cell] += slot ? gate_grad_b(c, other[cell], dy[cell]) : gate_grad_a(c, other[cell], dy[cell]);
        }
    }
}

void moore_layer_forward(double *out, const double *grid, const wiring *w, const double *coeffs, int kernels,
                         int channels, ca_shape s)
{
    size_t cells = ca_shape_cells(s);
    for (int k = 0; k < kernels; k++)
        for (int ch = 0; ch < channels; ch++) {
            const double *row = grid + (size_t)ch * cells;
            for (int i = 0; i < 8; i++) {
                const double *c = coeffs + 4 * ((size_t)k * 8 + (size_t)i);
                double *y = out + (((size_t)k * (size_t)channels + (size_t)ch) * 8 + (size_t)i) * cells;
                for (size_t cell = 0; cell < cells; cell++)
                    y[cell] = gate_eval(c, ca_neighbour(row, s, cell, wiring_moore_neighbour(w, k, i)), row[cell]);
            }
        }
}

/* Gradient into one channel's grid row from gate (k, i): the centre slot at the same cell, and
 * the neighbour slot gathered from the cell that reads this one as its neighbour. */
static void moore_gate_backward(double *drow, double *s4, const double *dy, const double *row, int j,
                                const double *c, ca_shape s)
{
    size_t cells = ca_shape_cells(s);
    for (size_t cell = 0; cell < cells; cell++) {
        double a = ca_neighbour(row, s, cell, j), b = row[cell], g = dy[cell];
        s4[0] += g, s4[1] += g * a, s4[2] += g * b, s4[3] += g * a * b;
        drow[cell] += gate_grad_b(c, a, g);
        long long reader = ca_shifted_cell(s, cell, 1 - j / 3, 1 - j % 3);
        if (reader >= 0) drow[cell] += gate_grad_a(c, row[reader], dy[reader]);
    }
}

void moore_layer_backward(double *dgrid, double *coeff_grad, const double *dout, const double *grid, const wiring *w,
                          const double *coeffs, int kernels, int channels, ca_shape s)
{
    size_t cells = ca_shape_cells(s);
    for (int k = 0; k < kernels; k++)
        for (int ch = 0; ch < channels; ch++)
            for (int i = 0; i < 8; i++) {
                size_t gate = (size_t)k * 8 + (size_t)i;
                const double *dy = dout + (((size_t)k * (size_t)channels + (size_t)ch) * 8 + (size_t)i) * cells;
                moore_gate_backward(dgrid + (size_t)ch * cells, coeff_grad + 4 * gate, dy, grid + (size_t)ch * cells,
                                    wiring_moore_neighbour(w, k, i), coeffs + 4 * gate, s);
            }
}
