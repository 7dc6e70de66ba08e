/*
 * fuzz_db.h - what the database harnesses (fuzz_merge, fuzz_import) share: a
 * private scratch folder (under /dev/shm when there is one, removed at exit), an
 * empty zbench database written afresh for every execution (its bytes made once),
 * the input written as a database file, and a seed database added to the corpus
 * folder at start (a valid file is where mutations that matter begin: random bytes
 * are almost never SQLite).
 */
#ifndef ZB_FUZZ_DB_H
#define ZB_FUZZ_DB_H

#include <ftw.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "fuzz/fuzz_common.h"
#include "results/store.h"

static char fdb_dir[256];
static uint8_t *fdb_empty;
static size_t fdb_empty_n;

static int fdb_remove_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st, (void)type, (void)f;
	return remove(path);
}

static void fdb_cleanup(void) { nftw(fdb_dir, fdb_remove_one, 8, FTW_DEPTH | FTW_PHYS); }

/* dir/name into buf (static, four at a time). */
static const char *fdb_path(const char *name)
{
	static char p[4][512];
	static int k;
	char *b = p[k++ % 4];
	snprintf(b, sizeof p[0], "%s/%s", fdb_dir, name);
	return b;
}

static void fdb_write(const char *path, const uint8_t *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f)) {
		perror(path);
		abort();
	}
}

static uint8_t *fdb_read(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		abort();
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)len + 1);
	if (!b || fread(b, 1, (size_t)len, f) != (size_t)len)
		abort();
	fclose(f);
	*n = (size_t)len;
	return b;
}

/* Remove a database and its side files. */
static void fdb_unlink(const char *path)
{
	char side[600];
	unlink(path);
	snprintf(side, sizeof side, "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof side, "%s-shm", path);
	unlink(side);
	snprintf(side, sizeof side, "%s-journal", path);
	unlink(side);
}

/* A database file rewritten with small pages and a rollback journal, so a seed is
 * a few tens of KB (every table of the schema takes a page). */
static void fdb_compact(const char *path)
{
	sqlite3 *h;
	if (sqlite3_open(path, &h) != SQLITE_OK ||
	    sqlite3_exec(h, "PRAGMA journal_mode = DELETE; PRAGMA page_size = 512; VACUUM", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "compact %s: %s\n", path, sqlite3_errmsg(h));
		abort();
	}
	sqlite3_close(h);
}

static void fdb_must(zb_status st, const zb_error *err)
{
	if (st) {
		fprintf(stderr, "fuzz setup: %s\n", err->msg);
		abort();
	}
}

/* The scratch folder and the empty database's bytes. */
static void fdb_init(const char *what)
{
	const char *t = getenv("TMPDIR");
	struct stat st;
	snprintf(fdb_dir, sizeof fdb_dir, "%s/zbench-fuzz-%s-XXXXXX",
		 t && *t ? t : stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp", what);
	if (!mkdtemp(fdb_dir))
		abort();
	atexit(fdb_cleanup);
	zb_store *s;
	zb_error err;
	const char *p = fdb_path("empty.db");
	fdb_must(zb_store_open(&s, p, 1000, &err), &err);
	zb_store_close(s);
	fdb_empty = fdb_read(p, &fdb_empty_n);
	fdb_unlink(p);
}

/* A fresh empty zbench database at path. */
static void fdb_fresh(const char *path)
{
	fdb_unlink(path);
	fdb_write(path, fdb_empty, fdb_empty_n);
}

/* The first corpus folder among libFuzzer's arguments, NULL when none. */
static const char *fdb_corpus(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (argv[i][0] != '-' && stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			return argv[i];
	}
	return NULL;
}

/* Copy the file at from into the corpus folder as name, once. */
static void fdb_seed(int argc, char **argv, const char *from, const char *name)
{
	const char *dir = fdb_corpus(argc, argv);
	if (!dir)
		return;
	char to[1024];
	snprintf(to, sizeof to, "%s/%s", dir, name);
	struct stat st;
	if (stat(to, &st) == 0)
		return;
	size_t n;
	uint8_t *b = fdb_read(from, &n);
	fdb_write(to, b, n);
	free(b);
}

#endif
