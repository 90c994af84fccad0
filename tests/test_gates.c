/* test_gates: the 16 ops' truth tables, soft ops, the coefficient identity, and the gate's
 * gradients against central finite differences. */
#include "check.h"
#include "gates.h"
#include "rng.h"

/* Each op written as the C boolean expression its name says. */
static int named_op(int op, int a, int b)
{
    switch (op) {
    case GATE_FALSE: return 0;
    case GATE_AND: return a && b;
    case GATE_A_AND_NOT_B: return a && !b;
    case GATE_A: return a;
    case GATE_NOT_A_AND_B: return !a && b;
    case GATE_B: return b;
    case GATE_XOR: return a != b;
    case GATE_OR: return a || b;
    case GATE_NOR: return !(a || b);
    case GATE_XNOR: return a == b;
    case GATE_NOT_B: return !b;
    case GATE_A_OR_NOT_B: return a || !b;
    case GATE_NOT_A: return !a;
    case GATE_NOT_A_OR_B: return !a || b;
    case GATE_NAND: return !(a && b);
    case GATE_TRUE: return 1;
    }
    return -1;
}

static void test_truth_tables(void)
{
    for (int op = 0; op < GATE_OP_COUNT; op++)
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                int want = named_op(op, a, b);
                CHECK(gate_hard(op, a, b) == want, "%s(%d,%d)", gate_op_names[op], a, b);
                CHECK(gate_soft_op(op, a, b) == want, "soft %s(%d,%d)", gate_op_names[op], a, b);
                double c[4];
                gate_hard_coefficients(c, op);
                CHECK(gate_eval(c, a, b) == want, "hard coefficients %s(%d,%d)", gate_op_names[op], a, b);
            }
    CHECK(gate_hard(GATE_AND, 1, 1) == 1 && gate_hard(GATE_AND, 1, 0) == 0, "AND spot check");
}

/* The matrix row reproduces the table formula everywhere in [0,1]^2, and
 * c = M^T softmax(z) gives the softmax-weighted mix of the 16 relaxed ops. */
static void test_soft_forms(void)
{
    rng_state rng;
    rng_init(&rng, 3, 0);
    for (int trial = 0; trial < 200; trial++) {
        double a = rng_uniform(&rng), b = rng_uniform(&rng), z[16], c[4], p[16], total = 0.0, top = -1e300;
        for (int op = 0; op < 16; op++) {
            double row[4];
            gate_hard_coefficients(row, op);
            CHECK_CLOSE(gate_eval(row, a, b), gate_soft_op(op, a, b), 1e-15, 0.0, "op %d", op);
        }
        for (int i = 0; i < 16; i++) z[i] = (trial % 2 ? 400.0 : 3.0) * (rng_uniform(&rng) - 0.5);
        for (int i = 0; i < 16; i++) top = z[i] > top ? z[i] : top;
        for (int i = 0; i < 16; i++) total += (p[i] = exp(z[i] - top));
        double mix = 0.0;
        for (int i = 0; i < 16; i++) mix += p[i] / total * gate_soft_op(i, a, b);
        gate_coefficients(c, z);
        CHECK(isfinite(c[0]) && isfinite(c[3]), "coefficients finite for large logits");
        CHECK_CLOSE(gate_eval(c, a, b), mix, 1e-13, 0.0, "trial %d", trial);
    }
}

static void test_argmax_ties(void)
{
    double z[16] = {0};
    CHECK(gate_argmax(z) == 0, "all ties give op 0");
    z[5] = z[9] = 2.0;
    CHECK(gate_argmax(z) == 5, "lowest index wins a tie");
    z[12] = 2.5;
    CHECK(gate_argmax(z) == 12, "strict max");
}

/* y(z, a, b) = gate_eval(M^T softmax z, a, b); its derivatives against central differences. */
static void test_gate_gradients(void)
{
    const double eps = 1e-6;
    rng_state rng;
    rng_init(&rng, 4, 0);
    for (int trial = 0; trial < 50; trial++) {
        double z[16], c[4], a = rng_uniform(&rng), b = rng_uniform(&rng), g = rng_uniform(&rng) - 0.5;
        for (int i = 0; i < 16; i++) z[i] = 4.0 * rng_uniform(&rng) - 2.0;
        gate_coefficients(c, z);
        double s[4] = {g, g * a, g * b, g * a * b}, dz[16];
        gate_logits_backward(dz, z, s);
        double worst = 0.0, scale = 0.0;
        for (int i = 0; i < 16; i++) {
            double zp[16], zm[16], cp[4], cm[4];
            for (int j = 0; j < 16; j++) zp[j] = zm[j] = z[j];
            zp[i] += eps, zm[i] -= eps;
            gate_coefficients(cp, zp), gate_coefficients(cm, zm);
            double fd = g * (gate_eval(cp, a, b) - gate_eval(cm, a, b)) / (2 * eps);
            worst = fmax(worst, fabs(fd - dz[i]));
            scale = fmax(scale, fabs(dz[i]));
        }
        CHECK(worst <= 1e-6 * scale, "trial %d: logits relative error %.3g", trial, worst / scale);
        double fd_a = g * (gate_eval(c, a + eps, b) - gate_eval(c, a - eps, b)) / (2 * eps);
        double fd_b = g * (gate_eval(c, a, b + eps) - gate_eval(c, a, b - eps)) / (2 * eps);
        CHECK_CLOSE(gate_grad_a(c, b, g), fd_a, 1e-12, 1e-6, "d/da trial %d", trial);
        CHECK_CLOSE(gate_grad_b(c, a, g), fd_b, 1e-12, 1e-6, "d/db trial %d", trial);
    }
}

int main(void)
{
    test_truth_tables();
    test_soft_forms();
    test_argmax_ties();
    test_gate_gradients();
    return test_finish("test_gates");
}
