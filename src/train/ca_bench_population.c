/* ca_bench_population.c: a population's training step, timed (ca_bench_population.h). */
#include "ca_bench_population.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* `steps` steps of every member, each step's wall ms into ms[] (its parts into parts[], parts[steps
 * + i], where not NULL). */
static int timed_steps(ca_population *p, int steps, int measure, double *soft, double *hard, double *ms, double *parts)
{
    for (int i = 0; i < steps; i++) {
        double start = ca_bench_now_ms();
        if (ca_population_step(p, measure, soft, hard)) return DLCA_ERR;
        ms[i] = ca_bench_now_ms() - start;
        if (parts) parts[i] = p->record_ms, parts[steps + i] = p->run_ms;
    }
    return DLCA_OK;
}

int ca_bench_population(ca_population *p, int warmup, int steps, ca_bench_population_result *r)
{
    memset(r, 0, sizeof *r);
    if (warmup < 0 || steps < 1) return err_set(DLCA_ERR, "bench: %d warm-up and %d measured steps", warmup, steps);
    r->members = p->count, r->steps = steps;
    double *soft = calloc((size_t)p->count, sizeof(double)), *hard = calloc((size_t)p->count, sizeof(double));
    double *ms = malloc(4 * (size_t)steps * sizeof(double));
    int rc = soft && hard && ms ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for %d members", p->count);
    vk_context *vk = p->backend == CA_BACKEND_GPU ? p->vk : NULL;
    double least = vk && vk->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU ? CA_BENCH_GPU_WARMUP_MS : 0.0;
    double start = ca_bench_now_ms();
    int done = 0;
    for (; !rc && (done < warmup || ca_bench_now_ms() - start < least) && done < 1000000; done++)
        rc = ca_population_step(p, 0, soft, hard);
    r->warmup = done;
    uint64_t dispatches = vk ? vk->dispatches : 0, submissions = vk ? vk->submissions : 0;
    if (!rc) rc = timed_steps(p, steps, 0, soft, hard, ms, ms + 2 * steps);
    if (!rc && vk) {
        r->dispatches_per_step = (double)(vk->dispatches - dispatches) / steps;
        r->submissions_per_step = (double)(vk->submissions - submissions) / steps;
    }
    if (!rc) rc = timed_steps(p, steps, 1, soft, hard, ms + steps, NULL);
    if (!rc) {
        r->step_ms = ca_bench_spread_of(ms, steps);
        r->measured_ms = ca_bench_spread_of(ms + steps, steps);
        r->record_ms = ca_bench_spread_of(ms + 2 * steps, steps);
        r->run_ms = ca_bench_spread_of(ms + 3 * steps, steps);
        r->peak_device_bytes = vk ? vk->peak_device_bytes : 0;
        r->hard_loss_on = !vk ? "cpu" : p->members[0].trainer.hard_on_host ? "host" : "gpu";
    }
    free(soft), free(hard), free(ms);
    return rc;
}
