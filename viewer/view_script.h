/* view_script.h: the viewer's command language, for tests, demos and CI (no display needed).
 * A script is commands separated by ';' or new lines; '#' starts a comment to the end of the
 * line. Coordinates are cells (x right, y down, from 0), not pixels.
 *   step [N]              N CA steps (default 1), as many right-arrow presses
 *   drag X0,Y0-X1,Y1      left-drag the mouse from cell (X0,Y0) to (X1,Y1): erases (damage)
 *   paint X0,Y0-X1,Y1     right-drag: sets the cells
 *   key NAME              a key press: space right r h a c g + - s ? q esc
 *   screenshot [PATH]     the grid view as a PNG (default dlca-view-NNNN.png, as key s)
 *   capture PATH          the whole window as shown, overlays included, as a PNG
 *   resize WxH            resize the window to W x H pixels
 *   wait SECONDS          let the viewer run in real time (when playing, it steps)
 *   quit                  exit (a script that ends without it leaves the window open;
 *                         --headless quits at the end anyway)
 *   status                print the status line on stdout (the step, "(T)" at the one the
 *                         model was trained for, the target: exact or N wrong) */
#ifndef DLCA_VIEW_SCRIPT_H
#define DLCA_VIEW_SCRIPT_H

typedef enum {
    VIEW_CMD_STEP,
    VIEW_CMD_DRAG,
    VIEW_CMD_PAINT,
    VIEW_CMD_KEY,
    VIEW_CMD_SCREENSHOT,
    VIEW_CMD_CAPTURE,
    VIEW_CMD_RESIZE,
    VIEW_CMD_WAIT,
    VIEW_CMD_QUIT,
    VIEW_CMD_STATUS,
    VIEW_CMD_COUNT
} view_cmd_kind;

/* Keys a script can press (and the viewer's keyboard handler understands). */
typedef enum {
    VIEW_KEY_PLAY,     /* space */
    VIEW_KEY_STEP,     /* right arrow */
    VIEW_KEY_RESET,    /* r */
    VIEW_KEY_HARD,     /* h */
    VIEW_KEY_ASYNC,    /* a */
    VIEW_KEY_CHANNELS, /* c */
    VIEW_KEY_FASTER,   /* + */
    VIEW_KEY_SLOWER,   /* - */
    VIEW_KEY_SAVE,     /* s */
    VIEW_KEY_RECORD,   /* g */
    VIEW_KEY_HELP,     /* ? */
    VIEW_KEY_QUIT,     /* q, esc */
    VIEW_KEY_NONE
} view_key;

typedef struct {
    view_cmd_kind kind;
    int args[4];    /* step: N; drag/paint: X0, Y0, X1, Y1; key: view_key; resize: W, H */
    double seconds; /* wait */
    char *path;     /* screenshot (NULL: automatic name), capture */
} view_cmd;

typedef struct {
    view_cmd *cmds;
    int count;
} view_script;

/* Parses `text`; `name` (a file name or "--keys") stands for it in messages, which also give the
 * line and the offending command. On failure nothing is allocated. */
int view_script_parse(view_script *script, const char *text, const char *name);

/* The largest script file: far more than any demo or test needs (1 MiB). */
enum { VIEW_SCRIPT_MAX_BYTES = 1 << 20 };

/* view_script_parse on the contents of the file at `path`: a regular file of at most
 * VIEW_SCRIPT_MAX_BYTES (a device, FIFO or directory is refused without reading it). */
int view_script_load(view_script *script, const char *path);

void view_script_free(view_script *script);

#endif
