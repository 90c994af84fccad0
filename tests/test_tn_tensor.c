/* test_tn_tensor.c: tensor basics without gradients: creation, dtype rounding, views (reshape,
 * transpose, permute, slice, select, expand) sharing storage, broadcasting rules and errors,
 * forward values of matmul / reductions / softmax / indexing, and error propagation. */
#include "check.h"
#include "error.h"
#include "tn_internal.h"
#include "tn_ops.h"

#include <string.h>

/* t's elements equal want[numel] in C order. */
static void check_values(const char *what, const tn_tensor *t, const double *want, size_t n, double tol)
{
    CHECK(t != NULL, "%s: NULL (%s)", what, err_message());
    if (!t) return;
    CHECK(tn_numel(t) == n, "%s: %zu elements, want %zu", what, tn_numel(t), n);
    for (size_t i = 0; i < n && i < tn_numel(t); i++) CHECK_CLOSE(tn_get(t, i), want[i], tol, tol, "%s[%zu]", what, i);
}

static int shape_is(const tn_tensor *t, int ndim, const size_t *shape)
{
    return t && t->ndim == ndim && memcmp(t->shape, shape, sizeof(size_t) * (size_t)ndim) == 0;
}

static tn_tensor *arange(tn_dtype dt, int ndim, const size_t *shape)
{
    tn_tensor *t = tn_zeros(dt, ndim, shape);
    for (size_t i = 0; i < tn_numel(t); i++) tn_set(t, i, (double)i);
    return t;
}

static void test_creation(void)
{
    tn_tensor *z = tn_zeros(TN_F32, TN_SHAPE(2, 3)), *f = tn_full(TN_F64, TN_SHAPE(4), 2.5), *s = tn_scalar(TN_F64, 7);
    char buf[32];
    CHECK(z && tn_numel(z) == 6 && tn_is_contiguous(z) && z->dtype == TN_F32, "zeros");
    CHECK(strcmp(tn_shape_str(z, buf, sizeof buf), "[2,3]") == 0, "shape string %s", buf);
    CHECK(tn_get(f, 3) == 2.5 && s->ndim == 0 && tn_item(s) == 7, "full / scalar");
    tn_tensor *r = tn_from_f64(TN_F32, TN_SHAPE(1), (const double[]){0.1});
    CHECK(tn_get(r, 0) == (double)0.1f, "f32 storage rounds: %.17g", tn_get(r, 0));
    CHECK(isnan(tn_item(f)) && strstr(err_message(), "not 1"), "item of 4 elements: %s", err_message());
    double back[4];
    CHECK(tn_read(f, back) == DLCA_OK && back[2] == 2.5, "tn_read");
    tn_free(z), tn_free(f), tn_free(s), tn_free(r);
}

static void test_views(void)
{
    tn_tensor *a = arange(TN_F64, TN_SHAPE(2, 3, 4));
    tn_tensor *r = tn_reshape(a, TN_SHAPE(4, TN_INFER));
    CHECK(shape_is(r, TN_SHAPE(4, 6)) && r->storage == a->storage, "reshape is a view with the inferred extent");
    CHECK(tn_reshape(a, TN_SHAPE(5, 5)) == NULL && strstr(err_message(), "cannot view"), "bad reshape: %s", err_message());

    tn_tensor *t = tn_transpose(a, 0, 2); /* [4,3,2] */
    CHECK(shape_is(t, TN_SHAPE(4, 3, 2)) && !tn_is_contiguous(t) && t->storage == a->storage, "transpose view");
    CHECK(tn_get(t, 1) == 12 && tn_get(t, 2) == 4, "transpose values %g %g", tn_get(t, 1), tn_get(t, 2));
    tn_tensor *tr = tn_reshape(t, TN_SHAPE(24));
    CHECK(tr && tr->storage != a->storage && tn_get(tr, 1) == 12, "reshape of a transposed view copies");

    tn_tensor *p = tn_permute(a, (const int[]){1, 2, 0}); /* [3,4,2]: p[i,j,k] = a[k,i,j] */
    CHECK(shape_is(p, TN_SHAPE(3, 4, 2)) && tn_get(p, 1) == 12 && tn_get(p, 2) == 1, "permute");
    CHECK(tn_permute(a, (const int[]){0, 0, 1}) == NULL && strstr(err_message(), "twice"), "bad perm: %s", err_message());

    tn_tensor *sl = tn_slice(a, 2, 1, 4, 2); /* [2,3,2]: columns 1 and 3 */
    check_values("slice", sl, (const double[]){1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}, 12, 0);
    CHECK(tn_slice(a, 1, 2, 5, 1) == NULL && strstr(err_message(), "invalid"), "slice past the end: %s", err_message());
    tn_tensor *se = tn_select(a, 1, 2); /* [2,4] */
    check_values("select", se, (const double[]){8, 9, 10, 11, 20, 21, 22, 23}, 8, 0);

    tn_tensor *col = arange(TN_F64, TN_SHAPE(3, 1));
    tn_tensor *e = tn_expand(col, TN_SHAPE(2, 3, 2));
    CHECK(e && e->stride[0] == 0 && e->stride[2] == 0, "expand uses stride 0");
    check_values("expand", e, (const double[]){0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}, 12, 0);
    CHECK(tn_expand(col, TN_SHAPE(3, 2, 2)) == NULL, "expand [3,1] to [3,2,2] fails");

    double v[3] = {10, 11, 12};
    tn_tensor *sub = tn_slice(a, 0, 1, 2, 1);
    tn_tensor *w = tn_select(sub, 2, 0); /* a[1, :, 0] */
    CHECK(tn_write(w, v) == DLCA_OK && tn_get(a, 12) == 10 && tn_get(a, 16) == 11 && tn_get(a, 20) == 12,
          "tn_write through a strided view lands in the base");
    tn_free(a), tn_free(r), tn_free(t), tn_free(tr), tn_free(p), tn_free(sl), tn_free(se);
    tn_free(col), tn_free(e), tn_free(sub), tn_free(w);
}

static void test_broadcasting(void)
{
    size_t out[TN_MAX_DIMS];
    int n;
    CHECK(tn_broadcast_shape(TN_SHAPE(3, 1), TN_SHAPE(3, 5), &n, out) == DLCA_OK && n == 2 && out[1] == 5, "[3,1]+[3,5]");
    CHECK(tn_broadcast_shape(TN_SHAPE(5), TN_SHAPE(3, 5), &n, out) == DLCA_OK && n == 2 && out[0] == 3, "[5]+[3,5]");
    CHECK(tn_broadcast_shape(TN_SHAPE(2, 1, 4), TN_SHAPE(3, 1), &n, out) == DLCA_OK && n == 3 && out[0] == 2 &&
              out[1] == 3 && out[2] == 4, "[2,1,4]+[3,1]");
    CHECK(tn_broadcast_shape(TN_SHAPE(3), TN_SHAPE(4), &n, out) == DLCA_ERR && strstr(err_message(), "do not broadcast"),
          "[3] vs [4]: %s", err_message());

    tn_tensor *a = arange(TN_F64, TN_SHAPE(3, 1)), *b = arange(TN_F64, TN_SHAPE(1, 5));
    tn_tensor *s = tn_add(a, b);
    CHECK(shape_is(s, TN_SHAPE(3, 5)), "[3,1]+[1,5] is [3,5]");
    for (size_t i = 0; s && i < 15; i++) CHECK(tn_get(s, i) == (double)(i / 5 + i % 5), "sum element %zu", i);
    tn_tensor *c = arange(TN_F64, TN_SHAPE(4));
    tn_tensor *ac = tn_mul(a, c);
    CHECK(shape_is(ac, TN_SHAPE(3, 4)), "[3,1]*[4] is [3,4]");
    tn_free(ac);
    tn_tensor *bad = tn_mul(b, c);
    CHECK(bad == NULL && strstr(err_message(), "mul:") && strstr(err_message(), "[1,5]"), "mul [1,5]*[4]: %s",
          err_message());
    tn_tensor *f = tn_zeros(TN_F32, TN_SHAPE(3, 1));
    CHECK(tn_add(a, f) == NULL && strstr(err_message(), "dtypes differ"), "f64 + f32: %s", err_message());
    tn_free(a), tn_free(b), tn_free(s), tn_free(c), tn_free(f);
}

static void test_forward_values(void)
{
    tn_tensor *a = arange(TN_F64, TN_SHAPE(2, 3)), *b = arange(TN_F64, TN_SHAPE(3, 2));
    tn_tensor *m = tn_matmul(a, b);
    check_values("matmul", m, (const double[]){10, 13, 28, 40}, 4, 0);
    tn_tensor *bb = arange(TN_F64, TN_SHAPE(2, 3, 2));
    tn_tensor *mb = tn_matmul(a, bb); /* [2,3] broadcast over the batch of 2 */
    check_values("batched matmul", mb, (const double[]){10, 13, 28, 40, 28, 31, 100, 112}, 8, 0);
    tn_tensor *bad = tn_matmul(a, a);
    CHECK(bad == NULL && strstr(err_message(), "do not match"), "[2,3]x[2,3]: %s", err_message());

    tn_tensor *s0 = tn_sum_dim(a, 0, 0), *s1 = tn_sum_dim(a, 1, 1), *mx = tn_max_dim(a, 0, 0), *me = tn_mean(a);
    check_values("sum dim 0", s0, (const double[]){3, 5, 7}, 3, 0);
    CHECK(shape_is(s1, TN_SHAPE(2, 1)), "keepdim shape");
    check_values("sum dim 1", s1, (const double[]){3, 12}, 2, 0);
    check_values("max dim 0", mx, (const double[]){3, 4, 5}, 3, 0);
    CHECK(me && me->ndim == 0 && tn_item(me) == 2.5, "mean is 0-d");
    int64_t arg[2];
    tn_tensor *q = tn_from_f64(TN_F64, TN_SHAPE(2, 3), (const double[]){1, 5, 5, 7, 0, 2});
    CHECK(tn_argmax_dim(q, 1, arg) == DLCA_OK && arg[0] == 1 && arg[1] == 0, "argmax takes the first maximum");

    tn_tensor *big = tn_from_f64(TN_F32, TN_SHAPE(1, 3), (const double[]){1000, 1000, -1000});
    tn_tensor *sm = tn_softmax(big, 1), *ls = tn_log_softmax(big, 1);
    check_values("softmax of large values", sm, (const double[]){0.5, 0.5, 0}, 3, 1e-7);
    CHECK_CLOSE(tn_get(ls, 0), -log(2.0), 1e-6, 0, "log_softmax of large values");

    tn_tensor *g = tn_gather(a, 1, (const int64_t[]){2, 0, 1, 1}, (const size_t[]){2, 2});
    check_values("gather", g, (const double[]){2, 0, 4, 4}, 4, 0);
    tn_tensor *is = tn_index_select(a, 0, (const int64_t[]){1, 1, 0}, 3);
    check_values("index_select", is, (const double[]){3, 4, 5, 3, 4, 5, 0, 1, 2}, 9, 0);
    CHECK(tn_index_select(a, 0, (const int64_t[]){2}, 1) == NULL && strstr(err_message(), "out of range"),
          "index 2 of 2 rows: %s", err_message());
    tn_free(a), tn_free(b), tn_free(m), tn_free(bb), tn_free(mb), tn_free(s0), tn_free(s1), tn_free(mx);
    tn_free(me), tn_free(q), tn_free(big), tn_free(sm), tn_free(ls), tn_free(g), tn_free(is);
}

static void test_errors(void)
{
    err_clear();
    tn_tensor *x = tn_zeros(TN_F64, TN_SHAPE(2));
    CHECK(tn_add(NULL, x) == NULL && strstr(err_message(), "add: input is NULL"), "NULL input: %s", err_message());
    err_set(DLCA_ERR, "the real cause");
    tn_tensor *chain = tn_exp(tn_log(NULL));
    CHECK(chain == NULL && strcmp(err_message(), "the real cause") == 0, "a NULL chain keeps the first message: %s",
          err_message());
    CHECK(tn_sum_dim(x, 3, 0) == NULL && strstr(err_message(), "dim 3 out of range"), "bad dim: %s", err_message());
    /* the CPU is device NULL: a copy there is the tensor itself */
    tn_tensor *same = tn_to_device(x, NULL);
    CHECK(same == x && tn_device_of(x) == NULL && x->refs == 2, "tn_to_device(t, NULL) of a CPU tensor");
    tn_free(same);
    tn_free(x);
}

int main(void)
{
    test_creation();
    test_views();
    test_broadcasting();
    test_forward_values();
    test_errors();
    return test_finish("test_tn_tensor");
}
