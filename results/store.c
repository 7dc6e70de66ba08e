/*
 * store.c - the SQLite results store of store.h: schema, migrations, writers and
 * the few readers other modules need.
 *
 * Schema (version 2; "-1" means "none" wherever graph.h uses it, times of events
 * are integer nanoseconds as in the Nsight Systems export):
 *
 *   runs(id, kind, started_at, finished_at, status, host, version, git_commit,
 *        device, command)                      one zbench invocation; times are
 *                                              ISO-8601 UTC "YYYY-MM-DDThh:mm:ss.sssZ";
 *                                              status 'running' until finished
 *   configs(id, run_id -> runs, hw, link, gpu, cpu, cpu_cores, model, policy, ratio,
 *           offload_param, prefetch_layers, ckpt, gas, micro_batch, seq, dtype,
 *           pageable, bucket_params, cpu_threads, steps, params, config_json)
 *   predictions(config_id -> configs (unique), fits, fit_reason, total_s,
 *           step_time_s, tokens_per_s, tflops_per_gpu, bottleneck, lower_bound_s,
 *           bound_resource, busy_{gpu,d2h,h2d,cpu,gpu_opt}_s, work_{...}_s,
 *           pcie_h2d_bytes, pcie_d2h_bytes (per step), gpu_bytes, host_bytes, events)
 *   tasks(config_id -> configs, task_id, kind, resource, op, pass, step, micro,
 *           unit, bucket, flops, bytes, params, param_offset, m, n, k, batch)
 *           primary key (config_id, task_id)
 *   task_deps(config_id -> configs, task_id, dep_id)   task_id waits for dep_id
 *   events(config_id -> configs, source 'predicted' | 'measured', task_id,
 *           start_ns, end_ns) primary key (config_id, source DESC, task_id):
 *           DESC puts a config's measured rows after its predicted ones, so
 *           measuring right after predicting appends to the B-tree instead of
 *           inserting in the middle (half the cost per row)
 *   steps(config_id -> configs, source, step, time_s)         (version 2)
 *   event_pairs: view, predicted JOIN measured on task id, with the task's kind,
 *           resource, op and step                             (version 2)
 *
 * Text columns hold the names of graph.h and config.h (zb_resource_name, ...), so
 * queries read "WHERE resource = 'cpu'". Deleting a run deletes everything below
 * it (ON DELETE CASCADE). The file carries PRAGMA application_id 'zbch' so a
 * database of another program is refused rather than written into.
 *
 * Migrations: migrations[i] takes a database from version i to i + 1. A new schema
 * version is one more entry at the end (and ZB_SCHEMA_VERSION in store.h); all
 * missing steps run inside one transaction, so a failed migration changes nothing.
 *
 * Writers reuse prepared statements (prepared on first use, so a database opened
 * at an older version for tests only needs the tables it writes). Tasks,
 * dependencies and events go in as multi-row INSERTs of 64 rows (bulk_insert):
 * about 5,000 instructions an event row, 8,500 a task row (18 columns), 3,400 a
 * dependency row with SQLite 3.40, i.e. 0.6 to 1.2 M rows/s on the 2-core build
 * VM depending on its load, 0.8 to 1.0 M rows/s on the H200 machine's host
 * (tests/test_store.c prints the rate). One-row INSERTs managed 0.3. WAL with
 * synchronous=NORMAL syncs only at checkpoints.
 */
#include "results/store_parts.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/model.h"


/* ---- schema ----------------------------------------------------------------- */

/* Versions 1 to 3 are results/schema.c. */

/* Versions 4 to 6 are results/schema.c too. */

/* migrations[i]: version i -> i + 1. Append, never edit a shipped entry. */
static const struct migration {
	const char *what;
	const char *sql;
} migrations[] = {
	{ "create runs, configs, predictions, tasks, task_deps and events", zb_schema_v1 },
	{ "add steps, the event_pairs view and indexes", zb_schema_v2 },
	{ "add the Nsight-Systems-export trace tables and the trace_tasks view", zb_schema_v3 },
	{ "add peer_runs (measured runs of other frameworks) and the peer_vs_predicted view", zb_schema_v4 },
	{ "add ZB_THREAD_CPU and trace_steps for traces of other programs", zb_schema_v5 },
	{ "add hw_profiles, baselines and baseline_results", zb_schema_v6 },
	{ "add busy_comm_s and work_comm_s to predictions (several GPUs)", zb_schema_v7 },
	{ "add ranks and rank_events (each rank of a run on several GPUs)", zb_schema_v8 },
	{ "add model_type, skipped_steps and ds_counts to peer_runs (Hugging Face models)", zb_schema_v9 },
};

_Static_assert(sizeof migrations / sizeof migrations[0] == ZB_SCHEMA_VERSION,
	       "one migration per schema version");
_Static_assert(ZB_RES_COUNT == 6, "predictions has busy_ and work_ columns for 6 resources");

/* Tables zbench creates, for zb_store_count's error message. */
static const char *const known_tables = "runs, configs, predictions, tasks, task_deps, events, steps";

/* ---- statements ---------------------------------------------------------------- */

static const char *const stmt_sql[ST_COUNT] = {
	[ST_RUN] = "INSERT INTO runs(kind, started_at, status, host, version, git_commit, device,"
		   " command) VALUES(?1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'running',"
		   " ?2, ?3, ?4, ?5, ?6)",
	[ST_FINISH] = "UPDATE runs SET status = ?2,"
		      " finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1",
	[ST_DEVICE] = "UPDATE runs SET device = ?2 WHERE id = ?1",
	[ST_CONFIG] = "INSERT INTO configs(run_id, hw, link, gpu, cpu, cpu_cores, model, policy,"
		      " ratio, offload_param, prefetch_layers, ckpt, gas, micro_batch, seq, dtype,"
		      " pageable, bucket_params, cpu_threads, steps, params, config_json)"
		      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
		      " ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
	[ST_PRED] = "INSERT INTO predictions(config_id, fits, fit_reason, total_s, step_time_s,"
		    " tokens_per_s, tflops_per_gpu, bottleneck, lower_bound_s, bound_resource,"
		    " busy_gpu_s, busy_d2h_s, busy_h2d_s, busy_cpu_s, busy_gpu_opt_s,"
		    " work_gpu_s, work_d2h_s, work_h2d_s, work_cpu_s, work_gpu_opt_s,"
		    " pcie_h2d_bytes, pcie_d2h_bytes, gpu_bytes, host_bytes, events,"
		    " busy_comm_s, work_comm_s)"
		    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
		    " ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)",
	[ST_STEP] = "INSERT INTO steps(config_id, source, step, time_s) VALUES(?1, ?2, ?3, ?4)",
	[ST_LATEST] = "SELECT max(id) FROM configs",
	[ST_LATEST_SOURCE] = "SELECT config_id FROM events WHERE source = ?1"
			     " ORDER BY config_id DESC LIMIT 1",
};

/* ---- errors ------------------------------------------------------------------- */

/* Turn a failed SQLite call into one line. doing: what zbench was doing, as a verb
 * phrase ("insert events"). Call before anything else touches the connection, so
 * sqlite3_errmsg still describes this failure. */
zb_status store_sql_fail(const zb_store *s, int rc, const char *doing, zb_error *err)
{
	const char *why = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return zb_fail(err, ZB_E_STORE,
			       "database '%s' is locked (another connection held it for more than"
			       " %d ms; could not %s)",
			       s->path, s->busy_ms, doing);
	case SQLITE_NOTADB:
		return zb_fail(err, ZB_E_STORE, "not a zbench database: '%s' (%s)", s->path, why);
	case SQLITE_CORRUPT:
		return zb_fail(err, ZB_E_STORE, "database '%s' is corrupt (%s; could not %s)",
			       s->path, why, doing);
	case SQLITE_FULL:
		return zb_fail(err, ZB_E_STORE, "disk full writing database '%s' (could not %s)",
			       s->path, doing);
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_CANTOPEN: {
		int e = s->db ? sqlite3_system_errno(s->db) : 0;
		return zb_fail(err, ZB_E_STORE, "cannot %s in database '%s': %s (%s)", doing, s->path,
			       e == EACCES || e == EPERM || (rc & 0xff) == SQLITE_PERM ? "permission denied"
			       : e == EROFS ? "read-only file system" : e ? strerror(e) : "read-only",
			       why);
	}
	case SQLITE_NOMEM:
		return zb_fail(err, ZB_E_NOMEM, "out of memory in database '%s' (could not %s)",
			       s->path, doing);
	default:
		return zb_fail(err, ZB_E_STORE, "cannot %s in database '%s': %s", doing, s->path, why);
	}
}

/* ---- small helpers -------------------------------------------------------------- */

/* Run SQL without results (one or several statements). */
static zb_status exec_sql(zb_store *s, const char *sql, const char *doing, zb_error *err)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? ZB_OK : store_sql_fail(s, rc, doing, err);
}

/* One integer from a query of one row; returns an SQLite result code. */
static int query_int64(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_ERROR; /* no row: not what the caller asked for */
	}
	int rc2 = sqlite3_finalize(st);
	return rc != SQLITE_OK ? rc : rc2;
}

/* A PRAGMA that answers with one text value (journal_mode). */
static int pragma_text(sqlite3 *db, const char *sql, char *out, size_t n)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		snprintf(out, n, "%s", t ? (const char *)t : "");
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_ERROR;
	}
	int rc2 = sqlite3_finalize(st);
	return rc != SQLITE_OK ? rc : rc2;
}

/* The cached statement `which`, prepared on first use. */
zb_status store_stmt(zb_store *s, int which, sqlite3_stmt **out, zb_error *err)
{
	if (!s->st[which]) {
		int rc = sqlite3_prepare_v3(s->db, stmt_sql[which], -1, SQLITE_PREPARE_PERSISTENT,
					    &s->st[which], NULL);
		if (rc != SQLITE_OK) {
			s->st[which] = NULL;
			return store_sql_fail(s, rc, "prepare a statement", err);
		}
	}
	*out = s->st[which];
	return ZB_OK;
}

/* Step a bound insert/update to completion and make it reusable. Returns an
 * SQLite result code (SQLITE_OK on success). */
int store_step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	int rc2 = sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return rc2; /* SQLITE_OK */
	return rc == SQLITE_OK ? rc2 : rc;
}

/* Text or NULL, copied by SQLite (for one-off rows whose strings the caller owns). */
int store_bind_text(sqlite3_stmt *st, int i, const char *t)
{
	return t ? sqlite3_bind_text(st, i, t, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

/* Static text (the name tables of graph.h and config.h), not copied. */
int store_bind_static(sqlite3_stmt *st, int i, const char *t)
{
	return t ? sqlite3_bind_text(st, i, t, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

/* Writes of one zb_store_add_* call: inside the caller's transaction they form a
 * savepoint, so a failed call leaves the transaction as it was; outside one they
 * form their own transaction. */
zb_status store_wbegin(zb_store *s, int *own, const char *doing, zb_error *err)
{
	*own = sqlite3_get_autocommit(s->db);
	/* The caller's transaction is gone (SQLite rolls back by itself after some
	 * I/O errors): writing now would commit this call's rows on their own. */
	if (*own && s->in_txn)
		return zb_fail(err, ZB_E_STORE,
			       "cannot %s in database '%s': the transaction was rolled back after"
			       " an earlier error",
			       doing, s->path);
	if (!*own && s->no_savepoints)
		return ZB_OK;
	return exec_sql(s, *own ? "BEGIN IMMEDIATE" : "SAVEPOINT zb_add", doing, err);
}

zb_status store_wend(zb_store *s, int own, zb_status st, const char *doing, zb_error *err)
{
	if (!own && s->no_savepoints)
		return st; /* the caller rolls the whole transaction back on failure */
	if (st == ZB_OK) {
		st = exec_sql(s, own ? "COMMIT" : "RELEASE zb_add", doing, err);
		if (st == ZB_OK)
			return ZB_OK;
	}
	/* Undo this call's rows. The error already in err is the one to report; if
	 * undoing fails too (SQLite may already have rolled back after an I/O error),
	 * there is nothing more useful to say, and an abandoned transaction is rolled
	 * back when the connection closes. */
	if (own) {
		if (!sqlite3_get_autocommit(s->db))
			(void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	} else {
		(void)sqlite3_exec(s->db, "ROLLBACK TO zb_add; RELEASE zb_add", NULL, NULL, NULL);
	}
	return st;
}

static int valid_source(const char *source)
{
	return source && (!strcmp(source, "predicted") || !strcmp(source, "measured"));
}

zb_status store_check_source(const char *source, zb_error *err)
{
	if (valid_source(source))
		return ZB_OK;
	return zb_fail(err, ZB_E_INPUT, "unknown event source '%s' (known: predicted, measured)",
		       source ? source : "(null)");
}

/* ---- open, migrate, close ----------------------------------------------------- */

/* mkdir -p of the directory part of path. */
static zb_status make_parent_dirs(const char *path, zb_error *err)
{
	size_t n = strlen(path);
	char *buf = zb_xmalloc(n + 1);
	memcpy(buf, path, n + 1);
	char *slash = strrchr(buf, '/');
	zb_status st = ZB_OK;
	if (slash && slash != buf) {
		*slash = '\0';
		for (char *p = buf + 1;; p++) {
			int last = *p == '\0';
			if (*p != '/' && !last)
				continue;
			*p = '\0';
			struct stat sb;
			if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
				int e = errno;
				st = zb_fail(err, ZB_E_STORE,
					     "cannot open database '%s': cannot create directory '%s' (%s)",
					     path, buf, strerror(e));
				break;
			}
			if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
				st = zb_fail(err, ZB_E_STORE,
					     "cannot open database '%s': '%s' is not a directory", path,
					     buf);
				break;
			}
			if (last)
				break;
			*p = '/';
		}
	}
	free(buf);
	return st;
}

/* Apply migrations from the file's version up to target, all in one transaction.
 * The version is read again under the write lock: another process may have
 * migrated the file meanwhile. */
static zb_status migrate(zb_store *s, int target, zb_error *err)
{
	zb_status st = exec_sql(s, "BEGIN IMMEDIATE", "start the schema migration", err);
	if (st != ZB_OK)
		return st;
	int64_t v = 0;
	int rc = query_int64(s->db, "PRAGMA user_version", &v);
	if (rc != SQLITE_OK) {
		st = store_sql_fail(s, rc, "read the schema version", err);
	} else if (v > ZB_SCHEMA_VERSION) {
		st = zb_fail(err, ZB_E_STORE,
			     "database '%s' has schema version %lld, newer than this zbench (%d)",
			     s->path, (long long)v, ZB_SCHEMA_VERSION);
	} else if (v < 0) {
		/* not a version any zbench writes: a damaged or foreign file */
		st = zb_fail(err, ZB_E_STORE, "database '%s' has schema version %lld (must be 0..%d): not a zbench database",
			     s->path, (long long)v, ZB_SCHEMA_VERSION);
	}
	for (int64_t i = v; st == ZB_OK && i < target; i++) {
		char doing[160];
		snprintf(doing, sizeof doing, "migrate to schema version %lld (%s)",
			 (long long)i + 1, migrations[i].what);
		st = exec_sql(s, migrations[i].sql, doing, err);
	}
	if (st == ZB_OK && v < target) {
		char sql[64];
		snprintf(sql, sizeof sql, "PRAGMA user_version = %d", target);
		st = exec_sql(s, sql, "set the schema version", err);
	}
	if (st == ZB_OK)
		st = exec_sql(s, "COMMIT", "commit the schema migration", err);
	if (st != ZB_OK) {
		/* Keep the first error; the rollback only undoes a half-made schema. */
		if (!sqlite3_get_autocommit(s->db))
			(void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return st;
	}
	s->version = v < target ? target : (int)v;
	return ZB_OK;
}

/* "permission denied" for EACCES/EPERM, "read-only file system" for EROFS. */
static const char *access_why(int e)
{
	return e == EACCES || e == EPERM ? "permission denied" : e == EROFS ? "read-only file system" : strerror(e);
}

/* Before SQLite tries: a file or directory zbench may not write is one line that
 * says so (SQLite itself says "unable to open database file" or, for a file that
 * cannot be created, "No such file or directory"). The directory must be writable
 * too: the write-ahead log and its index are files beside the database. */
static zb_status check_writable(const char *path, zb_error *err)
{
	char *dir = zb_xmalloc(strlen(path) + 2);
	const char *slash = strrchr(path, '/');
	if (slash == path)
		strcpy(dir, "/");
	else if (slash)
		memcpy(dir, path, (size_t)(slash - path)), dir[slash - path] = '\0';
	else
		strcpy(dir, ".");
	zb_status st = ZB_OK;
	int exists = access(path, F_OK) == 0;
	if (exists && access(path, W_OK) != 0)
		st = zb_fail(err, ZB_E_STORE, "cannot write database '%s': %s (plot and export only read it)", path,
			     access_why(errno));
	else if (access(dir, W_OK) != 0)
		st = zb_fail(err, ZB_E_STORE, "cannot %s database '%s': %s on directory '%s'%s",
			     exists ? "write" : "create", path, access_why(errno), dir,
			     exists ? " (its write-ahead log lives there; plot and export only read)" : "");
	free(dir);
	return st;
}

/* A damaged file is refused before anything is written into it. quick_check reads
 * every page (about 1 s per GB) but skips the index-content cross-check of a full
 * integrity_check, which is what makes that one slow. */
static zb_status check_intact(zb_store *s, zb_error *err)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &q, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q);
	if (rc != SQLITE_ROW) {
		zb_status st = store_sql_fail(s, rc, "check the database's integrity", err);
		sqlite3_finalize(q);
		return st;
	}
	char first[200];
	const unsigned char *t = sqlite3_column_text(q, 0);
	snprintf(first, sizeof first, "%s", t ? (const char *)t : "");
	sqlite3_finalize(q);
	for (char *c = first; *c; c++) /* "*** in database main ***\nOn tree page ...": one line */
		if (*c == '\n')
			*c = ' ';
	if (strcmp(first, "ok") == 0)
		return ZB_OK;
	return zb_fail(err, ZB_E_STORE,
		       "database '%s' is damaged (quick_check: %s); left as it is: use another --db, or recover "
		       "rows with sqlite3 .recover",
		       s->path, first);
}

zb_status zb_store_open_version(zb_store **out, const char *path, int busy_timeout_ms,
				int version, zb_error *err)
{
	*out = NULL;
	if (!path || !*path)
		return zb_fail(err, ZB_E_INPUT, "empty database path");
	if (version < 1 || version > ZB_SCHEMA_VERSION)
		return zb_fail(err, ZB_E_INTERNAL, "no schema version %d (this zbench has 1..%d)",
			       version, ZB_SCHEMA_VERSION);
	zb_status st = make_parent_dirs(path, err);
	if (st != ZB_OK || (st = check_writable(path, err)) != ZB_OK)
		return st;

	zb_store *s = zb_xcalloc(1, sizeof *s);
	s->path = zb_xmalloc(strlen(path) + 1);
	strcpy(s->path, path);
	s->busy_ms = busy_timeout_ms < 0 ? 0 : busy_timeout_ms;

	/* NOMUTEX: a zb_store is used by one thread at a time (store.h), so SQLite's
	 * per-call connection mutex is pure cost on bulk inserts. */
	/* the path as a URI of exactly that file: SQLite built with URIs on would read
	 * "file:x?mode=..." as one */
	char *uri = store_uri(path, NULL);
	int rc = uri ? sqlite3_open_v2(uri, &s->db,
				       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, NULL)
		     : SQLITE_NOMEM;
	sqlite3_free(uri);
	if (rc != SQLITE_OK) {
		int e = s->db ? sqlite3_system_errno(s->db) : 0;
		st = zb_fail(err, ZB_E_STORE, "cannot open database '%s': %s%s%s%s", path,
			     s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc), e ? " (" : "",
			     e ? strerror(e) : "", e ? ")" : "");
		goto fail;
	}
	rc = sqlite3_extended_result_codes(s->db, 1);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(s->db, s->busy_ms);
	if (rc != SQLITE_OK) {
		st = store_sql_fail(s, rc, "configure the connection", err);
		goto fail;
	}

	/* Look before writing anything: a file of another program or of a newer
	 * zbench must stay byte-for-byte as it was. */
	int64_t v = 0, app = 0, ntables = 0;
	rc = query_int64(s->db, "PRAGMA user_version", &v);
	if (rc == SQLITE_OK)
		rc = query_int64(s->db, "PRAGMA application_id", &app);
	if (rc == SQLITE_OK)
		rc = query_int64(s->db, "SELECT count(*) FROM sqlite_master", &ntables);
	if (rc != SQLITE_OK) {
		st = store_sql_fail(s, rc, "read the schema version", err);
		goto fail;
	}
	if (v > ZB_SCHEMA_VERSION) {
		st = zb_fail(err, ZB_E_STORE,
			     "database '%s' has schema version %lld, newer than this zbench (%d)",
			     path, (long long)v, ZB_SCHEMA_VERSION);
		goto fail;
	}
	if (v < 0) {
		st = zb_fail(err, ZB_E_STORE,
			     "database '%s' has schema version %lld (must be 0..%d): damaged or not a zbench database",
			     path, (long long)v, ZB_SCHEMA_VERSION);
		goto fail;
	}
	if ((ntables > 0 || v > 0) && app != ZB_APP_ID) {
		st = zb_fail(err, ZB_E_STORE,
			     "not a zbench database: '%s' (a SQLite database of another program:"
			     " application_id %lld, user_version %lld, %lld schema objects)",
			     path, (long long)app, (long long)v, (long long)ntables);
		goto fail;
	}
	if (ntables > 0 && (st = check_intact(s, err)) != ZB_OK)
		goto fail;

	char mode[32];
	rc = pragma_text(s->db, "PRAGMA journal_mode = WAL", mode, sizeof mode);
	if (rc != SQLITE_OK) {
		st = store_sql_fail(s, rc, "switch to the write-ahead log", err);
		goto fail;
	}
	if (strcmp(mode, "wal") != 0) {
		st = zb_fail(err, ZB_E_STORE,
			     "cannot use a write-ahead log for database '%s' (journal mode stays '%s')",
			     path, mode);
		goto fail;
	}
	/* cache_size: up to 64 MiB of pages (allocated as used) keeps a bulk
	 * transaction from spilling pages into the WAL before it commits. */
	st = exec_sql(s, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;"
		      " PRAGMA cache_size = -65536",
		      "configure the connection", err);
	if (st != ZB_OK)
		goto fail;
	int64_t fk = 0;
	rc = query_int64(s->db, "PRAGMA foreign_keys", &fk);
	if (rc != SQLITE_OK || fk != 1) {
		st = rc != SQLITE_OK ? store_sql_fail(s, rc, "enable foreign keys", err)
				     : zb_fail(err, ZB_E_STORE,
					       "cannot enable foreign keys in database '%s'"
					       " (SQLite built without them)",
					       path);
		goto fail;
	}

	s->version = (int)v;
	if (v < version) {
		st = migrate(s, version, err);
		if (st != ZB_OK)
			goto fail;
	}
	*out = s;
	return ZB_OK;
fail:
	zb_store_close(s);
	return st;
}

zb_status zb_store_open(zb_store **out, const char *path, int busy_timeout_ms, zb_error *err)
{
	return zb_store_open_version(out, path, busy_timeout_ms, ZB_SCHEMA_VERSION, err);
}

/* Read the version, application id and schema size; SQLITE_OK or the failing code. */
static int read_header(sqlite3 *db, int64_t *v, int64_t *app, int64_t *ntables)
{
	int rc = query_int64(db, "PRAGMA user_version", v);
	if (rc == SQLITE_OK)
		rc = query_int64(db, "PRAGMA application_id", app);
	if (rc == SQLITE_OK)
		rc = query_int64(db, "SELECT count(*) FROM sqlite_master", ntables);
	return rc;
}

char *store_uri(const char *path, const char *query)
{
	sqlite3_str *u = sqlite3_str_new(NULL);
	sqlite3_str_appendall(u, path[0] == '/' ? "file://" : "file:"); /* an empty authority before an absolute path */
	for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
		if (isalnum(*c) || strchr("/._-~", *c))
			sqlite3_str_appendchar(u, 1, (char)*c);
		else
			sqlite3_str_appendf(u, "%%%02X", *c);
	}
	if (query)
		sqlite3_str_appendf(u, "?%s", query);
	return sqlite3_str_finish(u);
}

/* Read-only with the given URI parameters. */
static int open_ro_uri(const char *path, const char *query, int busy_ms, sqlite3 **db)
{
	char *uri = store_uri(path, query);
	if (!uri) {
		*db = NULL;
		return SQLITE_NOMEM;
	}
	int rc = sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, NULL);
	sqlite3_free(uri);
	if (rc == SQLITE_OK)
		rc = sqlite3_extended_result_codes(*db, 1);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(*db, busy_ms);
	/* the first read tells whether the folder can hold the WAL index */
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(*db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
	return rc;
}

int store_open_ro(const char *path, int busy_ms, sqlite3 **db)
{
	int rc = open_ro_uri(path, "mode=ro", busy_ms, db);
	if ((rc & 0xff) != SQLITE_CANTOPEN && (rc & 0xff) != SQLITE_READONLY)
		return rc;
	/* a WAL database whose directory is read-only: without a -wal file its content
	 * is all in the main file, so immutable reads it exactly */
	char *wal = sqlite3_mprintf("%s-wal", path);
	int has_wal = !wal || access(wal, F_OK) == 0;
	sqlite3_free(wal);
	if (has_wal)
		return rc;
	sqlite3_close_v2(*db);
	return open_ro_uri(path, "mode=ro&immutable=1", busy_ms, db);
}

zb_status zb_store_open_readonly(zb_store **out, const char *path, int busy_timeout_ms, zb_error *err)
{
	*out = NULL;
	if (!path || !*path)
		return zb_fail(err, ZB_E_INPUT, "empty database path");
	if (access(path, F_OK) != 0)
		return zb_fail(err, ZB_E_STORE, "cannot open database '%s': %s", path,
			       errno == ENOENT ? "no such file (predict or sweep create it)" : access_why(errno));
	if (access(path, R_OK) != 0)
		return zb_fail(err, ZB_E_STORE, "cannot read database '%s': %s", path, access_why(errno));
	zb_store *s = zb_xcalloc(1, sizeof *s);
	s->path = zb_xmalloc(strlen(path) + 1);
	strcpy(s->path, path);
	s->busy_ms = busy_timeout_ms < 0 ? 0 : busy_timeout_ms;
	zb_status st;
	int64_t v = 0, app = 0, ntables = 0;
	int rc = store_open_ro(path, s->busy_ms, &s->db);
	if (rc == SQLITE_OK)
		rc = read_header(s->db, &v, &app, &ntables);
	if (rc != SQLITE_OK) {
		st = store_sql_fail(s, rc, "read the schema version", err);
		goto fail;
	}
	if (v > ZB_SCHEMA_VERSION || v < 0) {
		st = zb_fail(err, ZB_E_STORE, "database '%s' has schema version %lld (this zbench reads 1..%d)", path,
			     (long long)v, ZB_SCHEMA_VERSION);
		goto fail;
	}
	if ((ntables > 0 || v > 0) && app != ZB_APP_ID) {
		st = zb_fail(err, ZB_E_STORE, "not a zbench database: '%s' (application_id %lld)", path,
			     (long long)app);
		goto fail;
	}
	if (v < ZB_SCHEMA_VERSION) {
		st = zb_fail(err, ZB_E_STORE,
			     v == 0 ? "database '%s' is empty (schema version %lld): nothing to read"
				    : "database '%s' has the older schema version %lld: any zbench predict on it "
				      "upgrades it",
			     path, (long long)v);
		goto fail;
	}
	s->version = (int)v;
	*out = s;
	return ZB_OK;
fail:
	zb_store_close(s);
	return st;
}

int zb_store_in_transaction(zb_store *s) { return s->in_txn; }

void zb_store_set_no_savepoints(zb_store *s, int on) { s->no_savepoints = on; }

void zb_store_close(zb_store *s)
{
	if (!s)
		return;
	/* sqlite3_finalize returns the last step's error, not a new one. */
	for (int i = 0; i < ST_COUNT; i++)
		(void)sqlite3_finalize(s->st[i]);
	for (int i = 0; i < BULK_COUNT; i++)
		for (int k = 0; k < 2; k++)
			(void)sqlite3_finalize(s->bulk[i][k]);
	if (s->db) {
		/* An open transaction here was abandoned by the caller: roll it back. */
		if (!sqlite3_get_autocommit(s->db))
			(void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		/* All statements are finalized, so close cannot be refused as busy; v2
		 * defers the close rather than leaking if it somehow were. */
		(void)sqlite3_close_v2(s->db);
	}
	free(s->path);
	free(s);
}

int zb_store_schema_version(zb_store *s) { return s->version; }

struct sqlite3 *zb_store_db(zb_store *s) { return s->db; }

const char *zb_store_path(zb_store *s) { return s->path; }

/* ---- transactions ------------------------------------------------------------- */

zb_status zb_store_begin(zb_store *s, zb_error *err)
{
	if (s->in_txn || !sqlite3_get_autocommit(s->db))
		return zb_fail(err, ZB_E_INTERNAL, "transaction already open in database '%s'",
			       s->path);
	zb_status st = exec_sql(s, "BEGIN IMMEDIATE", "start a write transaction", err);
	s->in_txn = st == ZB_OK;
	return st;
}

zb_status zb_store_commit(zb_store *s, zb_error *err)
{
	int had = s->in_txn;
	s->in_txn = 0;
	if (sqlite3_get_autocommit(s->db))
		return zb_fail(err, had ? ZB_E_STORE : ZB_E_INTERNAL,
			       "no transaction to commit in database '%s'%s", s->path,
			       had ? " (rolled back after an earlier error)" : "");
	zb_status st = exec_sql(s, "COMMIT", "commit", err);
	if (st != ZB_OK && !sqlite3_get_autocommit(s->db))
		(void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); /* first error kept */
	return st;
}

void zb_store_rollback(zb_store *s)
{
	/* Nothing to report: ROLLBACK fails only when there is no transaction left. */
	if (!s)
		return;
	s->in_txn = 0;
	if (!sqlite3_get_autocommit(s->db))
		(void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- readers ------------------------------------------------------------------ */

zb_status zb_store_count(zb_store *s, const char *table, int64_t *n, zb_error *err)
{
	/* The name becomes part of the SQL text, so it must be a plain identifier
	 * and an existing table of this database: nothing else is ever spliced in. */
	int plain = table && *table && !(*table >= '0' && *table <= '9');
	for (const char *c = table; plain && *c; c++)
		plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			(*c >= '0' && *c <= '9') || *c == '_';
	if (!plain)
		return zb_fail(err, ZB_E_INPUT, "unknown table '%s' (known: %s)",
			       table ? table : "(null)", known_tables);
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(s->db,
				    "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view')"
				    " AND name = ?1",
				    -1, &q, NULL);
	int64_t found = 0;
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(q);
		if (rc == SQLITE_ROW) {
			found = sqlite3_column_int64(q, 0);
			rc = SQLITE_OK;
		}
	}
	if (rc != SQLITE_OK) {
		zb_status st = store_sql_fail(s, rc, "look up a table", err);
		(void)sqlite3_finalize(q);
		return st;
	}
	rc = sqlite3_finalize(q);
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc, "look up a table", err);
	if (!found)
		return zb_fail(err, ZB_E_INPUT, "unknown table '%s' (known: %s)", table,
			       known_tables);
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM \"%s\"", table);
	rc = query_int64(s->db, sql, n);
	if (rc != SQLITE_OK) {
		char doing[96];
		snprintf(doing, sizeof doing, "count the rows of %s", table);
		return store_sql_fail(s, rc, doing, err);
	}
	return ZB_OK;
}

zb_status zb_store_latest_config(zb_store *s, const char *source, int64_t *config_id,
				 zb_error *err)
{
	zb_status st = source ? store_check_source(source, err) : ZB_OK;
	if (st != ZB_OK)
		return st;
	sqlite3_stmt *q = NULL;
	st = store_stmt(s, source ? ST_LATEST_SOURCE : ST_LATEST, &q, err);
	if (st != ZB_OK)
		return st;
	int rc = source ? sqlite3_bind_text(q, 1, source, -1, SQLITE_TRANSIENT) : SQLITE_OK;
	int found = 0;
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(q);
		if (rc == SQLITE_ROW) {
			found = sqlite3_column_type(q, 0) != SQLITE_NULL;
			*config_id = sqlite3_column_int64(q, 0);
			rc = SQLITE_OK;
		} else if (rc == SQLITE_DONE) {
			rc = SQLITE_OK;
		}
	}
	int rc2 = sqlite3_reset(q);
	if (rc == SQLITE_OK)
		rc = rc2;
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc, "find the latest configuration", err);
	if (!found)
		return zb_fail(err, ZB_E_INPUT, "no configuration%s%s%s in database '%s'",
			       source ? " with " : "", source ? source : "",
			       source ? " events" : "", s->path);
	return ZB_OK;
}
