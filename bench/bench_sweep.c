/*
 * bench_sweep.c - sweeps at scale, measured as a user runs them: the zbench
 * binary itself (/proc/self/exe) runs `zbench sweep ... --db <temp> > /dev/null`
 * as a child, with all its threads (-j default: every core), its database and its
 * printing; the case reports the wall time, configurations per second and the
 * child's peak resident memory (wait4's ru_maxrss). The targets on the
 * 2-core development machine: the 1260-configuration sweep >= 10 000 configs/s,
 * 100 000 configurations <= 15 s in <= 300 MB, a million in the same memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/cases.h"

#define GRID_1260 "--ratio 0:1:0.05 --pcie gen3,gen4,gen5,gen6 --cores 4,8,16,32,64 --hypothetical-cpu --policy offload,overlap,dpu"
/* x 5 GPUs x 2 micro-batches, ratios in steps of 0.006: 100 200 configurations */
#define GRID_100K "--ratio 0:1:0.006 --pcie gen3,gen4,gen5,gen6 --cores 4,8,16,32,64 --hypothetical-cpu --policy offload,overlap,dpu" \
		  " --gpu a100-80g,h100,h200,b200,gh200 --micro-batch 4,8"
/* ratios in steps of 0.001 and gas 1, 2: 1 201 200 configurations */
#define GRID_1M "--ratio 0:1:0.001 --pcie gen3,gen4,gen5,gen6 --cores 4,8,16,32,64 --hypothetical-cpu --policy offload,overlap,dpu" \
		" --gpu a100-80g,h100,h200,b200,gh200 --micro-batch 4,8 --gas 1,2"

/* Run `zbench sweep <grid> --db <dir>/sweep.db` once; its wall time, CPU time
 * (user + system, all threads) and peak RSS. */
static zb_status run_child(const char *grid, const char *dir, double *wall, double *cpu, long *rss_kb,
			   zb_error *err)
{
	char exe[4096], db[4200], cmd[16384];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return zb_fail(err, ZB_E_INTERNAL, "cannot find the zbench binary: %s", strerror(errno));
	exe[n] = 0;
	snprintf(db, sizeof db, "%s/sweep.db", dir);
	unlink(db);
	snprintf(cmd, sizeof cmd, "%s-wal", db);
	unlink(cmd);
	snprintf(cmd, sizeof cmd, "exec '%s' sweep %s --db '%s' > /dev/null", exe, grid, db);
	double t0 = zb_wall_s();
	pid_t pid = fork();
	if (pid < 0)
		return zb_fail(err, ZB_E_INTERNAL, "fork: %s", strerror(errno));
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid)
		return zb_fail(err, ZB_E_INTERNAL, "wait4: %s", strerror(errno));
	*wall = zb_wall_s() - t0;
	*rss_kb = ru.ru_maxrss;
	*cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return zb_fail(err, ZB_E_INTERNAL, "`zbench sweep %s` failed (status %d)", grid, status);
	return ZB_OK;
}

static zb_status run_grid(const char *name, const char *grid, long long configs, int reps, FILE *out, json_t *res,
			  zb_error *err)
{
	char dir[] = "/tmp/zbench-bench-XXXXXX";
	if (!mkdtemp(dir))
		return zb_fail(err, ZB_E_INTERNAL, "mkdtemp: %s", strerror(errno));
	double *t = zb_xmalloc((size_t)reps * sizeof *t), *cpu = zb_xmalloc((size_t)reps * sizeof *cpu);
	long rss = 0;
	zb_status st = ZB_OK;
	for (int i = 0; i < reps && !st; i++) {
		long r = 0;
		st = run_child(grid, dir, &t[i], &cpu[i], &r, err);
		if (r > rss)
			rss = r;
	}
	if (!st) {
		/* CPU time says what the sweep costs when other processes share the cores */
		double med = zb_median(t, reps), med_cpu = zb_median(cpu, reps);
		fprintf(out, "%-14s %8lld configs %9.2f s %9.0f configs/s %7.1f MB peak RSS; CPU %.2f s, %.0f configs"
			" per CPU-second (medians of %d, -j %ld)\n",
			name, configs, med, configs / med, rss / 1024.0, med_cpu, configs / med_cpu, reps,
			sysconf(_SC_NPROCESSORS_ONLN));
		json_object_set_new(res, "configs", json_integer(configs));
		json_object_set_new(res, "seconds", json_real(med));
		json_object_set_new(res, "cpu_seconds", json_real(med_cpu));
		json_object_set_new(res, "configs_per_s", json_real(configs / med));
		json_object_set_new(res, "peak_rss_bytes", json_integer((json_int_t)rss * 1024));
		json_object_set_new(res, "command", json_string(grid));
	}
	free(t);
	free(cpu);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0 && !st)
		st = zb_fail(err, ZB_E_INTERNAL, "cannot remove %s", dir);
	return st;
}

static zb_status run_1260(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	return run_grid("sim-sweep-1260", GRID_1260 " --steps 6", 1260, a->repeats > 0 ? a->repeats : 7, out, res,
			err);
}

static zb_status run_100k(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	return run_grid("sim-sweep-100k", GRID_100K, 100200, a->repeats > 0 ? a->repeats : 3, out, res, err);
}

static zb_status run_1m(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	return run_grid("sim-sweep-1m", GRID_1M, 1201200, a->repeats > 0 ? a->repeats : 1, out, res, err);
}

const zb_bench_case zb_bench_sweep_cases[] = {
	{ "sim-sweep-1260", "sim", "zbench sweep, 1260 configurations, database: configs/s, peak RSS", NULL,
	  run_1260 },
	{ "sim-sweep-100k", "sim", "zbench sweep, 100 200 configurations, database: seconds, peak RSS", NULL,
	  run_100k },
	{ "sim-sweep-1m", "sim", "zbench sweep, 1 201 200 configurations, database: seconds, peak RSS", NULL, run_1m },
	{ 0 },
};
