/* csv.c - RFC 4180 fields; see csv.h. */
#include "report/csv.h"

#include <math.h>
#include <string.h>

void zb_csv_field(FILE *f, const char *s, int first)
{
	if (!first)
		fputc(',', f);
	if (!s || !*s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (const char *c = s; *c; c++) {
		if (*c == '"')
			fputc('"', f);
		fputc(*c, f);
	}
	fputc('"', f);
}

void zb_csv_num(FILE *f, double x, int digits, int first)
{
	char buf[48] = "";
	if (isfinite(x))
		snprintf(buf, sizeof buf, "%.*g", digits, x);
	zb_csv_field(f, buf, first);
}

void zb_csv_end(FILE *f)
{
	fputs("\r\n", f);
}
