/* kfit_data.c - the measured configurations of a validate run, rebuilt; see kfit.h. */
#include "analysis/kfit.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"
#include "inputs/hwfile.h"
#include "results/query.h"
#include "results/store.h"
#include "core/attention.h"
#include "sim/engine.h"
#include "sim/predict.h"

/* The stored policy object (hwfile.c policy_json) over the defaults. */
static zb_status read_policy(const json_t *o, zb_policy *p, zb_error *err)
{
	zb_policy_defaults(p);
	if (!json_is_object(o))
		return zb_fail(err, ZB_E_INPUT, "stored configuration: 'policy' is not an object");
	const json_t *v;
	zb_status st = ZB_OK;
	const char *names[] = { "kind", "ckpt", "dtype", "attention" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if ((v = json_object_get(o, names[i])) && !json_is_string(v))
			return zb_fail(err, ZB_E_INPUT, "stored configuration: policy.%s is not a string", names[i]);
	if ((v = json_object_get(o, "kind")) && (st = zb_policy_parse(json_string_value(v), &p->kind, err)))
		return st;
	if ((v = json_object_get(o, "ckpt")) && (st = zb_ckpt_parse(json_string_value(v), &p->ckpt, err)))
		return st;
	if ((v = json_object_get(o, "dtype")) && (st = zb_dtype_parse(json_string_value(v), &p->dtype, err)))
		return st;
	if ((v = json_object_get(o, "attention")) &&
	    (st = zb_attention_parse(json_string_value(v), &p->attention, err)))
		return st;
	if ((v = json_object_get(o, "ratio")))
		p->ratio = json_number_value(v);
	if ((v = json_object_get(o, "link_rate_Bps")))
		p->link_rate_Bps = json_number_value(v);
	const struct { const char *k; int *f; } ints[] = {
		{ "offload_param", &p->offload_param }, { "prefetch_layers", &p->prefetch_layers },
		{ "gas", &p->gas },                     { "micro_batch", &p->micro_batch },
		{ "seq", &p->seq },                     { "pageable", &p->pageable },
		{ "cpu_threads", &p->cpu_threads }, { "gpus", &p->gpus },
		{ "nodes", &p->nodes },                 { "zero_stage", &p->zero_stage },
	};
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
		if ((v = json_object_get(o, ints[i].k)))
			*ints[i].f = json_is_boolean(v) ? json_is_true(v) : (int)json_integer_value(v);
	if ((v = json_object_get(o, "bucket_params")))
		p->bucket_params = json_integer_value(v);
	return ZB_OK;
}

/* The configuration of a stored config_json, on base (the link not yet paced). */
static zb_status read_config(const char *text, const zb_hw *base, zb_config *c, zb_error *err)
{
	json_error_t je;
	json_t *root = json_loads(text ? text : "", 0, &je);
	if (!root)
		return zb_fail(err, ZB_E_INPUT, "stored configuration: bad JSON (%s)", je.text);
	memset(c, 0, sizeof *c);
	c->hw = *base;
	c->framework = json_object_get(root, "framework") ? ZB_FW_DEEPSPEED : ZB_FW_ZBENCH;
	zb_status st = zb_model_from_json(json_object_get(root, "model"), "stored model", &c->model, err);
	if (!st)
		st = read_policy(json_object_get(root, "policy"), &c->policy, err);
	c->steps = (int)json_integer_value(json_object_get(root, "steps"));
	json_decref(root);
	return st;
}

double zb_kfit_predicted_busy(const zb_kfit_set *s, int k, const zb_hw *hw, int r, zb_status *st, zb_error *err)
{
	zb_config c;
	zb_prediction p;
	if ((*st = zb_kfit_config(&s->it[k], hw, &c, err)) || (*st = zb_predict(&p, &c, err)))
		return NAN;
	double busy[ZB_RES_COUNT] = { 0 }, b = NAN;
	if (p.simulated) {
		zb_busy_window(&p.graph, p.res.start, p.res.end, s->warmup, busy);
		b = busy[r];
	}
	zb_prediction_free(&p);
	return b;
}

zb_status zb_kfit_config(const zb_kfit_item *x, const zb_hw *hw, zb_config *out, zb_error *err)
{
	*out = x->c;
	out->hw = *hw;
	double rate = out->policy.link_rate_Bps;
	out->policy.link_rate_Bps = 0;
	if (rate > 0)
		return zb_link_rate_apply(out, rate, err);
	return zb_config_validate(out, err);
}

/* The measured events of one configuration into x (0: usable). */
static int read_events(zb_store *s, zb_kfit_item *x, zb_error *err)
{
	size_t n = x->g.ntasks;
	x->mstart = zb_xmalloc(n * sizeof *x->mstart);
	x->mend = zb_xmalloc(n * sizeof *x->mend);
	for (size_t i = 0; i < n; i++)
		x->mstart[i] = x->mend[i] = NAN;
	zb_rows *q;
	if (zb_rows_open(s, ZB_Q_EVENTS_OF_SOURCE, &q, err))
		return -1;
	zb_rows_bind_int(q, 1, x->config_id);
	zb_rows_bind_text(q, 2, "measured");
	int rc;
	size_t got = 0;
	while ((rc = zb_rows_next(q)) > 0) {
		int64_t id = zb_rows_int(q, 0, -1);
		if (id < 0 || (size_t)id >= n)
			continue;
		x->mstart[id] = zb_rows_int(q, 1, 0) * 1e-9;
		x->mend[id] = zb_rows_int(q, 2, 0) * 1e-9;
		got++;
	}
	if (zb_rows_close(q, rc, "read the measured events", err))
		return -1;
	return got == n ? 0 : 1;
}

/* x->meas_se_s from the stored per-step times over the steady window (0: read; NaN
 * when the run stored none, or too few). */
static int read_step_spread(zb_store *s, zb_kfit_item *x, int warmup, zb_error *err)
{
	zb_rows *q;
	if (zb_rows_open(s, ZB_Q_MEASURED_STEP_TIMES, &q, err))
		return -1;
	zb_rows_bind_int(q, 1, x->config_id);
	double *v;
	int n, rc = zb_rows_reals(q, 0, NAN, &v, &n);
	int bad = zb_rows_close(q, rc, "read the measured step times", err) ? -1 : 0;
	x->meas_se_s = zb_step_spread(v, n, warmup).se;
	free(v);
	return bad;
}

static int by_start(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Each resource's measured intervals, sorted by start. */
static void build_intervals(zb_kfit_item *x)
{
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		x->ivl[r] = zb_xmalloc((x->g.ntasks + 1) * 2 * sizeof(double));
		x->nivl[r] = 0;
	}
	for (size_t i = 0; i < x->g.ntasks; i++) {
		int r = x->g.tasks[i].resource;
		if (r >= ZB_RES_COUNT || !(x->mend[i] >= x->mstart[i]))
			continue;
		double *v = x->ivl[r] + 2 * x->nivl[r]++;
		v[0] = x->mstart[i];
		v[1] = x->mend[i];
	}
	for (int r = 0; r < ZB_RES_COUNT; r++)
		qsort(x->ivl[r], (size_t)x->nivl[r], 2 * sizeof(double), by_start);
}

static void item_free(zb_kfit_item *x)
{
	for (int r = 0; r < ZB_RES_COUNT; r++)
		free(x->ivl[r]);
	zb_graph_free(&x->g);
	free(x->mstart);
	free(x->mend);
	memset(x, 0, sizeof *x);
}

/* Several ranks: each collective's transfer time (kfit.h) into the comm busy time;
 * the slowest rank's own occupancy stays in meas_comm_raw_s. */
static int read_transfers(zb_store *s, zb_kfit_item *x, int warmup, zb_error *err)
{
	size_t n = x->g.ntasks;
	double *late = zb_xmalloc(n * sizeof *late), *sum = zb_xcalloc(n, sizeof *sum);
	int *cnt = zb_xcalloc(n, sizeof *cnt);
	for (size_t i = 0; i < n; i++)
		late[i] = -INFINITY;
	double slow_off = NAN;
	zb_rows *q;
	if (zb_rows_open(s, ZB_Q_RANK_EVENTS, &q, err)) {
		free(late), free(sum), free(cnt);
		return -1;
	}
	zb_rows_bind_int(q, 1, x->config_id);
	int rc;
	while ((rc = zb_rows_next(q)) > 0) {
		double off = zb_rows_int(q, 1, 0) * 1e-9;
		if (zb_rows_int(q, 2, 0))
			slow_off = off;
		int64_t id = zb_rows_int(q, 3, -1);
		if (id < 0 || (size_t)id >= n || x->g.tasks[id].resource != ZB_RES_COMM)
			continue;
		double a = zb_rows_int(q, 4, 0) * 1e-9 + off, b = zb_rows_int(q, 5, 0) * 1e-9 + off;
		if (a > late[id])
			late[id] = a;
		sum[id] += b;
		cnt[id]++;
	}
	int r = zb_rows_close(q, rc, "read the rank events", err) ? -1 : 0;
	if (!r && isfinite(slow_off)) {
		double *xs = zb_xmalloc(n * sizeof *xs), *xe = zb_xmalloc(n * sizeof *xe), busy[ZB_RES_COUNT];
		for (size_t i = 0; i < n; i++) {
			xs[i] = x->mstart[i], xe[i] = x->mend[i];
			if (cnt[i] < 2)
				continue;
			xe[i] = sum[i] / cnt[i] - slow_off; /* on the slowest rank's clock */
			xs[i] = late[i] - slow_off < xe[i] ? late[i] - slow_off : xe[i];
		}
		zb_busy_window(&x->g, xs, xe, warmup, busy);
		x->meas_comm_raw_s = x->meas_busy_s[ZB_RES_COMM];
		x->meas_busy_s[ZB_RES_COMM] = busy[ZB_RES_COMM];
		free(xs), free(xe);
	}
	free(late), free(sum), free(cnt);
	return r;
}

/* One stored configuration: rebuilt, its measurement read; 1 when not usable (*why:
 * the reason when it could not be rebuilt, else left as it was). */
static int load_item(zb_store *s, int64_t id, const char *json, const zb_hw *base, int warmup, zb_kfit_item *x,
		     zb_error *why, zb_error *err)
{
	zb_error e = { 0 };
	memset(x, 0, sizeof *x);
	x->config_id = id;
	if (read_config(json, base, &x->c, &e)) {
		*why = e;
		return 1;
	}
	if (x->c.framework != ZB_FW_ZBENCH || x->c.steps <= warmup + 1)
		return 1;
	zb_config c;
	if (zb_kfit_config(x, base, &c, &e) || zb_graph_build(&x->g, &c, &e)) {
		*why = e;
		return 1;
	}
	int r = read_events(s, x, err);
	if (r)
		return r;
	x->meas_step_s = zb_step_time_window(&x->g, x->mend, warmup);
	zb_busy_window(&x->g, x->mstart, x->mend, warmup, x->meas_busy_s);
	if (!(x->meas_step_s > 0) || !isfinite(x->meas_step_s))
		return 1;
	if (read_step_spread(s, x, warmup, err))
		return -1;
	if (x->g.ranks > 1 && read_transfers(s, x, warmup, err))
		return -1;
	build_intervals(x);
	const zb_policy *p = &x->c.policy;
	snprintf(x->key, sizeof x->key, "%s/%s/r%g/t%d/mb%d/s%d/gas%d%s%s%s%s%s", x->c.model.name,
		 zb_policy_name(p->kind), p->ratio, p->cpu_threads, p->micro_batch, p->seq, p->gas,
		 p->ckpt ? "/ckpt-" : "", p->ckpt ? zb_ckpt_name(p->ckpt) : "", p->offload_param ? "/op" : "",
		 p->pageable ? "/pg" : "", p->attention == ZB_ATTN_FLASH ? "/flash" : "");
	if (p->gpus * p->nodes > 1) { /* several ranks: their count and ZeRO stage */
		size_t l = strlen(x->key);
		snprintf(x->key + l, sizeof x->key - l, "/g%dx%d/z%d", p->gpus, p->nodes, p->zero_stage);
	}
	if (p->link_rate_Bps > 0) {
		size_t l = strlen(x->key);
		snprintf(x->key + l, sizeof x->key - l, "/link%g", p->link_rate_Bps / 1e9);
	}
	return 0;
}

zb_status zb_kfit_load(const char *db, int64_t run_id, int warmup, const zb_hw *base, zb_kfit_set *out,
		       zb_error *err)
{
	memset(out, 0, sizeof *out);
	out->warmup = warmup;
	zb_store *s;
	zb_status st = zb_store_open_readonly(&s, db, 10000, err);
	if (st)
		return st;
	int found = 1;
	/* 0: the newest run that measured something (a predict that upgraded the database's
	 * schema adds a run of its own) */
	if (!run_id && (st = zb_query_int(s, ZB_Q_LATEST_RUN_MEASURED, 0, &run_id, &found, err)))
		goto done;
	if (!found) {
		st = zb_fail(err, ZB_E_INPUT, "database '%s' has no run with measured tasks", db);
		goto done;
	}
	out->run_id = run_id;
	zb_rows *q;
	/* run_id < 0: every measured configuration of every run (one `zbench run` each) */
	if ((st = zb_rows_open(s, run_id < 0 ? ZB_Q_CONFIG_ROWS_MEASURED : ZB_Q_CONFIG_ROWS_OF_RUN, &q, err)))
		goto done;
	if (run_id >= 0)
		zb_rows_bind_int(q, 1, run_id);
	int rc, cap = 0;
	zb_error why = { 0 }; /* the first configuration that could not be rebuilt */
	while ((rc = zb_rows_next(q)) > 0) {
		if (out->n == cap) {
			cap = cap ? 2 * cap : 64;
			out->it = zb_xrealloc(out->it, (size_t)cap * sizeof *out->it);
		}
		zb_kfit_item *x = &out->it[out->n];
		zb_error w = { 0 };
		int r = load_item(s, zb_rows_int(q, 0, 0), zb_rows_text(q, 26), base, warmup, x, &w, err);
		if (w.msg[0] && !why.msg[0])
			why = w;
		if (r < 0) {
			item_free(x);
			rc = -1;
			break;
		}
		if (r) {
			item_free(x);
			out->skipped++;
		} else {
			x->run_id = zb_rows_int(q, 1, 0);
			out->n++;
		}
	}
	st = zb_rows_close(q, rc, "read the configurations", err);
	char runs[48];
	if (run_id < 0)
		snprintf(runs, sizeof runs, "every run");
	else
		snprintf(runs, sizeof runs, "run %lld", (long long)run_id);
	if (!st && out->n == 0 && why.msg[0]) /* measured, but not rebuilt here: say why */
		st = zb_fail(err, ZB_E_INPUT, "%s of '%s': %d measured configurations could not be rebuilt (%s)", runs,
			     db, out->skipped, why.msg);
	else if (!st && out->n == 0)
		st = zb_fail(err, ZB_E_INPUT, "%s of '%s' has no measured configurations of zbench's executor", runs, db);
done:
	zb_store_close(s);
	if (st)
		zb_kfit_free(out);
	return st;
}

void zb_kfit_free(zb_kfit_set *s)
{
	for (int i = 0; i < s->n; i++)
		item_free(&s->it[i]);
	free(s->it);
	s->it = NULL;
	s->n = 0;
}
