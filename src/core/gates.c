/* gates.c: the 16 ops, the matrix M, coefficients and the logit gradient. */
#include "gates.h"

#include <math.h>

_Static_assert(GATE_OP_COUNT == 16, "the op table has 16 rows");

const int gate_op_matrix[GATE_OP_COUNT][GATE_COEFFS] = {
    {0, 0, 0, 0},   /* FALSE */
    {0, 0, 0, 1},   /* AND */
    {0, 1, 0, -1},  /* A AND NOT B */
    {0, 1, 0, 0},   /* A */
    {0, 0, 1, -1},  /* NOT A AND B */
    {0, 0, 1, 0},   /* B */
    {0, 1, 1, -2},  /* XOR */
    {0, 1, 1, -1},  /* OR */
    {1, -1, -1, 1}, /* NOR */
    {1, -1, -1, 2}, /* XNOR */
    {1, 0, -1, 0},  /* NOT B */
    {1, 0, -1, 1},  /* A OR NOT B */
    {1, -1, 0, 0},  /* NOT A */
    {1, -1, 0, 1},  /* NOT A OR B */
    {1, 0, 0, -1},  /* NAND */
    {1, 0, 0, 0},   /* TRUE */
};

const char *const gate_op_names[GATE_OP_COUNT] = {
    "FALSE", "AND",  "A_AND_NOT_B", "A",           "NOT_A_AND_B", "B",          "XOR",  "OR",
    "NOR",   "XNOR", "NOT_B",       "A_OR_NOT_B", "NOT_A",       "NOT_A_OR_B", "NAND", "TRUE",
};

int gate_hard(int op, int a, int b)
{
    /* The op index is its truth table read from (a,b) = (0,0) as the high bit to (1,1) as the low bit. */
    return (op >> (3 - (2 * (a & 1) + (b & 1)))) & 1;
}

double gate_soft_op(int op, double a, double b)
{
    switch (op) {
    case GATE_FALSE: return 0.0;
    case GATE_AND: return a * b;
    case GATE_A_AND_NOT_B: return a - a * b;
    case GATE_A: return a;
    case GATE_NOT_A_AND_B: return b - a * b;
    case GATE_B: return b;
    case GATE_XOR: return a + b - 2.0 * a * b;
    case GATE_OR: return a + b - a * b;
    case GATE_NOR: return 1.0 - (a + b - a * b);
    case GATE_XNOR: return 1.0 - (a + b - 2.0 * a * b);
    case GATE_NOT_B: return 1.0 - b;
    case GATE_A_OR_NOT_B: return 1.0 - b + a * b;
    case GATE_NOT_A: return 1.0 - a;
    case GATE_NOT_A_OR_B: return 1.0 - a + a * b;
    case GATE_NAND: return 1.0 - a * b;
    default: return 1.0; /* GATE_TRUE */
    }
}

static void softmax16(double p[GATE_OP_COUNT], const double z[GATE_OP_COUNT])
{
    double top = z[0], total = 0.0;
    for (int i = 1; i < GATE_OP_COUNT; i++)
        if (z[i] > top) top = z[i];
    for (int i = 0; i < GATE_OP_COUNT; i++) {
        p[i] = exp(z[i] - top);
        total += p[i];
    }
    for (int i = 0; i < GATE_OP_COUNT; i++) p[i] /= total;
}

void gate_coefficients(double c[GATE_COEFFS], const double z[GATE_OP_COUNT])
{
    double p[GATE_OP_COUNT];
    softmax16(p, z);
    for (int k = 0; k < GATE_COEFFS; k++) {
        double sum = 0.0;
        for (int i = 0; i < GATE_OP_COUNT; i++) sum += gate_op_matrix[i][k] * p[i];
        c[k] = sum;
    }
}

void gate_hard_coefficients(double c[GATE_COEFFS], int op)
{
    for (int k = 0; k < GATE_COEFFS; k++) c[k] = gate_op_matrix[op][k];
}

void gate_logits_backward(double dz[GATE_OP_COUNT], const double z[GATE_OP_COUNT], const double s[GATE_COEFFS])
{
    double p[GATE_OP_COUNT], dp[GATE_OP_COUNT], mean = 0.0;
    softmax16(p, z);
    for (int i = 0; i < GATE_OP_COUNT; i++) {
        dp[i] = 0.0;
        for (int k = 0; k < GATE_COEFFS; k++) dp[i] += gate_op_matrix[i][k] * s[k];
        mean += p[i] * dp[i];
    }
    for (int i = 0; i < GATE_OP_COUNT; i++) dz[i] = p[i] * (dp[i] - mean);
}

int gate_argmax(const double z[GATE_OP_COUNT])
{
    int best = 0;
    for (int i = 1; i < GATE_OP_COUNT; i++)
        if (z[i] > z[best]) best = i;
    return best;
}
