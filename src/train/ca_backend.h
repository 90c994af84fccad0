/* ca_backend.h: choosing where to train or run: `--device auto|cpu|N|name`. */
#ifndef DLCA_CA_BACKEND_H
#define DLCA_CA_BACKEND_H

#include "ca_options.h"
#include "ca_train.h"
#include "vk_context.h"

/* Opens the engine named by options->device (NULL: "auto"): "cpu" is the CPU engine; "auto" a
 * real GPU when there is one, else the CPU engine (a CPU Vulkan driver like lavapipe is slower than
 * it); anything else goes to vk_context_init_spec (an index, a type or part of a name) and must
 * succeed. An empty name is refused. Messages name where the device came from (--device or
 * DLCA_DEVICE) and its value. On CA_BACKEND_GPU, `vk` is initialised (with options->vk) and the
 * caller frees it. */
int ca_backend_open(const ca_options *options, vk_context *vk, ca_backend *backend);

/* "cpu" or the Vulkan device's name, for progress lines and logs. */
const char *ca_backend_name(ca_backend backend, const vk_context *vk);

#endif
