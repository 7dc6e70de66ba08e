/* fuzz_import.c - zbench import of an Nsight Systems SQLite export that is the
 * input, into a fresh empty database: errors are fine, crashes and sanitizer
 * reports are not, and an import that succeeds must have left out every row whose
 * times are not integers or end before they start. The corpus is seeded with the
 * export tests/data/nsys-small.sql describes. */
#include "fuzz/fuzz_db.h"
#include "results/foreign.h"

static void make_seed(const char *path)
{
	FILE *f = fopen("tests/data/nsys-small.sql", "r");
	if (!f)
		return; /* run from elsewhere than the repository: no seed */
	fclose(f);
	size_t n;
	uint8_t *sql = fdb_read("tests/data/nsys-small.sql", &n);
	sql[n] = 0;
	sqlite3 *h;
	char *msg = NULL;
	fdb_unlink(path);
	if (sqlite3_open(path, &h) != SQLITE_OK || sqlite3_exec(h, (char *)sql, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "seed: %s\n", msg ? msg : sqlite3_errmsg(h));
		abort();
	}
	sqlite3_close(h);
	free(sql);
	fdb_compact(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fdb_init("import");
	make_seed(fdb_path("seed.sqlite"));
	if (access(fdb_path("seed.sqlite"), F_OK) == 0)
		fdb_seed(*argc, *argv, fdb_path("seed.sqlite"), "seed-nsys-small.sqlite");
	return 0;
}

static const char *const bad_times[] = {
	"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE NOT (typeof(start) = 'integer' AND"
	" typeof(end) = 'integer' AND end >= start)",
	"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE NOT (typeof(start) = 'integer' AND"
	" typeof(end) = 'integer' AND end >= start)",
	"SELECT count(*) FROM NVTX_EVENTS WHERE NOT (typeof(start) = 'integer' AND (end IS NULL OR"
	" (typeof(end) = 'integer' AND end >= start)))",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = fdb_path("in.sqlite"), *out = fdb_path("out.db");
	fdb_unlink(in);
	fdb_write(in, data, size);
	fdb_fresh(out);
	zb_store *s;
	zb_error err;
	if (zb_store_open(&s, out, 1000, &err) != ZB_OK)
		abort();
	zb_run_info info = { .kind = "import", .command = "zbench import", .version = ZB_VERSION };
	int64_t run, cfg, left = 0;
	if (zb_store_import_nsys(s, in, &info, &run, &cfg, &left, &err) == ZB_OK) {
		for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++) {
			sqlite3_stmt *st;
			if (sqlite3_prepare_v2(zb_store_db(s), bad_times[i], -1, &st, NULL) != SQLITE_OK)
				abort();
			if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 0) != 0) {
				fprintf(stderr, "imported rows with bad times: %s\n", bad_times[i]);
				abort();
			}
			sqlite3_finalize(st);
		}
		if (left < 0)
			abort();
	} else if (!err.msg[0] || strchr(err.msg, '\n')) {
		fprintf(stderr, "a refusal must be one line: '%s'\n", err.msg);
		abort();
	}
	zb_store_close(s);
	return 0;
}
