/* vk_dispatch.c: recording a dispatch, checked against its pipeline's row of vk_pipeline.h
 * (bindings, views against the device's limits, push constants, workgroup counts). */
#include "vk_pipeline.h"

#include <stdio.h>
#include <string.h>

#include "vk_check.h"

/* Resolves the view and checks it against the device's limits for its kind of binding. Every
 * dispatch binds several views, so a good one costs a few compares; the message is made only for
 * a bad one. */
static int view_bind_check(const vk_context *vk, const char *name, uint32_t binding, int uniform, vk_view *view)
{
    const VkPhysicalDeviceLimits *lim = &vk->props.limits;
    VkDeviceSize align = uniform ? lim->minUniformBufferOffsetAlignment : lim->minStorageBufferOffsetAlignment;
    VkDeviceSize range = uniform ? lim->maxUniformBufferRange : lim->maxStorageBufferRange;
    if (vk_view_inside(view) && view->size && view->offset % align == 0 && view->size <= range) return DLCA_OK;
    char what[96];
    snprintf(what, sizeof what, "%s binding %u", name, binding);
    int rc = vk_view_check(view, what);
    if (rc) return rc;
    const char *kind = uniform ? "Uniform" : "Storage";
    if (view->size == 0) return err_set(DLCA_ERR, "%s: empty view", what);
    if (view->offset % align)
        return err_set(DLCA_ERR, "%s: offset %llu is not a multiple of min%sBufferOffsetAlignment %llu", what,
                       (unsigned long long)view->offset, kind, (unsigned long long)align);
    if (view->size > range)
        return err_set(DLCA_ERR, "%s: %.1f MiB exceeds max%sBufferRange %.1f MiB", what, (double)view->size / 1048576.0,
                       kind, (double)range / 1048576.0);
    return DLCA_OK;
}

static int dispatch_check(const vk_context *vk, const vk_pipeline_desc *desc, uint32_t n_views, const void *push,
                          uint32_t push_size, const uint32_t groups[3])
{
    if (n_views != desc->binding_count)
        return err_set(DLCA_ERR, "dispatch %s: %u buffers given, the pipeline has %u bindings", desc->name, n_views,
                       desc->binding_count);
    if (push_size != desc->push_size || (push_size && !push))
        return err_set(DLCA_ERR, "dispatch %s: push constants of %u bytes given, the pipeline takes %u", desc->name,
                       push ? push_size : 0, desc->push_size);
    for (int i = 0; i < 3; i++)
        if (groups[i] > vk->props.limits.maxComputeWorkGroupCount[i])
            return err_set(DLCA_ERR, "dispatch %s: %u groups in dimension %d, the device allows %u", desc->name,
                           groups[i], i, vk->props.limits.maxComputeWorkGroupCount[i]);
    return DLCA_OK;
}

/* Checks the call against `desc` and records it with pipeline `p`, or with the table's pipeline
 * `id` when p is NULL (created on first use). */
static int dispatch_record(vk_context *vk, VkCommandBuffer cmd, const vk_pipeline *p, vk_pipeline_id id,
                           const vk_pipeline_desc *desc, const vk_view *views, uint32_t n_views, const void *push,
                           uint32_t push_size, const uint32_t groups[3])
{
    int rc = dispatch_check(vk, desc, n_views, push, push_size, groups);
    if (rc) return rc;
    if (!p && (rc = vk_pipeline_get(vk, id, &p))) return rc;
    VkDescriptorBufferInfo infos[VK_MAX_BINDINGS];
    VkWriteDescriptorSet writes[VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < n_views; i++) {
        vk_view view = views[i];
        if ((rc = view_bind_check(vk, desc->name, i, p->uniform_bindings >> i & 1u, &view))) return rc;
        infos[i] = (VkDescriptorBufferInfo){view.buffer->buffer, view.offset, view.size};
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = vk_pipeline_binding_type(p, i),
            .pBufferInfo = &infos[i],
        };
    }
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
    vk->cmd_push_descriptor_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, n_views, writes);
    if (push_size) vkCmdPushConstants(cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
    vkCmdDispatch(cmd, groups[0], groups[1], groups[2]);
    vk->dispatches++; /* instrumentation for dlca bench */
    vk->last_kernel = desc->name;
    vk_dispatch_stamps *s = vk->dispatch_stamps;
    if (s && vk->timestamps && s->count < s->limit) {
        if (s->count == 0) vkCmdResetQueryPool(cmd, vk->timestamps, s->first, s->limit);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vk->timestamps, s->first + s->count);
        s->names[s->count++] = desc->name;
    }
    return DLCA_OK;
}

int vk_dispatch(vk_context *vk, VkCommandBuffer cmd, vk_pipeline_id id, const vk_view *views, uint32_t n_views,
                const void *push, uint32_t push_size, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z)
{
    if ((unsigned)id >= VK_PIPE_COUNT) return err_set(DLCA_ERR, "pipeline id %d is not in the table", (int)id);
    const uint32_t groups[3] = {groups_x, groups_y, groups_z};
    return dispatch_record(vk, cmd, NULL, id, &vk_pipeline_descs[id], views, n_views, push, push_size, groups);
}

int vk_dispatch_pipeline(vk_context *vk, VkCommandBuffer cmd, const vk_pipeline *p, const vk_pipeline_desc *desc,
                         const vk_view *views, uint32_t n_views, const void *push, uint32_t push_size,
                         uint32_t groups_x, uint32_t groups_y, uint32_t groups_z)
{
    if (!p || !p->pipeline) return err_set(DLCA_ERR, "dispatch %s: the pipeline was not created", desc->name);
    const uint32_t groups[3] = {groups_x, groups_y, groups_z};
    return dispatch_record(vk, cmd, p, VK_PIPE_COUNT, desc, views, n_views, push, push_size, groups);
}

int vk_groups_1d_local(const vk_context *vk, const char *name, uint32_t local_size, uint64_t count, uint32_t groups[3])
{
    const uint32_t *max = vk->props.limits.maxComputeWorkGroupCount;
    uint64_t local = local_size ? local_size : 1;
    uint64_t total = (count + local - 1) / local;
    uint64_t x = total < max[0] ? total : max[0];
    uint64_t y = x ? (total + x - 1) / x : 0;
    if (y > max[1])
        return err_set(DLCA_ERR, "dispatch %s: %llu invocations exceed the device's grid", name,
                       (unsigned long long)count);
    groups[0] = (uint32_t)x; /* 0 for count 0: a valid empty dispatch */
    groups[1] = (uint32_t)(y ? y : 1);
    groups[2] = 1;
    return DLCA_OK;
}

int vk_groups_1d(const vk_context *vk, vk_pipeline_id id, uint64_t count, uint32_t groups[3])
{
    if ((unsigned)id >= VK_PIPE_COUNT) return err_set(DLCA_ERR, "pipeline id %d is not in the table", (int)id);
    return vk_groups_1d_local(vk, vk_pipeline_descs[id].name, vk_pipeline_descs[id].local_size_x, count, groups);
}

int vk_dispatch_1d(vk_context *vk, VkCommandBuffer cmd, vk_pipeline_id id, const vk_view *views, uint32_t n_views,
                   const void *push, uint32_t push_size, uint64_t count)
{
    uint32_t groups[3] = {0, 0, 0};
    int rc = vk_groups_1d(vk, id, count, groups);
    if (rc) return rc;
    return vk_dispatch(vk, cmd, id, views, n_views, push, push_size, groups[0], groups[1], groups[2]);
}
