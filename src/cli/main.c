/* main.c: the dlca command line: dispatches to the subcommands in src/cmd_*.c. Only the
 * commands (and the viewer) print errors and choose exit codes. */
#include "ca_config.h"
#include "cli.h"
#include "commands.h"
#include "error.h"
#include "vk_context.h"

#include <stdio.h>
#include <string.h>

static int cmd_devices(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (vk_list_devices(stdout) != DLCA_OK) return cli_fail("devices", 0);
    return 0;
}

static int cmd_presets(int argc, char **argv)
{
    (void)argc, (void)argv;
    printf("%-20s %-9s %-9s %4s %3s %6s %5s %6s %6s  %s\n", "preset", "grid", "boundary", "C", "K", "layers", "T",
           "batch", "steps", "persistence");
    for (int i = 0; ca_preset_names[i]; i++) {
        ca_config c;
        ca_config_preset(&c, ca_preset_names[i]);
        char grid[24], persistence[64] = "-";
        snprintf(grid, sizeof grid, "%dx%d", c.height, c.width);
        if (c.pool || c.window)
            snprintf(persistence, sizeof persistence, "pool %d, window %d", c.pool, c.window);
        printf("%-20s %-9s %-9s %4d %3d %6d %5d %6d %6d  %s\n", c.preset, grid, ca_boundary_name(c.boundary),
               c.channels, c.kernels, c.perception_depth + c.update_depth, c.steps, c.batch, c.train_steps,
               persistence);
    }
    return 0;
}

static const cli_command commands[] = {
    {"train", "train a preset (or resume a run) on the GPU or the CPU", cmd_train},
    {"run", "run a trained model and write its frames: an animated GIF, a PNG strip or PNGs", cmd_run},
    {"eval", "losses, Game of Life accuracy, gate counts and generalisation checks", cmd_eval},
    {"info", "a model file's config (as dlca train --config reads it) and training state", cmd_info},
    {"runs", "the models in a folder: preset, steps done, last losses", cmd_runs},
    {"sweep", "train seeds of presets to exact circuits: how many, how soon, at what cost", cmd_sweep},
    {"export", "write a model's pruned hard circuit as C, Verilog or Graphviz", cmd_export},
    {"repair", "make a nearly exact circuit exact by changing single gates' ops", cmd_repair},
    {"bench", "time training steps (GPU timestamps, gate evals/s) or the hard engine", cmd_bench},
    {"devices", "list the Vulkan devices; pick one with --device N or DLCA_DEVICE", cmd_devices},
    {"presets", "list the built-in experiments and their sizes", cmd_presets},
};

static void print_usage(FILE *out)
{
    fputs("usage: dlca [--help] [--version] <command> [options]\n"
          "\n"
          "Differentiable logic-gate cellular automata: train a circuit of 2-input logic gates\n"
          "so that a grid of cells grows a pattern or learns a rule, on Vulkan or the CPU.\n"
          "\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\n'dlca <command> --help' describes each command's options.\n"
          "\n"
          "environment:\n"
          "  DLCA_DEVICE=D     the device when --device is not given: auto, cpu, an index or part of\n"
          "                    a name (see 'dlca devices')\n"
          "  DLCA_VALIDATE=1   enable the Vulkan validation layers\n"
          "  DLCA_ASSETS=DIR   where the shipped targets and models are (default: the source tree's assets/)\n"
          "  DLCA_PIPELINE_CACHE=DIR|off\n"
          "                    where compiled GPU kernels are kept (default: $XDG_CACHE_HOME/dlca, else\n"
          "                    $HOME/.cache/dlca); off keeps none\n"
          "  DLCA_QUEUES=N     GPU queues to open (default: one a model trained side by side, up to 4)\n",
          out);
}

/* With DLCA_VALIDATE=1 a validation message is a bug in dlca: the run fails even if it finished,
 * so tests and CI cannot miss it among the progress lines. */
static int validation_verdict(const char *command, int status)
{
    int messages = vk_validation_message_count();
    if (messages == 0) return status;
    fprintf(stderr, "dlca %s: %d Vulkan validation message%s (DLCA_VALIDATE=1): failing the run\n", command, messages,
            messages == 1 ? "" : "s");
    return status ? status : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("dlca %s\n", DLCA_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return validation_verdict(commands[i].name, commands[i].run(argc - 1, argv + 1));
    fprintf(stderr, "dlca: unknown command '%s' (try 'dlca --help')\n", argv[1]);
    return 2;
}
