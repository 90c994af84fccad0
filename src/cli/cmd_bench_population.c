/* cmd_bench_population.c: `dlca bench --population N`: the training step of N members of a
 * preset (ca_bench_population.h), printed and with --json written as one flat object. */
#include "cmd_bench.h"

#include "ca_bench_population.h"
#include "ca_memory.h"
#include "cli_env.h"
#include "cmd_population.h"
#include "error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const bench_options *options;
    const bench_machine *machine;
    const ca_config *config;
    ca_bench_population_result result;
    uint32_t queues; /* the GPU queues its members' steps spread over at the end */
} population_report;

static void json_population(cli_json *w, const void *data)
{
    const population_report *t = data;
    const ca_config *c = t->config;
    const ca_bench_population_result *r = &t->result;
    int gpu = strcmp(t->machine->engine, "gpu") == 0;
    cmd_bench_json_machine(w, t->machine, "population");
    cli_json_string(w, "preset", c->preset);
    cli_json_number(w, "members", r->members);
    cli_json_number(w, "batch", c->batch);
    cli_json_number(w, "T", c->steps);
    cli_json_string(w, "cache", t->options->cache == CA_CACHE_CHECKPOINT ? "checkpoint" : "full");
    cli_json_number(w, "warmup_steps", r->warmup);
    cli_json_number(w, "measured_steps", r->steps);
    cmd_bench_json_spread(w, "step_ms", &r->step_ms, 1);
    cmd_bench_json_spread(w, "measured_step_ms", &r->measured_ms, 1);
    cli_json_string(w, "hard_loss_on", r->hard_loss_on);
    cli_json_number(w, "member_step_ms_median", r->step_ms.median / r->members);
    cli_json_number(w, "dispatches_per_step", gpu ? r->dispatches_per_step : NAN);
    cli_json_number(w, "submissions_per_step", gpu ? r->submissions_per_step : NAN);
    cli_json_number(w, "queues", gpu ? t->queues : NAN);
    cli_json_number(w, "record_ms_median", gpu ? r->record_ms.median : NAN);
    cli_json_number(w, "run_ms_median", gpu ? r->run_ms.median : NAN);
    cli_json_number(w, "peak_device_bytes", gpu ? (double)r->peak_device_bytes : NAN);
}

static void print_population(const population_report *t)
{
    const ca_config *c = t->config;
    const ca_bench_population_result *r = &t->result;
    printf("bench: a population of %d %s members (batch %d, %dx%d, T=%d) on %s; %d warm-up, %d measured steps\n",
           r->members, c->preset, c->batch, c->height, c->width, c->steps, t->machine->device, r->warmup, r->steps);
    printf("  step            %10.4g ms median (p10 %.4g, p90 %.4g), %.4g ms a member\n", r->step_ms.median,
           r->step_ms.p10, r->step_ms.p90, r->step_ms.median / r->members);
    static const char *const where[][2] = {{"host", "measured on the host's threads while the GPU steps"},
                                           {"gpu", "a hard rollout in the GPU's step"},
                                           {"cpu", "a hard rollout on the CPU engine"}};
    const char *how = "";
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++)
        if (r->hard_loss_on && strcmp(r->hard_loss_on, where[i][0]) == 0) how = where[i][1];
    printf("  with hard loss  %10.4g ms median (p10 %.4g, p90 %.4g): %s\n", r->measured_ms.median,
           r->measured_ms.p10, r->measured_ms.p90, how);
    if (strcmp(t->machine->engine, "gpu") == 0) {
        printf("  of a step       %10.4g ms recording and submitting the members' commands (the GPU running "
               "meanwhile), %.4g ms from the last submission to the end (medians)\n", r->record_ms.median,
               r->run_ms.median);
        printf("  %.0f dispatches and %.0f queue submissions a step (%u queues); peak device memory %.1f MiB\n",
               r->dispatches_per_step, r->submissions_per_step, t->queues,
               (double)r->peak_device_bytes / (1024.0 * 1024.0));
    }
    fflush(stdout);
}

int cmd_bench_population(const bench_options *o)
{
    ca_config config;
    ca_target_image target;
    double *image = NULL;
    vk_context vk;
    ca_backend backend = CA_BACKEND_CPU;
    ca_population population;
    bench_machine machine;
    memset(&target, 0, sizeof target), memset(&vk, 0, sizeof vk), memset(&population, 0, sizeof population);
    population_report report = {o, &machine, &config, {0}, 0};
    ca_options run;
    int rc = cli_run_options(&run, o->device);
    run.gpu.cache = o->cache;
    run.hard_rollout_always = 1; /* "with hard loss" times the rollout */
    if (o->cold) run.vk.pipeline_cache[0] = '\0';
    int members = (int)o->population;
    run.models = members;
    if (!rc) rc = cmd_bench_config(o, run.assets, &config, &target, &image);
    if (!rc) rc = ca_backend_open(&run, &vk, &backend);
    if (!rc) rc = cmd_population_memory(&config, members, backend, &vk, &run, CA_MEMORY_DEFAULT_GIB);
    if (!rc) rc = ca_population_init(&population, &config, members, image, backend, &vk, &run, 1);
    if (!rc) {
        int gpu = backend == CA_BACKEND_GPU;
        int steps = o->has_steps ? (int)o->steps : gpu ? 20 : 3, warmup = o->has_warmup ? (int)o->warmup : gpu ? 3 : 1;
        cmd_bench_machine_describe(&machine, backend, &vk);
        rc = ca_bench_population(&population, warmup, steps, &report.result);
    }
    report.queues = backend == CA_BACKEND_GPU ? population.queues : 0;
    if (!rc) print_population(&report);
    if (!rc && o->json) rc = cmd_bench_json_write(o->json, json_population, &report);
    if (population.members) ca_population_free(&population);
    if (backend == CA_BACKEND_GPU) vk_context_free(&vk);
    ca_target_image_free(&target);
    free(image);
    return rc;
}
