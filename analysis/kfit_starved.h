/*
 * kfit_starved.h - the GPU compute stream's rate while CPU Adam holds every core
 * (execprofile.h "starved"), measured from the executor's tasks.
 *
 * With a pinned Adam worker on every core, the thread that issues the GPU's kernels
 * shares a core with a worker and waits for it in scheduler time slices: the GPU
 * idles between kernels (run B of the fid suite, gpt2-large dpu 0.5 at 12 GB/s: gaps
 * of 3-6 ms before tasks whose only dependency is the previous kernel of the stream;
 * the backward of one step took 65, 74 and 104 ms against 41 without Adam). So the
 * rate is a matter of time between the moment a task could start and its end, not of
 * kernel durations: for each GPU compute task while Adam runs (> 50% of that time),
 * the wall time from its ready time (the end of the stream's previous task and of its
 * dependencies, as measured) to its end, against its work under the fitted profile
 * (kernels.h zb_exec_gpu_flow, launch excluded; the part of it GPU Adam runs beside
 * at the SM share shared_gpu, which the simulator multiplies by starved).
 *
 * Before, `starved` was the grid value that minimized the step-time error of the
 * configurations it applies to: it absorbed whatever else those configurations missed
 * (with gpt2-large held out of run B, it came from the step of one Llama configuration).
 */
#ifndef ZB_KFIT_STARVED_H
#define ZB_KFIT_STARVED_H

#include "analysis/kfit.h"

/* The measured rate over the used items (use NULL: all) whose threads x ranks cover
 * the cores, on the profile of hw; cfgs[k]: item k's configuration (its GPU and dtype).
 * 0 when fewer than 100 tasks qualify. *tasks gets their count. */
double zb_kfit_starved_rate(const zb_kfit_set *s, const unsigned char *use, const zb_config *cfgs, const zb_hw *hw,
			    int *tasks);

/* The same tasks read as a wait per task (execprofile.h starved_s): their wall time from
 * ready to end less the launch, less their work on the profile of hw, over their count
 * (the launcher's wait for a core and the kernels' own slowdown beside Adam together).
 * 0 when fewer than 100 tasks qualify or they took no longer than their work. */
double zb_kfit_starved_wait(const zb_kfit_set *s, const unsigned char *use, const zb_config *cfgs, const zb_hw *hw,
			    int *tasks);

/* execprofile.h adam_gap_s: the GPU's idle before each compute task beside CPU Adam on
 * fewer than every core, from the tasks of the used items (use NULL: all) on one rank,
 * unpaced (a paced copy's pacer adds gaps of its own): each task's wait from its ready
 * time (the end of the stream's previous task and of its dependencies) to its start,
 * those beside Adam (> 50 % of ready to end) against those of the items' tasks beside
 * nothing on the CPU, fitted through the origin against Adam's share of the cores
 * (threads / cores), weighted by the tasks. Waits over 1 ms are some other stall, left
 * out. 0 when fewer than 100 tasks beside Adam or 100 beside none; *tasks gets the first
 * count. */
double zb_kfit_adam_gap(const zb_kfit_set *s, const unsigned char *use, const zb_hw *hw, int *tasks);

/* --link-rate runs (execprofile.h paced_gpu): the GPU compute rate beside each paced
 * copy, from the GPU compute tasks of paced items whose Adam leaves a core free (no
 * starvation mixed in) and that GPU Adam does not overlap: their rate (work on the
 * fitted profile over measured time less the launch) beside one and beside two paced
 * copies (> 90% of the task; tasks partly overlapped are left out) against their rate
 * beside none in the same runs (so the class factors' own errors cancel), fitted as
 * g^copies by time-weighted least squares on the logarithm. 0 when no paced item has
 * 50 tasks beside none and 50 beside copies; at most 1. */
double zb_kfit_paced_gpu(const zb_kfit_set *s, const unsigned char *use, const zb_config *cfgs, const zb_hw *hw);

#endif
