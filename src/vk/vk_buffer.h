/* vk_buffer.h: storage buffers on the device, host-visible staging buffers, views into a
 * region of one buffer, and synchronous upload/download through the context's staging buffer. */
#ifndef DLCA_VK_BUFFER_H
#define DLCA_VK_BUFFER_H

#include "vk_context.h"

typedef enum {
    VK_BUFFER_DEVICE,  /* device-local storage buffer; counted in vk->device_bytes */
    VK_BUFFER_STAGING  /* host-visible, coherent, mapped for the buffer's lifetime */
} vk_buffer_kind;

typedef struct vk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    VkDeviceSize size;      /* bytes asked for */
    VkDeviceSize allocated; /* bytes of memory behind it (>= size) */
    void *mapped;           /* staging buffers only: device buffers always go through staging,
                             * even on unified memory, so every device takes the same path */
    vk_buffer_kind kind;
} vk_buffer;

/* A region of a buffer, bound to one shader binding. size 0 means "to the end". */
typedef struct vk_view {
    vk_buffer *buffer;
    VkDeviceSize offset;
    VkDeviceSize size;
} vk_view;

/* Creates a buffer of `bytes` (> 0) usable as storage and as transfer source/destination.
 * Out of memory gives an error naming the MiB asked for. */
int vk_buffer_create(vk_context *vk, vk_buffer *buf, VkDeviceSize bytes, vk_buffer_kind kind);

/* Destroys the buffer and zeroes the struct; safe on a zeroed one. The GPU must be done with it. */
void vk_buffer_free(vk_context *vk, vk_buffer *buf);

/* Copies host `data` to buf[offset .. offset+bytes) and waits. Makes the data visible to
 * transfers and compute shaders submitted later. */
int vk_buffer_upload(vk_context *vk, vk_buffer *buf, VkDeviceSize offset, const void *data, VkDeviceSize bytes);

/* Copies buf[offset .. offset+bytes) to host `data` after all earlier submissions, and waits. */
int vk_buffer_download(vk_context *vk, const vk_buffer *buf, VkDeviceSize offset, void *data, VkDeviceSize bytes);

/* Records a fill of the view with a 32-bit pattern; offset and size must be multiples of 4.
 * Put vk_cmd_barrier_transfer_to_compute after it before a kernel reads the region. */
int vk_buffer_fill(VkCommandBuffer cmd, vk_view view, uint32_t value);

/* vk_buffer_fill with the bits of a float. */
int vk_buffer_fill_float(VkCommandBuffer cmd, vk_view view, float value);

/* vk_buffer_fill with zero. */
int vk_buffer_zero(VkCommandBuffer cmd, vk_view view);

/* The whole buffer as a view. */
static inline vk_view vk_view_all(vk_buffer *buf) { return (vk_view){buf, 0, buf->size}; }

/* buf[offset .. offset+size) as a view (bounds are checked where the view is used). */
static inline vk_view vk_view_of(vk_buffer *buf, VkDeviceSize offset, VkDeviceSize size)
{
    return (vk_view){buf, offset, size};
}

/* Whether the view lies inside its buffer, resolving size 0 to "the rest" where it does; no
 * message (what vk_view_check says when it does not). */
int vk_view_inside(vk_view *view);

/* Checks that the view lies inside its buffer and resolves size 0 to "the rest";
 * `what` names the view in the error message. */
int vk_view_check(vk_view *view, const char *what);

#endif
