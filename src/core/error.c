/* error.c: one thread-local message buffer behind err_set / err_message. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

/* Room for two paths of ATOMIC_FILE_PATH_MAX characters and the words around them. */
static _Thread_local char error_text[12288];

int err_set(int status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(error_text, sizeof error_text, fmt, args);
    va_end(args);
    return status;
}

const char *err_message(void) { return error_text; }

void err_clear(void) { error_text[0] = '\0'; }
