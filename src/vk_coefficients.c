/* vk_coefficients.c: host side of glsl/gate_coefficients.comp. */
#include "vk_coefficients.h"

#include "error.h"
#include "gates.h"
#include "vk_pipeline.h"

static int view_floats_check(vk_view *view, uint64_t floats, const char *what)
{
    int rc = vk_view_check(view, what);
    if (rc) return rc;
    if (view->size < floats * sizeof(float))
        return err_set(DLCA_ERR, "%s: view of %llu bytes, %llu floats needed", what, (unsigned long long)view->size,
                       (unsigned long long)floats);
    return DLCA_OK;
}

int vk_gate_coefficients(vk_context *vk, VkCommandBuffer cmd, vk_view logits, vk_view coeffs, uint32_t gate_count,
                         int hard)
{
    int rc = view_floats_check(&logits, (uint64_t)gate_count * GATE_OP_COUNT, "gate coefficients: logits");
    if (!rc) rc = view_floats_check(&coeffs, (uint64_t)gate_count * GATE_COEFFS, "gate coefficients: coeffs");
    if (rc || gate_count == 0) return rc;
    vk_push_gate_coefficients push = {.gate_count = gate_count, .hard = hard ? 1u : 0u};
    vk_view views[] = {logits, coeffs};
    return vk_dispatch_1d(vk, cmd, VK_PIPE_GATE_COEFFICIENTS, views, 2, &push, sizeof push, gate_count);
}
