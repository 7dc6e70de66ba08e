/*
 * cmd_regress.c - throughput regression tests against a stored baseline:
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/stats.h"
#include "common/version.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/options.h"
#include "report/report.h"
#include "validate/suite.h"
#include "exec/executor.h"
#include "results/query.h"
#include "results/records.h"
#include "analysis/compare.h"
#include "inputs/hwfile.h"

typedef struct common_opts {
	const char *suite, *hw, *db;
	int sim, repeats, limit, force, json, warmup, steps;
	double tolerance, plant;
	const char *tag;
} common_opts;

/* The options of both commands, parsed into one struct (defaults set by each). */
static common_opts co;

static const zb_flag save_flags[] = {
	ZB_STRING("suite", &co.suite, "quick | full", "the suite (default quick)"),
	ZB_SWITCH("sim", &co.sim, "simulator only, no GPU"),
	ZB_INT("repeats", &co.repeats, 1, ZB_BASELINE_MAX_SAMPLES, "<n>", "repeats of each configuration"),
	ZB_STRING("hw", &co.hw, "<machine|file>", "hardware (default h200-machine)"),
	ZB_INT("limit", &co.limit, 1, 1000, "<n>", "the first <n> configurations only"),
	ZB_SWITCH("force", &co.force, "replace an existing tag"),
	ZB_SWITCH("json", &co.json, NULL),
	ZB_STRING("db", &co.db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	{ 0 },
};

static const zb_flag regress_flags[] = {
	ZB_STRING("baseline", &co.tag, "<tag>", "the baseline to rerun"),
	ZB_REAL("tolerance", &co.tolerance, 0, 1, "<x>", "largest throughput loss that passes (default 0.03)"),
	ZB_INT("repeats", &co.repeats, 1, ZB_BASELINE_MAX_SAMPLES, "<n>", "repeats of each configuration"),
	ZB_SWITCH("sim", &co.sim, "simulator only, no GPU"),
	ZB_STRING("hw", &co.hw, "<machine|file>", "hardware (default: the baseline's)"),
	ZB_REAL("plant-slowdown", &co.plant, -0.99, 100, "<x>", "multiply every new step time by 1 + <x>"),
	ZB_SWITCH("json", &co.json, "results as JSON"),
	ZB_STRING("db", &co.db, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	{ 0 },
};

static void usage_baseline(FILE *f)
{
	fprintf(f, "usage: zbench baseline save <tag> [--suite quick | full] [--sim] [--repeats <n>]\n"
		   "                            [--hw <machine|file>] [--limit <n>] [--force] [--db <path>]\n"
		   "       zbench baseline list [--db <path>]\n\n"
		   "Run a suite (default quick) and store each configuration's median step time over the\n"
		   "repeats (default 3 measured, 1 with --sim) under <tag>, for zbench regress. --sim:\n"
		   "simulator only, no GPU. --force replaces an existing tag.\n\n"
		   "options of save:\n");
	zb_flags_usage(f, save_flags);
}

static void usage_regress(FILE *f)
{
	fprintf(f, "usage: zbench regress --baseline <tag> [--tolerance <x>] [--repeats <n>] [--sim]\n"
		   "                      [--hw <machine|file>] [--plant-slowdown <x>] [--json] [--db <path>]\n\n"
		   "Rerun the configurations of a baseline the way it was made and compare medians over\n"
		   "the repeats: exit 1 when a configuration's throughput fell by more than the tolerance\n"
		   "(default 0.03; with --sim any shift beyond it, up or down, fails: predictions are\n"
		   "deterministic), 0 otherwise, 2 on bad input. The baseline's hardware is used unless\n"
		   "--hw is given. --plant-slowdown <x> multiplies every new step time by 1 + x (a planted\n"
		   "regression, to test regress itself).\n\n"
		   "options:\n");
	zb_flags_usage(f, regress_flags);
}


/* Run one configuration `repeats` times (once with sim); the median step time. */
static zb_status measure(const zb_config *c, const common_opts *o, zb_store *store, int64_t run_id,
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

static int open_db(const common_opts *o, int must_exist, zb_store **s, zb_error *err)
{
	if (must_exist && access(o->db, F_OK) != 0) {
		fprintf(stderr, "zbench: no database '%s' (give --db)\n", o->db);
		return 2;
	}
	if (zb_store_open(s, o->db, ZB_STORE_WRITE_WAIT_MS, err))
		return zb_report_error(err);
	return 0;
}

/* ---- baseline save / list ------------------------------------------------------------ */

static int baseline_list(const common_opts *o)
{
	zb_error err = { 0 };
	zb_store *s;
	int rc = open_db(o, 1, &s, &err);
	if (rc)
		return rc;
	zb_rows *q = NULL;
	printf("%-24s %-8s %-10s %8s %8s  %s\n", "tag", "suite", "source", "repeats", "configs", "created");
	if (zb_rows_open(s, ZB_Q_BASELINES, &q, &err)) {
		zb_store_close(s);
		return zb_report_error(&err);
	}
	while (zb_rows_next(q) > 0)
		printf("%-24s %-8s %-10s %8d %8d  %s\n", zb_rows_text(q, 0), zb_rows_text(q, 1), zb_rows_text(q, 2),
		       (int)zb_rows_int(q, 3, 0), (int)zb_rows_int(q, 4, 0), zb_rows_text(q, 5));
	zb_rows_close(q, 0, NULL, NULL);
	zb_store_close(s);
	return 0;
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
	common_opts o;
	const zb_suite *suite;
	int n;
	zb_config *cfg;
	zb_store *s;
	zb_baseline b;
	json_t *arr;
} saving;

/* The tag, the suite, every configuration built (bad --hw fails here, before
 * anything is written). Returns an exit code (0: go on). */
static int save_plan(saving *v, const char *tag, int npos, zb_error *err)
{
	common_opts *o = &v->o;
	if (!npos) {
		fprintf(stderr, "zbench: baseline save needs a tag (zbench baseline save <tag>)\n");
		return 2;
	}
	o->tag = tag;
	if (!*o->tag || strlen(o->tag) >= sizeof((zb_baseline){ 0 }.tag)) {
		fprintf(stderr, "zbench: invalid baseline tag '%s' (1 to 127 characters)\n", o->tag);
		return 2;
	}
	if (!o->repeats)
		o->repeats = o->sim ? 1 : 3;
	if (zb_suite_find(o->suite, &v->suite, err))
		return zb_report_error(err);
	v->n = o->limit && o->limit < v->suite->n ? o->limit : v->suite->n;
	v->cfg = zb_xcalloc((size_t)v->n, sizeof *v->cfg);
	for (int i = 0; i < v->n; i++)
		if (zb_suite_config(&v->suite->entries[i], o->hw, o->warmup, o->steps, &v->cfg[i], err))
			return zb_report_error(err);
	if (!o->sim && !zb_exec_available(err))
		return zb_report_error(err);
	return 0;
}

/* The run and baselines rows, in the transaction the results join. */
static zb_status save_begin(saving *v, int argc, char **argv, zb_error *err)
{
	const common_opts *o = &v->o;
	char *cmd = zb_command_line(argc, argv);
	zb_run_info info = { .kind = "baseline", .command = cmd, .version = ZB_VERSION, .git_commit = ZB_GIT_COMMIT };
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
	free(cmd);
	if (st)
		zb_store_rollback(v->s);
	return st;
}

/* Measure every configuration and store its result; a table on stdout (stderr with
 * --json), rows for --json in v->arr. */
static zb_status save_results(saving *v, zb_error *err)
{
	const common_opts *o = &v->o;
	FILE *out = o->json ? stderr : stdout;
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
	const common_opts *o = &v->o;
	if (o->json) {
		json_t *root = json_pack("{s:s, s:s, s:s, s:i, s:o}", "tag", o->tag, "suite", v->suite->name, "source",
					 o->sim ? "predicted" : "measured", "repeats", o->sim ? 1 : o->repeats, "configs",
					 v->arr);
		v->arr = NULL;
		zb_json_print(stdout, root);
		json_decref(root);
	} else {
		printf("# saved baseline '%s' in %s\n", o->tag, o->db);
	}
}

static int baseline_save(int argc, char **argv, const char *tag, int npos)
{
	saving v = { .o = co };
	zb_error err = { 0 };
	int rc = save_plan(&v, tag, npos, &err);
	if (!rc)
		rc = open_db(&v.o, 0, &v.s, &err);
	if (!rc) {
		v.arr = json_array();
		zb_status st = save_begin(&v, argc, argv, &err);
		if (!st && !(st = save_results(&v, &err)))
			save_report(&v);
		zb_store_close(v.s);
		if (st)
			rc = zb_report_error(&err);
	}
	json_decref(v.arr);
	zb_baseline_clear(&v.b);
	free(v.cfg);
	return rc;
}

int cmd_baseline(int argc, char **argv)
{
	co = (common_opts){ .suite = "quick", .db = ZB_STORE_DEFAULT_PATH, .warmup = 2, .steps = 3 };
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage_baseline(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "save") && strcmp(sub, "list")) {
		fprintf(stderr, "zbench: unknown baseline command '%s' (known: save, list)\n", sub);
		return 2;
	}
	const char *tag = NULL;
	int npos, rc;
	int list = !strcmp(sub, "list");
	if (!zb_flags_parse(argc - 1, argv + 1, save_flags, &tag, list ? 0 : 1, &npos, usage_baseline, &rc))
		return rc;
	if (list)
		return baseline_list(&co);
	return baseline_save(argc, argv, tag, npos);
}

/* ---- regress ------------------------------------------------------------------------- */

/* What a regress run compares against, and its tallies. */
typedef struct regressing {
	common_opts o;
	zb_baseline b;
	zb_baseline_result *base;
	int nbase;
	const zb_suite *suite;
	char hw_path[64]; /* the baseline's hardware as a file, unless --hw */
	const char *hw;
	int regressions, improved, missing, compared;
	json_t *arr;
} regressing;

/* The baseline, its results and suite; the run repeats it the way it was made.
 * Returns an exit code (0: go on). */
static int regress_load(regressing *g, zb_error *err)
{
	common_opts *o = &g->o;
	zb_store *s;
	int rc = open_db(o, 1, &s, err);
	if (rc)
		return rc;
	if (zb_baseline_find(s, o->tag, &g->b, err) || zb_baseline_results(s, g->b.id, &g->base, &g->nbase, err)) {
		zb_store_close(s);
		return zb_report_error(err);
	}
	zb_store_close(s); /* regress writes nothing */
	int base_sim = !strcmp(g->b.source, "predicted");
	if (base_sim != o->sim) {
		zb_fail(err, ZB_E_INPUT, "baseline '%s' holds %s results: regress %s", o->tag, g->b.source,
			base_sim ? "with --sim" : "without --sim (on the GPU)");
		return zb_report_error(err);
	}
	if (!o->repeats)
		o->repeats = o->sim ? 1 : g->b.repeats > 0 ? g->b.repeats : 3;
	o->warmup = g->b.warmup;
	o->steps = g->b.steps > 0 ? g->b.steps : 3;
	if (zb_suite_find(g->b.suite, &g->suite, err))
		return zb_report_error(err);
	/* the baseline's hardware, through a file zb_hw_load reads, unless --hw */
	g->hw = o->hw;
	if (!g->hw && g->b.hw_json) {
		snprintf(g->hw_path, sizeof g->hw_path, "/tmp/zbench-regress-hw-XXXXXX");
		int fd = mkstemp(g->hw_path);
		FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!f || fputs(g->b.hw_json, f) < 0 || fclose(f) != 0) {
			fprintf(stderr, "zbench: cannot write a temporary hardware file '%s'\n", g->hw_path);
			return 1;
		}
		g->hw = g->hw_path;
	}
	if (!o->sim && !zb_exec_available(err))
		return zb_report_error(err);
	return 0;
}

static void regress_header(const regressing *g)
{
	const common_opts *o = &g->o;
	const zb_baseline *b = &g->b;
	FILE *out = o->json ? stderr : stdout;
	fprintf(out, "# zbench %s%s%s regress: baseline '%s' (suite %s, %s, %d repeat%s, saved %s), now %d repeat%s, "
		     "tolerance %.1f%%%s\n",
		ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, o->tag, b->suite, b->source, b->repeats,
		b->repeats == 1 ? "" : "s", b->created_at, o->sim ? 1 : o->repeats, o->sim || o->repeats == 1 ? "" : "s",
		100 * o->tolerance, o->plant != 0 ? " (planted slowdown)" : "");
	fprintf(out, "# hardware: %s; %s\n", o->hw ? o->hw : "the baseline's",
		o->sim ? "simulator: any shift beyond the tolerance fails" : "measured: a drop beyond the tolerance fails");
	if (!o->json) {
		printf("%3s  %-44s %12s %12s %8s  %s\n", "#", "configuration", "baseline", "now", "change", "verdict");
		printf("%3s  %-44s %12s %12s %8s  %s\n", "", "", "tokens/s", "tokens/s", "%", "");
	}
}

/* The verdict on one configuration; *bad when it counts as a regression. */
static const char *judge(const regressing *g, double was, int fits, double change, int *bad)
{
	const common_opts *o = &g->o;
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
	const common_opts *o = &g->o;
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
		printf("%3d  %-44s %12s %12s %8s  %s\n", i + 1, key, was_s, now_s, ch, verdict);
		fflush(stdout);
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
				printf("%3s  %-44s %12.0f %12s %8s  %s\n", "-", g->base[j].key, g->base[j].tokens_per_s, "-", "-",
				       "missing from the suite now (not judged)");
		}
	free(seen);
	return st;
}

static void regress_report(regressing *g)
{
	const common_opts *o = &g->o;
	if (o->json) {
		json_t *root = json_pack("{s:s, s:s, s:f, s:i, s:i, s:i, s:i, s:o}", "baseline", o->tag, "source",
					 o->sim ? "predicted" : "measured", "tolerance", o->tolerance, "compared", g->compared,
					 "regressions", g->regressions, "improved", g->improved, "missing", g->missing,
					 "configs", g->arr);
		g->arr = NULL;
		zb_json_print(stdout, root);
		json_decref(root);
	} else {
		printf("# verdict: %d of %d configuration%s regressed beyond %.1f%%%s%s -> exit %d\n", g->regressions,
		       g->compared, g->compared == 1 ? "" : "s", 100 * o->tolerance, g->improved ? ", some improved" : "",
		       g->missing ? ", some missing" : "", g->regressions ? 1 : 0);
	}
}

int cmd_regress(int argc, char **argv)
{
	co = (common_opts){ .db = ZB_STORE_DEFAULT_PATH, .tolerance = 0.03, .warmup = 2, .steps = 3 };
	int rc;
	if (!zb_flags_parse(argc, argv, regress_flags, NULL, 0, NULL, usage_regress, &rc))
		return rc;
	if (!co.tag) {
		fprintf(stderr, "zbench: regress needs --baseline <tag> (zbench baseline save <tag> makes one)\n");
		return 2;
	}
	regressing g = { .o = co };
	zb_error err = { 0 };
	if (!(rc = regress_load(&g, &err))) {
		regress_header(&g);
		g.arr = json_array();
		if (regress_all(&g, &err))
			rc = zb_report_error(&err);
		else
			regress_report(&g);
	}
	if (g.hw_path[0] && g.hw == g.hw_path)
		unlink(g.hw_path);
	json_decref(g.arr);
	zb_baseline_clear(&g.b);
	free(g.base);
	return rc ? rc : g.regressions ? 1 : 0;
}
