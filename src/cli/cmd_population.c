/* cmd_population.c: `dlca train --population N`: members side by side (ca_population.h), the
 * best written as --out, a table of all at the end. */
#include "cmd_population.h"

#include "atomic_file.h"
#include "ca_memory.h"
#include "ca_backend.h"
#include "ca_fast_pool.h"
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

cmd_default_run cmd_population_default_run(const ca_config *config)
{
    /* Two seeds at a time: a step of 4 members costs about 4 of one, and the first of 2 is exact
     * nearly as soon as the first of 4. Default runs on an H200, two at a time against four, each
     * run the same first seeds (docs/exact-circuits.md, sections 24 and 25): median wall seconds
     * checkerboard 1.12 against 1.28 (24 runs), async 1.91 against 3.21 (16), image 4.96 against
     * 6.89 (16), lizard 8.44 against 12.43 (13), gol 1.04 against 1.36 (12); every run passed. */
    cmd_default_run run = {2, 8, 5.0, 0, 0};
    /* The lizard's 50 s searches on 16 threads (section 13): in 11 populations of 4, each of the 4
     * repaired members was its population's best-ranked (in 10-35 s), and none of the 7 other
     * populations' 28 members was repaired; so one search on every core, of the best member
     * alone, finds what four would at a quarter of the time. Up to 32 seeds, as when it ran 4 at
     * a time, 8 times. */
    if (strcmp(config->preset, "lizard") == 0)
        run.tries = 16, run.repair = 50.0, run.repair_threads = ca_fast_default_threads(), run.repair_members = 1;
    /* image-persist's sweep searched 30 s (docs/persistence.md): its one repaired seed took 9.2 s, and
     * a search counts every step T..10T, so 5 s would have missed it. */
    if (strcmp(config->preset, "image-persist") == 0) run.repair = 30.0;
    return run;
}

/* A search's progress, every 10 s of it: a lizard's takes up to 50. */
static void search_progress(void *user, uint64_t seed, size_t wrong, size_t tries, int changes, int minima,
                            double seconds)
{
    (void)user;
    fprintf(stderr, "searching seed %llu: %zu wrong cell bits, %d change%s kept, %d minim%s, %zu tries, %.0f s\n",
            (unsigned long long)seed, wrong, changes, changes == 1 ? "" : "s", minima, minima == 1 ? "um" : "a", tries,
            seconds);
}

/* "repairing ...": what a population's search will do, on `threads` threads in all. */
static void repair_line(const ca_population *p, double seconds, int threads, int search_threads, int most,
                        const char *where)
{
    int inexact = 0, side, each;
    for (int i = 0; i < p->count; i++) inexact += !p->members[i].out.exact && !p->members[i].repaired;
    int searched = most > 0 && most < inexact ? most : inexact;
    char which[64] = "";
    if (searched < inexact) snprintf(which, sizeof which, "the best %d of ", searched);
    ca_population_repair_plan(searched, threads, search_threads, &side, &each);
    fprintf(stderr, "repairing %s%d inexact member%s: up to %g s each, %d side by side on %d thread%s each%s\n", which,
            inexact, inexact == 1 ? "" : "s", seconds, side, each, each == 1 ? "" : "s", where);
}

/* A line for each member searched. */
static void repair_report(const ca_population *p)
{
    for (int i = 0; i < p->count; i++) {
        const ca_member *m = &p->members[i];
        const ca_repair_result *r = &m->repair;
        if (!(r->seconds > 0.0)) continue;
        if (m->repaired)
            fprintf(stderr,
                    "repair: seed %llu: %zu wrong cell bits -> verified exact by changing %d gate%s (%d repair "
                    "round%s, %.1f s)\n",
                    (unsigned long long)m->model.config.seed, r->wrong_before, r->changes, r->changes == 1 ? "" : "s",
                    r->rounds, r->rounds == 1 ? "" : "s", r->seconds);
        else
            fprintf(stderr, "repair: seed %llu: not repaired (%zu wrong cell bits before): %s (%.1f s)\n",
                    (unsigned long long)m->model.config.seed, r->wrong_before, r->why, r->seconds);
    }
}

int cmd_population_repair(ca_population *p, double seconds, int search_threads, int first, int most,
                          size_t max_tries, volatile sig_atomic_t *interrupt, int *repaired)
{
    int threads = ca_fast_default_threads();
    repair_line(p, seconds, threads, search_threads, most, "");
    ca_population_search search = {seconds, threads, search_threads, first, most, search_progress, NULL, 10.0,
                                   interrupt, max_tries};
    if (ca_population_repair(p, &search, repaired)) return DLCA_ERR;
    repair_report(p);
    return DLCA_OK;
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
    /* EEXIST: another process (a second sweep given the same folder) made it in between */
    if (stat(dir, &st) != 0 && errno == ENOENT && mkdir(dir, 0777) != 0 && errno != EEXIST)
        return err_set(DLCA_ERR, "%s %s: cannot make the folder: %s", flag, dir, strerror(errno));
    if (stat(dir, &st) != 0) return err_set(DLCA_ERR, "%s %s: %s", flag, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return err_set(DLCA_ERR, "%s %s: not a folder", flag, dir);
    if (access(dir, W_OK | X_OK) != 0) return err_set(DLCA_ERR, "%s %s: the folder is not writable", flag, dir);
    return DLCA_OK;
}

/* Every member's model and log path in --keep-members, for every try, checked as dlca train
 * checks --out: a regular file or a new one, not replaced without --force. */
static int keep_paths(const cmd_population_args *a, char **paths)
{
    if (cmd_population_dir(a->keep_members, "--keep-members")) return DLCA_ERR;
    for (int i = 0; i < a->count * a->tries; i++) {
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

/* A member's line of the final table, kept after its population is freed. */
typedef struct {
    uint64_t seed, steps, exact_step;
    double soft, hard, seconds;
    int repaired;
} member_line;

/* The table of every member of every try (stdout): the one written as --out is marked. */
static void print_table(const member_line *lines, int count, int written)
{
    printf("%-3s %-8s %-12s %-10s %-8s %-11s %-8s\n", "", "seed", "soft", "hard", "steps", "exact step", "wall s");
    for (int i = 0; i < count; i++) {
        const member_line *l = &lines[i];
        char exact[24] = "-";
        if (l->exact_step) snprintf(exact, sizeof exact, "%llu", (unsigned long long)l->exact_step);
        else if (l->repaired) snprintf(exact, sizeof exact, "repaired");
        printf("%-3s %-8llu %-12.6g %-10.6g %-8llu %-11s %-8.2f\n", i == written ? "*" : "",
               (unsigned long long)l->seed, l->soft, l->hard, (unsigned long long)l->steps, exact, l->seconds);
    }
    fflush(stdout);
}

/* What --out holds so far: the best member of the tries until now. */
typedef struct {
    int line;      /* its index in the table; -1 before the first try ends */
    ca_mark out;
    int use_best;
} written_member;

/* After a try: its members' lines, its best member as --out (with its log) when it beats the
 * earlier tries' best, and with --keep-members every member's files. */
static int settle_try(const cmd_population_args *a, ca_population *p, int first_line, member_line *lines, char **keep,
                      written_member *written)
{
    for (int i = 0; i < p->count; i++) {
        const ca_member *m = &p->members[i];
        lines[first_line + i] = (member_line){m->model.config.seed, m->stop_step, m->watch.exact_step, m->soft, m->hard,
                                              m->seconds, m->repaired};
    }
    int best = ca_population_best(p);
    const ca_member *m = &p->members[best];
    if (written->line < 0 || ca_mark_better(&m->out, &written->out)) {
        if (ca_population_save(p, best, a->out, a->target) || cmd_population_write_log(m, a->log)) return DLCA_ERR;
        *written = (written_member){first_line + best, m->out, m->use_best};
    }
    for (int i = 0; keep && i < p->count; i++) {
        char **pair = &keep[2 * (first_line + i)];
        if (ca_population_save(p, i, pair[0], a->target) || cmd_population_write_log(&p->members[i], pair[1]))
            return DLCA_ERR;
    }
    return DLCA_OK;
}

/* A try: its population (ready once made) and its first line in the table. */
typedef struct {
    ca_population p;
    int ready, first_line;
} try_slot;

static void try_free(try_slot *slot)
{
    if (slot->ready) ca_population_free(&slot->p);
    slot->ready = 0;
}

/* Try `try` (members seed + first_line .. + count - 1) made and trained, stopping early when
 * `cancel` (may be NULL) is set; *seconds: the training's wall time of every try so far. */
static int train_try(const cmd_population_args *a, int try, try_slot *slot, double *seconds, const atomic_int *cancel)
{
    ca_config c = *a->config;
    slot->first_line = try * a->count;
    c.seed = a->config->seed + (uint64_t)slot->first_line;
    int rc = ca_population_init(&slot->p, &c, a->count, a->image, a->backend, a->vk, a->options, a->check_every);
    if (rc) return rc;
    slot->ready = 1;
    ca_population *p = &slot->p;
    char which[32] = "", label[CA_NAME_LENGTH + 32];
    if (a->tries > 1) snprintf(which, sizeof which, "try %d/%d", try + 1, a->tries);
    snprintf(label, sizeof label, "%s%s%s", c.preset, *which ? " " : "", which);
    fprintf(stderr, "training a population of %d %s runs (seeds %llu to %llu%s%s): %zu gates each, %dx%d grid, T=%d, "
                    "batch %d, %d steps on %s -> %s\n",
            a->count, c.preset, (unsigned long long)c.seed, (unsigned long long)c.seed + (unsigned long long)a->count - 1,
            *which ? ", " : "", which, p->members[0].model.gate_count, c.height, c.width, c.steps, c.batch, c.train_steps,
            ca_backend_name(a->backend, a->vk), a->out);
    cmd_population_progress show = {label};
    ca_population_run run = {a->stop_exact ? CA_STOP_FIRST : CA_STOP_NONE, a->every, a->keep_final, cmd_population_show,
                             &show, a->interrupt, *seconds, cancel};
    rc = ca_population_train(p, &run);
    for (int i = 0; i < p->count; i++) *seconds = p->members[i].seconds > *seconds ? p->members[i].seconds : *seconds;
    return rc;
}

/* The search of one try's inexact members on a thread of its own while the next tries train on
 * the GPU, so that a population without an exact member costs its training, not its training and
 * its search. One search at a time: a try that ends inexact while it runs is settled unsearched
 * (and says so), for training further seeds reaches an exact circuit sooner than waiting for the
 * search would (docs/exact-circuits.md, section 24). The training stops once a member is
 * repaired, and that try is then not used; the search stops once a try has a verified-exact
 * member, which is then written unless the search repaired one before. On more than 4 cores the
 * search leaves one to the training thread (a sixteenth of the search on an H100 host, where a
 * training step waits on the CPU that records and submits it); on fewer it would be a third to
 * half, for a thread that mostly waits on the GPU. */
typedef struct {
    try_slot slot; /* the try searched: its members are the search thread's until it ends */
    ca_population_background b;
    int on;
} beside_search;

static int beside_start(const cmd_population_args *a, beside_search *s, try_slot *cur)
{
    int cores = ca_fast_default_threads(), threads = cores > 4 ? cores - 1 : cores;
    int each = a->repair_threads < threads ? a->repair_threads : threads;
    repair_line(&cur->p, a->repair, threads, each, a->repair_members, ", while the next population trains");
    ca_population_search search = {a->repair, threads, each, 1, a->repair_members, search_progress, NULL,
                                   10.0, a->interrupt, a->repair_tries};
    s->slot = *cur, cur->ready = 0; /* the try is the search's now, settled when it ends */
    if (ca_population_repair_start(&s->b, &s->slot.p, &search)) return DLCA_ERR;
    s->on = 1;
    return DLCA_OK;
}

/* Ends the search under way (cancelled first when `cancel`; else it has its whole time), then
 * reports and settles its try; *repaired: the members it repaired. */
static int beside_end(const cmd_population_args *a, beside_search *s, int cancel, member_line *lines, char **keep,
                      written_member *written, int *repaired)
{
    *repaired = 0;
    if (!s->on) return DLCA_OK;
    if (cancel) ca_population_repair_cancel(&s->b);
    int rc = ca_population_repair_wait(&s->b, repaired); /* always: the thread uses the try's members */
    s->on = 0;
    if (!rc) repair_report(&s->slot.p), rc = settle_try(a, &s->slot.p, s->slot.first_line, lines, keep, written);
    try_free(&s->slot);
    return rc;
}

int cmd_population_train(const cmd_population_args *a)
{
    int members = a->count * a->tries, trained = 0;
    char **keep = NULL;
    member_line *lines = calloc((size_t)members, sizeof *lines);
    int rc = lines ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory for %d members", members);
    if (!rc) rc = cmd_population_memory(a->config, a->count, a->backend, a->vk, a->options, a->max_memory);
    if (!rc && a->keep_members) {
        keep = calloc(2 * (size_t)members, sizeof *keep);
        rc = keep ? keep_paths(a, keep) : err_set(DLCA_ERR_NOMEM, "out of memory");
    }
    written_member written = {-1, {0}, 0};
    double seconds = 0.0;
    try_slot cur = {0};
    beside_search search = {0};
    /* the first try always runs (it stops at once when interrupted, and writes what it has) */
    if (!rc) rc = train_try(a, 0, &cur, &seconds, NULL), trained = 1;
    for (int t = 0; !rc; t++) {
        int interrupted = a->interrupt && *a->interrupt, more = t + 1 < a->tries && !interrupted, repaired = 0;
        int exact = ca_population_exact_count(&cur.p) > 0;
        /* an earlier try's search: cancelled by an exact member here, ended once it is done */
        if (search.on && (exact || interrupted || ca_population_repair_done(&search.b)))
            rc = beside_end(a, &search, exact || interrupted, lines, keep, &written, &repaired);
        if (!rc && !exact && !repaired && a->repair > 0.0 && !interrupted) {
            if (!more || a->backend != CA_BACKEND_GPU) {
                /* the last try: the search under way has its whole time, then this try's alone */
                rc = beside_end(a, &search, 0, lines, keep, &written, &repaired);
                if (!rc && !repaired)
                    rc = cmd_population_repair(&cur.p, a->repair, a->repair_threads, 1, a->repair_members,
                                               a->repair_tries, a->interrupt, &repaired);
            } else if (!search.on) {
                rc = beside_start(a, &search, &cur);
            } else {
                unsigned long long seed = cur.p.members[0].model.config.seed;
                unsigned long long searched = search.slot.p.members[0].model.config.seed;
                fprintf(stderr, "not searching seeds %llu to %llu: the search of seeds %llu to %llu is under way\n",
                        seed, seed + (unsigned long long)a->count - 1, searched,
                        searched + (unsigned long long)a->count - 1);
            }
        }
        if (!rc && cur.ready) rc = settle_try(a, &cur.p, cur.first_line, lines, keep, &written);
        try_free(&cur);
        if (rc || exact || repaired || !more) break;
        rc = train_try(a, t + 1, &cur, &seconds, search.on ? &search.b.repaired : NULL), trained++;
        if (!rc && search.on && atomic_load(&search.b.repaired) && ca_population_exact_count(&cur.p) == 0) {
            /* this try is not used: not in the table */
            fprintf(stderr,
                    "stopped training seeds %llu to %llu at step %llu: a member of an earlier try was repaired\n",
                    (unsigned long long)cur.p.members[0].model.config.seed,
                    (unsigned long long)cur.p.members[cur.p.count - 1].model.config.seed,
                    (unsigned long long)cur.p.members[0].stop_step);
            try_free(&cur), trained--;
            rc = beside_end(a, &search, 0, lines, keep, &written, &(int){0});
            break;
        }
    }
    int ended = beside_end(a, &search, 1, lines, keep, &written, &(int){0}); /* a search still under way */
    if (!rc) rc = ended;
    int lines_done = trained * a->count;
    try_free(&cur);
    if (!rc && a->interrupt && *a->interrupt) fprintf(stderr, "interrupted: wrote what the members had\n");
    if (!rc) {
        print_table(lines, lines_done, written.line);
        const ca_mark *out = &written.out;
        fprintf(stderr, "wrote %s (seed %llu: %s%.0f wrong cells, its circuit of step %llu%s%s), %s and %s%s%s\n", a->out,
                (unsigned long long)lines[written.line].seed, out->exact ? "verified exact, " : "", out->wrong,
                (unsigned long long)out->step, written.use_best ? ", its best" : "",
                lines[written.line].repaired ? ", repaired" : "", a->log, a->plot,
                keep ? "; every member in " : "", keep ? a->keep_members : "");
    }
    for (int i = 0; keep && i < 2 * members; i++) free(keep[i]);
    free(keep), free(lines);
    return rc;
}
