/* peers.c - the peer_runs table of peers.h: one measured run of another framework
 * per configuration. The table itself is created by store.c's migration 4, its
 * model_type, skipped_steps and ds_counts columns by migration 9. */
#include "results/peers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

static const char INSERT_SQL[] =
	"INSERT INTO peer_runs(config_id, framework, name, source, origin, note, step_ms, steps_ms,"
	" warmup_steps, fwd_ms, bwd_ms, opt_ms, gpu_peak_gib, gpu_reserved_gib, host_rss_gib, params,"
	" device, versions, measured_at, result_json, model_type, skipped_steps, ds_counts)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,"
	" ?21, ?22, ?23)";

static const char SELECT_SQL[] =
	"SELECT framework, name, source, origin, note, step_ms, steps_ms, warmup_steps, fwd_ms, bwd_ms,"
	" opt_ms, gpu_peak_gib, gpu_reserved_gib, host_rss_gib, params, device, versions, measured_at,"
	" result_json, model_type, skipped_steps FROM peer_runs WHERE config_id = ?1";

void zb_peer_run_init(zb_peer_run *r)
{
	memset(r, 0, sizeof *r);
	r->step_ms = r->fwd_ms = r->bwd_ms = r->opt_ms = NAN;
	r->gpu_peak_gib = r->gpu_reserved_gib = r->host_rss_gib = NAN;
	r->warmup_steps = r->skipped_steps = -1;
}

void zb_peer_run_clear(zb_peer_run *r)
{
	free(r->result_json);
	zb_peer_run_init(r);
}

/* The result line's ds_counts object (a new reference), NULL when there is none. */
static json_t *counts_of(const zb_peer_run *r)
{
	json_t *o = r->result_json ? json_loads(r->result_json, 0, NULL) : NULL;
	json_t *c = json_object_get(o, "ds_counts");
	if (json_is_object(c))
		json_incref(c);
	else
		c = NULL;
	json_decref(o);
	return c;
}

double zb_peer_count(const zb_peer_run *r, const char *key)
{
	json_t *c = counts_of(r);
	json_t *v = json_object_get(c, key);
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	json_decref(c);
	return x;
}

char *zb_peer_counts_json(const zb_peer_run *r)
{
	json_t *c = counts_of(r);
	char *t = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(10)) : NULL;
	json_decref(c);
	return t;
}

static zb_status store_sql_fail(zb_store *s, const char *doing, zb_error *err)
{
	return zb_fail(err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, zb_store_path(s),
		       sqlite3_errmsg(zb_store_db(s)));
}

/* NULL for "", so unknown text stays NULL in SQL. */
static int bind_text(sqlite3_stmt *q, int i, const char *t)
{
	return t && *t ? sqlite3_bind_text(q, i, t, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(q, i);
}

/* NULL for NAN: "not measured" is not a number. */
static int bind_num(sqlite3_stmt *q, int i, double x)
{
	return isfinite(x) ? sqlite3_bind_double(q, i, x) : sqlite3_bind_null(q, i);
}

/* The steps as a JSON array (malloc'd), NULL when there are none. */
static char *steps_json(const zb_peer_run *r)
{
	if (r->nsteps <= 0)
		return NULL;
	json_t *a = json_array();
	for (int i = 0; i < r->nsteps; i++)
		json_array_append_new(a, json_real(r->steps_ms[i]));
	char *t = json_dumps(a, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(a);
	return t;
}

zb_status zb_peer_store_add(zb_store *s, int64_t config_id, const zb_peer_run *r, zb_error *err)
{
	if (!(r->step_ms > 0) || !isfinite(r->step_ms))
		return zb_fail(err, ZB_E_INPUT, "peer run '%s' has no positive step time (%g ms)", r->name, r->step_ms);
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(zb_store_db(s), INSERT_SQL, -1, &q, NULL) != SQLITE_OK)
		return store_sql_fail(s, "prepare the peer_runs insert", err);
	char *steps = steps_json(r), *counts = zb_peer_counts_json(r);
	int rc = sqlite3_bind_int64(q, 1, config_id);
	rc |= bind_text(q, 2, r->framework);
	rc |= bind_text(q, 3, r->name);
	rc |= bind_text(q, 4, r->source);
	rc |= bind_text(q, 5, r->origin);
	rc |= bind_text(q, 6, r->note);
	rc |= sqlite3_bind_double(q, 7, r->step_ms);
	rc |= bind_text(q, 8, steps);
	rc |= r->warmup_steps >= 0 ? sqlite3_bind_int(q, 9, r->warmup_steps) : sqlite3_bind_null(q, 9);
	rc |= bind_num(q, 10, r->fwd_ms);
	rc |= bind_num(q, 11, r->bwd_ms);
	rc |= bind_num(q, 12, r->opt_ms);
	rc |= bind_num(q, 13, r->gpu_peak_gib);
	rc |= bind_num(q, 14, r->gpu_reserved_gib);
	rc |= bind_num(q, 15, r->host_rss_gib);
	rc |= r->params > 0 ? sqlite3_bind_int64(q, 16, r->params) : sqlite3_bind_null(q, 16);
	rc |= bind_text(q, 17, r->device);
	rc |= bind_text(q, 18, r->versions);
	rc |= bind_text(q, 19, r->measured_at);
	rc |= bind_text(q, 20, r->result_json);
	rc |= bind_text(q, 21, r->model_type);
	rc |= r->skipped_steps >= 0 ? sqlite3_bind_int(q, 22, r->skipped_steps) : sqlite3_bind_null(q, 22);
	rc |= bind_text(q, 23, counts);
	zb_status st = ZB_OK;
	if (rc != SQLITE_OK || sqlite3_step(q) != SQLITE_DONE)
		st = store_sql_fail(s, "insert into peer_runs", err);
	sqlite3_finalize(q);
	free(steps);
	free(counts);
	return st;
}

static void col_text(sqlite3_stmt *q, int i, char *out, size_t n)
{
	const unsigned char *t = sqlite3_column_text(q, i);
	snprintf(out, n, "%s", t ? (const char *)t : "");
}

static double col_num(sqlite3_stmt *q, int i)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

/* steps_ms back from its JSON text. */
static void parse_steps(const char *text, zb_peer_run *r)
{
	json_t *a = text && *text ? json_loads(text, 0, NULL) : NULL;
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		if (r->nsteps < ZB_PEER_MAX_STEPS && json_is_number(v))
			r->steps_ms[r->nsteps++] = json_number_value(v);
	}
	json_decref(a);
}

zb_status zb_peer_store_get(zb_store *s, int64_t config_id, zb_peer_run *r, zb_error *err)
{
	zb_peer_run_init(r);
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(zb_store_db(s), SELECT_SQL, -1, &q, NULL) != SQLITE_OK)
		return store_sql_fail(s, "prepare the peer_runs query", err);
	sqlite3_bind_int64(q, 1, config_id);
	int rc = sqlite3_step(q);
	if (rc != SQLITE_ROW) {
		zb_status st = rc == SQLITE_DONE
				       ? zb_fail(err, ZB_E_INPUT, "no peer run for configuration %lld in database '%s'",
						 (long long)config_id, zb_store_path(s))
				       : store_sql_fail(s, "read peer_runs", err);
		sqlite3_finalize(q);
		return st;
	}
	col_text(q, 0, r->framework, sizeof r->framework);
	col_text(q, 1, r->name, sizeof r->name);
	col_text(q, 2, r->source, sizeof r->source);
	col_text(q, 3, r->origin, sizeof r->origin);
	col_text(q, 4, r->note, sizeof r->note);
	r->step_ms = col_num(q, 5);
	parse_steps((const char *)sqlite3_column_text(q, 6), r);
	r->warmup_steps = sqlite3_column_type(q, 7) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 7);
	r->fwd_ms = col_num(q, 8);
	r->bwd_ms = col_num(q, 9);
	r->opt_ms = col_num(q, 10);
	r->gpu_peak_gib = col_num(q, 11);
	r->gpu_reserved_gib = col_num(q, 12);
	r->host_rss_gib = col_num(q, 13);
	r->params = sqlite3_column_int64(q, 14);
	col_text(q, 15, r->device, sizeof r->device);
	col_text(q, 16, r->versions, sizeof r->versions);
	col_text(q, 17, r->measured_at, sizeof r->measured_at);
	const unsigned char *raw = sqlite3_column_text(q, 18);
	r->result_json = raw ? strdup((const char *)raw) : NULL;
	col_text(q, 19, r->model_type, sizeof r->model_type);
	r->skipped_steps = sqlite3_column_type(q, 20) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 20);
	sqlite3_finalize(q);
	return ZB_OK;
}
