/* ca_memory.h: the host memory a run will take, estimated from its sizes before anything is
 * allocated, and the limit train, run and eval hold it to (--max-memory GiB, default 4). A
 * model file of 3 KB may ask for a 4096x4096 grid, a batch of 65536 or T = 10000: without this,
 * the first sign was gigabytes taken, or the machine swapping, before an allocation failed.
 *
 * The estimates add up what grows with the grid, the batch, T and the gates, as the engines
 * allocate it (ca_cpu.c, ca_fast.c, hard_cpu.c, hard_gpu.c, the GPU engine's plan, the trainer's
 * and runner's grids); fixed costs of a few MiB (the binary, libraries, the model) are left out.
 * On a GPU the device's buffers count only where they are host memory: a CPU driver (lavapipe)
 * or an integrated GPU. */
#ifndef DLCA_CA_MEMORY_H
#define DLCA_CA_MEMORY_H

#include "ca_train.h"

#define CA_MEMORY_DEFAULT_GIB 4.0
#define CA_MEMORY_MIN_GIB 0.001
#define CA_MEMORY_MAX_GIB 1048576.0 /* --max-memory takes CA_MEMORY_MIN_GIB..CA_MEMORY_MAX_GIB */

/* Bytes of a runner (ca_runner.h) of `model` on `batch` grids of height x width, hard or soft. */
double ca_memory_runner(const ca_model *model, ca_backend backend, const vk_context *vk, int batch, int height,
                        int width, int hard);

/* Bytes of a trainer (ca_train.h) of `model` with its config's batch, grid and T, on the engine
 * `options` choose. */
double ca_memory_trainer(const ca_model *model, ca_backend backend, const vk_context *vk, const ca_options *options);

/* DLCA_OK when `bytes` fit in `limit_gib`; otherwise an error: "<what> needs about N GiB of
 * memory, over the --max-memory limit of L GiB: give --max-memory M to allow it". */
int ca_memory_check(double bytes, double limit_gib, const char *what, ...) __attribute__((format(printf, 3, 4)));

/* ca_memory_check of a trainer, the message naming the batch, grid and T. */
int ca_memory_check_training(const ca_model *model, ca_backend backend, const vk_context *vk,
                             const ca_options *options, double limit_gib);

#endif
