/*
 * store_ranks.c - the ranks and rank_events rows (store_ranks.h).
 */
#include "results/store_ranks.h"

#include <math.h>
#include <stdio.h>

#include "results/store_parts.h"

_Static_assert(ZB_RES_COUNT == 6, "ranks has busy_ columns for 6 resources");

static int bind_rank(sqlite3_stmt *q, int64_t config_id, const zb_rank_row *r)
{
	int rc = sqlite3_bind_int64(q, 1, config_id);
	rc |= sqlite3_bind_int(q, 2, r->rank);
	rc |= store_bind_text(q, 3, r->device);
	rc |= sqlite3_bind_int(q, 4, r->cpu_threads);
	rc |= sqlite3_bind_int64(q, 5, r->t0_offset_ns);
	rc |= isfinite(r->step_time_s) ? sqlite3_bind_double(q, 6, r->step_time_s) : sqlite3_bind_null(q, 6);
	rc |= sqlite3_bind_int(q, 7, r->slowest);
	for (int res = 0; res < ZB_RES_COUNT; res++)
		rc |= sqlite3_bind_double(q, 8 + res, r->busy_s[res]);
	return rc;
}

static zb_status add_rows(zb_store *s, sqlite3_stmt *qr, sqlite3_stmt *qe, int64_t config_id, const zb_graph *g,
			  const zb_rank_row *rows, int n, zb_error *err)
{
	for (int i = 0; i < n; i++) {
		const zb_rank_row *r = &rows[i];
		int rc = bind_rank(qr, config_id, r);
		rc = rc == SQLITE_OK ? store_step_done(qr) : sqlite3_errcode(s->db);
		if (rc != SQLITE_OK)
			return store_sql_fail(s, rc, "insert ranks", err);
		for (size_t t = 0; r->start && t < g->ntasks; t++) {
			if (!(r->start[t] >= 0 && r->end[t] >= r->start[t]))
				continue; /* not run */
			rc = sqlite3_bind_int64(qe, 1, config_id);
			rc |= sqlite3_bind_int(qe, 2, r->rank);
			rc |= sqlite3_bind_int64(qe, 3, (int64_t)t);
			rc |= sqlite3_bind_int64(qe, 4, llround(r->start[t] * 1e9));
			rc |= sqlite3_bind_int64(qe, 5, llround(r->end[t] * 1e9));
			rc = rc == SQLITE_OK ? store_step_done(qe) : sqlite3_errcode(s->db);
			if (rc != SQLITE_OK)
				return store_sql_fail(s, rc, "insert rank_events", err);
		}
	}
	return ZB_OK;
}

zb_status zb_store_add_ranks(zb_store *s, int64_t config_id, const zb_graph *g, const zb_rank_row *rows, int n,
			     zb_error *err)
{
	sqlite3_stmt *qr = NULL, *qe = NULL;
	int rc = sqlite3_prepare_v2(s->db,
				    "INSERT INTO ranks(config_id, rank, device, cpu_threads, t0_offset_ns, step_time_s,"
				    " slowest, busy_gpu_s, busy_d2h_s, busy_h2d_s, busy_cpu_s, busy_gpu_opt_s, busy_comm_s)"
				    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
				    -1, &qr, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db,
					"INSERT INTO rank_events(config_id, rank, task_id, start_ns, end_ns)"
					" VALUES (?, ?, ?, ?, ?)",
					-1, &qe, NULL);
	zb_status st = rc == SQLITE_OK ? ZB_OK : store_sql_fail(s, rc, "prepare the ranks inserts", err);
	int own = 0;
	if (!st && !(st = store_wbegin(s, &own, "insert ranks", err))) {
		st = add_rows(s, qr, qe, config_id, g, rows, n, err);
		st = store_wend(s, own, st, "insert ranks", err);
	}
	sqlite3_finalize(qr);
	sqlite3_finalize(qe);
	return st;
}
