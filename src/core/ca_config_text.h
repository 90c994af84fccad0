/* ca_config_text.h: a config as text. Every field of ca_config has one row in one table (its
 * key, parser, printer and a line of help), and everything that reads or writes a config as
 * words goes through it: `dlca info` prints a model's config as `key = value` lines, `dlca train
 * --config FILE` reads the same lines, and each key is also a flag of `dlca train` (--KEY VALUE;
 * a few keep an older short flag as an alias: --T, --async, --lr). Adding a field is one row.
 *
 * A config file is lines of `key = value`; '#' starts a comment to the end of the line, blank
 * lines are skipped, spaces around keys and values are ignored; a key given twice is refused.
 * Assignments apply on top of a preset: the `preset` key's (or the caller's default), so a file
 * may say only what differs. Then ca_config_check decides whether the whole is valid; a failure
 * names the key and where it was set (FILE:LINE or the flag) whose value makes it fail. One rule
 * links keys: when `channels` is set and `update` is not, the update network's last layer (which
 * must have C gates) follows channels. */
#ifndef DLCA_CA_CONFIG_TEXT_H
#define DLCA_CA_CONFIG_TEXT_H

#include "ca_config.h"

#include <stddef.h>
#include <stdio.h>

enum { CA_CONFIG_VALUE_MAX = 512, CA_CONFIG_ORIGIN_MAX = 300, CA_CONFIG_FILE_MAX = 1 << 16 };

typedef struct {
    const char *key;   /* in files, in `dlca info`, and as the flag --key */
    const char *alias; /* another flag name for it (without the dashes), or NULL */
    const char *value; /* what a value looks like, for help: "HxW", "N", "8,4,2" */
    const char *help;  /* one line */
    /* Parses `text` into the config; errors start with `name` (e.g. "--lr" or "m.conf:4: lr"). */
    int (*parse)(ca_config *config, const char *text, const char *name);
    /* The field as text that parse reads back to the same value. */
    void (*print)(const ca_config *config, char *out, size_t size);
} ca_config_key;

extern const ca_config_key ca_config_keys[];
extern const int ca_config_key_count;

/* The row of `name` (a key or an alias), or NULL. */
const ca_config_key *ca_config_key_find(const char *name);

/* Writes every key of `config` as `key = value` lines, in table order. */
void ca_config_print(const ca_config *config, FILE *out);

/* One `key = value` to apply, and where it came from ("m.conf:4", "--channels") for messages. */
typedef struct {
    const ca_config_key *key;
    char value[CA_CONFIG_VALUE_MAX];
    char origin[CA_CONFIG_ORIGIN_MAX];
} ca_config_assignment;

/* A list of assignments in the order they apply: a later one of a key replaces an earlier. */
typedef struct {
    ca_config_assignment *items;
    int count, capacity;
} ca_config_assignments;

/* Appends one (`name` is the key or alias as written; unknown keys fail naming `origin`). */
int ca_config_assign(ca_config_assignments *list, const char *name, const char *value, const char *origin);

/* Parses a config file's text (`name` stands for the file in messages: "NAME:LINE: ..."), appending its
 * assignments. Unknown keys, lines without '=', empty values and a key given twice are refused. */
int ca_config_parse_text(ca_config_assignments *list, const char *text, size_t size, const char *name);

/* ca_config_parse_text on the file at `path` (a regular file of at most CA_CONFIG_FILE_MAX bytes). */
int ca_config_load_text(ca_config_assignments *list, const char *path);

/* Builds the config: the preset the assignments name (two different presets are refused), else
 * `default_preset`; then every other assignment in order, the channels rule above, and
 * ca_config_check, whose failure names the culprit assignment. */
int ca_config_build(ca_config *config, const ca_config_assignments *list, const char *default_preset);

/* Whether `key` is assigned in the list. */
int ca_config_assigned(const ca_config_assignments *list, const char *key);

void ca_config_assignments_free(ca_config_assignments *list);

#endif
