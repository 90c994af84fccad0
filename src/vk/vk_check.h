/* vk_check.h: every VkResult goes through VK_CHECK / VK_STATUS, which name the call, the
 * result as text, file and line in the error channel (src/core/error.h). */
#ifndef DLCA_VK_CHECK_H
#define DLCA_VK_CHECK_H

#include <vulkan/vulkan.h>

#include "error.h"

/* Text name of a VkResult; device loss and out-of-memory carry a short explanation. */
const char *vk_result_name(VkResult result);

/* DLCA_OK for VK_SUCCESS, else sets the message naming `call` at file:line and returns DLCA_ERR. */
static inline int vk_check_result(VkResult result, const char *call, const char *file, int line)
{
    if (result == VK_SUCCESS) return DLCA_OK;
    return err_set(DLCA_ERR, "%s failed: %s (%s:%d)", call, vk_result_name(result), file, line);
}

/* Status of a Vulkan call, for paths that must clean up: `if ((rc = VK_STATUS(...))) goto fail;` */
#define VK_STATUS(call) vk_check_result((call), #call, __FILE__, __LINE__)

/* Returns the error status from the enclosing function when `call` does not return VK_SUCCESS. */
#define VK_CHECK(call)                                \
    do {                                              \
        int vk_check_status_ = VK_STATUS(call);       \
        if (vk_check_status_) return vk_check_status_; \
    } while (0)

#endif
