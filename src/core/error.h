/* error.h: the engine's error channel. Functions return a status (or NULL) and leave a
 * one-line message here; only main() and the viewer decide to print and exit. */
#ifndef DLCA_ERROR_H
#define DLCA_ERROR_H

/* Status codes returned by engine functions. */
typedef enum {
    DLCA_OK = 0,
    DLCA_ERR = -1,       /* generic failure, message set */
    DLCA_ERR_NOMEM = -2, /* host allocation failed */
    DLCA_ERR_NODEV = -3  /* no usable Vulkan loader or device */
} dlca_status;

/* Sets the message (printf format) and returns `status`, so callers can `return err_set(...)`. */
int err_set(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last message set on this thread ("" when none). */
const char *err_message(void);

/* Clears the message. */
void err_clear(void);

#endif
