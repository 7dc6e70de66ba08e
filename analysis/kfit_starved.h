/*
 * kfit_starved.h - the GPU compute stream's rate while CPU Adam holds every core
 * (execprofile.h starved), measured from the executor's tasks or, with several ranks,
 * from the steps.
 *
 * With a pinned Adam worker on every core, the thread that issues the GPU's kernels
 * shares a core with a worker and waits for it in scheduler time slices: the GPU
 * idles between kernels (the fid suite on the H200 machine, gpt2-large dpu 0.5 at 12 GB/s: gaps
 * of 3-6 ms before tasks whose only dependency is the previous kernel of the stream;
 * the backward of one step took 65, 74 and 104 ms against 41 without Adam). So the
 * rate is a matter of time between the moment a task could start and its end, not of
 * kernel durations: for each GPU compute task while Adam runs (> 50% of that time),
 * the wall time from its ready time (the end of the stream's previous task and of its
 * dependencies, as measured) to its end, against its work under the fitted profile
 * (kernels.h zb_exec_gpu_flow, launch excluded; the part of it GPU Adam runs beside
 * at the SM share shared_gpu).
 */
#ifndef ZB_KFIT_STARVED_H
#define ZB_KFIT_STARVED_H

#include "analysis/kfit.h"

/* The measured rate (execprofile.h starved) over the used items (use NULL: all) whose
 * threads x ranks cover the cores, on the profile of hw; cfgs[k]: item k's configuration
 * (its GPU and dtype): their tasks' work over their wall time from ready to end less the
 * launch. 0 when fewer than 100 tasks qualify. *tasks gets their count. */
double zb_kfit_starved_rate(const zb_kfit_set *s, const unsigned char *use, const zb_config *cfgs, const zb_hw *hw,
			    int *tasks);

/* Several ranks: the rate whose simulated steps match the measured ones, least squares on
 * log(predicted / measured step) over the items with several ranks whose Adam threads cover
 * the cores (a grid of 0.025 on [0.3, 1] refined by a golden section). The ranks' losses
 * differ (on 2 H200s, 13-51 us per task on the more starved rank, 13-20 on the other) and
 * meet at every collective, so the step follows the more starved rank, which the stored
 * timeline (the slowest rank's) does not always show. Unchanged when none qualifies. */
typedef struct zb_kfit_starved_stats {
	int n;      /* configurations used */
	double rms; /* rms of log(predicted / measured step) at the fit */
} zb_kfit_starved_stats;
zb_status zb_kfit_starved_steps(const zb_kfit_set *s, const unsigned char *use, zb_hw *hw,
				zb_kfit_starved_stats *stats, zb_error *err);

#endif
