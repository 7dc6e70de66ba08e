/* stop.c - the stop request of stop.h. */
#include "cli/stop.h"

#include <string.h>

volatile sig_atomic_t zb_stop_requested;
volatile sig_atomic_t zb_stop_signal;

static void on_signal(int sig)
{
	zb_stop_signal = sig;
	zb_stop_requested = 1;
}

void zb_stop_catch(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	zb_stop_requested = 0;
	zb_stop_signal = 0;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

void zb_stop_release(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
}

int zb_stop_exit_code(void) { return 128 + (zb_stop_signal ? zb_stop_signal : SIGINT); }

const char *zb_stop_name(void)
{
	return zb_stop_signal == SIGTERM ? "SIGTERM" : zb_stop_signal == SIGHUP ? "SIGHUP" : "Ctrl-C";
}
