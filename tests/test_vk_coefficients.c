/* test_vk_coefficients.c: glsl/gate_coefficients.comp against gate_coefficients /
 * gate_hard_coefficients (double) on random logits including huge values and ties, bound at
 * offsets inside larger buffers; plus the dispatch helper's refusals. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "gates.h"
#include "vk_buffer.h"
#include "vk_coefficients.h"
#include "vk_command.h"
#include "vk_context.h"
#include "vk_pipeline.h"

static const char *test_name = "test_vk_coefficients";
enum { GATES = 1000 };
static const float sentinel = -7.0f;

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double rng_uniform(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Gate g's 16 logits; the first 16 gates pick op g, the rest cycle through hard cases. */
static void logits_make(float *z, int g)
{
    int i, j;
    for (i = 0; i < GATE_OP_COUNT; i++) z[i] = (float)rng_uniform(-3, 3);
    if (g < GATE_OP_COUNT) {
        z[g] = 5.0f;
        return;
    }
    switch (g % 8) {
    case 0: break;
    case 1: for (i = 0; i < GATE_OP_COUNT; i++) z[i] = (float)rng_uniform(-30, 30); break;
    case 2: z[(int)rng_uniform(0, 16)] = 1e3f; break;
    case 3: for (i = 0; i < GATE_OP_COUNT; i++) z[i] = 1e3f - (float)(int)rng_uniform(0, 3); break; /* ties at 1e3 */
    case 4: /* all equal */
        z[0] = (float)rng_uniform(-5, 5);
        for (i = 1; i < GATE_OP_COUNT; i++) z[i] = z[0];
        break;
    case 5: /* two-way tie for the max at i < j */
        i = (int)rng_uniform(0, 15);
        j = i + 1 + (int)rng_uniform(0, 15 - i);
        z[i] = z[j] = 4.0f;
        break;
    case 6: for (i = 0; i < GATE_OP_COUNT; i++) z[i] = -1e3f; z[(int)rng_uniform(0, 16)] = 0.5f; break;
    default: for (i = 0; i < GATE_OP_COUNT; i++) z[i] = i == GATE_A ? 10.0f : 0.0f; break; /* the init */
    }
}

/* CPU reference in double from the same float logits. */
static void reference(double *soft, double *hard, const float *logits)
{
    for (int g = 0; g < GATES; g++) {
        double z[GATE_OP_COUNT];
        for (int i = 0; i < GATE_OP_COUNT; i++) z[i] = logits[g * GATE_OP_COUNT + i];
        gate_coefficients(&soft[g * GATE_COEFFS], z);
        gate_hard_coefficients(&hard[g * GATE_COEFFS], gate_argmax(z));
    }
}

/* |ref - gpu| <= rtol * max|ref|, printing the first few mismatches. */
static void compare(const char *what, const double *ref, const float *gpu, size_t n, double rtol)
{
    double top = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++) top = fabs(ref[i]) > top ? fabs(ref[i]) : top;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs(ref[i] - (double)gpu[i]);
        worst = err > worst ? err : worst;
        if (!(err <= rtol * top) && bad++ < 5)
            fprintf(stderr, "%s: gate %zu coeff %zu: gpu %.9g ref %.9g\n", what, i / GATE_COEFFS, i % GATE_COEFFS,
                    (double)gpu[i], ref[i]);
    }
    printf("%s: %s max error %.3g (max |ref| %.3g)\n", test_name, what, worst, top);
    CHECK(bad == 0, "%s: %d of %zu coefficients off by more than %g * %g", what, bad, n, rtol, top);
}

/* Refusals of vk_dispatch and vk_gate_coefficients; nothing gets recorded. */
static void test_refusals(vk_context *vk, VkCommandBuffer cmd, vk_view logits, vk_view coeffs)
{
    vk_push_gate_coefficients push = {GATES, 0};
    vk_view views[2] = {logits, coeffs};
    int rc = vk_dispatch(vk, cmd, VK_PIPE_GATE_COEFFICIENTS, views, 1, &push, sizeof push, 1, 1, 1);
    CHECK(rc == DLCA_ERR && strstr(err_message(), "bindings"), "wrong binding count: %s", err_message());
    rc = vk_dispatch(vk, cmd, VK_PIPE_GATE_COEFFICIENTS, views, 2, &push, 4, 1, 1, 1);
    CHECK(rc == DLCA_ERR && strstr(err_message(), "push"), "wrong push size: %s", err_message());
    rc = vk_dispatch(vk, cmd, VK_PIPE_COUNT, views, 2, &push, sizeof push, 1, 1, 1);
    CHECK(rc == DLCA_ERR, "unknown pipeline id refused");
    views[1].offset += 4;
    rc = vk_dispatch(vk, cmd, VK_PIPE_GATE_COEFFICIENTS, views, 2, &push, sizeof push, 1, 1, 1);
    CHECK(rc == DLCA_ERR && strstr(err_message(), "minStorageBufferOffsetAlignment"), "misaligned view: %s",
          err_message());
    views[1].offset -= 4;
    uint32_t max_x = vk->props.limits.maxComputeWorkGroupCount[0];
    if (max_x < UINT32_MAX) {
        rc = vk_dispatch(vk, cmd, VK_PIPE_GATE_COEFFICIENTS, views, 2, &push, sizeof push, max_x + 1, 1, 1);
        CHECK(rc == DLCA_ERR && strstr(err_message(), "groups"), "too many groups: %s", err_message());
    }
    rc = vk_gate_coefficients(vk, cmd, logits, coeffs, GATES * 2, 0);
    CHECK(rc == DLCA_ERR && strstr(err_message(), "floats needed"), "view too small: %s", err_message());
}

/* Runs soft and hard coefficients in one submission; coefficients land at an offset inside
 * a buffer pre-filled with the sentinel, which must survive around them. */
static int run(vk_context *vk, const float *logits, float *soft, float *hard, float *tail)
{
    VkDeviceSize align = vk->props.limits.minStorageBufferOffsetAlignment;
    VkDeviceSize logit_offset = 3 * align, soft_offset = 5 * align;
    VkDeviceSize logit_bytes = (VkDeviceSize)GATES * GATE_OP_COUNT * sizeof(float);
    VkDeviceSize coeff_bytes = (VkDeviceSize)GATES * GATE_COEFFS * sizeof(float);
    VkDeviceSize hard_offset = (soft_offset + coeff_bytes + 16 + align - 1) / align * align;
    vk_buffer params, coeffs;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    int rc = vk_buffer_create(vk, &params, logit_offset + logit_bytes + 64, VK_BUFFER_DEVICE);
    if (!rc) rc = vk_buffer_create(vk, &coeffs, hard_offset + coeff_bytes + 64, VK_BUFFER_DEVICE);
    if (!rc) rc = vk_buffer_upload(vk, &params, logit_offset, logits, logit_bytes);
    if (!rc) rc = vk_cmd_begin(vk, &cmd);
    vk_view logit_view = vk_view_of(&params, logit_offset, logit_bytes);
    if (!rc) rc = vk_buffer_fill_float(cmd, vk_view_all(&coeffs), sentinel);
    if (!rc) test_refusals(vk, cmd, logit_view, vk_view_of(&coeffs, soft_offset, coeff_bytes));
    vk_cmd_barrier_transfer_to_compute(cmd);
    /* Size 0 = to the end of the buffer: the kernel must still stop at gate_count. */
    if (!rc) rc = vk_gate_coefficients(vk, cmd, logit_view, vk_view_of(&coeffs, soft_offset, 0), GATES, 0);
    if (!rc) rc = vk_gate_coefficients(vk, cmd, logit_view, vk_view_of(&coeffs, hard_offset, coeff_bytes), GATES, 1);
    if (!rc) rc = vk_cmd_finish(vk, cmd);
    if (!rc) rc = vk_buffer_download(vk, &coeffs, soft_offset, soft, coeff_bytes);
    if (!rc) rc = vk_buffer_download(vk, &coeffs, hard_offset, hard, coeff_bytes);
    if (!rc) rc = vk_buffer_download(vk, &coeffs, soft_offset - 4, &tail[0], 4);
    if (!rc) rc = vk_buffer_download(vk, &coeffs, soft_offset + coeff_bytes, &tail[1], 4);
    vk_buffer_free(vk, &params);
    vk_buffer_free(vk, &coeffs);
    return rc;
}

int main(void)
{
    vk_context vk;
    int rc = vk_context_init(&vk, -1);
    if (rc == DLCA_ERR_NODEV) return test_no_vulkan(test_name, err_message());
    CHECK(rc == DLCA_OK, "vk_context_init: %s", err_message());
    if (rc) return test_finish(test_name);

    float *logits = malloc(sizeof(float) * GATES * GATE_OP_COUNT);
    float *soft = malloc(sizeof(float) * GATES * GATE_COEFFS), *hard = malloc(sizeof(float) * GATES * GATE_COEFFS);
    double *ref_soft = malloc(sizeof(double) * GATES * GATE_COEFFS);
    double *ref_hard = malloc(sizeof(double) * GATES * GATE_COEFFS);
    float tail[2] = {0, 0};
    if (!logits || !soft || !hard || !ref_soft || !ref_hard) {
        CHECK(0, "host memory");
        return test_finish(test_name);
    }
    for (int g = 0; g < GATES; g++) logits_make(&logits[g * GATE_OP_COUNT], g);
    reference(ref_soft, ref_hard, logits);

    rc = run(&vk, logits, soft, hard, tail);
    CHECK(rc == DLCA_OK, "gpu run: %s", err_message());
    if (!rc) {
        compare("soft", ref_soft, soft, (size_t)GATES * GATE_COEFFS, 1e-4);
        compare("hard", ref_hard, hard, (size_t)GATES * GATE_COEFFS, 0.0);
        for (int g = 0; g < GATE_OP_COUNT; g++)
            for (int k = 0; k < GATE_COEFFS; k++)
                CHECK(hard[g * GATE_COEFFS + k] == (float)gate_op_matrix[g][k], "GLSL matrix row %d col %d", g, k);
        CHECK(tail[0] == sentinel && tail[1] == sentinel, "writes stay inside the gates: %g %g", (double)tail[0],
              (double)tail[1]);
    }
    vk_context_free(&vk);
    CHECK(vk.validation_errors == 0, "%d validation messages", vk.validation_errors);
    free(logits);
    free(soft);
    free(hard);
    free(ref_soft);
    free(ref_hard);
    return test_finish(test_name);
}
