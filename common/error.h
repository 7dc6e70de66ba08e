/*
 * error.h - how zbench reports failure.
 *
 * Library code never exits and never prints: a function that can fail returns a
 * zb_status and, on failure, fills a zb_error with one line that names the problem
 * first and the value second ("unknown pcie generation 'gen7' (known: gen3, ...)").
 * Only the command layer (cli/) decides to print "zbench: <msg>" and which exit
 * code to use, the way nccl-tests returns a status up the stack.
 */
#ifndef ZB_ERROR_H
#define ZB_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

typedef enum zb_status {
	ZB_OK = 0,
	ZB_E_INPUT,       /* bad user input: names, sizes, files, flags */
	ZB_E_NOFIT,       /* configuration does not fit in GPU or host memory */
	ZB_E_STORE,       /* database unwritable, locked, newer schema, corrupt */
	ZB_E_NOCUDA,      /* built without CUDA */
	ZB_E_NOGPU,       /* built with CUDA but no usable GPU */
	ZB_E_CUDA,        /* a CUDA, cuBLAS or CUPTI call failed */
	ZB_E_NOMEM,       /* host or device allocation failed */
	ZB_E_INTERRUPTED, /* stopped by a signal; work so far is consistent */
	ZB_E_INTERNAL,    /* a broken invariant: a bug in zbench */
} zb_status;

typedef struct zb_error {
	zb_status status;
	char msg[512];
} zb_error;

/* Fill err (may be NULL) with a printf-formatted message and return status. */
zb_status zb_fail(zb_error *err, zb_status status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The exit codes of every zbench command, so a CI can tell a regression from a
 * missing GPU from its own typo. One table (zb_exit_codes, error.c) maps each
 * status to its code; docs/ci.md lists it and tests/test_exit_codes.c checks both. */
typedef enum zb_exit {
	ZB_EXIT_OK = 0,           /* done; regress: no regression */
	ZB_EXIT_VERDICT = 1,      /* the command ran and judged: a regression, a missed target, a failed check */
	ZB_EXIT_INPUT = 2,        /* bad input: flags, names, files, a database that cannot be used */
	ZB_EXIT_GPU = 3,          /* no GPU (or built without CUDA), or a CUDA, cuBLAS or CUPTI call failed */
	ZB_EXIT_NOFIT = 4,        /* the configuration does not fit in GPU or host memory */
	ZB_EXIT_INTERNAL = 5,     /* zbench could not finish otherwise: a bug, or a program it runs failed (gnuplot) */
	ZB_EXIT_INTERRUPTED = 130 /* stopped by SIGINT (a sweep: 128 + the signal, 143 SIGTERM, 129 SIGHUP); what ran is stored */
} zb_exit;

typedef struct zb_exit_row {
	zb_status status;
	zb_exit code;
	const char *meaning;      /* one line, as docs/ci.md shows it */
} zb_exit_row;

/* The table: one row per status, in zb_status order; *n gets the count. */
const zb_exit_row *zb_exit_codes(int *n);

/* Exit code the command layer uses for a status (the table above). */
int zb_exit_code(zb_status status);

/* The command layer's one way to fail: print "zbench: <msg>" on stderr for a failed
 * status and return its exit code (zb_exit_code). Library code fills a zb_error and
 * returns; only a command calls this. */
int zb_report_error(const zb_error *err);

/* Allocation that cannot fail silently: aborts with file:line on out-of-memory,
 * for small bookkeeping structures where recovery is meaningless. */
void *zb_xmalloc_at(size_t size, const char *file, int line);
void *zb_xcalloc_at(size_t n, size_t size, const char *file, int line);
void *zb_xrealloc_at(void *p, size_t size, const char *file, int line);
#define zb_xmalloc(sz) zb_xmalloc_at((sz), __FILE__, __LINE__)
#define zb_xcalloc(n, sz) zb_xcalloc_at((n), (sz), __FILE__, __LINE__)
#define zb_xrealloc(p, sz) zb_xrealloc_at((p), (sz), __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif

#endif
