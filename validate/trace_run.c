/*
 * trace_run.c - zbench trace (trace_run.h): run any command (DeepSpeed, PyTorch, a CUDA program)
 * with zbench's CUPTI collector injected into each of its CUDA processes
 * (CUDA_INJECTION64_PATH = build/libzbench_inject.so, inherited by child
 * processes), sample the CPU time of every thread of its process tree from /proc
 * meanwhile, and store it all as one run of kind "trace" (results/foreign.h).
 *
 * The program's stdout and stderr are its own; zbench's report goes to stderr.
 * Its exit status is zbench's (128 + signal when a signal ended it). SIGINT or
 * SIGTERM sent to zbench alone are passed on to the program; Ctrl-C at a terminal
 * reaches both already. Either way zbench waits for the program and stores what
 * its processes wrote. --steps N: the injection library counts the step ranges it
 * keeps (a byte each in <spool>/<pid>.steps), writes its trace at the N-th, and
 * zbench, polling those files every sample tick, then sends SIGINT.
 */
#include "validate/trace_run.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/version.h"
#include "exec/threadpool.h"
#include "profiler/procsample.h"
#include "profiler/spool.h"
#include "profiler/trace.h"
#include "profiler/trace_kinds.h"
#include "results/foreign.h"
#include "results/store.h"

static volatile sig_atomic_t g_child, g_signal, g_stopped;

/* A signal sent to zbench alone (kill, timeout) goes on to the program; one from
 * the terminal (si_code > 0, SI_KERNEL) reached the program's process group too. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	g_signal = sig;
	if (g_child > 0 && si && si->si_code <= 0)
		kill((pid_t)g_child, sig);
}

/* The libcupti zbench itself loaded, for NVTX_INJECTION64_PATH. */
static int find_cupti(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "libcupti.so") && info->dlpi_name[0] == '/') {
		snprintf((char *)data, 4096, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

static int inject_path(char *buf, size_t n)
{
	const char *env = getenv("ZB_INJECT_LIB");
	if (env && env[0]) {
		snprintf(buf, n, "%s", env);
		return access(buf, R_OK) == 0;
	}
	char exe[3800];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len <= 0)
		return 0;
	exe[len] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(buf, n, "%s/libzbench_inject.so", exe);
	return access(buf, R_OK) == 0;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };
	nanosleep(&ts, NULL); /* EINTR: the loop looks again */
}

/* fork + exec with the injection environment; the parent samples until the child ends. */
/* The steps the program's processes have ended so far (the most of any process:
 * <pid>.steps files of the spool, a byte a step). */
static long steps_seen(const char *spool)
{
	DIR *d = opendir(spool);
	if (!d)
		return 0;
	long most = 0;
	struct dirent *e;
	char path[4096];
	struct stat st;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len <= 6 || strcmp(e->d_name + len - 6, ".steps"))
			continue;
		snprintf(path, sizeof path, "%s/%s", spool, e->d_name);
		if (stat(path, &st) == 0 && st.st_size > most)
			most = (long)st.st_size;
	}
	closedir(d);
	return most;
}

static void child_env(const zb_trace_run_opts *o, const char *lib, const char *spool, const char *cupti)
{
	setenv("CUDA_INJECTION64_PATH", lib, 1);
	setenv("ZB_TRACE_SPOOL", spool, 1);
	char k[16];
	snprintf(k, sizeof k, "0x%x", o->kinds);
	setenv("ZB_TRACE_KINDS", k, 1);
	setenv("ZB_TRACE_NVTX", o->nvtx, 1);
	setenv("ZB_TRACE_STEP_MATCH", o->step_match, 1);
	char n[32];
	snprintf(n, sizeof n, "%ld", o->stop_steps);
	setenv("ZB_TRACE_STOP_STEPS", n, 1);
	if (!strcmp(o->nvtx, "steps"))
		setenv("NVTX_INJECTION64_PATH", lib, 1); /* nvtx_steps.c in the same library */
	else if (!strcmp(o->nvtx, "none"))
		unsetenv("NVTX_INJECTION64_PATH");
	else if (cupti[0])
		setenv("NVTX_INJECTION64_PATH", cupti, 0);
}

/* --steps: SIGINT once enough steps ended; SIGTERM after 30 s more, SIGKILL after 60. */
static void stop_when_done(const zb_trace_run_opts *o, const char *spool, pid_t pid, int64_t *sent_at)
{
	if (o->stop_steps <= 0)
		return;
	int64_t now = zb_now_ns();
	if (!*sent_at && steps_seen(spool) >= o->stop_steps) {
		g_stopped = 1;
		*sent_at = now;
		kill(pid, SIGINT);
	} else if (*sent_at && now - *sent_at > 60 * (int64_t)1000000000) {
		kill(pid, SIGKILL);
	} else if (*sent_at && now - *sent_at > 30 * (int64_t)1000000000) {
		kill(pid, SIGTERM);
	}
}

static int run_child(char **argv, const zb_trace_run_opts *o, const char *lib, const char *spool, int64_t period_ns,
		     zb_proc_sampler **ps, int64_t *t0, zb_error *err)
{
	char cupti[4096] = "";
	dl_iterate_phdr(find_cupti, cupti);
	*t0 = zb_now_ns();
	pid_t pid = fork();
	if (pid < 0) {
		zb_fail(err, ZB_E_INTERNAL, "cannot start '%s': fork failed: %s", argv[0], strerror(errno));
		return -1;
	}
	if (pid == 0) {
		child_env(o, lib, spool, cupti);
		execvp(argv[0], argv);
		fprintf(stderr, "zbench: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	g_child = pid;
	*ps = zb_proc_sampler_create(pid);
	int status = 0;
	int64_t sent_at = 0, cpu_at = 0, requested = period_ns;
	for (uint64_t tick = 0;; tick++) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			zb_fail(err, ZB_E_INTERNAL, "waitpid failed: %s", strerror(errno));
			return -1;
		}
		zb_proc_sampler_tick(*ps, zb_now_ns(), tick % 10 == 0);
		if (tick % 10 == 9) { /* a rescan cycle: what the last 10 ticks cost */
			if (tick > 9)
				period_ns = zb_proc_sampler_period(period_ns, (*ps)->self_cpu_ns - cpu_at, 10,
								   (int64_t)1000000000);
			cpu_at = (*ps)->self_cpu_ns;
		}
		stop_when_done(o, spool, pid, &sent_at);
		sleep_ns(period_ns);
	}
	g_child = 0;
	if (period_ns != requested)
		fprintf(o->log, "zbench trace: sampling every %.0f ms instead of %.0f: a tick took %.0f us of CPU on average\n",
			period_ns / 1e6, requested / 1e6, (*ps)->ticks ? (*ps)->self_cpu_ns / 1e3 / (double)(*ps)->ticks : 0.0);
	(*ps)->period_ns = period_ns;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

typedef struct totals {
	int processes, errors;
	uint64_t kernels, memcpys, memsets, apis, nvtx, dropped, launches, parse_errors, buffer_failures, lost;
	uint64_t parse_ns, overheads, overhead_ns; /* the collector's own cost (report_cost) */
	uint32_t cupti_pid[64], cupti_tid[64];     /* CUPTI's worker thread of each process */
	int ncupti;
} totals;

/* CPU time the processes' CUPTI worker threads used, from the samples. */
static int64_t cupti_cpu_ns(const totals *tt, const zb_proc_sampler *ps)
{
	int64_t ns = 0;
	for (int i = 0; i < tt->ncupti; i++)
		for (size_t k = 0; k < ps->nthreads; k++)
			if (ps->threads[k].pid == tt->cupti_pid[i] && ps->threads[k].tid == tt->cupti_tid[i])
				ns += ps->threads[k].total_cpu_ns;
	return ns;
}

static zb_status meta_i(zb_store *s, int64_t cfg, const char *name, int64_t v, zb_error *err)
{
	char b[32];
	snprintf(b, sizeof b, "%" PRId64, v);
	return zb_store_add_trace_meta(s, cfg, name, b, err);
}

/* Every spool file and error note of the program's processes into the store. */
static zb_status ingest(zb_store *s, int64_t cfg, const char *spool, int64_t t0, totals *tt, FILE *log, zb_error *err)
{
	DIR *d = opendir(spool);
	if (!d)
		return zb_fail(err, ZB_E_INPUT, "cannot read spool directory '%s': %s", spool, strerror(errno));
	zb_status st = ZB_OK;
	struct dirent *e;
	char path[4096];
	while (!st && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		snprintf(path, sizeof path, "%s/%s", spool, e->d_name);
		if (len > 4 && !strcmp(e->d_name + len - 4, ".err")) {
			char *msg = NULL;
			size_t cap = 0;
			FILE *f = fopen(path, "r");
			if (f && getline(&msg, &cap, f) > 0) {
				msg[strcspn(msg, "\n")] = 0;
				fprintf(log, "zbench trace: process %.*s was not traced: %s\n", (int)(len - 4), e->d_name, msg);
				st = zb_store_add_trace_meta(s, cfg, "ZB_INJECT_ERROR", msg, err);
				tt->errors++;
			}
			if (f)
				fclose(f);
			free(msg);
			continue;
		}
		if (len <= 4 || strcmp(e->d_name + len - 4, ZB_SPOOL_SUFFIX))
			continue;
		zb_trace *t;
		if ((st = zb_spool_read(path, &t, err)))
			break;
		st = zb_store_add_trace(s, cfg, NULL, t, NULL, t0, err);
		tt->processes++;
		tt->kernels += t->nkernels, tt->memcpys += t->nmemcpys, tt->memsets += t->nmemsets;
		tt->apis += t->napis, tt->nvtx += t->nnvtxs, tt->dropped += t->dropped, tt->launches += t->launches;
		tt->parse_errors += t->parse_errors, tt->buffer_failures += t->buffer_failures;
		tt->parse_ns += t->parse_ns, tt->overheads += t->noverheads;
		if (t->cupti_tid && tt->ncupti < 64)
			tt->cupti_pid[tt->ncupti] = t->pid, tt->cupti_tid[tt->ncupti++] = t->cupti_tid;
		for (size_t k = 0; k < t->noverheads; k++)
			if (t->overheads[k].end > t->overheads[k].start)
				tt->overhead_ns += (uint64_t)(t->overheads[k].end - t->overheads[k].start);
		zb_trace_free(t);
	}
	closedir(d);
	return st;
}

static void remove_spool(const char *spool)
{
	DIR *d = opendir(spool);
	if (!d)
		return;
	struct dirent *e;
	char path[4096];
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof path, "%s/%s", spool, e->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(spool);
}

static zb_status store_trace(const char *db, const char *command, const char *traced, char **cmd, const char *spool,
			     int64_t t0, const zb_proc_sampler *ps, int code, const zb_trace_run_opts *o, int64_t *run_id,
			     int64_t *config_id, totals *tt, zb_error *err)
{
	int64_t period_ns = (int64_t)(o->sample_ms * 1e6);
	zb_store *s;
	zb_status st = zb_store_open(&s, db, 5000, err);
	if (st)
		return st;
	if ((st = zb_store_begin(s, err))) {
		zb_store_close(s);
		return st;
	}
	int n = 0;
	while (cmd[n])
		n++;
	zb_run_info info = { .kind = "trace", .command = command, .version = ZB_VERSION, .git_commit = ZB_GIT_COMMIT };
	int64_t cfg = 0;
	st = zb_store_add_run(s, &info, run_id, err);
	char label[256], *json = NULL;
	const char *base = strrchr(cmd[0], '/') ? strrchr(cmd[0], '/') + 1 : cmd[0];
	snprintf(label, sizeof label, "%s%s%s", base, n > 1 ? " " : "", n > 1 ? cmd[1] : "");
	if (!st) {
		json_t *j = json_pack("{s:s, s:s}", "foreign", "trace", "command", traced);
		json = json_dumps(j, JSON_COMPACT);
		json_decref(j);
		st = zb_store_add_foreign_config(s, *run_id, label, json, &cfg, err);
		*config_id = cfg;
	}
	if (!st)
		st = ingest(s, cfg, spool, t0, tt, o->log, err);
	if (!st)
		st = zb_store_add_cpu_samples(s, cfg, ps, t0, err);
	if (!st)
		st = meta_i(s, cfg, "ZB_TRACE_EXIT_CODE", code, err);
	if (!st)
		st = meta_i(s, cfg, "ZB_TRACED_PROCESSES", tt->processes, err);
	if (!st)
		st = meta_i(s, cfg, "ZB_DROPPED_RECORDS_TOTAL", (int64_t)tt->dropped, err);
	if (!st)
		st = meta_i(s, cfg, "ZB_CPU_SAMPLE_PERIOD_NS", ps->period_ns ? ps->period_ns : period_ns, err);
	if (!st)
		st = meta_i(s, cfg, "ZB_CPU_SAMPLER_TICKS", (int64_t)ps->ticks, err);
	if (!st)
		st = zb_store_add_trace_meta(s, cfg, "ZB_TRACE_NVTX", o->nvtx, err);
	if (!st)
		st = zb_store_add_trace_meta(s, cfg, "ZB_TRACE_STEP_MATCH", o->step_match, err);
	char kinds[160];
	zb_trace_kinds_format(o->kinds, kinds, sizeof kinds);
	if (!st)
		st = zb_store_add_trace_meta(s, cfg, "ZB_TRACE_KINDS", kinds, err);
	if (!st)
		st = meta_i(s, cfg, "ZB_SAMPLER_CPU_NS", ps->self_cpu_ns, err);
	if (!st)
		st = meta_i(s, cfg, "ZB_TRACE_PARSE_NS", (int64_t)tt->parse_ns, err);
	if (!st)
		st = meta_i(s, cfg, "ZB_CUPTI_OVERHEAD_NS", (int64_t)tt->overhead_ns, err);
	if (!st)
		st = meta_i(s, cfg, "ZB_CUPTI_THREAD_CPU_NS", cupti_cpu_ns(tt, ps), err);
	for (int k = 0; k < tt->ncupti && !st; k++) /* the thread, for a reader of ZB_THREAD_CPU */
		st = meta_i(s, cfg, "ZB_CUPTI_THREAD_TID", tt->cupti_tid[k], err);
	if (!st && o->stop_steps)
		st = meta_i(s, cfg, "ZB_TRACE_STOP_STEPS", o->stop_steps, err);
	char status[48];
	if (g_stopped)
		snprintf(status, sizeof status, "stopped after %ld steps", o->stop_steps);
	else
		snprintf(status, sizeof status, g_signal ? "interrupted" : code ? "exit %d" : "ok", code);
	if (!st)
		st = zb_store_finish_run(s, *run_id, status, err);
	if (!st)
		st = zb_store_commit(s, err);
	if (st)
		zb_store_rollback(s);
	zb_store_close(s);
	free(json);
	return st;
}

/* What tracing itself took: the sampler's ticks (in zbench, a core taken from the
 * program meanwhile), the collector's record conversion (in the program's CUPTI
 * thread) and CUPTI's own overhead records (buffer flushes, instrumentation). The
 * rest of the cost, inside the CUDA driver on the program's threads, shows only
 * as a slower step: compare with an untraced run (the trace suite's torch-untraced and torch-traced steps,
 * scripts/suites/trace.suite). */
static void report_cost(FILE *log, const totals *tt, const zb_proc_sampler *ps)
{
	fprintf(log,
		"zbench trace: tracer cost: sampler %.1f ms CPU in %" PRIu64 " ticks (%.0f us a tick), record conversion"
		" %.1f ms, CUPTI overhead records %.1f ms (%" PRIu64 "), CUPTI worker thread%s %.1f ms CPU\n",
		ps->self_cpu_ns / 1e6, ps->ticks, ps->ticks ? ps->self_cpu_ns / 1e3 / (double)ps->ticks : 0.0,
		tt->parse_ns / 1e6, tt->overhead_ns / 1e6, tt->overheads, tt->ncupti == 1 ? "" : "s",
		cupti_cpu_ns(tt, ps) / 1e6);
}

static void report(FILE *log, int64_t run_id, int64_t cfg, const char *db, const totals *tt, const zb_proc_sampler *ps)
{
	fprintf(log,
		"zbench trace: stored run %" PRId64 ", configuration %" PRId64 " in %s: %d CUDA process%s"
		" traced, %" PRIu64 " kernels, %" PRIu64
		" copies, %" PRIu64 " memsets, %" PRIu64 " API calls, %" PRIu64 " NVTX ranges/marks, %zu CPU"
		" samples of %zu threads; dropped records: %" PRIu64 "%s\n",
		run_id, cfg, db, tt->processes, tt->processes == 1 ? "" : "es", tt->kernels, tt->memcpys, tt->memsets,
		tt->apis, tt->nvtx, ps->nsamples, ps->nthreads, tt->dropped,
		tt->parse_errors || tt->buffer_failures ? " (and buffers lost or unparsable: see META_DATA_EXPORT)" : "");
	report_cost(log, tt, ps);
	if (tt->launches && tt->launches != tt->kernels)
		fprintf(log, "zbench trace: %" PRIu64 " kernel launches counted, %" PRIu64 " kernel records\n",
			tt->launches, tt->kernels);
}

int zb_trace_inject_path(char *buf, size_t n)
{
	return inject_path(buf, n);
}

zb_status zb_trace_run(char **cmd, const zb_trace_run_opts *o, const char *command, const char *traced,
		       zb_trace_run_result *r, zb_error *err)
{
	memset(r, 0, sizeof *r);
	char lib[4096];
	if (!inject_path(lib, sizeof lib))
		return zb_fail(err, ZB_E_INPUT, "trace needs the injection library, not found at '%s' (built by make with "
						"nvcc; or set ZB_INJECT_LIB)", lib);
	{ /* the database must open before the program runs for minutes */
		zb_store *s;
		zb_status st = zb_store_open(&s, o->db, 5000, err);
		if (st)
			return st;
		zb_store_close(s);
	}
	snprintf(r->spool, sizeof r->spool, "/tmp/zbench-trace-XXXXXX");
	if (!mkdtemp(r->spool))
		return zb_fail(err, ZB_E_INTERNAL, "cannot create a spool directory in /tmp: %s", strerror(errno));
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int64_t period_ns = (int64_t)(o->sample_ms * 1e6), t0 = 0;
	zb_proc_sampler *ps = NULL;
	int code = run_child(cmd, o, lib, r->spool, period_ns, &ps, &t0, err);
	if (code < 0) {
		zb_proc_sampler_free(ps);
		remove_spool(r->spool);
		return err->status;
	}
	r->ran = 1;
	r->exit_code = code;
	r->stopped = g_stopped;
	totals tt = { 0 };
	zb_status st = store_trace(o->db, command, traced, cmd, r->spool, t0, ps, code, o, &r->run_id, &r->config_id,
				   &tt, err);
	if (!st) {
		report(o->log, r->run_id, r->config_id, o->db, &tt, ps);
		if (g_stopped)
			fprintf(o->log, "zbench trace: stopped the command after %ld steps (SIGINT); its exit status was %d\n",
				o->stop_steps, code);
		if (!o->keep)
			remove_spool(r->spool);
		else
			fprintf(o->log, "zbench trace: spool files kept in %s\n", r->spool);
	}
	zb_proc_sampler_free(ps);
	return st;
}
