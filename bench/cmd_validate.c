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
 */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "bench/cases.h"
#include "bench/commands.h"
#include "bench/options.h"
#include "bench/report.h"
#include "bench/suite.h"
#include "exec/executor.h"
#include "sim/compare.h"
#include "sim/predict.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench validate [--hw <machine|file>] [--suite full | quick] [--limit <n>]\n"
		   "                       [--warmup <n>] [--steps <n>] [--budget <seconds>] [--list]\n"
		   "                       [--strict] [--json] [--db <path> | --no-db]\n\n"
		   "Run every configuration of a suite on the GPU and through the simulator (with --hw,\n"
		   "e.g. the profile zbench calibrate wrote), store both timelines, and report each\n"
		   "step-time error, the mean absolute percentage error (target <= 3%%, worst <= 8%%) and\n"
		   "the predicted against measured speedup of each Twin-Flow ratio over plain offload\n"
		   "(target within 5%%). --list prints the suite with estimated times and runs nothing.\n"
		   "Defaults: suite full, 2 warm-up + 3 measured steps, budget 480 s (configurations\n"
		   "whose estimate would exceed it are skipped). --strict: exit 1 when a target is missed.\n");
}

typedef struct item {
	const zb_suite_entry *e;
	char key[128];
	zb_config c;
	int fits;
	char reason[256];
	double est_s;
	double pred_s;           /* predicted step (from the estimate pass) */
	zb_suite_outcome out;
	int ran, skipped;
	char skip_why[64];
} item;

static int parse_int(const char *s, const char *flag, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "zbench: invalid value '%s' for %s (expected %d..%d)\n", s, flag, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

int cmd_validate(int argc, char **argv)
{
	static const struct option table[] = {
		{ "hw", required_argument, NULL, 'H' },     { "suite", required_argument, NULL, 's' },
		{ "limit", required_argument, NULL, 'l' },  { "warmup", required_argument, NULL, 'w' },
		{ "steps", required_argument, NULL, 'n' },  { "budget", required_argument, NULL, 'b' },
		{ "list", no_argument, NULL, 'L' },         { "strict", no_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },         { "db", required_argument, NULL, 'd' },
		{ "no-db", no_argument, NULL, 'N' },        { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *hw = NULL, *suite_name = "full", *db = ZB_STORE_DEFAULT_PATH;
	int limit = 0, warmup = 2, steps = 3, budget = 480, list = 0, strict = 0, json = 0, no_db = 0, opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", table, NULL)) != -1) {
		switch (opt) {
		case 'H': hw = optarg; break;
		case 's': suite_name = optarg; break;
		case 'l': if (parse_int(optarg, "--limit", 1, 1000, &limit)) return 2; break;
		case 'w': if (parse_int(optarg, "--warmup", 0, 100, &warmup)) return 2; break;
		case 'n': if (parse_int(optarg, "--steps", 2, 100, &steps)) return 2; break;
		case 'b': if (parse_int(optarg, "--budget", 1, 86400, &budget)) return 2; break;
		case 'L': list = 1; break;
		case 'S': strict = 1; break;
		case 'j': json = 1; break;
		case 'd': db = optarg; break;
		case 'N': no_db = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	zb_error err = { 0 };
	const zb_suite *suite;
	if (zb_suite_find(suite_name, &suite, &err))
		return zb_report_error(&err);
	int n = limit && limit < suite->n ? limit : suite->n;
	item *it = zb_xcalloc((size_t)n, sizeof *it);
	double total_est = 0;
	for (int i = 0; i < n; i++) {
		it[i].e = &suite->entries[i];
		zb_suite_key(it[i].e, it[i].key, sizeof it[i].key);
		if (zb_suite_config(it[i].e, hw, warmup, steps, &it[i].c, &err)) {
			free(it);
			return zb_report_error(&err);
		}
		zb_prediction p;
		if (zb_predict(&p, &it[i].c, &err)) {
			free(it);
			return zb_report_error(&err);
		}
		it[i].fits = p.mem.fits && p.simulated;
		snprintf(it[i].reason, sizeof it[i].reason, "%s", p.mem.reason);
		it[i].est_s = zb_suite_estimate_s(&it[i].c, &p);
		it[i].pred_s = it[i].fits ? zb_step_time_window(&p.graph, p.res.end, warmup) : NAN;
		total_est += it[i].est_s;
		zb_prediction_free(&p);
	}
	FILE *out = json ? stderr : stdout;
	fprintf(out, "# zbench %s%s%s validate: suite %s (%d of %d configurations), hw %s, %d warm-up + %d measured "
		     "steps\n",
		ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, suite->name, n, suite->n,
		hw ? hw : "h200-machine (default)", warmup, steps);
	fprintf(out, "# expected time %.0f s on the H200 machine (estimate: setup + predicted run + storing), budget "
		     "%d s\n",
		total_est, budget);
	if (list) {
		printf("%3s  %-44s %10s %8s  %s\n", "#", "configuration", "predicted", "estimate", "");
		printf("%3s  %-44s %10s %8s  %s\n", "", "", "ms/step", "s", "");
		for (int i = 0; i < n; i++) {
			char note[300] = "";
			if (!it[i].fits)
				snprintf(note, sizeof note, "does not fit: %s", it[i].reason);
			else if (it[i].e->group)
				snprintf(note, sizeof note, "speedup group %d%s", it[i].e->group,
					 zb_suite_is_reference(it[i].e) ? " (reference)" : "");
			printf("%3d  %-44s %10.2f %8.1f  %s\n", i + 1, it[i].key, it[i].pred_s * 1e3, it[i].est_s, note);
		}
		free(it);
		return 0;
	}
	if (!zb_exec_available(&err)) {
		free(it);
		return zb_report_error(&err);
	}

	zb_store *store = NULL;
	int64_t run_id = 0;
	if (!no_db) {
		char *cmd = zb_command_line(argc, argv);
		zb_run_info info = { .kind = "validate", .command = cmd, .version = ZB_VERSION,
				     .git_commit = ZB_GIT_COMMIT };
		zb_status st = zb_store_open(&store, db, ZB_STORE_WRITE_WAIT_MS, &err);
		if (!st && !(st = zb_store_begin(store, &err))) {
			st = zb_store_add_run(store, &info, &run_id, &err);
			st = st ? st : zb_store_commit(store, &err);
		}
		free(cmd);
		if (st) {
			zb_store_close(store);
			free(it);
			return zb_report_error(&err);
		}
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!json) {
		printf("%3s  %-44s %10s %10s %8s %8s %8s\n", "#", "configuration", "predicted", "measured", "error",
		       "estimate", "wall");
		printf("%3s  %-44s %10s %10s %8s %8s %8s\n", "", "", "ms/step", "ms/step", "%", "s", "s");
		fflush(stdout);
	}
	double t0 = zb_wall_s();
	zb_status st = ZB_OK;
	int device_set = 0, failed = 0;
	for (int i = 0; i < n && !st; i++) {
		item *x = &it[i];
		double elapsed = zb_wall_s() - t0;
		if (stop_requested) {
			x->skipped = 1;
			snprintf(x->skip_why, sizeof x->skip_why, "interrupted");
		} else if (!x->fits) {
			x->skipped = 1;
			snprintf(x->skip_why, sizeof x->skip_why, "does not fit");
		} else if (elapsed + x->est_s > budget) {
			x->skipped = 1;
			snprintf(x->skip_why, sizeof x->skip_why, "over budget (%.0f + %.0f > %d s)", elapsed, x->est_s,
				 budget);
		}
		if (!x->skipped) {
			zb_suite_run_opts ro = { .execute = 1, .warmup = warmup, .timeline = 1, .store = store,
						 .run_id = run_id, .stop = &stop_requested };
			if (store && (st = zb_store_begin(store, &err)))
				break;
			st = zb_suite_run(&x->c, &ro, &x->out, &err);
			if (store) {
				if (!st && !device_set && x->out.device[0]) {
					sqlite3_stmt *q;
					if (sqlite3_prepare_v2(zb_store_db(store), "UPDATE runs SET device = ?1 WHERE id = ?2",
							       -1, &q, NULL) == SQLITE_OK) {
						sqlite3_bind_text(q, 1, x->out.device, -1, SQLITE_TRANSIENT);
						sqlite3_bind_int64(q, 2, run_id);
						sqlite3_step(q);
						sqlite3_finalize(q);
						device_set = 1;
					}
				}
				if (st)
					zb_store_rollback(store);
				else
					st = zb_store_commit(store, &err);
			}
			if (st && st != ZB_E_STORE) {
				/* one configuration failed on the GPU: say so, go on with the others (a
				 * broken CUDA context makes the rest fail fast too); exit 1 at the end */
				x->skipped = 1;
				snprintf(x->skip_why, sizeof x->skip_why, "FAILED: %.55s", err.msg);
				fprintf(stderr, "zbench: %s failed: %s\n", x->key, err.msg);
				failed++;
				st = ZB_OK;
				goto row;
			}
			if (st)
				break;
			x->ran = x->out.executed;
			if (!x->out.fits) {
				x->skipped = 1;
				snprintf(x->skip_why, sizeof x->skip_why, "does not fit (executor)");
				snprintf(x->reason, sizeof x->reason, "%s", x->out.reason);
			} else if (!x->ran) {
				x->skipped = 1;
				snprintf(x->skip_why, sizeof x->skip_why, "interrupted");
			}
		}
	row:
		if (!json) {
			if (x->ran)
				printf("%3d  %-44s %10.2f %10.2f %+8.1f %8.1f %8.1f\n", i + 1, x->key, x->out.pred_step_s * 1e3,
				       x->out.meas_step_s * 1e3, 100 * zb_rel_err(x->out.pred_step_s, x->out.meas_step_s),
				       x->est_s, x->out.wall_s);
			else
				printf("%3d  %-44s %10.2f %10s %8s %8.1f %8s  skipped: %s\n", i + 1, x->key, x->pred_s * 1e3,
				       "-", "-", x->est_s, "-", x->skip_why);
			fflush(stdout);
		}
	}
	double wall = zb_wall_s() - t0;

	/* summary */
	double *pr = zb_xmalloc((size_t)n * sizeof *pr), *me = zb_xmalloc((size_t)n * sizeof *me);
	int k = 0, within3 = 0, within8 = 0;
	for (int i = 0; i < n; i++)
		if (it[i].ran) {
			pr[k] = it[i].out.pred_step_s;
			me[k] = it[i].out.meas_step_s;
			double e = fabs(zb_rel_err(pr[k], me[k]));
			within3 += e <= 0.03;
			within8 += e <= 0.08;
			k++;
		}
	int used = 0;
	double mape = zb_mape(pr, me, k, &used), worst = zb_max_abs_err(pr, me, k);
	/* busy time of each resource, where it was measured */
	double busy_mape[ZB_RES_COUNT];
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		int m = 0;
		for (int i = 0; i < n; i++)
			if (it[i].ran && it[i].out.meas_busy_s[r] > 1e-4 * it[i].out.meas_step_s) {
				pr[m] = it[i].out.pred_busy_s[r];
				me[m] = it[i].out.meas_busy_s[r];
				m++;
			}
		busy_mape[r] = zb_mape(pr, me, m, NULL);
	}
	free(pr);
	free(me);

	json_t *jspeed = json_array();
	int nspeed = 0, speed_ok = 0;
	double speed_worst = NAN;
	for (int i = 0; i < n; i++) {
		if (!it[i].ran || !it[i].e->group || zb_suite_is_reference(it[i].e))
			continue;
		const item *ref = NULL;
		for (int j = 0; j < n; j++)
			if (it[j].ran && it[j].e->group == it[i].e->group && zb_suite_is_reference(it[j].e))
				ref = &it[j];
		if (!ref)
			continue;
		double ps = ref->out.pred_step_s / it[i].out.pred_step_s;
		double ms = ref->out.meas_step_s / it[i].out.meas_step_s;
		double e = zb_rel_err(ps, ms);
		if (nspeed == 0 && !json) {
			printf("\nspeedup over plain offload (policy offload, ratio 1) of the same shape:\n");
			printf("%3s  %-44s %10s %10s %8s\n", "#", "configuration", "predicted", "measured", "error");
			printf("%3s  %-44s %10s %10s %8s\n", "", "", "x", "x", "%");
		}
		if (!json)
			printf("%3d  %-44s %10.3f %10.3f %+8.1f\n", i + 1, it[i].key, ps, ms, 100 * e);
		nspeed++;
		speed_ok += fabs(e) <= 0.05;
		if (isnan(speed_worst) || fabs(e) > speed_worst)
			speed_worst = fabs(e);
		json_array_append_new(jspeed, json_pack("{s:s, s:o, s:o, s:o}", "key", it[i].key, "predicted", num(ps),
							"measured", num(ms), "error", num(e)));
	}

	int met_mape = used > 0 && mape <= 0.03, met_worst = used > 0 && worst <= 0.08;
	int met_speed = nspeed > 0 && speed_ok == nspeed;
	int skipped = 0;
	for (int i = 0; i < n; i++)
		skipped += !it[i].ran;
	if (json) {
		json_t *root = json_object(), *arr = json_array();
		for (int i = 0; i < n; i++) {
			json_t *o = json_object();
			json_object_set_new(o, "key", json_string(it[i].key));
			json_object_set_new(o, "fits", json_boolean(it[i].fits));
			json_object_set_new(o, "executed", json_boolean(it[i].ran));
			if (!it[i].ran)
				json_object_set_new(o, "skipped", json_string(it[i].skip_why));
			json_object_set_new(o, "predicted_step_s", num(it[i].ran ? it[i].out.pred_step_s : it[i].pred_s));
			json_object_set_new(o, "measured_step_s", num(it[i].ran ? it[i].out.meas_step_s : NAN));
			json_object_set_new(o, "error",
					    num(it[i].ran ? zb_rel_err(it[i].out.pred_step_s, it[i].out.meas_step_s) : NAN));
			json_object_set_new(o, "estimate_s", num(it[i].est_s));
			json_object_set_new(o, "wall_s", num(it[i].ran ? it[i].out.wall_s : NAN));
			json_object_set_new(o, "config_id", json_integer(it[i].out.config_id));
			json_t *b = json_object();
			for (int r = 0; r < ZB_RES_COUNT; r++)
				json_object_set_new(b, zb_resource_name(r),
						    json_pack("{s:o, s:o}", "predicted", num(it[i].out.pred_busy_s[r]), "measured",
							      num(it[i].ran ? it[i].out.meas_busy_s[r] : NAN)));
			json_object_set_new(o, "busy_s", b);
			json_array_append_new(arr, o);
		}
		json_object_set_new(root, "suite", json_string(suite->name));
		json_object_set_new(root, "hw", json_string(hw ? hw : "h200-machine"));
		json_object_set_new(root, "warmup", json_integer(warmup));
		json_object_set_new(root, "steps", json_integer(steps));
		json_object_set_new(root, "run_id", json_integer(run_id));
		json_object_set_new(root, "configs", arr);
		json_t *busy = json_object();
		for (int r = 0; r < ZB_RES_COUNT; r++)
			json_object_set_new(busy, zb_resource_name(r), num(busy_mape[r]));
		json_object_set_new(root, "summary",
				    json_pack("{s:i, s:i, s:o, s:o, s:i, s:i, s:o, s:f, s:f}", "executed", used, "skipped",
					      skipped, "mape", num(mape), "max_abs_err", num(worst), "within_3pct", within3,
					      "within_8pct", within8, "busy_mape", busy, "expected_s", total_est, "wall_s",
					      wall));
		json_object_set_new(root, "speedups", jspeed);
		zb_json_print(stdout, root);
		json_decref(root);
	} else {
		json_decref(jspeed);
		printf("\nstep time over %d executed configuration%s (%d skipped): MAPE %.2f%% (target <= 3%%: %s), worst "
		       "%.2f%% (target <= 8%%: %s); %d within 3%%, %d within 8%%\n",
		       used, used == 1 ? "" : "s", skipped, 100 * mape, met_mape ? "met" : "NOT MET", 100 * worst,
		       met_worst ? "met" : "NOT MET", within3, within8);
		if (nspeed)
			printf("speedups: %d of %d within 5%% (worst %.2f%%): %s\n", speed_ok, nspeed, 100 * speed_worst,
			       met_speed ? "met" : "NOT MET");
		printf("busy-time MAPE by resource:");
		for (int r = 0; r < ZB_RES_COUNT; r++)
			if (isfinite(busy_mape[r]))
				printf(" %s %.1f%%", zb_resource_name(r), 100 * busy_mape[r]);
		printf("\n# wall %.0f s (expected %.0f s)%s%s\n", wall, total_est, run_id ? "; zbench compare " : "",
		       run_id ? "<run> for per-part errors" : "");
		if (run_id)
			printf("# stored as run %lld in %s: zbench compare %lld\n", (long long)run_id, db, (long long)run_id);
	}
	if (store) {
		zb_error e2 = { 0 };
		const char *status = st || failed ? "failed" : stop_requested ? "interrupted" : "ok";
		if (!zb_store_begin(store, &e2) && !zb_store_finish_run(store, run_id, status, &e2))
			zb_store_commit(store, &e2);
		else
			zb_store_rollback(store);
		zb_store_close(store);
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	free(it);
	if (st)
		return zb_report_error(&err);
	if (failed) {
		fprintf(stderr, "zbench: %d configuration%s failed on the GPU\n", failed, failed == 1 ? "" : "s");
		return 1;
	}
	if (strict && !(met_mape && met_worst && (met_speed || nspeed == 0)))
		return 1;
	return 0;
}
