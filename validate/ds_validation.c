/*
 * ds_validation.c - zbench validate --deepspeed (ds_validation.h): real DeepSpeed
 * against zbench's prediction of the same configuration.
 *
 * For each DeepSpeed configuration (a JSON file in peers/configs, or a name of a
 * row of --from FILE) the configuration is predicted exactly as `zbench predict
 * --ds-config FILE <model flags>` predicts it, then measured: by running
 * peers/ds_step.py in its own process (bench/peer.h) or by taking the row of an
 * earlier measurement from a TSV. Both go into the results database (configs,
 * predictions, and peer_runs: results/peers.h), one transaction per configuration,
 * and a table compares step time, GPU peak memory and host memory, with the MAPE
 * of each over the configurations measured.
 *
 * A configuration that fails (the interpreter cannot be run, the harness crashes,
 * runs out of memory or time, prints a malformed line) is reported on one line and
 * the others go on; the exit code is then 1.
 */
#include "validate/ds_validation.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "common/version.h"
#include "peers/peer.h"
#include "report/report.h"
#include "results/peers.h"
#include "analysis/compare.h"
#include "inputs/hwfile.h"
#include "core/model.h"
#include "analysis/dsphases.h"
#include "sim/predict.h"

#define MAX_CONFIGS 64

/* One configuration: its name, file, prediction and measurement. */
typedef struct item {
	char name[64];
	char path[512];     /* DeepSpeed JSON; "" for torch */
	int from_row;       /* a row of --from with this name, -1 when measured here */
	zb_config c;
	int predicted, fits;
	double pred_ms, pred_gpu_gib, pred_host_gib;
	zb_ds_phases ph;    /* predicted phases (sim/dsphases.h) */
	zb_peer_run m;
	int measured;
	char failed[512];
} item;

static int is_json_name(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 5 && !strcmp(d->d_name + n - 5, ".json");
}

/* The names to run: --configs, else the TSV's rows (with --from), else every JSON
 * of the config directory in name order. */
static zb_status list_names(const zb_ds_validate_opts *f, const zb_peer_run *rows, int nrows, char names[][64], int *n,
			    zb_error *err)
{
	*n = 0;
	if (f->configs) {
		char *copy = strdup(f->configs), *save = NULL;
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			if (*n == MAX_CONFIGS || strlen(t) >= 64) {
				free(copy);
				return zb_fail(err, ZB_E_INPUT, "--configs: too many or too long names at '%s'", t);
			}
			snprintf(names[(*n)++], 64, "%s", t);
		}
		free(copy);
	} else if (rows) {
		for (int i = 0; i < nrows && *n < MAX_CONFIGS; i++) {
			int seen = 0;
			for (int j = 0; j < *n; j++)
				seen |= !strcmp(names[j], rows[i].name);
			if (!seen) /* a file of result lines may hold a name once per shape */
				snprintf(names[(*n)++], 64, "%s", rows[i].name);
		}
	} else {
		struct dirent **ent;
		int k = scandir(f->config_dir, &ent, is_json_name, alphasort);
		if (k < 0)
			return zb_fail(err, ZB_E_INPUT, "cannot list --config-dir '%s': %s", f->config_dir, strerror(errno));
		for (int i = 0; i < k; i++) {
			if (*n < MAX_CONFIGS)
				snprintf(names[(*n)++], 64, "%.*s", (int)strlen(ent[i]->d_name) - 5, ent[i]->d_name);
			free(ent[i]);
		}
		free(ent);
	}
	if (*n == 0)
		return zb_fail(err, ZB_E_INPUT, "no configurations to validate (--configs, --from or --config-dir '%s')",
			       f->config_dir);
	return ZB_OK;
}

/* Fill it[] from the names: the config file must exist, a --from row must exist. */
static zb_status make_items(const zb_ds_validate_opts *f, char names[][64], int n, const zb_peer_run *rows, int nrows,
			    item *it, zb_error *err)
{
	for (int i = 0; i < n; i++) {
		item *x = &it[i];
		snprintf(x->name, sizeof x->name, "%.63s", names[i]);
		x->from_row = -1;
		zb_peer_run_init(&x->m);
		if (strcmp(x->name, "torch")) {
			snprintf(x->path, sizeof x->path, "%s/%s.json", f->config_dir, x->name);
			struct stat sb;
			if (stat(x->path, &sb) != 0)
				return zb_fail(err, ZB_E_INPUT, "unknown configuration '%s' (no file %s)", x->name, x->path);
		}
		for (int r = 0; rows && r < nrows; r++)
			if (!strcmp(rows[r].name, x->name))
				x->from_row = r;
		if (rows && x->from_row < 0)
			return zb_fail(err, ZB_E_INPUT, "configuration '%s' is not in %s", x->name, f->from);
	}
	return ZB_OK;
}

/* The configuration of x from the common flags and x's DeepSpeed file (or policy
 * none for plain PyTorch), predicted: exactly what `zbench predict` does. */
static zb_status predict_item(const zb_ds_validate_opts *f, item *x, zb_prediction *p, zb_error *err)
{
	zb_config_inputs in = *f->in;
	zb_ds_config *ds = NULL;
	zb_status st = ZB_OK;
	if (x->path[0]) {
		ds = zb_xmalloc(sizeof *ds);
		if (!(st = zb_ds_load(x->path, ds, err))) {
			zb_ds_ignored_print(f->log, ds);
			in.ds = ds;
		}
	} else if (!in.value[ZB_AX_POLICY]) {
		in.value[ZB_AX_POLICY] = "none";
	}
	if (!st && !(st = zb_config_single(&in, err)) && !(st = zb_config_resolve(&in, &x->c, NULL, err)))
		st = zb_predict(p, &x->c, err);
	free(ds);
	if (st)
		return st;
	x->predicted = 1;
	x->fits = p->mem.fits && p->simulated;
	x->pred_ms = x->fits ? p->res.step_time_s * 1e3 : NAN;
	if (x->fits)
		zb_ds_phases_of(&p->graph, &p->res, &x->ph);
	x->pred_gpu_gib = p->mem.gpu_bytes / (1024.0 * 1024 * 1024);
	x->pred_host_gib = p->mem.host_bytes / (1024.0 * 1024 * 1024);
	return ZB_OK;
}

/* The last row of --from named like x that ran x's shape and batch (result lines
 * say what they ran; TSV rows do not and are taken as they are). */
static zb_status take_row(const zb_peer_run *rows, int nrows, item *x, zb_error *err)
{
	zb_status st = ZB_E_INPUT;
	for (int r = nrows - 1; r >= 0 && st; r--) {
		if (strcmp(rows[r].name, x->name) || (st = zb_peer_check_shape(&rows[r], &x->c, err)))
			continue;
		x->m = rows[r];
		x->m.result_json = rows[r].result_json ? strdup(rows[r].result_json) : NULL;
	}
	return st;
}

static zb_status measure_item(const zb_ds_validate_opts *f, const zb_peer_run *rows, int nrows, item *x,
			       volatile const int *stop, zb_error *err)
{
	if (x->from_row >= 0)
		return take_row(rows, nrows, x, err);
	char log[600];
	if (f->log_dir)
		snprintf(log, sizeof log, "%s/ds-%s.log", f->log_dir, x->name);
	zb_peer_cmd cmd = { .python = f->python, .harness = f->harness, .ds_config = x->path[0] ? x->path : NULL,
			    .hf_config = f->in->hf ? f->in->hf->path : NULL, .steps = f->steps, .timeout_s = f->timeout_s, .log_path = f->log_dir ? log : NULL };
	return zb_peer_run_harness(&cmd, &x->c, stop, &x->m, err);
}

/* Configuration, prediction and measurement of x in one transaction. */
static zb_status store_item(zb_store *s, int64_t run_id, const item *x, const zb_prediction *p, zb_error *err)
{
	if (!s)
		return ZB_OK;
	zb_status st = zb_store_begin(s, err);
	if (st)
		return st;
	char *json = zb_config_to_json(&x->c);
	int64_t config_id = 0;
	st = zb_store_add_config(s, run_id, &x->c, json, &config_id, err);
	free(json);
	if (!st)
		st = zb_store_add_prediction(s, config_id, &p->graph, x->fits ? &p->res : NULL, &p->mem, err);
	if (!st)
		st = zb_peer_store_add(s, config_id, &x->m, err);
	if (!st)
		return zb_store_commit(s, err);
	zb_store_rollback(s);
	return st;
}

static void print_header(const zb_ds_validate_opts *f, const item *x, const zb_peer_run *rows)
{
	FILE *out = f->out;
	const zb_model *m = &x->c.model;
	const zb_policy *p = &x->c.policy;
	if (!x->predicted)
		fprintf(out, "# zbench %s%s%s validate --deepspeed\n", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT);
	else
		fprintf(out, "# zbench %s%s%s validate --deepspeed: %s (%.3f B parameters), seq %d, micro-batch %d, gas %d, hw %s\n",
	       ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT, m->name, zb_model_params(m) / 1e9, p->seq,
	       p->micro_batch, p->gas, x->c.hw.name);
	if (rows)
		fprintf(out, "# measured: imported from %s%s%s\n", f->from, rows[0].versions[0] ? ", versions " : "",
			rows[0].versions);
	else
		fprintf(out, "# measured: %s %s, %d steps each (median after 3 warm-up), timeout %d s\n", f->python, f->harness,
			f->steps, f->timeout_s);
	fprintf(out, "%-14s %10s %10s %8s %9s %9s %9s %9s %15s %15s %15s\n", "config", "measured", "predicted", "error",
		"GPU peak", "GPU peak", "host mem", "host mem", "fwd ms", "bwd ms", "opt ms");
	fprintf(out, "%-14s %10s %10s %8s %9s %9s %9s %9s %15s %15s %15s\n", "", "ms/step", "ms/step", "%", "meas GiB",
		"pred GiB", "meas GiB", "pred GiB", "meas / pred", "meas / pred", "meas / pred");
}

static void print_row(FILE *out, const item *x)
{
	if (x->failed[0]) {
		fprintf(out, "%-14s FAILED: %.100s\n", x->name, x->failed);
	} else {
		char pred[16] = "no fit", e[16] = "-";
		if (x->fits) {
			snprintf(pred, sizeof pred, "%.1f", x->pred_ms);
			snprintf(e, sizeof e, "%+.1f", 100 * zb_rel_err(x->pred_ms, x->m.step_ms));
		}
		fprintf(out, "%-14s %10.1f %10s %8s %9.1f %9.1f %9.1f %9.1f", x->name, x->m.step_ms, pred, e, x->m.gpu_peak_gib,
			x->pred_gpu_gib, x->m.host_rss_gib, x->pred_host_gib);
		/* measured phases are host wall times (dsphases.h says how they differ) */
		const double meas[3] = { x->m.fwd_ms, x->m.bwd_ms, x->m.opt_ms },
			     prd[3] = { x->ph.fwd_s * 1e3, x->ph.bwd_s * 1e3, x->ph.opt_s * 1e3 };
		for (int i = 0; i < 3; i++) {
			char ph[32];
			if (!x->fits)
				snprintf(ph, sizeof ph, "-");
			else if (isnan(meas[i]))
				snprintf(ph, sizeof ph, "- / %.0f", prd[i]);
			else
				snprintf(ph, sizeof ph, "%.0f / %.0f", meas[i], prd[i]);
			fprintf(out, " %15s", ph);
		}
		fprintf(out, "\n");
	}
	fflush(out);
}

/* The harness's model against zbench's: a different count means different shapes. */
static void check_params(FILE *log, const item *x)
{
	int64_t want = zb_model_params(&x->c.model);
	if (x->m.params > 0 && fabs((double)(x->m.params - want)) > 1e-3 * (double)want)
		fprintf(log, "zbench: warning: %s: the harness built %lld parameters, zbench's model has %lld\n",
			x->name, (long long)x->m.params, (long long)want);
}

typedef struct summary {
	double step, gpu, host; /* MAPEs, NAN when nothing to average */
	int nstep, ngpu, nhost, failed;
} summary;

static summary summarize(const item *it, int n)
{
	double *pr = zb_xmalloc(3 * (size_t)n * sizeof *pr), *me = zb_xmalloc(3 * (size_t)n * sizeof *me);
	int k[3] = { 0, 0, 0 };
	summary s = { .failed = 0 };
	for (int i = 0; i < n; i++) {
		const item *x = &it[i];
		s.failed += x->failed[0] != 0;
		if (x->failed[0] || !x->measured)
			continue;
		if (x->fits) {
			pr[k[0]] = x->pred_ms;
			me[k[0]++] = x->m.step_ms;
		}
		pr[n + k[1]] = x->pred_gpu_gib;
		me[n + k[1]++] = x->m.gpu_peak_gib;
		pr[2 * n + k[2]] = x->pred_host_gib;
		me[2 * n + k[2]++] = x->m.host_rss_gib;
	}
	s.step = zb_mape(pr, me, k[0], &s.nstep);
	s.gpu = zb_mape(pr + n, me + n, k[1], &s.ngpu);
	s.host = zb_mape(pr + 2 * n, me + 2 * n, k[2], &s.nhost);
	free(pr);
	free(me);
	return s;
}

static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static void print_json(FILE *out, const item *it, int n, const summary *s, int64_t run_id)
{
	json_t *root = json_object(), *arr = json_array();
	for (int i = 0; i < n; i++) {
		const item *x = &it[i];
		json_t *o = json_pack("{s:s}", "config", x->name);
		if (x->failed[0]) {
			json_object_set_new(o, "failed", json_string(x->failed));
		} else {
			json_object_set_new(o, "framework", json_string(x->m.framework));
			json_object_set_new(o, "source", json_string(x->m.source));
			json_object_set_new(o, "measured_ms", num(x->m.step_ms));
			json_object_set_new(o, "predicted_ms", num(x->pred_ms));
			json_object_set_new(o, "error", num(zb_rel_err(x->pred_ms, x->m.step_ms)));
			json_object_set_new(o, "fits", json_boolean(x->fits));
			json_object_set_new(o, "gpu_measured_gib", num(x->m.gpu_peak_gib));
			json_object_set_new(o, "gpu_reserved_gib", num(x->m.gpu_reserved_gib));
			json_object_set_new(o, "gpu_predicted_gib", num(x->pred_gpu_gib));
			json_object_set_new(o, "host_measured_gib", num(x->m.host_rss_gib));
			json_object_set_new(o, "host_predicted_gib", num(x->pred_host_gib));
		}
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "configs", arr);
	json_object_set_new(root, "summary",
			    json_pack("{s:o, s:i, s:o, s:o, s:i}", "step_mape", num(s->step), "step_n", s->nstep,
				      "gpu_mape", num(s->gpu), "host_mape", num(s->host), "failed", s->failed));
	json_object_set_new(root, "run_id", json_integer(run_id));
	zb_json_print(out, root);
	json_decref(root);
}

/* "12.3%", or "-" when there was nothing to average */
static const char *pct(double x, char *buf, size_t n)
{
	if (isfinite(x))
		snprintf(buf, n, "%.1f%%", 100 * x);
	else
		snprintf(buf, n, "-");
	return buf;
}

static void print_summary(FILE *out, const summary *s, int n, int64_t run_id, const char *db)
{
	char a[16], b[16], c[16];
	fprintf(out, "\nstep time MAPE %s over %d configuration%s; GPU peak MAPE %s, host memory MAPE %s",
		pct(s->step, a, sizeof a), s->nstep, s->nstep == 1 ? "" : "s", pct(s->gpu, b, sizeof b),
		pct(s->host, c, sizeof c));
	if (s->failed)
		fprintf(out, "; %d of %d FAILED", s->failed, n);
	fprintf(out, "\n");
	if (run_id)
		fprintf(out, "# stored as run %lld in %s (view peer_vs_predicted)\n", (long long)run_id, db);
}

/* Open the store and record the run (committed at once, so a crash later leaves
 * the configurations done so far). */
static zb_status open_store(const zb_ds_validate_opts *f, const char *command, zb_store **s, int64_t *run_id,
			    zb_error *err)
{
	*s = NULL;
	*run_id = 0;
	if (f->no_db)
		return ZB_OK;
	zb_status st = zb_store_open(s, f->db, ZB_STORE_WRITE_WAIT_MS, err);
	if (st)
		return st;
	zb_run_info info = { .kind = "validate-deepspeed", .command = command, .version = ZB_VERSION,
			     .git_commit = ZB_GIT_COMMIT };
	if (!(st = zb_store_begin(*s, err)) && !(st = zb_store_add_run(*s, &info, run_id, err)))
		st = zb_store_commit(*s, err);
	if (st) {
		zb_store_rollback(*s);
		zb_store_close(*s);
		*s = NULL;
	}
	return st;
}

static void close_store(zb_store *s, int64_t run_id, const char *status)
{
	if (!s)
		return;
	zb_error e = { 0 };
	if (!zb_store_begin(s, &e) && !zb_store_finish_run(s, run_id, status, &e))
		zb_store_commit(s, &e);
	else
		zb_store_rollback(s);
	zb_store_close(s);
}

/* Predict, measure and store one configuration. A failure of this configuration
 * alone goes into x->failed and returns ZB_OK; a store failure is returned. */
static zb_status do_item(const zb_ds_validate_opts *f, const zb_peer_run *rows, int nrows, zb_store *s,
			 int64_t run_id, item *x, volatile const int *stop, zb_error *store_err)
{
	zb_error err = { 0 };
	zb_prediction p;
	zb_status st = predict_item(f, x, &p, &err);
	if (!st && !(st = measure_item(f, rows, nrows, x, stop, &err))) {
		x->measured = 1;
		check_params(f->log, x);
		if ((st = store_item(s, run_id, x, &p, &err))) {
			zb_prediction_free(&p);
			*store_err = err;
			return st;
		}
	}
	if (x->predicted)
		zb_prediction_free(&p);
	if (st) {
		snprintf(x->failed, sizeof x->failed, "%s", err.msg);
		fprintf(f->log, "zbench: %s: %s\n", x->name, err.msg);
	}
	return ZB_OK;
}

static zb_status check_inputs(const zb_ds_validate_opts *f, zb_error *err)
{
	struct stat sb;
	if (!f->from && stat(f->harness, &sb) != 0)
		return zb_fail(err, ZB_E_INPUT, "harness '%s' not found (run from the repository root or give --harness)",
			       f->harness);
	if (f->log_dir && (stat(f->log_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
		return zb_fail(err, ZB_E_INPUT, "--log-dir '%s' is not a directory", f->log_dir);
	return ZB_OK;
}

static void free_rows(zb_peer_run *rows, int n)
{
	for (int i = 0; i < n; i++)
		zb_peer_run_clear(&rows[i]);
	free(rows);
}

zb_status zb_ds_validate(const zb_ds_validate_opts *f, const char *command, volatile const int *stop,
			 zb_ds_validate_result *res, zb_error *err)
{
	int n = 0, nrows = 0;
	memset(res, 0, sizeof *res);
	zb_peer_run *rows = NULL;
	static char names[MAX_CONFIGS][64];
	if (check_inputs(f, err) || (f->from && zb_peer_read_file(f->from, &rows, &nrows, err)) ||
	    list_names(f, rows, nrows, names, &n, err)) {
		free_rows(rows, nrows);
		return err->status;
	}
	item *it = zb_xcalloc((size_t)n, sizeof *it);
	zb_store *s = NULL;
	int64_t run_id = 0;
	if (make_items(f, names, n, rows, nrows, it, err) || open_store(f, command, &s, &run_id, err)) {
		free_rows(rows, nrows);
		free(it);
		return err->status;
	}
	res->configs = n;
	zb_status st = ZB_OK;
	int header = 0;
	for (int i = 0; i < n && !st; i++) {
		if (*stop)
			snprintf(it[i].failed, sizeof it[i].failed, "interrupted");
		else
			st = do_item(f, rows, nrows, s, run_id, &it[i], stop, err);
		if (!f->json && !st) {
			if (!header++)
				print_header(f, &it[i], rows);
			print_row(f->out, &it[i]);
		}
	}
	summary sum = summarize(it, n);
	if (f->json)
		print_json(f->out, it, n, &sum, run_id);
	else if (!st)
		print_summary(f->out, &sum, n, run_id, f->db);
	close_store(s, run_id, st || sum.failed ? "failed" : "ok");
	for (int i = 0; i < n; i++)
		zb_peer_run_clear(&it[i].m);
	free_rows(rows, nrows);
	free(it);
	res->failed = sum.failed;
	return st;
}
