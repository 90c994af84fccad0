/* ca_population_repair.c: the repair search on a population's inexact members, side by side
 * (ca_population.h). */
#include "ca_population.h"

#include "error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The members to search, best first, and the threads' shared place in that list. */
typedef struct {
    ca_population *population;
    const ca_population_search *search;
    int *order, count, next;
    int search_threads; /* each search's (ca_repair_options.threads) */
    int repaired, failed;
    atomic_int *cancel; /* set (search->first and a member repaired, or by the caller): the
                           searches under way end and no other starts */
    char error[256]; /* the first search that could not run */
    pthread_mutex_t lock;
} repair_work;

/* One search's progress, passed on once every search->every seconds of it (from its start: a
 * search shorter than that says nothing). */
typedef struct {
    const ca_population_search *search;
    uint64_t seed;
    double last;
} search_note;

static void note_progress(void *user, size_t wrong, size_t tries, int changes, int minima, double seconds)
{
    search_note *n = user;
    if (seconds - n->last < n->search->every) return;
    n->last = seconds;
    n->search->progress(n->search->user, n->seed, wrong, tries, changes, minima, seconds);
}

static void *repair_worker(void *arg)
{
    repair_work *w = arg;
    const ca_population_search *search = w->search;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        int stop = w->next == w->count || w->failed || (search->interrupt && *search->interrupt) ||
                   atomic_load(w->cancel);
        int i = stop ? -1 : w->order[w->next++];
        pthread_mutex_unlock(&w->lock);
        if (i < 0) return NULL;
        ca_member *m = &w->population->members[i];
        search_note note = {search, m->model.config.seed, 0.0};
        ca_repair_options options = {search->seconds, CA_REPAIR_ROUNDS, search->progress ? note_progress : NULL,
                                     &note, w->search_threads, search->interrupt, w->cancel, 0, search->max_tries};
        int rc = ca_repair(&m->model, w->population->image, &options, &m->repair);
        pthread_mutex_lock(&w->lock);
        if (rc && !w->failed) w->failed = 1, snprintf(w->error, sizeof w->error, "%s", err_message());
        if (!rc && m->repair.exact) m->repaired = 1, m->out.exact = 1, m->out.wrong = 0.0, w->repaired++;
        if (w->repaired > 0 && search->first) atomic_store(w->cancel, 1);
        pthread_mutex_unlock(&w->lock);
    }
}


/* The members' output circuits into their models' logits: a kept best is the trainer's, read on
 * this thread, which may talk to the GPU. */
static int restore_outputs(ca_population *p)
{
    for (int i = 0; i < p->count; i++) {
        ca_member *m = &p->members[i];
        uint64_t done;
        if (!m->out.exact && !m->repaired && m->use_best && ca_watch_restore_best(&m->watch, &m->trainer, &done))
            return DLCA_ERR;
    }
    return DLCA_OK;
}

/* The inexact members ranked, best first, into w->order (w->count of them). */
static void rank_inexact(ca_population *p, repair_work *w)
{
    for (int i = 0; i < p->count; i++) {
        ca_member *m = &p->members[i];
        if (m->out.exact || m->repaired) continue;
        /* insertion in rank order: stable, so ties keep member order */
        int k = w->count++;
        for (; k > 0 && ca_mark_better(&m->out, &p->members[w->order[k - 1]].out); k--) w->order[k] = w->order[k - 1];
        w->order[k] = i;
    }
}

void ca_population_repair_plan(int searches, int threads, int search_threads, int *side, int *each)
{
    *each = search_threads ? search_threads : searches > 0 && threads > searches ? threads / searches : 1;
    if (*each > CA_REPAIR_MAX_THREADS) *each = CA_REPAIR_MAX_THREADS;
    *side = threads > *each ? threads / *each : 1;
    if (*side > searches) *side = searches;
}

static int check_search(const ca_population_search *search)
{
    if (!(search->seconds > 0.0) || search->threads < 1 || search->search_threads < 0 ||
        search->search_threads > CA_REPAIR_MAX_THREADS || search->most < 0 || !(search->every >= 0.0))
        return err_set(DLCA_ERR, "repair: %g seconds on %d threads, %d a search, of %d members, noted every %g s (want "
                                 "> 0, >= 1, 0..%d, >= 0 and >= 0)",
                       search->seconds, search->threads, search->search_threads, search->most, search->every,
                       CA_REPAIR_MAX_THREADS);
    return DLCA_OK;
}

/* The searches of the ranked inexact members (their circuits restored), touching nothing but the
 * members' models and repair results; all end once *cancel is set (by them, or by another thread). */
static int search_members(ca_population *p, const ca_population_search *search, atomic_int *cancel, int *repaired)
{
    *repaired = 0;
    repair_work w;
    memset(&w, 0, sizeof w);
    w.population = p, w.search = search, w.cancel = cancel;
    w.order = malloc((size_t)p->count * sizeof(int));
    if (!w.order) return err_set(DLCA_ERR_NOMEM, "out of memory for the repair of %d members", p->count);
    rank_inexact(p, &w);
    if (search->most > 0 && w.count > search->most) w.count = search->most; /* the best `most` */
    int side;
    ca_population_repair_plan(w.count, search->threads, search->search_threads, &side, &w.search_threads);
    pthread_t *ids = calloc((size_t)(side > 0 ? side : 1), sizeof *ids);
    if (!ids) return free(w.order), err_set(DLCA_ERR_NOMEM, "out of memory for %d threads", side);
    pthread_mutex_init(&w.lock, NULL);
    int started = 0;
    while (started < side && pthread_create(&ids[started], NULL, repair_worker, &w) == 0) started++;
    if (started == 0 && w.count > 0) repair_worker(&w); /* no thread to be had: search here */
    for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
    pthread_mutex_destroy(&w.lock);
    free(ids), free(w.order);
    *repaired = w.repaired;
    if (w.failed) return err_set(DLCA_ERR, "%s", w.error);
    return DLCA_OK;
}

int ca_population_repair(ca_population *p, const ca_population_search *search, int *repaired)
{
    *repaired = 0;
    if (check_search(search) || restore_outputs(p)) return DLCA_ERR;
    atomic_int cancel;
    atomic_init(&cancel, 0);
    return search_members(p, search, &cancel, repaired);
}

static void *background_search(void *arg)
{
    ca_population_background *b = arg;
    b->rc = search_members(b->population, &b->search, &b->cancel, &b->count);
    if (b->rc) snprintf(b->error, sizeof b->error, "%s", err_message());
    if (!b->rc && b->count > 0) atomic_store(&b->repaired, 1);
    atomic_store(&b->done, 1);
    return NULL;
}

int ca_population_repair_start(ca_population_background *b, ca_population *p, const ca_population_search *search)
{
    memset(b, 0, sizeof *b);
    atomic_init(&b->repaired, 0);
    atomic_init(&b->cancel, 0);
    atomic_init(&b->done, 0);
    if (check_search(search) || restore_outputs(p)) return DLCA_ERR;
    b->population = p, b->search = *search;
    if (pthread_create(&b->thread, NULL, background_search, b) != 0)
        return err_set(DLCA_ERR, "repair: cannot start a thread for the search");
    b->started = 1;
    return DLCA_OK;
}

void ca_population_repair_cancel(ca_population_background *b) { atomic_store(&b->cancel, 1); }

int ca_population_repair_done(ca_population_background *b)
{
    /* `repaired` is set as the thread ends, a moment before `done` */
    return !b->started || atomic_load(&b->done) || atomic_load(&b->repaired);
}

int ca_population_repair_wait(ca_population_background *b, int *repaired)
{
    *repaired = 0;
    if (!b->started) return err_set(DLCA_ERR, "repair: no search was started");
    pthread_join(b->thread, NULL);
    b->started = 0;
    if (b->rc) return err_set(b->rc, "%s", b->error);
    *repaired = b->count;
    return DLCA_OK;
}
