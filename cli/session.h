/*
 * session.h - one zbench invocation's database work: open the store (default
 * results/zbench.db, --db PATH, or none with --no-db), begin one write
 * transaction, record the run, and commit at the end; any failure rolls the whole
 * invocation back so no partial rows remain.
 */
#ifndef ZB_SESSION_H
#define ZB_SESSION_H

#include <stdint.h>

#include "cli/options.h"
#include "results/store.h"

typedef struct zb_session {
	zb_store *store;     /* NULL with --no-db */
	int64_t run_id;
	int in_txn;
	const char *path;    /* the database */
	int64_t first_config, last_config, nconfigs; /* what it stored, for the line at commit */
} zb_session;

/* zb_session_open in two halves: prepare opens the database before the work (so
 * an unusable one - unwritable, damaged, newer - fails before anything is computed
 * or printed), begin starts the transaction and records the run once the results
 * are there (waiting for other writers). */
zb_status zb_session_prepare(zb_session *s, const zb_options *o, zb_error *err);
zb_status zb_session_begin(zb_session *s, const char *kind, const char *device, int argc, char **argv,
			   zb_error *err);

zb_status zb_session_open(zb_session *s, const zb_options *o, const char *kind, const char *device,
			  int argc, char **argv, zb_error *err);
/* Commit (status "ok") and close; then one line on stderr says what was stored:
 * "zbench: stored run 12, configuration 40 in results/zbench.db". */
zb_status zb_session_commit(zb_session *s, const char *status, zb_error *err);

/* A configuration the command stored itself (zb_session_store_prediction notes its own). */
void zb_session_note_config(zb_session *s, int64_t config_id);
/* Roll back everything of this invocation and close. */
void zb_session_abort(zb_session *s);

/* Store a configuration with its prediction (res NULL when it does not fit) and,
 * when timeline is set, its tasks and predicted events. */
zb_status zb_session_store_prediction(zb_session *s, const zb_config *c, const zb_graph *g,
				      const zb_sim_result *res, const zb_memory *mem, int timeline,
				      int64_t *config_id, zb_error *err);

#endif
