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

static const zb_exit_row exit_table[] = {
	{ ZB_OK, ZB_EXIT_OK, "success" },
	{ ZB_E_INPUT, ZB_EXIT_INPUT, "bad input: a flag, name, size or file" },
	{ ZB_E_NOFIT, ZB_EXIT_NOFIT, "the configuration does not fit in GPU or host memory" },
	{ ZB_E_STORE, ZB_EXIT_INPUT, "the database cannot be used: unwritable, locked, newer, damaged" },
	{ ZB_E_NOCUDA, ZB_EXIT_GPU, "built without CUDA" },
	{ ZB_E_NOGPU, ZB_EXIT_GPU, "no usable GPU" },
	{ ZB_E_CUDA, ZB_EXIT_GPU, "a CUDA, cuBLAS or CUPTI call failed" },
	{ ZB_E_NOMEM, ZB_EXIT_NOFIT, "an allocation of GPU or host memory failed" },
	{ ZB_E_INTERRUPTED, ZB_EXIT_INTERRUPTED, "stopped by a signal; what ran is stored" },
	{ ZB_E_INTERNAL, ZB_EXIT_INTERNAL, "a bug in zbench, or a program it runs failed (gnuplot)" },
};

const zb_exit_row *zb_exit_codes(int *n)
{
	*n = (int)(sizeof exit_table / sizeof exit_table[0]);
	return exit_table;
}

int zb_exit_code(zb_status status)
{
	for (size_t i = 0; i < sizeof exit_table / sizeof exit_table[0]; i++)
		if (exit_table[i].status == status)
			return exit_table[i].code;
	return ZB_EXIT_INTERNAL;
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
