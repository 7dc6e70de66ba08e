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
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "bench/cases.h"
#include "bench/commands.h"
#include "bench/options.h"
#include "bench/report.h"
#include "bench/suite.h"
#include "exec/executor.h"
#include "results/records.h"
#include "sim/compare.h"
#include "sim/hwfile.h"

static void usage_baseline(FILE *f)
{
	fprintf(f, "usage: zbench baseline save <tag> [--suite quick | full] [--sim] [--repeats <n>]\n"
		   "                            [--hw <machine|file>] [--limit <n>] [--force] [--db <path>]\n"
		   "       zbench baseline list [--db <path>]\n\n"
		   "Run a suite (default quick) and store each configuration's median step time over the\n"
		   "repeats (default 3 measured, 1 with --sim) under <tag>, for zbench regress. --sim:\n"
		   "simulator only, no GPU. --force replaces an existing tag.\n");
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
		   "regression, to test regress itself).\n");
}

typedef struct common_opts {
	const char *suite, *hw, *db;
	int sim, repeats, limit, force, json, warmup, steps;
	double tolerance, plant;
	const char *tag;
} common_opts;

static int parse_num(const char *s, const char *flag, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "zbench: invalid value '%s' for %s (expected %g..%g)\n", s, flag, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* Parse argv; returns -1 (exit 2 printed), 1 (help printed), 0. */
static int parse(int argc, char **argv, int regress, common_opts *o)
{
	static const struct option table[] = {
		{ "suite", required_argument, NULL, 's' },      { "sim", no_argument, NULL, 'S' },
		{ "repeats", required_argument, NULL, 'r' },    { "hw", required_argument, NULL, 'H' },
		{ "limit", required_argument, NULL, 'l' },      { "force", no_argument, NULL, 'f' },
		{ "db", required_argument, NULL, 'd' },         { "json", no_argument, NULL, 'j' },
		{ "baseline", required_argument, NULL, 'b' },   { "tolerance", required_argument, NULL, 't' },
		{ "plant-slowdown", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	double v;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", table, NULL)) != -1) {
		int bad = (regress && (opt == 's' || opt == 'l' || opt == 'f')) || (!regress && (opt == 'b' || opt == 't' || opt == 'p'));
		if (bad || opt == '?') {
			if (bad)
				fprintf(stderr, "zbench: option %s is not one of zbench %s's\n", argv[optind - 1],
					regress ? "regress" : "baseline save");
			(regress ? usage_regress : usage_baseline)(stderr);
			return -1;
		}
		switch (opt) {
		case 's': o->suite = optarg; break;
		case 'S': o->sim = 1; break;
		case 'r':
			if (parse_num(optarg, "--repeats", 1, ZB_BASELINE_MAX_SAMPLES, &v))
				return -1;
			if (v != floor(v)) {
				fprintf(stderr, "zbench: invalid value '%s' for --repeats (expected an integer)\n", optarg);
				return -1;
			}
			o->repeats = (int)v;
			break;
		case 'H': o->hw = optarg; break;
		case 'l':
			if (parse_num(optarg, "--limit", 1, 1000, &v))
				return -1;
			o->limit = (int)v;
			break;
		case 'f': o->force = 1; break;
		case 'd': o->db = optarg; break;
		case 'j': o->json = 1; break;
		case 'b': o->tag = optarg; break;
		case 't':
			if (parse_num(optarg, "--tolerance", 0, 1, &o->tolerance))
				return -1;
			break;
		case 'p':
			if (parse_num(optarg, "--plant-slowdown", -0.99, 100, &o->plant))
				return -1;
			break;
		case 'h': (regress ? usage_regress : usage_baseline)(stdout); return 1;
		}
	}
	return 0;
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
	res->step_time_s = *fits ? zb_median_of(res->samples, res->nsamples) : NAN;
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
	sqlite3_stmt *q = NULL;
	printf("%-24s %-8s %-10s %8s %8s  %s\n", "tag", "suite", "source", "repeats", "configs", "created");
	if (zb_records_ensure(s, &err) ||
	    sqlite3_prepare_v2(zb_store_db(s),
			       "SELECT b.tag, b.suite, b.source, b.repeats, (SELECT count(*) FROM baseline_results r"
			       " WHERE r.baseline_id = b.id), b.created_at FROM baselines b ORDER BY b.id",
			       -1, &q, NULL) != SQLITE_OK) {
		zb_store_close(s);
		return zb_report_error(&err);
	}
	while (sqlite3_step(q) == SQLITE_ROW)
		printf("%-24s %-8s %-10s %8d %8d  %s\n", sqlite3_column_text(q, 0), sqlite3_column_text(q, 1),
		       sqlite3_column_text(q, 2), sqlite3_column_int(q, 3), sqlite3_column_int(q, 4),
		       sqlite3_column_text(q, 5));
	sqlite3_finalize(q);
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

int cmd_baseline(int argc, char **argv)
{
	common_opts o = { .suite = "quick", .db = ZB_STORE_DEFAULT_PATH, .warmup = 2, .steps = 3 };
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage_baseline(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "save") && strcmp(sub, "list")) {
		fprintf(stderr, "zbench: unknown baseline command '%s' (known: save, list)\n", sub);
		return 2;
	}
	int pr = parse(argc - 1, argv + 1, 0, &o);
	if (pr)
		return pr < 0 ? 2 : 0;
	if (!strcmp(sub, "list"))
		return baseline_list(&o);
	if (optind >= argc - 1) {
		fprintf(stderr, "zbench: baseline save needs a tag (zbench baseline save <tag>)\n");
		return 2;
	}
	o.tag = argv[1 + optind];
	if (optind + 1 < argc - 1) {
		fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind + 2]);
		return 2;
	}
	if (!*o.tag || strlen(o.tag) >= sizeof((zb_baseline){ 0 }.tag)) {
		fprintf(stderr, "zbench: invalid baseline tag '%s' (1 to 127 characters)\n", o.tag);
		return 2;
	}
	if (!o.repeats)
		o.repeats = o.sim ? 1 : 3;
	zb_error err = { 0 };
	const zb_suite *suite;
	if (zb_suite_find(o.suite, &suite, &err))
		return zb_report_error(&err);
	int n = o.limit && o.limit < suite->n ? o.limit : suite->n;
	/* every configuration is built before anything is written: bad --hw fails here */
	zb_config *cfg = zb_xcalloc((size_t)n, sizeof *cfg);
	for (int i = 0; i < n; i++)
		if (zb_suite_config(&suite->entries[i], o.hw, o.warmup, o.steps, &cfg[i], &err)) {
			free(cfg);
			return zb_report_error(&err);
		}
	if (!o.sim && !zb_exec_available(&err)) {
		free(cfg);
		return zb_report_error(&err);
	}
	zb_store *s;
	int rc = open_db(&o, 0, &s, &err);
	if (rc) {
		free(cfg);
		return rc;
	}
	char *cmd = zb_command_line(argc, argv);
	zb_run_info info = { .kind = "baseline", .command = cmd, .version = ZB_VERSION, .git_commit = ZB_GIT_COMMIT };
	zb_baseline b = { 0 };
	snprintf(b.tag, sizeof b.tag, "%s", o.tag);
	snprintf(b.suite, sizeof b.suite, "%s", suite->name);
	snprintf(b.source, sizeof b.source, "%s", o.sim ? "predicted" : "measured");
	b.repeats = o.sim ? 1 : o.repeats;
	b.warmup = o.warmup;
	b.steps = o.steps;
	b.hw_json = hw_json_of(&cfg[0]);
	zb_status st = zb_store_begin(s, &err);
	if (!st && o.force)
		st = zb_baseline_delete(s, o.tag, &err);
	if (!st)
		st = zb_store_add_run(s, &info, &b.run_id, &err);
	if (!st)
		st = zb_baseline_add(s, &b, &err);
	free(cmd);
	if (st) {
		zb_store_rollback(s);
		zb_store_close(s);
		zb_baseline_clear(&b);
		free(cfg);
		return zb_report_error(&err);
	}
	FILE *out = o.json ? stderr : stdout;
	fprintf(out, "# zbench %s%s%s baseline save '%s': suite %s (%d configurations), %s, %d repeat%s\n", ZB_VERSION,
		ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, o.tag, suite->name, n,
		o.sim ? "simulator" : "measured on the GPU", b.repeats, b.repeats == 1 ? "" : "s");
	fprintf(out, "%3s  %-44s %12s %12s\n", "#", "configuration", "step", "throughput");
	fprintf(out, "%3s  %-44s %12s %12s\n", "", "", "ms (median)", "tokens/s");
	json_t *arr = json_array();
	for (int i = 0; i < n && !st; i++) {
		zb_baseline_result r = { 0 };
		zb_suite_key(&suite->entries[i], r.key, sizeof r.key);
		zb_config_label(&cfg[i], r.label, sizeof r.label);
		int fits;
		char reason[256];
		st = measure(&cfg[i], &o, s, b.run_id, &r, &fits, reason, sizeof reason, &err);
		if (!st)
			st = zb_baseline_add_result(s, b.id, &r, &err);
		if (st)
			break;
		if (fits)
			fprintf(out, "%3d  %-44s %12.3f %12.0f\n", i + 1, r.key, r.step_time_s * 1e3, r.tokens_per_s);
		else
			fprintf(out, "%3d  %-44s %12s %12s  does not fit: %s\n", i + 1, r.key, "-", "-", reason);
		json_array_append_new(arr, json_pack("{s:s, s:o, s:o}", "key", r.key, "step_time_s",
						     fits ? json_real(r.step_time_s) : json_null(), "tokens_per_s",
						     fits ? json_real(r.tokens_per_s) : json_null()));
	}
	if (!st)
		st = zb_store_finish_run(s, b.run_id, "ok", &err);
	if (!st)
		st = zb_store_commit(s, &err);
	else
		zb_store_rollback(s);
	zb_store_close(s);
	zb_baseline_clear(&b);
	free(cfg);
	if (st) {
		json_decref(arr);
		return zb_report_error(&err);
	}
	if (o.json) {
		json_t *root = json_pack("{s:s, s:s, s:s, s:i, s:o}", "tag", o.tag, "suite", suite->name, "source",
					 o.sim ? "predicted" : "measured", "repeats", o.sim ? 1 : o.repeats, "configs", arr);
		zb_json_print(stdout, root);
		json_decref(root);
	} else {
		json_decref(arr);
		printf("# saved baseline '%s' in %s\n", o.tag, o.db);
	}
	return 0;
}

/* ---- regress ------------------------------------------------------------------------- */

int cmd_regress(int argc, char **argv)
{
	common_opts o = { .db = ZB_STORE_DEFAULT_PATH, .tolerance = 0.03, .warmup = 2, .steps = 3 };
	int pr = parse(argc, argv, 1, &o);
	if (pr)
		return pr < 0 ? 2 : 0;
	if (optind < argc) {
		fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o.tag) {
		fprintf(stderr, "zbench: regress needs --baseline <tag> (zbench baseline save <tag> makes one)\n");
		return 2;
	}
	zb_error err = { 0 };
	zb_store *s;
	int rc = open_db(&o, 1, &s, &err);
	if (rc)
		return rc;
	zb_baseline b;
	zb_baseline_result *base = NULL;
	int nbase = 0;
	if (zb_baseline_find(s, o.tag, &b, &err) || zb_baseline_results(s, b.id, &base, &nbase, &err)) {
		zb_store_close(s);
		return zb_report_error(&err);
	}
	zb_store_close(s); /* regress writes nothing */
	int base_sim = !strcmp(b.source, "predicted");
	if (base_sim != o.sim) {
		zb_fail(&err, ZB_E_INPUT, "baseline '%s' holds %s results: regress %s", o.tag, b.source,
			base_sim ? "with --sim" : "without --sim (on the GPU)");
		zb_baseline_clear(&b);
		free(base);
		return zb_report_error(&err);
	}
	if (!o.repeats)
		o.repeats = o.sim ? 1 : b.repeats > 0 ? b.repeats : 3;
	o.warmup = b.warmup;
	o.steps = b.steps > 0 ? b.steps : 3;
	const zb_suite *suite;
	if (zb_suite_find(b.suite, &suite, &err)) {
		zb_baseline_clear(&b);
		free(base);
		return zb_report_error(&err);
	}
	/* the baseline's hardware, through a file zb_hw_load reads, unless --hw */
	char hw_path[64] = "";
	const char *hw = o.hw;
	if (!hw && b.hw_json) {
		snprintf(hw_path, sizeof hw_path, "/tmp/zbench-regress-hw-XXXXXX");
		int fd = mkstemp(hw_path);
		FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!f || fputs(b.hw_json, f) < 0 || fclose(f) != 0) {
			fprintf(stderr, "zbench: cannot write a temporary hardware file '%s'\n", hw_path);
			zb_baseline_clear(&b);
			free(base);
			return 1;
		}
		hw = hw_path;
	}
	if (!o.sim && !zb_exec_available(&err)) {
		if (hw_path[0])
			unlink(hw_path);
		zb_baseline_clear(&b);
		free(base);
		return zb_report_error(&err);
	}

	FILE *out = o.json ? stderr : stdout;
	fprintf(out, "# zbench %s%s%s regress: baseline '%s' (suite %s, %s, %d repeat%s, saved %s), now %d repeat%s, "
		     "tolerance %.1f%%%s\n",
		ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, o.tag, b.suite, b.source, b.repeats,
		b.repeats == 1 ? "" : "s", b.created_at, o.sim ? 1 : o.repeats, o.sim || o.repeats == 1 ? "" : "s",
		100 * o.tolerance, o.plant != 0 ? " (planted slowdown)" : "");
	fprintf(out, "# hardware: %s; %s\n", o.hw ? o.hw : "the baseline's",
		o.sim ? "simulator: any shift beyond the tolerance fails" : "measured: a drop beyond the tolerance fails");
	if (!o.json) {
		printf("%3s  %-44s %12s %12s %8s  %s\n", "#", "configuration", "baseline", "now", "change", "verdict");
		printf("%3s  %-44s %12s %12s %8s  %s\n", "", "", "tokens/s", "tokens/s", "%", "");
	}
	int regressions = 0, improved = 0, missing = 0, compared = 0;
	zb_status st = ZB_OK;
	json_t *arr = json_array();
	char *seen = zb_xcalloc((size_t)(nbase ? nbase : 1), 1);
	for (int i = 0; i < suite->n && !st; i++) {
		char key[128];
		zb_suite_key(&suite->entries[i], key, sizeof key);
		int bi = -1;
		for (int j = 0; j < nbase; j++)
			if (!strcmp(base[j].key, key))
				bi = j;
		if (bi < 0)
			continue; /* new since the baseline (or left out by --limit): nothing to compare */
		seen[bi] = 1;
		zb_config c;
		if ((st = zb_suite_config(&suite->entries[i], hw, o.warmup, o.steps, &c, &err)))
			break;
		zb_baseline_result now = { 0 };
		snprintf(now.key, sizeof now.key, "%s", key);
		int fits;
		char reason[256] = "";
		if ((st = measure(&c, &o, NULL, 0, &now, &fits, reason, sizeof reason, &err)))
			break;
		const zb_baseline_result *was = &base[bi];
		double change = fits && isfinite(was->tokens_per_s) ? zb_rel_err(now.tokens_per_s, was->tokens_per_s) : NAN;
		const char *verdict;
		int bad = 0;
		if (!isfinite(was->tokens_per_s) && !fits) {
			verdict = "does not fit (as in the baseline)";
		} else if (!isfinite(was->tokens_per_s)) {
			verdict = "fits now (did not)";
		} else if (!fits) {
			verdict = "REGRESSION: does not fit any more";
			bad = 1;
		} else if (change < -o.tolerance) {
			verdict = o.sim ? "REGRESSION: prediction shifted down" : "REGRESSION";
			bad = 1;
		} else if (change > o.tolerance) {
			verdict = o.sim ? "REGRESSION: prediction shifted up" : "improved";
			bad = o.sim;
			improved += !o.sim;
		} else {
			verdict = "ok";
		}
		regressions += bad;
		compared++;
		if (!o.json) {
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
		json_array_append_new(arr, json_pack("{s:s, s:o, s:o, s:o, s:o, s:s, s:b}", "key", key, "baseline_tokens_per_s",
						     isfinite(was->tokens_per_s) ? json_real(was->tokens_per_s) : json_null(),
						     "tokens_per_s", fits ? json_real(now.tokens_per_s) : json_null(), "change",
						     isfinite(change) ? json_real(change) : json_null(), "samples_s", sa,
						     "verdict", verdict, "regression", bad));
	}
	for (int j = 0; j < nbase && !st; j++)
		if (!seen[j]) {
			missing++;
			if (!o.json)
				printf("%3s  %-44s %12.0f %12s %8s  %s\n", "-", base[j].key, base[j].tokens_per_s, "-", "-",
				       "missing from the suite now (not judged)");
		}
	free(seen);
	if (hw_path[0])
		unlink(hw_path);
	zb_baseline_clear(&b);
	free(base);
	if (st) {
		json_decref(arr);
		return zb_report_error(&err);
	}
	if (o.json) {
		json_t *root = json_pack("{s:s, s:s, s:f, s:i, s:i, s:i, s:i, s:o}", "baseline", o.tag, "source",
					 o.sim ? "predicted" : "measured", "tolerance", o.tolerance, "compared", compared,
					 "regressions", regressions, "improved", improved, "missing", missing, "configs", arr);
		zb_json_print(stdout, root);
		json_decref(root);
	} else {
		json_decref(arr);
		printf("# verdict: %d of %d configuration%s regressed beyond %.1f%%%s%s -> exit %d\n", regressions, compared,
		       compared == 1 ? "" : "s", 100 * o.tolerance, improved ? ", some improved" : "",
		       missing ? ", some missing" : "", regressions ? 1 : 0);
	}
	return regressions ? 1 : 0;
}
