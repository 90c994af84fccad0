/* view_input.c: what keys and the mouse do. Scripts call the same functions. */
#include "view_app.h"

#include "error.h"

#include <math.h>
#include <stdlib.h>

/* Speeds + and - step through, in steps per second. */
static const double speeds[] = {1, 2, 5, 10, 15, 30, 60, 120, 250, 500, 1000, 2000, 5000};
enum { SPEED_COUNT = sizeof speeds / sizeof speeds[0] };

view_key view_key_from_sdl(SDL_Keycode sym, int repeat)
{
    switch (sym) {
    case SDLK_RIGHT: return VIEW_KEY_STEP; /* held down, it keeps stepping */
    case SDLK_PLUS:
    case SDLK_EQUALS: /* + without shift on most layouts */
    case SDLK_KP_PLUS: return VIEW_KEY_FASTER;
    case SDLK_MINUS:
    case SDLK_KP_MINUS: return VIEW_KEY_SLOWER;
    default: break;
    }
    if (repeat) return VIEW_KEY_NONE; /* toggles must not flicker while a key is held */
    switch (sym) {
    case SDLK_SPACE: return VIEW_KEY_PLAY;
    case SDLK_r: return VIEW_KEY_RESET;
    case SDLK_h: return VIEW_KEY_HARD;
    case SDLK_a: return VIEW_KEY_ASYNC;
    case SDLK_c: return VIEW_KEY_CHANNELS;
    case SDLK_s: return VIEW_KEY_SAVE;
    case SDLK_g: return VIEW_KEY_RECORD;
    case SDLK_QUESTION:
    case SDLK_SLASH: /* ? is shift-/ on most layouts */
    case SDLK_F1: return VIEW_KEY_HELP;
    case SDLK_q:
    case SDLK_ESCAPE: return VIEW_KEY_QUIT;
    default: return VIEW_KEY_NONE;
    }
}

static double next_speed(double speed, int faster)
{
    if (faster) {
        for (int i = 0; i < SPEED_COUNT; i++)
            if (speeds[i] > speed) return speeds[i];
        return speeds[SPEED_COUNT - 1];
    }
    for (int i = SPEED_COUNT - 1; i >= 0; i--)
        if (speeds[i] < speed) return speeds[i];
    return speeds[0];
}

/* A switch the engine declined is news for the user, not the end of the session. */
static int declined_is_news(view_app *app, int status)
{
    if (status != VIEW_SIM_DECLINED) return status;
    view_notice(app, err_message());
    return DLCA_OK;
}

int view_press(view_app *app, view_key key)
{
    view_sim *sim = &app->sim;
    switch (key) {
    case VIEW_KEY_PLAY: app->playing = !app->playing, app->step_debt = 0.0; return DLCA_OK;
    case VIEW_KEY_STEP: app->playing = 0; return view_step(app);
    case VIEW_KEY_RESET: return view_sim_reset(sim) ? DLCA_ERR : view_record_frame(app);
    case VIEW_KEY_HARD: return declined_is_news(app, view_sim_set_hard(sim, !sim->hard));
    case VIEW_KEY_ASYNC:
        return declined_is_news(app, view_sim_set_fire_rate(sim, sim->fire_rate < 1.0 ? 1.0 : app->async_rate));
    case VIEW_KEY_CHANNELS:
        app->kind = view_kind_next(app->kind, app->model.config.channels);
        return view_image_update(app);
    case VIEW_KEY_FASTER:
    case VIEW_KEY_SLOWER: app->speed = next_speed(app->speed, key == VIEW_KEY_FASTER); return DLCA_OK;
    case VIEW_KEY_SAVE: return view_screenshot(app, NULL);
    case VIEW_KEY_RECORD: return app->recording ? view_record_stop(app) : view_record_start(app, NULL);
    case VIEW_KEY_HELP: app->help = !app->help; return DLCA_OK;
    case VIEW_KEY_QUIT: app->quit = 1; return DLCA_OK;
    default: return DLCA_OK;
    }
}

/* The cell under window pixel (px, py); 0 when there is none (outside, or between tiles). */
static int cell_at(view_app *app, int px, int py, int *x, int *y)
{
    SDL_Rect dest;
    double scale;
    view_layout(app, &dest, &scale);
    int ix = (int)floor((px - dest.x) / scale), iy = (int)floor((py - dest.y) / scale);
    return view_image_cell(app->kind, app->model.config.channels, app->sim.shape, ix, iy, x, y);
}

void view_cell_centre(view_app *app, int x, int y, int *px, int *py)
{
    SDL_Rect dest;
    double scale;
    view_layout(app, &dest, &scale);
    *px = dest.x + (int)floor((x + 0.5) * scale);
    *py = dest.y + (int)floor((y + 0.5) * scale);
}

/* A brush x brush square around cell (x, y). */
static void brush(view_app *app, int x, int y)
{
    int side = app->opt.brush, half = (side - 1) / 2;
    view_sim_paint(&app->sim, x - half, y - half, side, side, app->drag_value);
}

/* Every cell on the line from the last painted cell to (x, y): fast drags leave no gaps. */
static void brush_line(view_app *app, int x, int y)
{
    int dx = x - app->drag_x, dy = y - app->drag_y;
    int n = abs(dx) > abs(dy) ? abs(dx) : abs(dy);
    for (int i = 1; i <= n; i++)
        brush(app, app->drag_x + (int)lround((double)dx * i / n), app->drag_y + (int)lround((double)dy * i / n));
    app->drag_x = x, app->drag_y = y;
}

void view_mouse_down(view_app *app, int value, int px, int py)
{
    int x, y;
    app->drag_value = value;
    app->drag_x = app->drag_y = -1;
    if (!cell_at(app, px, py, &x, &y)) return;
    brush(app, x, y);
    app->drag_x = x, app->drag_y = y;
}

void view_mouse_move(view_app *app, int px, int py)
{
    int x, y;
    if (app->drag_value < 0 || !cell_at(app, px, py, &x, &y)) return;
    if (app->drag_x < 0) { /* the press was off the grid: start here */
        brush(app, x, y);
        app->drag_x = x, app->drag_y = y;
        return;
    }
    brush_line(app, x, y);
}

void view_mouse_up(view_app *app) { app->drag_value = -1; }
