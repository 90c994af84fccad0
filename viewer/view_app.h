/* view_app.h: dlca-view's state and the parts that share it: the loop and the script
 * (view_app.c), keys and mouse (view_input.c), drawing and pictures (view_draw.c). A script
 * drives the same handlers as the keyboard and mouse, so a test exercises what a user does. */
#ifndef DLCA_VIEW_APP_H
#define DLCA_VIEW_APP_H

#include "ca_backend.h"
#include "image_gif.h"
#include "view_image.h"
#include "view_options.h"
#include "view_script.h"
#include "view_sim.h"
#include "view_target.h"

#include <SDL.h>

typedef struct {
    view_options opt;
    char model_path[4096];
    ca_model model;
    int model_loaded;
    vk_context vk;
    ca_backend backend;
    view_sim sim;
    int sim_ready;
    ca_target_image picture; /* the model file's target picture (bits NULL: none) */
    view_target target;      /* what the grid should show from step T on (bits NULL: nothing here) */
    long target_wrong;       /* wrong bits of the grid of version target_version (-1: no target) */
    uint64_t target_version;
    int target_known;
    /* what is shown */
    view_kind kind;
    unsigned char *image; /* [image_height][image_width][3], one pixel per cell */
    int image_width, image_height;
    /* SDL: a window, or off screen a surface with a software renderer (--headless) */
    SDL_Window *window;
    SDL_Surface *surface;
    SDL_Renderer *renderer;
    SDL_Texture *texture;
    int texture_width, texture_height;
    uint64_t drawn_version; /* the sim's version and view the texture shows */
    view_kind drawn_kind;
    char title[512];
    char notice[512];    /* a passing message (a refused switch) shown for a few seconds */
    double notice_until;
    /* interaction */
    int playing, help, quit;
    double speed;      /* steps per second */
    double async_rate; /* the fire rate key a switches to */
    double step_debt;  /* steps due but not yet run */
    int drag_value;    /* -1: no drag; 0 erasing, 1 setting */
    int drag_x, drag_y;
    int shot;          /* next screenshot number to try */
    int movie;         /* next recording number to try */
    /* a GIF being recorded (view_record.c): one frame a step, at a scale fixed at its start */
    image_gif *recording;
    char record_path[4096];
    view_kind record_kind;
    int record_scale, record_width, record_height; /* frame size, label band included */
    unsigned char *record_rgb;
    /* the script */
    view_script script;
    int next_command;
    double wait_until; /* seconds (view_now) until which the script waits */
} view_app;

/* Loads the model, opens the engines and the window (or the off-screen target). */
int view_app_init(view_app *app, const view_options *options);

/* Runs until quit; returns the first error. */
int view_app_run(view_app *app);

void view_app_free(view_app *app);

/* Seconds on a monotonic clock. */
double view_now(void);

/* Shows `text` for a few seconds and prints it on stderr: news, not an error. */
void view_notice(view_app *app, const char *text);

/* ---- view_input.c ---- */

/* A key as a user presses it. */
int view_press(view_app *app, view_key key);

/* The SDL key `sym` as a view_key (VIEW_KEY_NONE for others). */
view_key view_key_from_sdl(SDL_Keycode sym, int repeat);

/* Mouse in window pixels: button down (value 0 erases, 1 sets), motion, release. */
void view_mouse_down(view_app *app, int value, int px, int py);
void view_mouse_move(view_app *app, int px, int py);
void view_mouse_up(view_app *app);

/* Window pixel at the centre of cell (x, y) (of the first tile of a mosaic). */
void view_cell_centre(view_app *app, int x, int y, int *px, int *py);

/* ---- view_draw.c ---- */

/* Where the picture goes in the output: dest, and window pixels per picture pixel. */
void view_layout(view_app *app, SDL_Rect *dest, double *scale);

/* Re-renders the picture of the grid and draws everything (not presented). */
int view_draw(view_app *app);

/* The status line: "step 15 (T)  exact  15/s  hard sync  rgb  paused  REC  ? help": "(T)" at the
 * step the model was trained for, and against its target on this grid (where it has one) the
 * wrong bits of the loss channels, or "exact". */
void view_status_line(view_app *app, char *text, size_t size);

/* The grid view at the shown cell size; path NULL: the next free dlca-view-NNNN.png. */
int view_screenshot(view_app *app, const char *path);

/* The output as drawn, overlays included. */
int view_capture(view_app *app, const char *path);

/* The picture size for app->kind; reallocates the picture when it changed. */
int view_image_update(view_app *app);

/* (Re)creates the off-screen target at width x height (--headless). */
int view_offscreen(view_app *app, int width, int height);

/* The next DIR/dlca-view-NNNN.EXT that does not exist (DIR: --screenshot-dir, else "."); *counter
 * is the number to try first and is left at the one returned. */
int view_next_path(view_app *app, const char *ext, int *counter, char *path, size_t size);

/* ---- view_record.c ---- */

/* One CA step, recorded when a recording is under way: every step passes here. */
int view_step(view_app *app);

/* Starts recording into `path` (NULL: the next free dlca-view-NNNN.gif) with the current grid as
 * its first frame, at the screenshot's cell size, a frame shown 1/speed s. */
int view_record_start(view_app *app, const char *path);

/* Adds the current grid as a frame when recording. A change of view (key c) ends the recording
 * first, saving it, since its frames keep one size and palette. */
int view_record_frame(view_app *app);

/* Finishes and saves the recording, if any. */
int view_record_stop(view_app *app);

/* Drops an unfinished recording (its file is not written). */
void view_record_abort(view_app *app);

#endif
