/* cli_stop.h: how a long command (train, sweep) is asked to stop early and still write what it
 * has: Ctrl-C (SIGINT), SIGTERM, and SIGHUP unless it is ignored (as under nohup). */
#ifndef DLCA_CLI_STOP_H
#define DLCA_CLI_STOP_H

#include <signal.h>

/* Installs the handlers; returns the flag they set (0 until one of those signals arrives), which
 * the command polls between steps. */
volatile sig_atomic_t *cli_stop_on_signals(void);

#endif
