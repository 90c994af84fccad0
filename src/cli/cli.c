/* cli.c: flag value parsing and output-path checks shared by the subcommands. */
#include "cli.h"

#include "atomic_file.h"
#include "error.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_int(const char *flag, const char *text, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE)
        return err_set(DLCA_ERR, "%s: '%s' is not a whole number", flag, text);
    if (value < min || value > max)
        return err_set(DLCA_ERR, "%s: %lld is outside %lld..%lld", flag, value, min, max);
    *out = value;
    return DLCA_OK;
}

int cli_double(const char *flag, const char *text, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(value))
        return err_set(DLCA_ERR, "%s: '%s' is not a number", flag, text);
    if (value < min || value > max) return err_set(DLCA_ERR, "%s: %g is outside %g..%g", flag, value, min, max);
    *out = value;
    return DLCA_OK;
}

int cli_grid(const char *flag, const char *text, int max, int *height, int *width)
{
    const char *x = strchr(text, 'x');
    if (!x) return err_set(DLCA_ERR, "%s: '%s' is not HxW (e.g. 16x16)", flag, text);
    char first[32];
    size_t n = (size_t)(x - text);
    if (n == 0 || n >= sizeof first) return err_set(DLCA_ERR, "%s: '%s' is not HxW (e.g. 16x16)", flag, text);
    memcpy(first, text, n);
    first[n] = '\0';
    long long h, w;
    if (cli_int(flag, first, 1, max, &h) || cli_int(flag, x + 1, 1, max, &w)) return DLCA_ERR;
    *height = (int)h, *width = (int)w;
    return DLCA_OK;
}

int cli_value(int argc, char **argv, int *i, const char **value)
{
    if (*i + 1 >= argc) return err_set(DLCA_ERR, "%s needs a value", argv[*i]);
    *value = argv[++*i];
    return DLCA_OK;
}

const char *cli_printable(const char *text, char *out, size_t size)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p && n + 5 < size; p++) {
        if (*p >= 0x20 && *p <= 0x7e) out[n++] = (char)*p;
        else n += (size_t)snprintf(out + n, size - n, "\\x%02x", *p);
    }
    if (size) out[n < size ? n : size - 1] = '\0';
    return out;
}

int cli_output_not_model(const char *path, const char *flag, const char *model)
{
    if (atomic_file_check(path, flag)) return DLCA_ERR;
    if (model && atomic_file_same(path, model))
        return err_set(DLCA_ERR, "%s %s is the model %s itself: give another %s", flag, path, model, flag);
    return DLCA_OK;
}

int cli_fail(const char *command, int usage)
{
    fprintf(stderr, "dlca %s: %s\n", command, err_message());
    return usage ? 2 : 1;
}
