/* ca_backend.h: choosing where to train or run: `--device auto|cpu|N|name`. */
#ifndef DLCA_CA_BACKEND_H
#define DLCA_CA_BACKEND_H

#include "ca_train.h"
#include "vk_context.h"

/* Opens the engine named by `spec`, a command's --device value, or NULL when none was given:
 * then the environment's DLCA_DEVICE names it (this is the one place dlca reads DLCA_DEVICE;
 * set but empty counts as unset), else "auto". "cpu" is the CPU engine; "auto" a real GPU when
 * there is one, else the CPU engine (a CPU Vulkan driver like lavapipe is slower than it);
 * anything else goes to vk_context_init_spec (an index, a type or part of a name) and must
 * succeed. An empty --device is refused. Messages name the flag or the variable and its value.
 * On CA_BACKEND_GPU, `vk` is initialised and the caller frees it. */
int ca_backend_open(const char *spec, vk_context *vk, ca_backend *backend);

/* "cpu" or the Vulkan device's name, for progress lines and logs. */
const char *ca_backend_name(ca_backend backend, const vk_context *vk);

#endif
