/* cmd_train.c: `dlca train`: a preset (with overrides) trained on the CPU or a GPU, with
 * progress, a CSV log and a loss-curve PNG, atomic checkpoints, Ctrl-C and resume. Every output
 * is checked, told apart from the others and locked before any work (paths_prepare). */
#include "atomic_file.h"
#include "ca_backend.h"
#include "ca_config_text.h"
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
#include "commands.h"
#include "error.h"
#include "train_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    const char *target, *device, *out, *log, *resume, *config, *keep_members;
    int force, stop_exact, keep_final;
    ca_cache cache;
    long long every, check_every, population, tries;
    double max_memory; /* GiB */
    double repair;     /* seconds of dlca repair's search when a run ends inexact; 0: none;
                          < 0: not given (the default run's on a GPU, else 0) */
    long long repair_threads; /* threads a search; 0: not given (the default run's) */
    long long repair_members; /* a population's best-ranked inexact members searched; 0: all;
                                 -1: not given (the default run's) */
    /* The config's keys given as flags (--channels 4, --lr 0.1), applied on --config's. */
    ca_config_assignments flags;
    long long steps; /* --steps, which --resume takes as the new total */
    int has_steps;
    volatile sig_atomic_t *stop; /* set by Ctrl-C, SIGTERM or SIGHUP (cli_stop.h): save and stop */
} train_options;

static void print_help(void)
{
    ca_config config;
    ca_config_preset(&config, "gol");
    cmd_default_run run = cmd_population_default_run(&config);
    ca_config_preset(&config, "lizard");
    cmd_default_run lizard = cmd_population_default_run(&config);
    printf("usage: dlca train [--preset NAME] [--config FILE] [options]\n"
           "\n"
           "Trains a DiffLogic CA with backpropagation through time and writes the model file.\n"
           "\n"
           "The model: a preset (default gol), changed by a config file and then by flags; each\n"
           "key below defaults to the preset's value.\n"
           "  --config FILE      `key = value` lines ('#' comments), the keys below without their\n"
           "                     dashes; 'dlca info MODEL > FILE' writes a model's, so that\n"
           "                     'dlca train --config FILE' repeats its run\n");
    for (int i = 0; i < ca_config_key_count; i++) {
        const ca_config_key *k = &ca_config_keys[i];
        char flag[64];
        snprintf(flag, sizeof flag, "--%s %s", k->key, k->value);
        if (strlen(flag) > 18) printf("  %s\n  %-18s %s\n", flag, "", k->help); /* too wide for the column */
        else printf("  %-18s %s\n", flag, k->help);
    }
    printf("\n"
           "The run:\n"
           "  --target PNG       target picture for lizard and image (default: the one in assets/)\n"
           "  --device D         auto, cpu, a Vulkan device index or part of its name (default:\n"
           "                     $DLCA_DEVICE, else auto: a real GPU when there is one, else the CPU)\n"
           "  --cache C          full or checkpoint: GPU activation memory (default full)\n"
           "  --out FILE         model file, written atomically (default <preset>.dlca, or the\n"
           "                     --resume file); an existing one is not replaced without --force\n"
           "  --force            replace an existing --out that this run does not --resume\n"
           "  --log FILE         CSV log: step,soft_loss,hard_loss,seconds (default <out>.csv);\n"
           "                     the loss curve goes beside it as <log>-loss.png\n"
           "  --every N          log, plot and checkpoint every N steps (default 25)\n"
           "  --check-every N    measure the hard loss every N steps (default 1), and at every\n"
           "                     logged step. A circuit can be exact at one step and not the next\n"
           "                     (a gate's argmax flips), and the exact step is what a sweep\n"
           "                     reports; the hard rollout is a forward pass, about a fifth of a\n"
           "                     step, so measuring every step costs ~20%%. When the hard loss is\n"
           "                     0 the circuit is checked for exactness: Life on all 512 boards\n"
           "                     (gol), else 16 rounds training never draws and dlca eval's\n"
           "                     checks, on the CPU\n"
           "  --stop-exact       stop at the first step whose circuit is verified exact and write\n"
           "                     that circuit (the state before that step's update) (default)\n"
           "  --no-stop-exact    train to the budget. Either way the run keeps the best circuit it\n"
           "                     measured (exact first, then fewest wrong cells, then lowest soft\n"
           "                     loss) and writes it at the end when the final circuit is worse\n"
           "                     (its state: a resumed run goes on from that circuit's step)\n"
           "  --keep-final       write the final circuit at the budget even when a measured one\n"
           "                     was better (the file still carries the best)\n"
           "  --population N     train N models, member i with seed + i (member 0 is the run of\n"
           "                     --seed), side by side: one submission a step for all on a GPU;\n"
           "                     stops when one is verified exact (unless --no-stop-exact). --out\n"
           "                     gets the best member (exact first, then fewest wrong cells, then\n"
           "                     soft loss), --log its log; a table of all members at the end. No\n"
           "                     checkpoints: --resume does not take a population. Default on a\n"
           "                     GPU: %d, with --tries %d (a single seed is exact in 3 to 16 runs\n"
           "                     of 16: README); 1 on the CPU and with --resume; --population 1\n"
           "                     is the single run, with its checkpoints (--every)\n"
           "  --tries K          while a population ends with no verified-exact member, train the\n"
           "                     next N seeds, up to K populations in all (default 1 when\n"
           "                     --population is given); --out gets the best member of all, and\n"
           "                     the table lists every one\n"
           "  --keep-members DIR with a population: every member's model and log in DIR as\n"
           "                     <preset>-seed<S>.dlca and .csv (DIR is made if missing)\n"
           "  --repair S         when the run reaches its budget with no verified-exact circuit,\n"
           "                     search up to S seconds for one a few gate changes away, as dlca\n"
           "                     repair does, on the circuit it writes (a population: on each\n"
           "                     member's, best first, side by side on the CPU's cores, until one\n"
           "                     is exact); a circuit made exact is written without training\n"
           "                     state. Default on a GPU without --resume: %g (the lizard: %g);\n"
           "                     elsewhere 0, no search\n"
           "  --repair-threads N threads each search tries changes on (default: the cores, divided\n"
           "                     among a population's inexact members; the lizard's: every core;\n"
           "                     N each runs cores / N searches side by side); the search is the\n"
           "                     same on any number\n"
           "  --repair-members M a population searches its M best-ranked inexact members only; 0:\n"
           "                     all (default 0; the lizard's without --repair-threads: 1, its\n"
           "                     best member alone)\n"
           "  --resume FILE      continue a saved run; --steps sets the new total\n"
           "  --max-memory GiB   refuse, before starting, a run estimated to need more host memory\n"
           "                     than this (default 4)\n"
           "\n"
           "Every output is checked before training starts: the model, the log and the plot must be\n"
           "different files (--resume may be --out, not the log), regular files or new ones in a\n"
           "writable directory; a symbolic link is written through to its target. Another dlca\n"
           "writing the same --out or --log is refused. Files are replaced atomically, the log at\n"
           "its first row (a run that fails before then leaves the old log as it was).\n"
           "\n"
           "Ctrl-C (SIGINT), SIGTERM and SIGHUP (unless ignored, as under nohup) write a checkpoint\n"
           "and exit 0; --resume continues with exactly the losses an uninterrupted run would have had.\n",
           run.population, run.tries, run.repair, lizard.repair);
}

static int parse_cache(const char *text, ca_cache *cache)
{
    if (strcmp(text, "full") == 0) *cache = CA_CACHE_FULL;
    else if (strcmp(text, "checkpoint") == 0) *cache = CA_CACHE_CHECKPOINT;
    else return err_set(DLCA_ERR, "--cache: '%s' is not full or checkpoint", text);
    return DLCA_OK;
}

/* A config key given as a flag: checked now (its syntax and range, on a scratch config), so a bad
 * value is refused before anything else, and applied when the config is built. */
static int parse_config_flag(train_options *o, const char *flag, const char *v)
{
    ca_config scratch;
    const ca_config_key *key = ca_config_key_find(flag + 2);
    ca_config_preset(&scratch, "gol");
    if (key->parse(&scratch, v, flag) || ca_config_assign(&o->flags, flag + 2, v, flag)) return DLCA_ERR;
    if (strcmp(key->key, "steps") == 0) o->has_steps = 1, o->steps = scratch.train_steps;
    return DLCA_OK;
}

/* One flag with its value; returns DLCA_ERR with the message set. */
static int parse_flag(train_options *o, const char *flag, const char *v)
{
    if (strcmp(flag, "--target") == 0) o->target = v;
    else if (strcmp(flag, "--device") == 0) o->device = v;
    else if (strcmp(flag, "--out") == 0) o->out = v;
    else if (strcmp(flag, "--log") == 0) o->log = v;
    else if (strcmp(flag, "--resume") == 0) o->resume = v;
    else if (strcmp(flag, "--config") == 0) {
        if (o->config) return err_set(DLCA_ERR, "--config: one file only, not %s and %s", o->config, v);
        o->config = v;
    }
    else if (strcmp(flag, "--cache") == 0) return parse_cache(v, &o->cache);
    else if (strcmp(flag, "--max-memory") == 0) return cli_double(flag, v, CA_MEMORY_MIN_GIB, CA_MEMORY_MAX_GIB, &o->max_memory);
    else if (strcmp(flag, "--every") == 0) return cli_int(flag, v, 1, 1000000000, &o->every);
    else if (strcmp(flag, "--check-every") == 0) return cli_int(flag, v, 1, 1000000000, &o->check_every);
    else if (strcmp(flag, "--population") == 0) return cli_int(flag, v, 1, CMD_POPULATION_MAX, &o->population);
    else if (strcmp(flag, "--tries") == 0) return cli_int(flag, v, 1, CMD_TRIES_MAX, &o->tries);
    else if (strcmp(flag, "--keep-members") == 0) o->keep_members = v;
    else if (strcmp(flag, "--repair") == 0) return cli_double(flag, v, 0.0, 86400.0, &o->repair);
    else if (strcmp(flag, "--repair-threads") == 0) return cli_int(flag, v, 1, CA_REPAIR_MAX_THREADS, &o->repair_threads);
    else if (strcmp(flag, "--repair-members") == 0) return cli_int(flag, v, 0, CMD_POPULATION_MAX, &o->repair_members);
    else if (ca_config_key_find(flag + 2)) return parse_config_flag(o, flag, v);
    else return err_set(DLCA_ERR, "unknown option '%s' (see dlca train --help)", flag);
    return DLCA_OK;
}

static int parse_options(int argc, char **argv, train_options *o, int *help)
{
    memset(o, 0, sizeof *o);
    o->device = NULL, o->every = 25, o->cache = CA_CACHE_FULL, o->max_memory = CA_MEMORY_DEFAULT_GIB;
    o->check_every = 1, o->stop_exact = 1, o->repair = -1.0, o->repair_members = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return *help = 1, DLCA_OK;
        int is_force = strcmp(argv[i], "--force") == 0, is_stop = strcmp(argv[i], "--stop-exact") == 0;
        if (strcmp(argv[i], "--keep-final") == 0) {
            o->keep_final = 1;
            continue;
        }
        if (is_force || is_stop || strcmp(argv[i], "--no-stop-exact") == 0) {
            if (is_force) o->force = 1;
            else o->stop_exact = is_stop;
            continue;
        }
        const char *value;
        if (strncmp(argv[i], "--", 2) != 0) return err_set(DLCA_ERR, "unexpected argument '%s'", argv[i]);
        if (cli_value(argc, argv, &i, &value) || parse_flag(o, argv[i - 1], value)) return DLCA_ERR;
    }
    int configures = 0; /* flags that change the config; --steps only sets a resumed run's total */
    for (int i = 0; i < o->flags.count; i++) configures += strcmp(o->flags.items[i].key->key, "steps") != 0;
    if (o->resume && (configures || o->config || o->target))
        return err_set(DLCA_ERR, "--resume continues a run as it was configured: only --steps, --device, --cache, "
                                 "--out, --log, --every, --check-every, --stop-exact, --no-stop-exact, --keep-final, "
                                 "--repair, --repair-threads, --force and --max-memory may be given with it");
    if (o->resume && o->population > 1)
        return err_set(DLCA_ERR, "--population: a population keeps no checkpoint, so it cannot --resume; train it again "
                                 "(the same seeds give the same members)");
    if (o->resume && o->tries > 1)
        return err_set(DLCA_ERR, "--tries: tries are populations, which keep no checkpoint, so they cannot --resume");
    if (o->tries > 1 && !o->stop_exact)
        return err_set(DLCA_ERR, "--tries: a further try follows only a try without an exact circuit, and "
                                 "--no-stop-exact trains past one");
    return DLCA_OK;
}

/* The config: the preset, then --config's file, then the flags (ca_config_text.h). */
static int build_config(ca_config *config, const train_options *o)
{
    ca_config_assignments all;
    memset(&all, 0, sizeof all);
    int rc = o->config ? ca_config_load_text(&all, o->config) : DLCA_OK;
    for (int i = 0; !rc && i < o->flags.count; i++)
        rc = ca_config_assign(&all, o->flags.items[i].key->key, o->flags.items[i].value, o->flags.items[i].origin);
    if (!rc) rc = ca_config_build(config, &all, "gol");
    ca_config_assignments_free(&all);
    return rc;
}

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

static int run_prepare(training_run *r, const train_options *o, const char *assets)
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
    } else {
        ca_config config;
        if (build_config(&config, o)) return DLCA_ERR;
        if (ca_model_init(&r->model, &config)) return DLCA_ERR;
        char path[4096];
        const char *fallback = ca_target_default_path(&config, assets, path, sizeof path);
        const char *target = o->target ? o->target : fallback;
        if (o->target && !fallback)
            return err_set(DLCA_ERR, "--target: preset '%s' has no picture target (target-kind is not image)", config.preset);
        if (target && ca_target_load_png(&config, target, &r->target)) return DLCA_ERR;
    }
    if (r->target.bits && !(r->image = ca_target_values(&r->target)))
        return err_set(DLCA_ERR_NOMEM, "out of memory for the target");
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
 * (./a and a, hard and symbolic links), except --resume and --out: that is continuing a run. */
static int check_distinct(const train_options *o, const train_paths *p)
{
    enum { MODEL, RESUME = 5 };
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
    };
    size_t count = sizeof files / sizeof files[0];
    for (size_t i = 0; i < count; i++)
        for (size_t j = i + 1; j < count; j++) {
            if (!files[i].path || !files[j].path || (!files[i].output && !files[j].output)) continue;
            if (i == MODEL && j == RESUME) continue;
            if (atomic_file_same(files[i].path, files[j].path))
                return err_set(DLCA_ERR, "%s %s and %s %s are the same file: give each its own path", files[i].label,
                               files[i].path, files[j].label, files[j].path);
        }
    return DLCA_OK;
}

/* The model, log and plot paths, each checked (atomic_file_check), distinct, locked, and the model
 * not one this run would clobber. Nothing is written but the lock files. */
static int paths_prepare(train_paths *p, const train_options *o, const training_run *r)
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
    train_log_message(log, "the final circuit has %.0f wrong cells on step %llu's round; writing the best one, "
                      "measured at step %llu (%s%.0f wrong, soft %.6g)", final.wrong, (unsigned long long)t->step,
                      (unsigned long long)w->best.step, w->best.exact ? "verified exact, " : "", w->best.wrong,
                      w->best.soft);
    return save_run(out, t, w, r, seconds, 1);
}

/* The loop: every step a progress update, every `check_every` steps the hard loss (ca_watch),
 * every `every` steps (and at the end) a log row, the plot and a checkpoint. Stops at the first
 * verified-exact circuit (--stop-exact), writing it; early, saving, on SIGINT, SIGTERM or SIGHUP;
 * else at the budget, writing the best circuit when the final one is worse. */
static int train_loop(ca_trainer *t, ca_watch *w, training_run *r, const train_options *o, const train_paths *p,
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
static int repair_written(const train_options *o, training_run *r, const char *out, train_log *log)
{
    int threads = o->repair_threads ? (int)o->repair_threads : ca_fast_default_threads();
    if (threads > CA_REPAIR_MAX_THREADS) threads = CA_REPAIR_MAX_THREADS;
    ca_repair_options options = {o->repair, CA_REPAIR_ROUNDS, cmd_repair_progress, NULL, threads, o->stop};
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
    train_log_message(log, "repair: %zu wrong cell bits -> verified exact by changing %d gate%s (%zu tries, %.1f s); "
                      "wrote it to %s, without training state", result.wrong_before, result.changes,
                      result.changes == 1 ? "" : "s", result.tries, result.seconds, out);
    return DLCA_OK;
}

/* One run, on the opened backend. */
static int train_single(const train_options *o, training_run *r, const train_paths *paths, const ca_options *run,
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

static int train(const train_options *o, const ca_options *seam)
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
    if (!rc) rc = ca_backend_open(&run, &vk, &backend);
    /* Not given: on a GPU, populations of 4 tried in turn, up to 16 seeds, until one member is
     * verified exact: a seed is exact by luck, 16 almost always, and members take turns on the
     * GPU, so four at a time reach the first exact circuit of the same 16 seeds with fewer steps
     * (README, "The default run"). A single run elsewhere. --population alone means one try. */
    int gpu_default = backend == CA_BACKEND_GPU && !o->resume;
    cmd_default_run defaults = cmd_population_default_run(&r.model.config);
    long long population = o->population ? o->population : gpu_default ? defaults.population : 1;
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
    train_options resolved = *o;
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
                                    (int)resolved.repair_threads, repair_members, o->max_memory, o->stop};
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
    train_options options;
    int help = 0;
    if (parse_options(argc, argv, &options, &help)) {
        ca_config_assignments_free(&options.flags);
        return cli_fail("train", 1);
    }
    if (help) return ca_config_assignments_free(&options.flags), print_help(), 0;
    options.stop = cli_stop_on_signals();
    int rc = train(&options, seam);
    ca_config_assignments_free(&options.flags);
    return rc ? cli_fail("train", 0) : 0;
}
