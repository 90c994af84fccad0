/* main.c: the dlca command line. Only this file (and the viewer) prints errors and exits. */
#include "ca_config.h"
#include "error.h"
#include "vk_context.h"

#include <stdio.h>
#include <string.h>

static void print_usage(FILE *out)
{
    fputs("usage: dlca [--help] [--version] <command> [options]\n"
          "\n"
          "Differentiable logic-gate cellular automata: train a circuit of 2-input logic gates\n"
          "so that a grid of cells grows a pattern or learns a rule, on Vulkan or the CPU.\n"
          "\n"
          "commands:\n"
          "  devices     list the Vulkan devices (index, type, memory); pick one with --device N\n"
          "              or the environment variable DLCA_DEVICE\n"
          "  presets     list the built-in experiments and their sizes\n"
          "\n"
          "environment:\n"
          "  DLCA_DEVICE=N     Vulkan device index (see 'dlca devices')\n"
          "  DLCA_VALIDATE=1   enable the Vulkan validation layers\n",
          out);
}

static int command_devices(void)
{
    if (vk_list_devices(stdout) != DLCA_OK) {
        fprintf(stderr, "dlca devices: %s\n", err_message());
        return 1;
    }
    return 0;
}

static int command_presets(void)
{
    printf("%-20s %-9s %-9s %4s %3s %6s %5s %6s %6s\n", "preset", "grid", "boundary", "C", "K", "layers", "T",
           "batch", "steps");
    for (int i = 0; ca_preset_names[i]; i++) {
        ca_config c;
        ca_config_preset(&c, ca_preset_names[i]);
        char grid[24];
        snprintf(grid, sizeof grid, "%dx%d", c.height, c.width);
        printf("%-20s %-9s %-9s %4d %3d %6d %5d %6d %6d\n", c.preset, grid, ca_boundary_name(c.boundary), c.channels,
               c.kernels, c.perception_depth + c.update_depth, c.steps, c.batch, c.train_steps);
    }
    return 0;
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
    if (strcmp(argv[1], "devices") == 0) return command_devices();
    if (strcmp(argv[1], "presets") == 0) return command_presets();
    fprintf(stderr, "dlca: unknown command '%s' (try 'dlca --help')\n", argv[1]);
    return 2;
}
