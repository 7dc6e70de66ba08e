/*
 * procsample.c - the /proc sampler of procsample.h.
 */
#include "profiler/procsample.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"

zb_proc_sampler *zb_proc_sampler_create(pid_t root)
{
	zb_proc_sampler *s = zb_xcalloc(1, sizeof *s);
	s->root = root;
	return s;
}

void zb_proc_sampler_free(zb_proc_sampler *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].fd_plus1)
			close(s->threads[i].fd_plus1 - 1);
	free(s->samples);
	free(s->threads);
	free(s->pids);
	free(s->known);
	free(s->known_ppid);
	free(s);
}

/* The text after the comm field's closing parenthesis (the last ')' of the line). */
static const char *after_comm(const char *stat)
{
	const char *p = strrchr(stat, ')');
	return p ? p + 1 : NULL;
}

int zb_proc_parse_ppid(const char *stat, pid_t *ppid)
{
	const char *p = after_comm(stat);
	char state;
	int pp;
	if (!p || sscanf(p, " %c %d", &state, &pp) != 2)
		return 0;
	*ppid = (pid_t)pp;
	return 1;
}

int zb_proc_parse_schedstat(const char *line, int64_t *ns)
{
	long long v;
	if (sscanf(line, "%lld", &v) != 1 || v < 0)
		return 0;
	*ns = v;
	return 1;
}

int zb_proc_parse_starttime(const char *stat, int64_t *ticks)
{
	/* field 22 after the pid; 20 after comm's ')' (state is field 3) */
	const char *p = after_comm(stat);
	long long v;
	if (!p || sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %lld",
			 &v) != 1)
		return 0;
	*ticks = v;
	return 1;
}

int zb_proc_parse_stat_ticks(const char *stat, int64_t *ticks)
{
	/* fields after comm: state(3) ppid pgrp session tty_nr tpgid flags minflt
	 * cminflt majflt cmajflt utime(14) stime(15) */
	const char *p = after_comm(stat);
	long long ut, st;
	if (!p || sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &ut, &st) != 2)
		return 0;
	*ticks = ut + st;
	return 1;
}

/* One read of a small /proc file (no stdio: fopen allocates a 4 KiB buffer). */
static int read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got;
	do
		got = read(fd, buf, n - 1);
	while (got < 0 && errno == EINTR);
	close(fd);
	buf[got > 0 ? got : 0] = 0;
	return got > 0;
}

static void add_pid(zb_proc_sampler *s, pid_t p)
{
	if (s->npids == s->cap_pids) {
		s->cap_pids = s->cap_pids ? 2 * s->cap_pids : 16;
		s->pids = zb_xrealloc(s->pids, s->cap_pids * sizeof *s->pids);
	}
	s->pids[s->npids++] = p;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* The parent of pid as the last rescan knew it; -1 when it did not list pid. */
static pid_t known_parent(const zb_proc_sampler *s, pid_t pid)
{
	size_t lo = 0, hi = s->nknown;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->known[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nknown && s->known[lo] == pid ? s->known_ppid[lo] : -1;
}

/* Every process in /proc and its parent: the last rescan's parents where it knew
 * the process (a process keeps its pid and parent, or is reparented to init when
 * its parent ends: then it stays in the tree), /proc/PID/stat for new ones. */
static size_t list_processes(zb_proc_sampler *s, pid_t **all_out, pid_t **par_out)
{
	DIR *d = opendir("/proc");
	pid_t *all = NULL, *par = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	char path[64], buf[512];
	while (d && (e = readdir(d))) {
		char *end;
		long p = strtol(e->d_name, &end, 10);
		if (*end || p <= 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 512;
			all = zb_xrealloc(all, cap * sizeof *all);
		}
		all[n++] = (pid_t)p;
	}
	if (d)
		closedir(d);
	if (n > 1)
		qsort(all, n, sizeof *all, cmp_pid);
	par = zb_xmalloc((n ? n : 1) * sizeof *par);
	for (size_t i = 0; i < n; i++) {
		par[i] = known_parent(s, all[i]);
		if (par[i] >= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%d/stat", (int)all[i]);
		pid_t pp;
		par[i] = read_small(path, buf, sizeof buf) && zb_proc_parse_ppid(buf, &pp) ? pp : 0;
	}
	*all_out = all, *par_out = par;
	return n;
}

/* The root and its descendants: the closure from the root over the parents of
 * every process (a few passes; trees are shallow). */
static void rescan_tree(zb_proc_sampler *s)
{
	pid_t *all, *par;
	size_t n = list_processes(s, &all, &par);
	/* the listing, with its parents, is what the next rescan knows */
	free(s->known);
	free(s->known_ppid);
	s->known = zb_xmalloc((n ? n : 1) * sizeof *s->known);
	s->known_ppid = zb_xmalloc((n ? n : 1) * sizeof *s->known_ppid);
	if (n) {
		memcpy(s->known, all, n * sizeof *all);
		memcpy(s->known_ppid, par, n * sizeof *par);
	}
	s->nknown = n;
	s->npids = 0;
	add_pid(s, s->root);
	for (size_t i = 0; i < n; i++)
		if (all[i] == s->root)
			all[i] = 0;
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < n; i++) {
			if (!all[i])
				continue;
			for (size_t j = 0; j < s->npids; j++)
				if (par[i] == s->pids[j]) {
					add_pid(s, all[i]);
					all[i] = 0; /* taken */
					changed = 1;
					break;
				}
		}
	}
	free(all);
	free(par);
}

/* The entry of a thread seen before, or NULL. */
static zb_cpu_thread *thread_find(zb_proc_sampler *s, uint32_t pid, uint32_t tid)
{
	/* a tick lists the threads in the same order as the last one: the hint hits */
	size_t h = s->hint;
	if (h < s->nthreads && s->threads[h].tid == tid && s->threads[h].pid == pid) {
		s->hint = h + 1;
		return &s->threads[h];
	}
	for (size_t i = s->nthreads; i-- > 0;)
		if (s->threads[i].tid == tid && s->threads[i].pid == pid) {
			s->hint = i + 1;
			return &s->threads[i];
		}
	return NULL;
}

static zb_cpu_thread *thread_new(zb_proc_sampler *s, uint32_t pid, uint32_t tid)
{
	if (s->nthreads == s->cap_threads) {
		s->cap_threads = s->cap_threads ? 2 * s->cap_threads : 64;
		s->threads = zb_xrealloc(s->threads, s->cap_threads * sizeof *s->threads);
	}
	zb_cpu_thread *t = &s->threads[s->nthreads++];
	memset(t, 0, sizeof *t);
	t->pid = pid, t->tid = tid;
	s->hint = s->nthreads;
	return t;
}

static void close_fd(zb_proc_sampler *s, zb_cpu_thread *t)
{
	if (t->fd_plus1) {
		close(t->fd_plus1 - 1);
		t->fd_plus1 = 0;
		s->nopen--;
	}
}

/* schedstat of a thread through its kept file (opened at first need, while fewer
 * than ZB_PROC_MAX_OPEN are); the slow way for the others. */
static int read_schedstat(zb_proc_sampler *s, zb_cpu_thread *t, const char *path, char *buf, size_t n)
{
	if (!t || (!t->fd_plus1 && s->nopen >= ZB_PROC_MAX_OPEN))
		return read_small(path, buf, n);
	if (!t->fd_plus1) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		t->fd_plus1 = fd + 1;
		s->nopen++;
	}
	ssize_t got;
	do
		got = pread(t->fd_plus1 - 1, buf, n - 1, 0);
	while (got < 0 && errno == EINTR);
	if (got <= 0) { /* the thread ended (ESRCH) */
		close_fd(s, t);
		return 0;
	}
	buf[got] = 0;
	return 1;
}

/* CPU ns of one thread (t: its entry, NULL before it has one); 0 when it is gone. */
static int thread_cpu(zb_proc_sampler *s, zb_cpu_thread *t, uint32_t pid, uint32_t tid, int64_t *ns)
{
	char path[96], buf[512];
	if (!s->use_ticks) {
		snprintf(path, sizeof path, "/proc/%u/task/%u/schedstat", pid, tid);
		if (read_schedstat(s, t, path, buf, sizeof buf) && zb_proc_parse_schedstat(buf, ns))
			return 1;
		if (access("/proc/self/schedstat", R_OK) == 0)
			return 0; /* the thread is gone */
		s->use_ticks = 1;
	}
	snprintf(path, sizeof path, "/proc/%u/task/%u/stat", pid, tid);
	int64_t ticks;
	if (!read_small(path, buf, sizeof buf) || !zb_proc_parse_stat_ticks(buf, &ticks))
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	*ns = ticks * (1000000000 / (hz > 0 ? hz : 100));
	return 1;
}

/* When a thread first seen now started, on the CLOCK_MONOTONIC clock: its
 * starttime (clock ticks after boot) less the boot-to-monotonic offset; -1 when
 * unknown. */
static int64_t thread_start_ns(uint32_t pid, uint32_t tid, int64_t now)
{
	char path[96], buf[1024];
	snprintf(path, sizeof path, "/proc/%u/task/%u/stat", pid, tid);
	int64_t ticks;
	struct timespec bt, mt;
	if (!read_small(path, buf, sizeof buf) || !zb_proc_parse_starttime(buf, &ticks) ||
	    clock_gettime(CLOCK_BOOTTIME, &bt) || clock_gettime(CLOCK_MONOTONIC, &mt))
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	int64_t boot_off = ((int64_t)bt.tv_sec - mt.tv_sec) * 1000000000 + (bt.tv_nsec - mt.tv_nsec);
	int64_t start = ticks * (1000000000 / (hz > 0 ? hz : 100)) - boot_off;
	return start <= now ? start : now;
}

static void add_sample(zb_proc_sampler *s, const zb_cpu_sample *x)
{
	if (s->nsamples == s->cap_samples) {
		s->cap_samples = s->cap_samples ? 2 * s->cap_samples : 4096;
		s->samples = zb_xrealloc(s->samples, s->cap_samples * sizeof *s->samples);
	}
	s->samples[s->nsamples++] = *x;
}

static void sample_pid(zb_proc_sampler *s, pid_t pid, int64_t now)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		int64_t ns;
		zb_cpu_thread *t = thread_find(s, (uint32_t)pid, (uint32_t)tid);
		if (!thread_cpu(s, t, (uint32_t)pid, (uint32_t)tid, &ns)) {
			s->read_failures++;
			continue;
		}
		int fresh = !t;
		if (fresh)
			t = thread_new(s, (uint32_t)pid, (uint32_t)tid);
		t->seen = s->ticks + 1;
		if (fresh) {
			char cpath[96];
			snprintf(cpath, sizeof cpath, "/proc/%d/task/%ld/comm", (int)pid, tid);
			if (read_small(cpath, t->name, sizeof t->name))
				t->name[strcspn(t->name, "\n")] = 0;
			/* a thread born since the last tick: its CPU time so far belongs to
			 * [its start (10 ms ticks), now), no earlier than that tick */
			int64_t born = s->ticks > 0 ? thread_start_ns((uint32_t)pid, (uint32_t)tid, now) : -1;
			if (born >= 0 && ns > 0) {
				if (born < s->last_tick_ns)
					born = s->last_tick_ns;
				if (born >= now)
					born = now - 1;
				zb_cpu_sample x = { .start = born, .end = now, .cpu_ns = ns, .pid = (uint32_t)pid,
						    .tid = (uint32_t)tid };
				if (x.cpu_ns > x.end - x.start)
					x.cpu_ns = x.end - x.start;
				t->total_cpu_ns += x.cpu_ns;
				add_sample(s, &x);
			}
		} else if (ns > t->last_cpu_ns && now > t->last_ns) {
			zb_cpu_sample x = { .start = t->last_ns, .end = now, .cpu_ns = ns - t->last_cpu_ns,
					    .pid = (uint32_t)pid, .tid = (uint32_t)tid };
			if (x.cpu_ns > x.end - x.start)
				x.cpu_ns = x.end - x.start; /* clock granularity: one thread, one core */
			t->total_cpu_ns += x.cpu_ns;
			add_sample(s, &x);
		}
		t->last_cpu_ns = ns;
		t->last_ns = now;
	}
	closedir(d);
}

static int64_t thread_cpu_now(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void zb_proc_sampler_tick(zb_proc_sampler *s, int64_t now_ns, int rescan)
{
	int64_t c0 = thread_cpu_now();
	if (rescan || s->npids == 0)
		rescan_tree(s);
	for (size_t i = 0; i < s->npids; i++)
		sample_pid(s, s->pids[i], now_ns);
	/* the files of threads this tick did not list (ended, or their process did) */
	for (size_t i = 0; i < s->nthreads && s->nopen > 0; i++)
		if (s->threads[i].fd_plus1 && s->threads[i].seen != s->ticks + 1)
			close_fd(s, &s->threads[i]);
	s->ticks++;
	s->last_tick_ns = now_ns;
	s->self_cpu_ns += thread_cpu_now() - c0;
}

int64_t zb_proc_sampler_period(int64_t period_ns, int64_t cpu_ns, uint64_t n, int64_t max_ns)
{
	if (n == 0 || period_ns <= 0 || (double)cpu_ns <= ZB_PROC_MAX_SHARE * (double)period_ns * (double)n)
		return period_ns;
	return period_ns >= max_ns / 2 ? (period_ns > max_ns ? period_ns : max_ns) : 2 * period_ns;
}
