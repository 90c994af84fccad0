/* view_script.c: parsing the viewer's command language (see view_script.h). */
#include "view_script.h"

#include "error.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_COMMAND = 4096, MAX_STEPS = 10000000, MAX_SIDE = 16384 };

static const struct {
    const char *name;
    view_key key;
} key_names[] = {
    {"space", VIEW_KEY_PLAY}, {"right", VIEW_KEY_STEP}, {"r", VIEW_KEY_RESET}, {"h", VIEW_KEY_HARD},
    {"a", VIEW_KEY_ASYNC},    {"c", VIEW_KEY_CHANNELS}, {"+", VIEW_KEY_FASTER}, {"-", VIEW_KEY_SLOWER},
    {"s", VIEW_KEY_SAVE},     {"?", VIEW_KEY_HELP},     {"q", VIEW_KEY_QUIT},  {"esc", VIEW_KEY_QUIT},
    {"g", VIEW_KEY_RECORD},
};

static const char *const command_names[VIEW_CMD_COUNT] = {"step",   "drag",   "paint", "key", "screenshot",
                                                          "capture", "resize", "wait",  "quit",  "status"};
_Static_assert(VIEW_CMD_COUNT == 10, "one name per command");

/* Where a command came from, for messages. */
typedef struct {
    const char *name;
    int line;
    const char *text;
} origin;

static int bad(const origin *o, const char *why)
{
    return err_set(DLCA_ERR, "%s:%d: '%s': %s", o->name, o->line, o->text, why);
}

static int parse_key(view_cmd *cmd, const char *arg, const origin *o)
{
    for (size_t i = 0; i < sizeof key_names / sizeof key_names[0]; i++)
        if (strcasecmp(arg, key_names[i].name) == 0) return cmd->args[0] = (int)key_names[i].key, DLCA_OK;
    return bad(o, "unknown key (keys: space right r h a c g + - s ? q esc)");
}

static int parse_drag(view_cmd *cmd, const char *arg, const origin *o)
{
    int *a = cmd->args;
    char tail;
    if (sscanf(arg, " %d , %d - %d , %d %c", &a[0], &a[1], &a[2], &a[3], &tail) != 4 || a[0] < 0 || a[1] < 0 ||
        a[2] < 0 || a[3] < 0)
        return bad(o, "expected X0,Y0-X1,Y1 in cells, e.g. 10,10-20,20");
    return DLCA_OK;
}

static int parse_arguments(view_cmd *cmd, const char *arg, const origin *o)
{
    char tail;
    switch (cmd->kind) {
    case VIEW_CMD_STEP:
        cmd->args[0] = 1;
        if (*arg && (sscanf(arg, "%d %c", &cmd->args[0], &tail) != 1 || cmd->args[0] < 1 || cmd->args[0] > MAX_STEPS))
            return bad(o, "expected a step count from 1 to 10000000");
        return DLCA_OK;
    case VIEW_CMD_DRAG:
    case VIEW_CMD_PAINT: return parse_drag(cmd, arg, o);
    case VIEW_CMD_KEY: return parse_key(cmd, arg, o);
    case VIEW_CMD_RESIZE:
        if (sscanf(arg, "%dx%d %c", &cmd->args[0], &cmd->args[1], &tail) != 2 || cmd->args[0] < 1 ||
            cmd->args[1] < 1 || cmd->args[0] > MAX_SIDE || cmd->args[1] > MAX_SIDE)
            return bad(o, "expected WxH in pixels, e.g. 800x600");
        return DLCA_OK;
    case VIEW_CMD_WAIT:
        if (sscanf(arg, "%lf %c", &cmd->seconds, &tail) != 1 || !(cmd->seconds >= 0.0 && cmd->seconds <= 3600.0))
            return bad(o, "expected seconds from 0 to 3600");
        return DLCA_OK;
    case VIEW_CMD_SCREENSHOT:
    case VIEW_CMD_CAPTURE:
        if (!*arg) return cmd->kind == VIEW_CMD_CAPTURE ? bad(o, "expected a PNG path") : DLCA_OK;
        cmd->path = strdup(arg);
        return cmd->path ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "out of memory");
    default: return *arg ? bad(o, "takes no arguments") : DLCA_OK;
    }
}

/* One command `text` (trimmed, not empty) into `cmd`. */
static int parse_command(view_cmd *cmd, char *text, const origin *o)
{
    memset(cmd, 0, sizeof *cmd);
    char *arg = text;
    while (*arg && !isspace((unsigned char)*arg)) arg++;
    if (*arg) *arg++ = '\0';
    while (isspace((unsigned char)*arg)) arg++;
    for (int k = 0; k < VIEW_CMD_COUNT; k++)
        if (strcasecmp(text, command_names[k]) == 0) {
            cmd->kind = (view_cmd_kind)k;
            return parse_arguments(cmd, arg, o);
        }
    return bad(o, "unknown command (commands: step drag paint key screenshot capture resize wait quit)");
}

static int append(view_script *s, char *text, const origin *o, int *capacity)
{
    if (s->count == *capacity) {
        int grown = *capacity ? 2 * *capacity : 16;
        view_cmd *cmds = realloc(s->cmds, (size_t)grown * sizeof *cmds);
        if (!cmds) return err_set(DLCA_ERR_NOMEM, "out of memory for the script");
        s->cmds = cmds, *capacity = grown;
    }
    char copy[MAX_COMMAND];
    snprintf(copy, sizeof copy, "%s", text);
    origin here = {o->name, o->line, copy};
    if (parse_command(&s->cmds[s->count], text, &here)) return DLCA_ERR;
    s->count++;
    return DLCA_OK;
}

/* Trims `buffer` and appends it as a command unless it is empty. */
static int flush(view_script *s, char *buffer, size_t length, const origin *o, int *capacity)
{
    buffer[length] = '\0';
    while (length > 0 && isspace((unsigned char)buffer[length - 1])) buffer[--length] = '\0';
    char *start = buffer;
    while (isspace((unsigned char)*start)) start++;
    return *start ? append(s, start, o, capacity) : DLCA_OK;
}

int view_script_parse(view_script *s, const char *text, const char *name)
{
    memset(s, 0, sizeof *s);
    char buffer[MAX_COMMAND];
    size_t length = 0;
    int capacity = 0, comment = 0, rc = DLCA_OK;
    origin o = {name, 1, ""};
    for (const char *p = text;; p++) {
        if (*p == '\0' || *p == ';' || *p == '\n') {
            rc = flush(s, buffer, length, &o, &capacity);
            length = 0;
            if (*p == '\n') o.line++, comment = 0;
            if (rc || *p == '\0') break;
        } else if (*p == '#' || comment) {
            comment = 1;
        } else if (length + 1 < sizeof buffer) {
            buffer[length++] = *p;
        } else {
            rc = err_set(DLCA_ERR, "%s:%d: a command longer than %d characters", name, o.line, MAX_COMMAND - 1);
            break;
        }
    }
    if (rc) view_script_free(s);
    return rc;
}

int view_script_load(view_script *s, const char *path)
{
    memset(s, 0, sizeof *s);
    /* A regular file only (O_NONBLOCK: opening a FIFO must not wait for a writer), and a bounded
     * one: /dev/zero or a runaway file is refused, not read until memory runs out. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return err_set(DLCA_ERR, "%s: cannot open the script: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(DLCA_ERR, "%s: the script is not a regular file", path);
    }
    if (st.st_size > VIEW_SCRIPT_MAX_BYTES) {
        close(fd);
        return err_set(DLCA_ERR, "%s: the script is %lld bytes, more than the %d a script may have", path,
                       (long long)st.st_size, VIEW_SCRIPT_MAX_BYTES);
    }
    char *text = malloc(VIEW_SCRIPT_MAX_BYTES + 2);
    size_t used = 0;
    int rc = text ? DLCA_OK : err_set(DLCA_ERR_NOMEM, "%s: out of memory for the script", path);
    while (!rc && used <= VIEW_SCRIPT_MAX_BYTES) { /* reads one byte past the limit to notice a file that grew */
        ssize_t n = read(fd, text + used, VIEW_SCRIPT_MAX_BYTES + 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) rc = err_set(DLCA_ERR, "%s: cannot read the script: %s", path, strerror(errno));
        if (n <= 0) break;
        used += (size_t)n;
    }
    close(fd);
    if (!rc && used > VIEW_SCRIPT_MAX_BYTES)
        rc = err_set(DLCA_ERR, "%s: the script is more than the %d bytes a script may have", path, VIEW_SCRIPT_MAX_BYTES);
    if (!rc) {
        text[used] = '\0';
        rc = view_script_parse(s, text, path);
    }
    free(text);
    return rc;
}

void view_script_free(view_script *s)
{
    for (int i = 0; i < s->count; i++) free(s->cmds[i].path);
    free(s->cmds);
    memset(s, 0, sizeof *s);
}
