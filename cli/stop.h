/*
 * stop.h - Ctrl-C (SIGINT) and SIGTERM ask a long command (run, validate) to stop
 * after the current step and store what ran, instead of killing it.
 */
#ifndef ZB_STOP_H
#define ZB_STOP_H

#include <signal.h>

/* Set by the handler; the executor and the suite read it between steps. */
extern volatile sig_atomic_t zb_stop_requested;

/* Install the handler for SIGINT and SIGTERM, and put the defaults back. */
void zb_stop_catch(void);
void zb_stop_release(void);

#endif
