/* junit.c - JUnit XML reports; see junit.h. */
#include "report/junit.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/outfile.h"

void zb_xml_text(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* XML 1.0 holds tab, LF and CR of the characters below 0x20 */
			fputc(*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r' ? '?' : *p, f);
		}
	}
}

static void attr(FILE *f, const char *name, const char *value)
{
	fprintf(f, " %s=\"", name);
	zb_xml_text(f, value);
	fputc('"', f);
}

static int count(const zb_junit_suite *s, zb_junit_outcome o)
{
	int k = 0;
	for (int i = 0; i < s->n; i++)
		k += s->cases[i].outcome == o;
	return k;
}

static void write_case(FILE *f, const zb_junit_suite *s, const zb_junit_case *c)
{
	fputs("    <testcase", f);
	attr(f, "classname", s->classname);
	attr(f, "name", c->name);
	fprintf(f, " time=\"%.3f\"", c->time_s);
	if (c->outcome == ZB_JUNIT_PASSED) {
		fputs("/>\n", f);
		return;
	}
	fputs(">\n      <", f);
	fputs(c->outcome == ZB_JUNIT_FAILED ? "failure" : "skipped", f);
	attr(f, "message", c->message);
	if (c->outcome == ZB_JUNIT_FAILED) {
		attr(f, "type", "regression");
		fputc('>', f);
		zb_xml_text(f, c->text[0] ? c->text : c->message);
		fputs("</failure>\n", f);
	} else {
		fputs("/>\n", f);
	}
	fputs("    </testcase>\n", f);
}

static void write_all(FILE *f, const zb_junit_suite *s)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", gmtime_r(&now, &tm));
	int failed = count(s, ZB_JUNIT_FAILED), skipped = count(s, ZB_JUNIT_SKIPPED);
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", f);
	attr(f, "name", s->name);
	fprintf(f, " tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\">\n", s->n, failed, skipped,
		s->time_s);
	fputs("  <testsuite", f);
	attr(f, "name", s->name);
	fprintf(f, " tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\"", s->n, failed, skipped,
		s->time_s);
	attr(f, "timestamp", stamp);
	fputs(">\n", f);
	if (s->nproperties) {
		fputs("    <properties>\n", f);
		for (int i = 0; i < s->nproperties; i++) {
			fputs("      <property", f);
			attr(f, "name", s->properties[i][0]);
			attr(f, "value", s->properties[i][1]);
			fputs("/>\n", f);
		}
		fputs("    </properties>\n", f);
	}
	for (int i = 0; i < s->n; i++)
		write_case(f, s, &s->cases[i]);
	fputs("  </testsuite>\n</testsuites>\n", f);
}

zb_status zb_junit_write(const char *path, const zb_junit_suite *s, zb_error *err)
{
	zb_outfile o;
	zb_status st = zb_outfile_open(&o, path, err);
	if (st)
		return st;
	write_all(o.f, s);
	return zb_outfile_commit(&o, err);
}
