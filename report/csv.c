/* csv.c - the sweep's CSV records through common/csv.h; see report/csv.h. */
#include "report/csv.h"

#include <math.h>

#include "common/csv.h"

void zb_csv_put(FILE *f, const char *s, int first)
{
	if (!first)
		fputc(',', f);
	zb_csv_field(f, s && *s ? s : NULL);
}

void zb_csv_num(FILE *f, double x, int digits, int first)
{
	char buf[48] = "";
	if (isfinite(x))
		snprintf(buf, sizeof buf, "%.*g", digits, x);
	zb_csv_put(f, buf, first);
}

void zb_csv_end(FILE *f)
{
	fputc('\n', f);
}
