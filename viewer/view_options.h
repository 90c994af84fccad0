/* view_options.h: dlca-view's command line. */
#ifndef DLCA_VIEW_OPTIONS_H
#define DLCA_VIEW_OPTIONS_H

#include <stddef.h>

typedef struct {
    const char *model;          /* NULL: the shipped checkerboard model */
    const char *device;         /* soft mode's engine: auto, cpu or a Vulkan device */
    const char *script_path;    /* --script */
    const char *keys;           /* --keys */
    const char *screenshot_dir; /* where keys s and g save (default ".") */
    const char *record;         /* --record: a GIF recorded from the start (NULL: none) */
    int has_grid, height, width;
    int scale;                  /* pixels per cell at start; 0 = about 700 pixels a side */
    int hard;                   /* the boolean circuit (default) or the relaxed one */
    int has_rate;
    double fire_rate;           /* --async */
    long long seed;
    int has_view, view;         /* view_kind */
    double speed;               /* steps per second */
    int brush;                  /* side of the mouse's square brush in cells */
    int headless;
} view_options;

/* Reads argv into `options` (defaults first); *help is set for --help. Errors name the flag. */
int view_options_parse(int argc, char **argv, view_options *options, int *help);

void view_options_help(void);

/* The model opened when none is given: $DLCA_ASSETS/models/checkerboard.dlca, else the
 * source tree's. Writes into `path` (size `size`) and returns it. */
const char *view_default_model(char *path, size_t size);

#endif
