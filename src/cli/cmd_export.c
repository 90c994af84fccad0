/* cmd_export.c: `dlca export MODEL --format c|verilog|dot --out FILE`: the model's hard circuit,
 * pruned, as C, Verilog or Graphviz (src/hard_export.h), written atomically. */
#include "commands.h"

#include "ca_file.h"
#include "cli.h"
#include "error.h"
#include "hard_export.h"

#include <stdio.h>
#include <string.h>

static void print_help(void)
{
    printf("usage: dlca export MODEL --format c|verilog|dot --out FILE [--stats]\n"
           "\n"
           "Snaps every gate of a trained model to its most likely op, prunes the circuit (constants,\n"
           "pass-through gates, duplicates, unread gates; the result computes exactly the same bits)\n"
           "and writes it as:\n"
           "  c        a standalone C99 file with dlca_step(), which advances a bit-packed grid one\n"
           "           step (64 cells per uint64_t; boundary and async fire mask included); its header\n"
           "           comment documents the signature and the grid layout\n"
           "  verilog  a combinational module dlca_cell: the 3x3 neighbourhood's C*9 bits in, the\n"
           "           cell's C new bits out\n"
           "  dot      Graphviz of the circuit; render it with tools/render_circuit.sh (dot -Tpng)\n"
           "\n"
           "  --format F   c, verilog or dot (required)\n"
           "  --out FILE   output file, written atomically (required); not the MODEL itself, nor a\n"
           "               directory or device; a symbolic link is written through to its target\n"
           "  --stats      print the gate counts by op before and after pruning\n");
}

typedef struct {
    const char *model, *out;
    hard_export_format format;
    int has_format, stats;
} export_options;

static int parse_options(int argc, char **argv, export_options *o, int *help)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *value;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return *help = 1, DLCA_OK;
        if (strcmp(argv[i], "--stats") == 0) {
            o->stats = 1;
        } else if (strcmp(argv[i], "--format") == 0) {
            if (cli_value(argc, argv, &i, &value) || hard_export_format_parse(value, &o->format)) return DLCA_ERR;
            o->has_format = 1;
        } else if (strcmp(argv[i], "--out") == 0) {
            if (cli_value(argc, argv, &i, &o->out)) return DLCA_ERR;
        } else if (strncmp(argv[i], "-", 1) == 0 && argv[i][1] != '\0') {
            return err_set(DLCA_ERR, "unknown option '%s' (see dlca export --help)", argv[i]);
        } else if (o->model) {
            return err_set(DLCA_ERR, "one model file, not '%s' and '%s'", o->model, argv[i]);
        } else {
            o->model = argv[i];
        }
    }
    if (!o->model) return err_set(DLCA_ERR, "no model file given (usage: dlca export MODEL --format F --out FILE)");
    if (!o->has_format) return err_set(DLCA_ERR, "--format is required: c, verilog or dot");
    if (!o->out) return err_set(DLCA_ERR, "--out is required");
    return DLCA_OK;
}

int cmd_export(int argc, char **argv)
{
    export_options o;
    int help = 0;
    if (parse_options(argc, argv, &o, &help)) return cli_fail("export", 1);
    if (help) {
        print_help();
        return 0;
    }
    /* Before any work, and by identity (./m.dlca, links): the export must not replace its model. */
    if (cli_output_not_model(o.out, "--out", o.model)) return cli_fail("export", 0);
    ca_model model;
    if (ca_file_load(o.model, &model, NULL, NULL)) return cli_fail("export", 0);
    hard_netlist net;
    hard_stats stats;
    int rc = hard_circuit_build(&net, &model, &stats);
    if (!rc) {
        hard_export_info info = {&model.config, o.model, &stats};
        rc = hard_export_file(o.out, &net, o.format, &info);
        hard_netlist_free(&net);
    }
    if (!rc && o.stats) hard_stats_print(&stats, stdout);
    /* `dlca info` counts the model's gates, where a perception gate serves every channel; the
     * circuit has it once a channel. Both counts are given, so that they never seem to disagree. */
    const ca_config *c = &model.config;
    if (!rc && stats.before.total == stats.model_gates)
        printf("wrote %s: %zu gates after pruning, from the model's %zu\n", o.out, stats.after.total, stats.model_gates);
    else if (!rc)
        printf("wrote %s: %zu gates after pruning, from %zu in the circuit: the model's %zu gates, its perception "
               "gates once for each of the %d channels\n",
               o.out, stats.after.total, stats.before.total, stats.model_gates, c->channels);
    ca_model_free(&model);
    return rc ? cli_fail("export", 0) : 0;
}
