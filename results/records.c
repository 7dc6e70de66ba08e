/* records.c - hw_profiles, baselines and baseline_results; see records.h. */
#include "results/records.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

static zb_status fail_sql(zb_store *s, const char *doing, zb_error *err)
{
	return zb_fail(err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, zb_store_path(s),
		       sqlite3_errmsg(zb_store_db(s)));
}

static int bind_text_or_null(sqlite3_stmt *q, int i, const char *t)
{
	return t ? sqlite3_bind_text(q, i, t, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(q, i);
}

static int bind_real_or_null(sqlite3_stmt *q, int i, double v)
{
	return isfinite(v) ? sqlite3_bind_double(q, i, v) : sqlite3_bind_null(q, i);
}

/* Prepare, bind through fn, step to done, finalize. */
static zb_status exec1(zb_store *s, const char *sql, int (*bind)(sqlite3_stmt *, const void *), const void *ctx,
		       const char *doing, zb_error *err)
{
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(zb_store_db(s), sql, -1, &q, NULL) != SQLITE_OK)
		return fail_sql(s, doing, err);
	int rc = bind(q, ctx);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	zb_status st = rc == SQLITE_OK ? ZB_OK : fail_sql(s, doing, err);
	sqlite3_finalize(q);
	return st;
}

struct profile_row {
	int64_t run_id;
	const char *name, *path, *hw, *meas;
};

static int bind_profile(sqlite3_stmt *q, const void *ctx)
{
	const struct profile_row *r = ctx;
	int rc = sqlite3_bind_int64(q, 1, r->run_id);
	rc |= bind_text_or_null(q, 2, r->name);
	rc |= bind_text_or_null(q, 3, r->path);
	rc |= bind_text_or_null(q, 4, r->hw);
	rc |= bind_text_or_null(q, 5, r->meas);
	return rc;
}

zb_status zb_hw_profile_add(zb_store *s, int64_t run_id, const char *name, const char *path, const char *hw_json,
			    const char *measurements_json, int64_t *id, zb_error *err)
{
	zb_status st;
	struct profile_row r = { run_id, name, path, hw_json, measurements_json };
	st = exec1(s, "INSERT INTO hw_profiles(run_id, name, path, hw_json, measurements_json) VALUES(?1, ?2, ?3, ?4, ?5)",
		   bind_profile, &r, "insert a hardware profile", err);
	if (!st && id)
		*id = sqlite3_last_insert_rowid(zb_store_db(s));
	return st;
}

static int bind_baseline(sqlite3_stmt *q, const void *ctx)
{
	const zb_baseline *b = ctx;
	int rc = sqlite3_bind_text(q, 1, b->tag, -1, SQLITE_TRANSIENT);
	rc |= sqlite3_bind_int64(q, 2, b->run_id);
	rc |= sqlite3_bind_text(q, 3, b->suite, -1, SQLITE_TRANSIENT);
	rc |= sqlite3_bind_text(q, 4, b->source, -1, SQLITE_TRANSIENT);
	rc |= sqlite3_bind_int(q, 5, b->repeats);
	rc |= sqlite3_bind_int(q, 6, b->warmup);
	rc |= sqlite3_bind_int(q, 7, b->steps);
	rc |= bind_text_or_null(q, 8, b->hw_json);
	return rc;
}

zb_status zb_baseline_add(zb_store *s, zb_baseline *b, zb_error *err)
{
	zb_status st;
	zb_baseline old;
	if (zb_baseline_find(s, b->tag, &old, NULL) == ZB_OK) {
		zb_baseline_clear(&old);
		return zb_fail(err, ZB_E_INPUT, "baseline '%s' already exists in database '%s' (--force replaces it)",
			       b->tag, zb_store_path(s));
	}
	st = exec1(s,
		   "INSERT INTO baselines(tag, run_id, suite, source, repeats, warmup, steps, hw_json, created_at)"
		   " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
		   bind_baseline, b, "insert a baseline", err);
	if (!st)
		b->id = sqlite3_last_insert_rowid(zb_store_db(s));
	return st;
}

struct result_row {
	int64_t id;
	const zb_baseline_result *r;
	const char *samples;
};

static int bind_result(sqlite3_stmt *q, const void *ctx)
{
	const struct result_row *x = ctx;
	int rc = sqlite3_bind_int64(q, 1, x->id);
	rc |= sqlite3_bind_text(q, 2, x->r->key, -1, SQLITE_TRANSIENT);
	rc |= x->r->config_id > 0 ? sqlite3_bind_int64(q, 3, x->r->config_id) : sqlite3_bind_null(q, 3);
	rc |= sqlite3_bind_text(q, 4, x->r->label, -1, SQLITE_TRANSIENT);
	rc |= bind_real_or_null(q, 5, x->r->step_time_s);
	rc |= bind_real_or_null(q, 6, x->r->tokens_per_s);
	rc |= bind_text_or_null(q, 7, x->samples);
	return rc;
}

zb_status zb_baseline_add_result(zb_store *s, int64_t baseline_id, const zb_baseline_result *r, zb_error *err)
{
	json_t *a = json_array();
	for (int i = 0; i < r->nsamples && i < ZB_BASELINE_MAX_SAMPLES; i++)
		json_array_append_new(a, isfinite(r->samples[i]) ? json_real(r->samples[i]) : json_null());
	char *samples = json_dumps(a, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(a);
	struct result_row x = { baseline_id, r, samples };
	zb_status st = exec1(s,
			     "INSERT INTO baseline_results(baseline_id, key, config_id, label, step_time_s, tokens_per_s,"
			     " samples) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			     bind_result, &x, "insert a baseline result", err);
	free(samples);
	return st;
}

static void copy_col(char *dst, size_t n, sqlite3_stmt *q, int col)
{
	const unsigned char *t = sqlite3_column_text(q, col);
	snprintf(dst, n, "%s", t ? (const char *)t : "");
}

static int has_tables(zb_store *s)
{
	sqlite3_stmt *q = NULL;
	int found = 0;
	if (sqlite3_prepare_v2(zb_store_db(s), "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'baselines'",
			       -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
		found = sqlite3_column_int(q, 0) > 0;
	sqlite3_finalize(q);
	return found;
}

zb_status zb_baseline_find(zb_store *s, const char *tag, zb_baseline *b, zb_error *err)
{
	memset(b, 0, sizeof *b);
	if (!has_tables(s))
		return zb_fail(err, ZB_E_INPUT, "no baseline '%s' in database '%s' (it has none: zbench baseline save %s)",
			       tag, zb_store_path(s), tag);
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(zb_store_db(s),
			       "SELECT id, run_id, tag, suite, source, repeats, warmup, steps, hw_json, created_at"
			       " FROM baselines WHERE tag = ?1",
			       -1, &q, NULL) != SQLITE_OK)
		return fail_sql(s, "look up a baseline", err);
	sqlite3_bind_text(q, 1, tag, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		b->id = sqlite3_column_int64(q, 0);
		b->run_id = sqlite3_column_int64(q, 1);
		copy_col(b->tag, sizeof b->tag, q, 2);
		copy_col(b->suite, sizeof b->suite, q, 3);
		copy_col(b->source, sizeof b->source, q, 4);
		b->repeats = sqlite3_column_int(q, 5);
		b->warmup = sqlite3_column_int(q, 6);
		b->steps = sqlite3_column_int(q, 7);
		const unsigned char *hw = sqlite3_column_text(q, 8);
		b->hw_json = hw ? strdup((const char *)hw) : NULL;
		copy_col(b->created_at, sizeof b->created_at, q, 9);
		sqlite3_finalize(q);
		return ZB_OK;
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE)
		return fail_sql(s, "look up a baseline", err);
	/* name the tags there are */
	char known[256] = "";
	size_t len = 0;
	if (sqlite3_prepare_v2(zb_store_db(s), "SELECT tag FROM baselines ORDER BY id DESC LIMIT 8", -1, &q, NULL) ==
	    SQLITE_OK) {
		while (sqlite3_step(q) == SQLITE_ROW && len < sizeof known - 40)
			len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", len ? ", " : "",
						(const char *)sqlite3_column_text(q, 0));
		sqlite3_finalize(q);
	}
	return zb_fail(err, ZB_E_INPUT, "no baseline '%s' in database '%s' (known: %s)", tag, zb_store_path(s),
		       len ? known : "none");
}

static int bind_tag(sqlite3_stmt *q, const void *ctx) { return sqlite3_bind_text(q, 1, ctx, -1, SQLITE_TRANSIENT); }

zb_status zb_baseline_delete(zb_store *s, const char *tag, zb_error *err)
{
	if (!has_tables(s))
		return ZB_OK;
	return exec1(s, "DELETE FROM baselines WHERE tag = ?1", bind_tag, tag, "delete a baseline", err);
}

zb_status zb_baseline_results(zb_store *s, int64_t id, zb_baseline_result **out, int *n, zb_error *err)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(zb_store_db(s),
			       "SELECT key, config_id, label, step_time_s, tokens_per_s, samples FROM baseline_results"
			       " WHERE baseline_id = ?1 ORDER BY key",
			       -1, &q, NULL) != SQLITE_OK)
		return fail_sql(s, "read baseline results", err);
	sqlite3_bind_int64(q, 1, id);
	int cap = 0, rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 32;
			*out = zb_xrealloc(*out, (size_t)cap * sizeof **out);
		}
		zb_baseline_result *r = &(*out)[(*n)++];
		memset(r, 0, sizeof *r);
		copy_col(r->key, sizeof r->key, q, 0);
		r->config_id = sqlite3_column_int64(q, 1);
		copy_col(r->label, sizeof r->label, q, 2);
		r->step_time_s = sqlite3_column_type(q, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(q, 3);
		r->tokens_per_s = sqlite3_column_type(q, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(q, 4);
		const unsigned char *sm = sqlite3_column_text(q, 5);
		json_t *a = sm ? json_loads((const char *)sm, 0, NULL) : NULL;
		for (size_t i = 0; a && i < json_array_size(a) && r->nsamples < ZB_BASELINE_MAX_SAMPLES; i++) {
			json_t *v = json_array_get(a, i);
			r->samples[r->nsamples++] = json_is_number(v) ? json_number_value(v) : NAN;
		}
		json_decref(a);
	}
	zb_status st = rc == SQLITE_DONE ? ZB_OK : fail_sql(s, "read baseline results", err);
	sqlite3_finalize(q);
	if (st) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return st;
}

void zb_baseline_clear(zb_baseline *b)
{
	free(b->hw_json);
	b->hw_json = NULL;
}
