/*
 * store_writers.c - the rows of a run: the run itself, its configurations and their
 * predictions (store.h); the bulk rows of tasks and events are store_rows.c.
 */
#include "results/store_parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/model.h"

/* ---- writers ------------------------------------------------------------------ */

zb_status zb_store_add_run(zb_store *s, const zb_run_info *info, int64_t *run_id, zb_error *err)
{
	if (!info || !info->kind)
		return zb_fail(err, ZB_E_INTERNAL, "run without a kind");
	char host[256];
	const char *h = info->host;
	if (!h) {
		if (gethostname(host, sizeof host) != 0)
			snprintf(host, sizeof host, "unknown");
		host[sizeof host - 1] = '\0';
		h = host;
	}
	const char *version = info->version;
#ifdef ZB_VERSION
	if (!version)
		version = ZB_VERSION;
#endif
	const char *commit = info->git_commit && *info->git_commit ? info->git_commit : NULL;

	sqlite3_stmt *q = NULL;
	int own;
	zb_status st = store_stmt(s, ST_RUN, &q, err);
	if (st != ZB_OK)
		return st;
	st = store_wbegin(s, &own, "insert a run", err);
	if (st != ZB_OK)
		return st;
	int rc = store_bind_text(q, 1, info->kind);
	rc |= store_bind_text(q, 2, h);
	rc |= store_bind_text(q, 3, version);
	rc |= store_bind_text(q, 4, commit);
	rc |= store_bind_text(q, 5, info->device);
	rc |= store_bind_text(q, 6, info->command);
	if (rc == SQLITE_OK)
		rc = store_step_done(q);
	else
		rc = sqlite3_errcode(s->db);
	if (rc != SQLITE_OK)
		st = store_sql_fail(s, rc, "insert a run", err);
	else if (run_id)
		*run_id = sqlite3_last_insert_rowid(s->db);
	return store_wend(s, own, st, "insert a run", err);
}

zb_status zb_store_finish_run(zb_store *s, int64_t run_id, const char *status, zb_error *err)
{
	sqlite3_stmt *q = NULL;
	int own;
	zb_status st = store_stmt(s, ST_FINISH, &q, err);
	if (st != ZB_OK)
		return st;
	st = store_wbegin(s, &own, "finish a run", err);
	if (st != ZB_OK)
		return st;
	int rc = sqlite3_bind_int64(q, 1, run_id);
	rc |= store_bind_text(q, 2, status ? status : "ok");
	if (rc == SQLITE_OK)
		rc = store_step_done(q);
	else
		rc = sqlite3_errcode(s->db);
	if (rc != SQLITE_OK)
		st = store_sql_fail(s, rc, "finish a run", err);
	else if (sqlite3_changes(s->db) != 1)
		st = zb_fail(err, ZB_E_STORE, "no run %lld in database '%s'", (long long)run_id,
			     s->path);
	return store_wend(s, own, st, "finish a run", err);
}

zb_status zb_store_set_run_device(zb_store *s, int64_t run_id, const char *device, zb_error *err)
{
	sqlite3_stmt *q = NULL;
	int own;
	zb_status st = store_stmt(s, ST_DEVICE, &q, err);
	if (st != ZB_OK)
		return st;
	st = store_wbegin(s, &own, "record a run's device", err);
	if (st != ZB_OK)
		return st;
	int rc = sqlite3_bind_int64(q, 1, run_id);
	rc |= store_bind_text(q, 2, device);
	if (rc == SQLITE_OK)
		rc = store_step_done(q);
	else
		rc = sqlite3_errcode(s->db);
	if (rc != SQLITE_OK)
		st = store_sql_fail(s, rc, "record a run's device", err);
	return store_wend(s, own, st, "record a run's device", err);
}

zb_status zb_store_add_config(zb_store *s, int64_t run_id, const zb_config *cfg,
			      const char *config_json, int64_t *config_id, zb_error *err)
{
	const zb_policy *p = &cfg->policy;
	sqlite3_stmt *q = NULL;
	int own;
	zb_status st = store_stmt(s, ST_CONFIG, &q, err);
	if (st != ZB_OK)
		return st;
	st = store_wbegin(s, &own, "insert a configuration", err);
	if (st != ZB_OK)
		return st;
	int rc = sqlite3_bind_int64(q, 1, run_id);
	rc |= store_bind_text(q, 2, cfg->hw.name);
	rc |= store_bind_text(q, 3, cfg->hw.link.name);
	rc |= store_bind_text(q, 4, cfg->hw.gpu.name);
	rc |= store_bind_text(q, 5, cfg->hw.cpu.name);
	rc |= sqlite3_bind_int(q, 6, cfg->hw.cpu.cores);
	rc |= store_bind_text(q, 7, cfg->model.name);
	rc |= store_bind_static(q, 8, zb_policy_name(p->kind));
	rc |= sqlite3_bind_double(q, 9, p->ratio);
	rc |= sqlite3_bind_int(q, 10, p->offload_param);
	rc |= sqlite3_bind_int(q, 11, p->prefetch_layers);
	rc |= store_bind_static(q, 12, zb_ckpt_name(p->ckpt));
	rc |= sqlite3_bind_int(q, 13, p->gas);
	rc |= sqlite3_bind_int(q, 14, p->micro_batch);
	rc |= sqlite3_bind_int(q, 15, p->seq);
	rc |= store_bind_static(q, 16, zb_dtype_name(p->dtype));
	rc |= sqlite3_bind_int(q, 17, p->pageable);
	rc |= sqlite3_bind_int64(q, 18, p->bucket_params);
	rc |= sqlite3_bind_int(q, 19, p->cpu_threads);
	rc |= sqlite3_bind_int(q, 20, cfg->steps);
	/* A model that failed validation has no parameter count (and heads 0 would
	 * divide by zero in the head dimension). */
	if (cfg->model.heads > 0 && cfg->model.layers >= 0)
		rc |= sqlite3_bind_int64(q, 21, zb_model_params(&cfg->model));
	else
		rc |= sqlite3_bind_null(q, 21);
	rc |= store_bind_text(q, 22, config_json);
	if (rc == SQLITE_OK)
		rc = store_step_done(q);
	else
		rc = sqlite3_errcode(s->db);
	if (rc != SQLITE_OK)
		st = store_sql_fail(s, rc, "insert a configuration", err);
	else if (config_id)
		*config_id = sqlite3_last_insert_rowid(s->db);
	return store_wend(s, own, st, "insert a configuration", err);
}

zb_status zb_store_add_prediction(zb_store *s, int64_t config_id, const zb_graph *g,
				  const zb_sim_result *res, const zb_memory *mem, zb_error *err)
{
	if (!res && !mem)
		return zb_fail(err, ZB_E_INTERNAL, "prediction of config %lld has neither a result"
			       " nor a memory estimate", (long long)config_id);
	sqlite3_stmt *q = NULL;
	int own;
	zb_status st = store_stmt(s, ST_PRED, &q, err);
	if (st != ZB_OK)
		return st;
	st = store_wbegin(s, &own, "insert a prediction", err);
	if (st != ZB_OK)
		return st;
	int fits = mem ? mem->fits : 1;
	int rc = sqlite3_bind_int64(q, 1, config_id);
	rc |= sqlite3_bind_int(q, 2, fits);
	rc |= store_bind_text(q, 3, mem && !mem->fits && mem->reason[0] ? mem->reason : NULL);
	if (res) {
		rc |= sqlite3_bind_double(q, 4, res->total_s);
		rc |= sqlite3_bind_double(q, 5, res->step_time_s);
		rc |= sqlite3_bind_double(q, 6, res->tokens_per_s);
		rc |= sqlite3_bind_double(q, 7, res->tflops_per_gpu);
		rc |= store_bind_static(q, 8, zb_resource_name(res->bottleneck));
		rc |= sqlite3_bind_double(q, 9, res->lower_bound_s);
		rc |= store_bind_static(q, 10, zb_resource_name(res->bound_resource));
		/* columns 11-15 and 16-20 are the first five resources; the sixth
		 * (ZB_RES_COMM, schema version 7) is 26 and 27 */
		for (int r = 0; r < ZB_RES_COMM; r++) {
			rc |= sqlite3_bind_double(q, 11 + r, res->busy_s[r]);
			rc |= sqlite3_bind_double(q, 16 + r, res->work_s[r]);
		}
		rc |= sqlite3_bind_double(q, 26, res->busy_s[ZB_RES_COMM]);
		rc |= sqlite3_bind_double(q, 27, res->work_s[ZB_RES_COMM]);
		rc |= sqlite3_bind_int64(q, 25, (sqlite3_int64)res->events);
	} else {
		for (int i = 4; i <= 20; i++)
			rc |= sqlite3_bind_null(q, i);
		rc |= sqlite3_bind_null(q, 25);
		rc |= sqlite3_bind_null(q, 26);
		rc |= sqlite3_bind_null(q, 27);
	}
	if (g && g->ntasks) { /* no schedule (does not fit): copies unknown */
		rc |= sqlite3_bind_double(q, 21, g->copy_bytes[ZB_RES_H2D]);
		rc |= sqlite3_bind_double(q, 22, g->copy_bytes[ZB_RES_D2H]);
	} else {
		rc |= sqlite3_bind_null(q, 21);
		rc |= sqlite3_bind_null(q, 22);
	}
	if (mem) {
		rc |= sqlite3_bind_double(q, 23, mem->gpu_bytes);
		rc |= sqlite3_bind_double(q, 24, mem->host_bytes);
	} else {
		rc |= sqlite3_bind_null(q, 23);
		rc |= sqlite3_bind_null(q, 24);
	}
	if (rc == SQLITE_OK)
		rc = store_step_done(q);
	else
		rc = sqlite3_errcode(s->db);
	if (rc != SQLITE_OK)
		st = store_sql_fail(s, rc, "insert a prediction", err);
	return store_wend(s, own, st, "insert a prediction", err);
}

