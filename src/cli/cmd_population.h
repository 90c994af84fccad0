/* cmd_population.h: `dlca train --population N` (ca_population.h) and what `dlca sweep` shares
 * with it: the memory check, the progress lines, a member's file names and files. */
#ifndef DLCA_CMD_POPULATION_H
#define DLCA_CMD_POPULATION_H

#include "ca_file.h"
#include "ca_population.h"

#include <signal.h>

/* Members at most; populations (--tries) at most, and seeds in all. */
enum { CMD_POPULATION_MAX = 4096, CMD_TRIES_MAX = 1024, CMD_POPULATION_SEEDS_MAX = 1 << 16 };

/* What `dlca train` on a GPU does where --population, --tries, --repair and --repair-threads are
 * not given (README, "The default run"): populations of `population` seeds in turn, up to
 * `tries`, until one member is verified exact; after a population with none, the repair search
 * (ca_repair.h) for `repair` seconds a member, on `repair_threads` threads each (0: the cores
 * divided among the inexact members, side by side), of the `repair_members` best-ranked inexact
 * members (0: all). */
typedef struct {
    int population, tries;
    double repair;
    int repair_threads, repair_members;
} cmd_default_run;

/* The default run of `config`'s preset: 2 seeds at a time, up to 16, and 5 s searches; the
 * lizard, whose near misses need 10-35 s of 16 threads, searches 50 s on every core, its
 * best-ranked member alone, and tries up to 32 seeds. */
cmd_default_run cmd_population_default_run(const ca_config *config);

/* What `dlca train` hands a population: the config (seed = member 0's), its picture, where the
 * files go (checked and locked by dlca train), and the run's flags. */
typedef struct {
    const ca_config *config;
    const double *image;
    const ca_target_image *target; /* written into the model files, or NULL */
    ca_backend backend;
    vk_context *vk;
    const ca_options *options;
    const char *out, *log, *plot, *keep_members;
    int count;
    int tries; /* populations in turn, the next N seeds each, until one has an exact member */
    long long every;
    int check_every, stop_exact, keep_final, force;
    double repair;     /* seconds of dlca repair's search per inexact member after a try; 0: none */
    int repair_threads; /* threads a search (0: the cores divided among the inexact members) */
    int repair_members; /* the best-ranked inexact members searched (0: all) */
    size_t repair_tries; /* each search's tries at most (0: no bound but the seconds) */
    double max_memory; /* GiB */
    volatile sig_atomic_t *interrupt;
} cmd_population_args;

/* Trains the population (and, while none of its members is verified exact, up to tries - 1 more
 * of the next seeds) and writes --out (the best member of all), its log and plot, and with
 * keep_members every member's model and log. With `repair`, a try without an exact member is
 * searched before the next is used; on a GPU the search runs while the next try trains, and a
 * repaired member stops that training (the next try is then dropped, as if never trained). */
int cmd_population_train(const cmd_population_args *args);

/* Refuses, before anything is allocated, `count` members of `config` that would need more host
 * memory than `max_memory` GiB (ca_memory.h), naming the population. */
int cmd_population_memory(const ca_config *config, int count, ca_backend backend, const vk_context *vk,
                          const ca_options *options, double max_memory);

/* The progress callback of ca_population_run: one line on stderr a call (context: a
 * cmd_population_progress). */
typedef struct {
    const char *label; /* e.g. the preset */
} cmd_population_progress;

void cmd_population_show(void *context, const ca_population *population, uint64_t step, double seconds);

/* ca_population_repair on every core (`seconds` a member, on `search_threads` threads each, 0:
 * the cores divided among the inexact members; with `first`, until one is repaired; the `most`
 * best-ranked inexact members, 0: all; `max_tries` each, 0: no bound; `interrupt`, may be NULL,
 * ends the searches), a line on
 * stderr for each member searched. *repaired counts the members made exact. */
int cmd_population_repair(ca_population *population, double seconds, int search_threads, int first, int most,
                          size_t max_tries, volatile sig_atomic_t *interrupt, int *repaired);

/* "<dir>/<preset>-seed<seed><suffix>" (malloc'ed; NULL when out of memory). */
char *cmd_population_member_path(const char *dir, const char *preset, uint64_t seed, const char *suffix);

/* A member's rows as a log CSV (and its plot beside it), atomically. */
int cmd_population_write_log(const ca_member *member, const char *path);

/* Makes `dir` when it is missing; refuses anything but a writable directory, naming `flag`. */
int cmd_population_dir(const char *dir, const char *flag);

#endif
