/*
 * kfit.h - the executor profile (core/execprofile.h) fitted from the executor's own
 * measured tasks: the events a `zbench validate` run stored (source 'measured', one
 * start and end per task), joined with the tasks of each configuration's schedule,
 * which is rebuilt from the stored configuration (the same deterministic builder the
 * run used; the task counts are checked).
 *
 * What is fitted, each where it can be seen alone (steady-state steps only):
 *   GPU        every GPU compute and GPU-optimizer task not overlapped by the other GPU
 *              stream (> 10% of its time): duration = launches x launch + unit time /
 *              factor of its class (kernels.h: GEMM group, kind of memory-bound kernel,
 *              GPU Adam; dense GEMMs on the GPU's own curve, no factor), one launch cost
 *              for all, weighted least squares on relative error
 *   CPU Adam   duration = latency + params x (1 / (threads x thread rate) + 1 / memory
 *              rate): linear in (1, params / threads, params), same weighting
 *   copies     pinned H2D and D2H bandwidth and latency from copies the other direction
 *              does not overlap (< 10%), duplex fractions from those it overlaps
 *              (> 90%); pageable rates from the --pageable configurations; copies paced
 *              by --link-rate are left out (the pacer delivers the asked rate)
 * Unmeasured classes keep the base profile's values.
 *
 * Several ranks (a `zbench run --gpus N`): the 'measured' events are the slowest rank's,
 * and a collective's time on its stream includes the wait for the last rank to reach it
 * (a rank that arrives first spins in the NCCL kernel). What the model calls the
 * collective's busy time is the transfer: from the latest rank's start to the ranks'
 * mean end, on one clock (the rank tables' t0 offsets); meas_busy_s[comm] holds that.
 */
#ifndef ZB_KFIT_H
#define ZB_KFIT_H

#include <stdint.h>

#include "common/error.h"
#include "core/config.h"
#include "core/graph.h"

typedef struct zb_kfit_item {
	int64_t config_id;
	int64_t run_id;          /* the run it was stored under */
	char key[160];
	zb_config c;             /* the stored configuration on the base hardware, unpaced */
	zb_graph g;
	double *mstart, *mend;   /* measured seconds per task (from the run's time zero) */
	double meas_step_s;      /* zb_step_time_window of the measured ends */
	double meas_se_s;        /* standard error of the measured steps' mean (zb_step_spread); NaN: not known */
	double meas_busy_s[ZB_RES_COUNT]; /* several ranks: comm is the transfer time (below) */
	double meas_comm_raw_s;  /* several ranks: the NCCL stream's occupancy, waits for peers included */
	/* each resource's measured intervals, by start (for overlaps) */
	double *ivl[ZB_RES_COUNT]; /* start, end pairs */
	int nivl[ZB_RES_COUNT];
} zb_kfit_item;

typedef struct zb_kfit_set {
	zb_kfit_item *it;
	int n;
	int warmup;
	int64_t run_id;
	int skipped;             /* configurations without a usable measurement */
} zb_kfit_set;

/* The measured configurations of run_id (0: the newest run with measured tasks; < 0: of every run) in db,
 * rebuilt on base. */
zb_status zb_kfit_load(const char *db, int64_t run_id, int warmup, const zb_hw *base, zb_kfit_set *out,
		       zb_error *err);
void zb_kfit_free(zb_kfit_set *s);

/* Fraction of [s, e] during which resource r of x was measured busy (kfit.c). */
double zb_kfit_overlap(const zb_kfit_item *x, int r, double s, double e);

/* A fit of the runs on several ranks (kfit_adam, kfit_comm) to one resource's measured
 * busy time: the items it uses and the hardware whose factors it varies. */
typedef struct zb_kfit_busy_fit {
	const zb_kfit_set *s;
	const unsigned char *use; /* NULL: every item */
	zb_hw hw;
	int resource;             /* zb_resource */
	zb_error *err;
	zb_status st;             /* the first error of a simulation */
	int n;                    /* items the last cost counted */
	int single;               /* 1: items of one rank count too (0: several ranks only) */
} zb_kfit_busy_fit;

/* Mean squared log ratio of predicted to measured busy time of q->resource over the used
 * items of several ranks (of any number with q->single) that measured it (INFINITY after
 * an error or with none). */
double zb_kfit_busy_cost(zb_kfit_busy_fit *q);

/* Golden-section search of cost(q, v) over [a, b] for `iters` steps, or until *st is set;
 * *best / *cbest hold the best point seen so far and are updated. */
void zb_kfit_golden(double (*cost)(void *q, double v), void *q, const zb_status *st, double a, double b,
		    int iters, double *best, double *cbest);

/* Whether item x runs CPU Adam (a policy with a CPU share) with a thread, of all its ranks,
 * on every core of hw (execprofile.h starved; kernels.h zb_exec_adam_launch). */
int zb_kfit_adam_all_cores(const zb_kfit_item *x, const zb_hw *hw);

/* Bytes per second the copies of x moved during [s, e] (each copy's bytes spread evenly
 * over its measured interval). */
double zb_kfit_copy_Bps(const zb_kfit_item *x, double s, double e);

/* Bandwidth of resource r's copies (>= 1 MiB, in the window, unpaced) of the used items
 * (use NULL: all): bytes / (d - lat) summed, of the copies whose overlap with the other
 * direction is in [lo, hi], pageable as asked, and that CPU Adam does not overlap (< 10 %:
 * beside Adam the DRAM queue slows them, h2d_queue and pageable_queue). 0 when fewer than
 * 3; *count gets their count. */
double zb_kfit_copy_rate(const zb_kfit_set *s, const unsigned char *use, int r, int pageable, double lo, double hi,
			 double lat, int *count);

/* The predicted busy time per step of resource r for item k of s on hw, over the
 * measured window (s->warmup); NaN when not simulated, NaN and *st set on an error. */
double zb_kfit_predicted_busy(const zb_kfit_set *s, int k, const zb_hw *hw, int r, zb_status *st, zb_error *err);

/* The configuration of item x on hardware hw (its --link-rate applied again). */
zb_status zb_kfit_config(const zb_kfit_item *x, const zb_hw *hw, zb_config *out, zb_error *err);

typedef struct zb_kfit_stats {
	int gpu_samples, cpu_samples, copy_samples;
	double gpu_rms, cpu_rms;  /* rms relative error of the fitted task durations */
} zb_kfit_stats;

/* Fit base's executor profile (and link and CPU figures the measurements show) on the
 * items whose use[i] is non-zero (use NULL: all); out = base with the fit. */
zb_status zb_kfit_fit(const zb_kfit_set *s, const unsigned char *use, const zb_hw *base, zb_hw *out,
		      zb_kfit_stats *stats, zb_error *err);

/* Predicted step and busy times of every item on hw (NaN where it cannot be simulated). */
typedef struct zb_kfit_pred {
	double step_s;
	double busy_s[ZB_RES_COUNT];
} zb_kfit_pred;
zb_status zb_kfit_predict(const zb_kfit_set *s, const zb_hw *hw, zb_kfit_pred *out, zb_error *err);

#endif
