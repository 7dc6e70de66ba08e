/*
 * junit.h - a JUnit XML report, the test view every CI reads (GitHub Actions through
 * a test-reporter action, GitLab's junit artifacts, Jenkins): one <testsuite> of
 * test cases, each passed, failed (a message and a longer text) or skipped.
 *
 * The file is written through a temporary beside it and renamed when complete
 * (common/outfile.h): a CI never reads half a report. Text is escaped for XML
 * (& < > " ' as entities; control characters XML 1.0 cannot hold as '?').
 */
#ifndef ZB_JUNIT_H
#define ZB_JUNIT_H

#include "common/error.h"

typedef enum zb_junit_outcome { ZB_JUNIT_PASSED, ZB_JUNIT_FAILED, ZB_JUNIT_SKIPPED } zb_junit_outcome;

typedef struct zb_junit_case {
	char name[128];          /* the test case: a configuration's key */
	double time_s;           /* what it took */
	zb_junit_outcome outcome;
	char message[512];       /* failed or skipped: one line */
	char text[1024];         /* failed: the detail ("" for none) */
} zb_junit_case;

typedef struct zb_junit_suite {
	const char *name;        /* the <testsuite> name: "zbench regress main" */
	const char *classname;   /* each case's classname: "zbench.regress" */
	double time_s;
	const char *const (*properties)[2]; /* name, value pairs (may be NULL) */
	int nproperties;
	const zb_junit_case *cases;
	int n;
} zb_junit_suite;

/* Write the report to path. ZB_E_INPUT naming the file when it cannot be written. */
zb_status zb_junit_write(const char *path, const zb_junit_suite *s, zb_error *err);

/* XML text of s (escaped) to f. */
#include <stdio.h>
void zb_xml_text(FILE *f, const char *s);

#endif
