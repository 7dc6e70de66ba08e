/*
 * kfit_starved_s.h - the GPU's wait per task beside CPU Adam on every core (execprofile.h
 * starved_s) fitted to the step times of runs with several ranks.
 *
 * zb_kfit_starved_wait (kfit_starved.h) reads the wait from the tasks of the timeline
 * the database keeps per configuration (the slowest rank's). On 2 H200s the ranks' waits
 * differ (v2 runs, gpt2-large, ready-to-end time beyond the same task's duration without
 * Adam: 13-51 us per task on the more starved rank, 13-20 on the other; rank 0 is the
 * more starved in 4 of 7 configurations) and the ranks meet at every
 * collective, so the step follows the more starved rank, which that timeline does not
 * always show. This fit takes the value whose simulated steps match the measured ones:
 * least squares on log(predicted / measured step) over the items with several ranks
 * whose Adam threads cover the cores, a grid of 2.5 us steps on [0, 100] us refined by a
 * golden section. What it absorbs besides the wait is whatever else those steps miss.
 */
#ifndef ZB_KFIT_STARVED_S_H
#define ZB_KFIT_STARVED_S_H

#include "analysis/kfit.h"

typedef struct zb_kfit_starved_s_stats {
	int n;      /* configurations used */
	double rms; /* rms of log(predicted / measured step) at the fit */
} zb_kfit_starved_s_stats;

/* Fit hw->gpu.exec.starved_s on the items whose use[i] is non-zero (NULL: all);
 * unchanged when none qualifies. */
zb_status zb_kfit_starved_s_steps(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw,
				  zb_kfit_starved_s_stats *stats, zb_error *err);

#endif
