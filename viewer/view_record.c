/* view_record.c: recording what the viewer shows as an animated GIF (key g, --record F.gif).
 * A frame is the grid picture at the screenshot's cell size under a step label, the same frame
 * `dlca run --out F.gif` writes for that step (image_frame.h): one at the start and one after
 * every step (a reset records the start again). Damage shows in the frame of the next step.
 * The frame size, palette and delay are fixed when a recording starts, so a change of view ends
 * it (saved) rather than mixing sizes; the file is written atomically when it ends. */
#include "view_app.h"

#include "error.h"
#include "image_frame.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The picture at the recording's scale below its step label, into app->record_rgb. */
static void render_frame(view_app *app)
{
    int width = app->record_width, scale = app->record_scale, band = image_label_height(width);
    view_image_render(app->image, view_sim_grid(&app->sim), app->model.config.channels, app->sim.shape, app->kind);
    image_draw_label(app->record_rgb, width, app->record_height, 0, width, (long long)app->sim.t);
    for (int y = band; y < app->record_height; y++) {
        const unsigned char *src = app->image + (size_t)((y - band) / scale) * (size_t)app->image_width * 3;
        unsigned char *dst = app->record_rgb + (size_t)y * (size_t)width * 3;
        for (int x = 0; x < width; x++) memcpy(dst + (size_t)x * 3, src + (size_t)(x / scale) * 3, 3);
    }
}

int view_record_start(view_app *app, const char *path)
{
    if (app->recording) return DLCA_OK;
    if (path) snprintf(app->record_path, sizeof app->record_path, "%s", path);
    else if (view_next_path(app, "gif", &app->movie, app->record_path, sizeof app->record_path)) return DLCA_ERR;
    SDL_Rect dest;
    double shown;
    view_layout(app, &dest, &shown);
    int scale = shown >= 1.0 ? (int)shown : 1;
    long long width = (long long)app->image_width * scale;
    long long height = (long long)app->image_height * scale + image_label_height(width > IMAGE_LABEL_WIDE ? IMAGE_LABEL_WIDE : (int)width);
    if (image_gif_check(app->record_path, width, height)) return DLCA_ERR;
    unsigned char *rgb = malloc((size_t)width * (size_t)height * 3);
    if (!rgb) return err_set(DLCA_ERR_NOMEM, "%s: out of memory for a %lldx%lld frame", app->record_path, width, height);
    double delay = round(100.0 / app->speed);
    int delay_cs = delay < 2.0 ? 2 : delay > 65535.0 ? 65535 : (int)delay;
    if (image_gif_open(&app->recording, app->record_path, (int)width, (int)height, delay_cs,
                       app->kind == VIEW_GREY ? IMAGE_GIF_GREY : IMAGE_GIF_COLOUR)) {
        free(rgb);
        return DLCA_ERR;
    }
    free(app->record_rgb);
    app->record_rgb = rgb, app->record_scale = scale, app->record_kind = app->kind;
    app->record_width = (int)width, app->record_height = (int)height;
    char text[512];
    snprintf(text, sizeof text, "recording %.400s (g stops)", app->record_path);
    view_notice(app, text);
    return view_record_frame(app);
}

int view_record_stop(view_app *app)
{
    if (!app->recording) return DLCA_OK;
    int frames = image_gif_frames(app->recording);
    if (image_gif_close(&app->recording)) return DLCA_ERR;
    printf("saved %s (%d frame%s, to step %llu)\n", app->record_path, frames, frames == 1 ? "" : "s",
           (unsigned long long)app->sim.t);
    fflush(stdout);
    snprintf(app->notice, sizeof app->notice, "saved %.400s", app->record_path); /* on screen, not stderr */
    app->notice_until = view_now() + 5.0;
    return DLCA_OK;
}

void view_record_abort(view_app *app)
{
    image_gif_abort(&app->recording);
    free(app->record_rgb);
    app->record_rgb = NULL;
}

int view_record_frame(view_app *app)
{
    if (!app->recording) return DLCA_OK;
    if (app->kind != app->record_kind) {
        view_notice(app, "the view changed: recording stopped");
        return view_record_stop(app);
    }
    render_frame(app);
    return image_gif_add(app->recording, app->record_rgb);
}

int view_step(view_app *app)
{
    if (view_sim_step(&app->sim)) return DLCA_ERR;
    return view_record_frame(app);
}
