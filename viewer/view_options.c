/* view_options.c: dlca-view's flags and --help (which also documents the script language). */
#include "view_options.h"

#include "cli.h"
#include "cli_env.h"
#include "error.h"
#include "view_image.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void view_options_help(void)
{
    printf("usage: dlca-view [MODEL] [options]\n"
           "\n"
           "Shows a trained model's cellular automaton live. Without MODEL it opens the shipped\n"
           "checkerboard model (assets/models/checkerboard.dlca, or under $DLCA_ASSETS/models).\n"
           "The frames are those of 'dlca run' for the same model, grid, seed, steps and damage.\n"
           "\n"
           "  --grid HxW         grid size (default: the training grid; 64x64 for gol)\n"
           "  --scale N          pixels per cell at start (default: a window about 700 pixels wide)\n"
           "  --hard | --soft    the boolean circuit, bit-packed on the CPU (default), or the\n"
           "                     relaxed circuit on the engine chosen by --device\n"
           "  --async RATE       fire rate in (0, 1]; 1 = synchronous (default: as trained)\n"
           "  --seed N           start state and fire masks (default 1)\n"
           "  --device D         soft mode's engine: auto, cpu, or a Vulkan device (default: $DLCA_DEVICE,\n"
           "                     else auto)\n"
           "  --view V           grey (channel 0), rgb (channels 0..2) or mosaic (every channel)\n"
           "  --speed N          steps per second (default 15)\n"
           "  --brush N          mouse brush side in cells (default 3)\n"
           "  --screenshot-dir D where key s saves dlca-view-NNNN.png and key g dlca-view-NNNN.gif\n"
           "                     (default: here)\n"
           "  --record F.gif     record from the start: a frame a step, labelled with its step, at\n"
           "                     the shown cell size, until key g or the end (dlca run --out F.gif\n"
           "                     writes the same frames)\n"
           "  --script FILE      run the commands in FILE (language below), starting paused;\n"
           "                     a regular file of at most 1 MiB\n"
           "  --keys TEXT        the same with the commands given inline\n"
           "  --headless         no window (needs no display): draw off screen, run the script,\n"
           "                     quit at its end. Without it and without a display (DISPLAY or\n"
           "                     WAYLAND_DISPLAY unset or unusable) dlca-view says so and exits 1\n"
           "\n"
           "keys: space pause/play, right one step, r reset, h hard/soft, a async on/off,\n"
           "      c channels (grey, rgb, mosaic), + - speed, s screenshot, g start/stop recording a\n"
           "      GIF, ? help, q esc quit\n"
           "mouse: left-drag erases cells (damage), right-drag sets them\n"
           "\n"
           "script: commands separated by ';' or new lines, '#' comments; cells, not pixels:\n"
           "  step [N]             N steps (default 1)\n"
           "  drag X0,Y0-X1,Y1     left-drag from cell (X0,Y0) to (X1,Y1): erase along the way\n"
           "  paint X0,Y0-X1,Y1    right-drag: set the cells along the way\n"
           "  key NAME             press space, right, r, h, a, c, g, +, -, s, ?, q or esc\n"
           "  screenshot [PATH]    the grid view as a PNG at the shown cell size (as key s)\n"
           "  capture PATH         the window as shown, overlays included\n"
           "  resize WxH           resize the window (pixels)\n"
           "  wait SECONDS         run in real time (steps only when playing: key space)\n"
           "  quit                 exit\n"
           "  status               print the status line on stdout: the step, (T) at the step\n"
           "                       the model was trained for, the target: exact or N wrong\n"
           "A drag with brush B paints B x B squares centred on the cells of the line, so\n"
           "'step 20; drag 4,8-12,8' with --brush 3 is 'dlca run --damage 3,7,11,3@20-20'.\n"
           "example: dlca-view m.dlca --headless --keys \"step 20; drag 4,8-12,8; step 40; screenshot a.png\"\n");
}

const char *view_default_model(char *path, size_t size)
{
    ca_options run;
    const char *dir = cli_env_read(&run) == DLCA_OK && run.assets ? run.assets : DLCA_ASSET_DIR;
    snprintf(path, size, "%s/models/checkerboard.dlca", dir);
    return path;
}

static int parse_view(const char *flag, const char *v, view_options *o)
{
    for (int k = 0; k < VIEW_KIND_COUNT; k++)
        if (strcmp(v, view_kind_name((view_kind)k)) == 0) return o->has_view = 1, o->view = k, DLCA_OK;
    return err_set(DLCA_ERR, "%s: '%s' is not grey, rgb or mosaic", flag, v);
}

static int parse_small_int(const char *flag, const char *v, long long max, int *out)
{
    long long value;
    if (cli_int(flag, v, 1, max, &value)) return DLCA_ERR;
    *out = (int)value;
    return DLCA_OK;
}

static int parse_flag(view_options *o, const char *flag, const char *v)
{
    if (strcmp(flag, "--device") == 0) o->device = v;
    else if (strcmp(flag, "--script") == 0) o->script_path = v;
    else if (strcmp(flag, "--keys") == 0) o->keys = v;
    else if (strcmp(flag, "--screenshot-dir") == 0) o->screenshot_dir = v;
    else if (strcmp(flag, "--record") == 0) o->record = v;
    else if (strcmp(flag, "--grid") == 0) return o->has_grid = 1, cli_grid(flag, v, 4096, &o->height, &o->width);
    else if (strcmp(flag, "--scale") == 0) return parse_small_int(flag, v, 64, &o->scale);
    else if (strcmp(flag, "--brush") == 0) return parse_small_int(flag, v, 64, &o->brush);
    else if (strcmp(flag, "--seed") == 0) return cli_int(flag, v, 0, INT64_MAX, &o->seed);
    else if (strcmp(flag, "--async") == 0) return o->has_rate = 1, cli_double(flag, v, 1e-6, 1.0, &o->fire_rate);
    else if (strcmp(flag, "--speed") == 0) return cli_double(flag, v, 0.1, 100000.0, &o->speed);
    else if (strcmp(flag, "--view") == 0) return parse_view(flag, v, o);
    else return err_set(DLCA_ERR, "unknown option '%s' (see dlca-view --help)", flag);
    return DLCA_OK;
}

/* Flags that take no value; 0 when `arg` is none of them. */
static int parse_switch(view_options *o, const char *arg)
{
    if (strcmp(arg, "--hard") == 0) return o->hard = 1;
    if (strcmp(arg, "--soft") == 0) return o->hard = 0, 1;
    if (strcmp(arg, "--headless") == 0) return o->headless = 1;
    return 0;
}

int view_options_parse(int argc, char **argv, view_options *o, int *help)
{
    memset(o, 0, sizeof *o);
    o->device = NULL, o->hard = 1, o->seed = 1, o->speed = 15.0, o->brush = 3;
    for (int i = 1; i < argc; i++) {
        const char *value;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return *help = 1, DLCA_OK;
        if (parse_switch(o, argv[i])) continue;
        if (strncmp(argv[i], "--", 2) != 0) {
            if (o->model) return err_set(DLCA_ERR, "unexpected argument '%s' (one MODEL only)", argv[i]);
            o->model = argv[i];
            continue;
        }
        if (cli_value(argc, argv, &i, &value) || parse_flag(o, argv[i - 1], value)) return DLCA_ERR;
    }
    if (o->script_path && o->keys) return err_set(DLCA_ERR, "--script and --keys: give one of them");
    return DLCA_OK;
}
