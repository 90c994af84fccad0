/* cmd_eval.c: `dlca eval MODEL` (how good a model is) and `dlca info MODEL` (what it is). */
#include "ca_backend.h"
#include "ca_config_text.h"
#include "ca_eval.h"
#include "ca_file.h"
#include "ca_memory.h"
#include "ca_target.h"
#include "cli.h"
#include "cli_env.h"
#include "commands.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MODEL plus an optional --device and --max-memory; `max_memory` NULL (info) allows neither. */
static int parse_model_args(int argc, char **argv, const char *command, double *max_memory, const char **model,
                            const char **device, int *help)
{
    const char *value;
    *model = NULL, *device = NULL;
    if (max_memory) *max_memory = CA_MEMORY_DEFAULT_GIB;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return *help = 1, DLCA_OK;
        if (max_memory && strcmp(argv[i], "--device") == 0) {
            if (cli_value(argc, argv, &i, device)) return DLCA_ERR;
        } else if (max_memory && strcmp(argv[i], "--max-memory") == 0) {
            if (cli_value(argc, argv, &i, &value) || cli_double(argv[i - 1], value, CA_MEMORY_MIN_GIB, CA_MEMORY_MAX_GIB, max_memory)) return DLCA_ERR;
        } else if (strncmp(argv[i], "--", 2) == 0) {
            return err_set(DLCA_ERR, "unknown option '%s' (see dlca %s --help)", argv[i], command);
        } else if (*model) {
            return err_set(DLCA_ERR, "unexpected argument '%s' (one MODEL only)", argv[i]);
        } else {
            *model = argv[i];
        }
    }
    if (!*model && !*help) return err_set(DLCA_ERR, "no MODEL given (see dlca %s --help)", command);
    return DLCA_OK;
}

static void print_gates(const ca_model *m)
{
    int histogram[16];
    size_t active;
    ca_eval_gate_histogram(m, histogram, &active);
    printf("gates: %zu, active %zu (not counting pass-through A/B)\nops:", m->gate_count, active);
    for (int op = 0; op < GATE_OP_COUNT; op++)
        if (histogram[op]) printf(" %s %d", gate_op_names[op], histogram[op]);
    printf("\n");
}

/* Prints the losses, gates and checks; *failed gets the number of checks that failed. */
static int evaluate(const ca_eval_context *x, int *failed_checks)
{
    double soft, hard;
    if (ca_eval_losses(x, &soft, &hard)) return DLCA_ERR;
    printf("loss on its task (round 0): soft %.6g, hard %.6g\n", soft, hard);
    if (x->model->config.target == CA_TARGET_LIFE) {
        double accuracy;
        if (ca_eval_life_accuracy(x, &accuracy)) return DLCA_ERR;
        printf("Game of Life: %.2f%% of the 512 neighbourhoods right (%d wrong)\n", 100.0 * accuracy,
               (int)(512.0 * (1.0 - accuracy) + 0.5));
    }
    print_gates(x->model);
    ca_check checks[CA_EVAL_MAX_CHECKS];
    int count, failed = 0;
    if (ca_eval_checks(x, checks, &count)) return DLCA_ERR;
    for (int i = 0; i < count; i++) {
        printf("%s  %s (error %.4g)\n", checks[i].passed ? "pass" : "FAIL", checks[i].name, checks[i].error);
        failed += !checks[i].passed;
    }
    printf("%d of %d checks passed\n", count - failed, count);
    *failed_checks = failed;
    if (failed) return err_set(DLCA_ERR, "%d of %d checks failed", failed, count);
    return DLCA_OK;
}

int cmd_eval(int argc, char **argv)
{
    const char *path, *device;
    double max_memory;
    int help = 0;
    if (parse_model_args(argc, argv, "eval", &max_memory, &path, &device, &help)) return cli_fail("eval", 1);
    if (help) {
        printf("usage: dlca eval MODEL [--device D] [--max-memory GiB]\n\n"
               "Soft and hard loss on the model's task, Game of Life accuracy over all 512\n"
               "neighbourhoods, active gates and a histogram of ops, and the preset's\n"
               "generalisation checks (bigger grid, damage, async inference), each pass/fail.\n"
               "Exits 0 when every check passes, 1 when one fails (or on an error).\n\n"
               "  --device D         auto, cpu, or a Vulkan device (default: $DLCA_DEVICE, else auto)\n"
               "  --max-memory GiB   refuse, before starting, an evaluation estimated to need more host\n"
               "                     memory than this (default %g)\n", CA_MEMORY_DEFAULT_GIB);
        return 0;
    }
    ca_model model;
    ca_target_image target;
    vk_context vk;
    ca_backend backend = CA_BACKEND_CPU;
    if (ca_file_load(path, &model, NULL, &target)) return cli_fail("eval", 0);
    double *image = target.bits ? ca_target_values(&target) : NULL;
    int rc = target.bits && !image ? err_set(DLCA_ERR_NOMEM, "out of memory") : DLCA_OK;
    ca_options run;
    if (!rc) rc = cli_run_options(&run, device);
    if (!rc) rc = ca_backend_open(&run, &vk, &backend);
    ca_eval_context context = {&model, backend, &vk, image};
    const ca_config *c = &model.config;
    if (!rc)
        rc = ca_memory_check(ca_eval_memory(&context), max_memory, "eval of %s (a batch of %d grid%s of %dx%d, %d channels)",
                             path, c->batch, c->batch == 1 ? "" : "s", c->height, c->width, c->channels);
    if (!rc) {
        char preset[4 * CA_NAME_LENGTH + 1];
        printf("%s: preset %s on %s\n", path, cli_printable(model.config.preset, preset, sizeof preset),
               ca_backend_name(backend, &vk));
        int failed = 0;
        rc = evaluate(&context, &failed);
    }
    if (backend == CA_BACKEND_GPU) vk_context_free(&vk);
    free(image);
    ca_target_image_free(&target);
    ca_model_free(&model);
    return rc ? cli_fail("eval", 0) : 0;
}

/* Perception gates of the model (each kernel's once), and how many the boolean circuit has,
 * where each kernel runs once for each channel: `dlca export` counts those. */
static size_t perception_gates(const ca_config *c)
{
    size_t per_kernel = 0;
    for (int l = 0; l < c->perception_depth; l++) per_kernel += (size_t)c->perception_widths[l];
    return per_kernel * (size_t)c->kernels;
}

int cmd_info(int argc, char **argv)
{
    const char *path, *device;
    int help = 0;
    if (parse_model_args(argc, argv, "info", NULL, &path, &device, &help)) return cli_fail("info", 1);
    if (help)
        return printf("usage: dlca info MODEL\n\n"
                      "The model's config as `key = value` lines, which dlca train --config reads back\n"
                      "('dlca info m.dlca > m.conf; dlca train --config m.conf' repeats the run), and\n"
                      "its gates, training state and target as '#' comments.\n"),
               0;
    ca_model m;
    ca_train_state state;
    ca_target_image target;
    if (ca_file_load(path, &m, &state, &target)) return cli_fail("info", 0);
    const ca_config *c = &m.config;
    char name[4 * 4096 + 1];
    size_t perception = perception_gates(c), circuit = m.gate_count + perception * (size_t)(c->channels - 1);
    printf("# %s: a dlca model (file version %d)\n", cli_printable(path, name, sizeof name), CA_FILE_VERSION);
    if (circuit == m.gate_count)
        printf("# gates: %zu (dlca export prunes them)\n", m.gate_count);
    else
        printf("# gates: %zu in the model, %zu in its boolean circuit before pruning: each of the %zu perception "
               "gates runs once for each of the %d channels (dlca export prunes them)\n",
               m.gate_count, circuit, perception, c->channels);
    if (state.moment1)
        printf("# trained: %llu of %d steps, %.1f s\n", (unsigned long long)state.step, c->train_steps, state.seconds);
    else
        printf("# trained: no training state (cannot be resumed)\n");
    if (target.bits) printf("# target: %d channel(s), %dx%d, stored in the model\n", target.channels, target.height, target.width);
    ca_config_print(c, stdout);
    ca_train_state_free(&state);
    ca_target_image_free(&target);
    ca_model_free(&m);
    return 0;
}
