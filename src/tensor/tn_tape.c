/* tn_tape.c: the autograd tape. Every recorded op stamps its node with a rising sequence
 * number, so sequence order is a topological order of the graph. backward() collects the
 * ancestors of the output that require grad, sorts them by sequence and replays them in
 * reverse, summing each tensor's incoming gradients before its own op runs. Leaves add into
 * ->grad (accumulating over repeated backward calls); intermediate gradients are dropped as
 * soon as their op has run. The graph stays intact, so backward may run again. */
#include "tn_internal.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

static _Thread_local int no_grad_depth;
static _Thread_local uint64_t tape_seq;
static _Thread_local unsigned visit_mark;

void tn_no_grad_begin(void) { no_grad_depth++; }

void tn_no_grad_end(void)
{
    if (no_grad_depth > 0) no_grad_depth--;
}

int tn_grad_enabled(void) { return no_grad_depth == 0; }

/* The parts of proto a node would own, when no node takes them. */
static void proto_drop(const tn_node *proto)
{
    free(proto->idx);
    tn_free(proto->saved);
}

tn_tensor *tn__record(tn_tensor *out, const tn_node *proto)
{
    int needed = 0;
    for (int i = 0; out && i < proto->n_in; i++) needed |= proto->in[i]->requires_grad;
    if (!needed || !tn_grad_enabled()) {
        proto_drop(proto);
        return out;
    }
    tn_node *node = malloc(sizeof *node);
    if (!node) {
        proto_drop(proto);
        tn_free(out);
        err_set(DLCA_ERR_NOMEM, "%s: out of memory for the tape", proto->op);
        return NULL;
    }
    *node = *proto;
    node->seq = ++tape_seq;
    for (int i = 0; i < node->n_in; i++) tn_retain(node->in[i]);
    out->node = node;
    out->requires_grad = 1;
    return out;
}

void tn__node_free(tn_node *n, void (*drop)(tn_tensor *t, void *list), void *list)
{
    for (int i = 0; i < n->n_in; i++) drop(n->in[i], list);
    drop(n->saved, list);
    if (n->fn && n->fn->release) n->fn->release(n->ctx);
    free(n->idx);
    free(n);
}

int tn_set_requires_grad(tn_tensor *t, int requires_grad)
{
    if (!t) return tn__null("tn_set_requires_grad");
    if (t->node)
        return err_set(DLCA_ERR, "tn_set_requires_grad: not a leaf (made by %s); use tn_detach for a new leaf",
                       t->node->op);
    t->requires_grad = requires_grad != 0;
    return DLCA_OK;
}

void tn_zero_grad(tn_tensor *t)
{
    const tn_backend *be = t && t->grad ? tn__backend_of(t->grad) : NULL;
    if (be) be->fill(t->grad, 0.0);
}

/* ---- backward ---- */

typedef struct {
    tn_tensor **items;
    size_t count, cap;
} tensor_list;

static int list_push(tensor_list *l, tn_tensor *t)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        tn_tensor **items = realloc(l->items, cap * sizeof *items);
        if (!items) return err_set(DLCA_ERR_NOMEM, "backward: out of memory");
        l->items = items;
        l->cap = cap;
    }
    l->items[l->count++] = t;
    return DLCA_OK;
}

/* The output and every ancestor that requires grad, each once (breadth-first). */
static int collect(tn_tensor *y, tensor_list *l)
{
    unsigned mark = ++visit_mark;
    y->bw_mark = mark;
    if (list_push(l, y) != DLCA_OK) return DLCA_ERR;
    for (size_t i = 0; i < l->count; i++) {
        tn_node *n = l->items[i]->node;
        for (int k = 0; n && k < n->n_in; k++) {
            tn_tensor *in = n->in[k];
            if (!in->requires_grad || in->bw_mark == mark) continue;
            in->bw_mark = mark;
            if (list_push(l, in) != DLCA_OK) return DLCA_ERR;
        }
    }
    return DLCA_OK;
}

static uint64_t seq_of(const tn_tensor *t) { return t->node ? t->node->seq : 0; }

/* Latest op first; leaves (seq 0) last. */
static int by_seq_desc(const void *pa, const void *pb)
{
    uint64_t a = seq_of(*(tn_tensor *const *)pa), b = seq_of(*(tn_tensor *const *)pb);
    return a < b ? 1 : a > b ? -1 : 0;
}

/* Adds g (consumed) into t's gradient: ->grad for leaves, ->bw_grad for intermediates. */
static int accumulate(tn_tensor *t, tn_tensor *g, const char *op)
{
    char a[96], b[96];
    int status = DLCA_OK;
    if (g->ndim != t->ndim || memcmp(g->shape, t->shape, sizeof(size_t) * (size_t)t->ndim) != 0 || g->dtype != t->dtype) {
        status = err_set(DLCA_ERR, "backward: %s gave a gradient of shape %s for an input of shape %s", op,
                         tn_shape_str(g, a, sizeof a), tn_shape_str(t, b, sizeof b));
    } else if (!t->node && !t->grad && g->refs == 1 && g->storage->refs == 1 && g->offset == 0 && !g->node &&
               tn_is_contiguous(g) && g->storage->dev == t->storage->dev) {
        /* a leaf's first gradient that nothing else holds becomes its buffer: no copy, no kernel */
        t->grad = g;
        return DLCA_OK;
    } else if (!t->node && t->grad && t->grad_stale) {
        /* a stale buffer (tn_params_grad_replace): one copy instead of a zero-fill and an add */
        status = tn__backend_of(t)->unary(TN_U_COPY, 0, 0, t->grad, g);
        t->grad_stale = 0;
    } else if (!t->node) {
        /* leaves keep their buffer (it may be a view into a flat parameter block) and add in place */
        if (!t->grad) t->grad = tn__zeros_like(t, t->ndim, t->shape);
        status = t->grad ? tn__backend_of(t)->binary(TN_B_ADD, 0, 0, t->grad, t->grad, g) : DLCA_ERR;
    } else if (!t->bw_grad) {
        t->bw_grad = tn_retain(g);
    } else {
        /* a new sum, never in place: g and bw_grad may be shared with other tensors' gradients */
        tn_tensor *sum = tn__binary(op, TN_B_ADD, 0, 0, t->bw_grad, g);
        status = sum ? DLCA_OK : DLCA_ERR;
        if (sum) {
            tn_free(t->bw_grad);
            t->bw_grad = sum;
        }
    }
    tn_free(g);
    return status;
}

/* A stale leaf gradient the op may write into directly (see tn_backward_fn). */
static tn_tensor *destination_of(const tn_tensor *in)
{
    tn_tensor *g = in->grad;
    return !in->node && in->requires_grad && g && in->grad_stale && tn_is_contiguous(g) && g->dtype == in->dtype ? g
                                                                                                         : NULL;
}

/* Runs t's op backward on its pending gradient and hands the results to its inputs. */
static int step_back(tn_tensor *t)
{
    tn_node *n = t->node;
    tn_tensor *gin[TN_NODE_MAX_IN] = {NULL}, *dest[TN_NODE_MAX_IN] = {NULL};
    tn_tensor *g = t->bw_grad;
    t->bw_grad = NULL;
    for (int i = 0; g && i < n->n_in; i++)
        if (n->destinations >> i & 1u) gin[i] = dest[i] = destination_of(n->in[i]);
    int status = g ? n->backward(n, t, g, gin) : DLCA_OK;
    tn_free(g);
    for (int i = 0; i < n->n_in; i++) {
        if (!gin[i]) continue;
        if (gin[i] == dest[i]) {
            /* written in place: the leaf's gradient, no longer stale (later inputs add to it) */
            if (status == DLCA_OK) n->in[i]->grad_stale = 0;
        } else if (status == DLCA_OK && n->in[i]->requires_grad) {
            status = accumulate(n->in[i], gin[i], n->op);
        } else {
            tn_free(gin[i]);
        }
    }
    return status;
}

static int check_output(tn_tensor *y, tn_tensor *gy)
{
    char a[96], b[96];
    if (!y->requires_grad)
        return err_set(DLCA_ERR, "backward: tensor has no autograd history (no input requires grad, or it was made "
                                 "under tn_no_grad_begin)");
    if (!gy && tn_numel(y) != 1)
        return err_set(DLCA_ERR, "backward: output of shape %s is not a scalar; pass its gradient with "
                                 "tn_backward_grad", tn_shape_str(y, a, sizeof a));
    if (gy && (gy->ndim != y->ndim || memcmp(gy->shape, y->shape, sizeof(size_t) * (size_t)y->ndim) != 0))
        return err_set(DLCA_ERR, "backward: output gradient of shape %s for an output of shape %s",
                       tn_shape_str(gy, a, sizeof a), tn_shape_str(y, b, sizeof b));
    if (gy) return tn__check_pair("backward", y, gy);
    return DLCA_OK;
}

static int run_backward(tn_tensor *y, tn_tensor *seed)
{
    tensor_list l = {0};
    int status = collect(y, &l);
    if (status == DLCA_OK) {
        qsort(l.items, l.count, sizeof *l.items, by_seq_desc);
        status = accumulate(y, tn_retain(seed), "backward");
    }
    for (size_t i = 0; status == DLCA_OK && i < l.count && l.items[i]->node; i++) status = step_back(l.items[i]);
    for (size_t i = 0; i < l.count; i++) { /* after an error, drop what is still pending */
        tn_free(l.items[i]->bw_grad);
        l.items[i]->bw_grad = NULL;
    }
    free(l.items);
    return status;
}

int tn_backward_grad(tn_tensor *y, tn_tensor *gy)
{
    if (!y) return tn__null("backward");
    if (check_output(y, gy) != DLCA_OK) return DLCA_ERR;
    tn_tensor *seed = gy ? tn_retain(gy) : tn__empty_like(y, y->ndim, y->shape);
    if (!seed || (!gy && tn__backend_of(seed)->fill(seed, 1.0) != DLCA_OK)) {
        tn_free(seed);
        return DLCA_ERR;
    }
    tn_no_grad_begin(); /* backward computes with plain ops; none of them should be recorded */
    int status = run_backward(y, seed);
    tn_no_grad_end();
    tn_free(seed);
    return status;
}

int tn_backward(tn_tensor *y) { return tn_backward_grad(y, NULL); }
