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

/* Exit code the command layer uses for a status: 0 ok, 2 for anything the user
 * can fix or that the machine lacks, 1 for internal and runtime failures. */
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
