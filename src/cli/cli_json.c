/* cli_json.c: the JSON builder of cli_json.h. */
#include "cli_json.h"

#include "atomic_file.h"
#include "error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void append(cli_json *j, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void append(cli_json *j, const char *format, ...)
{
    if (j->failed) return;
    va_list list;
    va_start(list, format);
    int n = vsnprintf(NULL, 0, format, list);
    va_end(list);
    if (n < 0) return (void)(j->failed = 1);
    if (j->size + (size_t)n + 1 > j->capacity) {
        size_t capacity = (j->capacity ? 2 * j->capacity : 1024) + (size_t)n;
        char *text = realloc(j->text, capacity);
        if (!text) return (void)(j->failed = 1);
        j->text = text, j->capacity = capacity;
    }
    va_start(list, format);
    vsnprintf(j->text + j->size, j->capacity - j->size, format, list);
    va_end(list);
    j->size += (size_t)n;
}

static void escaped(cli_json *j, const char *s)
{
    append(j, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') append(j, "\\%c", *p);
        else if (*p < 0x20 || *p > 0x7e) append(j, "\\u%04x", *p);
        else append(j, "%c", *p);
    }
    append(j, "\"");
}

/* The comma before a member after the first, the indentation and "key": */
static void member(cli_json *j, const char *key)
{
    if (j->depth > 0 && j->members[j->depth]++) append(j, ",");
    if (j->depth > 0) append(j, "\n%*s", 2 * j->depth, "");
    if (key) {
        escaped(j, key);
        append(j, ": ");
    }
}

void cli_json_open(cli_json *j, const char *key, char bracket)
{
    member(j, key);
    append(j, "%c", bracket);
    if (j->depth + 1 >= CLI_JSON_MAX_DEPTH) return (void)(j->failed = 1);
    j->members[++j->depth] = 0;
}

void cli_json_close(cli_json *j, char bracket)
{
    int had = j->depth > 0 && j->members[j->depth] > 0;
    if (j->depth > 0) j->depth--;
    if (had) append(j, "\n%*s", 2 * j->depth, "");
    append(j, "%c", bracket);
}

void cli_json_string(cli_json *j, const char *key, const char *value)
{
    member(j, key);
    if (!value) return append(j, "null");
    escaped(j, value);
}

void cli_json_number(cli_json *j, const char *key, double value)
{
    member(j, key);
    if (!isfinite(value)) return append(j, "null");
    char text[40];
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, value);
        if (strtod(text, NULL) == value) break;
    }
    append(j, "%s", text);
}

void cli_json_int(cli_json *j, const char *key, long long value)
{
    member(j, key);
    append(j, "%lld", value);
}

void cli_json_bool(cli_json *j, const char *key, int value)
{
    member(j, key);
    append(j, "%s", value ? "true" : "false");
}

int cli_json_write(cli_json *j, const char *path, const char *flag)
{
    append(j, "\n");
    if (j->failed) return err_set(DLCA_ERR_NOMEM, "%s %s: out of memory for the report", flag, path);
    if (strcmp(path, "-") == 0) {
        if (fwrite(j->text, 1, j->size, stdout) != j->size || fflush(stdout) != 0)
            return err_set(DLCA_ERR, "%s -: cannot write to stdout", flag);
        return DLCA_OK;
    }
    return atomic_file_write(path, j->text, j->size);
}

void cli_json_free(cli_json *j)
{
    free(j->text);
    memset(j, 0, sizeof *j);
}
