/*
 * test_report.c - what a buyer gets: the CPU law and the refusal of cores a CPU does not
 * have, a buyer's sweep as CSV that Python's csv module reads with every axis, prices and
 * the two schedules side by side, and `zbench report` as one HTML file, checked in a
 * real browser (headless Chromium: the DOM has the tables and every plot, a screenshot is
 * not blank) and for escaping. Without Chromium the browser test prints "skipped: no
 * chromium" (scripts/deps.sh test installs it; CI has it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness.h"

static const char *zbench;
static char dir[128];

#define BUYER "sweep --gpu h100,h200,b200 --pcie gen4,gen5 --cpu epyc-9554 --cores 16,32,64 " \
	      "--model llama2-7b,llama2-13b --policy overlap --ratio 1 --micro-batch 4 --ckpt gpu --steps 4 --price 4"

static int setup(void **state)
{
	(void)state;
	return zb_test_cli_setup(&zbench, dir, sizeof dir);
}

static int teardown(void **state)
{
	(void)state;
	return zb_test_cli_teardown(dir);
}

static zb_test_result run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static zb_test_result run(const char *fmt, ...)
{
	char args[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	return zb_test_run(zbench, dir, args);
}

/* RFC 4180 fields of one record into f[] (at most n); returns the count, *p past it. */
static int csv_fields(const char **p, char f[][128], int n)
{
	const char *s = *p;
	int k = 0;
	for (;;) {
		char buf[128];
		size_t len = 0;
		if (*s == '"') {
			for (s++; *s && !(*s == '"' && s[1] != '"'); s++) {
				if (*s == '"')
					s++;
				if (len < sizeof buf - 1)
					buf[len++] = *s;
			}
			if (*s == '"')
				s++;
		} else {
			for (; *s && *s != ',' && *s != '\r' && *s != '\n'; s++)
				if (len < sizeof buf - 1)
					buf[len++] = *s;
		}
		buf[len] = 0;
		if (k < n)
			snprintf(f[k], 128, "%s", buf);
		k++;
		if (*s != ',')
			break;
		s++;
	}
	if (*s == '\r')
		s++;
	if (*s == '\n')
		s++;
	*p = s;
	return k;
}

static int column(char head[][128], int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(head[i], name))
			return i;
	fail_msg("no column '%s' in the CSV", name);
	return -1;
}

/* Every GPU gets its core-count response from the same law; --cores beyond the part is
 * refused with one line, or labelled hypothetical when asked for; every row names its
 * profile. */
static void test_one_law_for_every_gpu(void **state)
{
	(void)state;
	const char *q = "sweep --gpu h100,h200,b200 --cores 16,64 --model llama2-7b --policy overlap --ratio 1 "
			"--micro-batch 4 --ckpt gpu --steps 4 --no-db";
	zb_test_result r = run("%s", q);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "--cores 64: cpu h200-machine has 16 cores");
	assert_true(strchr(r.err, '\n') == r.err + strlen(r.err) - 1); /* one line */
	assert_int_equal((int)strlen(r.out), 0);
	zb_test_result_free(&r);

	r = run("%s --hypothetical-cpu --csv", q);
	assert_int_equal(r.rc, 0);
	const char *p = r.out;
	char head[64][128], f[64][128];
	int nh = csv_fields(&p, head, 64);
	int cg = column(head, nh, "gpu"), cc = column(head, nh, "cores"), cs = column(head, nh, "step_ms");
	int cp = column(head, nh, "profile"), ch = column(head, nh, "hypothetical_cpu"), cf = column(head, nh, "framework");
	double step[3][2] = { { 0 } };
	const char *gpus[] = { "h100", "h200", "b200" };
	int rows = 0;
	while (*p) {
		assert_int_equal(csv_fields(&p, f, 64), nh);
		int g = -1;
		for (int k = 0; k < 3; k++)
			if (!strcmp(f[cg], gpus[k]))
				g = k;
		assert_true(g >= 0);
		int c64 = atoi(f[cc]) == 64;
		step[g][c64] = atof(f[cs]);
		assert_string_equal(f[ch], c64 ? "yes" : "no");
		assert_string_equal(f[cf], "deepspeed"); /* a purchase question: DeepSpeed's schedule */
		assert_string_equal(f[cp], "deepspeed-defaults");
		rows++;
	}
	assert_int_equal(rows, 6);
	/* the same law: 64 cores of this CPU's memory give each GPU the same response */
	double resp0 = step[0][0] / step[0][1];
	for (int g = 0; g < 3; g++) {
		assert_true(step[g][0] > 0 && step[g][1] > 0);
		assert_close(step[g][0] / step[g][1], resp0, 1e-9);
	}
	zb_test_result_free(&r);

	/* zbench's own schedule, asked for, with the executor fit named as an overlay */
	r = run("%s --framework zbench --csv", "sweep --pcie gen4,gen5 --model gpt2 --steps 4 --no-db --policy overlap "
		"--hw hw/h200-machine-executor.json");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "executor:h200-machine-executor");
	assert_null(strstr(r.out, "first-principles"));
	zb_test_result_free(&r);
	/* the fit belongs to the GPU it was fitted on: --gpu replaces it by a first-principles preset */
	r = run("%s --framework zbench --csv", "sweep --gpu h100 --pcie gen4,gen5 --model gpt2 --steps 4 --no-db "
		"--policy overlap --hw hw/h200-machine-executor.json");
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "first-principles");
	zb_test_result_free(&r);
}

/* The buyer's sweep (3 GPUs x 2 links x 3 core counts x 2 models) as CSV: every record
 * has the header's fields, every axis is a column with its values, the costs follow from
 * the price, and Python's csv module reads it the same way. */
static void test_buyer_csv(void **state)
{
	(void)state;
	zb_test_result r = run(BUYER " --csv --no-db");
	assert_int_equal(r.rc, 0);
	const char *p = r.out;
	char head[64][128], f[64][128];
	int nh = csv_fields(&p, head, 64);
	for (int i = 0; i < nh; i++) /* snake_case */
		for (const char *c = head[i]; *c; c++)
			assert_true((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_');
	const char *axes[] = { "gpu", "pcie", "cores", "model" };
	int want[] = { 3, 2, 3, 2 };
	char seen[4][8][64];
	int nseen[4] = { 0 };
	int ct = column(head, nh, "tokens_per_s"), cd = column(head, nh, "tokens_per_dollar");
	int cz = column(head, nh, "zbench_tokens_per_s"), cds = column(head, nh, "deepspeed_tokens_per_s");
	column(head, nh, "seq"), column(head, nh, "ckpt"), column(head, nh, "dtype"), column(head, nh, "gas");
	column(head, nh, "host_mem_gib"), column(head, nh, "gpu_cap_gib"), column(head, nh, "reason");
	int rows = 0;
	while (*p) {
		assert_int_equal(csv_fields(&p, f, 64), nh);
		for (int a = 0; a < 4; a++) {
			const char *v = f[column(head, nh, axes[a])];
			int k;
			for (k = 0; k < nseen[a] && strcmp(seen[a][k], v); k++)
				;
			if (k == nseen[a] && k < 8)
				snprintf(seen[a][nseen[a]++], 64, "%s", v);
		}
		if (f[ct][0]) { /* priced at 4 per hour */
			assert_close(atof(f[cd]), atof(f[ct]) * 3600 / 4, 1e-3); /* tokens_per_s is rounded */
			assert_true(atof(f[cz]) >= atof(f[cds])); /* DeepSpeed gets at most what the hardware allows */
		}
		rows++;
	}
	assert_int_equal(rows, 3 * 2 * 3 * 2);
	for (int a = 0; a < 4; a++)
		assert_int_equal(nseen[a], want[a]);
	char csv[256];
	snprintf(csv, sizeof csv, "%s/buyer.csv", dir);
	zb_test_write_file(csv, r.out);
	zb_test_result_free(&r);
	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		print_message("# python3 absent: the CSV checked by this program's RFC 4180 reader only\n");
		return;
	}
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "python3 -c \"import csv,sys; rows=list(csv.DictReader(open(sys.argv[1], newline=''))); "
		 "assert len(rows) == 36, len(rows); "
		 "assert all(len(r) == len(rows[0]) and None not in r for r in rows); "
		 "assert {len({r[k] for r in rows}) for k in ('gpu', 'pcie', 'cores', 'model')} == {2, 3}; "
		 "assert all(float(r['tokens_per_s']) > 0 for r in rows if r['fits'] == 'yes')\" %s",
		 csv);
	assert_int_equal(system(cmd), 0);
}

/* zbench report: one file, every section, user strings escaped. */
static void test_report_file(void **state)
{
	(void)state;
	char hw[256];
	snprintf(hw, sizeof hw, "%s/odd.json", dir);
	zb_test_write_file(hw, "{\"preset\": \"h200-machine\", \"name\": \"box<b>&'x\"}");
	zb_test_result r = run(BUYER " --db %s/r.db", dir);
	assert_int_equal(r.rc, 0);
	zb_test_result_free(&r);
	r = run("report --db %s/r.db -o %s/r.html", dir, dir);
	if (r.rc)
		print_error("%s", r.err);
	assert_int_equal(r.rc, 0);
	assert_contains(r.out, "36 configurations");
	assert_contains(r.out, "3 plots");
	zb_test_result_free(&r);
	char path[256];
	snprintf(path, sizeof path, "%s/r.html", dir);
	char *html = zb_test_slurp(path, NULL);
	const char *must[] = { "<!DOCTYPE html>", "id=\"ranking\"", "id=\"rows\"", "id=\"sources-table\"",
			       "id=\"plot-hardware\"", "id=\"plot-throughput\"", "id=\"plot-memory\"", "<svg",
			       "AMD product page", "DeepSpeed gets", "zbench 0.1.0", "sweep --gpu h100,h200,b200",
			       "what would remove it", "M tokens per $" };
	for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
		assert_contains(html, must[i]);
	assert_null(strstr(html, "<?xml")); /* the SVGs inlined without their prolog */
	free(html);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true((st.st_mode & 0444) == 0444 || (st.st_mode & 0400)); /* not mkstemp's 0600 alone */

	/* a machine named with markup: escaped wherever it appears */
	r = run("sweep --hw %s --gpu h100,h200 --model gpt2 --steps 3 --policy overlap --db %s/odd.db", hw, dir);
	assert_int_equal(r.rc, 0);
	zb_test_result_free(&r);
	r = run("report --db %s/odd.db -o %s/odd.html", dir, dir);
	assert_int_equal(r.rc, 0);
	zb_test_result_free(&r);
	snprintf(path, sizeof path, "%s/odd.html", dir);
	html = zb_test_slurp(path, NULL);
	assert_contains(html, "box&lt;b&gt;&amp;&#39;x");
	assert_null(strstr(html, "box<b>"));
	free(html);

	/* bad input: one line, nothing written */
	r = run("report --db %s/r.db -o %s/r.txt", dir, dir);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "must end in .html");
	zb_test_result_free(&r);
	r = run("report --db %s/r.db --run 99 -o %s/none.html", dir, dir);
	assert_int_equal(r.rc, 2);
	assert_contains(r.err, "no run 99");
	snprintf(path, sizeof path, "%s/none.html", dir);
	assert_int_not_equal(stat(path, &st), 0);
	zb_test_result_free(&r);
}

/* The report in a real browser: the DOM has the tables and every plot, and a
 * screenshot of the page is not blank. */
static void test_report_in_chromium(void **state)
{
	(void)state;
	const char *browser = NULL;
	if (system("command -v chromium >/dev/null 2>&1") == 0)
		browser = "chromium";
	else if (system("command -v chromium-browser >/dev/null 2>&1") == 0)
		browser = "chromium-browser";
	if (!browser) {
		print_message("skipped: no chromium\n");
		skip();
	}
	char path[256], cmd[2048];
	snprintf(path, sizeof path, "%s/r.html", dir);
	struct stat st;
	if (stat(path, &st) != 0) { /* test_report_file makes it; alone, make it here */
		zb_test_result r = run(BUYER " --db %s/r.db", dir);
		assert_int_equal(r.rc, 0);
		zb_test_result_free(&r);
		r = run("report --db %s/r.db -o %s", dir, path);
		assert_int_equal(r.rc, 0);
		zb_test_result_free(&r);
	}
	const char *opts = "--headless --no-sandbox --disable-gpu --no-first-run --disable-dev-shm-usage";
	snprintf(cmd, sizeof cmd, "%s %s --user-data-dir=%s/chr --dump-dom file://%s > %s/dom.html 2>%s/chr.err", browser,
		 opts, dir, path, dir, dir);
	assert_int_equal(system(cmd), 0);
	char dom[256];
	snprintf(dom, sizeof dom, "%s/dom.html", dir);
	char *text = zb_test_slurp(dom, NULL);
	assert_true(strlen(text) > 10000);
	const char *must[] = { "<table id=\"ranking\"", "<table id=\"rows\"", "<table id=\"sources-table\"",
			       "<figure id=\"plot-hardware\"", "<figure id=\"plot-throughput\"", "<figure id=\"plot-memory\"" };
	for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
		assert_contains(text, must[i]);
	int svgs = 0;
	for (const char *s = text; (s = strstr(s, "<svg")); s++)
		svgs++;
	assert_int_equal(svgs, 3);
	int rows = 0;
	const char *t = strstr(text, "<table id=\"rows\"");
	const char *end = t ? strstr(t, "</table>") : NULL;
	for (const char *s = t; s && s < end && (s = strstr(s, "<tr")) && s < end; s++)
		rows++;
	assert_int_equal(rows, 1 + 36); /* the header and every configuration */
	free(text);
	snprintf(cmd, sizeof cmd, "%s %s --user-data-dir=%s/chr --window-size=1400,2400 --screenshot=%s/shot.png file://%s "
		 ">/dev/null 2>>%s/chr.err", browser, opts, dir, dir, path, dir);
	assert_int_equal(system(cmd), 0);
	char shot[256];
	snprintf(shot, sizeof shot, "%s/shot.png", dir);
	assert_int_equal(stat(shot, &st), 0);
	/* a blank 1400x2400 page compresses to a few KB; tables and plots to hundreds */
	print_message("# screenshot %lld bytes\n", (long long)st.st_size);
	assert_true(st.st_size > 60000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_law_for_every_gpu),
		cmocka_unit_test(test_buyer_csv),
		cmocka_unit_test(test_report_file),
		cmocka_unit_test(test_report_in_chromium),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
