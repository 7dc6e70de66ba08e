/* error.c - formatting of zb_error and the allocation helpers of error.h. */
#include "common/error.h"
#include "common/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

zb_status zb_fail(zb_error *err, zb_status status, const char *fmt, ...)
{
	if (err) {
		/* one line whatever the message quotes (a path, a name, SQLite's text of a
		 * damaged schema): control characters as \xNN */
		char raw[sizeof err->msg];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(raw, sizeof raw, fmt, ap);
		va_end(ap);
		zb_text_show(raw, err->msg, sizeof err->msg);
		err->status = status;
	}
	return status;
}

int zb_exit_code(zb_status status)
{
	switch (status) {
	case ZB_OK:
		return 0;
	case ZB_E_INTERNAL:
	case ZB_E_CUDA:
	case ZB_E_NOMEM:
	case ZB_E_INTERRUPTED:
		return 1;
	default:
		return 2;
	}
}

int zb_report_error(const zb_error *err)
{
	/* one line whatever the message quotes (a path or name with a newline) */
	char shown[4 * sizeof err->msg];
	fprintf(stderr, "zbench: %s\n", err->msg[0] ? zb_text_show(err->msg, shown, sizeof shown) : "unknown error");
	return zb_exit_code(err->status);
}

static void oom(size_t size, const char *file, int line)
{
	fprintf(stderr, "zbench: out of memory allocating %zu bytes at %s:%d\n", size, file, line);
	abort();
}

void *zb_xmalloc_at(size_t size, const char *file, int line)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		oom(size, file, line);
	return p;
}

void *zb_xcalloc_at(size_t n, size_t size, const char *file, int line)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size, file, line);
	return p;
}

void *zb_xrealloc_at(void *p, size_t size, const char *file, int line)
{
	void *q = realloc(p, size ? size : 1);
	if (!q)
		oom(size, file, line);
	return q;
}
