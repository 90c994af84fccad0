/* cmd_repair.c: `dlca repair MODEL --out FILE`: a trained model's snapped circuit made exact by
 * changing single gates' ops (src/train/ca_repair.h), written only when it is. */
#include "commands.h"

#include "atomic_file.h"
#include "ca_fast_pool.h"
#include "ca_file.h"
#include "ca_repair.h"
#include "ca_target.h"
#include "cli.h"
#include "cli_stop.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_help(void)
{
    printf("usage: dlca repair MODEL --out FILE [--seconds S] [--tries N] [--rounds R] [--threads N]\n"
           "                   [--force]\n"
           "\n"
           "A run can end with its soft circuit right and its snapped circuit a cell or two wrong (a\n"
           "gate near a tie snapped to the wrong op). This tries changing one gate's op at a time,\n"
           "the ops nearest each gate's winner first, keeping every change that lowers the wrong\n"
           "cells on rounds neither training nor the exact check draws, until none is wrong; then\n"
           "the circuit must pass the exact check (dlca train --help: --check-every) and is written\n"
           "with each changed gate's logits raising its new op above the old one. Nothing is\n"
           "written when no exact circuit is found (exit 1). Where no single change lowers them\n"
           "(a minimum), the cells wrong there weigh more, just enough that the mildest change\n"
           "fixing some of them is kept, and the search goes on (docs/exact-circuits.md). A\n"
           "circuit right on the rounds that fails one of dlca eval's checks is searched again\n"
           "counting eval's wider grid too where the preset has one (the lizard's torus of twice\n"
           "its side, the checkerboard's 64x64 grid), else on more rounds (--rounds).\n"
           "Ctrl-C (or SIGTERM) ends the search where it is: it says where it got and writes\n"
           "nothing (exit 1).\n"
           "\n"
           "  --out FILE   the repaired model, written atomically (required; not MODEL itself); it\n"
           "               keeps the config and the target, not the training state\n"
           "  --force      replace an existing --out\n"
           "  --seconds S  search time limit (default 60)\n"
           "  --tries N    single-gate changes tried at most, 1..%lld (default: no bound but the\n"
           "               seconds); a search that its tries end walks the same way on any\n"
           "               machine and number of threads, so its result is reproducible\n"
           "  --rounds R   rounds searched at first where rounds differ, 1..%d (default %d;\n"
           "               while a circuit right on them fails the exact check, the fresh\n"
           "               rounds it gets wrong join them, at most doubling them: to %d, and\n"
           "               on to %d while their counted cell bits stay within %zu; one\n"
           "               rollout where every round is the same, as image and lizard)\n"
           "  --threads N  threads trying changes at once, 1..%d (default: the online cores); the\n"
           "               search and its result are the same on any number, only faster\n",
           CA_REPAIR_MAX_TRIES, CA_REPAIR_MAX_ROUNDS, CA_REPAIR_ROUNDS, CA_REPAIR_MAX_ROUNDS, CA_REPAIR_GROW_ROUNDS,
           CA_REPAIR_GROW_BITS, CA_REPAIR_MAX_THREADS);
}

typedef struct {
    const char *model, *out;
    double seconds;
    long long tries; /* 0: no bound */
    int rounds, threads, force;
} repair_options;

static int parse_options(int argc, char **argv, repair_options *o, int *help)
{
    memset(o, 0, sizeof *o);
    o->seconds = 60.0, o->rounds = CA_REPAIR_ROUNDS, o->threads = ca_fast_default_threads();
    if (o->threads > CA_REPAIR_MAX_THREADS) o->threads = CA_REPAIR_MAX_THREADS;
    for (int i = 1; i < argc; i++) {
        const char *value;
        long long number;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return *help = 1, DLCA_OK;
        if (strcmp(argv[i], "--force") == 0) {
            o->force = 1;
        } else if (strcmp(argv[i], "--out") == 0) {
            if (cli_value(argc, argv, &i, &o->out)) return DLCA_ERR;
        } else if (strcmp(argv[i], "--seconds") == 0) {
            if (cli_value(argc, argv, &i, &value) || cli_double("--seconds", value, 0.001, 86400.0, &o->seconds))
                return DLCA_ERR;
        } else if (strcmp(argv[i], "--tries") == 0) {
            if (cli_value(argc, argv, &i, &value) || cli_int("--tries", value, 1, CA_REPAIR_MAX_TRIES, &o->tries))
                return DLCA_ERR;
        } else if (strcmp(argv[i], "--rounds") == 0) {
            if (cli_value(argc, argv, &i, &value) || cli_int("--rounds", value, 1, CA_REPAIR_MAX_ROUNDS, &number))
                return DLCA_ERR;
            o->rounds = (int)number;
        } else if (strcmp(argv[i], "--threads") == 0) {
            if (cli_value(argc, argv, &i, &value) || cli_int("--threads", value, 1, CA_REPAIR_MAX_THREADS, &number))
                return DLCA_ERR;
            o->threads = (int)number;
        } else if (strncmp(argv[i], "-", 1) == 0 && argv[i][1] != '\0') {
            return err_set(DLCA_ERR, "unknown option '%s' (see dlca repair --help)", argv[i]);
        } else if (o->model) {
            return err_set(DLCA_ERR, "one model file, not '%s' and '%s'", o->model, argv[i]);
        } else {
            o->model = argv[i];
        }
    }
    if (!o->model) return err_set(DLCA_ERR, "no model file given (usage: dlca repair MODEL --out FILE)");
    if (!o->out) return err_set(DLCA_ERR, "--out is required");
    return DLCA_OK;
}

void cmd_repair_progress(void *user, size_t wrong, size_t tries, int changes, int minima, double seconds)
{
    (void)user;
    fprintf(stderr, "repair: %zu wrong cell bits, %d change%s kept, %d minim%s, %zu tries, %.1f s\n", wrong, changes,
            changes == 1 ? "" : "s", minima, minima == 1 ? "um" : "a", tries, seconds);
}

int cmd_repair(int argc, char **argv)
{
    repair_options o;
    int help = 0;
    if (parse_options(argc, argv, &o, &help)) return cli_fail("repair", 1);
    if (help) {
        print_help();
        return 0;
    }
    if (cli_output_not_model(o.out, "--out", o.model)) return cli_fail("repair", 0);
    if (!o.force && atomic_file_exists(o.out)) {
        err_set(DLCA_ERR, "--out %s exists: give --force to replace it", o.out);
        return cli_fail("repair", 0);
    }
    ca_model model;
    ca_target_image target;
    if (ca_file_load(o.model, &model, NULL, &target)) return cli_fail("repair", 0);
    double *image = target.bits ? ca_target_values(&target) : NULL;
    int rc = target.bits && !image ? err_set(DLCA_ERR_NOMEM, "out of memory for the target") : DLCA_OK;
    if (!rc && model.config.target == CA_TARGET_IMAGE && !image)
        rc = err_set(DLCA_ERR, "%s: holds no target picture, which the repair needs", o.model);
    /* Ctrl-C ends the search where it is, and says so */
    ca_repair_options options = {o.seconds, o.rounds, cmd_repair_progress, NULL, o.threads, cli_stop_on_signals(),
                                 NULL, 0, (size_t)o.tries};
    ca_repair_result result;
    if (!rc) rc = ca_repair(&model, image, &options, &result);
    if (!rc && result.exact) rc = ca_file_save(o.out, &model, NULL, target.bits ? &target : NULL);
    if (!rc && result.already_exact)
        printf("%s is already exact: wrote it unchanged to %s\n", o.model, o.out);
    else if (!rc && result.exact)
        printf("repaired %s: %zu wrong cell bits on the repair rounds -> 0 on %d round%s by changing %d gate%s (%zu "
               "tries, %.1f s); verified exact; wrote %s\n",
               o.model, result.wrong_before, result.rounds, result.rounds == 1 ? "" : "s", result.changes,
               result.changes == 1 ? "" : "s", result.tries, result.seconds, o.out);
    else if (!rc)
        printf("not repaired: %s (%.1f s); wrote nothing\n", result.why, result.seconds);
    free(image);
    ca_target_image_free(&target);
    ca_model_free(&model);
    if (rc) return cli_fail("repair", 0);
    return result.exact ? 0 : 1;
}
