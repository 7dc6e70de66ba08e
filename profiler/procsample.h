/*
 * procsample.h - CPU time of a process tree, per thread, sampled from /proc.
 *
 * `zbench trace` runs a program it did not write; its CPU optimizer (DeepSpeed's
 * CPU Adam, PyTorch's fused CPU AdamW) shows up in no CUDA record. So the tracing
 * parent reads, at a fixed rate, the CPU time each thread of the traced process
 * tree has used (/proc/PID/task/TID/schedstat: nanoseconds on a CPU, user and
 * system; /proc/PID/task/TID/stat's utime + stime in clock ticks where schedstat
 * is missing) and keeps one sample per thread and interval in which it ran:
 * [start, end) on the CLOCK_MONOTONIC clock of the CUPTI records, and the CPU
 * nanoseconds used in it (at most end - start for one thread).
 *
 * The tree: the root process and every process whose parent chain reaches it,
 * found again every `rescan` ticks by listing /proc; the parent of a process is
 * read from /proc/PID/stat once, when it first appears in the list.
 *
 * Cost: the sampler runs in zbench, not in the traced process, but it takes a
 * core from it while it reads; a traced program whose CPU optimizer keeps every
 * core busy (DeepSpeed's CPU Adam, OpenMP) waits at each parallel region's barrier
 * for the thread it displaced. So a tick reads each thread's schedstat with one
 * pread on a file kept open, and the time the ticks took is kept (self_cpu_ns).
 *
 * Resolution: a thread born between two ticks gets its CPU time so far as one
 * sample from its start (stat's starttime, 10 ms ticks) or the last tick; the CPU
 * time a thread uses between its last tick and its exit, and threads that live
 * between two ticks only, are not seen. Thread pools (OpenMP, PyTorch's intra-op
 * threads, DeepSpeed's CPU Adam) live for the whole run.
 */
#ifndef ZB_PROCSAMPLE_H
#define ZB_PROCSAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zb_cpu_sample {
	int64_t start, end;  /* ns, CLOCK_MONOTONIC */
	int64_t cpu_ns;      /* CPU time the thread used in [start, end) */
	uint32_t pid, tid;
} zb_cpu_sample;

typedef struct zb_cpu_thread {
	uint32_t pid, tid;
	char name[32];       /* /proc/PID/task/TID/comm at first sight */
	int64_t last_cpu_ns, last_ns, total_cpu_ns;
	int fd_plus1;        /* its schedstat kept open (fd + 1; 0: none), read with pread */
	uint64_t seen;       /* the tick that last listed it (+ 1) */
} zb_cpu_thread;

typedef struct zb_proc_sampler {
	pid_t root;
	zb_cpu_sample *samples;
	size_t nsamples, cap_samples;
	zb_cpu_thread *threads;
	size_t nthreads, cap_threads;
	pid_t *pids;         /* the tree as last found */
	size_t npids, cap_pids;
	pid_t *known, *known_ppid; /* every process of the last rescan and its parent, by pid */
	size_t nknown;
	uint64_t ticks, read_failures;
	int64_t last_tick_ns;
	int use_ticks;       /* schedstat missing: stat's clock ticks */
	size_t hint;         /* where thread_of looks first: the next thread of the last tick */
	int nopen;           /* schedstat files kept open (at most ZB_PROC_MAX_OPEN) */
	int64_t self_cpu_ns; /* CPU time the ticks themselves took (the sampler's own cost) */
	int64_t period_ns;   /* the period the caller ended with (zb_proc_sampler_period); 0: unset */
} zb_proc_sampler;

/* Schedstat files kept open between ticks: a tick is then one pread per thread
 * instead of open + read + close (5x cheaper, tests/test_trace_cost.c); threads
 * beyond this are read the slow way. */
#define ZB_PROC_MAX_OPEN 512

zb_proc_sampler *zb_proc_sampler_create(pid_t root);
void zb_proc_sampler_free(zb_proc_sampler *s);
/* One sample of every thread of the tree at now_ns; rescan: find the tree's
 * processes first. Threads gone since the last tick are simply not seen. */
void zb_proc_sampler_tick(zb_proc_sampler *s, int64_t now_ns, int rescan);

/* The sampling period for the next ticks, given the CPU time the last n ticks
 * took at period_ns: doubled (at most max_ns) when they took more than
 * ZB_PROC_MAX_SHARE of their periods, so the sampler stays under 1 % of a core
 * however many threads the program has (~1 us a thread a tick: ~100 threads
 * at 10 ms are ~1 %); never lowered. */
#define ZB_PROC_MAX_SHARE 0.01
int64_t zb_proc_sampler_period(int64_t period_ns, int64_t cpu_ns, uint64_t n, int64_t max_ns);

/* Parsers, exposed for tests: the parent pid of a /proc/PID/stat line (the comm
 * field may hold spaces and parentheses); the run time of a schedstat line; the
 * utime + stime ticks of a stat line. Return 0 when the text does not parse. */
int zb_proc_parse_ppid(const char *stat, pid_t *ppid);
int zb_proc_parse_schedstat(const char *line, int64_t *ns);
int zb_proc_parse_stat_ticks(const char *stat, int64_t *ticks);
int zb_proc_parse_starttime(const char *stat, int64_t *ticks);

#ifdef __cplusplus
}
#endif

#endif
