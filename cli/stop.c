/* stop.c - the stop request of stop.h. */
#include "cli/stop.h"

#include <string.h>

volatile sig_atomic_t zb_stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	zb_stop_requested = 1;
}

void zb_stop_catch(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void zb_stop_release(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}
