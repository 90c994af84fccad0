/* ca_cpu_layer.h: the CPU reference for one gate layer and for the moore perception layer.
 * Activations are rows of `cells` doubles, cell = (b*H + y)*W + x innermost, as on the GPU.
 * Backward functions ADD into their gradient outputs (inputs can be shared), and gather
 * input gradients through the reverse wiring in a fixed order, as the GPU kernels do. */
#ifndef DLCA_CA_CPU_LAYER_H
#define DLCA_CA_CPU_LAYER_H

#include "ca_shape.h"
#include "wiring.h"

#include <stddef.h>

/* out[g][cell] = gate g (coeffs[g][4]) on rows in[w.a[g]], in[w.b[g]].
 * out: [n_out][cells]; in: n_in row pointers; coeffs: [n_out][4]. */
void gate_layer_forward(double *out, const double *const *in, const wiring *w, const double *coeffs, size_t cells);

/* din[i] += d out / d in_i (may be NULL rows to skip); coeff_grad[g] += sum_cells dout[g] * [1, a, b, ab].
 * dout: [n_out][cells]; coeff_grad: [n_out][4]. */
void gate_layer_backward(double *const *din, double *coeff_grad, const double *dout, const double *const *in,
                         const wiring *w, const double *coeffs, size_t cells);

/* The first perception layer for all kernels and channels: out[(k*C + c)*8 + i][cell] = gate (k, i)
 * on (neighbour wiring_moore_neighbour(w, k, i), centre) of channel c. grid: [C][cells]; coeffs: [K][8][4]. */
void moore_layer_forward(double *out, const double *grid, const wiring *w, const double *coeffs, int kernels,
                         int channels, ca_shape s);

/* dgrid[c][cell] += gradient through the moore layer; coeff_grad[k][i] += its S.
 * dout: [K][C][8][cells]; dgrid: [C][cells]; coeff_grad: [K][8][4]. */
void moore_layer_backward(double *dgrid, double *coeff_grad, const double *dout, const double *grid, const wiring *w,
                          const double *coeffs, int kernels, int channels, ca_shape s);

#endif
