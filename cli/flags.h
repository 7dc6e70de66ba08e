/*
 * flags.h - one option table per command (in the spirit of git's parse-options):
 * each flag has a name, a kind, a range and a help line, and the table parses argv
 * (getopt_long underneath), checks values and ranges with one wording for every
 * command, and prints the option lines of the usage text.
 *
 *     int limit = 0, list = 0;
 *     const zb_flag flags[] = {
 *         ZB_INT("limit", &limit, 1, 1000, "<n>", "run the first <n> configurations"),
 *         ZB_SWITCH("list", &list, "print the suite, run nothing"),
 *         { 0 },
 *     };
 *     if (!zb_flags_parse(argc, argv, flags, NULL, 0, NULL, usage, &rc)) return rc;
 *
 * Errors (exit 2): "zbench: invalid value 'x' for --limit (expected an integer in
 * 1..1000)", "zbench: unexpected argument 'x'"; an unknown option prints the usage
 * on stderr. --help / -h print it on stdout (exit 0).
 */
#ifndef ZB_FLAGS_H
#define ZB_FLAGS_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

typedef enum zb_flag_kind {
	ZB_FLAG_SWITCH, /* no value: *(int *)dest = 1 */
	ZB_FLAG_STRING, /* *(const char **)dest = the value (non-empty) */
	ZB_FLAG_INT,    /* *(int *)dest, an integer in [lo, hi] */
	ZB_FLAG_ID,     /* *(int64_t *)dest, a positive integer (a run or configuration id) */
	ZB_FLAG_REAL,   /* *(double *)dest, a finite number in [lo, hi] */
	ZB_FLAG_CALL,   /* call(dest, value, err): for values that need more than a range */
	ZB_FLAG_CALL0,  /* call(dest, NULL, err): a switch with an action */
} zb_flag_kind;

typedef struct zb_flag {
	const char *name;  /* the long name, without "--" */
	char short_name;   /* 'o' for -o; 0 for none */
	zb_flag_kind kind;
	void *dest;
	double lo, hi;     /* range of INT and REAL values */
	const char *arg;   /* the value's placeholder in usage: "<n>" */
	const char *help;  /* usage line(s), '\n' separated; NULL: not listed */
	zb_status (*call)(void *dest, const char *value, zb_error *err); /* CALL, CALL0 */
} zb_flag;

/* Table entries (designated, so a table reads as a list of flags). */
#define ZB_SWITCH(n, d, h) { .name = (n), .kind = ZB_FLAG_SWITCH, .dest = (d), .help = (h) }
#define ZB_STRING(n, d, a, h) { .name = (n), .kind = ZB_FLAG_STRING, .dest = (d), .arg = (a), .help = (h) }
#define ZB_INT(n, d, l, u, a, h) \
	{ .name = (n), .kind = ZB_FLAG_INT, .dest = (d), .lo = (l), .hi = (u), .arg = (a), .help = (h) }
#define ZB_ID(n, d, a, h) { .name = (n), .kind = ZB_FLAG_ID, .dest = (d), .arg = (a), .help = (h) }
#define ZB_REAL(n, d, l, u, a, h) \
	{ .name = (n), .kind = ZB_FLAG_REAL, .dest = (d), .lo = (l), .hi = (u), .arg = (a), .help = (h) }
#define ZB_CALL(n, d, f, a, h) { .name = (n), .kind = ZB_FLAG_CALL, .dest = (d), .call = (f), .arg = (a), .help = (h) }
#define ZB_CALL0(n, d, f, h) { .name = (n), .kind = ZB_FLAG_CALL0, .dest = (d), .call = (f), .help = (h) }

/* Parse argv[1..] (argv[0] is the command's name) against flags, terminated by a
 * zero entry. Positional arguments go to pos[0 .. maxpos-1] and their count to
 * *npos (both may be NULL when maxpos is 0). Returns 1 to go on; 0 when the
 * command must exit now with *exit_code (0 after --help, 2 after an error). */
int zb_flags_parse(int argc, char **argv, const zb_flag *flags, const char **pos, int maxpos, int *npos,
		   void (*usage)(FILE *), int *exit_code);

/* The option lines of a table, "  --limit <n>                run the first ...". */
void zb_flags_usage(FILE *f, const zb_flag *flags);

#endif
