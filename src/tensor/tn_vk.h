/* tn_vk.h: tn tensors on a Vulkan device (module prefix tn_vk_, plus the copies tn_to_device /
 * tn_to_cpu). A device tensor's storage is one device-local vk_buffer of float32; kernels read
 * and write strided views of it, so views (transpose, slice, expand) need no copies.
 *
 * One vk_context serves the tn device per process: tn_vk_init binds it (tn_to_device binds it
 * on first use) and tn_vk_free unbinds it after every device tensor is gone.
 *
 * Execution: ops record their dispatches into one open command buffer, each followed by a
 * barrier; it is submitted and waited for only when the host needs data (a download, tn_get,
 * tn_item, tn_to_cpu, max's argmax indices, a reported gradient norm), when it grows long, or
 * by tn_vk_sync. DLCA_TN_SYNC=1 submits and waits after every op instead (a debug switch that
 * pins a failing kernel to its op). Not thread-safe: use the device from one thread.
 *
 * Only float32 lives on the device; float64 stays on the CPU (finite-difference checks). An op
 * given tensors on different devices fails with a message; copies are always explicit. */
#ifndef DLCA_TN_VK_H
#define DLCA_TN_VK_H

#include "tn_optim.h"
#include "tn_tensor.h"
#include "vk_context.h"

/* Binds `vk` as the tn device. Binding the bound context again is a no-op; another one while
 * one is bound is an error. */
int tn_vk_init(vk_context *vk);

/* Waits for recorded work, releases the backend's buffers and unbinds. Fails (and stays bound)
 * while device tensors are alive; call it before vk_context_free. */
int tn_vk_free(void);

/* Submits the recorded work and waits for it. */
int tn_vk_sync(void);

/* Device storages alive now (a leak check for tests). */
long tn_vk_live_storages(void);

/* A float32 copy of t on the device (binding vk first if nothing is bound). Differentiable: the
 * gradient comes back to t on the CPU. A device tensor is returned as is (one more reference). */
tn_tensor *tn_to_device(tn_tensor *t, vk_context *vk);

/* A CPU copy of t, dense in C order; differentiable. A CPU tensor is returned as is. */
tn_tensor *tn_to_cpu(tn_tensor *t);

/* Moves a float32 parameter buffer to the device in place: every parameter tensor and its
 * gradient view follow. Call it after the last tn_params_add and before building graphs from
 * the parameters (no other views of the blocks may exist). */
int tn_params_to_device(tn_params *p, vk_context *vk);

/* ---- used by tn_optim.c for parameter buffers on the device ---- */

/* One optimizer update of the whole buffer: one dispatch (AdamW through glsl/adamw.comp, SGD and
 * Adam through glsl/tn_optim.comp). Optimizer state lives on the device in float32. */
int tn_vk_optim_step(tn_optim *o, tn_params *p);

/* Clips the gradient block by global L2 norm on the device (a deterministic sum of squares, then
 * a scale); *norm, unless NULL, gets the norm before clipping (this reads it back). */
int tn_vk_clip_grad_norm(tn_params *p, double max_norm, double *norm);

/* Frees an optimizer's device state (tn_optim_free calls it). */
void tn_vk_optim_free(tn_optim *o);

#endif
