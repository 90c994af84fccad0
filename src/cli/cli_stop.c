/* cli_stop.c: the stop request of long commands (cli_stop.h). */
#include "cli_stop.h"

#include <string.h>

/* Set by the handler: a handler can reach nothing but a static of this type. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int signal_number)
{
    (void)signal_number;
    stop_requested = 1;
}

volatile sig_atomic_t *cli_stop_on_signals(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    /* A closed terminal or ssh session stops the command too; but nohup's "ignore it" stands. */
    struct sigaction hangup;
    if (sigaction(SIGHUP, NULL, &hangup) == 0 && hangup.sa_handler != SIG_IGN) sigaction(SIGHUP, &action, NULL);
    return &stop_requested;
}
