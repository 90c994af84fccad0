/* cmd_population.c: `dlca train --population N`: members side by side (ca_population.h), the
 * best written as --out, a table of all at the end. */
#include "cmd_population.h"

#include "atomic_file.h"
#include "ca_memory.h"
#include "ca_backend.h"
#include "error.h"
#include "train_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cmd_population_memory(const ca_config *config, int count, ca_backend backend, const vk_context *vk,
                          const ca_options *options, double max_memory)
{
    ca_model model;
    if (ca_model_init(&model, config)) return DLCA_ERR;
    double bytes = (double)count * ca_memory_trainer(&model, backend, vk, options);
    ca_model_free(&model);
    return ca_memory_check(bytes, max_memory, "a population of %d %s run%s (each a batch of %d grid%s of %dx%d, T = %d)",
                           count, config->preset, count == 1 ? "" : "s", config->batch, config->batch == 1 ? "" : "s",
                           config->height, config->width, config->steps);
}

void cmd_population_show(void *context, const ca_population *p, uint64_t step, double seconds)
{
    const cmd_population_progress *show = context;
    double best = -1.0;
    int exact = 0, active = 0;
    for (int i = 0; i < p->count; i++) {
        const ca_member *m = &p->members[i];
        if (m->hard_step == step && (best < 0.0 || m->hard < best)) best = m->hard;
        exact += m->watch.exact_step > 0;
        active += m->active;
    }
    char hard[32] = "-";
    if (best >= 0.0) snprintf(hard, sizeof hard, "%.6g", best);
    fprintf(stderr, "%s step %llu/%llu  best hard %s  exact %d of %d  training %d  %.1f s\n", show->label,
            (unsigned long long)step, (unsigned long long)p->total, hard, exact, p->count, active, seconds);
    fflush(stderr);
}

char *cmd_population_member_path(const char *dir, const char *preset, uint64_t seed, const char *suffix)
{
    size_t size = strlen(dir) + strlen(preset) + strlen(suffix) + 40;
    char *path = malloc(size);
    if (path) snprintf(path, size, "%s/%s-seed%llu%s", dir, preset, (unsigned long long)seed, suffix);
    return path;
}

int cmd_population_write_log(const ca_member *m, const char *path)
{
    size_t n = m->row_count ? m->row_count : 1;
    uint64_t *steps = malloc(n * sizeof *steps);
    double *soft = malloc(n * sizeof(double)), *hard = malloc(n * sizeof(double)), *seconds = malloc(n * sizeof(double));
    int rc = steps && soft && hard && seconds ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for %s", path);
    for (size_t i = 0; !rc && i < m->row_count; i++)
        steps[i] = m->rows[i].step, soft[i] = m->rows[i].soft, hard[i] = m->rows[i].hard, seconds[i] = m->rows[i].seconds;
    image_plot_mark mark = {(double)m->out.step, m->out.wrong}; /* the circuit it writes */
    if (!rc) rc = train_log_write(path, steps, soft, hard, seconds, m->row_count, &mark);
    free(steps), free(soft), free(hard), free(seconds);
    return rc;
}

int cmd_population_dir(const char *dir, const char *flag)
{
    struct stat st;
    if (stat(dir, &st) != 0 && errno == ENOENT && mkdir(dir, 0777) != 0)
        return err_set(DLCA_ERR, "%s %s: cannot make the folder: %s", flag, dir, strerror(errno));
    if (stat(dir, &st) != 0) return err_set(DLCA_ERR, "%s %s: %s", flag, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return err_set(DLCA_ERR, "%s %s: not a folder", flag, dir);
    if (access(dir, W_OK | X_OK) != 0) return err_set(DLCA_ERR, "%s %s: the folder is not writable", flag, dir);
    return DLCA_OK;
}

/* Every member's model and log path in --keep-members, checked as dlca train checks --out: a
 * regular file or a new one, not replaced without --force. */
static int keep_paths(const cmd_population_args *a, char **paths)
{
    if (cmd_population_dir(a->keep_members, "--keep-members")) return DLCA_ERR;
    for (int i = 0; i < a->count; i++) {
        char **pair = &paths[2 * i];
        uint64_t seed = a->config->seed + (uint64_t)i;
        if (!(pair[0] = cmd_population_member_path(a->keep_members, a->config->preset, seed, ".dlca")) ||
            !(pair[1] = cmd_population_member_path(a->keep_members, a->config->preset, seed, ".csv")))
            return err_set(DLCA_ERR_NOMEM, "out of memory");
        for (int k = 0; k < 2; k++) {
            if (atomic_file_check(pair[k], "--keep-members")) return DLCA_ERR;
            if (!a->force && atomic_file_exists(pair[k]))
                return err_set(DLCA_ERR, "--keep-members: %s exists: pass --force to replace it", pair[k]);
            if (atomic_file_same(pair[k], a->out) || atomic_file_same(pair[k], a->log))
                return err_set(DLCA_ERR, "--keep-members: %s is the same file as --out or --log", pair[k]);
        }
    }
    return DLCA_OK;
}

/* The table of all members (stdout): the one written as --out is marked. */
static void print_table(const ca_population *p, int best)
{
    printf("%-3s %-8s %-12s %-10s %-8s %-11s %-8s\n", "", "seed", "soft", "hard", "steps", "exact step", "wall s");
    for (int i = 0; i < p->count; i++) {
        const ca_member *m = &p->members[i];
        char exact[24] = "-";
        if (m->watch.exact_step) snprintf(exact, sizeof exact, "%llu", (unsigned long long)m->watch.exact_step);
        printf("%-3s %-8llu %-12.6g %-10.6g %-8llu %-11s %-8.2f\n", i == best ? "*" : "",
               (unsigned long long)m->model.config.seed, m->soft, m->hard, (unsigned long long)m->stop_step, exact,
               m->seconds);
    }
    fflush(stdout);
}

static int write_files(const cmd_population_args *a, ca_population *p, char **keep, int best)
{
    const ca_member *m = &p->members[best];
    if (ca_population_save(p, best, a->out, a->target) || cmd_population_write_log(m, a->log)) return DLCA_ERR;
    for (int i = 0; keep && i < p->count; i++)
        if (ca_population_save(p, i, keep[2 * i], a->target) || cmd_population_write_log(&p->members[i], keep[2 * i + 1]))
            return DLCA_ERR;
    const ca_mark *out = &m->out;
    fprintf(stderr, "wrote %s (seed %llu: %s%.0f wrong cells, its circuit of step %llu%s), %s and %s%s%s\n", a->out,
            (unsigned long long)m->model.config.seed, out->exact ? "verified exact, " : "", out->wrong,
            (unsigned long long)out->step, m->use_best ? ", its best" : "", a->log, a->plot,
            keep ? "; every member in " : "", keep ? a->keep_members : "");
    return DLCA_OK;
}

int cmd_population_train(const cmd_population_args *a)
{
    ca_population p;
    memset(&p, 0, sizeof p);
    char **keep = NULL;
    int rc = cmd_population_memory(a->config, a->count, a->backend, a->vk, a->options, a->max_memory);
    if (!rc && a->keep_members) {
        keep = calloc(2 * (size_t)a->count, sizeof *keep);
        rc = keep ? keep_paths(a, keep) : err_set(DLCA_ERR_NOMEM, "out of memory");
    }
    if (!rc) rc = ca_population_init(&p, a->config, a->count, a->image, a->backend, a->vk, a->options, a->check_every);
    if (!rc) {
        const ca_config *c = a->config;
        fprintf(stderr, "training a population of %d %s runs (seeds %llu to %llu): %zu gates each, %dx%d grid, T=%d, "
                        "batch %d, %d steps on %s -> %s\n",
                a->count, c->preset, (unsigned long long)c->seed, (unsigned long long)c->seed + (unsigned long long)a->count - 1,
                p.members[0].model.gate_count, c->height, c->width, c->steps, c->batch, c->train_steps,
                ca_backend_name(a->backend, a->vk), a->out);
        cmd_population_progress show = {c->preset};
        ca_population_run run = {a->stop_exact ? CA_STOP_FIRST : CA_STOP_NONE, a->every, a->keep_final,
                                 cmd_population_show, &show, a->interrupt};
        rc = ca_population_train(&p, &run);
    }
    if (!rc && a->interrupt && *a->interrupt) fprintf(stderr, "interrupted: writing what the members have\n");
    if (!rc) {
        int best = ca_population_best(&p);
        print_table(&p, best);
        rc = write_files(a, &p, keep, best);
    }
    for (int i = 0; keep && i < 2 * a->count; i++) free(keep[i]);
    free(keep);
    ca_population_free(&p);
    return rc;
}
