/*
 * store_parts.h - private to results/: the open store and the helpers its writers
 * share. store.c opens, migrates and writes runs, configurations and predictions;
 * store_rows.c writes the bulk rows (tasks, dependencies, events, steps); schema.c
 * holds the SQL of schema versions 1 to 3. The public API is store.h.
 */
#ifndef ZB_STORE_PARTS_H
#define ZB_STORE_PARTS_H

#include <sqlite3.h>

#include "results/store.h"

/* 'zbch' (0x7a626368): marks the file as a zbench database (PRAGMA application_id).
 * Decimal, because it is spliced into the schema SQL. */
#define ZB_APP_ID 2053268328
#define ZB_STR_(x) #x
#define ZB_STR(x) ZB_STR_(x)

/* The SQL of schema versions 1 to 3 (schema.c); later versions are in store.c. */
extern const char zb_schema_v1[], zb_schema_v2[], zb_schema_v3[], zb_schema_v4[], zb_schema_v5[], zb_schema_v6[],
	zb_schema_v7[], zb_schema_v8[], zb_schema_v9[];

enum {
	ST_RUN,
	ST_FINISH,
	ST_DEVICE,
	ST_CONFIG,
	ST_PRED,
	ST_STEP,
	ST_LATEST,
	ST_LATEST_SOURCE,
	ST_COUNT
};

/* Tables written in bulk (see bulk_insert). */
enum { BULK_TASKS, BULK_DEPS, BULK_EVENTS, BULK_COUNT };

struct zb_store {
	sqlite3 *db;
	char *path;
	int busy_ms;
	int version;
	int in_txn; /* between zb_store_begin and zb_store_commit / rollback */
	int no_savepoints; /* zb_store_set_no_savepoints */
	sqlite3_stmt *st[ST_COUNT];
	sqlite3_stmt *bulk[BULK_COUNT][2]; /* [table][one row, many rows], see bulk_insert */
};

/* Turn a failed SQLite call into one line (doing: "insert events"). */
zb_status store_sql_fail(const zb_store *s, int rc, const char *doing, zb_error *err);
/* The cached statement `which`, prepared on first use. */
zb_status store_stmt(zb_store *s, int which, sqlite3_stmt **out, zb_error *err);
/* Step a bound insert/update to completion and reset it; an SQLite result code. */
int store_step_done(sqlite3_stmt *st);
/* Text or NULL: copied by SQLite (bind_text) or static (bind_static). */
int store_bind_text(sqlite3_stmt *st, int i, const char *t);
int store_bind_static(sqlite3_stmt *st, int i, const char *t);
/* The writes of one zb_store_add_* call: a savepoint inside the caller's
 * transaction, else a transaction of their own. */
zb_status store_wbegin(zb_store *s, int *own, const char *doing, zb_error *err);
zb_status store_wend(zb_store *s, int own, zb_status st, const char *doing, zb_error *err);
/* "predicted" or "measured", else ZB_E_INPUT. */
zb_status store_check_source(const char *source, zb_error *err);
/* path as an SQLite URI naming exactly that file ("file:" and the path with every
 * byte but letters, digits and "/._-~" percent-encoded, so '?', '#' and '%' in a
 * name are its own), then "?query" when query is not NULL. For sqlite3_open_v2
 * with SQLITE_OPEN_URI and for ATTACH. sqlite3_free() it; NULL when out of memory. */
char *store_uri(const char *path, const char *query);
/* Open path read-only (SQLITE_OPEN_READONLY, the URI of store_uri); immutable when
 * its folder cannot hold the WAL index (read-only folder or mount) and it has no
 * -wal file, so then no writer either. An SQLite result code; *db is set (close it
 * with sqlite3_close_v2) even on failure. */
int store_open_ro(const char *path, int busy_ms, sqlite3 **db);

#endif
