/* tn_ops_ew.c: elementwise ops (binary with NumPy broadcasting, unary, scalar) and their
 * backward passes. Broadcasting is done by views with stride 0, so the kernels only ever see
 * operands of the output's shape; backward sums gradients back over the broadcast dims. */
#include "tn_internal.h"
#include "tn_ops.h"

#include "error.h"

#include <stdio.h>

/* ---- forward helpers (no recording) ---- */

tn_tensor *tn__binary(const char *op, tn_bfn fn, double s0, double s1, tn_tensor *a, tn_tensor *b)
{
    size_t shape[TN_MAX_DIMS];
    int ndim;
    if (!a || !b) return tn__null(op), NULL;
    if (tn__check_pair(op, a, b) != DLCA_OK) return NULL;
    if (tn_broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, &ndim, shape) != DLCA_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", err_message());
        err_set(DLCA_ERR, "%s: %s", op, why);
        return NULL;
    }
    const tn_backend *be = tn__backend_of(a);
    tn_tensor *y = tn__empty_like(a, ndim, shape);
    if (!y) return NULL;
    tn_tensor av, bv;
    tn__expanded(&av, a, ndim, shape);
    tn__expanded(&bv, b, ndim, shape);
    if (be->binary(fn, s0, s1, y, &av, &bv) != DLCA_OK) {
        tn_free(y);
        return NULL;
    }
    return y;
}

tn_tensor *tn__unary(const char *op, tn_ufn fn, double s0, double s1, tn_tensor *a)
{
    if (!a) return tn__null(op), NULL;
    const tn_backend *be = tn__backend_of(a);
    tn_tensor *y = tn__empty_like(a, a->ndim, a->shape);
    if (y && be->unary(fn, s0, s1, y, a) != DLCA_OK) {
        tn_free(y);
        return NULL;
    }
    return y;
}

/* Stores g summed to in's shape into *gin, consuming g. */
static int to_input(tn_tensor *g, const tn_tensor *in, tn_tensor **gin)
{
    *gin = g ? tn__sum_to(g, in->ndim, in->shape) : NULL;
    tn_free(g);
    return *gin ? DLCA_OK : DLCA_ERR;
}

static int wants(const tn_node *n, int i) { return n->in[i]->requires_grad; }

/* ---- binary ops ---- */

static int add_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    if (wants(n, 0) && to_input(tn_retain(g), n->in[0], &gin[0]) != DLCA_OK) return DLCA_ERR;
    if (wants(n, 1) && to_input(tn_retain(g), n->in[1], &gin[1]) != DLCA_OK) return DLCA_ERR;
    return DLCA_OK;
}

static int sub_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    if (wants(n, 0) && to_input(tn_retain(g), n->in[0], &gin[0]) != DLCA_OK) return DLCA_ERR;
    if (wants(n, 1) && to_input(tn__unary("sub", TN_U_NEG, 0, 0, g), n->in[1], &gin[1]) != DLCA_OK) return DLCA_ERR;
    return DLCA_OK;
}

static int mul_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    if (wants(n, 0) && to_input(tn_mul(g, n->in[1]), n->in[0], &gin[0]) != DLCA_OK) return DLCA_ERR;
    if (wants(n, 1) && to_input(tn_mul(g, n->in[0]), n->in[1], &gin[1]) != DLCA_OK) return DLCA_ERR;
    return DLCA_OK;
}

static int div_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    if (wants(n, 0) && to_input(tn_div(g, n->in[1]), n->in[0], &gin[0]) != DLCA_OK) return DLCA_ERR;
    if (wants(n, 1)) {
        /* d(a/b)/db = -(a/b)/b = -y/b */
        tn_tensor *gy = tn_mul(g, out);
        tn_tensor *q = tn_div(gy, n->in[1]);
        tn_free(gy);
        tn_tensor *neg = tn_neg(q);
        tn_free(q);
        if (to_input(neg, n->in[1], &gin[1]) != DLCA_OK) return DLCA_ERR;
    }
    return DLCA_OK;
}

static int pow_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    tn_tensor *a = n->in[0], *b = n->in[1];
    if (wants(n, 0)) {
        /* b * a**(b-1) */
        tn_tensor *bm1 = tn_add_scalar(b, -1.0);
        tn_tensor *p = tn_pow(a, bm1);
        tn_tensor *bp = tn_mul(p, b);
        tn_tensor *gp = tn_mul(g, bp);
        tn_free(bm1);
        tn_free(p);
        tn_free(bp);
        if (to_input(gp, a, &gin[0]) != DLCA_OK) return DLCA_ERR;
    }
    if (wants(n, 1)) {
        /* a**b * log(a) */
        tn_tensor *la = tn_log(a);
        tn_tensor *yl = tn_mul(out, la);
        tn_tensor *gy = tn_mul(g, yl);
        tn_free(la);
        tn_free(yl);
        if (to_input(gy, b, &gin[1]) != DLCA_OK) return DLCA_ERR;
    }
    return DLCA_OK;
}

static tn_tensor *binary_op(const char *op, tn_bfn fn, tn_backward_fn bwd, tn_tensor *a, tn_tensor *b)
{
    tn_tensor *y = tn__binary(op, fn, 0, 0, a, b);
    return tn__record(y, &(tn_node){.op = op, .backward = bwd, .n_in = 2, .in = {a, b}});
}

tn_tensor *tn_add(tn_tensor *a, tn_tensor *b) { return binary_op("add", TN_B_ADD, add_bwd, a, b); }
tn_tensor *tn_sub(tn_tensor *a, tn_tensor *b) { return binary_op("sub", TN_B_SUB, sub_bwd, a, b); }
tn_tensor *tn_mul(tn_tensor *a, tn_tensor *b) { return binary_op("mul", TN_B_MUL, mul_bwd, a, b); }
tn_tensor *tn_div(tn_tensor *a, tn_tensor *b) { return binary_op("div", TN_B_DIV, div_bwd, a, b); }
tn_tensor *tn_pow(tn_tensor *a, tn_tensor *b) { return binary_op("pow", TN_B_POW, pow_bwd, a, b); }

/* ---- unary ops ---- */

/* Backward of the form gin = f(g, saved) for one binary kernel; iarg[0] picks the saved
 * tensor (0: the input, 1: the output), darg are the kernel's scalars. */
static int pointwise_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    tn_tensor *saved = n->iarg[1] ? out : n->in[0];
    gin[0] = tn__binary(n->op, (tn_bfn)n->iarg[0], n->darg[0], n->darg[1], g, saved);
    return gin[0] ? DLCA_OK : DLCA_ERR;
}

/* A unary op whose gradient is the binary kernel `bfn` on (g, input or output). */
static tn_tensor *unary_op(const char *op, tn_ufn fn, double s0, double s1, tn_tensor *a, tn_bfn bfn, int use_out)
{
    tn_tensor *y = tn__unary(op, fn, s0, s1, a);
    tn_node proto = {.op = op, .backward = pointwise_bwd, .n_in = 1, .in = {a}, .darg = {s0, s1}};
    proto.iarg[0] = (int)bfn;
    proto.iarg[1] = use_out;
    return tn__record(y, &proto);
}

tn_tensor *tn_exp(tn_tensor *a) { return unary_op("exp", TN_U_EXP, 0, 0, a, TN_B_MUL, 1); }
tn_tensor *tn_log(tn_tensor *a) { return unary_op("log", TN_U_LOG, 0, 0, a, TN_B_DIV, 0); }
tn_tensor *tn_sqrt(tn_tensor *a) { return unary_op("sqrt", TN_U_SQRT, 0, 0, a, TN_B_SQRT_BWD, 1); }
tn_tensor *tn_abs(tn_tensor *a) { return unary_op("abs", TN_U_ABS, 0, 0, a, TN_B_ABS_BWD, 0); }
tn_tensor *tn_relu(tn_tensor *a) { return unary_op("relu", TN_U_RELU, 0, 0, a, TN_B_RELU_BWD, 0); }
tn_tensor *tn_sigmoid(tn_tensor *a) { return unary_op("sigmoid", TN_U_SIGMOID, 0, 0, a, TN_B_SIGMOID_BWD, 1); }
tn_tensor *tn_tanh(tn_tensor *a) { return unary_op("tanh", TN_U_TANH, 0, 0, a, TN_B_TANH_BWD, 1); }

tn_tensor *tn_clamp(tn_tensor *a, double lo, double hi)
{
    if (lo > hi) return err_set(DLCA_ERR, "clamp: lo %g > hi %g", lo, hi), NULL;
    return unary_op("clamp", TN_U_CLAMP, lo, hi, a, TN_B_CLAMP_BWD, 0);
}

tn_tensor *tn_pow_scalar(tn_tensor *a, double p) { return unary_op("pow_scalar", TN_U_POWS, p, 0, a, TN_B_POWS_BWD, 0); }

/* Ops whose gradient is g times a constant: neg (-1), add_scalar (1), mul_scalar (s). */
static int scaled_bwd(const tn_node *n, tn_tensor *out, tn_tensor *g, tn_tensor **gin)
{
    gin[0] = n->darg[0] == 1.0 ? tn_retain(g) : tn__unary(n->op, TN_U_MULS, n->darg[0], 0, g);
    return gin[0] ? DLCA_OK : DLCA_ERR;
}

static tn_tensor *scaled_op(const char *op, tn_ufn fn, double s, double scale, tn_tensor *a)
{
    tn_tensor *y = tn__unary(op, fn, s, 0, a);
    return tn__record(y, &(tn_node){.op = op, .backward = scaled_bwd, .n_in = 1, .in = {a}, .darg = {scale}});
}

tn_tensor *tn_neg(tn_tensor *a) { return scaled_op("neg", TN_U_NEG, 0, -1.0, a); }
tn_tensor *tn_add_scalar(tn_tensor *a, double s) { return scaled_op("add_scalar", TN_U_ADDS, s, 1.0, a); }
tn_tensor *tn_mul_scalar(tn_tensor *a, double s) { return scaled_op("mul_scalar", TN_U_MULS, s, s, a); }
