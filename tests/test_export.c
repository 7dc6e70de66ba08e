/*
 * test_export.c - report/export.h without the command: the Perfetto document, written
 * through jansson one event at a time, parses back with jansson to what was stored
 * (every interval once, times in microseconds to the nanosecond, the names as
 * stored, a name that is not UTF-8 with '?' for its bytes outside ASCII); the CSV
 * has a row per interval; bad requests are one error naming the value and leave no
 * file behind.
 */
#include "tests/harness.h"

#include <jansson.h>
#include <sys/stat.h>

#include "inputs/presets.h"
#include "profiler/spans.h"
#include "profiler/trace.h"
#include "report/export.h"
#include "results/store.h"
#include "sim/predict.h"

static char dir[64];

/* A kernel's name with what JSON must escape, and a byte that is not UTF-8. */
static const char weird[] = "k\"quoted\\back\nline\xff";
static const char weird_json[] = "k\"quoted\\back\nline?";
static const char thread[] = "worker \"0\"";

typedef struct stored {
	int64_t cid;
	size_t ntasks;   /* the schedule's tasks: each has a predicted and a measured interval */
	size_t records;  /* the trace's records: one kernel and one span */
} stored;

/* A small schedule predicted, "measured" at 1.1 x the prediction, and a trace of one
 * kernel and one CPU span, stored as `zbench run --trace` stores them. */
static stored store_run(const char *db)
{
	zb_error err;
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	assert_int_equal(zb_preset_model("gpt2", &c.model, &err), ZB_OK);
	c.model.layers = 2;
	zb_policy_defaults(&c.policy);
	c.policy.micro_batch = 2;
	c.policy.seq = 256;
	c.steps = 2;
	zb_prediction p;
	assert_int_equal(zb_predict(&p, &c, &err), ZB_OK);
	assert_true(p.simulated);
	const zb_graph *g = &p.graph;
	double *ms = calloc(g->ntasks, sizeof *ms), *me = calloc(g->ntasks, sizeof *me);
	for (size_t i = 0; i < g->ntasks; i++)
		ms[i] = 1.1 * p.res.start[i], me[i] = 1.1 * p.res.end[i];
	int64_t t0 = 1000000000LL;
	zb_trace *t = zb_trace_create();
	zb_spans *sp = zb_spans_create();
	zb_tr_stream st = { .stream = 7, .resource = ZB_RES_GPU };
	snprintf(st.name, sizeof st.name, "gpu");
	zb_trace_add_stream(t, &st);
	uint32_t name = zb_trace_intern(t, weird);
	zb_tr_kernel k = { .start = t0 + 1000, .end = t0 + 4567, .context = 1, .stream = 7, .correlation = 3,
			   .grid = { 2, 1, 1 }, .block = { 64, 1, 1 }, .registers = 16, .mangled = name,
			   .demangled = name, .short_name = name };
	zb_trace_add_kernel(t, &k);
	zb_span_add(zb_spans_virtual(sp, thread, 0), ZB_SPAN_WORKER, 0, -1, t0 + 2000, t0 + 3001);
	t->clock_method = "timestamp-callback";
	zb_trace_resolve(t, g, ms, me, t0);

	zb_store *s;
	int64_t run;
	zb_run_info info = { .kind = "run", .command = "test", .version = "test", .device = "fake" };
	assert_int_equal(zb_store_open(&s, db, 1000, &err), ZB_OK);
	assert_int_equal(zb_store_begin(s, &err), ZB_OK);
	assert_int_equal(zb_store_add_run(s, &info, &run, &err), ZB_OK);
	stored out = { .ntasks = g->ntasks, .records = 2 };
	assert_int_equal(zb_store_add_config(s, run, &c, "{}", &out.cid, &err), ZB_OK);
	assert_int_equal(zb_store_add_prediction(s, out.cid, g, &p.res, &p.mem, &err), ZB_OK);
	assert_int_equal(zb_store_add_tasks(s, out.cid, g, &err), ZB_OK);
	assert_int_equal(zb_store_add_events(s, out.cid, "predicted", g, p.res.start, p.res.end, &err), ZB_OK);
	assert_int_equal(zb_store_add_events(s, out.cid, "measured", g, ms, me, &err), ZB_OK);
	assert_int_equal(zb_store_add_trace(s, out.cid, g, t, sp, t0, &err), ZB_OK);
	assert_int_equal(zb_store_finish_run(s, run, "ok", &err), ZB_OK);
	assert_int_equal(zb_store_commit(s, &err), ZB_OK);
	zb_store_close(s);
	zb_trace_free(t);
	zb_spans_free(sp);
	free(ms);
	free(me);
	zb_prediction_free(&p);
	return out;
}

static zb_store *open_ro(const char *db)
{
	zb_store *s;
	zb_error err;
	assert_int_equal(zb_store_open_readonly(&s, db, 1000, &err), ZB_OK);
	return s;
}

static int exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

/* x microseconds written to the nanosecond: x * 1000 is an integer. */
static void assert_ns(double x)
{
	double ns = x * 1e3;
	assert_close(ns, round(ns), 1e-12);
}

static void test_perfetto(void **state)
{
	(void)state;
	char db[128], out[160];
	snprintf(db, sizeof db, "%s/perfetto.db", dir);
	snprintf(out, sizeof out, "%s/trace.json", dir);
	stored w = store_run(db);
	zb_store *s = open_ro(db);
	zb_error err = { 0 };
	zb_export_result res;
	assert_int_equal(zb_export(s, "latest", ZB_EXPORT_PERFETTO, out, &res, &err), ZB_OK);
	zb_store_close(s);
	assert_int_equal(res.config_id, w.cid);
	assert_int_equal(res.rows, (int64_t)(w.ntasks + w.records)); /* traced: the predicted timeline and the records */
	char tmp[200];
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	assert_false(exists(tmp));

	json_error_t je;
	json_t *root = json_load_file(out, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		print_error("%s: %s at line %d\n", out, je.text, je.line);
	assert_non_null(root);
	assert_string_equal(json_string_value(json_object_get(root, "displayTimeUnit")), "ns");
	json_t *other = json_object_get(root, "otherData");
	assert_int_equal(json_integer_value(json_object_get(other, "zbench_config_id")), w.cid);
	assert_true(json_is_real(json_object_get(other, "time_zero_us")));
	size_t i, intervals = 0, kernels = 0, named_thread = 0;
	json_t *ev;
	json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
	{
		const char *ph = json_string_value(json_object_get(ev, "ph"));
		assert_non_null(ph);
		assert_true(json_is_integer(json_object_get(ev, "pid")));
		json_t *args = json_object_get(ev, "args");
		assert_true(json_is_object(args));
		if (!strcmp(ph, "M")) {
			const char *v = json_string_value(json_object_get(args, "name"));
			named_thread += v && !strcmp(v, thread);
			continue;
		}
		assert_string_equal(ph, "X");
		json_t *ts = json_object_get(ev, "ts"), *dur = json_object_get(ev, "dur");
		assert_true(json_is_real(ts) && json_is_real(dur)); /* 0 too is written 0.0 */
		assert_ns(json_real_value(ts));
		assert_ns(json_real_value(dur));
		assert_true(json_is_string(json_object_get(ev, "cat")));
		const char *name = json_string_value(json_object_get(ev, "name"));
		assert_non_null(name);
		int measured = json_integer_value(json_object_get(ev, "pid")) == 2; /* 1: the predicted timeline */
		if (measured && !strcmp(json_string_value(json_object_get(ev, "cat")), "kernel")) {
			kernels++;
			assert_string_equal(name, weird_json);
			assert_close(json_real_value(dur), 3.567, 1e-12);
			json_t *grid = json_object_get(args, "grid");
			assert_int_equal(json_array_size(grid), 3);
			assert_int_equal(json_integer_value(json_array_get(grid, 0)), 2);
			assert_int_equal(json_integer_value(json_object_get(args, "registers")), 16);
			assert_int_equal(json_integer_value(json_object_get(args, "correlation")), 3);
		}
		intervals++;
	}
	assert_int_equal(intervals, res.rows);
	assert_int_equal(kernels, 1);
	assert_int_equal(named_thread, 1);
	json_decref(root);
}

static void test_csv(void **state)
{
	(void)state;
	char db[128], out[160];
	snprintf(db, sizeof db, "%s/csv.db", dir);
	snprintf(out, sizeof out, "%s/trace.csv", dir);
	stored w = store_run(db);
	zb_store *s = open_ro(db);
	zb_error err = { 0 };
	zb_export_result res;
	char id[32];
	snprintf(id, sizeof id, "%lld", (long long)w.cid);
	assert_int_equal(zb_export(s, id, ZB_EXPORT_CSV, out, &res, &err), ZB_OK);
	zb_store_close(s);
	assert_int_equal(res.rows, (int64_t)(2 * w.ntasks + w.records)); /* csv: both timelines and the records */
	char *text = zb_test_slurp(out, NULL);
	const char *header = "source,track,task_id,kind,name,start_ns,end_ns,duration_ns,bytes\n";
	assert_true(!strncmp(text, header, strlen(header)));
	assert_contains(text, "\"k\"\"quoted\\back\nline\xff\""); /* CSV quotes, keeps the bytes */
	free(text);
}

static void test_refusals(void **state)
{
	(void)state;
	char db[128], out[160];
	snprintf(db, sizeof db, "%s/refuse.db", dir);
	snprintf(out, sizeof out, "%s/no/such/dir/x.json", dir);
	store_run(db);
	zb_store *s = open_ro(db);
	zb_error err = { 0 };
	zb_export_result res;
	zb_export_format f;
	assert_int_equal(zb_export_format_parse("json", &f, &err), ZB_OK);
	assert_int_equal(f, ZB_EXPORT_PERFETTO);
	assert_int_equal(zb_export_format_parse("xml", &f, &err), ZB_E_INPUT);
	assert_string_equal(err.msg, "unknown export format 'xml' (known: perfetto, csv)");
	assert_int_equal(zb_export(s, "99", ZB_EXPORT_PERFETTO, out, &res, &err), ZB_E_INPUT);
	assert_contains(err.msg, "unknown configuration 99");
	assert_int_equal(zb_export(s, "abc", ZB_EXPORT_PERFETTO, out, &res, &err), ZB_E_INPUT);
	assert_contains(err.msg, "invalid configuration id 'abc'");
	assert_int_equal(zb_export(s, "1", ZB_EXPORT_PERFETTO, out, &res, &err), ZB_E_INPUT);
	assert_contains(err.msg, "cannot write");
	assert_false(exists(out));
	zb_store_close(s);
}

static int setup(void **state)
{
	(void)state;
	zb_test_tmpdir(dir, sizeof dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perfetto),
		cmocka_unit_test(test_csv),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
