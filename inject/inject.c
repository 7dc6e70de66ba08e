/*
 * inject.c - libzbench_inject.so: zbench's CUPTI collector inside a program zbench
 * did not write. `zbench trace` starts the program with CUDA_INJECTION64_PATH
 * naming this library; the CUDA driver loads it during cuInit and calls
 * InitializeInjection, which starts a tracing session (profiler/cupti_cuda.c, the
 * same collector as `zbench run --trace`, on the same CLOCK_MONOTONIC clock) and
 * registers an exit handler that flushes CUPTI and writes the records to the spool
 * directory named by ZB_TRACE_SPOOL (<pid>.zbt, profiler/spool.h). Every process
 * that initializes CUDA gets its own session and file: child processes inherit the
 * environment.
 *
 * NVTX (ZB_TRACE_NVTX): "all": the program's NVTX calls reach CUPTI's marker
 * records when NVTX_INJECTION64_PATH names libcupti (NVTX reads it at its first
 * call); zbench trace sets it, and this library sets it again to the libcupti the
 * process actually loaded (route_nvtx). "steps": NVTX_INJECTION64_PATH names this
 * library, whose InitializeInjectionNvtx2 (nvtx_steps.c) keeps only step ranges.
 * "none": no NVTX. ZB_TRACE_KINDS: the activity kinds and the launch counter, a
 * number of trace_kinds.h bits (zbench trace passes its --kinds). Unset: all, all.
 *
 * A failure to start is written to <pid>.err in the spool directory (one line) and
 * the program runs on untraced. A fork()ed child does not write its parent's
 * records: the exit handler only writes in the process that started the session.
 * Only InitializeInjection and InitializeInjectionNvtx2 are exported
 * (-fvisibility=hidden), so zbench's symbols never clash with the program's.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/outfile.h"
#include "inject/nvtx_steps.h"
#include "profiler/spool.h"
#include "profiler/trace_kinds.h"
#include "profiler/trace.h"

/* The executor's clock (exec/threadpool.c), which cupti_cuda.c stamps records with. */
int64_t zb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static zb_trace *T;
static pid_t owner, exit_owner, finished;
static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;

static void spool_path(char *buf, size_t n, const char *suffix)
{
	const char *dir = getenv("ZB_TRACE_SPOOL");
	snprintf(buf, n, "%s/%ld%s", dir && dir[0] ? dir : "/tmp", (long)getpid(), suffix);
}

static void write_error(const char *msg)
{
	char path[4096];
	spool_path(path, sizeof path, ".err");
	zb_outfile o;
	if (zb_outfile_open(&o, path, NULL) == ZB_OK) {
		fprintf(o.f, "%s\n", msg);
		zb_outfile_commit(&o, NULL);
	}
	fprintf(stderr, "zbench inject: pid %ld: %s\n", (long)getpid(), msg);
}

/* Once per process: stop the session, add the NVTX step ranges, write the spool
 * file. A process without a CUDA session writes one only if it kept NVTX ranges. */
void zb_inject_finish(void)
{
	pthread_mutex_lock(&once);
	if (finished == getpid()) {
		pthread_mutex_unlock(&once);
		return;
	}
	finished = getpid();
	zb_trace *t = T && getpid() == owner ? T : NULL;
	zb_error err = { 0 };
	zb_status st = ZB_OK;
	if (t) {
		st = zb_trace_stop_foreign(t, &err);
	} else if (zb_nvtx_steps_count() > 0) {
		t = zb_trace_create(); /* freed with the process */
		t->pid = (uint32_t)getpid();
	}
	if (t) {
		zb_nvtx_steps_take(t);
		char path[4096];
		spool_path(path, sizeof path, ZB_SPOOL_SUFFIX);
		zb_error werr = { 0 };
		if (zb_spool_write(t, path, &werr))
			write_error(werr.msg);
		else if (st)
			write_error(err.msg); /* records written; the stop's problem noted */
	}
	/* T stays allocated: CUPTI threads may still hold the sink until the process ends */
	pthread_mutex_unlock(&once);
}

static void at_exit(void)
{
	if (getpid() == exit_owner) /* a fork()ed child inherits the handler, not the records */
		zb_inject_finish();
}

void zb_inject_at_exit(void)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&mu);
	if (exit_owner != getpid()) {
		if (!exit_owner)
			atexit(at_exit);
		exit_owner = getpid();
	}
	pthread_mutex_unlock(&mu);
}

/* NVTX_INJECTION64_PATH = the libcupti this process really uses. zbench trace sets
 * it to the one zbench loaded; a program that loaded another copy first (PyTorch
 * from its pip package, same soname) hands our DT_NEEDED that copy, and NVTX must
 * load the same one, or its ranges go to a second, unsubscribed CUPTI. */
static void route_nvtx(void)
{
	Dl_info info;
	if (dladdr((void *)cuptiSubscribe, &info) && info.dli_fname && info.dli_fname[0] == '/')
		setenv("NVTX_INJECTION64_PATH", info.dli_fname, 1);
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	pthread_mutex_lock(&once);
	if (T && getpid() == owner) {
		pthread_mutex_unlock(&once);
		return 1;
	}
	/* ZB_TRACE_NVTX: all (CUPTI's markers, every range), steps (nvtx_steps.c, set up
	 * by NVTX itself), none; ZB_TRACE_KINDS: trace_kinds.h bits. Unset: all, all. */
	const char *nvtx = getenv("ZB_TRACE_NVTX"), *kt = getenv("ZB_TRACE_KINDS");
	int all = !nvtx || !strcmp(nvtx, "all");
	if (all)
		route_nvtx();
	char *end = NULL;
	unsigned long k = kt && kt[0] ? strtoul(kt, &end, 0) : ZB_TK_ALL;
	if (end && (*end || k > ZB_TK_ALL)) {
		char msg[160];
		snprintf(msg, sizeof msg, "invalid ZB_TRACE_KINDS '%.40s' (expected a number of trace kind bits)", kt);
		write_error(msg);
		pthread_mutex_unlock(&once);
		return 1; /* the program runs on untraced */
	}
	zb_trace_set_kinds(all ? (unsigned)k | ZB_TK_MARKER : (unsigned)k & ~ZB_TK_MARKER);
	zb_trace *t = zb_trace_create();
	zb_error err = { 0 };
	if (zb_trace_start(t, &err)) {
		write_error(err.msg);
		zb_trace_free(t);
		pthread_mutex_unlock(&once);
		return 1; /* the program runs on untraced */
	}
	T = t;
	owner = getpid();
	pthread_mutex_unlock(&once);
	zb_inject_at_exit();
	return 1;
}
