/* csv.c - RFC 4180 cells; see csv.h. */
#include "common/csv.h"

#include <string.h>

static int needs_quotes(const char *s) { return strpbrk(s, ",\"\r\n") != NULL; }

void zb_csv_field(FILE *f, const char *s)
{
	s = s ? s : "";
	if (!needs_quotes(s)) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

const char *zb_csv_cell(const char *s, char *buf, size_t n)
{
	s = s ? s : "";
	if (n == 0)
		return buf;
	if (!needs_quotes(s)) {
		snprintf(buf, n, "%s", s);
		return buf;
	}
	size_t j = 0;
	if (n < 3) {
		buf[0] = 0;
		return buf;
	}
	buf[j++] = '"';
	for (; *s && j + (*s == '"' ? 2 : 1) + 2 <= n; s++) { /* room for the closing quote and NUL */
		if (*s == '"')
			buf[j++] = '"';
		buf[j++] = *s;
	}
	buf[j++] = '"';
	buf[j] = 0;
	return buf;
}
