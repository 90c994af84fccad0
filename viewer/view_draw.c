/* view_draw.c: the window's contents (the grid picture scaled to fit, a status line, the help
 * overlay), the window title, screenshots and captures. */
#include "view_app.h"

#include "error.h"
#include "image_png.h"
#include "image_font.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_SHOTS = 10000, TEXT_PAD = 4 };

static const char *const help_lines[] = {
    "dlca-view keys",
    "",
    "space     pause / play",
    "right     one step",
    "r         reset to the start",
    "h         hard / soft",
    "a         async on / off",
    "c         channels: grey, rgb, mosaic",
    "+ -       faster / slower",
    "s         save a screenshot",
    "g         start / stop recording a GIF",
    "?         this help",
    "q esc     quit",
    "",
    "left-drag erases cells, right-drag sets them",
};
enum { HELP_LINES = sizeof help_lines / sizeof help_lines[0] };

void view_layout(view_app *app, SDL_Rect *dest, double *scale)
{
    int width = 1, height = 1;
    if (app->renderer) SDL_GetRendererOutputSize(app->renderer, &width, &height);
    double s = fmin((double)width / app->image_width, (double)height / app->image_height);
    if (s >= 1.0) s = floor(s); /* whole pixels per cell when they fit: crisp and even */
    if (!(s > 0.0)) s = 1.0;
    dest->w = (int)lround(app->image_width * s), dest->h = (int)lround(app->image_height * s);
    dest->x = (width - dest->w) / 2, dest->y = (height - dest->h) / 2;
    *scale = s;
}

int view_image_update(view_app *app)
{
    int width, height;
    view_image_size(app->kind, app->model.config.channels, app->sim.shape.height, app->sim.shape.width, &width,
                    &height);
    if (width == app->image_width && height == app->image_height && app->image) return DLCA_OK;
    unsigned char *image = realloc(app->image, (size_t)width * (size_t)height * 3);
    if (!image) return err_set(DLCA_ERR_NOMEM, "out of memory for a %dx%d picture", width, height);
    app->image = image, app->image_width = width, app->image_height = height;
    return DLCA_OK;
}

static void render_image(view_app *app)
{
    view_image_render(app->image, view_sim_grid(&app->sim), app->model.config.channels, app->sim.shape, app->kind);
}

int view_offscreen(view_app *app, int width, int height)
{
    if (app->texture) SDL_DestroyTexture(app->texture), app->texture = NULL;
    if (app->renderer) SDL_DestroyRenderer(app->renderer), app->renderer = NULL;
    if (app->surface) SDL_FreeSurface(app->surface), app->surface = NULL;
    app->surface = SDL_CreateRGBSurfaceWithFormat(0, width, height, 32, SDL_PIXELFORMAT_RGB888);
    if (!app->surface) return err_set(DLCA_ERR, "cannot make a %dx%d picture: %s", width, height, SDL_GetError());
    app->renderer = SDL_CreateSoftwareRenderer(app->surface);
    if (!app->renderer) return err_set(DLCA_ERR, "cannot draw off screen: %s", SDL_GetError());
    return DLCA_OK;
}

/* The texture the picture is uploaded to, recreated when the picture's size changes. */
static int upload_image(view_app *app)
{
    if (app->texture && (app->texture_width != app->image_width || app->texture_height != app->image_height))
        SDL_DestroyTexture(app->texture), app->texture = NULL;
    if (!app->texture) {
        app->texture = SDL_CreateTexture(app->renderer, SDL_PIXELFORMAT_RGB24, SDL_TEXTUREACCESS_STREAMING,
                                         app->image_width, app->image_height);
        if (!app->texture) return err_set(DLCA_ERR, "cannot make a texture: %s", SDL_GetError());
        app->texture_width = app->image_width, app->texture_height = app->image_height;
    }
    if (SDL_UpdateTexture(app->texture, NULL, app->image, app->image_width * 3) != 0)
        return err_set(DLCA_ERR, "cannot update the texture: %s", SDL_GetError());
    return DLCA_OK;
}

/* Text in the 5x7 font, each font pixel a size x size square, in the current draw colour. */
static void draw_text(SDL_Renderer *r, int x, int y, int size, const char *text)
{
    SDL_Rect rects[IMAGE_FONT_WIDTH * IMAGE_FONT_HEIGHT];
    for (; *text; text++, x += IMAGE_FONT_ADVANCE * size) {
        int n = 0;
        for (int gy = 0; gy < IMAGE_FONT_HEIGHT; gy++)
            for (int gx = 0; gx < IMAGE_FONT_WIDTH; gx++)
                if (image_font_pixel(*text, gx, gy)) rects[n++] = (SDL_Rect){x + gx * size, y + gy * size, size, size};
        if (n) SDL_RenderFillRects(r, rects, n);
    }
}

/* A dark translucent box with light text lines, its top-left corner at (x, y). */
static void draw_panel(SDL_Renderer *r, int x, int y, int size, const char *const *lines, int count)
{
    size_t longest = 0;
    for (int i = 0; i < count; i++) longest = strlen(lines[i]) > longest ? strlen(lines[i]) : longest;
    SDL_Rect box = {x, y, (int)longest * IMAGE_FONT_ADVANCE * size + 2 * TEXT_PAD * size,
                    count * IMAGE_FONT_LINE * size + 2 * TEXT_PAD * size - (IMAGE_FONT_LINE - IMAGE_FONT_HEIGHT) * size};
    SDL_SetRenderDrawBlendMode(r, SDL_BLENDMODE_BLEND);
    SDL_SetRenderDrawColor(r, 0, 0, 0, 210);
    SDL_RenderFillRect(r, &box);
    SDL_SetRenderDrawColor(r, 255, 236, 150, 255);
    for (int i = 0; i < count; i++)
        draw_text(r, x + TEXT_PAD * size, y + TEXT_PAD * size + i * IMAGE_FONT_LINE * size, size, lines[i]);
}

static void describe_rate(const view_app *app, char *text, size_t size)
{
    if (app->sim.fire_rate < 1.0) snprintf(text, size, "async %.2f", app->sim.fire_rate);
    else snprintf(text, size, "sync");
}

/* The wrong bits against the target, counted again only when the grid changed. */
static long target_wrong(view_app *app)
{
    if (!app->target_known || app->target_version != app->sim.version) {
        app->target_wrong = app->target.bits ? view_target_wrong(&app->target, view_sim_grid(&app->sim)) : -1;
        app->target_version = app->sim.version, app->target_known = 1;
    }
    return app->target_wrong;
}

void view_status_line(view_app *app, char *text, size_t size)
{
    char rate[32], target[40] = "";
    describe_rate(app, rate, sizeof rate);
    long wrong = target_wrong(app);
    if (wrong == 0) snprintf(target, sizeof target, "  exact");
    else if (wrong > 0) snprintf(target, sizeof target, "  %ld wrong", wrong);
    snprintf(text, size, "step %llu%s%s  %g/s  %s %s  %s%s%s  ? help", (unsigned long long)app->sim.t,
             app->sim.t == (uint64_t)app->model.config.steps ? " (T)" : "", target, app->speed,
             app->sim.hard ? "hard" : "soft", rate, view_kind_name(app->kind), app->playing ? "" : "  paused",
             app->recording ? "  REC" : "");
}

static void update_title(view_app *app)
{
    char rate[32], title[sizeof app->title];
    const char *name = strrchr(app->model_path, '/');
    describe_rate(app, rate, sizeof rate);
    snprintf(title, sizeof title, "dlca-view: %.200s %dx%d | step %llu | %g steps/s | %s (%s), %s | %s%s",
             name ? name + 1 : app->model_path, app->sim.shape.height, app->sim.shape.width,
             (unsigned long long)app->sim.t, app->speed, app->sim.hard ? "hard" : "soft",
             app->sim.hard ? "cpu" : ca_backend_name(app->backend, &app->vk), rate, view_kind_name(app->kind),
             app->playing ? "" : " | paused");
    if (strcmp(title, app->title) == 0) return; /* the window manager need not hear it again */
    snprintf(app->title, sizeof app->title, "%s", title);
    SDL_SetWindowTitle(app->window, title);
}

int view_draw(view_app *app)
{
    SDL_Renderer *r = app->renderer;
    SDL_Rect dest;
    double scale;
    if (!app->texture || app->drawn_version != app->sim.version || app->drawn_kind != app->kind) {
        render_image(app); /* only when something changed: a large grid takes a while */
        if (upload_image(app)) return DLCA_ERR;
        app->drawn_version = app->sim.version, app->drawn_kind = app->kind;
    }
    view_layout(app, &dest, &scale);
    SDL_SetRenderDrawColor(r, 24, 24, 28, 255);
    SDL_RenderClear(r);
    SDL_RenderCopy(r, app->texture, NULL, &dest);
    int width, height;
    SDL_GetRendererOutputSize(r, &width, &height);
    int size = width >= 640 ? 2 : 1; /* text large enough to read, small enough to fit */
    char status[256];
    const char *line = status;
    view_status_line(app, status, sizeof status);
    draw_panel(r, 0, 0, size, &line, 1);
    if (app->notice[0] && view_now() < app->notice_until) {
        line = app->notice;
        draw_panel(r, 0, IMAGE_FONT_LINE * size + 2 * TEXT_PAD * size, size, &line, 1);
    }
    if (app->help) draw_panel(r, width / 8, height / 8, size, help_lines, HELP_LINES);
    if (app->window) update_title(app);
    return DLCA_OK;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int view_next_path(view_app *app, const char *ext, int *counter, char *path, size_t size)
{
    const char *dir = app->opt.screenshot_dir ? app->opt.screenshot_dir : ".";
    for (; *counter < MAX_SHOTS; (*counter)++) {
        int n = snprintf(path, size, "%s/dlca-view-%04d.%s", dir, *counter, ext);
        if (n < 0 || (size_t)n >= size) return err_set(DLCA_ERR, "--screenshot-dir: the path %.60s... is too long", dir);
        if (!exists(path)) return DLCA_OK;
    }
    return err_set(DLCA_ERR, "%s: dlca-view-0000.%s .. dlca-view-%04d.%s all exist", dir, ext, MAX_SHOTS - 1, ext);
}

int view_screenshot(view_app *app, const char *path)
{
    char automatic[4096];
    if (!path) {
        if (view_next_path(app, "png", &app->shot, automatic, sizeof automatic)) return DLCA_ERR;
        path = automatic;
    }
    SDL_Rect dest;
    double scale;
    view_layout(app, &dest, &scale);
    render_image(app);
    int whole = scale >= 1.0 ? (int)scale : 1;
    if (view_image_write(path, app->image, app->image_width, app->image_height, whole)) return DLCA_ERR;
    printf("saved %s (step %llu)\n", path, (unsigned long long)app->sim.t);
    fflush(stdout);
    return DLCA_OK;
}

int view_capture(view_app *app, const char *path)
{
    int width, height;
    if (view_draw(app)) return DLCA_ERR;
    SDL_GetRendererOutputSize(app->renderer, &width, &height);
    unsigned char *rgb = malloc((size_t)width * (size_t)height * 3);
    if (!rgb) return err_set(DLCA_ERR_NOMEM, "out of memory for a %dx%d capture", width, height);
    int rc = DLCA_OK;
    if (SDL_RenderReadPixels(app->renderer, NULL, SDL_PIXELFORMAT_RGB24, rgb, width * 3) != 0)
        rc = err_set(DLCA_ERR, "cannot read the window back: %s", SDL_GetError());
    if (!rc) rc = image_write_rgb(path, rgb, width, height);
    free(rgb);
    if (!rc) printf("saved %s (step %llu)\n", path, (unsigned long long)app->sim.t);
    return rc;
}
