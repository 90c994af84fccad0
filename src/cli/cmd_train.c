/* cmd_train.c: `dlca train`: a preset (with overrides) trained on the CPU or a GPU, with
 * progress, a CSV log and a loss-curve PNG, atomic checkpoints, Ctrl-C and resume. Every output
 * is checked, told apart from the others and locked before any work (paths_prepare). */
#include "atomic_file.h"
#include "ca_backend.h"
#include "ca_config_text.h"
#include "ca_eval.h"
#include "ca_fast_pool.h"
#include "ca_file.h"
#include "ca_memory.h"
#include "ca_repair.h"
#include "ca_target.h"
#include "ca_watch.h"
#include "cli.h"
#include "cli_env.h"
#include "cli_stop.h"
#include "cmd_population.h"
#include "cmd_train_options.h"
#include "commands.h"
#include "error.h"
#include "train_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The run being trained: model, saved state and target, as the model file holds them. */
typedef struct {
    ca_model model;
    ca_train_state state;
    ca_target_image target;
    double *image;
} training_run;

static void run_free(training_run *r)
{
    ca_model_free(&r->model), ca_train_state_free(&r->state), ca_target_image_free(&r->target);
    free(r->image);
}

/* The target picture of r->model's config: --target's, else the preset's in `assets`. */
static int load_target(training_run *r, const cmd_train_options *o, const char *assets)
{
    const ca_config *config = &r->model.config;
    char path[4096];
    const char *fallback = ca_target_default_path(config, assets, path, sizeof path);
    const char *target = o->target ? o->target : fallback;
    if (o->target && !fallback)
        return err_set(DLCA_ERR, "--target: preset '%s' has no picture target (target-kind is not image)",
                       config->preset);
    return target ? ca_target_load_png(config, target, &r->target) : DLCA_OK;
}

/* The keys that make the network: --from keeps them, so its wiring and logits fit. */
static const char *const network_keys[] = {"channels", "kernels", "perception", "perception-wiring", "update",
                                           "wiring"};

/* --from: the config of FILE under the flags, FILE's wiring and logits, and its target picture
 * where the grid and loss channels are FILE's and no --target is given. */
static int prepare_from(training_run *r, const cmd_train_options *o, const char *assets)
{
    ca_model from;
    ca_target_image target;
    if (ca_file_load(o->from, &from, NULL, &target)) return DLCA_ERR;
    char name[CA_CONFIG_ORIGIN_MAX];
    snprintf(name, sizeof name, "--from %s", o->from);
    ca_config config;
    int rc = cmd_train_config(&config, o, &from.config, name);
    for (size_t i = 0; !rc && i < sizeof network_keys / sizeof network_keys[0]; i++) {
        const ca_config_key *key = ca_config_key_find(network_keys[i]);
        char theirs[CA_CONFIG_VALUE_MAX], ours[CA_CONFIG_VALUE_MAX];
        key->print(&from.config, theirs, sizeof theirs), key->print(&config, ours, sizeof ours);
        if (strcmp(theirs, ours) != 0)
            rc = err_set(DLCA_ERR, "--%s %s: %s's circuit has %s %s, and --from keeps the network", key->key, ours,
                         o->from, key->key, theirs);
    }
    if (!rc) rc = ca_model_init_wired(&r->model, &config, from.perception, from.update);
    if (!rc) memcpy(r->model.logits, from.logits, from.gate_count * 16 * sizeof *from.logits);
    int same_grid = config.height == from.config.height && config.width == from.config.width &&
                    config.loss_channels == from.config.loss_channels;
    if (config.target != CA_TARGET_IMAGE) ca_target_image_free(&target); /* --target-kind changed it */
    if (!rc && target.bits && !o->target && !same_grid)
        rc = err_set(DLCA_ERR, "--from %s: its target picture is for its %dx%d grid: give --target for the %dx%d one",
                     o->from, from.config.height, from.config.width, config.height, config.width);
    if (!rc && target.bits && !o->target) r->target = target, target.bits = NULL;
    else if (!rc) rc = load_target(r, o, assets);
    ca_model_free(&from), ca_target_image_free(&target);
    return rc;
}

static int run_prepare(training_run *r, const cmd_train_options *o, const char *assets)
{
    memset(r, 0, sizeof *r);
    if (o->resume) {
        if (ca_file_load(o->resume, &r->model, &r->state, &r->target)) return DLCA_ERR;
        if (!r->state.moment1) return err_set(DLCA_ERR, "%s: has no training state to resume from", o->resume);
        if (r->model.config.pool && !r->state.pool)
            return err_set(DLCA_ERR, "%s: trained from a pool of %d grids, which this file does not keep (a best "
                           "circuit's file, or a checkpoint from before checkpoints kept pools): it cannot --resume "
                           "(train it again with more --steps)", o->resume, r->model.config.pool);
        /* Otherwise the loop would not run, nothing would be saved, and "wrote" would be a lie. */
        if (ca_trainer_resume_steps(o->resume, r->state.step, o->has_steps ? o->steps : 0, &r->model.config.train_steps))
            return DLCA_ERR;
    } else if (o->from) {
        if (prepare_from(r, o, assets)) return DLCA_ERR;
    } else {
        ca_config config;
        if (cmd_train_config(&config, o, NULL, NULL)) return DLCA_ERR;
        if (ca_model_init(&r->model, &config)) return DLCA_ERR;
        if (load_target(r, o, assets)) return DLCA_ERR;
    }
    if (r->target.bits && !(r->image = ca_target_values(&r->target)))
        return err_set(DLCA_ERR_NOMEM, "out of memory for the target");
    char note[512];
    if (r->image && !o->resume && ca_eval_torus_note(&r->model.config, r->image, note, sizeof note))
        fprintf(stderr, "note: %s\n", note);
    return DLCA_OK;
}

/* The model file of a run: its state now (synced from the trainer) with its sample pool (flag 3),
 * or with `best` the kept best circuit's (ca_watch_restore_best), whose step's pool is not kept.
 * Both carry the best so far (flag 2), so a resumed run ends as the uninterrupted one would. */
static int save_run(const char *path, ca_trainer *t, ca_watch *w, training_run *r, double seconds, int best)
{
    uint64_t done = t->step;
    int rc = best ? ca_watch_restore_best(w, t, &done) : ca_trainer_sync(t);
    ca_train_state state = {done, seconds, t->moment1, t->moment2, {0}, NULL};
    if (!rc) rc = ca_watch_save_best(w, t, &state.best);
    if (!rc && !best && t->pool.grids) {
        if (!(state.pool = malloc(ca_file_pool_bytes(&r->model.config))))
            rc = err_set(DLCA_ERR_NOMEM, "out of memory for the sample pool's bits");
        else
            ca_pool_pack(&t->pool, state.pool);
    }
    if (!rc) rc = ca_file_save(path, &r->model, &state, r->target.bits ? &r->target : NULL);
    free(state.best.logits), free(state.best.moment1), free(state.best.moment2), free(state.pool);
    return rc;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A failed run says what survived: saves are atomic, so `out` still holds the last checkpoint. */
static int fail_keeping(const char *out, long long saved_step)
{
    char *reason = strdup(err_message());
    const char *why = reason ? reason : "out of memory";
    if (saved_step < 0) err_set(DLCA_ERR, "%s; %s was not written by this run", why, out);
    else err_set(DLCA_ERR, "%s; %s is intact and holds step %lld", why, out, saved_step);
    free(reason);
    return DLCA_ERR;
}

/* Where a run writes, checked and locked before any work is done (paths_prepare). */
typedef struct {
    char *out, *log, *plot;
    char *out_lock_file, *log_lock_file;
    int out_is_resume; /* --resume names the file `out` names: the run continues it */
    atomic_file_lock out_lock, log_lock;
} train_paths;

static void paths_free(train_paths *p)
{
    atomic_file_lock_release(&p->log_lock), atomic_file_lock_release(&p->out_lock);
    free(p->out), free(p->log), free(p->plot), free(p->out_lock_file), free(p->log_lock_file);
    memset(p, 0, sizeof *p);
}

/* `text` with `suffix` in place of `old_suffix` when it ends with it, else added (malloc'ed). */
static char *with_suffix(const char *text, const char *old_suffix, const char *suffix)
{
    size_t n = strlen(text), m = strlen(old_suffix), stem = n > m && strcmp(text + n - m, old_suffix) == 0 ? n - m : n;
    char *out = malloc(stem + strlen(suffix) + 1);
    if (!out) return NULL;
    memcpy(out, text, stem);
    strcpy(out + stem, suffix);
    return out;
}

/* No two of the files a run reads and writes may be the same file, whatever their spelling
 * (./a and a, hard and symbolic links), except --resume and --out (continuing a run) and --from
 * and --out (replacing the circuit trained on, with --force as any existing --out). */
static int check_distinct(const cmd_train_options *o, const train_paths *p)
{
    enum { MODEL, RESUME = 5, FROM = 7 };
    struct {
        const char *label, *path;
        int output;
    } files[] = {
        {o->out ? "--out" : o->resume ? "--resume" : "the model", p->out, 1},
        {o->log ? "--log" : "the log", p->log, 1},
        {"the loss plot", p->plot, 1},
        {"the lock file", p->out_lock_file, 1},
        {"the lock file", p->log_lock_file, 1},
        {"--resume", o->resume, 0},
        {"--target", o->target, 0},
        {"--from", o->from, 0},
    };
    size_t count = sizeof files / sizeof files[0];
    for (size_t i = 0; i < count; i++)
        for (size_t j = i + 1; j < count; j++) {
            if (!files[i].path || !files[j].path || (!files[i].output && !files[j].output)) continue;
            if (i == MODEL && (j == RESUME || j == FROM)) continue;
            if (atomic_file_same(files[i].path, files[j].path))
                return err_set(DLCA_ERR, "%s %s and %s %s are the same file: give each its own path", files[i].label,
                               files[i].path, files[j].label, files[j].path);
        }
    return DLCA_OK;
}

/* The model, log and plot paths, each checked (atomic_file_check), distinct, locked, and the model
 * not one this run would clobber. Nothing is written but the lock files. */
static int paths_prepare(train_paths *p, const cmd_train_options *o, const training_run *r)
{
    const char *out_label = o->out ? "--out" : o->resume ? "--resume" : "the model";
    const char *log_label = o->log ? "--log" : "the log";
    memset(p, 0, sizeof *p);
    if (o->out || o->resume) p->out = strdup(o->out ? o->out : o->resume);
    else p->out = with_suffix(r->model.config.preset, "", ".dlca");
    if (!p->out) return err_set(DLCA_ERR_NOMEM, "out of memory");
    if (atomic_file_check(p->out, out_label)) return DLCA_ERR;
    if (!(p->log = o->log ? strdup(o->log) : with_suffix(p->out, ".dlca", ".csv")) || !(p->plot = train_log_plot_path(p->log)))
        return err_set(DLCA_ERR_NOMEM, "out of memory");
    if (atomic_file_check(p->log, log_label) || atomic_file_check(p->plot, "the loss plot")) return DLCA_ERR;
    if (!(p->out_lock_file = atomic_file_lock_path(p->out)) || !(p->log_lock_file = atomic_file_lock_path(p->log)))
        return DLCA_ERR;
    if (check_distinct(o, p)) return DLCA_ERR;
    p->out_is_resume = o->resume && atomic_file_same(o->resume, p->out);
    if (atomic_file_lock_take(&p->out_lock, p->out, out_label) || atomic_file_lock_take(&p->log_lock, p->log, log_label))
        return DLCA_ERR;
    if (!p->out_is_resume && !o->force && atomic_file_exists(p->out))
        return err_set(DLCA_ERR, "%s exists: pass --force to replace it, --resume %s to continue it, or --out NEW", p->out,
                       p->out);
    return DLCA_OK;
}

/* The end of a run that reached its budget: the final circuit against the best measured one,
 * which replaces it in `out` when it is better (ca_watch.h). */
static int finish_budget(ca_trainer *t, ca_watch *w, training_run *r, const char *out, double last_soft,
                         double seconds, train_log *log)
{
    ca_mark final;
    int use_best;
    if (ca_watch_final(w, t, last_soft, &final, &use_best)) return DLCA_ERR;
    if (final.exact)
        train_log_message(log, "the final circuit is verified exact");
    /* The plot marks the circuit written, which need not be a logged row. */
    const ca_mark *written = use_best ? &w->best : &final;
    if (written->step > 0 && train_log_mark(log, written->step, written->wrong)) return DLCA_ERR;
    if (!use_best) return DLCA_OK;
    const char *kinds[] = {"", " (a growth round)", " (a persistence round)"};
    int persistence_rounds = r->model.config.pool > 0 || r->model.config.window > 0;
    char shortfall[128] = "";
    if (w->best.shortfall > 0.0)
        snprintf(shortfall, sizeof shortfall, ", %.0f bits wrong over steps %d to %d", w->best.shortfall,
                 r->model.config.steps, 10 * r->model.config.steps);
    train_log_message(log, "the final circuit has %.0f wrong cells on step %llu's round%s; writing the best one, "
                      "measured at step %llu (%s%.0f wrong%s%s, soft %.6g)", final.wrong, (unsigned long long)t->step,
                      kinds[persistence_rounds ? 1 + final.persistence : 0], (unsigned long long)w->best.step,
                      w->best.exact ? "verified exact, " : "", w->best.wrong,
                      kinds[persistence_rounds ? 1 + w->best.persistence : 0], shortfall, w->best.soft);
    return save_run(out, t, w, r, seconds, 1);
}

/* The loop: every step a progress update, every `check_every` steps the hard loss (ca_watch),
 * every `every` steps (and at the end) a log row, the plot and a checkpoint. Stops at the first
 * verified-exact circuit (--stop-exact), writing it; early, saving, on SIGINT, SIGTERM or SIGHUP;
 * else at the budget, writing the best circuit when the final one is worse. */
static int train_loop(ca_trainer *t, ca_watch *w, training_run *r, const cmd_train_options *o, const train_paths *p,
                      train_log *log)
{
    const ca_config *c = &r->model.config;
    const char *out = p->out;
    double start = now_seconds(), before = r->state.seconds, soft = 0.0;
    uint64_t first = t->step, total = (uint64_t)c->train_steps;
    long long saved = p->out_is_resume ? (long long)first : -1;
    while (t->step < total && !*o->stop) {
        uint64_t step = t->step + 1;
        int measured = ca_watch_measures(w, step, total, o->every), exact = 0;
        int logged = step % (uint64_t)o->every == 0 || step == total;
        double hard = -1.0, seconds;
        if (ca_trainer_step(t, &soft, measured ? &hard : NULL)) return fail_keeping(out, saved);
        if (measured && ca_watch_step(w, t, soft, hard, &exact)) return fail_keeping(out, saved);
        seconds = before + now_seconds() - start;
        int stop = exact && o->stop_exact;
        train_log_progress(log, t->step, total, soft, logged || stop ? hard : -1.0,
                           (double)(t->step - first) / (now_seconds() - start));
        if (stop) {
            if (train_log_row(log, step, soft, hard, seconds) || save_run(out, t, w, r, seconds, 1))
                return fail_keeping(out, saved);
            train_log_message(log, "step %llu: the circuit is verified exact (%s); wrote it, the state before "
                              "that step's update (%llu steps done)", (unsigned long long)step,
                              c->target == CA_TARGET_LIFE && c->channels == 1 ? "all 512 boards"
                                                                              : "16 unseen rounds and dlca eval's checks",
                              (unsigned long long)step - 1);
            return DLCA_OK;
        }
        if (!logged) continue;
        if (train_log_row(log, t->step, soft, hard, seconds)) return fail_keeping(out, saved);
        if (save_run(out, t, w, r, seconds, 0)) return fail_keeping(out, saved);
        saved = (long long)t->step;
    }
    if (w->inexact > 0)
        train_log_message(log, "%d circuit%s with a hard loss of 0 %s not exact (the first, at step %llu: %s)",
                          w->inexact, w->inexact == 1 ? "" : "s", w->inexact == 1 ? "was" : "were",
                          (unsigned long long)w->first_inexact_step, w->first_inexact.why);
    if (*o->stop) {
        train_log_message(log, "interrupted at step %llu: saving %s", (unsigned long long)t->step, out);
        if (save_run(out, t, w, r, before + now_seconds() - start, 0)) return fail_keeping(out, saved);
        return DLCA_OK;
    }
    if (t->step > first && finish_budget(t, w, r, out, soft, before + now_seconds() - start, log))
        return fail_keeping(out, saved);
    return DLCA_OK;
}

/* --repair after a run that reached its budget with no verified-exact circuit: the search on the
 * circuit written (r->model holds it), which replaces it when made exact. */
static int repair_written(const cmd_train_options *o, training_run *r, const char *out, train_log *log)
{
    int threads = o->repair_threads ? (int)o->repair_threads : ca_fast_default_threads();
    if (threads > CA_REPAIR_MAX_THREADS) threads = CA_REPAIR_MAX_THREADS;
    ca_repair_options options = {o->repair, CA_REPAIR_ROUNDS, cmd_repair_progress, NULL, threads, o->stop, NULL, 0,
                                 (size_t)o->repair_tries};
    ca_repair_result result;
    train_log_message(log, "repair: searching up to %g s for an exact circuit a few gate changes from the one written",
                      o->repair);
    if (ca_repair(&r->model, r->image, &options, &result)) return DLCA_ERR;
    if (result.already_exact) return DLCA_OK;
    if (!result.exact) {
        train_log_message(log, "repair: not repaired: %s (%.1f s); %s keeps the run's circuit", result.why,
                          result.seconds, out);
        return DLCA_OK;
    }
    if (ca_file_save(out, &r->model, NULL, r->target.bits ? &r->target : NULL)) return DLCA_ERR;
    train_log_message(log,
                      "repair: %zu wrong cell bits -> verified exact by changing %d gate%s (%d repair round%s, %zu "
                      "tries, %.1f s); wrote it to %s, without training state",
                      result.wrong_before, result.changes, result.changes == 1 ? "" : "s", result.rounds,
                      result.rounds == 1 ? "" : "s", result.tries, result.seconds, out);
    return DLCA_OK;
}

/* One run, on the opened backend. */
static int train_single(const cmd_train_options *o, training_run *r, const train_paths *paths, const ca_options *run,
                        ca_backend backend, vk_context *vk)
{
    ca_trainer trainer;
    ca_watch watch;
    train_log log;
    memset(&trainer, 0, sizeof trainer), memset(&watch, 0, sizeof watch), memset(&log, 0, sizeof log);
    int rc = ca_memory_check_training(&r->model, backend, vk, run, o->max_memory);
    if (!rc) rc = ca_trainer_init(&trainer, &r->model, r->image, backend, vk, run);
    if (!rc && r->state.moment1) rc = ca_trainer_resume(&trainer, r->state.step, r->state.moment1, r->state.moment2);
    if (!rc && r->state.pool) ca_pool_unpack(&trainer.pool, r->state.pool);
    if (!rc) rc = ca_watch_init(&watch, &r->model, r->image, (int)o->check_every);
    watch.keep_final = o->keep_final;
    if (!rc) rc = ca_watch_resume(&watch, &trainer, &r->state.best);
    if (!rc) rc = train_log_open(&log, paths->log, o->resume != NULL, trainer.step, isatty(fileno(stderr)));
    if (!rc) {
        const ca_config *c = &r->model.config;
        train_log_message(&log, "training %s: %zu gates, %dx%d grid, T=%d, batch %d, %d steps on %s -> %s",
                          c->preset, r->model.gate_count, c->height, c->width, c->steps, c->batch, c->train_steps,
                          ca_backend_name(backend, vk), paths->out);
        if (o->from) train_log_message(&log, "starting from the circuit of %s (its wiring and gate logits)", o->from);
        rc = train_loop(&trainer, &watch, r, o, paths, &log);
        int budget = trainer.step == (uint64_t)c->train_steps && !*o->stop;
        if (!rc && o->repair > 0.0 && budget && watch.exact_step == 0) rc = repair_written(o, r, paths->out, &log);
        train_log_finish(&log, rc == DLCA_OK && !*o->stop ? paths->out : NULL);
    }
    train_log_close(&log);
    ca_watch_free(&watch);
    ca_trainer_free(&trainer);
    return rc;
}

static int train(const cmd_train_options *o, const ca_options *seam)
{
    training_run r;
    vk_context vk;
    ca_backend backend = CA_BACKEND_CPU; /* read on every exit path, even before ca_backend_open */
    train_paths paths;
    memset(&vk, 0, sizeof vk), memset(&r, 0, sizeof r), memset(&paths, 0, sizeof paths);
    ca_options run;
    int rc = cli_run_options(&run, o->device);
    run.gpu.cache = o->cache;
    if (seam) run.before_step = seam->before_step, run.before_step_context = seam->before_step_context;
    if (!rc) rc = run_prepare(&r, o, run.assets);
    if (!rc && o->stop_exact && r.state.best.exact_step > 0)
        rc = err_set(DLCA_ERR, "%s: its run found an exact circuit at step %llu already: give --no-stop-exact to "
                               "train on", o->resume, (unsigned long long)r.state.best.exact_step);
    if (!rc) rc = paths_prepare(&paths, o, &r);
    /* Not given: on a GPU, populations of 2 tried in turn, up to 16 seeds (the lizard 32), until
     * one member is verified exact: a seed is exact by luck, 16 almost always, and members take
     * turns on the GPU, so a few at a time reach the first exact circuit of the same 16 seeds with
     * fewer steps (README, "The default run"). A single run elsewhere. --population alone means
     * one try. */
    cmd_default_run defaults = cmd_population_default_run(&r.model.config);
    long long on_gpu = o->population ? o->population : !o->resume && !o->from ? defaults.population : 1;
    run.models = (int)on_gpu; /* the queues it opens (ca_backend_queues) */
    if (!rc) rc = ca_backend_open(&run, &vk, &backend);
    int gpu_default = backend == CA_BACKEND_GPU && !o->resume && !o->from;
    long long population = backend == CA_BACKEND_GPU ? on_gpu : o->population ? o->population : 1;
    long long tries = o->tries ? o->tries : gpu_default && !o->population ? defaults.tries : 1;
    if (!rc && population * tries > CMD_POPULATION_SEEDS_MAX)
        rc = err_set(DLCA_ERR, "--tries %lld of %lld seeds: at most %d seeds in all", tries, population,
                     CMD_POPULATION_SEEDS_MAX);
    if (!rc && o->keep_members && population == 1 && tries == 1)
        rc = err_set(DLCA_ERR, "--keep-members: only with a population (--population N, N > 1, --tries K, K > 1, or "
                               "a GPU's default without --resume)");
    if (!rc && gpu_default && !o->population && !o->tries)
        fprintf(stderr, "dlca train: up to %lld seeds, %lld side by side at a time until one is verified exact, the "
                        "default on a GPU (--population 1 trains the one of --seed alone, with checkpoints)\n",
                population * tries, population);
    cmd_train_options resolved = *o;
    if (resolved.repair < 0.0) resolved.repair = gpu_default ? defaults.repair : 0.0;
    int default_search = !resolved.repair_threads && gpu_default;
    if (default_search) resolved.repair_threads = defaults.repair_threads;
    int repair_members = o->repair_members >= 0 ? (int)o->repair_members
                         : default_search       ? defaults.repair_members
                                                : 0;
    if (!rc && (population > 1 || tries > 1)) {
        cmd_population_args args = {&r.model.config, r.image, r.target.bits ? &r.target : NULL, backend, &vk, &run,
                                    paths.out, paths.log, paths.plot, o->keep_members, (int)population, (int)tries, o->every,
                                    (int)o->check_every, o->stop_exact, o->keep_final, o->force, resolved.repair,
                                    (int)resolved.repair_threads, repair_members, (size_t)o->repair_tries,
                                    o->max_memory, o->stop};
        rc = cmd_population_train(&args);
    } else if (!rc) {
        rc = train_single(&resolved, &r, &paths, &run, backend, &vk);
    }
    if (backend == CA_BACKEND_GPU) vk_context_free(&vk);
    run_free(&r);
    paths_free(&paths);
    return rc;
}

int cmd_train(int argc, char **argv) { return cli_train(argc, argv, NULL); }

int cli_train(int argc, char **argv, const ca_options *seam)
{
    cmd_train_options options;
    int help = 0;
    if (cmd_train_parse(argc, argv, &options, &help)) {
        ca_config_assignments_free(&options.flags);
        return cli_fail("train", 1);
    }
    if (help) return ca_config_assignments_free(&options.flags), cmd_train_help(), 0;
    options.stop = cli_stop_on_signals();
    int rc = train(&options, seam);
    ca_config_assignments_free(&options.flags);
    return rc ? cli_fail("train", 0) : 0;
}
