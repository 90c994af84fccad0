/* ca_backend.h: choosing where to train or run: `--device auto|cpu|N|name`. */
#ifndef DLCA_CA_BACKEND_H
#define DLCA_CA_BACKEND_H

#include "ca_options.h"
#include "ca_train.h"
#include "vk_context.h"

/* The most queues a run opens: a population spreads its members' steps over the queues, and four
 * take all that spreading gains (lizard x 16 on an H200: 54.0, 40.0, 36.5, 37.4 ms a step with 1,
 * 2, 4, 8), while vkCreateDevice costs the NVIDIA driver about 25 ms a queue (an H100: 75 ms with
 * one, 144 with four, 245 with eight), paid by every command (docs/bench-notes.md, twenty-second
 * round). */
#define CA_BACKEND_QUEUES_MAX 4

/* The queues for `models` models side by side (0: one): one a model, at most
 * CA_BACKEND_QUEUES_MAX. */
uint32_t ca_backend_queues(int models);

/* Opens the engine named by options->device (NULL: "auto"): "cpu" is the CPU engine; "auto" a
 * real GPU when there is one, else the CPU engine (a CPU Vulkan driver like lavapipe is slower than
 * it); anything else goes to vk_context_init_spec (an index, a type or part of a name) and must
 * succeed. An empty name is refused. Messages name where the device came from (--device or
 * DLCA_DEVICE) and its value. On CA_BACKEND_GPU, `vk` is initialised (with options->vk, whose
 * queues, when 0, become ca_backend_queues(options->models)) and the caller frees it. */
int ca_backend_open(const ca_options *options, vk_context *vk, ca_backend *backend);

/* "cpu" or the Vulkan device's name, for progress lines and logs. */
const char *ca_backend_name(ca_backend backend, const vk_context *vk);

#endif
