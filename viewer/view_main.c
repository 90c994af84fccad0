/* view_main.c: dlca-view's entry point: options, the viewer, and the one place that reports an
 * error (one line on stderr, and a message box when there is a display to show it on). */
#include "view_app.h"

#include "cli_env.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>

static int have_display(void)
{
#if defined(_WIN32) || defined(__APPLE__)
    return 1;
#else
    cli_display d;
    cli_env_display(&d);
    return d.x11 || d.wayland;
#endif
}

static int fail(int status, int headless)
{
    fprintf(stderr, "dlca-view: %s\n", err_message());
    if (!headless && have_display())
        (void)SDL_ShowSimpleMessageBox(SDL_MESSAGEBOX_ERROR, "dlca-view", err_message(), NULL); /* best effort */
    return status;
}

int main(int argc, char **argv)
{
    view_options options;
    int help = 0;
    if (view_options_parse(argc, argv, &options, &help)) return fail(2, options.headless);
    if (help) return view_options_help(), 0;
    view_app app;
    int rc = view_app_init(&app, &options);
    if (!rc) rc = view_app_run(&app);
    if (rc) fail(1, options.headless);
    view_app_free(&app);
    return rc ? 1 : 0;
}
