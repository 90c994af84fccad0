/* ca_train_gpu.c: the training step on the Vulkan engine (ca_train.c holds the loop's other half). */
#include "ca_train.h"

#include "ca_task.h"
#include "error.h"
#include "vk_command.h"

#include <stdlib.h>
#include <string.h>

/* Records the whole training step in one command buffer: the soft rollout, its loss
 * (slot 0), BPTT, the logit gradient and AdamW. */
static int gpu_record_step(ca_trainer *t, VkCommandBuffer cmd)
{
    ca_gpu *g = &t->gpu;
    return ca_gpu_coefficients(g, cmd, 0) || ca_gpu_forward(g, cmd) || ca_gpu_loss(g, cmd, 0) ||
           ca_gpu_backward(g, cmd) || ca_gpu_logits_gradient(g, cmd) || ca_gpu_adamw(g, cmd, &t->adamw);
}

static int gpu_submit(ca_trainer *t)
{
    VkCommandBuffer cmd;
    if (vk_cmd_begin(t->vk, &cmd)) return DLCA_ERR;
    if (gpu_record_step(t, cmd)) {
        vk_cmd_free(t->vk, cmd);
        return DLCA_ERR;
    }
    return vk_cmd_finish(t->vk, cmd);
}

int ca_trainer_gpu_step(ca_trainer *t, double *soft_loss, double *hard_loss)
{
    ca_gpu *g = &t->gpu;
    size_t n_grid = (size_t)t->model->config.channels * g->cells;
    if (hard_loss) {
        /* Hard rollout first, from the binarised start; it needs its own submission only
         * because the start grid differs. */
        double *binary = malloc(n_grid * sizeof(double));
        if (!binary) return err_set(DLCA_ERR_NOMEM, "out of memory");
        memcpy(binary, t->start, n_grid * sizeof(double));
        ca_task_binarize(binary, n_grid);
        int rc = ca_gpu_upload_grid(g, 0, binary);
        free(binary);
        VkCommandBuffer cmd;
        if (rc || vk_cmd_begin(t->vk, &cmd)) return DLCA_ERR;
        if (ca_gpu_coefficients(g, cmd, 1) || ca_gpu_forward(g, cmd) || ca_gpu_loss(g, cmd, 1)) {
            vk_cmd_free(t->vk, cmd);
            return DLCA_ERR;
        }
        if (vk_cmd_finish(t->vk, cmd)) return DLCA_ERR;
    }
    if (ca_gpu_upload_grid(g, 0, t->start)) return DLCA_ERR;
    ca_gpu_set_adamw_step(g, &t->adamw, t->step + 1);
    if (gpu_submit(t)) return DLCA_ERR;
    t->step++;
    float losses[2];
    if (ca_gpu_read_losses(g, losses, 2)) return DLCA_ERR;
    *soft_loss = losses[0];
    if (hard_loss) *hard_loss = losses[1];
    return DLCA_OK;
}

