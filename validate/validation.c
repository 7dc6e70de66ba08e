/*
 * cmd_validate.c - zbench validate: a built-in suite of configurations (suite.h)
 * through both the executor and the simulator (with --hw, typically the profile
 * zbench calibrate wrote), each stored with both timelines (zbench compare reads
 * them), reporting each configuration's step-time error, the mean absolute
 * percentage error, and the speedup of each Twin-Flow ratio over plain offload,
 * predicted against measured.
 *
 * Targets (issue 5): MAPE <= 3%, worst <= 8%, speedups within 5%. --strict exits 1
 * when one is missed; otherwise the verdict is printed and the exit code only
 * says whether everything ran.
 *
 * Time: every configuration's cost is estimated before it starts (suite.h) and
 * printed, with the total; a configuration whose estimate would take the run past
 * --budget (default 480 s, under the GPU machine's 10-minute command limit) is
 * skipped and listed as such.
 *
 * Steps: every configuration runs --steps measured steps, or with --measure-s S about
 * S seconds of them (issue 12): ceil(S / predicted step) clamped to --steps ..
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
 * moves every configuration alike (run E: CPU Adam alone 7 % faster at the end than at
 * the start); each round weighs by its precision, the same unless its steps varied by
 * more than the host repeats itself (zb_rounds_mean); the mean's standard error is the
 * larger of the rounds' own and their spread.
 *
 * Extra rounds: with --extra-s S (and two rounds or more), after the rounds up to S seconds
 * go to further rounds, one at a time, each for the configuration whose mean is least sure
 * then (the largest standard error, at least EXTRA_MIN_PCT of it; zb_suite_least_sure).
 * The rounds of one configuration on every core or with pageable copies differ by up to
 * 20-27 % on some leases where the others differ by 2 % (runs G and H): the time goes
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
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/options.h"
#include "cli/stop.h"
#include "report/report.h"
#include "validate/published.h"
#include "validate/suite.h"
#include "exec/executor.h"
#include "exec/host_pool.h"
#include "analysis/compare.h"
#include "sim/predict.h"


/* the command line */
static struct validate_opts {
	const char *hw, *suite, *db, *check;
	int limit, warmup, steps, budget, list, strict, json, no_db, record;
	double measure_s; /* 0: every configuration runs `steps` measured steps */
	int max_steps;    /* with measure_s; 0 until parsed: 64, or steps when that is more */
	int repeat;       /* the first `repeat` executed configurations again at the end (-1: the suite's) */
	int rounds;       /* every configuration measured in that many rounds (-1: the suite's, else 1) */
	double extra_s;   /* after the rounds, seconds of extra rounds for the least sure (-1: the suite's) */
} vo;

#define REPEAT_MAX 10
#define ROUNDS_MAX 8       /* rounds and extra rounds of one configuration */
#define EXTRA_MIN_PCT 1.0  /* a mean surer than this (standard error, % of it) gets no extra round */

#define MAX_STEPS_DEFAULT 64

static const zb_flag flags[] = {
	ZB_STRING("hw", &vo.hw, "<machine|file>", "hardware of the simulator side (default h200-machine)"),
	ZB_STRING("suite", &vo.suite, "full | quick", "the suite (default full)"),
	ZB_INT("limit", &vo.limit, 1, 1000, "<n>", "the first <n> configurations only"),
	ZB_INT("warmup", &vo.warmup, 0, 100, "<n>", "warm-up steps (default 2; the suite's)"),
	ZB_INT("steps", &vo.steps, 2, 100, "<n>", "measured steps (default 3; the least with --measure-s; the suite's)"),
	ZB_REAL("measure-s", &vo.measure_s, 0, 3600, "<seconds>",
		"about <seconds> of measured steps per configuration: ceil(<seconds> /\n"
		"predicted step) within --steps .. --max-steps (default 0: --steps each;\n"
		"the suite's: fid 3)"),
	ZB_INT("max-steps", &vo.max_steps, 2, 1000, "<n>",
	       "with --measure-s: at most <n> measured steps (default 64; the suite's: fid 48)"),
	ZB_INT("repeat", &vo.repeat, 0, REPEAT_MAX, "<n>",
	       "measure the first <n> executed configurations again at the end, not\n"
	       "stored: how far the host moved during the suite (default 0; fid 2)"),
	ZB_INT("rounds", &vo.rounds, 1, ROUNDS_MAX, "<n>",
	       "measure every configuration in <n> rounds, the suite forward, then\n"
	       "backward, ...; the mean of the rounds cancels a steady drift of the host\n"
	       "(default 1; fid 2)"),
	ZB_REAL("extra-s", &vo.extra_s, 0, 3600, "<seconds>",
		"with --rounds >= 2: then up to <seconds> of extra rounds, one at a\n"
		"time, each for the configuration whose mean is least sure (standard\n"
		"error >= 1 % of it); its mean counts every round (default 0; fid 120)"),
	ZB_INT("budget", &vo.budget, 1, 86400, "<seconds>", "skip configurations past this estimate (default 480)"),
	ZB_SWITCH("list", &vo.list, "print the suite with estimated times, run nothing"),
	ZB_SWITCH("strict", &vo.strict, "exit 1 when a target is missed"),
	ZB_SWITCH("json", &vo.json, "results as JSON"),
	ZB_STRING("db", &vo.db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	ZB_SWITCH("no-db", &vo.no_db, "do not store results"),
	ZB_STRING("check", &vo.check, "<errors.tsv>", "with --published: exit 1 when a case is worse than recorded"),
	ZB_SWITCH("record", &vo.record, "with --published: print the record of the errors"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench validate [--hw <machine|file>] [--suite full | quick] [--limit <n>]\n"
		   "                       [--warmup <n>] [--steps <n>] [--measure-s <seconds>] [--max-steps <n>]\n"
		   "                       [--rounds <n>] [--extra-s <seconds>] [--repeat <n>] [--budget <seconds>]\n"
		   "                       [--list]\n"
		   "                       [--strict] [--json] [--db <path> | --no-db]\n"
		   "       zbench validate --published[=<file>] [--check <errors.tsv>] [--record]\n\n"
		   "Run every configuration of a suite on the GPU and through the simulator (with --hw,\n"
		   "e.g. the profile zbench calibrate wrote), store both timelines, and report each\n"
		   "step-time error, the mean absolute percentage error (target <= 3%%, worst <= 8%%) and\n"
		   "the predicted against measured speedup of each Twin-Flow ratio over plain offload\n"
		   "(target within 5%%). --list prints the suite with estimated times and runs nothing.\n"
		   "Defaults: suite full, 2 warm-up + 3 measured steps (suite fid: 4 warm-up, at least 8\n"
		   "and about 3 s of measured steps, at most 48), budget 480 s (configurations whose\n"
		   "estimate would exceed it are skipped). --strict: exit 1 when a target is missed.\n"
		   "--measure-s gives each configuration a measured time instead of a step count; the\n"
		   "table's \"±\" is the standard error of each measured mean (%% of it). --repeat <n>\n"
		   "measures the first <n> configurations again at the end (the host's drift); --rounds\n"
		   "<n> measures every configuration <n> times, the suite forward then backward, and\n"
		   "takes the mean (fid: 2 rounds); --extra-s <seconds> then measures the least sure\n"
		   "configurations again, one round at a time (fid: 120 s).\n"
		   "zbench validate --deepspeed [...] measures real DeepSpeed instead (--deepspeed --help).\n"
		   "--published: predict the published offload measurements of <file> (default\n"
		   "data/published-offload.tsv) from the presets, no GPU: each error and the single-GPU\n"
		   "MAPE; --check exits 1 when a case is worse than recorded, --record prints the record.\n\n"
		   "options:\n");
	zb_flags_usage(f, flags);
}

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
typedef struct validation {
	const zb_suite *suite;
	int n;
	item *it;
	double total_est, t0, wall;
	zb_store *store;
	int64_t run_id;
	int nagain;                      /* configurations measured again (--repeat) */
	int nextra;                      /* extra rounds run (--extra-s) */
	int again_item[REPEAT_MAX];      /* which */
	double again_s[REPEAT_MAX];      /* their second measured step */
	int device_set, failed;
} validation;

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
static int steps_for(double pred_s)
{
	if (vo.measure_s <= 0 || !(pred_s > 0) || !isfinite(pred_s))
		return vo.steps;
	double n = ceil(vo.measure_s / pred_s);
	return n < vo.steps ? vo.steps : n > vo.max_steps ? vo.max_steps : (int)n;
}

/* Each round's share of n measured steps: at least 3, so that a round has a spread. */
static int round_steps(int n)
{
	int k = (n + vo.rounds - 1) / vo.rounds;
	return vo.rounds == 1 || k >= 3 ? k : 3;
}

/* Configuration x with `steps` measured steps, predicted: fits, predicted step, cost. */
static zb_status plan_one(item *x, int steps, zb_error *err)
{
	zb_prediction p;
	zb_status st;
	if ((st = zb_suite_config(x->e, vo.hw, vo.warmup, steps, &x->c, err)) || (st = zb_predict(&p, &x->c, err)))
		return st;
	x->steps = steps;
	x->fits = p.mem.fits && p.simulated;
	snprintf(x->reason, sizeof x->reason, "%s", p.mem.reason);
	x->est_s = x->est_again_s = zb_suite_estimate_s(&x->c, &p);
	x->pin_s = zb_suite_pin_s(&p);
	x->host_bytes = p.mem.host_bytes;
	x->pred_s = x->fits ? zb_step_time_window(&p.graph, p.res.end, vo.warmup) : NAN;
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
static double est_rounds(const item *x)
{
	return x->est_s + (vo.rounds - 1) * x->est_again_s;
}

/* The seconds of extra rounds (--extra-s; they need the spread of two rounds). */
static double extra_s(void)
{
	return vo.rounds > 1 ? vo.extra_s : 0;
}

/* Every configuration built and predicted: fits, predicted step, estimated cost. With
 * --measure-s the step count comes from the prediction with --steps, and the
 * configuration is built and predicted again with its own (est_s then covers the
 * longer run, so --budget sees it). */
static zb_status plan(validation *v, zb_error *err)
{
	zb_status st = zb_suite_find(vo.suite, &v->suite, err);
	if (st)
		return st;
	v->n = vo.limit && vo.limit < v->suite->n ? vo.limit : v->suite->n;
	v->it = zb_xcalloc((size_t)v->n, sizeof *v->it);
	for (int i = 0; i < v->n; i++) {
		item *x = &v->it[i];
		x->e = &v->suite->entries[i];
		zb_suite_key(x->e, x->key, sizeof x->key);
		if ((st = plan_one(x, vo.steps, err)))
			return st;
		int n = x->fits ? round_steps(steps_for(x->pred_s)) : vo.steps;
		if (n != vo.steps && (st = plan_one(x, n, err)))
			return st;
	}
	discount_pinning(v);
	for (int i = 0; i < v->n; i++)
		v->total_est += est_rounds(&v->it[i]);
	v->total_est += extra_s();
	for (int i = 0, k = 0; i < v->n && k < vo.repeat; i++) /* --repeat: the first ones again */
		if (v->it[i].fits) {
			v->total_est += v->it[i].est_again_s;
			k++;
		}
	return ZB_OK;
}

static void print_header(const validation *v, FILE *out)
{
	char steps[256];
	int l;
	if (vo.measure_s > 0)
		l = snprintf(steps, sizeof steps, "%d warm-up steps, measured steps: %d, or %g s of steps (at most %d)",
			     vo.warmup, vo.steps, vo.measure_s, vo.max_steps);
	else
		l = snprintf(steps, sizeof steps, "%d warm-up + %d measured steps", vo.warmup, vo.steps);
	if (vo.rounds > 1)
		l += snprintf(steps + l, sizeof steps - l, ", in %d rounds (forward, backward; each its share of the "
			      "steps and its own warm-up)", vo.rounds);
	if (extra_s() > 0)
		snprintf(steps + l, sizeof steps - l, ", then %g s of extra rounds for the least sure", extra_s());
	fprintf(out, "# zbench %s%s%s validate: suite %s (%d of %d configurations), hw %s, %s\n", ZB_VERSION,
		ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, v->suite->name, v->n, v->suite->n,
		vo.hw ? vo.hw : "h200-machine (default)", steps);
	fprintf(out, "# expected time %.0f s on the H200 machine (estimate: setup + predicted run + storing), budget "
		     "%d s\n",
		v->total_est, vo.budget);
}

/* --list: the suite with each estimate, nothing run. */
static void print_list(const validation *v)
{
	printf("%3s  %-44s %10s %6s %8s  %s\n", "#", "configuration", "predicted", "steps", "estimate", "");
	printf("%3s  %-44s %10s %6s %8s  %s\n", "", "", "ms/step", "", "s", "");
	for (int i = 0; i < v->n; i++) {
		const item *x = &v->it[i];
		char note[300] = "";
		if (!x->fits)
			snprintf(note, sizeof note, "does not fit: %s", x->reason);
		else if (x->e->group)
			snprintf(note, sizeof note, "speedup group %d%s", x->e->group,
				 zb_suite_is_reference(x->e) ? " (reference)" : "");
		printf("%3d  %-44s %10.2f %6d %8.1f  %s\n", i + 1, x->key, x->pred_s * 1e3, x->steps, x->est_s, note);
	}
}

/* ---- run --------------------------------------------------------------------------------- */

/* The runs row every configuration is stored under (committed at once). */
static zb_status open_run(validation *v, int argc, char **argv, zb_error *err)
{
	if (vo.no_db)
		return ZB_OK;
	char *cmd = zb_command_line(argc, argv);
	zb_run_info info = { .kind = "validate", .command = cmd, .version = ZB_VERSION, .git_commit = ZB_GIT_COMMIT };
	zb_status st = zb_store_open(&v->store, vo.db, ZB_STORE_WRITE_WAIT_MS, err);
	if (!st && !(st = zb_store_begin(v->store, err))) {
		st = zb_store_add_run(v->store, &info, &v->run_id, err);
		st = st ? st : zb_store_commit(v->store, err);
	}
	free(cmd);
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
	double elapsed = zb_wall_s() - v->t0, est = round ? x->est_again_s : x->est_s;
	if (zb_stop_requested)
		return "interrupted";
	if (!x->fits)
		return "does not fit";
	if (elapsed + est > vo.budget) {
		snprintf(buf, n, "over budget (%.0f + %.0f > %d s)", elapsed, est, vo.budget);
		return buf;
	}
	return NULL;
}

/* With several rounds, the configurations whose rounds would take the suite past
 * --budget by the estimates are left out of every round, from the end of the suite:
 * the first round must leave the others their time, and the rounds the extra ones theirs. */
static void trim_to_budget(validation *v)
{
	double total = extra_s();
	for (int i = 0; i < v->n; i++) {
		item *x = &v->it[i];
		if (!x->fits)
			continue;
		total += est_rounds(x);
		if (total > vo.budget && !x->skipped) {
			x->skipped = 1;
			snprintf(x->skip_why, sizeof x->skip_why, "over budget (%d rounds: %.0f > %d s)", vo.rounds,
				 total, vo.budget);
		}
	}
}

/* Execute and simulate one round of one configuration, committed on its own. A failure
 * on the GPU marks the item (its earlier rounds stand) and goes on (a broken CUDA
 * context makes the rest fail fast too; exit 1 at the end); a store failure stops the
 * suite. */
static zb_status run_one(validation *v, item *x, zb_error *err)
{
	zb_suite_run_opts ro = { .execute = 1, .warmup = vo.warmup, .timeline = 1, .store = v->store,
				 .run_id = v->run_id, .stop = &zb_stop_requested };
	zb_suite_outcome *o = &x->round[x->nround];
	zb_status st;
	if (v->store && (st = zb_store_begin(v->store, err)))
		return st;
	st = zb_suite_run(&x->c, &ro, o, err);
	if (v->store) {
		if (!st && !v->device_set && o->device[0]) {
			/* best effort: the run's rows stand without it */
			zb_error ignored;
			if (zb_store_set_run_device(v->store, v->run_id, o->device, &ignored) == ZB_OK)
				v->device_set = 1;
		}
		if (st)
			zb_store_rollback(v->store);
		else
			st = zb_store_commit(v->store, err);
	}
	if (st && st != ZB_E_STORE) {
		snprintf(x->skip_why, sizeof x->skip_why, "FAILED: %.55s", err->msg);
		fprintf(stderr, "zbench: %s failed: %s\n", x->key, err->msg);
		v->failed++;
		x->skipped = 1;
		return ZB_OK;
	}
	if (st)
		return st;
	if (!o->fits) {
		x->skipped = 1;
		snprintf(x->skip_why, sizeof x->skip_why, "does not fit (executor)");
		snprintf(x->reason, sizeof x->reason, "%s", o->reason);
	} else if (!o->executed) {
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

static void print_table_header(const char *title)
{
	if (vo.json)
		return;
	if (title)
		printf("\n%s\n", title);
	/* "±" is two bytes in UTF-8 and one column: padded by hand */
	printf("%3s  %-44s %10s %10s %8s %6s %6s %8s %8s%s\n", "#", "configuration", "predicted", "measured", "error",
	       "     \u00b1", "steps", "estimate", "wall", vo.rounds > 1 && title ? "   change" : "");
	printf("%3s  %-44s %10s %10s %8s %6s %6s %8s %8s%s\n", "", "", "ms/step", "ms/step", "%", "%", "", "s", "s",
	       vo.rounds > 1 && title ? "        %" : "");
	fflush(stdout);
}

/* Item x's row: o measured (a round, or the mean of x's rounds), or why it was not
 * (why, else x's skip_why); change: the rounds' change in %, printed unless NaN. */
static void print_row(int i, const item *x, const zb_suite_outcome *o, double change, const char *why)
{
	if (vo.json)
		return;
	char noise[16] = "-", chg[16] = ""; /* fewer than two steady steps: no spread */
	if (o && isfinite(o->meas_se_s / o->meas_step_s))
		snprintf(noise, sizeof noise, "%.1f", 100 * o->meas_se_s / o->meas_step_s);
	if (isfinite(change))
		snprintf(chg, sizeof chg, " %+8.1f", change);
	if (o)
		printf("%3d  %-44s %10.2f %10.2f %+8.1f %6s %6d %8.1f %8.1f%s\n", i + 1, x->key, o->pred_step_s * 1e3,
		       o->meas_step_s * 1e3, 100 * zb_rel_err(o->pred_step_s, o->meas_step_s), noise, x->steps,
		       x->est_s, o->wall_s, chg);
	else
		printf("%3d  %-44s %10.2f %10s %8s %6s %6d %8.1f %8s  skipped: %s\n", i + 1, x->key, x->pred_s * 1e3,
		       "-", "-", "-", x->steps, x->est_s, "-", why ? why : x->skip_why);
	fflush(stdout);
}

/* --repeat: the first executed configurations once more, at the end and unstored, within
 * the budget: the same configuration minutes later says how much of an error the host's
 * own drift can be (fid run E: CPU Adam alone on 8 threads 100.9 / 98.3 / 93.5 ms a step
 * in three groups of one run). A failure here is reported and ends the repeats only. */
static void repeat_first(validation *v)
{
	for (int i = 0; i < v->n && v->nagain < vo.repeat && !zb_stop_requested; i++) {
		item *x = &v->it[i];
		if (!x->ran)
			continue;
		if (zb_wall_s() - v->t0 + x->est_again_s > vo.budget)
			break;
		zb_suite_run_opts ro = { .execute = 1, .warmup = vo.warmup, .stop = &zb_stop_requested };
		zb_suite_outcome again;
		zb_error e;
		if (zb_suite_run(&x->c, &ro, &again, &e) != ZB_OK) {
			fprintf(stderr, "zbench: %s measured again: %s\n", x->key, e.msg);
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
	if (vo.rounds > 1 && !vo.json)
		printf("%sround %d of %d (%s)\n", round ? "\n" : "", round + 1, vo.rounds,
		       round % 2 ? "backward" : "forward");
	for (int k = 0; k < v->n; k++) {
		int i = round % 2 ? v->n - 1 - k : k;
		item *x = &v->it[i];
		if (x->nround < round)
			continue; /* out of the suite: not run, or failed, in an earlier round */
		if (x->skipped) { /* left out before the first round */
			print_row(i, x, NULL, NAN, NULL);
			continue;
		}
		char buf[64];
		const char *why = skip_reason(v, x, round, buf, sizeof buf);
		if (why) {
			if (!x->nround) {
				x->skipped = 1;
				snprintf(x->skip_why, sizeof x->skip_why, "%s", why);
			}
			print_row(i, x, NULL, NAN, why);
			continue;
		}
		int before = x->nround;
		zb_status st = run_one(v, x, err);
		if (st)
			return st;
		print_row(i, x, x->nround > before ? &x->round[before] : NULL, NAN, NULL);
	}
	return ZB_OK;
}

/* --extra-s: after the rounds, one more round at a time for the configuration least sure
 * then (zb_suite_least_sure), while its estimate fits the extra time and --budget. */
static zb_status run_extra(validation *v, zb_error *err)
{
	double until = zb_wall_s() + extra_s();
	double *se = zb_xmalloc((size_t)v->n * sizeof *se), *est = zb_xmalloc((size_t)v->n * sizeof *est);
	int *nround = zb_xmalloc((size_t)v->n * sizeof *nround);
	zb_status st = ZB_OK;
	while (extra_s() > 0 && !zb_stop_requested && !st) {
		double now = zb_wall_s(), left = until - now, in_budget = vo.budget - (now - v->t0);
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
		if (!v->nextra && !vo.json)
			printf("\nextra rounds (up to %g s), each for the configuration whose mean had the largest \u00b1 then:\n",
			       extra_s());
		item *x = &v->it[i];
		int before = x->nround;
		st = run_one(v, x, err);
		v->nextra += x->nround > before; /* a failed one leaves the configuration out */
		if (!st)
			print_row(i, x, x->nround > before ? &x->round[before] : NULL, NAN, NULL);
	}
	free(se);
	free(est);
	free(nround);
	return st;
}

static zb_status run_all(validation *v, zb_error *err)
{
	if (vo.rounds > 1)
		trim_to_budget(v);
	print_table_header(NULL);
	v->t0 = zb_wall_s();
	zb_status st = ZB_OK;
	for (int r = 0; r < vo.rounds && !st && !zb_stop_requested; r++)
		st = run_round(v, r, err);
	if (!st)
		st = run_extra(v, err);
	for (int i = 0; i < v->n; i++)
		combine_rounds(&v->it[i]);
	if (vo.rounds > 1) {
		char title[96];
		if (v->nextra)
			snprintf(title, sizeof title, "the mean of %d rounds, %d extra (change: last round against first):",
				 vo.rounds, v->nextra);
		else
			snprintf(title, sizeof title, "the mean of %d rounds (change: last round against first):",
				 vo.rounds);
		print_table_header(title);
		for (int i = 0; i < v->n; i++)
			print_row(i, &v->it[i], v->it[i].ran ? &v->it[i].out : NULL, round_change_pct(&v->it[i]), NULL);
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
		if (m->nspeed == 0 && !vo.json) {
			printf("\nspeedup over plain offload (policy offload, ratio 1) of the same shape:\n");
			printf("%3s  %-44s %10s %10s %8s\n", "#", "configuration", "predicted", "measured", "error");
			printf("%3s  %-44s %10s %10s %8s\n", "", "", "x", "x", "%");
		}
		if (!vo.json)
			printf("%3d  %-44s %10.3f %10.3f %+8.1f\n", i + 1, x->key, ps, ms, 100 * e);
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
	json_t *root = json_object(), *arr = json_array();
	for (int i = 0; i < v->n; i++)
		json_array_append_new(arr, item_json(&v->it[i], planned));
	json_object_set_new(root, "suite", json_string(v->suite->name));
	json_object_set_new(root, "hw", json_string(vo.hw ? vo.hw : "h200-machine"));
	json_object_set_new(root, "warmup", json_integer(vo.warmup));
	json_object_set_new(root, "steps", json_integer(vo.steps));
	json_object_set_new(root, "measure_s", json_real(vo.measure_s));
	json_object_set_new(root, "max_steps", json_integer(vo.max_steps));
	json_object_set_new(root, "repeat", json_integer(vo.repeat));
	json_object_set_new(root, "rounds", json_integer(vo.rounds));
	json_object_set_new(root, "extra_s", json_real(extra_s()));
	json_object_set_new(root, "extra_rounds", json_integer(v->nextra));
	json_object_set_new(root, "expected_s", json_real(v->total_est));
	json_object_set_new(root, "budget_s", json_integer(vo.budget));
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
	zb_json_print(stdout, root);
	json_decref(root);
}

static void report_text(const validation *v, const summary *m)
{
	char noise[32] = "-";
	if (isfinite(m->noise_median_pct))
		snprintf(noise, sizeof noise, "%.2f%%", m->noise_median_pct);
	printf("\nstep time over %d executed configuration%s (%d skipped): MAPE %.2f%% (target <= 3%%: %s), worst "
	       "%.2f%% (target <= 8%%: %s); %d within 3%%, %d within 8%%, %d within the noise (2 standard errors); "
	       "noise median %s\n",
	       m->used, m->used == 1 ? "" : "s", m->skipped, 100 * m->mape, m->met_mape ? "met" : "NOT MET",
	       100 * m->worst, m->met_worst ? "met" : "NOT MET", m->within3, m->within8, m->within_noise, noise);
	if (m->nspeed)
		printf("speedups: %d of %d within 5%% (worst %.2f%%): %s\n", m->speed_ok, m->nspeed,
		       100 * m->speed_worst, m->met_speed ? "met" : "NOT MET");
	if (m->ndrift)
		printf("rounds: the last measurement of each configuration differs from its first by a median %.2f%% "
		       "(%d configurations); %d extra rounds\n",
		       m->drift_median_pct, m->ndrift, v->nextra);
	printf("order by step time: %s (%d of %d pairs more than 3%% apart predicted the other way round)\n",
	       m->order_swaps ? "NOT preserved" : "preserved", m->order_swaps, m->order_pairs);
	printf("beyond the noise (2 standard errors): %d speedup%s off by more than 5%%, %d of %d pairs swapped\n",
	       m->speed_miss_sure, m->speed_miss_sure == 1 ? "" : "s", m->order_swaps_sure, m->order_pairs_sure);
	printf("busy-time MAPE by resource:");
	for (int r = 0; r < ZB_RES_COUNT; r++)
		if (isfinite(m->busy_mape[r]))
			printf(" %s %.1f%%", zb_resource_name(r), 100 * m->busy_mape[r]);
	for (int k = 0; k < v->nagain; k++) {
		const item *x = &v->it[v->again_item[k]];
		printf("%s %s: %.2f ms, at the end again %.2f ms (%+.1f%%)\n", k ? "        " : "measured again:", x->key,
		       1e3 * x->out.meas_step_s, 1e3 * v->again_s[k], 100 * zb_rel_err(v->again_s[k], x->out.meas_step_s));
	}
	printf("\n# wall %.0f s (expected %.0f s)%s%s\n", v->wall, v->total_est, v->run_id ? "; zbench compare " : "",
	       v->run_id ? "<run> for per-part errors" : "");
	if (v->run_id)
		printf("# stored as run %lld in %s: zbench compare %lld\n", (long long)v->run_id, vo.db,
		       (long long)v->run_id);
}

/* The run's status row, then close. */
static void finish_run(validation *v, zb_status st)
{
	if (!v->store)
		return;
	zb_error e2 = { 0 };
	const char *status = st || v->failed ? "failed" : zb_stop_requested ? "interrupted" : "ok";
	if (!zb_store_begin(v->store, &e2) && !zb_store_finish_run(v->store, v->run_id, status, &e2))
		zb_store_commit(v->store, &e2);
	else
		zb_store_rollback(v->store);
	zb_store_close(v->store);
}

/* ---- command ------------------------------------------------------------------------------ */

/* What the command line left unset: the suite's measurement where it has one (suite.h
 * zb_suite_measure), else 2 warm-up + 3 measured steps. An unknown suite keeps validate's
 * defaults here; plan() names it. */
static void apply_defaults(void)
{
	const zb_suite *s = NULL;
	zb_error ignored;
	zb_suite_measure m = { 0 };
	if (zb_suite_find(vo.suite, &s, &ignored) == ZB_OK)
		m = s->measure;
	if (vo.warmup < 0)
		vo.warmup = m.steps ? m.warmup : 2;
	if (vo.steps < 0)
		vo.steps = m.steps ? m.steps : 3;
	if (vo.repeat < 0)
		vo.repeat = m.repeat;
	if (vo.rounds < 0)
		vo.rounds = m.rounds > 1 ? m.rounds : 1;
	if (vo.extra_s < 0)
		vo.extra_s = m.extra_s;
	if (vo.measure_s < 0) {
		vo.measure_s = m.measure_s;
		if (!vo.max_steps && m.max_steps >= vo.steps)
			vo.max_steps = m.max_steps;
	}
}

/* --published[=<file>] takes an optional value, which the flag table does not: it is
 * taken out of argv here and the rest parsed as usual. */
static const char *take_published(int *argc, char **argv)
{
	const char *file = NULL;
	int n = 0;
	for (int i = 0; i < *argc; i++) {
		if (i > 0 && !strcmp(argv[i], "--published"))
			file = "data/published-offload.tsv";
		else if (i > 0 && !strncmp(argv[i], "--published=", 12))
			file = argv[i] + 12;
		else
			argv[n++] = argv[i];
	}
	*argc = n;
	return file;
}

int cmd_validate(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--deepspeed"))
			return cmd_validate_deepspeed(argc, argv); /* real DeepSpeed instead of the executor */
	/* -1: not given, then the suite's measurement or validate's default (apply_defaults) */
	vo = (struct validate_opts){ .suite = "full", .db = ZB_STORE_DEFAULT_PATH, .warmup = -1, .steps = -1,
				     .measure_s = -1, .repeat = -1, .rounds = -1, .extra_s = -1,
				     .budget = 480 };
	const char *published = take_published(&argc, argv);
	int rc;
	if (!zb_flags_parse(argc, argv, flags, NULL, 0, NULL, usage, &rc))
		return rc;
	apply_defaults();
	if (vo.max_steps && vo.max_steps < vo.steps) {
		fprintf(stderr, "zbench: --max-steps %d is below --steps %d\n", vo.max_steps, vo.steps);
		return 2;
	}
	if (!vo.max_steps) /* not given: the default, never below --steps */
		vo.max_steps = vo.steps > MAX_STEPS_DEFAULT ? vo.steps : MAX_STEPS_DEFAULT;
	if (published)
		return zb_published_run(published, vo.check, vo.record);
	if (vo.check || vo.record) {
		fprintf(stderr, "zbench: %s needs --published\n", vo.check ? "--check" : "--record");
		return 2;
	}
	zb_error err = { 0 };
	validation v = { 0 };
	if (plan(&v, &err)) {
		free(v.it);
		return zb_report_error(&err);
	}
	print_header(&v, vo.json ? stderr : stdout);
	if (vo.list) {
		if (vo.json) {
			json_t *root = plan_json(&v, 1);
			zb_json_print(stdout, root);
			json_decref(root);
		} else
			print_list(&v);
		free(v.it);
		return 0;
	}
	if (!zb_exec_available(&err) || open_run(&v, argc, argv, &err)) {
		free(v.it);
		return zb_report_error(&err);
	}
	zb_stop_catch();
	zb_host_pool_enable(1); /* pinned buffers kept between configurations (exec/host_pool.h) */
	zb_status st = run_all(&v, &err);
	zb_host_pool_enable(0); /* and given back */
	summary m;
	summarize(&v, &m);
	if (vo.json)
		report_json(&v, &m);
	else
		report_text(&v, &m);
	json_decref(m.speedups);
	finish_run(&v, st);
	zb_stop_release();
	free(v.it);
	if (st)
		return zb_report_error(&err);
	if (v.failed) {
		fprintf(stderr, "zbench: %d configuration%s failed on the GPU\n", v.failed, v.failed == 1 ? "" : "s");
		return 1;
	}
	if (vo.strict && !(m.met_mape && m.met_worst && (m.met_speed || m.nspeed == 0)))
		return 1;
	return 0;
}
