/* cmd_sweep.c: `dlca sweep`: how often, how soon and at what cost a config trains to an exact
 * circuit. Each preset's seeds train as one population (ca_population.h) in which a member stops
 * at its own first verified-exact step and the others go on to the budget; then a summary per
 * preset (exact runs of S, median steps to exact, wall seconds per exact circuit), optionally as
 * JSON, a CSV row per seed and Markdown rows for the README. */
#include "atomic_file.h"
#include "ca_backend.h"
#include "ca_config_text.h"
#include "ca_eval.h"
#include "ca_memory.h"
#include "ca_target.h"
#include "cli.h"
#include "cli_env.h"
#include "cli_json.h"
#include "cli_stop.h"
#include "cmd_population.h"
#include "commands.h"
#include "error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SWEEP_MAX_PRESETS = 8 };

typedef struct {
    char presets[SWEEP_MAX_PRESETS][CA_NAME_LENGTH];
    int preset_count;
    long long first_seed, seed_count;
    const char *device, *json, *csv, *method, *commit, *target, *keep_exact, *keep_members;
    int markdown;
    ca_cache cache;
    long long every, check_every;
    double max_memory;
    double repair; /* seconds of the repair search per inexact seed; 0: none */
    long long repair_threads; /* threads a search; 0: the cores divided among the inexact seeds */
    long long repair_tries;   /* tries a search at most; 0: no bound but the seconds */
    ca_config_assignments flags; /* config keys given as flags, applied on each preset */
    volatile sig_atomic_t *interrupt; /* cli_stop.h: stop after the step under way */
} sweep_options;

/* One preset's outcome. */
typedef struct {
    char preset[CA_NAME_LENGTH];
    int runs, exact;                 /* exact: trained or repaired to a verified-exact circuit */
    int repaired;                    /* of them, made exact by the repair search */
    uint64_t steps;                  /* the budget */
    uint64_t steps_done;             /* the steps the population ran: the budget unless interrupted */
    int interrupted;
    double median_exact, median_all; /* INFINITY: never */
    double wall;                     /* seconds, start-up included */
    int *seeds_exact;                /* [exact]: the exact runs' member indices (seed - first) */
    /* per seed */
    uint64_t *exact_step; /* 0: never (by training) */
    int *repaired_seed;   /* made exact by the repair search */
    double *final_soft, *final_hard, *best_hard;
    double *best_shortfall; /* the best's bits wrong over T..10T when refused with none (ca_mark) */
    int *inexact;         /* circuits with a hard loss of 0 that the exact check refused */
    size_t *repair_tries; /* the tries its repair search made (0: none ran) */
    double *repair_seconds;
    char (*first_inexact)[192]; /* why the first of them was refused ("": none) */
} sweep_result;

static void print_help(void)
{
    printf("usage: dlca sweep --preset P[,P...] --seeds A-B [--steps N] [config flags] [options]\n"
           "\n"
           "Trains seeds A..B of each preset as one population (as dlca train --population): each\n"
           "run stops at its first verified-exact circuit (dlca train --stop-exact), the others go\n"
           "on to the budget. Prints per preset: exact runs of S, the median steps to exact (over\n"
           "the exact runs), the median steps over all runs (a run never exact counts as infinite:\n"
           "'never' when the median is), the wall seconds per exact circuit (the preset's whole\n"
           "wall time, start-up included, over its exact runs; inf when none), and the exact seeds.\n"
           "Progress goes to stderr, the summary to stdout.\n"
           "\n"
           "  --preset P[,P...]  presets, one population each, in turn (up to %d)\n"
           "  --seeds A-B        the seeds (or one seed A); member i is seed A + i\n"
           "  --steps N          the budget (default: each preset's steps: gol 3000, checkerboard\n"
           "                     500, checkerboard-async 800, lizard 3500, image 3000,\n"
           "                     image-persist 6000)\n"
           "  --KEY VALUE        any config key of dlca train (--lr 0.05, --batch 4, ...), on every\n"
           "                     preset; not --seed\n"
           "  --target PNG       the target picture of lizard and image (default: assets/), at most the\n"
           "                     grid's size: a smaller one is centred on off cells\n"
           "  --device D         as dlca train (default $DLCA_DEVICE, else auto)\n"
           "  --cache C          full or checkpoint, as dlca train\n"
           "  --check-every N    measure the hard loss every N steps (default 1; as dlca train)\n"
           "  --every N          a progress line every N steps (default 100)\n"
           "  --repair S         after training, search up to S seconds on each seed's circuit that\n"
           "                     is not exact for one a few gate changes away (dlca repair), the\n"
           "                     seeds side by side on the CPU's cores; a seed made exact counts\n"
           "                     as exact at the steps it trained (its exact seed marked 'r'), and\n"
           "                     the search's time is in the wall time (default 0: none)\n"
           "  --repair-threads N threads each search tries changes on (default: the cores divided\n"
           "                     among the inexact seeds, one each while they outnumber the cores;\n"
           "                     N each: cores / N searches side by side, the others after)\n"
           "  --repair-tries N   each search's single-gate changes tried at most (default: no\n"
           "                     bound but --repair's seconds): with seconds to spare, a seed's\n"
           "                     search and its result are the same on any host, so the sweep's\n"
           "                     exact count is too\n"
           "  --max-memory GiB   refuse a population estimated to need more host memory (default 4)\n"
           "  --keep-exact DIR   write each verified-exact circuit to DIR as <preset>-seed<S>.dlca\n"
           "                     (the state before its exact step's update, as dlca train writes\n"
           "                     it); DIR is made if missing, and no file in it is replaced\n"
           "  --keep-members DIR write every seed's circuit to DIR as <preset>-seed<S>.dlca, exact\n"
           "                     or not: what dlca train --seed S writes (its exact, repaired, best\n"
           "                     or final circuit), to study the runs that missed; as --keep-exact\n"
           "  --json FILE        the summary and every run as JSON (atomically; - for stdout); a\n"
           "                     run's 'inexact' counts its circuits with a hard loss of 0 that\n"
           "                     the exact check refused, 'first_inexact' says why the first was\n"
           "                     refused, and 'best_shortfall' the kept best circuit's wrong bits\n"
           "                     over steps T..10T when it was refused with none (runs trained to\n"
           "                     hold their picture; else 0); 'repair_tries' and 'repair_seconds'\n"
           "                     what its --repair search took (0: none ran), to choose a budget\n"
           "                     of --repair-tries from\n"
           "  --csv FILE         one row per seed: preset,seed,exact_step (empty: never by\n"
           "                     training),final_soft,final_hard,best_hard,repaired (1: made exact\n"
           "                     by --repair, else 0) (atomically)\n"
           "  --markdown         also print the README's rows: | preset | method | exact/S | median\n"
           "                     steps to exact | wall s per exact | device | commit |\n"
           "  --method TEXT      the method column (default: the config flags given, or 'defaults')\n"
           "  --commit TEXT      the commit column (default '-'; tools/sweep_table.sh gives git's)\n"
           "\n"
           "Ctrl-C (SIGINT), SIGTERM and SIGHUP (unless ignored, as under nohup) stop the sweep after\n"
           "the step under way: it prints and writes (--json, --csv, --markdown, --keep-exact,\n"
           "--keep-members) what it has, the interrupted preset marked with the steps it ran, and\n"
           "exits 0.\n",
           SWEEP_MAX_PRESETS);
}

static int parse_presets(sweep_options *o, const char *text)
{
    char copy[CA_CONFIG_VALUE_MAX];
    if (strlen(text) >= sizeof copy) return err_set(DLCA_ERR, "--preset: the list is too long");
    strcpy(copy, text);
    o->preset_count = 0;
    for (char *save = NULL, *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        ca_config probe;
        if (o->preset_count == SWEEP_MAX_PRESETS) return err_set(DLCA_ERR, "--preset: at most %d presets", SWEEP_MAX_PRESETS);
        if (ca_config_preset(&probe, name)) return err_set(DLCA_ERR, "--preset: %s", err_message());
        snprintf(o->presets[o->preset_count++], CA_NAME_LENGTH, "%s", name);
    }
    if (o->preset_count == 0) return err_set(DLCA_ERR, "--preset: no preset in '%s'", text);
    return DLCA_OK;
}

static int parse_seeds(sweep_options *o, const char *text)
{
    const char *dash = strchr(text, '-');
    char first[64];
    long long last;
    if (!dash) return cli_int("--seeds", text, 0, (long long)1 << 62, &o->first_seed) ? DLCA_ERR : (o->seed_count = 1, DLCA_OK);
    if ((size_t)(dash - text) >= sizeof first) return err_set(DLCA_ERR, "--seeds: '%s' is not A-B", text);
    memcpy(first, text, (size_t)(dash - text));
    first[dash - text] = '\0';
    if (cli_int("--seeds", first, 0, (long long)1 << 62, &o->first_seed) ||
        cli_int("--seeds", dash + 1, 0, (long long)1 << 62, &last))
        return DLCA_ERR;
    if (last < o->first_seed) return err_set(DLCA_ERR, "--seeds: %s runs backwards (give A-B with A <= B)", text);
    if (last - o->first_seed >= CMD_POPULATION_MAX)
        return err_set(DLCA_ERR, "--seeds: %s is more than %d seeds", text, CMD_POPULATION_MAX);
    o->seed_count = last - o->first_seed + 1;
    return DLCA_OK;
}

static int parse_flag(sweep_options *o, const char *flag, const char *v)
{
    if (strcmp(flag, "--preset") == 0) return parse_presets(o, v);
    if (strcmp(flag, "--seeds") == 0) return parse_seeds(o, v);
    if (strcmp(flag, "--device") == 0) o->device = v;
    else if (strcmp(flag, "--json") == 0) o->json = v;
    else if (strcmp(flag, "--csv") == 0) o->csv = v;
    else if (strcmp(flag, "--method") == 0) o->method = v;
    else if (strcmp(flag, "--commit") == 0) o->commit = v;
    else if (strcmp(flag, "--target") == 0) o->target = v;
    else if (strcmp(flag, "--keep-exact") == 0) o->keep_exact = v;
    else if (strcmp(flag, "--keep-members") == 0) o->keep_members = v;
    else if (strcmp(flag, "--cache") == 0) {
        if (strcmp(v, "full") == 0) o->cache = CA_CACHE_FULL;
        else if (strcmp(v, "checkpoint") == 0) o->cache = CA_CACHE_CHECKPOINT;
        else return err_set(DLCA_ERR, "--cache: '%s' is not full or checkpoint", v);
    } else if (strcmp(flag, "--max-memory") == 0) {
        return cli_double(flag, v, CA_MEMORY_MIN_GIB, CA_MEMORY_MAX_GIB, &o->max_memory);
    } else if (strcmp(flag, "--every") == 0) {
        return cli_int(flag, v, 1, 1000000000, &o->every);
    } else if (strcmp(flag, "--check-every") == 0) {
        return cli_int(flag, v, 1, 1000000000, &o->check_every);
    } else if (strcmp(flag, "--repair") == 0) {
        return cli_double(flag, v, 0.0, 86400.0, &o->repair);
    } else if (strcmp(flag, "--repair-threads") == 0) {
        return cli_int(flag, v, 1, CA_REPAIR_MAX_THREADS, &o->repair_threads);
    } else if (strcmp(flag, "--repair-tries") == 0) {
        return cli_int(flag, v, 1, CA_REPAIR_MAX_TRIES, &o->repair_tries);
    } else if (strcmp(flag, "--seed") == 0) {
        return err_set(DLCA_ERR, "--seed: a sweep takes --seeds A-B");
    } else if (ca_config_key_find(flag + 2)) {
        ca_config scratch;
        ca_config_preset(&scratch, "gol");
        return ca_config_key_find(flag + 2)->parse(&scratch, v, flag) || ca_config_assign(&o->flags, flag + 2, v, flag)
                   ? DLCA_ERR
                   : DLCA_OK;
    } else {
        return err_set(DLCA_ERR, "unknown option '%s' (see dlca sweep --help)", flag);
    }
    return DLCA_OK;
}

static int parse_options(int argc, char **argv, sweep_options *o, int *help)
{
    memset(o, 0, sizeof *o);
    o->cache = CA_CACHE_FULL, o->every = 100, o->check_every = 1, o->max_memory = CA_MEMORY_DEFAULT_GIB;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return *help = 1, DLCA_OK;
        if (strcmp(argv[i], "--markdown") == 0) {
            o->markdown = 1;
            continue;
        }
        const char *value;
        if (strncmp(argv[i], "--", 2) != 0) return err_set(DLCA_ERR, "unexpected argument '%s'", argv[i]);
        if (cli_value(argc, argv, &i, &value) || parse_flag(o, argv[i - 1], value)) return DLCA_ERR;
    }
    if (o->preset_count == 0) return err_set(DLCA_ERR, "--preset: give the preset(s) to sweep, e.g. --preset gol");
    if (o->seed_count == 0) return err_set(DLCA_ERR, "--seeds: give the seeds to sweep, e.g. --seeds 1-16");
    if (o->json && o->csv && atomic_file_same(o->json, o->csv))
        return err_set(DLCA_ERR, "--json %s and --csv %s are the same file: give each its own path", o->json, o->csv);
    return DLCA_OK;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of n values (sorted in place); the mean of the middle two for even n, so infinite
 * when either is. NAN for none. */
static double median(double *values, int n)
{
    if (n == 0) return NAN;
    qsort(values, (size_t)n, sizeof(double), compare_doubles);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

static void result_free(sweep_result *r)
{
    free(r->seeds_exact), free(r->exact_step), free(r->final_soft), free(r->final_hard), free(r->best_hard);
    free(r->best_shortfall);
    free(r->inexact), free(r->first_inexact), free(r->repaired_seed), free(r->repair_tries), free(r->repair_seconds);
    memset(r, 0, sizeof *r);
}

/* The summary of a trained population. */
static int summarise(const ca_population *p, double wall, sweep_result *r)
{
    int n = p->count;
    double *exact = malloc((size_t)n * sizeof(double)), *all = malloc((size_t)n * sizeof(double));
    r->seeds_exact = malloc((size_t)n * sizeof(int));
    r->exact_step = calloc((size_t)n, sizeof(uint64_t));
    r->final_soft = malloc((size_t)n * sizeof(double));
    r->final_hard = malloc((size_t)n * sizeof(double));
    r->best_hard = malloc((size_t)n * sizeof(double));
    r->best_shortfall = malloc((size_t)n * sizeof(double));
    r->inexact = malloc((size_t)n * sizeof(int));
    r->first_inexact = malloc((size_t)n * sizeof *r->first_inexact);
    r->repaired_seed = calloc((size_t)n, sizeof(int));
    r->repair_tries = malloc((size_t)n * sizeof(size_t));
    r->repair_seconds = malloc((size_t)n * sizeof(double));
    if (!exact || !all || !r->seeds_exact || !r->exact_step || !r->final_soft || !r->final_hard || !r->best_hard ||
        !r->best_shortfall || !r->inexact || !r->first_inexact || !r->repaired_seed || !r->repair_tries ||
        !r->repair_seconds) {
        free(exact), free(all);
        return err_set(DLCA_ERR_NOMEM, "out of memory for the sweep's summary");
    }
    snprintf(r->preset, sizeof r->preset, "%s", p->members[0].model.config.preset);
    r->runs = n, r->steps = p->total, r->wall = wall, r->exact = 0;
    for (int i = 0; i < n; i++) {
        const ca_member *m = &p->members[i];
        uint64_t step = m->watch.exact_step;
        r->exact_step[i] = step;
        r->final_soft[i] = m->soft, r->final_hard[i] = m->hard, r->best_hard[i] = m->watch.best.wrong;
        r->best_shortfall[i] = m->watch.best.shortfall;
        r->inexact[i] = m->watch.inexact;
        r->repair_tries[i] = m->repair.tries, r->repair_seconds[i] = m->repair.seconds;
        r->steps_done = m->stop_step > r->steps_done ? m->stop_step : r->steps_done;
        snprintf(r->first_inexact[i], sizeof r->first_inexact[i], "%s", m->watch.inexact ? m->watch.first_inexact.why : "");
        /* a repaired seed is exact at the steps it trained */
        r->repaired_seed[i] = m->repaired, r->repaired += m->repaired;
        if (m->repaired) step = m->stop_step;
        all[i] = step ? (double)step : INFINITY;
        if (step) exact[r->exact] = (double)step, r->seeds_exact[r->exact++] = i;
    }
    r->median_exact = median(exact, r->exact);
    r->median_all = median(all, n);
    free(exact), free(all);
    return DLCA_OK;
}

/* One preset's config: the preset, then the flags; the seeds' first. */
static int build_config(const sweep_options *o, const char *preset, ca_config *config)
{
    ca_config_assignments all;
    memset(&all, 0, sizeof all);
    int rc = ca_config_assign(&all, "preset", preset, "--preset");
    for (int i = 0; !rc && i < o->flags.count; i++)
        rc = ca_config_assign(&all, o->flags.items[i].key->key, o->flags.items[i].value, o->flags.items[i].origin);
    if (!rc) rc = ca_config_build(config, &all, preset);
    ca_config_assignments_free(&all);
    config->seed = (uint64_t)o->first_seed;
    return rc;
}

/* The target picture of an image preset (--target, else the shipped one) as bits, which kept
 * circuits store, and as the values training reads; none (zeroed, NULL) for the others. */
static int load_target(const sweep_options *o, const ca_config *c, const char *assets, ca_target_image *target,
                       double **image)
{
    char path[4096];
    const char *fallback = ca_target_default_path(c, assets, path, sizeof path);
    const char *file = fallback && o->target ? o->target : fallback;
    memset(target, 0, sizeof *target);
    *image = NULL;
    if (!file) return DLCA_OK;
    if (ca_target_load_png(c, file, target)) return DLCA_ERR;
    if (!(*image = ca_target_values(target))) return err_set(DLCA_ERR_NOMEM, "out of memory for the target");
    char note[512];
    if (ca_eval_torus_note(c, *image, note, sizeof note)) fprintf(stderr, "note: %s: %s\n", c->preset, note);
    return DLCA_OK;
}

/* A preset's config and target picture (the bits kept circuits store, the values training reads). */
typedef struct {
    ca_config config;
    ca_target_image target;
    double *image;
} preset_inputs;

/* Every preset's inputs, made (and so checked) before the first preset is trained. */
static int prepare_presets(const sweep_options *o, const char *assets, preset_inputs *inputs)
{
    for (int i = 0; i < o->preset_count; i++)
        if (build_config(o, o->presets[i], &inputs[i].config) ||
            load_target(o, &inputs[i].config, assets, &inputs[i].target, &inputs[i].image))
            return DLCA_ERR;
    return DLCA_OK;
}

/* --keep-exact and --keep-members (`flag`): DIR/<preset>-seed<S>.dlca of every preset and seed,
 * checked before any training: DIR is made if missing, and a file that is there already is
 * refused, not replaced. (Both may name one folder: an exact seed's two files are the same.) */
static int check_keep_dir(const sweep_options *o, const char *dir, const char *flag)
{
    if (cmd_population_dir(dir, flag)) return DLCA_ERR;
    int rc = DLCA_OK;
    for (int i = 0; !rc && i < o->preset_count; i++)
        for (long long k = 0; !rc && k < o->seed_count; k++) {
            char *path = cmd_population_member_path(dir, o->presets[i], (uint64_t)(o->first_seed + k), ".dlca");
            if (!path) return err_set(DLCA_ERR_NOMEM, "out of memory");
            rc = atomic_file_check(path, flag);
            if (!rc && atomic_file_exists(path))
                rc = err_set(DLCA_ERR, "%s: %s exists: move it away or give another folder", flag, path);
            free(path);
        }
    return rc;
}

/* The trained population's members into `dir`: the verified-exact ones (`exact_only`), or all. */
static int keep_circuits(ca_population *p, const ca_target_image *target, const char *dir, int exact_only)
{
    int kept = 0;
    for (int i = 0; i < p->count; i++) {
        if (exact_only && !p->members[i].out.exact) continue;
        char *path = cmd_population_member_path(dir, p->members[i].model.config.preset, p->members[i].model.config.seed,
                                                ".dlca");
        if (!path) return err_set(DLCA_ERR_NOMEM, "out of memory");
        int rc = ca_population_save(p, i, path, target);
        free(path);
        if (rc) return rc;
        kept++;
    }
    fprintf(stderr, "kept %d %scircuit%s in %s\n", kept, exact_only ? "exact " : "", kept == 1 ? "" : "s", dir);
    return DLCA_OK;
}

static int sweep_preset(const sweep_options *o, const char *preset, const preset_inputs *in, ca_options *run,
                        ca_backend backend, vk_context *vk, sweep_result *result)
{
    ca_population p;
    double start = now_seconds();
    memset(&p, 0, sizeof p);
    int count = (int)o->seed_count;
    int rc = cmd_population_memory(&in->config, count, backend, vk, run, o->max_memory);
    if (!rc) {
        fprintf(stderr, "sweeping %s: seeds %lld to %lld, %d steps on %s\n", preset, o->first_seed,
                o->first_seed + count - 1, in->config.train_steps, ca_backend_name(backend, vk));
        rc = ca_population_init(&p, &in->config, count, in->image, backend, vk, run, (int)o->check_every);
    }
    if (!rc) {
        cmd_population_progress show = {preset};
        ca_population_run how = {CA_STOP_EACH, o->every, 0, cmd_population_show, &show, o->interrupt, 0.0, NULL};
        rc = ca_population_train(&p, &how);
    }
    int repaired = 0, interrupted = o->interrupt && *o->interrupt;
    if (!rc && o->repair > 0.0 && !interrupted)
        rc = cmd_population_repair(&p, o->repair, (int)o->repair_threads, 0, 0, (size_t)o->repair_tries, o->interrupt,
                                   &repaired);
    if (!rc) rc = summarise(&p, now_seconds() - start, result);
    if (!rc && interrupted) {
        result->interrupted = 1;
        fprintf(stderr, "interrupted at step %llu of %llu: the summary of %s covers the steps run\n",
                (unsigned long long)result->steps_done, (unsigned long long)result->steps, preset);
    }
    const ca_target_image *target = in->target.bits ? &in->target : NULL;
    if (!rc && o->keep_exact) rc = keep_circuits(&p, target, o->keep_exact, 1);
    if (!rc && o->keep_members) rc = keep_circuits(&p, target, o->keep_members, 0);
    ca_population_free(&p);
    return rc;
}

static void format_steps(char *text, size_t size, double steps)
{
    if (isnan(steps)) snprintf(text, size, "-");
    else if (isinf(steps)) snprintf(text, size, "never");
    else snprintf(text, size, "%g", steps);
}

static void format_per_exact(char *text, size_t size, const sweep_result *r)
{
    if (r->exact == 0) snprintf(text, size, "inf");
    else snprintf(text, size, "%.3g", r->wall / r->exact);
}

static void print_summary(const sweep_result *results, int count, long long first_seed)
{
    printf("%-20s %-8s %-22s %-19s %-9s %-17s %s\n", "preset", "exact/S", "median steps to exact", "median steps (all)",
           "wall s", "wall s per exact", "exact seeds");
    for (int i = 0; i < count; i++) {
        const sweep_result *r = &results[i];
        char ratio[32], exact[32], all[32], per[32];
        snprintf(ratio, sizeof ratio, "%d/%d", r->exact, r->runs);
        format_steps(exact, sizeof exact, r->median_exact);
        format_steps(all, sizeof all, r->median_all);
        format_per_exact(per, sizeof per, r);
        printf("%-20s %-8s %-22s %-19s %-9.2f %-17s", r->preset, ratio, exact, all, r->wall, per);
        for (int k = 0; k < r->exact; k++)
            printf("%s%llu%s", k ? " " : "", (unsigned long long)(first_seed + r->seeds_exact[k]),
                   r->repaired_seed[r->seeds_exact[k]] ? "r" : "");
        printf("%s\n", r->exact ? "" : "-");
        if (r->repaired) printf("  (%d of the %d exact made so by --repair: seeds marked r)\n", r->repaired, r->exact);
    }
}

/* The method column: --method, else the config flags as given. */
static void method_text(const sweep_options *o, char *text, size_t size)
{
    text[0] = '\0';
    if (o->method) {
        snprintf(text, size, "%s", o->method);
        return;
    }
    for (int i = 0; i < o->flags.count; i++) {
        size_t used = strlen(text);
        snprintf(text + used, size - used, "%s%s %s", i ? " " : "", o->flags.items[i].origin, o->flags.items[i].value);
    }
    if (o->repair > 0.0 && !o->method) {
        size_t used = strlen(text);
        snprintf(text + used, size - used, "%s--repair %g", used ? " " : "", o->repair);
    }
    if (!text[0]) snprintf(text, size, "defaults");
}

static void print_markdown(const sweep_options *o, const sweep_result *results, int count, const char *device)
{
    char method[1024];
    method_text(o, method, sizeof method);
    printf("| preset | method | exact/S | median steps to exact | wall s per exact | device | commit |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < count; i++) {
        const sweep_result *r = &results[i];
        char exact[32], per[32];
        format_steps(exact, sizeof exact, r->median_exact);
        format_per_exact(per, sizeof per, r);
        char stopped[64] = "";
        if (r->interrupted)
            snprintf(stopped, sizeof stopped, " (interrupted at step %llu)", (unsigned long long)r->steps_done);
        printf("| %s | %s%s | %d/%d | %s | %s | %s | %s |\n", r->preset, method, stopped, r->exact, r->runs, exact, per,
               device, o->commit ? o->commit : "-");
    }
}

static int write_json(const sweep_options *o, const sweep_result *results, int count, const char *device)
{
    cli_json j;
    memset(&j, 0, sizeof j);
    cli_json_open(&j, NULL, '{');
    cli_json_string(&j, "device", device);
    cli_json_int(&j, "first_seed", o->first_seed);
    cli_json_int(&j, "seeds", o->seed_count);
    cli_json_open(&j, "presets", '[');
    for (int i = 0; i < count; i++) {
        const sweep_result *r = &results[i];
        cli_json_open(&j, NULL, '{');
        cli_json_string(&j, "preset", r->preset);
        cli_json_int(&j, "steps", (long long)r->steps);
        cli_json_int(&j, "steps_done", (long long)r->steps_done);
        cli_json_bool(&j, "interrupted", r->interrupted);
        cli_json_int(&j, "runs", r->runs);
        cli_json_int(&j, "exact", r->exact);
        cli_json_int(&j, "repaired", r->repaired);
        cli_json_number(&j, "median_steps_to_exact", r->median_exact);
        cli_json_number(&j, "median_steps_all", r->median_all);
        cli_json_number(&j, "wall_seconds", r->wall);
        cli_json_number(&j, "wall_seconds_per_exact", r->exact ? r->wall / r->exact : INFINITY);
        cli_json_open(&j, "exact_seeds", '[');
        for (int k = 0; k < r->exact; k++) cli_json_int(&j, NULL, o->first_seed + r->seeds_exact[k]);
        cli_json_close(&j, ']');
        cli_json_open(&j, "runs_by_seed", '[');
        for (int k = 0; k < r->runs; k++) {
            cli_json_open(&j, NULL, '{');
            cli_json_int(&j, "seed", o->first_seed + k);
            cli_json_number(&j, "exact_step", r->exact_step[k] ? (double)r->exact_step[k] : NAN);
            cli_json_number(&j, "final_soft", r->final_soft[k]);
            cli_json_number(&j, "final_hard", r->final_hard[k]);
            cli_json_number(&j, "best_hard", r->best_hard[k]);
            cli_json_number(&j, "best_shortfall", r->best_shortfall[k]);
            cli_json_int(&j, "inexact", r->inexact[k]);
            cli_json_bool(&j, "repaired", r->repaired_seed[k]);
            cli_json_number(&j, "repair_tries", (double)r->repair_tries[k]);
            cli_json_number(&j, "repair_seconds", r->repair_seconds[k]);
            cli_json_string(&j, "first_inexact", r->inexact[k] ? r->first_inexact[k] : NULL);
            cli_json_close(&j, '}');
        }
        cli_json_close(&j, ']');
        cli_json_close(&j, '}');
    }
    cli_json_close(&j, ']');
    cli_json_close(&j, '}');
    int rc = cli_json_write(&j, o->json, "--json");
    cli_json_free(&j);
    return rc;
}

static int write_csv(const sweep_options *o, const sweep_result *results, int count)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out) return err_set(DLCA_ERR_NOMEM, "out of memory for --csv");
    fputs("preset,seed,exact_step,final_soft,final_hard,best_hard,repaired\n", out);
    for (int i = 0; i < count; i++)
        for (int k = 0; k < results[i].runs; k++) {
            const sweep_result *r = &results[i];
            char step[32] = "";
            if (r->exact_step[k]) snprintf(step, sizeof step, "%llu", (unsigned long long)r->exact_step[k]);
            fprintf(out, "%s,%lld,%s,%.9g,%.9g,%.9g,%d\n", r->preset, o->first_seed + k, step, r->final_soft[k],
                    r->final_hard[k], r->best_hard[k], r->repaired_seed[k]);
        }
    int rc = fclose(out) == 0 ? atomic_file_write(o->csv, text, size) : err_set(DLCA_ERR_NOMEM, "out of memory for --csv");
    free(text);
    return rc;
}

static int sweep(const sweep_options *o)
{
    vk_context vk;
    ca_backend backend = CA_BACKEND_CPU;
    ca_options run;
    sweep_result results[SWEEP_MAX_PRESETS];
    preset_inputs inputs[SWEEP_MAX_PRESETS];
    memset(&vk, 0, sizeof vk), memset(results, 0, sizeof results), memset(inputs, 0, sizeof inputs);
    int rc = cli_run_options(&run, o->device), done = 0;
    run.gpu.cache = o->cache;
    /* the outputs are checked before hours of training, not after */
    if (!rc && o->csv) rc = atomic_file_check(o->csv, "--csv");
    if (!rc && o->json && strcmp(o->json, "-") != 0) rc = atomic_file_check(o->json, "--json");
    if (!rc && o->keep_exact) rc = check_keep_dir(o, o->keep_exact, "--keep-exact");
    if (!rc && o->keep_members) rc = check_keep_dir(o, o->keep_members, "--keep-members");
    if (!rc) rc = prepare_presets(o, run.assets, inputs);
    run.models = (int)o->seed_count; /* a preset's seeds train as one population */
    if (!rc) rc = ca_backend_open(&run, &vk, &backend);
    /* the first preset always runs (it stops at once when interrupted, and reports what it has) */
    for (int i = 0; !rc && i < o->preset_count && (i == 0 || !*o->interrupt); i++, done++)
        rc = sweep_preset(o, o->presets[i], &inputs[i], &run, backend, &vk, &results[i]);
    char device[256];
    snprintf(device, sizeof device, "%s", rc ? "" : ca_backend_name(backend, &vk));
    if (!rc) print_summary(results, done, o->first_seed);
    if (!rc && o->markdown) print_markdown(o, results, done, device);
    if (!rc && o->json) rc = write_json(o, results, done, device);
    if (!rc && o->csv) rc = write_csv(o, results, done);
    for (int i = 0; i < SWEEP_MAX_PRESETS; i++) result_free(&results[i]), ca_target_image_free(&inputs[i].target), free(inputs[i].image);
    if (backend == CA_BACKEND_GPU) vk_context_free(&vk);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    sweep_options options;
    int help = 0;
    if (parse_options(argc, argv, &options, &help)) {
        ca_config_assignments_free(&options.flags);
        return cli_fail("sweep", 1);
    }
    if (help) return ca_config_assignments_free(&options.flags), print_help(), 0;
    options.interrupt = cli_stop_on_signals();
    int rc = sweep(&options);
    ca_config_assignments_free(&options.flags);
    return rc ? cli_fail("sweep", 0) : 0;
}
