/*
 * harness.h - what every zbench test program includes: cmocka, and checks that
 * say by how much two numbers differ (llm.c's test_gpt2.c habit).
 */
#ifndef ZB_TEST_HARNESS_H
#define ZB_TEST_HARNESS_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>

#include <cmocka.h>

/* |got - want| <= rel * |want| (or <= rel when want is 0); prints both and the
 * relative difference on failure. */
#define assert_close(got, want, rel) \
	zb_assert_close_at((double)(got), (double)(want), (double)(rel), #got, __FILE__, __LINE__)

static inline void zb_assert_close_at(double got, double want, double rel, const char *what,
				      const char *file, int line)
{
	double diff = fabs(got - want);
	double scale = fabs(want) > 0 ? fabs(want) : 1.0;
	if (!(diff <= rel * scale)) {
		print_error("%s = %.9g, want %.9g (relative difference %.3g > %.3g)\n", what, got,
			    want, diff / scale, rel);
		_fail(file, line);
	}
}

/* Fail, showing both, unless needle occurs in msg (error messages name values). */
#define assert_contains(msg, needle) zb_assert_contains_at((msg), (needle), __FILE__, __LINE__)

static inline void zb_assert_contains_at(const char *msg, const char *needle, const char *file, int line)
{
	if (!msg || !strstr(msg, needle)) {
		print_error("'%s' does not contain '%s'\n", msg ? msg : "(null)", needle);
		_fail(file, line);
	}
}

/* A temporary directory for a test's files, removed by the OS eventually; the path
 * is written into buf. */
static inline const char *zb_test_tmpdir(char *buf, size_t n)
{
	snprintf(buf, n, "/tmp/zbench-test-XXXXXX");
	if (!mkdtemp(buf)) {
		print_error("mkdtemp failed\n");
		fail();
	}
	return buf;
}

/* A whole file as a NUL-terminated string (malloc'd; "" when it cannot be read);
 * *len (may be NULL) gets its length. For the output of a command a test ran. */
static inline char *zb_test_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		if (len)
			*len = 0;
		return strdup("");
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
	assert_non_null(s);
	size_t got = fread(s, 1, (size_t)(n > 0 ? n : 0), f);
	s[got] = 0;
	fclose(f);
	if (len)
		*len = got;
	return s;
}

/* Write a whole file (for JSON fixtures). */
static inline void zb_test_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		print_error("cannot write %s\n", path);
		fail();
	}
	fputs(text, f);
	fclose(f);
}

/* What a command a test ran printed and how it exited. */
typedef struct zb_test_result {
	int rc;          /* exit status; 128 + signal when a signal ended it */
	char *out, *err; /* stdout and stderr, whole */
} zb_test_result;

/* Run `zbench args` (zbench: the binary's path) with stdout and stderr in files of dir
 * and no stdin, and read them back. */
static inline zb_test_result zb_test_run(const char *zbench, const char *dir, const char *args)
{
	char out[600], err[600], cmd[4096];
	snprintf(out, sizeof out, "%s/stdout", dir);
	snprintf(err, sizeof err, "%s/stderr", dir);
	snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s </dev/null", zbench, args, out, err);
	int st = system(cmd);
	zb_test_result r;
	r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	r.out = zb_test_slurp(out, NULL);
	r.err = zb_test_slurp(err, NULL);
	return r;
}

static inline void zb_test_result_free(zb_test_result *r)
{
	free(r->out);
	free(r->err);
}

/* Set-up of a test that runs the zbench binary: its path ($ZBENCH, else
 * build/zbench) into *zbench and a fresh temporary directory into dir. -1 (the
 * group fails) when the binary is missing. */
static inline int zb_test_cli_setup(const char **zbench, char *dir, size_t cap)
{
	*zbench = getenv("ZBENCH");
	if (!*zbench || !**zbench)
		*zbench = "build/zbench";
	if (access(*zbench, X_OK) != 0) {
		print_error("zbench binary '%s' not found (set ZBENCH)\n", *zbench);
		return -1;
	}
	zb_test_tmpdir(dir, cap);
	return 0;
}

/* zb_test_cli_setup and DIR/x2.json: the 2x H200 host with the H200 machine's executor fit,
 * named as an overlay (a preset is first principles alone). */
static inline int zb_test_cli_setup_x2(const char **zbench, char *dir, size_t cap)
{
	int rc = zb_test_cli_setup(zbench, dir, cap);
	char path[600];
	snprintf(path, sizeof path, "%s/x2.json", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("{\"preset\": \"h200-x2\", \"executor\": \"h200\"}\n", f);
	return fclose(f) ? -1 : rc;
}

/* Remove the directory zb_test_cli_setup made. */
static inline int zb_test_cli_teardown(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
