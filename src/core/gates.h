/* gates.h: the 16 binary boolean ops, their relaxations and the 4-coefficient form.
 * Every relaxed op is m0 + m1 a + m2 b + m3 ab for a row m of gate_op_matrix, so a soft
 * gate with probabilities p = softmax(z) is y = c0 + c1 a + c2 b + c3 ab with c = M^T p. */
#ifndef DLCA_GATES_H
#define DLCA_GATES_H

enum { GATE_OP_COUNT = 16, GATE_COEFFS = 4 };

/* Op indices; the order is part of the model file format. */
typedef enum {
    GATE_FALSE, GATE_AND, GATE_A_AND_NOT_B, GATE_A, GATE_NOT_A_AND_B, GATE_B, GATE_XOR, GATE_OR,
    GATE_NOR, GATE_XNOR, GATE_NOT_B, GATE_A_OR_NOT_B, GATE_NOT_A, GATE_NOT_A_OR_B, GATE_NAND, GATE_TRUE
} gate_op;

/* Row i holds (m0, m1, m2, m3) of op i. */
extern const int gate_op_matrix[GATE_OP_COUNT][GATE_COEFFS];

/* Display names ("AND", "A_AND_NOT_B", ...). */
extern const char *const gate_op_names[GATE_OP_COUNT];

/* Hard op on bits a, b in {0,1}. */
int gate_hard(int op, int a, int b);

/* Relaxed op i on a, b in [0,1], written as the table formula (the reference for tests). */
double gate_soft_op(int op, double a, double b);

/* c = M^T softmax(z), with a max-shifted softmax so large logits do not overflow. */
void gate_coefficients(double c[GATE_COEFFS], const double z[GATE_OP_COUNT]);

/* c = row `op` of M: the coefficients of a hard gate. */
void gate_hard_coefficients(double c[GATE_COEFFS], int op);

/* y = c0 + c1 a + c2 b + c3 ab, clamped to [0, 1]. Exact arithmetic never leaves [0, 1]; the
 * clamp removes rounding that would otherwise escape it: outside [0, 1] the relaxed ops amplify
 * (unclamped, a float rollout of a trained lizard goes from -3e-6 to NaN in 10 steps). The
 * gradients treat it as the identity, as exact arithmetic does. The CPU engines clamp by
 * comparisons that keep a NaN a NaN; a GPU driver may turn the same comparisons into a
 * saturation that does not (NVIDIA's does), so training finds a NaN at the logits gradient, on
 * every engine, not in the forward values. */
static inline double gate_eval(const double c[GATE_COEFFS], double a, double b)
{
    double y = c[0] + c[1] * a + c[2] * b + c[3] * a * b;
    return y < 0.0 ? 0.0 : y > 1.0 ? 1.0 : y;
}

/* d/da and d/db of gate_eval, times the upstream gradient g. */
static inline double gate_grad_a(const double c[GATE_COEFFS], double b, double g) { return g * (c[1] + c[3] * b); }
static inline double gate_grad_b(const double c[GATE_COEFFS], double a, double g) { return g * (c[2] + c[3] * a); }

/* Logit gradient from S = sum over evaluations of g [1, a, b, ab]:
 * dp = M S, dz_i = p_i (dp_i - sum_j p_j dp_j). */
void gate_logits_backward(double dz[GATE_OP_COUNT], const double z[GATE_OP_COUNT], const double s[GATE_COEFFS]);

/* argmax z, lowest index on ties: the op a trained gate snaps to. */
int gate_argmax(const double z[GATE_OP_COUNT]);

#endif
