/* tn_vk_push.h: push-constant structs of the tn kernels that src/vk's pipeline table does not
 * list (tn keeps its own table, tn_vk_internal.h), mirrored field by field in
 * glsl/tn_push.glsl (C tn_vk_push_<kernel> == GLSL tn_<kernel>_push). Only 4-byte scalars, so
 * the C layout equals the std430 push-constant layout; _Static_assert pins each size. The older
 * tn kernels (unary, binary, reduce, matmul, softmax, take, put_add, clip_norm) still use the
 * vk_push_tn_* structs of src/vk/vk_push.h. */
#ifndef DLCA_TN_VK_PUSH_H
#define DLCA_TN_VK_PUSH_H

#include <stdint.h>

/* glsl/tn_optim.comp. bits: kind (0 SGD, 1 Adam, 2 AdamW) | nesterov << 2 | parity << 3 |
 * n_flags << 8; a, b: momentum, dampening (SGD) or beta1, beta2 (Adam); log_beta1/2 = log(beta)
 * for the bias corrections 1 - beta^t = -expm1(t log(beta)). 40 bytes: src/vk's table row
 * TN_OPTIM (vk_push_tn_optim) describes the same shader until it goes. */
typedef struct {
    uint32_t count, bits;
    float lr, a, b, weight_decay;
    float eps, clip, log_beta1, log_beta2;
} tn_vk_push_optim;
_Static_assert(sizeof(tn_vk_push_optim) == 40, "mirror of tn_optim_step_push in glsl/tn_push.glsl");

/* glsl/tn_optim_check.comp */
typedef struct {
    uint32_t count, check, flag_words, flag_offset;
    uint32_t mask;
} tn_vk_push_check;
_Static_assert(sizeof(tn_vk_push_check) == 20, "mirror of tn_optim_check_push in glsl/tn_push.glsl");

/* glsl/tn_softmax_matmul.comp: mode 0 forward, 1 backward, 2 argmax one-hot; offsets in elements;
 * lanes: invocations a row (1, or TN_VK_SMM_LANES for rows that short) */
typedef struct {
    uint32_t rows, k, c, mode;
    uint32_t out_offset, z_offset, m_offset, g_offset;
    uint32_t lanes;
} tn_vk_push_smm;
_Static_assert(sizeof(tn_vk_push_smm) == 36, "mirror of tn_smm_push in glsl/tn_push.glsl");
enum { TN_VK_SMM_LANES = 16 };

/* glsl/tn_sse.comp */
typedef struct {
    uint32_t count, groups, loss_offset;
} tn_vk_push_sse;
_Static_assert(sizeof(tn_vk_push_sse) == 12, "mirror of tn_sse_push in glsl/tn_push.glsl");

/* glsl/tn_sse_bwd.comp */
typedef struct {
    uint32_t count, has_target, diff_offset, g_offset;
} tn_vk_push_sse_bwd;
_Static_assert(sizeof(tn_vk_push_sse_bwd) == 16, "mirror of tn_sse_bwd_push in glsl/tn_push.glsl");

/* glsl/tn_noise.comp: kind 0 uniform, 1 Gumbel */
typedef struct {
    uint32_t count, kind, key, offset;
} tn_vk_push_noise;
_Static_assert(sizeof(tn_vk_push_noise) == 16, "mirror of tn_noise_push in glsl/tn_push.glsl");

#endif
