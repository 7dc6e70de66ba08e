/*
 * validation.c - zbench validate (validation.h): a built-in suite of configurations
 * (suite.h) through both the executor and the simulator (with --hw, typically the profile
 * zbench calibrate wrote), each stored with both timelines (zbench compare reads
 * them), reporting each configuration's step-time error, the mean absolute
 * percentage error, and the speedup of each Twin-Flow ratio over plain offload,
 * predicted against measured.
 *
 * Targets: MAPE <= 3%, worst <= 8%, speedups within 5%. --strict exits 1
 * when one is missed; otherwise the verdict is printed and the exit code only
 * says whether everything ran.
 *
 * Time: every configuration's cost is estimated before it starts (suite.h) and
 * printed, with the total; a configuration whose estimate would take the run past
 * --budget (default 480 s, under the GPU machine's 10-minute command limit) is
 * skipped and listed as such.
 *
 * Steps: every configuration runs --steps measured steps, or with --measure-s S about
 * S seconds of them: ceil(S / predicted step) clamped to --steps ..
 * --max-steps, so a fast, noisy configuration (75 ms, per-step sd ~20 % on the H200)
 * gets many steps and a slow, steady one (500 ms) few. Each measured mean comes with
 * its standard error over the steady steps (the "±" column), and the summary counts
 * the configurations whose error is within two of those.
 *
 * Rounds: with --rounds R every configuration is measured R times, each time with
 * its share of the steps (and its own warm-up), the suite forward in the first round,
 * backward in the second, and so on. Each round is stored as a configuration of the
 * run (zbench calibrate --from-db counts them as one, kfit_eval.h). A configuration's
 * measurement is the mean of its rounds, so a host that drifts steadily during the suite
 * moves every configuration alike (the fid suite on the H200 machine: CPU Adam alone 7 %
 * faster at the end than at the start); each round weighs by its precision, the same
 * unless its steps varied by more than the host repeats itself (zb_rounds_mean); the
 * mean's standard error is the larger of the rounds' own and their spread.
 *
 * Extra rounds: with --extra-s S (and two rounds or more), after the rounds up to S seconds
 * go to further rounds, one at a time, each for the configuration whose mean is least sure
 * then (the largest standard error, at least EXTRA_MIN_PCT of it; zb_suite_least_sure).
 * The rounds of one configuration on every core or with pageable copies differ by up to
 * 20-27 % on some hosts where the others differ by 2 %: the time goes
 * where the noise is. The choice reads the measurements only, never the predictions; a
 * round measured while the host was disturbed (its steps varying) weighs less in the mean.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/stats.h"
#include "common/version.h"
#include "analysis/compare.h"
#include "exec/executor.h"
#include "exec/host_pool.h"
#include "report/report.h"
#include "sim/predict.h"
#include "validate/validation.h"


#define REPEAT_MAX ZB_VALIDATE_REPEAT_MAX
#define ROUNDS_MAX ZB_VALIDATE_ROUNDS_MAX
#define EXTRA_MIN_PCT 1.0  /* a mean surer than this (standard error, % of it) gets no extra round */
#define MAX_STEPS_DEFAULT 64

typedef struct item {
	const zb_suite_entry *e;
	char key[128];
	zb_config c;
	int fits;
	char reason[256];
	double est_s;            /* the first round's estimate */
	double est_again_s;      /* a later round's: its host buffers already pinned (pool) */
	double pin_s, host_bytes;
	double pred_s;           /* predicted step (from the estimate pass) */
	int steps;               /* measured steps of each round (--steps, or from --measure-s) */
	zb_suite_outcome out;    /* with several rounds, their mean (combine_rounds) */
	zb_suite_outcome round[ROUNDS_MAX];
	int nround;              /* rounds measured */
	int ran, skipped;
	char skip_why[64];
} item;

static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* One validation: the suite's items, the run they are stored under, the clock. */
struct zb_validation {
	zb_validate_opts opt;            /* as given, the unset ones decided (zb_validate_defaults) */
	const zb_validate_opts *o;       /* &opt */
	FILE *out, *log;                 /* the tables; one line per configuration that failed */
	volatile sig_atomic_t *stop;     /* set: stop after the configuration running */
	const zb_suite *suite;
	int n;
	item *it;
	double total_est, t0, wall;
	zb_store *store;
	int64_t run_id;
	int64_t first_config, last_config, nconfigs; /* what the rounds stored */
	int nagain;                      /* configurations measured again (--repeat) */
	int nextra;                      /* extra rounds run (--extra-s) */
	int again_item[REPEAT_MAX];      /* which */
	double again_s[REPEAT_MAX];      /* their second measured step */
	int device_set, failed;
};

typedef zb_validation validation;

/* What the suite showed: step-time errors, busy-time errors, Twin-Flow speedups. */
typedef struct summary {
	int used, skipped, within3, within8;
	int within_noise;        /* |error| <= 2 standard errors of the measured mean */
	double noise_median_pct; /* median over executed configurations of 100 * se / measured */
	double drift_median_pct; /* median over configurations of two rounds or more of 100 * |last - first| / mean */
	int ndrift;
	double mape, worst, busy_mape[ZB_RES_COUNT];
	int nspeed, speed_ok;
	double speed_worst;
	json_t *speedups;
	int met_mape, met_worst, met_speed;
	int order_pairs, order_swaps; /* pairs > 3% apart when measured, predicted the other way round */
	int order_pairs_sure, order_swaps_sure; /* of those, apart by more than 2 standard errors too */
	int speed_miss_sure;     /* speedups off by more than 5% + 2 standard errors of the measured one */
} summary;

/* ---- plan ------------------------------------------------------------------------------ */

/* Measured steps of a configuration predicted at pred_s per step: --steps, or with
 * --measure-s enough for that many seconds, within --steps .. --max-steps. */
static int steps_for(const zb_validate_opts *o, double pred_s)
{
	if (o->measure_s <= 0 || !(pred_s > 0) || !isfinite(pred_s))
		return o->steps;
	double n = ceil(o->measure_s / pred_s);
	return n < o->steps ? o->steps : n > o->max_steps ? o->max_steps : (int)n;
}

/* Each round's share of n measured steps: at least 3, so that a round has a spread. */
static int round_steps(const zb_validate_opts *o, int n)
{
	int k = (n + o->rounds - 1) / o->rounds;
	return o->rounds == 1 || k >= 3 ? k : 3;
}

/* Configuration x with `steps` measured steps, predicted: fits, predicted step, cost. */
static zb_status plan_one(const zb_validate_opts *o, item *x, int steps, zb_error *err)
{
	zb_prediction p;
	zb_status st;
	if ((st = zb_suite_config(x->e, o->hw, o->warmup, steps, &x->c, err)) || (st = zb_predict(&p, &x->c, err)))
		return st;
	x->steps = steps;
	x->fits = p.mem.fits && p.simulated;
	snprintf(x->reason, sizeof x->reason, "%s", p.mem.reason);
	x->est_s = x->est_again_s = zb_suite_estimate_s(&x->c, &p);
	x->pin_s = zb_suite_pin_s(&p);
	x->host_bytes = p.mem.host_bytes;
	x->pred_s = x->fits ? zb_step_time_window(&p.graph, p.res.end, o->warmup) : NAN;
	zb_prediction_free(&p);
	return ZB_OK;
}

/* validate keeps pinned host buffers between configurations (exec/host_pool.h), so by
 * the estimate a configuration pins only when it needs more host memory than every
 * one before it, and never in a later round. Rough: the pool does not spend a block on
 * a request of less than half its size, so a smaller model after a larger one pins too;
 * the wall column shows the truth. */
static void discount_pinning(validation *v)
{
	double held = 0;
	for (int i = 0; i < v->n; i++) {
		item *x = &v->it[i];
		if (!x->fits)
			continue;
		x->est_again_s = x->est_s - x->pin_s;
		if (x->host_bytes <= held)
			x->est_s = x->est_again_s;
		else
			held = x->host_bytes;
	}
}

/* x's estimate over all the rounds: the first pins, the later ones find the pool. */
static double est_rounds(const zb_validate_opts *o, const item *x)
{
	return x->est_s + (o->rounds - 1) * x->est_again_s;
}

/* The seconds of extra rounds (--extra-s; they need the spread of two rounds). */
static double extra_s(const zb_validate_opts *o)
{
	return o->rounds > 1 ? o->extra_s : 0;
}

/* Every configuration built and predicted: fits, predicted step, estimated cost. With
 * --measure-s the step count comes from the prediction with --steps, and the
 * configuration is built and predicted again with its own (est_s then covers the
 * longer run, so --budget sees it). */
static zb_status plan(validation *v, zb_error *err)
{
	const zb_validate_opts *o = v->o;
	zb_status st = zb_suite_open(o->suite, &v->suite, err);
	if (st)
		return st;
	v->n = o->limit && o->limit < v->suite->n ? o->limit : v->suite->n;
	v->it = zb_xcalloc((size_t)v->n, sizeof *v->it);
	for (int i = 0; i < v->n; i++) {
		item *x = &v->it[i];
		x->e = &v->suite->entries[i];
		zb_suite_key(x->e, x->key, sizeof x->key);
		if ((st = plan_one(o, x, o->steps, err)))
			return st;
		int n = x->fits ? round_steps(o, steps_for(o, x->pred_s)) : o->steps;
		if (n != o->steps && (st = plan_one(o, x, n, err)))
			return st;
	}
	discount_pinning(v);
	for (int i = 0; i < v->n; i++)
		v->total_est += est_rounds(o, &v->it[i]);
	v->total_est += extra_s(o);
	for (int i = 0, k = 0; i < v->n && k < o->repeat; i++) /* --repeat: the first ones again */
		if (v->it[i].fits) {
			v->total_est += v->it[i].est_again_s;
			k++;
		}
	return ZB_OK;
}

static void print_header(const validation *v, FILE *out)
{
	const zb_validate_opts *o = v->o;
	char steps[256];
	int l;
	if (o->measure_s > 0)
		l = snprintf(steps, sizeof steps, "%d warm-up steps, measured steps: %d, or %g s of steps (at most %d)",
			     o->warmup, o->steps, o->measure_s, o->max_steps);
	else
		l = snprintf(steps, sizeof steps, "%d warm-up + %d measured steps", o->warmup, o->steps);
	if (o->rounds > 1)
		l += snprintf(steps + l, sizeof steps - l, ", in %d rounds (forward, backward; each its share of the "
			      "steps and its own warm-up)", o->rounds);
	if (extra_s(o) > 0)
		snprintf(steps + l, sizeof steps - l, ", then %g s of extra rounds for the least sure", extra_s(o));
	fprintf(out, "# zbench %s%s%s validate: suite %s (%d of %d configurations), hw %s, %s\n", ZB_VERSION,
		ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, v->suite->name, v->n, v->suite->n,
		o->hw ? o->hw : "h200-machine (default)", steps);
	fprintf(out, "# expected time %.0f s on the H200 machine (estimate: setup + predicted run + storing), budget "
		     "%d s\n",
		v->total_est, o->budget);
}

/* --list: the suite with each estimate, nothing run. */
static void print_list(const validation *v)
{
	fprintf(v->out, "%3s  %-44s %10s %6s %8s  %s\n", "#", "configuration", "predicted", "steps", "estimate", "");
	fprintf(v->out, "%3s  %-44s %10s %6s %8s  %s\n", "", "", "ms/step", "", "s", "");
	for (int i = 0; i < v->n; i++) {
		const item *x = &v->it[i];
		char note[300] = "";
		if (!x->fits)
			snprintf(note, sizeof note, "does not fit: %s", x->reason);
		else if (x->e->group)
			snprintf(note, sizeof note, "speedup group %d%s", x->e->group,
				 zb_suite_is_reference(x->e) ? " (reference)" : "");
		fprintf(v->out, "%3d  %-44s %10.2f %6d %8.1f  %s\n", i + 1, x->key, x->pred_s * 1e3, x->steps, x->est_s, note);
	}
}

/* ---- run --------------------------------------------------------------------------------- */

/* The runs row every configuration is stored under (committed at once). */
static zb_status open_run(validation *v, const char *command, zb_error *err)
{
	const zb_validate_opts *o = v->o;
	if (o->no_db)
		return ZB_OK;
	zb_run_info info = { .kind = "validate", .command = command, .version = ZB_VERSION, .git_commit = ZB_GIT_COMMIT };
	zb_status st = zb_store_open(&v->store, o->db, ZB_STORE_WRITE_WAIT_MS, err);
	if (!st && !(st = zb_store_begin(v->store, err))) {
		st = zb_store_add_run(v->store, &info, &v->run_id, err);
		st = st ? st : zb_store_commit(v->store, err);
	}
	if (st) {
		zb_store_close(v->store);
		v->store = NULL;
	}
	return st;
}

/* Why item x is not run now in round r (NULL to run it): interrupted, does not fit, or
 * its estimate would take the run past --budget. */
static const char *skip_reason(const validation *v, const item *x, int round, char *buf, size_t n)
{
	const zb_validate_opts *o = v->o;
	double elapsed = zb_wall_s() - v->t0, est = round ? x->est_again_s : x->est_s;
	if (*v->stop)
		return "interrupted";
	if (!x->fits)
		return "does not fit";
	if (elapsed + est > o->budget) {
		snprintf(buf, n, "over budget (%.0f + %.0f > %d s)", elapsed, est, o->budget);
		return buf;
	}
	return NULL;
}

/* With several rounds, the configurations whose rounds would take the suite past
 * --budget by the estimates are left out of every round, from the end of the suite:
 * the first round must leave the others their time, and the rounds the extra ones theirs. */
static void trim_to_budget(validation *v)
{
	const zb_validate_opts *o = v->o;
	double total = extra_s(o);
	for (int i = 0; i < v->n; i++) {
		item *x = &v->it[i];
		if (!x->fits)
			continue;
		total += est_rounds(o, x);
		if (total > o->budget && !x->skipped) {
			x->skipped = 1;
			snprintf(x->skip_why, sizeof x->skip_why, "over budget (%d rounds: %.0f > %d s)", o->rounds,
				 total, o->budget);
		}
	}
}

/* Execute and simulate one round of one configuration, committed on its own. A failure
 * on the GPU marks the item (its earlier rounds stand) and goes on (a broken CUDA
 * context makes the rest fail fast too; exit 1 at the end); a store failure stops the
 * suite. */
static zb_status run_one(validation *v, item *x, zb_error *err)
{
	const zb_validate_opts *o = v->o;
	zb_suite_run_opts ro = { .execute = 1, .warmup = o->warmup, .timeline = 1, .store = v->store,
				 .run_id = v->run_id, .stop = v->stop };
	zb_suite_outcome *r = &x->round[x->nround];
	zb_status st;
	if (v->store && (st = zb_store_begin(v->store, err)))
		return st;
	st = zb_suite_run(&x->c, &ro, r, err);
	if (v->store) {
		if (!st && !v->device_set && r->device[0]) {
			/* best effort: the run's rows stand without it */
			zb_error ignored;
			if (zb_store_set_run_device(v->store, v->run_id, r->device, &ignored) == ZB_OK)
				v->device_set = 1;
		}
		if (st)
			zb_store_rollback(v->store);
		else
			st = zb_store_commit(v->store, err);
		if (!st && r->config_id > 0) {
			v->first_config = v->nconfigs++ ? v->first_config : r->config_id;
			v->last_config = r->config_id;
		}
	}
	if (st && st != ZB_E_STORE) {
		snprintf(x->skip_why, sizeof x->skip_why, "FAILED: %.55s", err->msg);
		fprintf(v->log, "zbench: %s failed: %s\n", x->key, err->msg);
		v->failed++;
		x->skipped = 1;
		return ZB_OK;
	}
	if (st)
		return st;
	if (!r->fits) {
		x->skipped = 1;
		snprintf(x->skip_why, sizeof x->skip_why, "does not fit (executor)");
		snprintf(x->reason, sizeof x->reason, "%s", r->reason);
	} else if (!r->executed) {
		x->skipped = 1;
		snprintf(x->skip_why, sizeof x->skip_why, "interrupted");
	} else {
		x->nround++;
	}
	return ZB_OK;
}

/* *out from x's rounds (one at least): the measured steps and busy times averaged, each
 * round weighing by its precision (zb_rounds_mean), with that mean's standard error; the
 * walls added. */
static void mean_of_rounds(const item *x, zb_suite_outcome *out)
{
	*out = x->round[0];
	if (x->nround == 1)
		return;
	int n = x->nround;
	double m[ROUNDS_MAX], se[ROUNDS_MAX], w[ROUNDS_MAX], wall = 0;
	for (int k = 0; k < n; k++) {
		m[k] = x->round[k].meas_step_s;
		se[k] = x->round[k].meas_se_s;
		wall += x->round[k].wall_s;
	}
	zb_spread s = zb_rounds_mean(m, se, n, ZB_ROUND_SE_FLOOR, w);
	out->meas_step_s = s.mean;
	out->meas_se_s = s.se;
	out->wall_s = wall;
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		out->meas_busy_s[r] = 0;
		for (int k = 0; k < n; k++)
			out->meas_busy_s[r] += w[k] * x->round[k].meas_busy_s[r];
	}
}

/* x->out from its rounds (mean_of_rounds). */
static void combine_rounds(item *x)
{
	x->ran = x->nround > 0;
	if (!x->ran)
		return;
	x->skipped = 0; /* a later round's failure or skip leaves the earlier ones */
	mean_of_rounds(x, &x->out);
}

/* 100 * (x's last round - its first) / their mean (NaN: fewer than two rounds). */
static double round_change_pct(const item *x)
{
	if (x->nround < 2)
		return NAN;
	double a = x->round[0].meas_step_s, b = x->round[x->nround - 1].meas_step_s;
	return 200 * (b - a) / (a + b);
}

/* 100 * the standard error of x's measured mean over that mean (NaN: not known). */
static double noise_pct(const item *x)
{
	return x->ran ? 100 * x->out.meas_se_s / x->out.meas_step_s : NAN;
}

static void print_table_header(const validation *v, const char *title)
{
	const zb_validate_opts *o = v->o;
	if (o->json)
		return;
	if (title)
		fprintf(v->out, "\n%s\n", title);
	/* "±" is two bytes in UTF-8 and one column: padded by hand */
	fprintf(v->out, "%3s  %-44s %10s %10s %8s %6s %6s %8s %8s%s\n", "#", "configuration", "predicted", "measured", "error",
		"     \u00b1", "steps", "estimate", "wall", o->rounds > 1 && title ? "   change" : "");
	fprintf(v->out, "%3s  %-44s %10s %10s %8s %6s %6s %8s %8s%s\n", "", "", "ms/step", "ms/step", "%", "%", "", "s", "s",
		o->rounds > 1 && title ? "        %" : "");
	fflush(v->out);
}

/* Item x's row: o measured (a round, or the mean of x's rounds), or why it was not
 * (why, else x's skip_why); change: the rounds' change in %, printed unless NaN. */
static void print_row(const validation *v, int i, const item *x, const zb_suite_outcome *o, double change,
		      const char *why)
{
	if (v->o->json)
		return;
	char noise[16] = "-", chg[16] = ""; /* fewer than two steady steps: no spread */
	if (o && isfinite(o->meas_se_s / o->meas_step_s))
		snprintf(noise, sizeof noise, "%.1f", 100 * o->meas_se_s / o->meas_step_s);
	if (isfinite(change))
		snprintf(chg, sizeof chg, " %+8.1f", change);
	if (o)
		fprintf(v->out, "%3d  %-44s %10.2f %10.2f %+8.1f %6s %6d %8.1f %8.1f%s\n", i + 1, x->key, o->pred_step_s * 1e3,
			o->meas_step_s * 1e3, 100 * zb_rel_err(o->pred_step_s, o->meas_step_s), noise, x->steps,
			x->est_s, o->wall_s, chg);
	else
		fprintf(v->out, "%3d  %-44s %10.2f %10s %8s %6s %6d %8.1f %8s  skipped: %s\n", i + 1, x->key, x->pred_s * 1e3,
			"-", "-", "-", x->steps, x->est_s, "-", why ? why : x->skip_why);
	fflush(v->out);
}

/* --repeat: the first executed configurations once more, at the end and unstored, within
 * the budget: the same configuration minutes later says how much of an error the host's
 * own drift can be (the fid suite on the H200 machine: CPU Adam alone on 8 threads
 * 100.9 / 98.3 / 93.5 ms a step in three groups of one run). A failure here is reported
 * and ends the repeats only. */
static void repeat_first(validation *v)
{
	const zb_validate_opts *o = v->o;
	for (int i = 0; i < v->n && v->nagain < o->repeat && !*v->stop; i++) {
		item *x = &v->it[i];
		if (!x->ran)
			continue;
		if (zb_wall_s() - v->t0 + x->est_again_s > o->budget)
			break;
		zb_suite_run_opts ro = { .execute = 1, .warmup = o->warmup, .stop = v->stop };
		zb_suite_outcome again;
		zb_error e;
		if (zb_suite_run(&x->c, &ro, &again, &e) != ZB_OK) {
			fprintf(v->log, "zbench: %s measured again: %s\n", x->key, e.msg);
			break;
		}
		if (!again.executed || !(again.meas_step_s > 0))
			break;
		v->again_item[v->nagain] = i;
		v->again_s[v->nagain++] = again.meas_step_s;
	}
}

/* One round: every configuration not yet out of the suite, forward in even rounds and
 * backward in odd ones, within the budget, until Ctrl-C. */
static zb_status run_round(validation *v, int round, zb_error *err)
{
	const zb_validate_opts *o = v->o;
	if (o->rounds > 1 && !o->json)
		fprintf(v->out, "%sround %d of %d (%s)\n", round ? "\n" : "", round + 1, o->rounds,
			round % 2 ? "backward" : "forward");
	for (int k = 0; k < v->n; k++) {
		int i = round % 2 ? v->n - 1 - k : k;
		item *x = &v->it[i];
		if (x->nround < round)
			continue; /* out of the suite: not run, or failed, in an earlier round */
		if (x->skipped) { /* left out before the first round */
			print_row(v, i, x, NULL, NAN, NULL);
			continue;
		}
		char buf[64];
		const char *why = skip_reason(v, x, round, buf, sizeof buf);
		if (why) {
			if (!x->nround) {
				x->skipped = 1;
				snprintf(x->skip_why, sizeof x->skip_why, "%s", why);
			}
			print_row(v, i, x, NULL, NAN, why);
			continue;
		}
		int before = x->nround;
		zb_status st = run_one(v, x, err);
		if (st)
			return st;
		print_row(v, i, x, x->nround > before ? &x->round[before] : NULL, NAN, NULL);
	}
	return ZB_OK;
}

/* --extra-s: after the rounds, one more round at a time for the configuration least sure
 * then (zb_suite_least_sure), while its estimate fits the extra time and --budget. */
static zb_status run_extra(validation *v, zb_error *err)
{
	const zb_validate_opts *o = v->o;
	double until = zb_wall_s() + extra_s(o);
	double *se = zb_xmalloc((size_t)v->n * sizeof *se), *est = zb_xmalloc((size_t)v->n * sizeof *est);
	int *nround = zb_xmalloc((size_t)v->n * sizeof *nround);
	zb_status st = ZB_OK;
	while (extra_s(o) > 0 && !*v->stop && !st) {
		double now = zb_wall_s(), left = until - now, in_budget = o->budget - (now - v->t0);
		for (int i = 0; i < v->n; i++) {
			const item *x = &v->it[i];
			zb_suite_outcome o;
			nround[i] = x->skipped ? 0 : x->nround; /* failed in a later round: left out */
			se[i] = NAN;
			if (nround[i] >= 2) {
				mean_of_rounds(x, &o);
				se[i] = 100 * o.meas_se_s / o.meas_step_s;
			}
			est[i] = x->est_again_s;
		}
		int i = zb_suite_least_sure(se, nround, est, v->n, EXTRA_MIN_PCT, ROUNDS_MAX,
					    left < in_budget ? left : in_budget);
		if (i < 0)
			break;
		if (!v->nextra && !o->json)
			fprintf(v->out, "\nextra rounds (up to %g s), each for the configuration whose mean had the largest \u00b1 then:\n",
				extra_s(o));
		item *x = &v->it[i];
		int before = x->nround;
		st = run_one(v, x, err);
		v->nextra += x->nround > before; /* a failed one leaves the configuration out */
		if (!st)
			print_row(v, i, x, x->nround > before ? &x->round[before] : NULL, NAN, NULL);
	}
	free(se);
	free(est);
	free(nround);
	return st;
}

static zb_status run_all(validation *v, zb_error *err)
{
	const zb_validate_opts *o = v->o;
	if (o->rounds > 1)
		trim_to_budget(v);
	print_table_header(v, NULL);
	v->t0 = zb_wall_s();
	zb_status st = ZB_OK;
	for (int r = 0; r < o->rounds && !st && !*v->stop; r++)
		st = run_round(v, r, err);
	if (!st)
		st = run_extra(v, err);
	for (int i = 0; i < v->n; i++)
		combine_rounds(&v->it[i]);
	if (o->rounds > 1) {
		char title[96];
		if (v->nextra)
			snprintf(title, sizeof title, "the mean of %d rounds, %d extra (change: last round against first):",
				 o->rounds, v->nextra);
		else
			snprintf(title, sizeof title, "the mean of %d rounds (change: last round against first):",
				 o->rounds);
		print_table_header(v, title);
		for (int i = 0; i < v->n; i++)
			print_row(v, i, &v->it[i], v->it[i].ran ? &v->it[i].out : NULL, round_change_pct(&v->it[i]), NULL);
	}
	if (!st)
		repeat_first(v);
	v->wall = zb_wall_s() - v->t0;
	return st;
}

/* ---- summarize and report ------------------------------------------------------------------ */

/* The standard error of o's measured step (0 when not known: no spread to excuse it). */
static double se_or_0(const zb_suite_outcome *o)
{
	return isfinite(o->meas_se_s) ? o->meas_se_s : 0;
}

/* Step-time errors over the executed configurations and busy-time errors per resource. */
static void summarize_errors(const validation *v, summary *m)
{
	int n = v->n;
	double *pr = zb_xmalloc((size_t)n * sizeof *pr), *me = zb_xmalloc((size_t)n * sizeof *me);
	double *noise = zb_xmalloc((size_t)n * sizeof *noise);
	int k = 0;
	for (int i = 0; i < n; i++)
		if (v->it[i].ran) {
			pr[k] = v->it[i].out.pred_step_s;
			me[k] = v->it[i].out.meas_step_s;
			noise[k] = noise_pct(&v->it[i]);
			double e = fabs(zb_rel_err(pr[k], me[k]));
			m->within3 += e <= 0.03;
			m->within8 += e <= 0.08;
			m->within_noise += isfinite(noise[k]) && 100 * e <= 2 * noise[k]; /* false for NaN */
			k++;
		}
	m->noise_median_pct = zb_median(noise, k);
	for (int i = 0; i < n; i++) /* noise's room again: each configuration's change between rounds */
		if (isfinite(round_change_pct(&v->it[i])))
			noise[m->ndrift++] = fabs(round_change_pct(&v->it[i]));
	m->drift_median_pct = m->ndrift ? zb_median(noise, m->ndrift) : NAN;
	free(noise);
	m->mape = zb_mape(pr, me, k, &m->used);
	m->worst = zb_max_abs_err(pr, me, k);
	/* busy time of each resource, where it was measured */
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		int c = 0;
		for (int i = 0; i < n; i++)
			if (v->it[i].ran && v->it[i].out.meas_busy_s[r] > 1e-4 * v->it[i].out.meas_step_s) {
				pr[c] = v->it[i].out.pred_busy_s[r];
				me[c] = v->it[i].out.meas_busy_s[r];
				c++;
			}
		m->busy_mape[r] = zb_mape(pr, me, c, NULL);
	}
	free(pr);
	free(me);
	for (int i = 0; i < n; i++)
		m->skipped += !v->it[i].ran;
	/* the order of configurations by step time */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i && v->it[i].ran; j++) {
			const zb_suite_outcome *a = &v->it[i].out, *b = &v->it[j].out;
			if (!v->it[j].ran || fabs(a->meas_step_s / b->meas_step_s - 1) <= 0.03)
				continue;
			int swap = (a->meas_step_s > b->meas_step_s) != (a->pred_step_s > b->pred_step_s);
			m->order_pairs++;
			m->order_swaps += swap;
			if (fabs(a->meas_step_s - b->meas_step_s) > 2 * hypot(se_or_0(a), se_or_0(b))) {
				m->order_pairs_sure++;
				m->order_swaps_sure += swap;
			}
		}
}

/* Each Twin-Flow setting's speedup over its group's reference (plain offload of the
 * same shape), predicted against measured; printed as a table unless --json. */
static void summarize_speedups(const validation *v, summary *m)
{
	const zb_validate_opts *o = v->o;
	m->speedups = json_array();
	m->speed_worst = NAN;
	for (int i = 0; i < v->n; i++) {
		const item *x = &v->it[i];
		if (!x->ran || !x->e->group || zb_suite_is_reference(x->e))
			continue;
		const item *ref = NULL;
		for (int j = 0; j < v->n; j++)
			if (v->it[j].ran && v->it[j].e->group == x->e->group && zb_suite_is_reference(v->it[j].e))
				ref = &v->it[j];
		if (!ref)
			continue;
		double ps = ref->out.pred_step_s / x->out.pred_step_s;
		double ms = ref->out.meas_step_s / x->out.meas_step_s;
		double e = zb_rel_err(ps, ms);
		if (m->nspeed == 0 && !o->json) {
			fprintf(v->out, "\nspeedup over plain offload (policy offload, ratio 1) of the same shape:\n");
			fprintf(v->out, "%3s  %-44s %10s %10s %8s\n", "#", "configuration", "predicted", "measured", "error");
			fprintf(v->out, "%3s  %-44s %10s %10s %8s\n", "", "", "x", "x", "%");
		}
		if (!o->json)
			fprintf(v->out, "%3d  %-44s %10.3f %10.3f %+8.1f\n", i + 1, x->key, ps, ms, 100 * e);
		m->nspeed++;
		m->speed_ok += fabs(e) <= 0.05;
		m->speed_miss_sure += fabs(e) > 0.05 + 2 * hypot(se_or_0(&ref->out) / ref->out.meas_step_s,
								  se_or_0(&x->out) / x->out.meas_step_s);
		if (isnan(m->speed_worst) || fabs(e) > m->speed_worst)
			m->speed_worst = fabs(e);
		json_array_append_new(m->speedups, json_pack("{s:s, s:o, s:o, s:o}", "key", x->key, "predicted", num(ps),
							     "measured", num(ms), "error", num(e)));
	}
}

static void summarize(const validation *v, summary *m)
{
	memset(m, 0, sizeof *m);
	summarize_errors(v, m);
	summarize_speedups(v, m);
	m->met_mape = m->used > 0 && m->mape <= 0.03;
	m->met_worst = m->used > 0 && m->worst <= 0.08;
	m->met_speed = m->nspeed > 0 && m->speed_ok == m->nspeed;
}

/* One configuration; planned: --list, nothing run (no busy times, no stored id). */
static json_t *item_json(const item *x, int planned)
{
	json_t *o = json_object();
	json_object_set_new(o, "key", json_string(x->key));
	json_object_set_new(o, "fits", json_boolean(x->fits));
	json_object_set_new(o, "executed", json_boolean(x->ran));
	if (!x->ran && x->skip_why[0])
		json_object_set_new(o, "skipped", json_string(x->skip_why));
	json_object_set_new(o, "predicted_step_s", num(x->ran ? x->out.pred_step_s : x->pred_s));
	json_object_set_new(o, "measured_step_s", num(x->ran ? x->out.meas_step_s : NAN));
	json_object_set_new(o, "steps", json_integer(x->steps));
	json_object_set_new(o, "measured_se_s", num(x->ran ? x->out.meas_se_s : NAN));
	json_object_set_new(o, "error", num(x->ran ? zb_rel_err(x->out.pred_step_s, x->out.meas_step_s) : NAN));
	json_object_set_new(o, "estimate_s", num(x->est_s));
	json_object_set_new(o, "estimate_again_s", num(x->est_again_s)); /* a later round's, or --repeat's */
	json_object_set_new(o, "wall_s", num(x->ran ? x->out.wall_s : NAN));
	if (planned)
		return o;
	json_object_set_new(o, "config_id", json_integer(x->out.config_id));
	json_t *rounds = json_array();
	for (int k = 0; k < x->nround; k++) {
		const zb_suite_outcome *r = &x->round[k];
		json_array_append_new(rounds, json_pack("{s:I, s:o, s:o, s:o}", "config_id", (json_int_t)r->config_id,
							"measured_step_s", num(r->meas_step_s), "measured_se_s",
							num(r->meas_se_s), "wall_s", num(r->wall_s)));
	}
	json_object_set_new(o, "rounds", rounds);
	json_object_set_new(o, "round_change", num(round_change_pct(x) / 100));
	json_t *b = json_object();
	for (int r = 0; r < ZB_RES_COUNT; r++)
		json_object_set_new(b, zb_resource_name(r),
				    json_pack("{s:o, s:o}", "predicted", num(x->out.pred_busy_s[r]), "measured",
					      num(x->ran ? x->out.meas_busy_s[r] : NAN)));
	json_object_set_new(o, "busy_s", b);
	return o;
}

/* The settings and every configuration (predicted; measured where run). */
static json_t *plan_json(const validation *v, int planned)
{
	const zb_validate_opts *o = v->o;
	json_t *root = json_object(), *arr = json_array();
	for (int i = 0; i < v->n; i++)
		json_array_append_new(arr, item_json(&v->it[i], planned));
	json_object_set_new(root, "suite", json_string(v->suite->name));
	json_object_set_new(root, "hw", json_string(o->hw ? o->hw : "h200-machine"));
	json_object_set_new(root, "warmup", json_integer(o->warmup));
	json_object_set_new(root, "steps", json_integer(o->steps));
	json_object_set_new(root, "measure_s", json_real(o->measure_s));
	json_object_set_new(root, "max_steps", json_integer(o->max_steps));
	json_object_set_new(root, "repeat", json_integer(o->repeat));
	json_object_set_new(root, "rounds", json_integer(o->rounds));
	json_object_set_new(root, "extra_s", json_real(extra_s(o)));
	json_object_set_new(root, "extra_rounds", json_integer(v->nextra));
	json_object_set_new(root, "expected_s", json_real(v->total_est));
	json_object_set_new(root, "budget_s", json_integer(o->budget));
	json_object_set_new(root, "configs", arr);
	return root;
}

/* --json: every configuration and the summary; takes m->speedups. */
static void report_json(const validation *v, summary *m)
{
	json_t *root = plan_json(v, 0);
	json_object_set_new(root, "run_id", json_integer(v->run_id));
	json_t *busy = json_object();
	for (int r = 0; r < ZB_RES_COUNT; r++)
		json_object_set_new(busy, zb_resource_name(r), num(m->busy_mape[r]));
	json_object_set_new(root, "summary",
			    json_pack("{s:i, s:i, s:o, s:o, s:i, s:i, s:i, s:o, s:o, s:o, s:f, s:f}", "executed", m->used,
				      "skipped", m->skipped, "mape", num(m->mape), "max_abs_err", num(m->worst),
				      "within_3pct", m->within3, "within_8pct", m->within8, "within_noise",
				      m->within_noise, "noise_median_pct", num(m->noise_median_pct), "round_change_median_pct",
				      num(m->drift_median_pct), "busy_mape", busy,
				      "expected_s", v->total_est, "wall_s", v->wall));
	json_object_set_new(root, "order", json_pack("{s:i, s:i, s:b, s:i, s:i}", "pairs", m->order_pairs, "swapped",
						     m->order_swaps, "preserved", m->order_swaps == 0,
						     "pairs_beyond_noise", m->order_pairs_sure, "swapped_beyond_noise",
						     m->order_swaps_sure));
	json_object_set_new(root, "speedup_misses_beyond_noise", json_integer(m->speed_miss_sure));
	json_object_set_new(root, "speedups", m->speedups);
	m->speedups = NULL;
	json_t *rep = json_array();
	for (int k = 0; k < v->nagain; k++) {
		const item *x = &v->it[v->again_item[k]];
		json_array_append_new(rep, json_pack("{s:s, s:o, s:o, s:o}", "key", x->key, "measured_step_s",
						     num(x->out.meas_step_s), "again_step_s", num(v->again_s[k]),
						     "change", num(zb_rel_err(v->again_s[k], x->out.meas_step_s))));
	}
	json_object_set_new(root, "repeats", rep);
	zb_json_print(v->out, root);
	json_decref(root);
}

static void report_text(const validation *v, const summary *m)
{
	const zb_validate_opts *o = v->o;
	char noise[32] = "-";
	if (isfinite(m->noise_median_pct))
		snprintf(noise, sizeof noise, "%.2f%%", m->noise_median_pct);
	fprintf(v->out, "\nstep time over %d executed configuration%s (%d skipped): MAPE %.2f%% (target <= 3%%: %s), worst "
		"%.2f%% (target <= 8%%: %s); %d within 3%%, %d within 8%%, %d within the noise (2 standard errors); "
		"noise median %s\n",
		m->used, m->used == 1 ? "" : "s", m->skipped, 100 * m->mape, m->met_mape ? "met" : "NOT MET",
		100 * m->worst, m->met_worst ? "met" : "NOT MET", m->within3, m->within8, m->within_noise, noise);
	if (m->nspeed)
		fprintf(v->out, "speedups: %d of %d within 5%% (worst %.2f%%): %s\n", m->speed_ok, m->nspeed,
			100 * m->speed_worst, m->met_speed ? "met" : "NOT MET");
	if (m->ndrift)
		fprintf(v->out, "rounds: the last measurement of each configuration differs from its first by a median %.2f%% "
			"(%d configurations); %d extra rounds\n",
			m->drift_median_pct, m->ndrift, v->nextra);
	fprintf(v->out, "order by step time: %s (%d of %d pairs more than 3%% apart predicted the other way round)\n",
		m->order_swaps ? "NOT preserved" : "preserved", m->order_swaps, m->order_pairs);
	fprintf(v->out, "beyond the noise (2 standard errors): %d speedup%s off by more than 5%%, %d of %d pairs swapped\n",
		m->speed_miss_sure, m->speed_miss_sure == 1 ? "" : "s", m->order_swaps_sure, m->order_pairs_sure);
	fprintf(v->out, "busy-time MAPE by resource:");
	for (int r = 0; r < ZB_RES_COUNT; r++)
		if (isfinite(m->busy_mape[r]))
			fprintf(v->out, " %s %.1f%%", zb_resource_name(r), 100 * m->busy_mape[r]);
	for (int k = 0; k < v->nagain; k++) {
		const item *x = &v->it[v->again_item[k]];
		fprintf(v->out, "%s %s: %.2f ms, at the end again %.2f ms (%+.1f%%)\n", k ? "        " : "measured again:", x->key,
			1e3 * x->out.meas_step_s, 1e3 * v->again_s[k], 100 * zb_rel_err(v->again_s[k], x->out.meas_step_s));
	}
	fprintf(v->out, "\n# wall %.0f s (expected %.0f s)%s%s\n", v->wall, v->total_est, v->run_id ? "; zbench compare " : "",
		v->run_id ? "<run> for per-part errors" : "");
	if (v->run_id)
		fprintf(v->out, "# stored run %lld, configurations %lld-%lld in %s: zbench compare %lld\n",
			(long long)v->run_id, (long long)v->first_config, (long long)v->last_config, o->db,
			(long long)v->run_id);
}

/* The run's status row, then close. */
static void finish_run(validation *v, zb_status st)
{
	if (!v->store)
		return;
	zb_error e2 = { 0 };
	const char *status = st || v->failed ? "failed" : *v->stop ? "interrupted" : "ok";
	if (!zb_store_begin(v->store, &e2) && !zb_store_finish_run(v->store, v->run_id, status, &e2))
		zb_store_commit(v->store, &e2);
	else
		zb_store_rollback(v->store);
	zb_store_close(v->store);
}

/* ---- the library calls (validation.h) ---------------------------------------------------- */

zb_status zb_validate_defaults(zb_validate_opts *o, zb_error *err)
{
	const zb_suite *s = NULL;
	zb_error ignored;
	zb_suite_measure m = { 0 };
	if (zb_suite_find(o->suite, &s, &ignored) == ZB_OK)
		m = s->measure;
	if (o->warmup < 0)
		o->warmup = m.steps ? m.warmup : 2;
	if (o->steps < 0)
		o->steps = m.steps ? m.steps : 3;
	if (o->repeat < 0)
		o->repeat = m.repeat;
	if (o->rounds < 0)
		o->rounds = m.rounds > 1 ? m.rounds : 1;
	if (o->extra_s < 0)
		o->extra_s = m.extra_s;
	if (o->measure_s < 0) {
		o->measure_s = m.measure_s;
		if (!o->max_steps && m.max_steps >= o->steps)
			o->max_steps = m.max_steps;
	}
	if (o->max_steps && o->max_steps < o->steps)
		return zb_fail(err, ZB_E_INPUT, "--max-steps %d is below --steps %d", o->max_steps, o->steps);
	if (!o->max_steps) /* not given: the default, never below --steps */
		o->max_steps = o->steps > MAX_STEPS_DEFAULT ? o->steps : MAX_STEPS_DEFAULT;
	return ZB_OK;
}

zb_status zb_validation_plan(const zb_validate_opts *opt, FILE *out, FILE *log, zb_validation **out_v,
			     zb_error *err)
{
	validation *v = zb_xcalloc(1, sizeof *v);
	v->opt = *opt;
	v->o = &v->opt;
	v->out = out;
	v->log = log;
	zb_status st = plan(v, err);
	if (st) {
		zb_validation_free(v);
		v = NULL;
	}
	*out_v = v;
	return st;
}

void zb_validation_free(zb_validation *v)
{
	if (!v)
		return;
	zb_suite_close(v->suite);
	free(v->it);
	free(v);
}

void zb_validation_header(const zb_validation *v, FILE *f)
{
	print_header(v, f);
}

void zb_validation_list(const zb_validation *v)
{
	print_list(v);
}

json_t *zb_validation_plan_json(const zb_validation *v)
{
	return plan_json(v, 1);
}

zb_status zb_validation_run(zb_validation *v, const char *command, volatile sig_atomic_t *stop,
			    zb_validation_result *res, zb_error *err)
{
	memset(res, 0, sizeof *res);
	v->stop = stop;
	zb_status st = open_run(v, command, err);
	if (st)
		return st;
	zb_host_pool_enable(1); /* pinned buffers kept between configurations (exec/host_pool.h) */
	st = run_all(v, err);
	zb_host_pool_enable(0); /* and given back */
	summary m;
	summarize(v, &m);
	if (v->o->json)
		report_json(v, &m);
	else
		report_text(v, &m);
	json_decref(m.speedups);
	finish_run(v, st);
	res->failed = v->failed;
	res->met = m.met_mape && m.met_worst && (m.met_speed || m.nspeed == 0);
	return st;
}
