/* cli_env.h: the environment variables dlca reads, all in one place: the commands and the viewer
 * call cli_env_read once and hand the options down; nothing below src/cli reads the environment.
 *
 *   DLCA_DEVICE=D             auto, cpu, a Vulkan device index, type or part of its name
 *   DLCA_VALIDATE=1           Vulkan validation layers; a run that sees a message fails
 *   DLCA_ROBUST=1             keep the driver's bounds checks on buffer accesses
 *   DLCA_PIPELINE_STATS=1     print what the driver reports of each compiled kernel
 *   DLCA_PIPELINE_CACHE=DIR|off  the persistent pipeline cache's folder, or none (default
 *                             $XDG_CACHE_HOME/dlca, else $HOME/.cache/dlca: XDG_CACHE_HOME, HOME)
 *   DLCA_TIMEOUT=S            a GPU submission running longer than S seconds is a hang (default 120)
 *   DLCA_THREADS=N            the fast CPU engine's threads (default: the online cores)
 *   DLCA_CPU_REFERENCE=1      train on the double reference engine (slow; tests)
 *   DLCA_CHECK_STAGES=1       check each GPU training stage against the CPU engine (slow; debugging)
 *   DLCA_ASSETS=DIR           where the shipped targets and models are
 *   DLCA_CC=CC, TMPDIR=DIR    the C compiler and temporary folder of `dlca bench --hard`
 *   DISPLAY, WAYLAND_DISPLAY, SDL_VIDEODRIVER   whether dlca-view has a display to open a window on
 *   GPU path (ca_gpu_plan.h), each unset = automatic:
 *   DLCA_FUSED=0|1            per-layer or fused kernels
 *   DLCA_PERSISTENT=0|1|step  persistent kernels off, on, or one dispatch a CA step
 *   DLCA_TILE=N, DLCA_TILE_BACKWARD=N   fused cells per workgroup (1..64)
 *   DLCA_FUSED_SLOTS=N        fused backward's workgroups at most
 *   DLCA_PER_THREAD=N         per-layer backward's cells per lane (1..64)
 *   DLCA_BLOCKS_PER_BUFFER=N  per-layer step blocks per buffer at most
 *   DLCA_CACHE=full|checkpoint  per-layer activations (--cache overrides it) */
#ifndef DLCA_CLI_ENV_H
#define DLCA_CLI_ENV_H

#include "ca_options.h"

/* Everything the environment sets, with the rest zero (automatic). The strings point into the
 * environment. A malformed value fails with a message naming the variable. */
int cli_env_read(ca_options *options);

/* cli_env_read, then the command's --device when it was given (NULL: not given, DLCA_DEVICE or
 * auto decides). */
int cli_run_options(ca_options *options, const char *device_flag);

/* The C compiler and temporary folder for `dlca bench --hard` (DLCA_CC, TMPDIR; NULL: unset). */
void cli_env_compiler(const char **cc, const char **tmpdir);

/* What the viewer's window would open on (each NULL when unset or empty): an X11 display
 * (DISPLAY), a Wayland one (WAYLAND_DISPLAY), and the SDL video driver the user chose
 * (SDL_VIDEODRIVER), which SDL reads itself. */
typedef struct {
    const char *x11, *wayland, *sdl_driver;
} cli_display;

void cli_env_display(cli_display *display);

#endif
