// tn_push.glsl: push-constant structs of the tn kernels that tn's own pipeline table lists
// (src/tensor_vk/tn_vk_internal.h), mirrors of src/tensor_vk/tn_vk_push.h (C tn_vk_push_<x> ==
// GLSL tn_<x>_push, sizes pinned there). Include it after common.glsl, before the push block.
#ifndef DLCA_TN_PUSH_GLSL
#define DLCA_TN_PUSH_GLSL

// glsl/tn_optim.comp. bits: kind (0 SGD, 1 Adam, 2 AdamW) | nesterov << 2 | parity << 3 |
// n_flags << 8; a, b: momentum, dampening (SGD) or beta1, beta2 (Adam)
struct tn_optim_step_push {
    uint count, bits;
    float lr, a, b, weight_decay;
    float eps, clip, log_beta1, log_beta2;
};

// glsl/tn_optim_check.comp
struct tn_optim_check_push {
    uint count, check, flag_words, flag_offset;
    uint mask;
};

// glsl/tn_softmax_matmul.comp: mode 0 forward, 1 backward, 2 argmax one-hot
struct tn_smm_push {
    uint rows, k, c, mode;
    uint out_offset, z_offset, m_offset, g_offset;
    uint lanes;
};

// glsl/tn_sse.comp
struct tn_sse_push {
    uint count, groups, loss_offset;
};

// glsl/tn_sse_bwd.comp
struct tn_sse_bwd_push {
    uint count, has_target, diff_offset, g_offset;
};

// glsl/tn_noise.comp: kind 0 uniform, 1 Gumbel
struct tn_noise_push {
    uint count, kind, key, offset;
};

#endif
