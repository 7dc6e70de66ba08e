/*
 * regress.c - `zbench regress --baseline TAG | FILE` (regress.h): the baseline's
 * configurations run again the way it was made, and each judged against its
 * baseline figure; exit 1 when one lost more than the tolerance (default 3 %) of its
 * throughput, printing what moved.
 *
 * Measured (default): every configuration runs on the GPU `repeats` times and the
 * median step time is judged, so one noisy run does not fail the test; only a
 * drop beyond the tolerance fails (a gain is reported). --sim: the simulator alone
 * (no GPU); predictions are deterministic, so any shift beyond the tolerance, up
 * or down, is a model change to review and fails. A configuration that no longer
 * fits fails; one missing from the suite now is reported.
 *
 * Which configurations: --suite names the suite to run now (built-in or a file), else
 * a baseline file's own configurations (their flags are in it), else the baseline's
 * suite by name (a database baseline of a suite file reads the file again). The
 * hardware: the baseline's own profile (stored with it); --hw may name it again, and
 * another profile is refused, naming where the two differ, as is a measured baseline
 * run on another GPU: a baseline judges a change of the code on one machine, not two
 * machines. --plant-slowdown F multiplies every new step time by 1 + F: a planted
 * regression, to check that regress catches one (the tests, and on the GPU machine).
 */
#include "validate/regress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "analysis/compare.h"
#include "common/clock.h"
#include "common/outfile.h"
#include "common/stats.h"
#include "common/version.h"
#include "config/resolve.h"
#include "exec/executor.h"
#include "inputs/hwfile.h"
#include "report/junit.h"
#include "report/report.h"
#include "results/records.h"
#include "validate/baseline_file.h"
#include "validate/parts.h"
#include "validate/suite.h"
#include "validate/suite_file.h"

zb_status zb_regress_measure(const zb_config *c, const zb_regress_opts *o, zb_store *store, int64_t run_id,
			     zb_baseline_result *res, int *fits, char *reason, size_t rn, char *device, size_t dn,
			     zb_error *err)
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
		if (out.device[0])
			snprintf(device, dn, "%s", out.device);
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

zb_status zb_regress_open_db(const zb_regress_opts *o, int must_exist, zb_store **s, zb_error *err)
{
	if (must_exist && access(o->db, F_OK) != 0)
		return zb_fail(err, ZB_E_INPUT, "no database '%s' (give --db)", o->db);
	return zb_store_open(s, o->db, ZB_STORE_WRITE_WAIT_MS, err);
}

zb_status zb_regress_hw_profile(const char *hw, char **json, char *name, size_t nn, zb_error *err)
{
	zb_config_inputs in = { 0 };
	in.value[ZB_AX_HW] = hw;
	zb_config c;
	zb_status st = zb_config_resolve(&in, &c, NULL, err);
	if (st)
		return st;
	char *all = zb_config_to_json(&c);
	json_t *j = json_loads(all, 0, NULL);
	free(all);
	*json = j ? json_dumps(json_object_get(j, "hw"), JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
	json_decref(j);
	snprintf(name, nn, "%s", hw ? hw : c.hw.name);
	return *json ? ZB_OK : zb_fail(err, ZB_E_INTERNAL, "cannot format the hardware profile of '%s'", name);
}

/* What a regress run compares against, and its tallies. */
typedef struct regressing {
	zb_regress_opts o;
	zb_baseline_file f;         /* the baseline (from the database or a file) */
	int from_file;
	const zb_suite *suite;
	char hw_path[64];           /* the baseline's hardware as a file, unless --hw */
	const char *hw;
	int regressions, improved, missing, compared, added;
	json_t *arr;
	zb_junit_case *cases;
	int ncases;
	double t0;
} regressing;

static zb_status load_db(regressing *g, zb_error *err)
{
	zb_store *s;
	zb_status st = zb_regress_open_db(&g->o, 1, &s, err);
	if (st)
		return st;
	if (!(st = zb_baseline_find(s, g->o.tag, &g->f.b, err)))
		st = zb_baseline_results(s, g->f.b.id, &g->f.results, &g->f.n, err);
	zb_store_close(s); /* regress writes nothing */
	return st;
}

/* The suite to run: --suite, a file's own configurations, or the baseline's suite. */
static zb_status choose_suite(regressing *g, zb_error *err)
{
	const zb_baseline_file *f = &g->f;
	if (g->o.suite)
		return zb_suite_open(g->o.suite, &g->suite, err);
	int specs = g->from_file && f->n > 0;
	for (int i = 0; i < f->n && specs; i++)
		specs = f->specs[i] != NULL;
	if (!specs)
		return zb_suite_open(f->b.suite, &g->suite, err);
	const char **keys = zb_xcalloc((size_t)f->n, sizeof *keys);
	for (int i = 0; i < f->n; i++)
		keys[i] = f->results[i].key;
	zb_suite *s = NULL;
	zb_status st = zb_suite_from_specs(g->o.tag, keys, (const char *const *)f->specs, f->n, &s, err);
	free(keys);
	g->suite = s;
	return st;
}

/* Where two hardware profiles first differ: "gpu.name: \"h200\" against \"a100\"". */
static int first_diff(json_t *a, json_t *b, char *path, size_t n)
{
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *v;
		json_object_foreach(a, k, v) {
			json_t *w = json_object_get(b, k);
			if (json_equal(v, w))
				continue;
			size_t used = strlen(path);
			snprintf(path + used, n - used, "%s%s", used ? "." : "", k);
			if (w && first_diff(v, w, path, n))
				return 1;
			const size_t flags = JSON_ENCODE_ANY | JSON_COMPACT;
			char *x = json_dumps(v, flags), *y = w ? json_dumps(w, flags) : NULL;
			used = strlen(path);
			snprintf(path + used, n - used, ": %.40s in the baseline, %.40s now", x ? x : "?",
				 y ? y : "nothing");
			free(x);
			free(y);
			return 1;
		}
		json_object_foreach(b, k, v)
			if (!json_object_get(a, k)) {
				size_t used = strlen(path);
				snprintf(path + used, n - used, "%s%s: not in the baseline", used ? "." : "", k);
				return 1;
			}
	}
	return 0;
}

/* --hw names the baseline's own profile, or regress refuses, naming both and the
 * first setting that differs (the names only when nothing else does). */
static zb_status check_hw(regressing *g, zb_error *err)
{
	char *now = NULL, name[128];
	zb_status st = zb_regress_hw_profile(g->o.hw, &now, name, sizeof name, err);
	if (st)
		return st;
	json_t *a = g->f.b.hw_json ? json_loads(g->f.b.hw_json, 0, NULL) : NULL, *b = json_loads(now, 0, NULL);
	free(now);
	char where[300] = "", was[128];
	const char *name_was = json_string_value(json_object_get(a, "name"));
	snprintf(was, sizeof was, "%s", name_was ? name_was : "?");
	if (a && !json_equal(a, b)) {
		json_t *a2 = json_deep_copy(a), *b2 = json_deep_copy(b);
		json_object_del(a2, "name");
		json_object_del(b2, "name");
		if (!first_diff(a2, b2, where, sizeof where))
			first_diff(a, b, where, sizeof where);
		json_decref(a2);
		json_decref(b2);
	}
	json_decref(a);
	json_decref(b);
	if (where[0])
		return zb_fail(err, ZB_E_INPUT,
			       "baseline '%s' holds hardware profile '%s', not --hw '%s' (they differ at %s): leave out "
			       "--hw to use the baseline's, or save a new baseline",
			       g->o.tag, was, name, where);
	return ZB_OK;
}

/* The baseline's hardware through a file zb_hw_load reads, unless --hw. */
static zb_status baseline_hw(regressing *g, zb_error *err)
{
	g->hw = g->o.hw;
	if (g->o.hw)
		return check_hw(g, err);
	if (!g->f.b.hw_json)
		return ZB_OK;
	snprintf(g->hw_path, sizeof g->hw_path, "/tmp/zbench-regress-hw-XXXXXX");
	int fd = mkstemp(g->hw_path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (fd >= 0)
		g->hw = g->hw_path; /* removed at the end, whatever happens */
	if (!f || fputs(g->f.b.hw_json, f) < 0 || fclose(f) != 0)
		return zb_fail(err, ZB_E_INTERNAL, "cannot write a temporary hardware file '%s'", g->hw_path);
	return ZB_OK;
}

/* The baseline, its results and suite; the run repeats it the way it was made. */
static zb_status regress_load(regressing *g, zb_error *err)
{
	zb_regress_opts *o = &g->o;
	g->from_file = zb_baseline_is_file(o->tag);
	zb_status st = g->from_file ? zb_baseline_file_read(o->tag, &g->f, err) : load_db(g, err);
	if (st)
		return st;
	const zb_baseline *b = &g->f.b;
	int base_sim = !strcmp(b->source, "predicted");
	if (base_sim != o->sim)
		return zb_fail(err, ZB_E_INPUT, "baseline '%s' holds %s results: regress %s", o->tag, b->source,
			       base_sim ? "with --sim" : "without --sim (on the GPU)");
	if (!o->repeats)
		o->repeats = o->sim ? 1 : b->repeats > 0 ? b->repeats : 3;
	o->warmup = b->warmup;
	o->steps = b->steps > 0 ? b->steps : 3;
	if ((st = choose_suite(g, err)) || (st = baseline_hw(g, err)))
		return st;
	if (!o->sim && !zb_exec_available(err))
		return err->status;
	return o->junit ? zb_outfile_probe(o->junit, err) : ZB_OK; /* before minutes of work */
}

static void regress_header(const regressing *g)
{
	const zb_regress_opts *o = &g->o;
	const zb_baseline *b = &g->f.b;
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

static zb_junit_case *new_case(regressing *g, const char *key, double t_s)
{
	g->cases = zb_xrealloc(g->cases, (size_t)(g->ncases + 1) * sizeof *g->cases);
	zb_junit_case *c = &g->cases[g->ncases++];
	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "%s", key);
	c->time_s = t_s;
	return c;
}

/* The test case of one judged configuration: the failure says old, new and the tolerance. */
static void junit_judged(regressing *g, const char *key, double t_s, const zb_baseline_result *was,
			 const zb_baseline_result *now, int fits, const char *reason, double change, int bad,
			 const char *verdict)
{
	zb_junit_case *c = new_case(g, key, t_s);
	if (!bad)
		return;
	c->outcome = ZB_JUNIT_FAILED;
	const zb_regress_opts *o = &g->o;
	if (!fits) {
		snprintf(c->message, sizeof c->message, "%s: %.400s (baseline %.0f tokens/s)", verdict, reason,
			 was->tokens_per_s);
	} else {
		snprintf(c->message, sizeof c->message,
			 "throughput %.0f -> %.0f tokens/s (%+.2f %%), beyond the tolerance of %.1f %%: %s",
			 was->tokens_per_s, now->tokens_per_s, 100 * change, 100 * o->tolerance, verdict);
	}
	snprintf(c->text, sizeof c->text,
		 "baseline '%s' (%s, saved %s): %.0f tokens/s, step %.3f ms\nnow: %s%.0f tokens/s, step %.3f ms "
		 "(median of %d)\ntolerance: %.1f %% (%s)\n",
		 o->tag, g->f.b.source, g->f.b.created_at, was->tokens_per_s, was->step_time_s * 1e3,
		 fits ? "" : "does not fit; ", fits ? now->tokens_per_s : 0.0, fits ? now->step_time_s * 1e3 : 0.0,
		 now->nsamples, 100 * o->tolerance,
		 o->sim ? "simulator: a shift either way fails" : "measured: a drop fails");
}

static void print_row(const regressing *g, int i, const char *key, double was, int fits, double now,
		      double change, const char *verdict)
{
	char was_s[32] = "-", now_s[32] = "-", ch[32] = "-";
	if (isfinite(was))
		snprintf(was_s, sizeof was_s, "%.0f", was);
	if (fits)
		snprintf(now_s, sizeof now_s, "%.0f", now);
	if (isfinite(change))
		snprintf(ch, sizeof ch, "%+.2f", 100 * change);
	fprintf(g->o.out, "%3d  %-44s %12s %12s %8s  %s\n", i + 1, key, was_s, now_s, ch, verdict);
	fflush(g->o.out);
}

/* The GPU the baseline was measured on is the one measuring now. */
static zb_status check_device(const regressing *g, const char *device, zb_error *err)
{
	const char *was = g->f.device;
	if (!was[0] || !device[0] || !strcmp(was, device))
		return ZB_OK;
	return zb_fail(err, ZB_E_INPUT, "baseline '%s' was measured on '%s', this GPU is '%s': save a baseline on "
					"this machine",
		       g->o.tag, was, device);
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
	char reason[256] = "", device[128] = "";
	double t0 = zb_wall_s();
	if ((st = zb_regress_measure(&c, o, NULL, 0, &now, &fits, reason, sizeof reason, device, sizeof device, err)) ||
	    (st = check_device(g, device, err)))
		return st;
	const zb_baseline_result *was = &g->f.results[bi];
	double change = fits && isfinite(was->tokens_per_s) ? zb_rel_err(now.tokens_per_s, was->tokens_per_s) : NAN;
	const char *verdict = judge(g, was->tokens_per_s, fits, change, &bad);
	g->improved += !bad && isfinite(change) && change > o->tolerance && !o->sim;
	g->regressions += bad;
	g->compared++;
	junit_judged(g, key, zb_wall_s() - t0, was, &now, fits, reason, change, bad, verdict);
	if (!o->json)
		print_row(g, i, key, was->tokens_per_s, fits, now.tokens_per_s, change, verdict);
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
	int nbase = g->f.n;
	char *seen = zb_xcalloc((size_t)(nbase ? nbase : 1), 1);
	for (int i = 0; i < g->suite->n && !st; i++) {
		char key[128];
		zb_suite_key(&g->suite->entries[i], key, sizeof key);
		int bi = -1;
		for (int j = 0; j < nbase; j++)
			if (!strcmp(g->f.results[j].key, key))
				bi = j;
		if (bi < 0) { /* new since the baseline (or left out by --limit): nothing to compare */
			g->added++;
			zb_junit_case *c = new_case(g, key, 0);
			c->outcome = ZB_JUNIT_SKIPPED;
			snprintf(c->message, sizeof c->message, "not in baseline '%.400s' (not judged)", g->o.tag);
			continue;
		}
		seen[bi] = 1;
		st = regress_one(g, i, bi, err);
	}
	for (int j = 0; j < nbase && !st; j++)
		if (!seen[j]) {
			g->missing++;
			zb_junit_case *c = new_case(g, g->f.results[j].key, 0);
			c->outcome = ZB_JUNIT_SKIPPED;
			snprintf(c->message, sizeof c->message, "missing from the suite now (not judged)");
			if (!g->o.json)
				fprintf(g->o.out, "%3s  %-44s %12.0f %12s %8s  %s\n", "-", g->f.results[j].key,
					g->f.results[j].tokens_per_s, "-", "-", "missing from the suite now (not judged)");
		}
	free(seen);
	return st;
}

static zb_status write_junit(const regressing *g, zb_error *err)
{
	const zb_regress_opts *o = &g->o;
	char name[320], tol[32], version[160];
	snprintf(name, sizeof name, "zbench regress %s", o->tag);
	snprintf(version, sizeof version, "%s%s%s", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT);
	snprintf(tol, sizeof tol, "%g", o->tolerance);
	const char *const props[][2] = {
		{ "baseline", o->tag }, { "suite", o->suite ? o->suite : g->f.b.suite }, { "source", g->f.b.source },
		{ "tolerance", tol }, { "saved", g->f.b.created_at }, { "zbench", version },
	};
	zb_junit_suite s = { .name = name, .classname = o->sim ? "zbench.regress.sim" : "zbench.regress",
			     .time_s = zb_wall_s() - g->t0, .properties = props,
			     .nproperties = (int)(sizeof props / sizeof props[0]), .cases = g->cases, .n = g->ncases };
	return zb_junit_write(o->junit, &s, err);
}

static void regress_report(regressing *g)
{
	const zb_regress_opts *o = &g->o;
	if (o->json) {
		json_t *root = json_pack("{s:s, s:s, s:f, s:i, s:i, s:i, s:i, s:i, s:o}", "baseline", o->tag, "source",
					 o->sim ? "predicted" : "measured", "tolerance", o->tolerance, "compared", g->compared,
					 "regressions", g->regressions, "improved", g->improved, "missing", g->missing,
					 "new", g->added, "configs", g->arr);
		g->arr = NULL;
		zb_json_print(o->out, root);
		json_decref(root);
	} else {
		fprintf(o->out, "# verdict: %d of %d configuration%s regressed beyond %.1f%%%s%s -> exit %d\n", g->regressions,
			g->compared, g->compared == 1 ? "" : "s", 100 * o->tolerance, g->improved ? ", some improved" : "",
			g->missing ? ", some missing" : "", g->regressions ? ZB_EXIT_VERDICT : ZB_EXIT_OK);
	}
	if (o->junit)
		fprintf(o->json ? o->log : o->out, "# wrote the JUnit report to %s\n", o->junit);
}

zb_status zb_regress(const zb_regress_opts *o, zb_regress_result *res, zb_error *err)
{
	regressing g = { .o = *o, .t0 = zb_wall_s() };
	zb_status st = regress_load(&g, err);
	if (!st) {
		regress_header(&g);
		g.arr = json_array();
		if (!(st = regress_all(&g, err)) && !(st = o->junit ? write_junit(&g, err) : ZB_OK))
			regress_report(&g);
	}
	if (g.hw_path[0] && g.hw == g.hw_path)
		unlink(g.hw_path);
	json_decref(g.arr);
	zb_suite_close(g.suite);
	zb_baseline_file_free(&g.f);
	free(g.cases);
	*res = (zb_regress_result){ g.compared, g.regressions, g.improved, g.missing, g.added };
	return st;
}
