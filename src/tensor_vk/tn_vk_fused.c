/* tn_vk_fused.c: the device kernels of the fused ops (tn_ops_fused.c): softmax-matmul forward
 * and backward and argmax one-hot (glsl/tn_softmax_matmul.comp), the sum of squared errors and
 * its backward (tn_sse.comp, tn_sse_bwd.comp), counter-based noise (tn_noise.comp). One
 * dispatch each. */
#include "tn_vk_internal.h"

#include "error.h"

#include <string.h>

enum { SMM_MAX_C = 16 /* glsl/tn_softmax_matmul.comp */ };

static int fits_u32(size_t v) { return v <= UINT32_MAX; }

/* ---- softmax(z) m, its backward, argmax one-hot ---- */

static int smm_dispatch(uint32_t mode, tn_tensor *out, const tn_tensor *z, const tn_tensor *m, const tn_tensor *g)
{
    tn_vk_device *d = tn_vk__dev(out->storage);
    size_t k = z->shape[z->ndim - 1], c = m ? m->shape[1] : 0, rows = k ? tn_numel(z) / k : 0;
    if (rows == 0) return DLCA_OK;
    if (mode != 2 && c > SMM_MAX_C)
        return err_set(DLCA_ERR, "softmax_matmul: m has %zu columns; the device kernel takes at most %d", c, SMM_MAX_C);
    /* Rows of at most TN_VK_SMM_LANES: an invocation a logit (glsl/tn_softmax_matmul.comp says why) */
    uint32_t lanes = mode != 2 && k <= TN_VK_SMM_LANES ? TN_VK_SMM_LANES : 1;
    if (!fits_u32(rows * lanes) || !fits_u32(k)) return err_set(DLCA_ERR, "softmax_matmul: too large for the device");
    tn_vk_push_smm push = {(uint32_t)rows, (uint32_t)k, (uint32_t)c, mode, (uint32_t)out->offset, (uint32_t)z->offset,
                           m ? (uint32_t)m->offset : 0, g ? (uint32_t)g->offset : 0, lanes};
    vk_view zv = tn_vk__view(z);
    vk_view views[4] = {tn_vk__view(out), zv, m ? tn_vk__view(m) : zv, g ? tn_vk__view(g) : zv};
    return tn_vk__dispatch_1d(d, TN_VK_PIPE_SOFTMAX_MATMUL, views, 4, &push, sizeof push, (uint64_t)rows * lanes);
}

int tn_vk__softmax_matmul(tn_tensor *out, const tn_tensor *z, const tn_tensor *m)
{
    return smm_dispatch(0, out, z, m, NULL);
}

int tn_vk__softmax_matmul_bwd(tn_tensor *gz, const tn_tensor *z, const tn_tensor *m, const tn_tensor *g)
{
    return smm_dispatch(1, gz, z, m, g);
}

int tn_vk__argmax_onehot(tn_tensor *out, const tn_tensor *z) { return smm_dispatch(2, out, z, NULL, NULL); }

/* ---- sum of squared errors ---- */

/* The device's SSE scratch: partial sums and the ticket, zero before first use; tn_sse.comp
 * leaves the ticket zero again. Ops run one after another (a barrier each), so one serves all. */
static int sse_work(tn_vk_device *d, vk_view *out)
{
    if (!d->sse_work) {
        VkCommandBuffer cmd;
        int rc = tn_vk__cmd(d, &cmd);
        if (!rc) rc = tn_vk__block_make(d, (TN_VK_SSE_GROUPS + 1) * sizeof(uint32_t), 0, &d->sse_work);
        if (rc) return rc;
        vkCmdFillBuffer(cmd, d->sse_work->buf.buffer, 0, VK_WHOLE_SIZE, 0);
        if ((rc = tn_vk__recorded(d))) return rc;
    }
    *out = vk_view_all(&d->sse_work->buf);
    return DLCA_OK;
}

int tn_vk__sse(tn_tensor *loss, tn_tensor *diff, const tn_tensor *pred, const tn_tensor *target)
{
    tn_vk_device *d = tn_vk__dev(loss->storage);
    size_t n = tn_numel(pred), local = 256;
    vk_view work, meta;
    if (!fits_u32(n)) return err_set(DLCA_ERR, "sse_loss: too large for the device");
    size_t groups = (n + local - 1) / local;
    if (groups > TN_VK_SSE_GROUPS) groups = TN_VK_SSE_GROUPS;
    if (groups == 0) groups = 1; /* an empty sum still writes the loss */
    int rc = sse_work(d, &work);
    if (!rc) rc = tn_vk__iter_meta(d, pred->ndim, pred->shape, 3, (const tn_tensor *[]){diff, pred, target}, &meta);
    if (rc) return rc;
    tn_vk_push_sse push = {(uint32_t)n, (uint32_t)groups, (uint32_t)loss->offset};
    vk_view views[6] = {tn_vk__view(diff), tn_vk__view(pred), tn_vk__view(target), meta, work, tn_vk__view(loss)};
    return tn_vk__dispatch(d, TN_VK_PIPE_SSE, views, 6, &push, sizeof push, (uint32_t)groups, 1, 1);
}

int tn_vk__sse_bwd(tn_tensor *gpred, tn_tensor *gtarget, const tn_tensor *diff, const tn_tensor *g)
{
    tn_vk_device *d = tn_vk__dev(gpred->storage);
    size_t n = tn_numel(diff);
    if (!fits_u32(n)) return err_set(DLCA_ERR, "sse_loss: too large for the device");
    if (gpred->offset || (gtarget && gtarget->offset)) return err_set(DLCA_ERR, "sse_loss: gradients must be fresh");
    tn_vk_push_sse_bwd push = {(uint32_t)n, gtarget != NULL, (uint32_t)diff->offset, (uint32_t)g->offset};
    vk_view gp = tn_vk__view(gpred);
    vk_view views[4] = {gp, gtarget ? tn_vk__view(gtarget) : gp, tn_vk__view(diff), tn_vk__view(g)};
    return tn_vk__dispatch_1d(d, TN_VK_PIPE_SSE_BWD, views, 4, &push, sizeof push, n);
}

/* ---- noise ---- */

int tn_vk__noise(tn_tensor *out, tn_noise_kind kind, uint32_t key)
{
    tn_vk_device *d = tn_vk__dev(out->storage);
    size_t n = tn_numel(out);
    if (!fits_u32(n) || !fits_u32(out->offset)) return err_set(DLCA_ERR, "noise: too large for the device");
    tn_vk_push_noise push = {(uint32_t)n, (uint32_t)kind, key, (uint32_t)out->offset};
    vk_view views[1] = {tn_vk__view(out)};
    return tn_vk__dispatch_1d(d, TN_VK_PIPE_NOISE, views, 1, &push, sizeof push, n);
}
