/*
 * regress.c - throughput regression tests against a stored baseline (regress.h):
 *
 *   zbench baseline save TAG   runs a suite (suite.h) and stores each
 *                              configuration's median step time over the repeats
 *                              under TAG (results/records.h)
 *   zbench baseline list       the tags of a database
 *   zbench regress --baseline TAG
 *                              reruns the same configurations the same way and
 *                              exits 1 when one lost more than the tolerance
 *                              (default 3%) of its throughput, printing what moved
 *
 * Measured (default): every configuration runs on the GPU `repeats` times and the
 * median step time is judged, so one noisy run does not fail the test; only a
 * drop beyond the tolerance fails (a gain is reported). --sim: the simulator alone
 * (no GPU); predictions are deterministic, so any shift beyond the tolerance, up
 * or down, is a model change to review and fails. A configuration that no longer
 * fits fails; one missing from the suite now is reported.
 *
 * The hardware: regress uses the baseline's own hardware description (stored
 * with it) unless --hw names another. --plant-slowdown F multiplies every new
 * step time by 1 + F: a planted regression, to check that regress catches one
 * (tests, and the GPU visit). The baseline's rows: runs.kind = 'baseline' with its
 * configs and predictions, plus baselines / baseline_results (records.h).
 */
#include "validate/regress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/stats.h"
#include "common/version.h"
#include "report/report.h"
#include "validate/suite.h"
#include "exec/executor.h"
#include "results/query.h"
#include "results/records.h"
#include "analysis/compare.h"
#include "inputs/hwfile.h"

/* Run one configuration `repeats` times (once with sim); the median step time. */
static zb_status measure(const zb_config *c, const zb_regress_opts *o, zb_store *store, int64_t run_id,
			 zb_baseline_result *res, int *fits, char *reason, size_t rn, zb_error *err)
{
	int reps = o->sim ? 1 : o->repeats;
	res->nsamples = 0;
	*fits = 1;
	double tokens = 0;
	for (int i = 0; i < reps; i++) {
		zb_suite_outcome out;
		zb_suite_run_opts ro = { .execute = !o->sim, .warmup = o->warmup, .store = i == 0 ? store : NULL,
					 .run_id = run_id };
		zb_status st = zb_suite_run(c, &ro, &out, err);
		if (st)
			return st;
		if (i == 0)
			res->config_id = out.config_id;
		if (!out.fits) {
			*fits = 0;
			snprintf(reason, rn, "%s", out.reason);
			break;
		}
		double step = o->sim ? out.pred_step_s : out.meas_step_s;
		if (!(step > 0))
			return zb_fail(err, ZB_E_INTERNAL, "no step time for %s (run interrupted?)", res->key);
		res->samples[res->nsamples++] = step * (1 + o->plant);
		tokens = out.tokens_per_step;
	}
	res->step_time_s = *fits ? zb_median(res->samples, res->nsamples) : NAN;
	res->tokens_per_s = *fits ? tokens / res->step_time_s : NAN;
	return ZB_OK;
}

static zb_status open_db(const zb_regress_opts *o, int must_exist, zb_store **s, zb_error *err)
{
	if (must_exist && access(o->db, F_OK) != 0)
		return zb_fail(err, ZB_E_INPUT, "no database '%s' (give --db)", o->db);
	return zb_store_open(s, o->db, ZB_STORE_WRITE_WAIT_MS, err);
}

/* ---- baseline save / list ------------------------------------------------------------ */

zb_status zb_baseline_list(const zb_regress_opts *o, zb_error *err)
{
	zb_store *s;
	zb_status st = open_db(o, 1, &s, err);
	if (st)
		return st;
	zb_rows *q = NULL;
	fprintf(o->out, "%-24s %-8s %-10s %8s %8s  %s\n", "tag", "suite", "source", "repeats", "configs", "created");
	if ((st = zb_rows_open(s, ZB_Q_BASELINES, &q, err))) {
		zb_store_close(s);
		return st;
	}
	while (zb_rows_next(q) > 0)
		fprintf(o->out, "%-24s %-8s %-10s %8d %8d  %s\n", zb_rows_text(q, 0), zb_rows_text(q, 1), zb_rows_text(q, 2),
			(int)zb_rows_int(q, 3, 0), (int)zb_rows_int(q, 4, 0), zb_rows_text(q, 5));
	zb_rows_close(q, 0, NULL, NULL);
	zb_store_close(s);
	return ZB_OK;
}

/* The "hw" part of a configuration's JSON: the document zb_hw_load reads. */
static char *hw_json_of(const zb_config *c)
{
	char *all = zb_config_to_json(c);
	json_t *j = json_loads(all, 0, NULL);
	free(all);
	char *hw = j ? json_dumps(json_object_get(j, "hw"), JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
	json_decref(j);
	return hw;
}

/* ---- baseline save ------------------------------------------------------------------- */

/* What a baseline save holds while it runs. */
typedef struct saving {
	zb_regress_opts o;
	const zb_suite *suite;
	int n;
	zb_config *cfg;
	zb_store *s;
	zb_baseline b;
	json_t *arr;
} saving;

/* The tag, the suite, every configuration built (bad --hw fails here, before
 * anything is written). */
static zb_status save_plan(saving *v, zb_error *err)
{
	zb_regress_opts *o = &v->o;
	zb_status st;
	if (!*o->tag || strlen(o->tag) >= sizeof((zb_baseline){ 0 }.tag))
		return zb_fail(err, ZB_E_INPUT, "invalid baseline tag '%s' (1 to 127 characters)", o->tag);
	if (!o->repeats)
		o->repeats = o->sim ? 1 : 3;
	if ((st = zb_suite_find(o->suite, &v->suite, err)))
		return st;
	v->n = o->limit && o->limit < v->suite->n ? o->limit : v->suite->n;
	v->cfg = zb_xcalloc((size_t)v->n, sizeof *v->cfg);
	for (int i = 0; i < v->n; i++)
		if ((st = zb_suite_config(&v->suite->entries[i], o->hw, o->warmup, o->steps, &v->cfg[i], err)))
			return st;
	if (!o->sim && !zb_exec_available(err))
		return err->status;
	return ZB_OK;
}

/* The run and baselines rows, in the transaction the results join. */
static zb_status save_begin(saving *v, const char *command, zb_error *err)
{
	const zb_regress_opts *o = &v->o;
	zb_run_info info = { .kind = "baseline", .command = command, .version = ZB_VERSION, .git_commit = ZB_GIT_COMMIT };
	zb_baseline *b = &v->b;
	snprintf(b->tag, sizeof b->tag, "%s", o->tag);
	snprintf(b->suite, sizeof b->suite, "%s", v->suite->name);
	snprintf(b->source, sizeof b->source, "%s", o->sim ? "predicted" : "measured");
	b->repeats = o->sim ? 1 : o->repeats;
	b->warmup = o->warmup;
	b->steps = o->steps;
	b->hw_json = hw_json_of(&v->cfg[0]);
	zb_status st = zb_store_begin(v->s, err);
	if (!st && o->force)
		st = zb_baseline_delete(v->s, o->tag, err);
	if (!st)
		st = zb_store_add_run(v->s, &info, &b->run_id, err);
	if (!st)
		st = zb_baseline_add(v->s, b, err);
	if (st)
		zb_store_rollback(v->s);
	return st;
}

/* Measure every configuration and store its result; a table on out (log with
 * --json), rows for --json in v->arr. */
static zb_status save_results(saving *v, zb_error *err)
{
	const zb_regress_opts *o = &v->o;
	FILE *out = o->json ? o->log : o->out;
	zb_status st = ZB_OK;
	fprintf(out, "# zbench %s%s%s baseline save '%s': suite %s (%d configurations), %s, %d repeat%s\n", ZB_VERSION,
		ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, o->tag, v->suite->name, v->n,
		o->sim ? "simulator" : "measured on the GPU", v->b.repeats, v->b.repeats == 1 ? "" : "s");
	fprintf(out, "%3s  %-44s %12s %12s\n", "#", "configuration", "step", "throughput");
	fprintf(out, "%3s  %-44s %12s %12s\n", "", "", "ms (median)", "tokens/s");
	for (int i = 0; i < v->n && !st; i++) {
		zb_baseline_result r = { 0 };
		zb_suite_key(&v->suite->entries[i], r.key, sizeof r.key);
		zb_config_label(&v->cfg[i], r.label, sizeof r.label);
		int fits;
		char reason[256];
		st = measure(&v->cfg[i], o, v->s, v->b.run_id, &r, &fits, reason, sizeof reason, err);
		if (!st)
			st = zb_baseline_add_result(v->s, v->b.id, &r, err);
		if (st)
			break;
		if (fits)
			fprintf(out, "%3d  %-44s %12.3f %12.0f\n", i + 1, r.key, r.step_time_s * 1e3, r.tokens_per_s);
		else
			fprintf(out, "%3d  %-44s %12s %12s  does not fit: %s\n", i + 1, r.key, "-", "-", reason);
		json_array_append_new(v->arr, json_pack("{s:s, s:o, s:o}", "key", r.key, "step_time_s",
							fits ? json_real(r.step_time_s) : json_null(), "tokens_per_s",
							fits ? json_real(r.tokens_per_s) : json_null()));
	}
	if (!st)
		st = zb_store_finish_run(v->s, v->b.run_id, "ok", err);
	if (!st)
		st = zb_store_commit(v->s, err);
	else
		zb_store_rollback(v->s);
	return st;
}

static void save_report(saving *v)
{
	const zb_regress_opts *o = &v->o;
	if (o->json) {
		json_t *root = json_pack("{s:s, s:s, s:s, s:i, s:o}", "tag", o->tag, "suite", v->suite->name, "source",
					 o->sim ? "predicted" : "measured", "repeats", o->sim ? 1 : o->repeats, "configs",
					 v->arr);
		v->arr = NULL;
		zb_json_print(o->out, root);
		json_decref(root);
	} else {
		fprintf(o->out, "# saved baseline '%s' in %s\n", o->tag, o->db);
	}
}

zb_status zb_baseline_save(const zb_regress_opts *o, const char *command, zb_error *err)
{
	saving v = { .o = *o };
	zb_status st = save_plan(&v, err);
	if (!st)
		st = open_db(&v.o, 0, &v.s, err);
	if (!st) {
		v.arr = json_array();
		st = save_begin(&v, command, err);
		if (!st && !(st = save_results(&v, err)))
			save_report(&v);
		zb_store_close(v.s);
	}
	json_decref(v.arr);
	zb_baseline_clear(&v.b);
	free(v.cfg);
	return st;
}

/* ---- regress ------------------------------------------------------------------------- */

/* What a regress run compares against, and its tallies. */
typedef struct regressing {
	zb_regress_opts o;
	zb_baseline b;
	zb_baseline_result *base;
	int nbase;
	const zb_suite *suite;
	char hw_path[64]; /* the baseline's hardware as a file, unless --hw */
	const char *hw;
	int regressions, improved, missing, compared;
	json_t *arr;
} regressing;

/* The baseline, its results and suite; the run repeats it the way it was made. */
static zb_status regress_load(regressing *g, zb_error *err)
{
	zb_regress_opts *o = &g->o;
	zb_store *s;
	zb_status st = open_db(o, 1, &s, err);
	if (st)
		return st;
	if ((st = zb_baseline_find(s, o->tag, &g->b, err)) ||
	    (st = zb_baseline_results(s, g->b.id, &g->base, &g->nbase, err))) {
		zb_store_close(s);
		return st;
	}
	zb_store_close(s); /* regress writes nothing */
	int base_sim = !strcmp(g->b.source, "predicted");
	if (base_sim != o->sim)
		return zb_fail(err, ZB_E_INPUT, "baseline '%s' holds %s results: regress %s", o->tag, g->b.source,
			       base_sim ? "with --sim" : "without --sim (on the GPU)");
	if (!o->repeats)
		o->repeats = o->sim ? 1 : g->b.repeats > 0 ? g->b.repeats : 3;
	o->warmup = g->b.warmup;
	o->steps = g->b.steps > 0 ? g->b.steps : 3;
	if ((st = zb_suite_find(g->b.suite, &g->suite, err)))
		return st;
	/* the baseline's hardware, through a file zb_hw_load reads, unless --hw */
	g->hw = o->hw;
	if (!g->hw && g->b.hw_json) {
		snprintf(g->hw_path, sizeof g->hw_path, "/tmp/zbench-regress-hw-XXXXXX");
		int fd = mkstemp(g->hw_path);
		FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (fd >= 0)
			g->hw = g->hw_path; /* removed at the end, whatever happens */
		if (!f || fputs(g->b.hw_json, f) < 0 || fclose(f) != 0)
			return zb_fail(err, ZB_E_INTERNAL, "cannot write a temporary hardware file '%s'", g->hw_path);
	}
	if (!o->sim && !zb_exec_available(err))
		return err->status;
	return ZB_OK;
}

static void regress_header(const regressing *g)
{
	const zb_regress_opts *o = &g->o;
	const zb_baseline *b = &g->b;
	FILE *out = o->json ? o->log : o->out;
	fprintf(out, "# zbench %s%s%s regress: baseline '%s' (suite %s, %s, %d repeat%s, saved %s), now %d repeat%s, "
		     "tolerance %.1f%%%s\n",
		ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, o->tag, b->suite, b->source, b->repeats,
		b->repeats == 1 ? "" : "s", b->created_at, o->sim ? 1 : o->repeats, o->sim || o->repeats == 1 ? "" : "s",
		100 * o->tolerance, o->plant != 0 ? " (planted slowdown)" : "");
	fprintf(out, "# hardware: %s; %s\n", o->hw ? o->hw : "the baseline's",
		o->sim ? "simulator: any shift beyond the tolerance fails" : "measured: a drop beyond the tolerance fails");
	if (!o->json) {
		fprintf(o->out, "%3s  %-44s %12s %12s %8s  %s\n", "#", "configuration", "baseline", "now", "change",
			"verdict");
		fprintf(o->out, "%3s  %-44s %12s %12s %8s  %s\n", "", "", "tokens/s", "tokens/s", "%", "");
	}
}

/* The verdict on one configuration; *bad when it counts as a regression. */
static const char *judge(const regressing *g, double was, int fits, double change, int *bad)
{
	const zb_regress_opts *o = &g->o;
	*bad = 0;
	if (!isfinite(was) && !fits)
		return "does not fit (as in the baseline)";
	if (!isfinite(was))
		return "fits now (did not)";
	if (!fits) {
		*bad = 1;
		return "REGRESSION: does not fit any more";
	}
	if (change < -o->tolerance) {
		*bad = 1;
		return o->sim ? "REGRESSION: prediction shifted down" : "REGRESSION";
	}
	if (change > o->tolerance) {
		*bad = o->sim;
		return o->sim ? "REGRESSION: prediction shifted up" : "improved";
	}
	return "ok";
}

/* Rerun suite entry i and judge it against its baseline result bi. */
static zb_status regress_one(regressing *g, int i, int bi, zb_error *err)
{
	const zb_regress_opts *o = &g->o;
	char key[128];
	zb_suite_key(&g->suite->entries[i], key, sizeof key);
	zb_config c;
	zb_status st;
	if ((st = zb_suite_config(&g->suite->entries[i], g->hw, o->warmup, o->steps, &c, err)))
		return st;
	zb_baseline_result now = { 0 };
	snprintf(now.key, sizeof now.key, "%s", key);
	int fits, bad;
	char reason[256] = "";
	if ((st = measure(&c, o, NULL, 0, &now, &fits, reason, sizeof reason, err)))
		return st;
	const zb_baseline_result *was = &g->base[bi];
	double change = fits && isfinite(was->tokens_per_s) ? zb_rel_err(now.tokens_per_s, was->tokens_per_s) : NAN;
	const char *verdict = judge(g, was->tokens_per_s, fits, change, &bad);
	g->improved += !bad && isfinite(change) && change > o->tolerance && !o->sim;
	g->regressions += bad;
	g->compared++;
	if (!o->json) {
		char was_s[32] = "-", now_s[32] = "-", ch[32] = "-";
		if (isfinite(was->tokens_per_s))
			snprintf(was_s, sizeof was_s, "%.0f", was->tokens_per_s);
		if (fits)
			snprintf(now_s, sizeof now_s, "%.0f", now.tokens_per_s);
		if (isfinite(change))
			snprintf(ch, sizeof ch, "%+.2f", 100 * change);
		fprintf(o->out, "%3d  %-44s %12s %12s %8s  %s\n", i + 1, key, was_s, now_s, ch, verdict);
		fflush(o->out);
	}
	json_t *sa = json_array();
	for (int k = 0; k < now.nsamples; k++)
		json_array_append_new(sa, json_real(now.samples[k]));
	json_array_append_new(g->arr, json_pack("{s:s, s:o, s:o, s:o, s:o, s:s, s:b}", "key", key,
						"baseline_tokens_per_s",
						isfinite(was->tokens_per_s) ? json_real(was->tokens_per_s) : json_null(),
						"tokens_per_s", fits ? json_real(now.tokens_per_s) : json_null(), "change",
						isfinite(change) ? json_real(change) : json_null(), "samples_s", sa, "verdict",
						verdict, "regression", bad));
	return ZB_OK;
}

/* Every suite entry the baseline has, then the baseline's entries the suite lost. */
static zb_status regress_all(regressing *g, zb_error *err)
{
	zb_status st = ZB_OK;
	char *seen = zb_xcalloc((size_t)(g->nbase ? g->nbase : 1), 1);
	for (int i = 0; i < g->suite->n && !st; i++) {
		char key[128];
		zb_suite_key(&g->suite->entries[i], key, sizeof key);
		int bi = -1;
		for (int j = 0; j < g->nbase; j++)
			if (!strcmp(g->base[j].key, key))
				bi = j;
		if (bi < 0)
			continue; /* new since the baseline (or left out by --limit): nothing to compare */
		seen[bi] = 1;
		st = regress_one(g, i, bi, err);
	}
	for (int j = 0; j < g->nbase && !st; j++)
		if (!seen[j]) {
			g->missing++;
			if (!g->o.json)
				fprintf(g->o.out, "%3s  %-44s %12.0f %12s %8s  %s\n", "-", g->base[j].key,
					g->base[j].tokens_per_s, "-", "-",
					"missing from the suite now (not judged)");
		}
	free(seen);
	return st;
}

static void regress_report(regressing *g)
{
	const zb_regress_opts *o = &g->o;
	if (o->json) {
		json_t *root = json_pack("{s:s, s:s, s:f, s:i, s:i, s:i, s:i, s:o}", "baseline", o->tag, "source",
					 o->sim ? "predicted" : "measured", "tolerance", o->tolerance, "compared", g->compared,
					 "regressions", g->regressions, "improved", g->improved, "missing", g->missing,
					 "configs", g->arr);
		g->arr = NULL;
		zb_json_print(o->out, root);
		json_decref(root);
	} else {
		fprintf(o->out, "# verdict: %d of %d configuration%s regressed beyond %.1f%%%s%s -> exit %d\n", g->regressions,
			g->compared, g->compared == 1 ? "" : "s", 100 * o->tolerance, g->improved ? ", some improved" : "",
			g->missing ? ", some missing" : "", g->regressions ? 1 : 0);
	}
}

zb_status zb_regress(const zb_regress_opts *o, zb_regress_result *res, zb_error *err)
{
	regressing g = { .o = *o };
	zb_status st = regress_load(&g, err);
	if (!st) {
		regress_header(&g);
		g.arr = json_array();
		if (!(st = regress_all(&g, err)))
			regress_report(&g);
	}
	if (g.hw_path[0] && g.hw == g.hw_path)
		unlink(g.hw_path);
	json_decref(g.arr);
	zb_baseline_clear(&g.b);
	free(g.base);
	*res = (zb_regress_result){ g.compared, g.regressions, g.improved, g.missing };
	return st;
}
