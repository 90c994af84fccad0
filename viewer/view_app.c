/* view_app.c: dlca-view's set-up, main loop and script runner. The loop polls events (with a
 * window), runs due script commands, advances the grid by speed x elapsed time while playing
 * and draws; --headless has no window and no events, so only the script moves it. */
#include "view_app.h"

#include "cli_env.h"

#include "ca_file.h"
#include "ca_run_defaults.h"
#include "error.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { VIEW_AUTO_SIDE = 700, VIEW_MAX_AUTO_SCALE = 32 };

/* Longest the loop steps per frame, so a slow engine still leaves the window responsive. */
static const double step_budget = 1.0 / 30.0;
/* How long a notice stays on screen. */
static const double notice_seconds = 5.0;
/* The rate key a switches to when the model was trained synchronously (the paper's). */
static const double default_async_rate = 0.6;

double view_now(void) { return (double)SDL_GetPerformanceCounter() / (double)SDL_GetPerformanceFrequency(); }

void view_notice(view_app *app, const char *text)
{
    snprintf(app->notice, sizeof app->notice, "%s", text);
    app->notice_until = view_now() + notice_seconds;
    fprintf(stderr, "dlca-view: %s\n", text);
}

static int load_model(view_app *app)
{
    if (app->opt.model) snprintf(app->model_path, sizeof app->model_path, "%s", app->opt.model);
    else view_default_model(app->model_path, sizeof app->model_path);
    if (ca_file_load(app->model_path, &app->model, NULL, &app->picture)) {
        if (app->opt.model) return DLCA_ERR;
        char why[1024];
        snprintf(why, sizeof why, "%s", err_message());
        return err_set(DLCA_ERR, "%s (no MODEL given: give one, or set DLCA_ASSETS)", why);
    }
    app->model_loaded = 1;
    return DLCA_OK;
}

static int load_script(view_app *app)
{
    if (app->opt.script_path) return view_script_load(&app->script, app->opt.script_path);
    if (app->opt.keys) return view_script_parse(&app->script, app->opt.keys, "--keys");
    return DLCA_OK;
}

/* The grid, fire rate and view as `dlca run` would choose them, then the simulation. */
static int start_sim(view_app *app)
{
    const ca_config *c = &app->model.config;
    const view_options *o = &app->opt;
    int height, width;
    ca_run_default_grid(c, &height, &width); /* dlca run's default: 64x64 for gol, whose 3x3 shows nothing */
    if (o->has_grid) height = o->height, width = o->width;
    double rate = o->has_rate ? o->fire_rate : c->fire_rate;
    app->async_rate = rate < 1.0 ? rate : default_async_rate;
    app->kind = o->has_view ? (view_kind)o->view : c->loss_channels == 3 ? VIEW_RGB : VIEW_GREY;
    if (app->kind == VIEW_RGB && c->channels < 3)
        return err_set(DLCA_ERR, "--view rgb needs 3 channels, the model has %d", c->channels);
    if (view_sim_init(&app->sim, &app->model, app->backend, &app->vk, height, width, o->hard, rate,
                      (uint64_t)o->seed))
        return DLCA_ERR;
    app->sim_ready = 1;
    if (view_target_init(&app->target, &app->model, app->picture.bits ? &app->picture : NULL, app->sim.shape))
        return DLCA_ERR;
    return view_image_update(app);
}

/* Without a display SDL falls back to its off-screen driver and the viewer would run on,
 * invisible, for ever: that is refused with what to do instead. SDL is offered only the drivers
 * whose display variable is set, so that it does not probe the others (libwayland prints about
 * XDG_RUNTIME_DIR on stderr when it finds none); SDL_VIDEODRIVER, when set, is SDL's choice. */
static int no_display(const char *why)
{
    return err_set(DLCA_ERR, "no display (DISPLAY/WAYLAND_DISPLAY unset or unusable%s%s): use --headless with --keys or "
                   "--script, or dlca run MODEL --out F.gif", why[0] ? ": " : "", why);
}

static int init_video(void)
{
#if defined(_WIN32) || defined(__APPLE__)
    if (SDL_Init(SDL_INIT_VIDEO) != 0) return err_set(DLCA_ERR, "cannot open a window: %s", SDL_GetError());
    return DLCA_OK;
#else
    cli_display d;
    cli_env_display(&d);
    if (!d.x11 && !d.wayland && !d.sdl_driver) return no_display("");
    if (!d.sdl_driver) SDL_SetHint(SDL_HINT_VIDEODRIVER, d.wayland && d.x11 ? "wayland,x11" : d.wayland ? "wayland" : "x11");
    if (SDL_Init(SDL_INIT_VIDEO) != 0) return no_display(SDL_GetError());
    const char *driver = SDL_GetCurrentVideoDriver();
    if (!driver || strcmp(driver, "offscreen") == 0 || strcmp(driver, "dummy") == 0)
        return no_display(driver ? driver : "no video driver");
    return DLCA_OK;
#endif
}

static int open_window(view_app *app, int width, int height)
{
    if (init_video()) return DLCA_ERR;
    app->window = SDL_CreateWindow("dlca-view", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, width, height,
                                   SDL_WINDOW_RESIZABLE);
    if (!app->window) return err_set(DLCA_ERR, "cannot open a window: %s", SDL_GetError());
    SDL_SetWindowMinimumSize(app->window, 64, 64);
    app->renderer = SDL_CreateRenderer(app->window, -1, SDL_RENDERER_PRESENTVSYNC);
    if (!app->renderer) app->renderer = SDL_CreateRenderer(app->window, -1, SDL_RENDERER_SOFTWARE);
    if (!app->renderer) return err_set(DLCA_ERR, "cannot draw in the window: %s", SDL_GetError());
    return DLCA_OK;
}

/* A window (or off-screen target) showing the picture at --scale, or about VIEW_AUTO_SIDE. */
static int open_output(view_app *app)
{
    int side = app->image_width > app->image_height ? app->image_width : app->image_height;
    int scale = app->opt.scale ? app->opt.scale : VIEW_AUTO_SIDE / side;
    if (scale < 1) scale = 1;
    if (!app->opt.scale && scale > VIEW_MAX_AUTO_SCALE) scale = VIEW_MAX_AUTO_SCALE;
    int width = app->image_width * scale, height = app->image_height * scale;
    SDL_SetHint(SDL_HINT_RENDER_SCALE_QUALITY, "nearest"); /* cells stay sharp squares */
    return app->opt.headless ? view_offscreen(app, width, height) : open_window(app, width, height);
}

int view_app_init(view_app *app, const view_options *options)
{
    memset(app, 0, sizeof *app);
    app->opt = *options;
    app->drag_value = -1;
    app->speed = options->speed;
    if (load_script(app) || load_model(app)) return DLCA_ERR;
    ca_options run;
    if (cli_run_options(&run, options->device) || ca_backend_open(&run, &app->vk, &app->backend)) return DLCA_ERR;
    if (start_sim(app) || open_output(app)) return DLCA_ERR;
    app->playing = app->script.count == 0; /* a script decides when to play */
    if (options->record && view_record_start(app, options->record)) return DLCA_ERR;
    return DLCA_OK;
}

void view_app_free(view_app *app)
{
    view_record_abort(app); /* a recording still open here ended in an error: not saved */
    view_script_free(&app->script);
    if (app->texture) SDL_DestroyTexture(app->texture);
    if (app->renderer) SDL_DestroyRenderer(app->renderer);
    if (app->window) SDL_DestroyWindow(app->window);
    if (app->surface) SDL_FreeSurface(app->surface);
    SDL_Quit();
    if (app->sim_ready) view_sim_free(&app->sim);
    if (app->backend == CA_BACKEND_GPU) vk_context_free(&app->vk);
    if (app->model_loaded) ca_model_free(&app->model);
    view_target_free(&app->target);
    ca_target_image_free(&app->picture);
    free(app->image);
    memset(app, 0, sizeof *app);
}

/* A drag as the mouse makes it: press on the first cell, move to the last, release. */
static void script_drag(view_app *app, const int *a, int value)
{
    int px, py;
    view_cell_centre(app, a[0], a[1], &px, &py);
    view_mouse_down(app, value, px, py);
    view_cell_centre(app, a[2], a[3], &px, &py);
    view_mouse_move(app, px, py);
    view_mouse_up(app);
}

static int run_command(view_app *app, const view_cmd *c)
{
    switch (c->kind) {
    case VIEW_CMD_STEP:
        for (int i = 0; i < c->args[0]; i++)
            if (view_press(app, VIEW_KEY_STEP)) return DLCA_ERR;
        return DLCA_OK;
    case VIEW_CMD_DRAG: script_drag(app, c->args, 0); return DLCA_OK;
    case VIEW_CMD_PAINT: script_drag(app, c->args, 1); return DLCA_OK;
    case VIEW_CMD_KEY: return view_press(app, (view_key)c->args[0]);
    case VIEW_CMD_SCREENSHOT: return view_screenshot(app, c->path);
    case VIEW_CMD_CAPTURE: return view_capture(app, c->path);
    case VIEW_CMD_RESIZE:
        if (!app->window) return view_offscreen(app, c->args[0], c->args[1]);
        SDL_SetWindowSize(app->window, c->args[0], c->args[1]);
        return DLCA_OK;
    case VIEW_CMD_WAIT: app->wait_until = view_now() + c->seconds; return DLCA_OK;
    case VIEW_CMD_QUIT: app->quit = 1; return DLCA_OK;
    case VIEW_CMD_STATUS: {
        char line[256];
        view_status_line(app, line, sizeof line);
        printf("%s\n", line);
        fflush(stdout);
        return DLCA_OK;
    }
    default: return err_set(DLCA_ERR, "unknown script command %d", (int)c->kind);
    }
}

/* Runs the commands that are due: all of them off screen, one per frame in a window so that
 * each shows. A wait holds the rest back. */
static int run_script(view_app *app)
{
    int budget = app->window ? 1 : INT_MAX;
    while (budget-- > 0 && !app->quit && app->next_command < app->script.count && view_now() >= app->wait_until)
        if (run_command(app, &app->script.cmds[app->next_command++])) return DLCA_ERR;
    return DLCA_OK;
}

static int script_done(const view_app *app)
{
    return app->next_command >= app->script.count && view_now() >= app->wait_until;
}

/* Steps due at `speed` over `elapsed` seconds, within the per-frame budget. */
static int advance(view_app *app, double elapsed)
{
    double start = view_now();
    app->step_debt += app->speed * elapsed;
    while (app->step_debt >= 1.0) {
        if (view_step(app)) return DLCA_ERR;
        app->step_debt -= 1.0;
        if (view_now() - start > step_budget) {
            app->step_debt = fmin(app->step_debt, 1.0); /* drop what cannot be caught up */
            break;
        }
    }
    return DLCA_OK;
}

static int poll_events(view_app *app)
{
    SDL_Event e;
    int rc = DLCA_OK;
    while (!rc && SDL_PollEvent(&e)) {
        if (e.type == SDL_QUIT) app->quit = 1;
        else if (e.type == SDL_KEYDOWN) rc = view_press(app, view_key_from_sdl(e.key.keysym.sym, e.key.repeat));
        else if (e.type == SDL_MOUSEBUTTONDOWN && (e.button.button == SDL_BUTTON_LEFT || e.button.button == SDL_BUTTON_RIGHT))
            view_mouse_down(app, e.button.button == SDL_BUTTON_RIGHT, e.button.x, e.button.y);
        else if (e.type == SDL_MOUSEMOTION) view_mouse_move(app, e.motion.x, e.motion.y);
        else if (e.type == SDL_MOUSEBUTTONUP) view_mouse_up(app);
    }
    return rc;
}

static int present(view_app *app)
{
    if (view_draw(app)) return DLCA_ERR;
    SDL_RenderPresent(app->renderer);
    SDL_RendererInfo info;
    if (SDL_GetRendererInfo(app->renderer, &info) != 0 || !(info.flags & SDL_RENDERER_PRESENTVSYNC))
        SDL_Delay(15); /* no vsync to pace the loop */
    return DLCA_OK;
}

int view_app_run(view_app *app)
{
    double last = view_now();
    int rc = DLCA_OK;
    while (!rc && !app->quit) {
        if (app->window) rc = poll_events(app);
        if (!rc) rc = run_script(app);
        double now = view_now();
        if (!rc && app->playing) rc = advance(app, now - last);
        last = now;
        if (!rc && app->window) rc = present(app);
        else if (!rc && !script_done(app)) SDL_Delay(1); /* off screen, waiting */
        if (app->opt.headless && script_done(app)) app->quit = 1;
    }
    if (!rc) rc = view_record_stop(app);
    return rc;
}
