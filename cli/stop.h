/*
 * stop.h - Ctrl-C (SIGINT), SIGTERM and SIGHUP ask a long command (run, validate,
 * sweep) to stop after the current step or row and store what ran, instead of
 * killing it. A batch system sends SIGTERM (Slurm's scancel and time limits, then
 * SIGKILL after a grace period), a closed terminal SIGHUP.
 */
#ifndef ZB_STOP_H
#define ZB_STOP_H

#include <signal.h>

/* Set by the handler; the executor and the suite read it between steps. */
extern volatile sig_atomic_t zb_stop_requested;
/* The signal that asked (0: none). */
extern volatile sig_atomic_t zb_stop_signal;

/* Install the handler for SIGINT, SIGTERM and SIGHUP (clearing a request), and put
 * the defaults back. */
void zb_stop_catch(void);
void zb_stop_release(void);

/* The shell's code for the signal that asked: 128 + its number (130 for Ctrl-C,
 * 143 for SIGTERM, 129 for SIGHUP). */
int zb_stop_exit_code(void);
/* "SIGTERM", "SIGHUP", "Ctrl-C". */
const char *zb_stop_name(void);

#endif
