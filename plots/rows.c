/*
 * rows.c - what plots read from the results database (plots/parts.h), through the
 * named queries of results/query.h.
 *
 * Rows of configs (with their prediction) load into struct row, with each
 * configuration column as a display string ("16 cores", "ratio 0.25") that is also
 * the grouping key, and as a number for numeric axes. A sweep's lines, bars and
 * labels come from which of those columns vary within the run, so a plot needs no
 * knowledge of the command line that made the sweep.
 *
 * Cost: one query per plot (plus one or two per configuration for measured step
 * times in the accuracy plot); a 100,000-row sweep loads in well under a second.
 */
#include "plots/parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"

/* A named query (results/query.h) with ?1 = id when it takes one. */
zb_status plot_rows_open(plot_ctx *c, zb_query which, int64_t id, zb_rows **q)
{
	zb_status st = zb_rows_open(c->store, which, q, c->err);
	if (!st)
		zb_rows_bind_int(*q, 1, id);
	return st;
}

/* One integer from a named query; *found = 0 when it gives no row or NULL. */
zb_status plot_query_int(plot_ctx *c, zb_query which, int64_t arg, int64_t *out, int *found)
{
	return zb_query_int(c->store, which, arg, out, found, c->err);
}

/* ---- configuration rows ------------------------------------------------------- */

const struct plot_attr plot_attrs[A_COUNT] = {
	[A_HW] = { "hw", "machine", 0 },
	[A_LINK] = { "link", "host link (PCIe generation)", 0 },
	[A_GPU] = { "gpu", "GPU", 0 },
	[A_CPU] = { "cpu", "CPU", 0 },
	[A_CORES] = { "cpu_cores", "CPU cores", 1 },
	[A_MODEL] = { "model", "model", 0 },
	[A_POLICY] = { "policy", "offload policy", 0 },
	[A_RATIO] = { "ratio", "Twin-Flow ratio (fraction of parameters updated by the CPU)", 1 },
	[A_OFFLOAD_PARAM] = { "offload_param", "parameter offload", 0 },
	[A_PREFETCH] = { "prefetch_layers", "parameter prefetch (layers)", 1 },
	[A_CKPT] = { "ckpt", "activation checkpointing", 0 },
	[A_GAS] = { "gas", "gradient accumulation steps", 1 },
	[A_MB] = { "micro_batch", "micro-batch (sequences)", 1 },
	[A_SEQ] = { "seq", "sequence length (tokens)", 1 },
	[A_DTYPE] = { "dtype", "precision", 0 },
	[A_PAGEABLE] = { "pageable", "host buffers", 0 },
	[A_BUCKET] = { "bucket_params", "gradient bucket (parameters)", 1 },
	[A_THREADS] = { "cpu_threads", "CPU optimizer threads", 1 },
};


int plot_sl_find(const strlist *l, const char *s)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->s[i], s))
			return i;
	return -1;
}

int plot_sl_intern(strlist *l, const char *s)
{
	int i = plot_sl_find(l, s);
	if (i >= 0)
		return i;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->s = zb_xrealloc(l->s, (size_t)l->cap * sizeof *l->s);
	}
	l->s[l->n] = strdup(s);
	return l->n++;
}

void plot_sl_free(strlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->s[i]);
	free(l->s);
	memset(l, 0, sizeof *l);
}


void plot_rowset_free(rowset *rs)
{
	for (int i = 0; i < rs->n; i++)
		free(rs->r[i].json);
	free(rs->r);
	for (int a = 0; a < A_COUNT; a++)
		plot_sl_free(&rs->pool[a]);
	memset(rs, 0, sizeof *rs);
}

static void attr_format(rowset *rs, row *r, int a, zb_rows *q, int col)
{
	const char *t = zb_rows_text(q, col);
	double v = zb_rows_real(q, col, 0);
	char o[ZB_NAME_MAX + 32];
	size_t n = sizeof o;
	r->num[a] = v;
	if (!t)
		snprintf(o, n, "?");
	else switch (a) {
	case A_CORES: snprintf(o, n, "%.0f cores", v); break;
	case A_RATIO: snprintf(o, n, "ratio %.4g", v); break;
	case A_OFFLOAD_PARAM: snprintf(o, n, "%s", v ? "param offload" : "no param offload"); break;
	case A_PREFETCH: snprintf(o, n, "prefetch %.0f", v); break;
	case A_CKPT: snprintf(o, n, "ckpt %s", t); break;
	case A_GAS: snprintf(o, n, "gas %.0f", v); break;
	case A_MB: snprintf(o, n, "micro-batch %.0f", v); break;
	case A_SEQ: snprintf(o, n, "seq %.0f", v); break;
	case A_PAGEABLE: snprintf(o, n, "%s", v ? "pageable" : "pinned"); break;
	case A_BUCKET: snprintf(o, n, "bucket %.4gM", v / 1e6); break;
	case A_THREADS:
		if (v > 0)
			snprintf(o, n, "%.0f threads", v);
		else
			snprintf(o, n, "all cores");
		break;
	default: snprintf(o, n, "%s", t); break;
	}
	int k = plot_sl_intern(&rs->pool[a], o); /* before reading .s, which it may move */
	r->val[a] = rs->pool[a].s[k];
}

/* Configurations (with their predictions) of a named query of configuration rows
 * (results/query.h, ?1 = arg), in id order; with_json keeps each config_json
 * (about 1 KB a row). */
zb_status plot_load_rows_json(plot_ctx *c, zb_query which, int64_t arg, int with_json, rowset *rs)
{
	zb_rows *q;
	zb_status st = plot_rows_open(c, which, arg, &q);
	if (st)
		return st;
	memset(rs, 0, sizeof *rs);
	int cap = 0, rc;
	while ((rc = zb_rows_next(q)) > 0) {
		if (rs->n == cap) {
			cap = cap ? 2 * cap : 64;
			rs->r = zb_xrealloc(rs->r, (size_t)cap * sizeof *rs->r);
		}
		row *r = &rs->r[rs->n++];
		memset(r, 0, sizeof *r);
		r->id = zb_rows_int(q, 0, 0);
		r->run_id = zb_rows_int(q, 1, 0);
		for (int a = 0; a < A_COUNT; a++)
			attr_format(rs, r, a, q, 2 + a);
		int k = 2 + A_COUNT;
		r->has_pred = (int)zb_rows_int(q, k, 0);
		r->fits = (int)zb_rows_int(q, k + 1, 0);
		r->tokens_per_s = zb_rows_real(q, k + 2, NAN);
		r->step_time_s = zb_rows_real(q, k + 3, NAN);
		r->gpu_bytes = zb_rows_real(q, k + 4, NAN);
		r->host_bytes = zb_rows_real(q, k + 5, NAN);
		const char *js = zb_rows_text(q, k + 6);
		r->json = js && with_json ? strdup(js) : NULL;
		/* the ratio means nothing without offload */
		if (!strcmp(r->val[A_POLICY], "none")) {
			r->num[A_RATIO] = 0;
			int z = plot_sl_intern(&rs->pool[A_RATIO], "ratio 0");
			r->val[A_RATIO] = rs->pool[A_RATIO].s[z];
		}
	}
	if (rc < 0)
		plot_rowset_free(rs);
	return zb_rows_close(q, rc, NULL, c->err);
}

zb_status plot_load_rows(plot_ctx *c, zb_query which, int64_t arg, rowset *rs)
{
	return plot_load_rows_json(c, which, arg, 0, rs);
}

int plot_row_plotted(const row *r)
{
	return r->has_pred && r->fits && r->tokens_per_s > 0;
}

/* Distinct values of attribute a among the rows that pass keep (NULL: all). */
int plot_distinct(const rowset *rs, int a, int (*keep)(const row *))
{
	strlist l = { 0 };
	for (int i = 0; i < rs->n; i++)
		if (!keep || keep(&rs->r[i]))
			plot_sl_intern(&l, rs->r[i].val[a]);
	int n = l.n;
	plot_sl_free(&l);
	return n;
}

/* "gen4, 16 cores, dpu": the values of the attributes in mask, in table order. The
 * ratio is left out for policy none. */
void plot_row_label(const row *r, unsigned mask, const char *sep, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (int a = 0; a < A_COUNT; a++) {
		if (!(mask & (1u << a)))
			continue;
		if (a == A_RATIO && !strcmp(r->val[A_POLICY], "none"))
			continue;
		int w = snprintf(buf + len, n - len, "%s%s", len ? sep : "", r->val[a]);
		if (w < 0 || (size_t)w >= n - len)
			break;
		len += (size_t)w;
	}
}

/* Attributes (as a mask) with more than one value among the rows that pass keep. */
unsigned plot_varying_mask(const rowset *rs, int (*keep)(const row *))
{
	unsigned m = 0;
	for (int a = 0; a < A_COUNT; a++)
		if (plot_distinct(rs, a, keep) > 1)
			m |= 1u << a;
	return m;
}

/* The settings every plotted row shares, for a subtitle: "gpt2-large on
 * h200-machine (h200), dpu, micro-batch 8, seq 1024". */
void plot_constants_label(const row *r, unsigned varying, char *buf, size_t n)
{
	char hw[160] = "", rest[400];
	unsigned show = 0;
	static const int parts[] = { A_LINK, A_CORES, A_POLICY, A_RATIO, A_MB, A_SEQ, A_GAS,
				     A_CKPT, A_OFFLOAD_PARAM, A_DTYPE, A_THREADS };
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		int a = parts[i];
		if (varying & (1u << a))
			continue;
		if (a == A_CKPT && !strcmp(r->val[a], "ckpt none"))
			continue;
		if (a == A_GAS && r->num[a] == 1)
			continue;
		if (a == A_OFFLOAD_PARAM && !r->num[a])
			continue;
		if (a == A_DTYPE && !strcmp(r->val[a], "bf16"))
			continue;
		if (a == A_THREADS && r->num[a] <= 0)
			continue;
		show |= 1u << a;
	}
	plot_row_label(r, show, ", ", rest, sizeof rest);
	if (!(varying & (1u << A_HW)))
		snprintf(hw, sizeof hw, " on %s", r->val[A_HW]);
	if (!(varying & (1u << A_GPU)))
		snprintf(hw + strlen(hw), sizeof hw - strlen(hw), " (%s)", r->val[A_GPU]);
	snprintf(buf, n, "%s%s%s%s", varying & (1u << A_MODEL) ? "" : r->val[A_MODEL], hw, rest[0] ? ", " : "",
		 rest);
}

/* ---- which run, which configuration ------------------------------------------- */

zb_status plot_check_run(plot_ctx *c, int64_t run)
{
	int64_t v;
	int found;
	zb_status st = plot_query_int(c, ZB_Q_RUN_ID, run, &v, &found);
	if (st)
		return st;
	if (!found) {
		int64_t last = 0;
		int any;
		if ((st = plot_query_int(c, ZB_Q_RUN_MAX, 0, &last, &any)))
			return st;
		if (any)
			return zb_fail(c->err, ZB_E_INPUT, "no run %lld in database '%s' (runs 1 to %lld)", (long long)run,
				       c->dbpath, (long long)last);
		return zb_fail(c->err, ZB_E_INPUT, "no run %lld in database '%s' (it has no runs)", (long long)run,
			       c->dbpath);
	}
	return ZB_OK;
}

zb_status plot_check_config(plot_ctx *c, int64_t id)
{
	int64_t v;
	int found;
	zb_status st = plot_query_int(c, ZB_Q_CONFIG_ID, id, &v, &found);
	if (st)
		return st;
	if (!found) {
		int64_t last = 0;
		int any;
		if ((st = plot_query_int(c, ZB_Q_CONFIG_MAX, 0, &last, &any)))
			return st;
		if (any)
			return zb_fail(c->err, ZB_E_INPUT, "no config %lld in database '%s' (configs 1 to %lld)",
				       (long long)id, c->dbpath, (long long)last);
		return zb_fail(c->err, ZB_E_INPUT, "no config %lld in database '%s' (it has no configs)",
			       (long long)id, c->dbpath);
	}
	return ZB_OK;
}

/* The run a sweep plot draws: --run, the run of --config, or the latest sweep. */
zb_status plot_sweep_run(plot_ctx *c, int64_t *run)
{
	const zb_plot_request *r = c->req;
	zb_status st;
	int found;
	if (r->run_id) {
		*run = r->run_id;
		return plot_check_run(c, r->run_id);
	}
	if (r->config_id) {
		if ((st = plot_check_config(c, r->config_id)))
			return st;
		return plot_query_int(c, ZB_Q_CONFIG_RUN, r->config_id, run, &found);
	}
	if ((st = plot_query_int(c, ZB_Q_LATEST_SWEEP_RUN, 0, run, &found)))
		return st;
	if (!found)
		return zb_fail(c->err, ZB_E_INPUT, "no sweep run in database '%s' (run zbench sweep, or give --run)",
			       c->dbpath);
	return ZB_OK;
}

/* The measured steady-state step time of a configuration: the median of its
 * measured steps after the first two (warm-up, as predictions skip them), or, with
 * no steps rows, the median spacing of the measured events' step starts. 0 with
 * *out = NAN when nothing was measured. */
zb_status plot_measured_step_s(plot_ctx *c, int64_t id, double *out)
{
	*out = NAN;
	zb_rows *q;
	zb_status st = plot_rows_open(c, ZB_Q_MEASURED_STEP_TIMES, id, &q);
	if (st)
		return st;
	double *v;
	int n, rc = zb_rows_reals(q, 0, 0, &v, &n);
	if ((st = zb_rows_close(q, rc, NULL, c->err))) {
		free(v);
		return st;
	}
	if (n > 0) {
		int skip = n > 2 ? 2 : 0;
		*out = zb_median(v + skip, n - skip);
		free(v);
		return ZB_OK;
	}
	if ((st = plot_rows_open(c, ZB_Q_MEASURED_STEP_SPANS, id, &q))) {
		free(v);
		return st;
	}
	double *s0 = NULL, first_end = 0;
	int cap = 0;
	n = 0;
	while ((rc = zb_rows_next(q)) > 0) {
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			s0 = zb_xrealloc(s0, (size_t)cap * sizeof *s0);
		}
		s0[n] = (double)zb_rows_int(q, 1, 0);
		if (n == 0)
			first_end = (double)zb_rows_int(q, 2, 0);
		n++;
	}
	free(v);
	if ((st = zb_rows_close(q, rc, NULL, c->err))) {
		free(s0);
		return st;
	}
	if (n == 1)
		*out = (first_end - s0[0]) * 1e-9;
	else if (n > 1) {
		int nd = n - 1;
		double *d = zb_xmalloc((size_t)nd * sizeof *d);
		for (int i = 0; i < nd; i++)
			d[i] = (s0[i + 1] - s0[i]) * 1e-9;
		int skip = nd > 2 ? 2 : 0;
		*out = zb_median(d + skip, nd - skip);
		free(d);
	}
	free(s0);
	return ZB_OK;
}
