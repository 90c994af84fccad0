/* mini_json.h: just enough JSON for tests to check what dlca writes: a strict validator
 * (RFC 8259 grammar: objects, arrays, strings with escapes, numbers, true, false, null, nothing
 * after the value) and a lookup of one value by a dotted path ("checks.1.passed": member
 * "checks", element 1, member "passed"). Header-only; the parser is independent of dlca's
 * writer, so a broken writer cannot agree with itself. */
#ifndef DLCA_MINI_JSON_H
#define DLCA_MINI_JSON_H

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *mj_value(const char *p, int depth);

static const char *mj_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static const char *mj_string(const char *p)
{
    if (*p++ != '"') return NULL;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20) return NULL; /* also the end of the text */
        if (*p != '\\') continue;
        p++;
        if (*p == 'u') {
            for (int i = 1; i <= 4; i++)
                if (!isxdigit((unsigned char)p[i])) return NULL;
            p += 4;
        } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
            return NULL;
        }
    }
    return p + 1;
}

static const char *mj_number(const char *p)
{
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (isdigit((unsigned char)*p)) while (isdigit((unsigned char)*p)) p++;
    else return NULL;
    if (*p == '.') {
        if (!isdigit((unsigned char)*++p)) return NULL;
        while (isdigit((unsigned char)*p)) p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return NULL;
        while (isdigit((unsigned char)*p)) p++;
    }
    return p;
}

/* Past the object or array at p (its opening bracket), or NULL. */
static const char *mj_container(const char *p, int depth)
{
    char close = *p == '{' ? '}' : ']';
    p = mj_space(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
        if (close == '}') {
            if (!(p = mj_string(p))) return NULL;
            p = mj_space(p);
            if (*p++ != ':') return NULL;
            p = mj_space(p);
        }
        if (!(p = mj_value(p, depth + 1))) return NULL;
        p = mj_space(p);
        if (*p == close) return p + 1;
        if (*p++ != ',') return NULL;
        p = mj_space(p);
    }
}

static const char *mj_value(const char *p, int depth)
{
    if (depth > 64) return NULL;
    if (*p == '{' || *p == '[') return mj_container(p, depth);
    if (*p == '"') return mj_string(p);
    if (strncmp(p, "true", 4) == 0) return p + 4;
    if (strncmp(p, "false", 5) == 0) return p + 5;
    if (strncmp(p, "null", 4) == 0) return p + 4;
    return mj_number(p);
}

/* Is `text` one JSON value, with only white space around it? */
static inline int mj_valid(const char *text)
{
    const char *end = mj_value(mj_space(text), 0);
    return end && *mj_space(end) == '\0';
}

/* The value at `path` in valid JSON `text`: *start and *length span its text; 0 when absent. */
static inline int mj_get(const char *text, const char *path, const char **start, size_t *length)
{
    const char *p = mj_space(text);
    char part[128];
    while (*path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof part) return 0;
        memcpy(part, path, n), part[n] = '\0';
        path += n + (dot != NULL);
        int found = 0;
        if (*p == '{') {
            p = mj_space(p + 1);
            while (*p == '"' && !found) {
                const char *key_end = mj_string(p);
                found = (size_t)(key_end - p - 2) == strlen(part) && strncmp(p + 1, part, strlen(part)) == 0;
                p = mj_space(mj_space(key_end) + 1); /* past the ':' */
                if (found) break;
                p = mj_space(mj_value(p, 0));
                if (*p == ',') p = mj_space(p + 1);
            }
        } else if (*p == '[') {
            long index = strtol(part, NULL, 10);
            p = mj_space(p + 1);
            for (long i = 0; *p != ']' && i <= index; i++) {
                if (i == index) found = 1;
                else p = mj_space(mj_space(mj_value(p, 0)) + 1);
            }
        }
        if (!found) return 0;
    }
    const char *end = mj_value(p, 0);
    if (!end) return 0;
    *start = p, *length = (size_t)(end - p);
    return 1;
}

/* The number at `path`, or NAN when absent or not a number. */
static inline double mj_number_at(const char *text, const char *path)
{
    const char *start;
    size_t length;
    if (!mj_get(text, path, &start, &length) || !mj_number(start)) return NAN;
    return strtod(start, NULL);
}

/* Whether the value at `path` is exactly `literal` ("true", "\"gol\"", "null", ...). */
static inline int mj_is(const char *text, const char *path, const char *literal)
{
    const char *start;
    size_t length;
    return mj_get(text, path, &start, &length) && length == strlen(literal) && strncmp(start, literal, length) == 0;
}

#endif
