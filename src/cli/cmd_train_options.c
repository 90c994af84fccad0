/* cmd_train_options.c: `dlca train`'s flags, help and config (cmd_train_options.h). */
#include "cmd_train_options.h"

#include "ca_memory.h"
#include "ca_repair.h"
#include "cli.h"
#include "cli_env.h"
#include "cmd_population.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cmd_train_help(void)
{
    ca_config config;
    ca_config_preset(&config, "gol");
    cmd_default_run run = cmd_population_default_run(&config);
    ca_config_preset(&config, "lizard");
    cmd_default_run lizard = cmd_population_default_run(&config);
    ca_config_preset(&config, "image-persist");
    cmd_default_run persist = cmd_population_default_run(&config);
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
           "  --target PNG       target picture for lizard and the images (default: the one in\n"
           "                     assets/), at most the grid's size: a smaller one is centred on\n"
           "                     off cells (--grid 24x24: a 20x20 picture with a border of 2)\n"
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
           "                     step, so measuring every step costs ~20%%. Where every round is\n"
           "                     the same rollout (image, lizard), a circuit whose gates' ops are\n"
           "                     those last measured has that hard loss without a rollout. When\n"
           "                     the hard loss is 0 the circuit is checked for exactness: Life on\n"
           "                     all 512 boards (gol), else 16 rounds training never draws and\n"
           "                     dlca eval's checks, on the CPU\n"
           "  --stop-exact       stop at the first step whose circuit is verified exact and write\n"
           "                     that circuit (the state before that step's update) (default)\n"
           "  --no-stop-exact    train to the budget. Either way the run keeps the best circuit it\n"
           "                     measured (exact first, then with --pool or --window one measured\n"
           "                     on a persistence round, then fewest wrong cells, then fewest bits\n"
           "                     wrong over steps T..10T for a refused one with none, then lowest\n"
           "                     soft loss) and writes it at the end when the final circuit is worse\n"
           "                     (its state: a resumed run goes on from that circuit's step)\n"
           "  --keep-final       write the final circuit at the budget even when a measured one\n"
           "                     was better (the file still carries the best)\n"
           "  --population N     train N models, member i with seed + i (member 0 is the run of\n"
           "                     --seed), side by side: each a submission a step, over the GPU's\n"
           "                     queues (a large rollout's hard loss measured on a host thread);\n"
           "                     stops when one is verified exact (unless --no-stop-exact). --out\n"
           "                     gets the best member (exact first, then fewest wrong cells, then\n"
           "                     soft loss), --log its log; a table of all members at the end. No\n"
           "                     checkpoints: --resume does not take a population. Default on a\n"
           "                     GPU: %d, with --tries %d (the lizard: --tries %d; a single seed\n"
           "                     is exact in 3 to 16 runs of 16: README); 1 on the CPU and with\n"
           "                     --resume;\n"
           "                     --population 1 is the single run, with its checkpoints (--every)\n"
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
           "                     is exact; on a GPU while the next populations train, which a\n"
           "                     repaired member stops, one search at a time: a population that\n"
           "                     ends while one runs is not searched, but the last); a circuit\n"
           "                     made exact is written without training state. Default on a GPU\n"
           "                     without --resume: %g (the lizard: %g, image-persist: %g);\n"
           "                     elsewhere 0, no search.\n"
           "                     Ctrl-C ends a search too\n"
           "  --repair-threads N threads each search tries changes on (default: the cores, divided\n"
           "                     among a population's inexact members; the lizard's: every core;\n"
           "                     N each runs cores / N searches side by side); the search is the\n"
           "                     same on any number\n"
           "  --repair-tries N   each search's single-gate changes tried at most (default: no\n"
           "                     bound but --repair's seconds); a search its tries end, with\n"
           "                     seconds to spare, is the same on any machine\n"
           "  --repair-members M a population searches its M best-ranked inexact members only; 0:\n"
           "                     all (default 0; the lizard's without --repair-threads: 1, its\n"
           "                     best member alone)\n"
           "  --resume FILE      continue a saved run; --steps sets the new total\n"
           "  --from FILE        start a new run from FILE's circuit: its wiring and gate logits\n"
           "                     (not its init logit, optimizer state or step count), its config\n"
           "                     under the flags and its target picture unless --target or\n"
           "                     --grid is given; the flags may change training (steps, rates,\n"
           "                     seed, pool, window, damage, ...), not the network (channels,\n"
           "                     kernels, perception, update, wiring). E.g. a grown picture's\n"
           "                     exact circuit trained on to hold it: --from M --pool 64 --window\n"
           "                     15 --window-loss every. One run: no population, no default search\n"
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
           run.population, run.tries, lizard.tries, run.repair, lizard.repair, persist.repair);
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
static int parse_config_flag(cmd_train_options *o, const char *flag, const char *v)
{
    ca_config scratch;
    const ca_config_key *key = ca_config_key_find(flag + 2);
    ca_config_preset(&scratch, "gol");
    if (key->parse(&scratch, v, flag) || ca_config_assign(&o->flags, flag + 2, v, flag)) return DLCA_ERR;
    if (strcmp(key->key, "steps") == 0) o->has_steps = 1, o->steps = scratch.train_steps;
    return DLCA_OK;
}

/* One flag with its value; returns DLCA_ERR with the message set. */
static int parse_flag(cmd_train_options *o, const char *flag, const char *v)
{
    if (strcmp(flag, "--target") == 0) o->target = v;
    else if (strcmp(flag, "--device") == 0) o->device = v;
    else if (strcmp(flag, "--out") == 0) o->out = v;
    else if (strcmp(flag, "--log") == 0) o->log = v;
    else if (strcmp(flag, "--resume") == 0) o->resume = v;
    else if (strcmp(flag, "--from") == 0) o->from = v;
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
    else if (strcmp(flag, "--repair-tries") == 0) return cli_int(flag, v, 1, CA_REPAIR_MAX_TRIES, &o->repair_tries);
    else if (strcmp(flag, "--repair-members") == 0) return cli_int(flag, v, 0, CMD_POPULATION_MAX, &o->repair_members);
    else if (ca_config_key_find(flag + 2)) return parse_config_flag(o, flag, v);
    else return err_set(DLCA_ERR, "unknown option '%s' (see dlca train --help)", flag);
    return DLCA_OK;
}

int cmd_train_parse(int argc, char **argv, cmd_train_options *o, int *help)
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
                                 "--repair, --repair-threads, --repair-tries, --force and --max-memory may be "
                                 "given with it");
    if (o->resume && o->population > 1)
        return err_set(DLCA_ERR, "--population: a population keeps no checkpoint, so it cannot --resume; train it again "
                                 "(the same seeds give the same members)");
    if (o->resume && o->tries > 1)
        return err_set(DLCA_ERR, "--tries: tries are populations, which keep no checkpoint, so they cannot --resume");
    if (o->from && o->resume)
        return err_set(DLCA_ERR, "--from starts a new run from a model's circuit and --resume continues a saved run: "
                                 "give one");
    if (o->from && (o->population > 1 || o->tries > 1))
        return err_set(DLCA_ERR, "%s: --from trains the one circuit it starts from, and a population's members "
                                 "each draw their own wiring", o->population > 1 ? "--population" : "--tries");
    if (o->tries > 1 && !o->stop_exact)
        return err_set(DLCA_ERR, "--tries: a further try follows only a try without an exact circuit, and "
                                 "--no-stop-exact trains past one");
    return DLCA_OK;
}

int cmd_train_config(ca_config *config, const cmd_train_options *o, const ca_config *base, const char *base_name)
{
    ca_config_assignments all;
    memset(&all, 0, sizeof all);
    int rc = DLCA_OK;
    for (int i = 0; !rc && base && i < ca_config_key_count; i++) {
        char value[CA_CONFIG_VALUE_MAX], origin[CA_CONFIG_ORIGIN_MAX];
        ca_config_keys[i].print(base, value, sizeof value);
        snprintf(origin, sizeof origin, "%s: %s", base_name, ca_config_keys[i].key);
        rc = ca_config_assign(&all, ca_config_keys[i].key, value, origin);
    }
    if (!rc && o->config) rc = ca_config_load_text(&all, o->config);
    for (int i = 0; !rc && i < o->flags.count; i++)
        rc = ca_config_assign(&all, o->flags.items[i].key->key, o->flags.items[i].value, o->flags.items[i].origin);
    if (!rc) rc = ca_config_build(config, &all, "gol");
    ca_config_assignments_free(&all);
    return rc;
}
