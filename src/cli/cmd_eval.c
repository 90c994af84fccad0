/* cmd_eval.c: `dlca eval MODEL` (how good a model is) and `dlca info MODEL` (what it is). */
#include "atomic_file.h"
#include "ca_backend.h"
#include "ca_config_text.h"
#include "ca_eval.h"
#include "ca_file.h"
#include "ca_memory.h"
#include "ca_target.h"
#include "cli.h"
#include "cli_env.h"
#include "cli_json.h"
#include "commands.h"
#include "error.h"
#include "hard_circuit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MODEL plus an optional --device, --max-memory, --json and --persistence; `max_memory` NULL
 * (info) allows none of them. */
static int parse_model_args(int argc, char **argv, const char *command, double *max_memory, const char **model,
                            const char **device, const char **json, int *persistence, int *help)
{
    const char *value;
    *model = NULL, *device = NULL;
    if (json) *json = NULL;
    if (persistence) *persistence = 0;
    if (max_memory) *max_memory = CA_MEMORY_DEFAULT_GIB;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return *help = 1, DLCA_OK;
        if (max_memory && strcmp(argv[i], "--device") == 0) {
            if (cli_value(argc, argv, &i, device)) return DLCA_ERR;
        } else if (max_memory && persistence && strcmp(argv[i], "--persistence") == 0) {
            *persistence = 1;
        } else if (max_memory && json && strcmp(argv[i], "--json") == 0) {
            if (cli_value(argc, argv, &i, json)) return DLCA_ERR;
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

/* What eval found, for the text report and the JSON one alike. */
typedef struct {
    double soft, hard;
    int life; /* the Life accuracy was measured */
    double accuracy;
    int histogram[GATE_OP_COUNT];
    size_t active;
    hard_stats circuit;
    ca_check checks[CA_EVAL_MAX_CHECKS];
    int count, failed;
    int persists;        /* 'persists' ran: its shortfall was measured, and where the state repeats */
    double persists_bits; /* wrong bits summed over steps T..10T (ca_eval_persists_bits) */
    ca_eval_settle settle;
} eval_report;

static int measure(const ca_eval_context *x, int persistence, eval_report *r)
{
    memset(r, 0, sizeof *r);
    if (ca_eval_losses(x, &r->soft, &r->hard)) return DLCA_ERR;
    r->life = x->model->config.target == CA_TARGET_LIFE;
    if (r->life && ca_eval_life_accuracy(x, &r->accuracy)) return DLCA_ERR;
    ca_eval_gate_histogram(x->model, r->histogram, &r->active);
    hard_netlist net;
    if (hard_circuit_build(&net, x->model, &r->circuit)) return DLCA_ERR;
    hard_netlist_free(&net);
    if (ca_eval_checks(x, r->checks, &r->count)) return DLCA_ERR;
    int more = persistence ? (CA_EVAL_PERSISTS | CA_EVAL_REGROWS) & ~ca_eval_trained_persistence(&x->model->config) : 0;
    if (more && ca_eval_persistence(x, more, r->checks, &r->count)) return DLCA_ERR;
    for (int i = 0; i < r->count; i++) r->failed += !r->checks[i].passed;
    int trained = ca_eval_trained_persistence(&x->model->config) & CA_EVAL_PERSISTS;
    r->persists = (persistence || trained) && ca_eval_has_persistence(x);
    if (!r->persists) return DLCA_OK;
    return ca_eval_persists_bits(x, &r->persists_bits) ||
           ca_eval_settles(x, CA_EVAL_SETTLE_TIMES_T * x->model->config.steps, &r->settle);
}

static int life_wrong(double accuracy) { return (int)(512.0 * (1.0 - accuracy) + 0.5); }

static void print_report(const eval_report *r, const ca_model *m)
{
    printf("loss on its task (round 0): soft %.6g, hard %.6g\n", r->soft, r->hard);
    if (r->life)
        printf("Game of Life: %.2f%% of the 512 neighbourhoods right (%d wrong)\n", 100.0 * r->accuracy,
               life_wrong(r->accuracy));
    printf("gates: %zu, active %zu (not counting pass-through A/B)\nops:", m->gate_count, r->active);
    for (int op = 0; op < GATE_OP_COUNT; op++)
        if (r->histogram[op]) printf(" %s %d", gate_op_names[op], r->histogram[op]);
    printf("\ncircuit: %zu gates after pruning (%zu before)\n", r->circuit.after.total, r->circuit.before.total);
    for (int i = 0; i < r->count; i++)
        printf("%s  %s (error %.4g)\n", r->checks[i].passed ? "pass" : "FAIL", r->checks[i].name, r->checks[i].error);
    if (r->persists)
        printf("persists: %.0f wrong bits summed over steps %d to %d (what a repair counts)\n", r->persists_bits,
               m->config.steps, 10 * m->config.steps);
    const ca_eval_settle *s = &r->settle;
    if (r->persists && s->applies && !s->repeats)
        printf("settles: the whole state does not repeat within %d steps\n", s->most);
    else if (r->persists && s->repeats) {
        char how[96];
        if (s->period == 1)
            snprintf(how, sizeof how, "a fixed point of the whole state from step %d", s->from);
        else
            snprintf(how, sizeof how, "the whole state cycles with period %d from step %d", s->period, s->from);
        if (s->cycle_wrong == 0 && s->wrong_steps == 0)
            printf("settles: %s; the picture is right at every step from %d on: it holds for ever\n", how,
                   m->config.steps);
        else if (s->cycle_wrong == 0)
            printf("settles: %s; the picture is wrong at %d of steps %d to %d, then right at every step, for ever\n",
                   how, s->wrong_steps, m->config.steps, s->right_from - 1);
        else
            printf("settles: %s; the picture is wrong at %d of the cycle's %d steps: wrong for ever\n", how,
                   s->cycle_wrong, s->period);
    }
    printf("%d of %d checks passed\n", r->count - r->failed, r->count);
}

static int write_json(const char *path, const eval_report *r, const ca_model *m, const char *model_path,
                      const char *device)
{
    cli_json j;
    memset(&j, 0, sizeof j);
    cli_json_open(&j, NULL, '{');
    cli_json_string(&j, "model", model_path);
    cli_json_string(&j, "preset", m->config.preset);
    cli_json_string(&j, "device", device);
    cli_json_open(&j, "losses", '{');
    cli_json_number(&j, "soft", r->soft);
    cli_json_number(&j, "hard", r->hard);
    cli_json_close(&j, '}');
    if (r->life) {
        cli_json_open(&j, "life", '{');
        cli_json_number(&j, "accuracy", r->accuracy);
        cli_json_int(&j, "wrong", life_wrong(r->accuracy));
        cli_json_close(&j, '}');
    }
    cli_json_open(&j, "gates", '{');
    cli_json_int(&j, "total", (long long)m->gate_count);
    cli_json_int(&j, "active", (long long)r->active);
    cli_json_open(&j, "ops", '{');
    for (int op = 0; op < GATE_OP_COUNT; op++) cli_json_int(&j, gate_op_names[op], r->histogram[op]);
    cli_json_close(&j, '}');
    cli_json_int(&j, "circuit", (long long)r->circuit.before.total);
    cli_json_int(&j, "pruned", (long long)r->circuit.after.total);
    cli_json_close(&j, '}');
    cli_json_open(&j, "checks", '[');
    for (int i = 0; i < r->count; i++) {
        cli_json_open(&j, NULL, '{');
        cli_json_string(&j, "name", r->checks[i].name);
        cli_json_bool(&j, "passed", r->checks[i].passed);
        cli_json_number(&j, "error", r->checks[i].error);
        cli_json_close(&j, '}');
    }
    cli_json_close(&j, ']');
    if (r->persists) cli_json_number(&j, "persists_wrong_bits", r->persists_bits);
    if (r->persists && r->settle.applies) {
        cli_json_open(&j, "settles", '{');
        cli_json_bool(&j, "repeats", r->settle.repeats);
        cli_json_int(&j, "within", r->settle.most);
        if (r->settle.repeats) {
            cli_json_int(&j, "from", r->settle.from);
            cli_json_int(&j, "period", r->settle.period);
            cli_json_int(&j, "wrong_steps", r->settle.wrong_steps);
            cli_json_int(&j, "cycle_wrong_steps", r->settle.cycle_wrong);
            if (r->settle.cycle_wrong == 0) cli_json_int(&j, "right_from", r->settle.right_from);
        }
        cli_json_close(&j, '}');
    }
    cli_json_int(&j, "passed", r->count - r->failed);
    cli_json_int(&j, "failed", r->failed);
    cli_json_bool(&j, "pass", r->failed == 0);
    cli_json_close(&j, '}');
    int rc = cli_json_write(&j, path, "--json");
    cli_json_free(&j);
    return rc;
}

static void print_eval_help(void)
{
    printf("usage: dlca eval MODEL [--device D] [--max-memory GiB] [--json FILE] [--persistence]\n\n"
           "Soft and hard loss on the model's task, Game of Life accuracy over all 512\n"
           "neighbourhoods, active gates and a histogram of ops, the pruned circuit's size, and\n"
           "the preset's generalisation checks (bigger grid, damage, async inference), each\n"
           "pass/fail. Exits 0 when every check passes, 1 when one fails (or on an error).\n\n"
           "  --device D         auto, cpu, or a Vulkan device (default: $DLCA_DEVICE, else auto)\n"
           "  --persistence      two more checks, for every preset but gol: 'persists' (the hard\n"
           "                     circuit exact at every step from T to 10T on the training grid)\n"
           "                     and 'regrows' (the grid's top-left quarter erased at step 2T,\n"
           "                     exact again within 2T steps); a model trained with --pool or\n"
           "                     --window runs 'persists' anyway, with --damage 'regrows' too;\n"
           "                     where 'persists' runs, a line gives the wrong bits summed over\n"
           "                     steps T..10T (how far from passing, as a repair counts it), and\n"
           "                     for a synchronous rule another where its whole state first\n"
           "                     repeats (within 100T steps): from then it cycles, so the line\n"
           "                     says whether the picture holds for ever, not only to 10T\n"
           "  --max-memory GiB   refuse, before starting, an evaluation estimated to need more host\n"
           "                     memory than this (default %g)\n"
           "  --json FILE        also write the report as JSON for scripts (written atomically; '-'\n"
           "                     writes it to stdout instead of the text): model, preset, device,\n"
           "                     losses {soft, hard}, life {accuracy, wrong} (gol), gates {total,\n"
           "                     active, ops {AND: n, ...}, circuit, pruned}, checks [{name, passed,\n"
           "                     error}], persists_wrong_bits and settles {repeats, within, from,\n"
           "                     period, wrong_steps (from T on), cycle_wrong_steps, right_from}\n"
           "                     (where 'persists' ran), passed, failed, pass (true when every\n"
           "                     check passed);\n"
           "                     a NaN or infinite value is null\n", CA_MEMORY_DEFAULT_GIB);
}

int cmd_eval(int argc, char **argv)
{
    const char *path, *device, *json;
    double max_memory;
    int help = 0, persistence = 0;
    if (parse_model_args(argc, argv, "eval", &max_memory, &path, &device, &json, &persistence, &help))
        return cli_fail("eval", 1);
    if (help) return print_eval_help(), 0;
    if (json && strcmp(json, "-") != 0 && atomic_file_check(json, "--json")) return cli_fail("eval", 0);
    ca_model model;
    ca_target_image target;
    vk_context vk;
    ca_backend backend = CA_BACKEND_CPU;
    if (ca_file_load(path, &model, NULL, &target)) return cli_fail("eval", 0);
    if (json && strcmp(json, "-") != 0 && atomic_file_same(json, path)) {
        err_set(DLCA_ERR, "--json %s is the model %s itself: give another file", json, path);
        ca_target_image_free(&target), ca_model_free(&model);
        return cli_fail("eval", 0);
    }
    double *image = target.bits ? ca_target_values(&target) : NULL;
    int rc = target.bits && !image ? err_set(DLCA_ERR_NOMEM, "out of memory") : DLCA_OK;
    ca_options run;
    if (!rc) rc = cli_run_options(&run, device);
    if (!rc) rc = ca_backend_open(&run, &vk, &backend);
    ca_eval_context context = {&model, backend, &vk, image, 0};
    const ca_config *c = &model.config;
    if (!rc)
        rc = ca_memory_check(ca_eval_memory(&context), max_memory, "eval of %s (a batch of %d grid%s of %dx%d, %d channels)",
                             path, c->batch, c->batch == 1 ? "" : "s", c->height, c->width, c->channels);
    eval_report report;
    int text = !json || strcmp(json, "-") != 0;
    if (!rc) {
        char preset[4 * CA_NAME_LENGTH + 1];
        if (text) printf("%s: preset %s on %s\n", path, cli_printable(model.config.preset, preset, sizeof preset),
                         ca_backend_name(backend, &vk));
        rc = measure(&context, persistence, &report);
    }
    if (!rc && text) print_report(&report, &model);
    if (!rc && json) rc = write_json(json, &report, &model, path, ca_backend_name(backend, &vk));
    if (!rc && report.failed) rc = err_set(DLCA_ERR, "%d of %d checks failed", report.failed, report.count);
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
    if (parse_model_args(argc, argv, "info", NULL, &path, &device, NULL, NULL, &help)) return cli_fail("info", 1);
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
