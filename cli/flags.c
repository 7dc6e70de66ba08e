/* flags.c - the option tables of flags.h over getopt_long. */
#include "cli/flags.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FLAGS 96
#define ID_BASE 1000 /* getopt_long values of long options: ID_BASE + index */

static int bad_value(const zb_flag *f, const char *v, const char *expected)
{
	fprintf(stderr, "zbench: invalid value '%s' for --%s (expected %s)\n", v, f->name, expected);
	return ZB_EXIT_INPUT;
}

/* Store one value; 0, or the exit code after an error line. */
static int take(const zb_flag *f, const char *v)
{
	char *end, what[96];
	zb_error err = { 0 };
	switch (f->kind) {
	case ZB_FLAG_SWITCH:
		*(int *)f->dest = 1;
		return 0;
	case ZB_FLAG_STRING:
		if (!v || !*v)
			return bad_value(f, v ? v : "", "a non-empty value");
		*(const char **)f->dest = v;
		return 0;
	case ZB_FLAG_INT: {
		errno = 0;
		long long x = strtoll(v, &end, 10);
		snprintf(what, sizeof what, "an integer in %.0f..%.0f", f->lo, f->hi);
		if (end == v || *end || errno || x < f->lo || x > f->hi)
			return bad_value(f, v, what);
		*(int *)f->dest = (int)x;
		return 0;
	}
	case ZB_FLAG_ID: {
		errno = 0;
		long long x = strtoll(v, &end, 10);
		if (end == v || *end || errno || x < 1)
			return bad_value(f, v, "a positive integer");
		*(int64_t *)f->dest = x;
		return 0;
	}
	case ZB_FLAG_REAL: {
		errno = 0;
		double x = strtod(v, &end);
		snprintf(what, sizeof what, "a number in %g..%g", f->lo, f->hi);
		if (end == v || *end || errno || !isfinite(x) || x < f->lo || x > f->hi)
			return bad_value(f, v, what);
		*(double *)f->dest = x;
		return 0;
	}
	case ZB_FLAG_CALL:
	case ZB_FLAG_CALL0:
		if (f->call(f->dest, f->kind == ZB_FLAG_CALL ? v : NULL, &err))
			return zb_report_error(&err);
		return 0;
	}
	return 0;
}

int zb_flags_parse(int argc, char **argv, const zb_flag *flags, const char **pos, int maxpos, int *npos,
		   void (*usage)(FILE *), int *exit_code)
{
	struct option table[MAX_FLAGS + 2];
	char shorts[2 * MAX_FLAGS + 2] = "h";
	size_t ns = 1;
	int n = 0;
	for (; flags[n].name && n < MAX_FLAGS; n++) {
		int has_arg = flags[n].kind != ZB_FLAG_SWITCH && flags[n].kind != ZB_FLAG_CALL0;
		table[n] = (struct option){ flags[n].name, has_arg ? required_argument : no_argument, NULL, ID_BASE + n };
		if (flags[n].short_name) {
			shorts[ns++] = flags[n].short_name;
			if (has_arg)
				shorts[ns++] = ':';
		}
	}
	shorts[ns] = 0;
	table[n] = (struct option){ "help", no_argument, NULL, 'h' };
	table[n + 1] = (struct option){ 0 };
	if (npos)
		*npos = 0;
	optind = 1;
	int opt;
	while ((opt = getopt_long(argc, argv, shorts, table, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			*exit_code = 0;
			return 0;
		}
		int i = -1;
		if (opt >= ID_BASE && opt < ID_BASE + n)
			i = opt - ID_BASE;
		else
			for (int k = 0; k < n && i < 0; k++)
				if (flags[k].short_name && flags[k].short_name == opt)
					i = k;
		if (i < 0) {
			usage(stderr);
			*exit_code = ZB_EXIT_INPUT;
			return 0;
		}
		if ((*exit_code = take(&flags[i], optarg)))
			return 0;
	}
	for (; optind < argc; optind++) {
		if (!npos || *npos >= maxpos) {
			fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind]);
			*exit_code = ZB_EXIT_INPUT;
			return 0;
		}
		pos[(*npos)++] = argv[optind];
	}
	*exit_code = 0;
	return 1;
}

void zb_flags_usage(FILE *f, const zb_flag *flags)
{
	for (const zb_flag *x = flags; x->name; x++) {
		if (!x->help)
			continue;
		char left[64];
		int len = 0;
		if (x->short_name)
			len = snprintf(left, sizeof left, "-%c, ", x->short_name);
		snprintf(left + len, sizeof left - (size_t)len, "--%s%s%s", x->name, x->arg ? " " : "",
			 x->arg ? x->arg : "");
		const char *h = x->help;
		do {
			const char *nl = strchr(h, '\n');
			int hl = nl ? (int)(nl - h) : (int)strlen(h);
			fprintf(f, "  %-26s %.*s\n", left, hl, h);
			left[0] = 0;
			h = nl ? nl + 1 : NULL;
		} while (h);
	}
}
