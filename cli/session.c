/* session.c - one invocation's database transaction; see session.h. */
#include "cli/session.h"
#include "common/version.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "inputs/hwfile.h"

/* How long to wait for another writer: ZB_STORE_WRITE_WAIT_MS, or
 * $ZBENCH_DB_WAIT_S seconds (0..86400) for those who prefer to fail fast. */
static int write_wait_ms(void)
{
	const char *e = getenv("ZBENCH_DB_WAIT_S");
	char *end;
	double s = e && *e ? strtod(e, &end) : -1;
	if (!e || !*e || *end || !(s >= 0 && s <= 86400))
		return ZB_STORE_WRITE_WAIT_MS;
	return (int)(s * 1000);
}

zb_status zb_session_prepare(zb_session *s, const zb_options *o, zb_error *err)
{
	*s = (zb_session){ .path = o->db ? o->db : ZB_STORE_DEFAULT_PATH };
	if (o->no_db)
		return ZB_OK;
	return zb_store_open(&s->store, s->path, write_wait_ms(), err);
}

zb_status zb_session_open(zb_session *s, const zb_options *o, const char *kind, const char *device,
			  int argc, char **argv, zb_error *err)
{
	zb_status st = zb_session_prepare(s, o, err);
	return st ? st : zb_session_begin(s, kind, device, argc, argv, err);
}

zb_status zb_session_begin(zb_session *s, const char *kind, const char *device, int argc, char **argv,
			   zb_error *err)
{
	zb_status st;
	if (!s->store)
		return ZB_OK;
	if ((st = zb_store_begin(s->store, err))) {
		zb_store_close(s->store);
		s->store = NULL;
		return st;
	}
	s->in_txn = 1;
	char *cmd = zb_command_line(argc, argv);
	zb_run_info info = { .kind = kind, .command = cmd, .version = ZB_VERSION,
			     .git_commit = ZB_GIT_COMMIT, .device = device };
	st = zb_store_add_run(s->store, &info, &s->run_id, err);
	free(cmd);
	if (st)
		zb_session_abort(s);
	return st;
}

zb_status zb_session_commit(zb_session *s, const char *status, zb_error *err)
{
	if (!s->store)
		return ZB_OK;
	zb_status st = zb_store_finish_run(s->store, s->run_id, status, err);
	if (!st)
		st = zb_store_commit(s->store, err);
	if (st) {
		zb_session_abort(s);
		return st;
	}
	s->in_txn = 0;
	zb_store_close(s->store);
	s->store = NULL;
	if (!strcmp(status, "interrupted"))
		return ZB_OK; /* the command's one line about the signal names the run */
	if (s->nconfigs == 1)
		fprintf(stderr, "zbench: stored run %lld, configuration %lld in %s\n", (long long)s->run_id,
			(long long)s->first_config, s->path);
	else if (s->nconfigs > 1)
		fprintf(stderr, "zbench: stored run %lld, configurations %lld-%lld (%lld) in %s\n", (long long)s->run_id,
			(long long)s->first_config, (long long)s->last_config, (long long)s->nconfigs, s->path);
	else
		fprintf(stderr, "zbench: stored run %lld in %s\n", (long long)s->run_id, s->path);
	return ZB_OK;
}

void zb_session_note_config(zb_session *s, int64_t id)
{
	if (!s->nconfigs++)
		s->first_config = id;
	s->last_config = id;
}

void zb_session_abort(zb_session *s)
{
	if (!s->store)
		return;
	if (s->in_txn)
		zb_store_rollback(s->store);
	s->in_txn = 0;
	zb_store_close(s->store);
	s->store = NULL;
}

zb_status zb_session_store_prediction(zb_session *s, const zb_config *c, const zb_graph *g,
				      const zb_sim_result *res, const zb_memory *mem, int timeline,
				      int64_t *config_id, zb_error *err)
{
	*config_id = 0;
	if (!s->store)
		return ZB_OK;
	char *json = zb_config_to_json(c);
	zb_status st = zb_store_add_config(s->store, s->run_id, c, json, config_id, err);
	free(json);
	if (!st)
		zb_session_note_config(s, *config_id);
	if (!st)
		st = zb_store_add_prediction(s->store, *config_id, g, res, mem, err);
	if (!st && timeline && res) {
		st = zb_store_add_tasks(s->store, *config_id, g, err);
		if (!st)
			st = zb_store_add_events(s->store, *config_id, "predicted", g, res->start, res->end, err);
	}
	return st;
}
