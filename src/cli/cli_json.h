/* cli_json.h: JSON for the commands' machine-readable reports (dlca eval --json), built in
 * memory and written atomically (or to stdout for "-"). Strings are escaped (control bytes and
 * non-ASCII as \u00XX, so any byte string gives valid JSON), numbers print exactly (the shortest
 * text that reads back to the same double), and a NaN or infinity, which JSON has no word for,
 * is null. A key is NULL for members of an array. Out of memory is remembered and reported by
 * cli_json_write. */
#ifndef DLCA_CLI_JSON_H
#define DLCA_CLI_JSON_H

#include <stddef.h>

enum { CLI_JSON_MAX_DEPTH = 16 };

typedef struct {
    char *text;
    size_t size, capacity;
    int failed;                       /* an allocation failed */
    int depth;
    int members[CLI_JSON_MAX_DEPTH];  /* values written so far at each depth */
} cli_json;

void cli_json_open(cli_json *json, const char *key, char bracket);   /* '{' or '[' */
void cli_json_close(cli_json *json, char bracket);                   /* '}' or ']' */
void cli_json_string(cli_json *json, const char *key, const char *value); /* NULL: null */
void cli_json_number(cli_json *json, const char *key, double value);
void cli_json_int(cli_json *json, const char *key, long long value);
void cli_json_bool(cli_json *json, const char *key, int value);

/* Writes the document and a newline to `path` ("-": stdout); the message names `flag`. */
int cli_json_write(cli_json *json, const char *path, const char *flag);

void cli_json_free(cli_json *json);

#endif
