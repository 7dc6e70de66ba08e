/* fuzz_merge.c - zbench merge of a shard that is the input (a database file), into
 * a fresh empty output: any failure must be an error, never a crash or a sanitizer
 * report; a merge that succeeds leaves an intact output holding the runs it counted.
 * The corpus is seeded with a small real shard (a sweep's runs, configurations,
 * predictions and tasks). */
#include "fuzz/fuzz_db.h"
#include "results/merge.h"

/* A sweep of two configurations with their schedules, small. */
static void make_seed(const char *path)
{
	zb_store *s;
	zb_error err;
	fdb_must(zb_store_open(&s, path, 1000, &err), &err);
	zb_run_info info = { .kind = "sweep", .command = "zbench sweep --shard 1/2", .version = ZB_VERSION };
	int64_t run, cid;
	fdb_must(zb_store_add_run(s, &info, &run, &err), &err);
	for (int r = 0; r < 2; r++) {
		zb_config c;
		fuzz_base_config(&c);
		c.steps = 1;
		c.model.layers = 2;
		c.policy.ratio = 0.5 * r;
		zb_prediction p;
		fdb_must(zb_predict(&p, &c, &err), &err);
		fdb_must(zb_store_add_config(s, run, &c, "{}", &cid, &err), &err);
		fdb_must(zb_store_add_prediction(s, cid, &p.graph, &p.res, &p.mem, &err), &err);
		fdb_must(zb_store_add_tasks(s, cid, &p.graph, &err), &err);
		zb_prediction_free(&p);
	}
	fdb_must(zb_store_finish_run(s, run, "ok", &err), &err);
	zb_store_close(s);
	fdb_compact(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fdb_init("merge");
	make_seed(fdb_path("seed.db"));
	fdb_seed(*argc, *argv, fdb_path("seed.db"), "seed-shard.db");
	return 0;
}

static int64_t count(sqlite3 *h, const char *sql)
{
	sqlite3_stmt *st;
	int64_t n = -1;
	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = fdb_path("in.db"), *out = fdb_path("out.db");
	fdb_unlink(in);
	fdb_write(in, data, size);
	fdb_fresh(out);
	zb_store *s;
	zb_error err;
	if (zb_store_open(&s, out, 1000, &err) != ZB_OK)
		abort(); /* the fresh output always opens */
	zb_merge_counts k = { 0 };
	const char *inputs[] = { in };
	zb_status st = zb_store_merge(s, inputs, 1, &k, &err);
	if (st == ZB_OK) {
		sqlite3 *h = zb_store_db(s);
		int64_t runs = count(h, "SELECT count(*) FROM runs");
		char *msg = NULL;
		if (runs != k.runs || sqlite3_exec(h, "PRAGMA quick_check", NULL, NULL, &msg) != SQLITE_OK) {
			fprintf(stderr, "merge counted %lld runs, the output has %lld (%s)\n", (long long)k.runs,
				(long long)runs, msg ? msg : "");
			abort();
		}
	} else if (!err.msg[0] || strchr(err.msg, '\n')) {
		fprintf(stderr, "a refusal must be one line: '%s'\n", err.msg);
		abort();
	}
	zb_store_close(s);
	return 0;
}
