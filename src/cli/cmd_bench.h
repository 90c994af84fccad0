/* cmd_bench.h: what the parts of `dlca bench` share: its options, where it ran, and its JSON
 * (one flat object, one "key": value per line, for tools/bench_table.sh). */
#ifndef DLCA_CMD_BENCH_H
#define DLCA_CMD_BENCH_H

#include "ca_backend.h"
#include "ca_bench.h"
#include "ca_target.h"
#include "cli_json.h"

typedef struct {
    const char *preset, *device, *json, *hard_model;
    const char *perception_wiring; /* --perception-wiring, or NULL: the preset's */
    ca_cache cache;
    long long batch, T, steps, warmup;
    int has_preset, has_batch, has_T, has_steps, has_warmup, has_device, hard;
    int cold;    /* no pipeline cache: start-up as on a first run */
    int kernels; /* time each dispatch too */
    long long population; /* > 0: time a population of that many (cmd_bench_population) */
} bench_options;

/* Where it ran: shared by every mode. */
typedef struct {
    const char *engine, *device, *device_type, *driver;
    char host[256], date[32], cpu[256], driver_text[512], api[32];
} bench_machine;

/* Fills `machine`: date, host, CPU, and on a GPU its name, type, driver and Vulkan version. */
void cmd_bench_machine_describe(bench_machine *machine, ca_backend backend, const vk_context *vk);

/* The machine's keys, and "mode" (train, hard, population). */
void cmd_bench_json_machine(cli_json *json, const bench_machine *machine, const char *mode);

/* NAME_median, _p10, _p90, _min and _max; null each where `known` is 0. */
void cmd_bench_json_spread(cli_json *json, const char *name, const ca_bench_spread *spread, int known);

/* Lets `body` write the members of one object, then writes it to `path` atomically ("-": stdout). */
int cmd_bench_json_write(const char *path, void (*body)(cli_json *, const void *), const void *data);

/* The preset's config with --batch, --T and --perception-wiring, and its target picture (target
 * and image stay empty for a preset without one). */
int cmd_bench_config(const bench_options *options, const char *assets, ca_config *config, ca_target_image *target,
                     double **image);

/* `dlca bench --population N`: a population's training step (cmd_bench_population.c). */
int cmd_bench_population(const bench_options *options);

#endif
