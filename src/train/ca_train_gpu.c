/* ca_train_gpu.c: the training step on the Vulkan engine (ca_train.c holds the other half).
 * A step is one command buffer and one submission: the round's start and target, optionally
 * the hard rollout and its loss, the soft rollout and loss, BPTT, and the logit gradient with
 * AdamW (one dispatch).
 * The losses land in host-visible memory, read once the fence signals. */
#include "ca_train.h"

#include "ca_gpu_check.h"
#include "error.h"
#include "vk_command.h"

#include <math.h>
#include <string.h>

static int record_step(ca_trainer *t, VkCommandBuffer cmd, int with_hard)
{
    ca_gpu *g = &t->gpu;
    if (ca_gpu_task_round(g, cmd, t->step)) return DLCA_ERR;
    /* Every preset starts from bits, so the hard rollout starts from the same grid 0. */
    if (with_hard && (ca_gpu_coefficients(g, cmd, 1) || ca_gpu_forward_loss(g, cmd, 1))) return DLCA_ERR;
    if (ca_gpu_coefficients(g, cmd, 0) || ca_gpu_forward_loss(g, cmd, 0) ||
        ca_gpu_backward(g, cmd) || ca_gpu_logits_adamw(g, cmd, &t->adamw))
        return DLCA_ERR;
    vk_cmd_barrier_to_host(cmd);
    return DLCA_OK;
}

int ca_trainer_gpu_step(ca_trainer *t, double *soft_loss, double *hard_loss)
{
    VkCommandBuffer cmd;
    ca_gpu_set_adamw_step(&t->gpu, &t->adamw, t->step + 1);
    if (t->options.check_stages) {
        if (ca_gpu_check_step(t, hard_loss != NULL)) return DLCA_ERR;
    } else {
        if (vk_cmd_begin(t->vk, &cmd)) return DLCA_ERR;
        if (record_step(t, cmd, hard_loss != NULL)) {
            vk_cmd_free(t->vk, cmd);
            return DLCA_ERR;
        }
        if (vk_cmd_finish(t->vk, cmd)) return DLCA_ERR;
        /* Not every workgroup of a persistent kernel could run at once (too many tiles for the
         * device, or a busy one): AdamW skipped the step, which runs again one dispatch a CA
         * step, as every later one (dlca bench reports it). */
        if (ca_gpu_persistent_gave_up(&t->gpu)) {
            if (ca_gpu_persistent_off(&t->gpu)) return DLCA_ERR;
            return ca_trainer_gpu_step(t, soft_loss, hard_loss);
        }
    }
    /* As on the CPU: a gradient that is not finite stops the run (the logit kept its value). */
    uint32_t nonfinite;
    memcpy(&nonfinite, (const float *)t->gpu.losses.mapped + CA_GPU_NONFINITE_SLOT, sizeof nonfinite);
    if (nonfinite == t->step + 1) return ca_trainer_nonfinite(t, "gradient");
    const float *losses = t->gpu.losses.mapped;
    *soft_loss = losses[0];
    if (hard_loss) *hard_loss = losses[1];
    if (!isfinite(*soft_loss)) return ca_trainer_nonfinite(t, "loss");
    t->step++;
    return DLCA_OK;
}
