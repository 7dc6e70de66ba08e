/*
 * test_validate_calls.c - the validate/ calls the commands make, without the
 * commands: the published cases (a record and a check written to the caller's
 * stream, a malformed file as one error naming the file and line), and a baseline
 * saved and regressed on the simulator (a planted slowdown counted, an unknown tag
 * and a missing database refused). The commands themselves: test_published,
 * test_regress.
 */
#include "tests/harness.h"

#include "validate/published.h"
#include "validate/regress.h"

static char dir[64];

/* What a call wrote to its stream. */
typedef struct sink {
	FILE *f;
	char *text;
	size_t n;
} sink;

static void sink_open(sink *s)
{
	memset(s, 0, sizeof *s);
	s->f = open_memstream(&s->text, &s->n);
	assert_non_null(s->f);
}

static const char *sink_text(sink *s)
{
	fflush(s->f);
	return s->text;
}

static void sink_close(sink *s)
{
	fclose(s->f);
	free(s->text);
}

static void test_published(void **state)
{
	(void)state;
	const char *suite = "data/published-offload.tsv"; /* tests run in the repository's root */
	zb_error err = { 0 };
	sink rec, out;
	sink_open(&rec);
	int worse = -1;
	assert_int_equal(zb_published_run(suite, NULL, 1, rec.f, &worse, &err), ZB_OK);
	assert_int_equal(worse, 0); /* no check asked for */
	const char *r = sink_text(&rec);
	assert_true(!strncmp(r, "# recorded by zbench validate --published --record", 50));
	assert_contains(r, "\nmape\t");
	/* the record checked against itself: nothing is worse */
	char check[128];
	snprintf(check, sizeof check, "%s/errors.tsv", dir);
	zb_test_write_file(check, r);
	sink_close(&rec);
	sink_open(&out);
	assert_int_equal(zb_published_run(suite, check, 0, out.f, &worse, &err), ZB_OK);
	assert_int_equal(worse, 0);
	assert_contains(sink_text(&out), "no case worse than recorded");
	sink_close(&out);

	char bad[128];
	snprintf(bad, sizeof bad, "%s/bad.tsv", dir);
	zb_test_write_file(bad, "# a suite\nid\tgen\nx\tv100\n");
	sink_open(&out);
	assert_int_equal(zb_published_run(bad, NULL, 0, out.f, &worse, &err), ZB_E_INPUT);
	assert_contains(err.msg, "bad.tsv:3: expected 21 tab-separated fields in case 'x");
	assert_string_equal(sink_text(&out), ""); /* nothing half-written */
	sink_close(&out);
	assert_int_equal(zb_published_run("/nonexistent.tsv", NULL, 0, stdout, &worse, &err), ZB_E_INPUT);
	assert_contains(err.msg, "cannot open published suite '/nonexistent.tsv'");
}

static zb_regress_opts opts(const char *db, sink *out, sink *log)
{
	return (zb_regress_opts){ .tag = "t", .suite = "quick", .db = db, .sim = 1, .limit = 2, .warmup = 2, .steps = 3,
				  .tolerance = 0.03, .out = out->f, .log = log->f };
}

static void test_regress(void **state)
{
	(void)state;
	char db[128];
	snprintf(db, sizeof db, "%s/baselines.db", dir);
	zb_error err = { 0 };
	sink out, log;
	sink_open(&out);
	sink_open(&log);
	zb_regress_opts o = opts(db, &out, &log);
	assert_int_equal(zb_baseline_save(&o, "zbench baseline save t --sim", &err), ZB_OK);
	assert_contains(sink_text(&out), "# saved baseline 't' in ");
	assert_int_equal(zb_baseline_save(&o, "again", &err), ZB_E_INPUT); /* the tag is taken */
	assert_contains(err.msg, "baseline 't' already exists");
	assert_int_equal(zb_baseline_list(&o, &err), ZB_OK);
	assert_contains(sink_text(&out), "\nt ");

	zb_regress_result res;
	assert_int_equal(zb_regress(&o, &res, &err), ZB_OK);
	assert_int_equal(res.compared, 2);
	assert_int_equal(res.regressions, 0);
	assert_contains(sink_text(&out), "# verdict: 0 of 2 configurations regressed");
	o.plant = 0.1; /* every step 10 % slower: both regress */
	assert_int_equal(zb_regress(&o, &res, &err), ZB_OK);
	assert_int_equal(res.regressions, 2);

	o.tag = "nosuch";
	assert_int_equal(zb_regress(&o, &res, &err), ZB_E_INPUT);
	assert_contains(err.msg, "no baseline 'nosuch'");
	o.tag = "";
	assert_int_equal(zb_baseline_save(&o, "empty", &err), ZB_E_INPUT);
	assert_contains(err.msg, "invalid baseline tag ''");
	char none[128];
	snprintf(none, sizeof none, "%s/none.db", dir);
	o = opts(none, &out, &log);
	assert_int_equal(zb_regress(&o, &res, &err), ZB_E_INPUT);
	assert_contains(err.msg, "no database");
	sink_close(&out);
	sink_close(&log);
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
		cmocka_unit_test(test_published),
		cmocka_unit_test(test_regress),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
