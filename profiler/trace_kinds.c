/*
 * trace_kinds.c - the text form of a set of traced kinds (trace_kinds.h).
 */
#include "profiler/trace_kinds.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	unsigned bits;
} names[] = {
	{ "kernel", ZB_TK_KERNEL },   { "memcpy", ZB_TK_MEMCPY },     { "memset", ZB_TK_MEMSET },
	{ "sync", ZB_TK_SYNC },       { "overhead", ZB_TK_OVERHEAD }, { "runtime", ZB_TK_RUNTIME },
	{ "driver", ZB_TK_DRIVER },   { "launches", ZB_TK_LAUNCHES }, { "api", ZB_TK_API },
	{ "default", ZB_TK_TRACE_DEFAULT }, { "all", ZB_TK_ALL & ~ZB_TK_MARKER }, { "none", 0 },
};
#define NNAMES (sizeof names / sizeof names[0])

static int lookup(const char *s, size_t len, unsigned *bits)
{
	for (size_t i = 0; i < NNAMES; i++)
		if (strlen(names[i].name) == len && !strncmp(names[i].name, s, len)) {
			*bits = names[i].bits;
			return 1;
		}
	return 0;
}

int zb_trace_kinds_parse(const char *text, unsigned *kinds, char *err, size_t n)
{
	if (!text || !text[0]) {
		snprintf(err, n, "invalid --kinds '' (expected a list such as 'kernel,memcpy' or '+api,-sync')");
		return -1;
	}
	unsigned set = text[0] == '+' || text[0] == '-' ? ZB_TK_TRACE_DEFAULT : 0;
	for (const char *p = text;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char sign = len > 0 && (p[0] == '+' || p[0] == '-') ? p[0] : 0;
		unsigned bits;
		if (!lookup(p + (sign != 0), len - (sign != 0), &bits)) {
			snprintf(err, n,
				 "unknown trace kind '%.*s' in --kinds '%s' (known: kernel, memcpy, memset, sync, overhead,"
				 " runtime, driver, api, launches, default, all, none)", (int)len, p, text);
			return -1;
		}
		if (sign == '-')
			set &= ~bits;
		else
			set |= bits;
		if (!end)
			break;
		p = end + 1;
	}
	*kinds = set;
	return 0;
}

void zb_trace_kinds_format(unsigned kinds, char *out, size_t n)
{
	size_t len = 0;
	if (n == 0)
		return;
	out[0] = 0;
	for (size_t i = 0; i < NNAMES; i++) {
		unsigned b = names[i].bits;
		if (!b || (b & (b - 1)) || !(kinds & b)) /* single kinds only, in table order */
			continue;
		int w = snprintf(out + len, n - len, "%s%s", len ? "," : "", names[i].name);
		if (w < 0 || (size_t)w >= n - len)
			break;
		len += (size_t)w;
	}
	if (!len)
		snprintf(out, n, "none");
}
