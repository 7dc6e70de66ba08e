/*
 * baseline_save.c - `zbench baseline save TAG` and `baseline list` (regress.h): a
 * suite's configurations run (on the GPU, or the simulator with --sim), each one's
 * median step time over the repeats stored under TAG in the database (a run of kind
 * 'baseline' with its configs and predictions, plus baselines / baseline_results,
 * results/records.h) and, with -o FILE, written to a baseline file to commit
 * (baseline_file.h). The file is written to a temporary first and renamed only once
 * the database has committed: a failure leaves neither.
 */
#include "validate/regress.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "common/outfile.h"
#include "common/version.h"
#include "exec/executor.h"
#include "report/report.h"
#include "results/query.h"
#include "validate/baseline_file.h"
#include "validate/parts.h"
#include "validate/suite.h"
#include "validate/suite_file.h"

zb_status zb_baseline_list(const zb_regress_opts *o, zb_error *err)
{
	zb_store *s;
	zb_status st = zb_regress_open_db(o, 1, &s, err);
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

/* What a baseline save holds while it runs. */
typedef struct saving {
	zb_regress_opts o;
	const zb_suite *suite;
	int n;
	zb_config *cfg;
	zb_store *s;                /* NULL with no_db */
	zb_baseline b;
	zb_baseline_result *res;    /* per configuration, for the file */
	char hw_name[128], device[128];
	int64_t first_cfg, last_cfg;
	zb_outfile file;            /* with out_file: the temporary, renamed after the commit */
	json_t *arr;
} saving;

/* The tag, the suite, every configuration built (bad --hw fails here, before
 * anything is written), and the output file can be created. */
static zb_status save_plan(saving *v, zb_error *err)
{
	zb_regress_opts *o = &v->o;
	zb_status st;
	if (!*o->tag || strlen(o->tag) >= sizeof((zb_baseline){ 0 }.tag))
		return zb_fail(err, ZB_E_INPUT, "invalid baseline tag '%s' (1 to 127 characters)", o->tag);
	if (o->no_db && !o->out_file)
		return zb_fail(err, ZB_E_INPUT, "baseline save --no-db needs -o <file> (else the baseline goes nowhere)");
	if (!o->repeats)
		o->repeats = o->sim ? 1 : 3;
	if ((st = zb_suite_open(o->suite, &v->suite, err)))
		return st;
	if (strlen(v->suite->name) >= sizeof v->b.suite)
		return zb_fail(err, ZB_E_INPUT, "suite path '%.64s...' is longer than %zu characters", v->suite->name,
			       sizeof v->b.suite - 1);
	v->n = o->limit && o->limit < v->suite->n ? o->limit : v->suite->n;
	v->cfg = zb_xcalloc((size_t)v->n, sizeof *v->cfg);
	v->res = zb_xcalloc((size_t)v->n, sizeof *v->res);
	for (int i = 0; i < v->n; i++)
		if ((st = zb_suite_config(&v->suite->entries[i], o->hw, o->warmup, o->steps, &v->cfg[i], err)))
			return st;
	if ((st = zb_regress_hw_profile(o->hw, &v->b.hw_json, v->hw_name, sizeof v->hw_name, err)))
		return st;
	if (!o->sim && !zb_exec_available(err))
		return err->status;
	return o->out_file ? zb_outfile_probe(o->out_file, err) : ZB_OK;
}

/* The run and baselines rows, in the transaction the results join. */
static zb_status save_begin(saving *v, const char *command, zb_error *err)
{
	const zb_regress_opts *o = &v->o;
	zb_baseline *b = &v->b;
	snprintf(b->tag, sizeof b->tag, "%s", o->tag);
	snprintf(b->suite, sizeof b->suite, "%s", v->suite->name);
	snprintf(b->source, sizeof b->source, "%s", o->sim ? "predicted" : "measured");
	b->repeats = o->sim ? 1 : o->repeats;
	b->warmup = o->warmup;
	b->steps = o->steps;
	time_t now = time(NULL);
	struct tm tm;
	strftime(b->created_at, sizeof b->created_at, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	if (!v->s)
		return ZB_OK;
	zb_run_info info = { .kind = "baseline", .command = command, .version = ZB_VERSION, .git_commit = ZB_GIT_COMMIT };
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

static void save_row(saving *v, int i, const zb_baseline_result *r, int fits, const char *reason)
{
	FILE *out = v->o.json ? v->o.log : v->o.out;
	if (fits)
		fprintf(out, "%3d  %-44s %12.3f %12.0f\n", i + 1, r->key, r->step_time_s * 1e3, r->tokens_per_s);
	else
		fprintf(out, "%3d  %-44s %12s %12s  does not fit: %s\n", i + 1, r->key, "-", "-", reason);
	json_array_append_new(v->arr, json_pack("{s:s, s:o, s:o}", "key", r->key, "step_time_s",
						fits ? json_real(r->step_time_s) : json_null(), "tokens_per_s",
						fits ? json_real(r->tokens_per_s) : json_null()));
}

/* Measure every configuration and store its result; a table on out (log with --json). */
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
		zb_baseline_result *r = &v->res[i];
		zb_suite_key(&v->suite->entries[i], r->key, sizeof r->key);
		zb_config_label(&v->cfg[i], r->label, sizeof r->label);
		int fits;
		char reason[256], device[128] = "";
		st = zb_regress_measure(&v->cfg[i], o, v->s, v->b.run_id, r, &fits, reason, sizeof reason, device,
					sizeof device, err);
		if (!st && v->s)
			st = zb_baseline_add_result(v->s, v->b.id, r, err);
		if (st)
			break;
		if (device[0])
			snprintf(v->device, sizeof v->device, "%s", device);
		if (r->config_id)
			v->first_cfg = v->first_cfg ? v->first_cfg : r->config_id, v->last_cfg = r->config_id;
		save_row(v, i, r, fits, reason);
	}
	return st;
}

/* The file's temporary, complete; renamed by zb_outfile_commit after the database. */
static zb_status save_file(saving *v, zb_error *err)
{
	zb_baseline_file f = { .b = v->b, .results = v->res, .n = v->n };
	snprintf(f.hw_name, sizeof f.hw_name, "%s", v->hw_name);
	snprintf(f.device, sizeof f.device, "%s", v->device);
	snprintf(f.zbench, sizeof f.zbench, "%s%s%s", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "", ZB_GIT_COMMIT);
	const char **specs = zb_xcalloc((size_t)v->n, sizeof *specs);
	for (int i = 0; i < v->n; i++)
		specs[i] = zb_suite_entry_spec(&v->suite->entries[i]);
	f.specs = (char **)specs;
	zb_status st = zb_outfile_open(&v->file, v->o.out_file, err);
	if (!st)
		st = zb_baseline_file_dump(v->file.f, v->o.out_file, &f, err);
	free(specs);
	return st;
}

static void save_report(saving *v)
{
	const zb_regress_opts *o = &v->o;
	FILE *out = o->json ? o->log : o->out;
	if (v->s)
		fprintf(out, "# saved baseline '%s' in %s: stored run %" PRId64 ", configurations %" PRId64 "-%" PRId64 "\n",
			o->tag, o->db, v->b.run_id, v->first_cfg, v->last_cfg);
	if (o->out_file)
		fprintf(out, "# wrote baseline '%s' to %s\n", o->tag, o->out_file);
	if (o->json) {
		json_t *root = json_pack("{s:s, s:s, s:s, s:i, s:o}", "tag", o->tag, "suite", v->suite->name, "source",
					 o->sim ? "predicted" : "measured", "repeats", o->sim ? 1 : o->repeats, "configs",
					 v->arr);
		v->arr = NULL;
		if (v->s)
			json_object_set_new(root, "run_id", json_integer(v->b.run_id));
		if (o->out_file)
			json_object_set_new(root, "file", json_string(o->out_file));
		zb_json_print(o->out, root);
		json_decref(root);
	}
}

/* Results, then the file, then the database's commit: all or nothing. */
static zb_status save_all(saving *v, const char *command, zb_error *err)
{
	zb_status st = save_begin(v, command, err);
	if (st)
		return st;
	st = save_results(v, err);
	if (!st && v->o.out_file)
		st = save_file(v, err);
	if (!st && v->s)
		st = zb_store_finish_run(v->s, v->b.run_id, "ok", err);
	if (!st && v->s)
		st = zb_store_commit(v->s, err);
	else if (v->s)
		zb_store_rollback(v->s);
	if (!st && v->o.out_file)
		st = zb_outfile_commit(&v->file, err);
	zb_outfile_abort(&v->file);
	return st;
}

zb_status zb_baseline_save(const zb_regress_opts *o, const char *command, zb_error *err)
{
	saving v = { .o = *o };
	zb_status st = save_plan(&v, err);
	if (!st && !o->no_db)
		st = zb_regress_open_db(&v.o, 0, &v.s, err);
	if (!st) {
		v.arr = json_array();
		if (!(st = save_all(&v, command, err)))
			save_report(&v);
	}
	if (v.s)
		zb_store_close(v.s);
	json_decref(v.arr);
	zb_baseline_clear(&v.b);
	zb_suite_close(v.suite);
	free(v.cfg);
	free(v.res);
	return st;
}
