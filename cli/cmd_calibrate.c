/*
 * cmd_calibrate.c - zbench calibrate: measure this machine and fit the simulator's
 * hardware model to it (sim/fit.h), writing a hardware profile (a --hw JSON file,
 * through zb_hw_save) and a database row (results/records.h: hw_profiles, with
 * every measurement and fit behind it).
 *
 * Measured here: the fused CPU Adam over 1, 2, 4, ... threads up to all of them
 * (zb_bench_cpu_adam), a triad at full threads, and the thread pool's dispatch
 * cost (a tiny run, median of many). The GPU side (calibrate.h): copies pinned and
 * pageable, each direction alone and both at once; the device copy kernel; the
 * GEMM shapes the executor runs for the chosen models; GPU Adam; CPU Adam while
 * copies run both ways.
 *
 * Fitted, parameter by parameter (anything not measured keeps the --base value):
 *   link.copy_latency_s     mean of the H2D and D2H intercepts of t = lat + bytes/bw
 *   link.h2d_Bps, d2h_Bps   pinned copies alone, latency fixed to the above
 *   link.duplex_h2d, _d2h   both at once (same fit) / alone
 *   link.pageable_*_Bps     pageable copies alone, latency fixed
 *   gpu.kernel_latency_s, hbm_Bps   the device copy kernel, t = lat + bytes/bw
 *   gpu.bf16_flops, gemm_half_dim   the GEMM shapes, weighted by their share of each
 *                           model's GEMM work; fp16_flops keeps the base fp16/bf16 ratio
 *   gpu.mem_bytes           the device's total memory
 *   cpu.cores, adam_params_per_core  Adam at all threads / threads
 *   cpu.dram_Bps            Adam + copies together (28 B/param + copy bytes); with
 *                           --cpu-only, the triad at 16 B/element
 *   cpu.task_latency_s      the pool dispatch median
 *   cpu.mem_bytes           MemTotal
 * A fit that fails (too few points, nonsense data) keeps the base value and says so.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/calibrate.h"
#include "common/clock.h"
#include "common/stats.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/report.h"
#include "cli/session.h"
#include "cli/suite.h"
#include "exec/cpu_adam.h"
#include "exec/cpu_adam_bench.h"
#include "exec/executor.h"
#include "exec/threadpool.h"
#include "results/records.h"
#include "analysis/compare.h"
#include "analysis/fit.h"
#include "core/graph.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

#define DEFAULT_OUT "results/hw-calibrated.json"

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench calibrate [--out <file>] [--name <name>] [--base <machine|file>] [--quick]\n"
		   "                        [--cpu-only] [--threads <n>] [--model <name>[,<name>...]]\n"
		   "                        [--micro-batch <n>] [--seq <n>] [--json] [--db <path> | --no-db]\n\n"
		   "Measure this machine (copies 4 KB..1 GB pinned and pageable, each way and both at once;\n"
		   "device memory; the GEMM shapes of the models; CPU Adam over thread counts, alone and\n"
		   "with copies running; GPU Adam) and fit the simulator's hardware model to it. Writes\n"
		   "a hardware profile that --hw accepts (default " DEFAULT_OUT ") and a\n"
		   "database row. --base: the machine whose values stand where nothing is measured\n"
		   "(default h200-machine). --model: GEMM shapes of these presets (default: the models\n"
		   "and shapes of zbench validate's full suite). --cpu-only: the CPU alone (no GPU\n"
		   "needed; DRAM bandwidth then from the triad). --quick: small sizes, for tests.\n");
}

/* ---- GEMM shapes ------------------------------------------------------------------------ */

/* The transposes the executor gives a GEMM task (executor_cuda.c, run_gemm). */
static void layout(const zb_model *m, const zb_task *t, int *ta, int *tb)
{
	int tied = t->op == ZB_OP_LMHEAD && m->tied_embeddings;
	if (t->op == ZB_OP_SCORES || t->op == ZB_OP_CONTEXT) {
		*ta = 0, *tb = 0;
		return;
	}
	switch (t->pass) {
	case ZB_PASS_FWD:
	case ZB_PASS_RECOMPUTE: *ta = tied, *tb = 0; return;
	case ZB_PASS_BWD_DATA: *ta = !tied, *tb = 0; return;
	default: *ta = 0, *tb = 1; return;
	}
}

static int cmp_weight(const void *a, const void *b)
{
	double x = ((const zb_calib_gemm *)a)->weight, y = ((const zb_calib_gemm *)b)->weight;
	return x > y ? -1 : x < y;
}

/* Add the GEMMs of one step of c (policy none): weights = share of c's GEMM FLOPs. */
static zb_status add_shapes(const zb_config *c0, zb_calib_gemm *all, int *n, int cap, zb_error *err)
{
	zb_config c = *c0;
	c.policy.kind = ZB_POLICY_NONE;
	c.policy.ratio = 0;
	c.policy.gas = 1;
	c.policy.offload_param = 0;
	c.policy.ckpt = ZB_CKPT_NONE;
	c.steps = 1;
	zb_graph g;
	zb_status st = zb_graph_build(&g, &c, err);
	if (st)
		return st;
	double total = 0;
	for (size_t i = 0; i < g.ntasks; i++)
		if (g.tasks[i].kind == ZB_TASK_GEMM)
			total += g.tasks[i].flops;
	for (size_t i = 0; i < g.ntasks && total > 0; i++) {
		const zb_task *t = &g.tasks[i];
		if (t->kind != ZB_TASK_GEMM)
			continue;
		int ta, tb;
		layout(&c.model, t, &ta, &tb);
		int j;
		for (j = 0; j < *n; j++)
			if (all[j].transa == ta && all[j].transb == tb && all[j].m == t->m && all[j].n == t->n &&
			    all[j].k == t->k && all[j].batch == (t->batch > 0 ? t->batch : 1))
				break;
		if (j == *n) {
			if (*n == cap)
				continue;
			all[j] = (zb_calib_gemm){ ta, tb, t->m, t->n, t->k, t->batch > 0 ? t->batch : 1, t->flops, 0, 0 };
			(*n)++;
		}
		all[j].weight += t->flops / total;
	}
	zb_graph_free(&g);
	return ZB_OK;
}

static zb_status plan_gemms(const char *models, int mb, int seq, zb_calib_plan *plan, zb_error *err)
{
	enum { CAP = 1024 };
	zb_calib_gemm *all = zb_xcalloc(CAP, sizeof *all);
	int n = 0;
	zb_status st = ZB_OK;
	if (!models) {
		/* the (model, micro-batch, seq) combinations of the full validation suite */
		const zb_suite *s;
		zb_suite_find("full", &s, err);
		for (int i = 0; i < s->n && !st; i++) {
			int seen = 0;
			for (int j = 0; j < i; j++)
				seen |= !strcmp(s->entries[j].model, s->entries[i].model) &&
					s->entries[j].micro_batch == s->entries[i].micro_batch &&
					s->entries[j].seq == s->entries[i].seq;
			if (seen)
				continue;
			zb_config c;
			if (!(st = zb_suite_config(&s->entries[i], NULL, 0, 1, &c, err)))
				st = add_shapes(&c, all, &n, CAP, err);
		}
	} else {
		char *copy = strdup(models), *save = NULL;
		for (char *name = strtok_r(copy, ",", &save); name && !st; name = strtok_r(NULL, ",", &save)) {
			zb_config c;
			memset(&c, 0, sizeof c);
			zb_preset_default_hw(&c.hw);
			if ((st = zb_preset_model(name, &c.model, err)))
				break;
			zb_policy_defaults(&c.policy);
			if (mb > 0)
				c.policy.micro_batch = mb;
			if (seq > 0)
				c.policy.seq = seq;
			c.steps = 1;
			st = add_shapes(&c, all, &n, CAP, err);
		}
		free(copy);
	}
	if (!st) {
		qsort(all, (size_t)n, sizeof *all, cmp_weight);
		plan->ngemm = n < ZB_CALIB_MAX_GEMMS ? n : ZB_CALIB_MAX_GEMMS;
		memcpy(plan->gemm, all, (size_t)plan->ngemm * sizeof *all);
	}
	free(all);
	return st;
}

/* ---- CPU ----------------------------------------------------------------------------------- */

static void noop(void *ctx, int64_t lo, int64_t hi, int worker)
{
	(void)ctx, (void)lo, (void)hi, (void)worker;
}

/* Dispatching one small run to the pool and waiting for it: what a CPU task costs
 * besides its work. */
static zb_status task_latency(int threads, int reps, double *out, zb_error *err)
{
	zb_pool *pool;
	zb_status st = zb_pool_create(threads, &pool, err);
	if (st)
		return st;
	double *t = zb_xmalloc((size_t)reps * sizeof *t);
	for (int r = -5; r < reps; r++) {
		int64_t a = zb_now_ns();
		zb_pool_run(pool, noop, NULL, (int64_t)threads * ZB_POOL_ALIGN, ZB_POOL_ALIGN);
		if (r >= 0)
			t[r] = (zb_now_ns() - a) * 1e-9;
		usleep(100); /* let the workers go back to sleep, as between buckets */
	}
	*out = zb_median(t, reps);
	free(t);
	zb_pool_destroy(pool);
	return ZB_OK;
}

static double mem_total(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	double kb = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "MemTotal: %lf kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

/* ---- output -------------------------------------------------------------------------------- */

static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

typedef struct param_row {
	const char *name, *unit;
	double scale, base, now, rms;
	const char *from;
} param_row;

#define MAX_ROWS 24

static void add_row(param_row *rows, int *n, const char *name, const char *unit, double scale, double base, double now,
		    double rms, const char *from)
{
	if (*n < MAX_ROWS)
		rows[(*n)++] = (param_row){ name, unit, scale, base, now, rms, from };
}

int cmd_calibrate(int argc, char **argv)
{
	static const struct option table[] = {
		{ "out", required_argument, NULL, 'o' },     { "name", required_argument, NULL, 'n' },
		{ "base", required_argument, NULL, 'b' },    { "quick", no_argument, NULL, 'q' },
		{ "cpu-only", no_argument, NULL, 'c' },      { "threads", required_argument, NULL, 't' },
		{ "model", required_argument, NULL, 'm' },   { "micro-batch", required_argument, NULL, 'B' },
		{ "seq", required_argument, NULL, 's' },     { "json", no_argument, NULL, 'j' },
		{ "db", required_argument, NULL, 'd' },      { "no-db", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },          { 0 },
	};
	const char *out_path = DEFAULT_OUT, *name = NULL, *base_name = NULL, *models = NULL;
	int quick = 0, cpu_only = 0, threads = 0, mb = 0, seq = 0, json = 0, opt;
	zb_options o = { 0 };
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", table, NULL)) != -1) {
		char *end = NULL;
		long v = 0;
		switch (opt) {
		case 'o': out_path = optarg; break;
		case 'n': name = optarg; break;
		case 'b': base_name = optarg; break;
		case 'q': quick = 1; break;
		case 'c': cpu_only = 1; break;
		case 'm': models = optarg; break;
		case 'j': json = o.json = 1; break;
		case 'd': o.db = optarg; break;
		case 'N': o.no_db = 1; break;
		case 't':
		case 'B':
		case 's':
			v = strtol(optarg, &end, 10);
			if (end == optarg || *end || v < 1 || v > 1 << 20) {
				fprintf(stderr, "zbench: invalid value '%s' for --%s (expected a positive integer)\n", optarg,
					opt == 't' ? "threads" : opt == 'B' ? "micro-batch" : "seq");
				return 2;
			}
			*(opt == 't' ? &threads : opt == 'B' ? &mb : &seq) = (int)v;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	zb_error err = { 0 };
	zb_hw base, hw;
	zb_status st;
	if (base_name && (strchr(base_name, '/') || strstr(base_name, ".json")))
		st = zb_hw_load(base_name, &base, &err);
	else if (base_name)
		st = zb_preset_hw(base_name, &base, &err);
	else
		zb_preset_default_hw(&base), st = ZB_OK;
	if (st)
		return zb_report_error(&err);
	zb_calib_plan plan;
	memset(&plan, 0, sizeof plan);
	plan.quick = quick;
	if (!cpu_only && (st = plan_gemms(models, mb, seq, &plan, &err)))
		return zb_report_error(&err);
	if (!cpu_only && !zb_exec_available(&err)) {
		fprintf(stderr, "zbench: %s (zbench calibrate --cpu-only measures the CPU alone)\n", err.msg);
		return zb_exit_code(err.status);
	}
	/* the output must be writable before minutes of measuring */
	{
		char probe[1024];
		snprintf(probe, sizeof probe, "%s.probe", out_path);
		FILE *f = fopen(probe, "w");
		if (!f) {
			zb_fail(&err, ZB_E_INPUT, "cannot write the profile next to %s", out_path);
			return zb_report_error(&err);
		}
		fclose(f);
		unlink(probe);
	}
	if (threads <= 0) {
		long nc = sysconf(_SC_NPROCESSORS_ONLN);
		threads = nc > 0 ? (int)nc : 1;
	}
	FILE *log = stderr;
	double t_start = zb_wall_s();
	fprintf(log, "# zbench calibrate: %d CPU threads%s, base %s%s\n", threads, cpu_only ? " (CPU only)" : "",
		base.name, quick ? ", quick (small sizes: not for real use)" : "");

	/* ---- CPU ---- */
	int64_t params = quick ? (8LL << 20) : ZB_BENCH_ADAM_PARAMS;
	int reps = quick ? 3 : ZB_BENCH_REPEATS;
	int tc[16], nt = 0;
	double rate[16];
	for (int t = 1; nt < 16; t *= 2) {
		tc[nt] = t < threads ? t : threads;
		zb_cpu_adam_bench ab;
		if ((st = zb_bench_cpu_adam(params, tc[nt], reps, &ab, &err)))
			return zb_report_error(&err);
		rate[nt] = ab.gparams_per_s * 1e9;
		fprintf(log, "  cpu adam %2d threads: %.3f Gparam/s (%s, %lld M params)\n", tc[nt], ab.gparams_per_s,
			zb_adam_isa_name(ab.isa), (long long)(params >> 20));
		if (tc[nt++] == threads)
			break;
	}
	zb_triad_bench tb;
	if ((st = zb_bench_triad(params, threads, reps, &tb, &err)))
		return zb_report_error(&err);
	double task_lat;
	if ((st = task_latency(threads, quick ? 50 : 500, &task_lat, &err)))
		return zb_report_error(&err);
	fprintf(log, "  triad %d threads: %.1f GB/s (12 B/element); pool dispatch %.1f us\n", threads, tb.GBps,
		task_lat * 1e6);

	/* ---- GPU ---- */
	zb_calib_gpu g;
	memset(&g, 0, sizeof g);
	if (!cpu_only) {
		plan.threads = threads;
		plan.adam_params = params;
		if ((st = zb_calibrate_gpu(&plan, &g, log, &err)))
			return zb_report_error(&err);
	}

	/* ---- fits ---- */
	hw = base;
	snprintf(hw.name, sizeof hw.name, "%s", name ? name : "calibrated");
	param_row rows[MAX_ROWS];
	int nrows = 0;
	json_t *fits = json_object(), *notes = json_array();
	char note[600];
	if (!cpu_only) {
		double b[ZB_CALIB_MAX_SIZES], h[ZB_CALIB_MAX_SIZES], d[ZB_CALIB_MAX_SIZES], bh[ZB_CALIB_MAX_SIZES],
			bd[ZB_CALIB_MAX_SIZES];
		for (int i = 0; i < g.npinned; i++)
			b[i] = g.pinned[i].bytes, h[i] = g.pinned[i].h2d_s, d[i] = g.pinned[i].d2h_s,
			bh[i] = g.pinned[i].both_h2d_s, bd[i] = g.pinned[i].both_d2h_s;
		zb_copy_fit fh, fd, fbh, fbd;
		zb_error fe = { 0 };
		if (!zb_fit_copy(b, h, g.npinned, &fh, &fe) && !zb_fit_copy(b, d, g.npinned, &fd, &fe)) {
			double lat = (fh.latency_s + fd.latency_s) / 2;
			zb_fit_copy_bw(b, h, g.npinned, lat, &fh, NULL);
			zb_fit_copy_bw(b, d, g.npinned, lat, &fd, NULL);
			hw.link.copy_latency_s = lat;
			hw.link.h2d_Bps = fh.Bps;
			hw.link.d2h_Bps = fd.Bps;
			add_row(rows, &nrows, "link.copy_latency_s", "us", 1e6, base.link.copy_latency_s, lat, NAN,
				"pinned copies 4 KB..1 GB, intercept");
			add_row(rows, &nrows, "link.h2d_Bps", "GB/s", 1e-9, base.link.h2d_Bps, fh.Bps, fh.rms_rel_err,
				"pinned H2D alone");
			add_row(rows, &nrows, "link.d2h_Bps", "GB/s", 1e-9, base.link.d2h_Bps, fd.Bps, fd.rms_rel_err,
				"pinned D2H alone");
			json_object_set_new(fits, "pinned_h2d", json_pack("{s:f, s:f, s:f, s:f}", "latency_s", lat, "Bps", fh.Bps,
									   "rms_rel_err", fh.rms_rel_err, "max_rel_err",
									   fh.max_rel_err));
			json_object_set_new(fits, "pinned_d2h", json_pack("{s:f, s:f, s:f, s:f}", "latency_s", lat, "Bps", fd.Bps,
									   "rms_rel_err", fd.rms_rel_err, "max_rel_err",
									   fd.max_rel_err));
			if (!zb_fit_copy_bw(b, bh, g.npinned, lat, &fbh, &fe) && !zb_fit_copy_bw(b, bd, g.npinned, lat, &fbd, &fe)) {
				hw.link.duplex_h2d = zb_fit_duplex(fh.Bps, fbh.Bps);
				hw.link.duplex_d2h = zb_fit_duplex(fd.Bps, fbd.Bps);
				add_row(rows, &nrows, "link.duplex_h2d", "", 1, base.link.duplex_h2d, hw.link.duplex_h2d,
					fbh.rms_rel_err, "both at once / alone");
				add_row(rows, &nrows, "link.duplex_d2h", "", 1, base.link.duplex_d2h, hw.link.duplex_d2h,
					fbd.rms_rel_err, "both at once / alone");
				json_object_set_new(fits, "duplex", json_pack("{s:f, s:f, s:f, s:f}", "both_h2d_Bps", fbh.Bps,
									       "both_d2h_Bps", fbd.Bps, "duplex_h2d",
									       hw.link.duplex_h2d, "duplex_d2h", hw.link.duplex_d2h));
			} else {
				snprintf(note, sizeof note, "duplex not fitted: %s", fe.msg);
				json_array_append_new(notes, json_string(note));
			}
			/* pageable: latency kept from the pinned fit (the model has one) */
			for (int i = 0; i < g.npageable; i++)
				b[i] = g.pageable[i].bytes, h[i] = g.pageable[i].h2d_s, d[i] = g.pageable[i].d2h_s;
			zb_copy_fit ph, pd;
			if (!zb_fit_copy_bw(b, h, g.npageable, lat, &ph, &fe) && !zb_fit_copy_bw(b, d, g.npageable, lat, &pd, &fe)) {
				hw.link.pageable_h2d_Bps = ph.Bps;
				hw.link.pageable_d2h_Bps = pd.Bps;
				add_row(rows, &nrows, "link.pageable_h2d_Bps", "GB/s", 1e-9, base.link.pageable_h2d_Bps, ph.Bps,
					ph.rms_rel_err, "pageable H2D 64 KB..1 GB");
				add_row(rows, &nrows, "link.pageable_d2h_Bps", "GB/s", 1e-9, base.link.pageable_d2h_Bps, pd.Bps,
					pd.rms_rel_err, "pageable D2H 64 KB..1 GB");
				json_object_set_new(fits, "pageable", json_pack("{s:f, s:f, s:f, s:f}", "h2d_Bps", ph.Bps, "d2h_Bps",
										 pd.Bps, "h2d_rms_rel_err", ph.rms_rel_err,
										 "d2h_rms_rel_err", pd.rms_rel_err));
			} else {
				snprintf(note, sizeof note, "pageable bandwidth not fitted: %s", fe.msg);
				json_array_append_new(notes, json_string(note));
			}
			snprintf(hw.link.name, sizeof hw.link.name, "%.50s-cal", base.link.name);
		} else {
			snprintf(note, sizeof note, "link not fitted: %s", fe.msg);
			json_array_append_new(notes, json_string(note));
		}
		/* device memory: the copy kernel */
		zb_copy_fit fm;
		if (!zb_fit_copy(g.dev_bytes, g.dev_s, g.ndev, &fm, &fe)) {
			hw.gpu.kernel_latency_s = fm.latency_s;
			hw.gpu.hbm_Bps = fm.Bps;
			add_row(rows, &nrows, "gpu.kernel_latency_s", "us", 1e6, base.gpu.kernel_latency_s, fm.latency_s, NAN,
				"device copy kernel, intercept");
			add_row(rows, &nrows, "gpu.hbm_Bps", "GB/s", 1e-9, base.gpu.hbm_Bps, fm.Bps, fm.rms_rel_err,
				"device copy kernel, read + write");
			json_object_set_new(fits, "hbm", json_pack("{s:f, s:f, s:f, s:f}", "latency_s", fm.latency_s, "Bps",
								    fm.Bps, "rms_rel_err", fm.rms_rel_err, "max_rel_err",
								    fm.max_rel_err));
		} else {
			snprintf(note, sizeof note, "device memory not fitted: %s", fe.msg);
			json_array_append_new(notes, json_string(note));
		}
		/* GEMMs */
		zb_gemm_sample gs[ZB_CALIB_MAX_GEMMS];
		for (int i = 0; i < plan.ngemm; i++)
			gs[i] = (zb_gemm_sample){ plan.gemm[i].m, plan.gemm[i].n, plan.gemm[i].k, plan.gemm[i].batch,
						  plan.gemm[i].flops, plan.gemm[i].time_s, plan.gemm[i].weight };
		zb_gemm_fit gf;
		if (!zb_fit_gemm(gs, plan.ngemm, hw.gpu.kernel_latency_s, 4096, &gf, &fe)) {
			double ratio = base.gpu.bf16_flops > 0 ? base.gpu.fp16_flops / base.gpu.bf16_flops : 1;
			hw.gpu.bf16_flops = gf.peak_flops;
			hw.gpu.fp16_flops = gf.peak_flops * ratio;
			hw.gpu.gemm_half_dim = gf.half_dim;
			add_row(rows, &nrows, "gpu.bf16_flops", "TFLOP/s", 1e-12, base.gpu.bf16_flops, gf.peak_flops,
				gf.rms_rel_err, "model GEMM shapes, weighted");
			add_row(rows, &nrows, "gpu.fp16_flops", "TFLOP/s", 1e-12, base.gpu.fp16_flops, hw.gpu.fp16_flops, NAN,
				"bf16 x the base's fp16/bf16 ratio");
			add_row(rows, &nrows, "gpu.gemm_half_dim", "", 1, base.gpu.gemm_half_dim, gf.half_dim, gf.rms_rel_err,
				"same fit");
			json_object_set_new(fits, "gemm", json_pack("{s:f, s:f, s:f, s:f}", "peak_flops", gf.peak_flops,
								     "half_dim", gf.half_dim, "rms_rel_err", gf.rms_rel_err,
								     "max_rel_err", gf.max_rel_err));
		} else {
			snprintf(note, sizeof note, "GEMM efficiency not fitted: %s", fe.msg);
			json_array_append_new(notes, json_string(note));
		}
		hw.gpu.mem_bytes = g.mem_bytes;
		add_row(rows, &nrows, "gpu.mem_bytes", "GiB", 1.0 / (1 << 30), base.gpu.mem_bytes, g.mem_bytes, NAN,
			g.device);
		snprintf(hw.gpu.name, sizeof hw.gpu.name, "%.50s-cal", base.gpu.name);
	}
	zb_cpu_samples cs = { nt, tc, rate, g.together_adam_params_per_s, g.together_copy_Bps, tb.GBps * 1e9 };
	zb_cpu_fit cf;
	if ((st = zb_fit_cpu(&cs, &cf, &err)))
		return zb_report_error(&err);
	hw.cpu.cores = cf.cores;
	hw.cpu.adam_params_per_core = cf.adam_params_per_core;
	hw.cpu.adam_Bps = cf.adam_Bps;
	hw.cpu.dram_Bps = cf.dram_Bps;
	hw.cpu.task_latency_s = task_lat;
	double mt = mem_total();
	if (mt > 0)
		hw.cpu.mem_bytes = mt;
	snprintf(hw.cpu.name, sizeof hw.cpu.name, "%.50s-cal", base.cpu.name);
	add_row(rows, &nrows, "cpu.cores", "", 1, base.cpu.cores, cf.cores, NAN, "threads measured (top)");
	add_row(rows, &nrows, "cpu.adam_params_per_core", "Gparam/s", 1e-9, base.cpu.adam_params_per_core,
		cf.adam_params_per_core, cf.rms_rel_err, "best Adam rate per thread (rms over thread counts)");
	add_row(rows, &nrows, "cpu.adam_Bps", "GB/s", 1e-9, base.cpu.adam_Bps, cf.adam_Bps, NAN,
		"fastest Adam rate x 28 B");
	add_row(rows, &nrows, "cpu.dram_Bps", "GB/s", 1e-9, base.cpu.dram_Bps, cf.dram_Bps, NAN, cf.dram_source);
	add_row(rows, &nrows, "cpu.task_latency_s", "us", 1e6, base.cpu.task_latency_s, task_lat, NAN, "pool dispatch median");
	add_row(rows, &nrows, "cpu.mem_bytes", "GiB", 1.0 / (1 << 30), base.cpu.mem_bytes, hw.cpu.mem_bytes, NAN,
		"MemTotal");
	json_object_set_new(fits, "cpu", json_pack("{s:i, s:f, s:f, s:s, s:f, s:f}", "cores", cf.cores,
						   "adam_params_per_core", cf.adam_params_per_core, "adam_Bps", cf.adam_Bps,
						   "dram_Bps", cf.dram_Bps,
						   "dram_source", cf.dram_source, "rms_rel_err", cf.rms_rel_err,
						   "max_rel_err", cf.max_rel_err));
	if (cf.max_rel_err > 0.1) {
		snprintf(note, sizeof note,
			 "the CPU model is linear in threads under the DRAM cap: off by up to %.0f%% at fewer threads than %d",
			 100 * cf.max_rel_err, cf.cores);
		json_array_append_new(notes, json_string(note));
	}
	if (!cpu_only && hw.gpu.hbm_Bps > 0) {
		double adam_Bps = g.gpu_adam_params_per_s * ZB_ADAM_BYTES_PER_PARAM;
		if (fabs(adam_Bps / hw.gpu.hbm_Bps - 1) > 0.05) {
			snprintf(note, sizeof note,
				 "GPU Adam moves %.0f GB/s at 28 B/param, %+.0f%% from the copy kernel's %.0f GB/s the model uses",
				 adam_Bps / 1e9, 100 * (adam_Bps / hw.gpu.hbm_Bps - 1), hw.gpu.hbm_Bps / 1e9);
			json_array_append_new(notes, json_string(note));
		}
	}
	if ((st = zb_hw_validate(&hw, &err)) || (st = zb_hw_save(out_path, &hw, &err))) {
		json_decref(fits);
		json_decref(notes);
		return zb_report_error(&err);
	}

	/* ---- measurements document ---- */
	json_t *m = json_object(), *cpu = json_object(), *arr = json_array();
	for (int i = 0; i < nt; i++)
		json_array_append_new(arr, json_pack("{s:i, s:f}", "threads", tc[i], "adam_params_per_s", rate[i]));
	json_object_set_new(cpu, "adam", arr);
	json_object_set_new(cpu, "adam_params", json_integer(params));
	json_object_set_new(cpu, "triad_GBps", json_real(tb.GBps));
	json_object_set_new(cpu, "task_latency_s", json_real(task_lat));
	json_object_set_new(m, "cpu", cpu);
	if (!cpu_only) {
		json_t *gj = json_object();
		json_object_set_new(gj, "device", json_string(g.device));
		const char *kinds[2] = { "pinned", "pageable" };
		for (int k = 0; k < 2; k++) {
			const zb_calib_copy *rows2 = k ? g.pageable : g.pinned;
			int nr = k ? g.npageable : g.npinned;
			json_t *a = json_array();
			for (int i = 0; i < nr; i++)
				json_array_append_new(a, json_pack("{s:f, s:f, s:f, s:f, s:f}", "bytes", rows2[i].bytes, "h2d_s",
								   rows2[i].h2d_s, "d2h_s", rows2[i].d2h_s, "both_h2d_s",
								   rows2[i].both_h2d_s, "both_d2h_s", rows2[i].both_d2h_s));
			json_object_set_new(gj, kinds[k], a);
		}
		json_t *dv = json_array();
		for (int i = 0; i < g.ndev; i++)
			json_array_append_new(dv, json_pack("{s:f, s:f}", "bytes", g.dev_bytes[i], "time_s", g.dev_s[i]));
		json_object_set_new(gj, "device_copy", dv);
		json_t *gm = json_array();
		for (int i = 0; i < plan.ngemm; i++) {
			const zb_calib_gemm *x = &plan.gemm[i];
			json_array_append_new(gm, json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f}", "transa", x->transa,
							    "transb", x->transb, "m", x->m, "n", x->n, "k", x->k, "batch",
							    x->batch, "flops", x->flops, "weight", x->weight, "time_s",
							    x->time_s));
		}
		json_object_set_new(gj, "gemm", gm);
		json_object_set_new(gj, "gpu_adam", json_pack("{s:I, s:f}", "params", (json_int_t)g.gpu_adam_params,
							       "params_per_s", g.gpu_adam_params_per_s));
		json_object_set_new(gj, "together",
				    json_pack("{s:i, s:f, s:f, s:f, s:f}", "threads", threads, "alone_adam_params_per_s",
					      g.alone_adam_params_per_s, "alone_copy_Bps", g.alone_copy_Bps,
					      "together_adam_params_per_s", g.together_adam_params_per_s, "together_copy_Bps",
					      g.together_copy_Bps));
		json_object_set_new(gj, "seconds", json_real(g.seconds));
		json_object_set_new(m, "gpu", gj);
	}
	json_object_set_new(m, "fits", fits);
	json_object_set_new(m, "notes", notes);
	json_object_set_new(m, "quick", json_boolean(quick));
	json_object_set_new(m, "seconds", json_real(zb_wall_s() - t_start));
	char *mtext = json_dumps(m, JSON_COMPACT | JSON_REAL_PRECISION(17));

	/* ---- database ---- */
	FILE *pf = fopen(out_path, "r");
	char *hw_text = NULL;
	if (pf) {
		fseek(pf, 0, SEEK_END);
		long len = ftell(pf);
		fseek(pf, 0, SEEK_SET);
		hw_text = zb_xcalloc((size_t)len + 1, 1);
		if (fread(hw_text, 1, (size_t)len, pf) != (size_t)len)
			hw_text[0] = 0;
		fclose(pf);
	}
	zb_session s;
	int64_t profile_id = 0;
	if (zb_session_open(&s, &o, "calibrate", cpu_only ? NULL : g.device, argc, argv, &err) ||
	    (s.store && zb_hw_profile_add(s.store, s.run_id, hw.name, out_path, hw_text ? hw_text : "{}", mtext,
					  &profile_id, &err)) ||
	    zb_session_commit(&s, "ok", &err)) {
		zb_session_abort(&s);
		free(hw_text);
		free(mtext);
		json_decref(m);
		return zb_report_error(&err);
	}
	free(hw_text);

	if (json) {
		json_t *root = json_object();
		json_object_set_new(root, "profile", json_string(out_path));
		json_t *p = json_object();
		for (int i = 0; i < nrows; i++)
			json_object_set_new(p, rows[i].name,
					    json_pack("{s:o, s:o, s:o, s:s}", "base", num(rows[i].base), "calibrated",
						      num(rows[i].now), "rms_rel_err", num(rows[i].rms), "from", rows[i].from));
		json_object_set_new(root, "parameters", p);
		json_object_set_new(root, "measurements", m);
		zb_json_print(stdout, root);
		json_decref(root);
	} else {
		printf("# zbench %s%s%s calibrate: %s%s, %d CPU threads, base %s%s\n", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "",
		       ZB_GIT_COMMIT, cpu_only ? "CPU only" : "device ", cpu_only ? "" : g.device, threads, base.name,
		       quick ? ", quick (small sizes: not for real use)" : "");
		printf("%-26s %-9s %12s %12s %8s  %s\n", "parameter", "unit", "base", "calibrated", "fit rms", "from");
		printf("%-26s %-9s %12s %12s %8s  %s\n", "", "", "", "", "%", "");
		for (int i = 0; i < nrows; i++) {
			char rms[16] = "-";
			if (isfinite(rows[i].rms))
				snprintf(rms, sizeof rms, "%.1f", 100 * rows[i].rms);
			printf("%-26s %-9s %12.4g %12.4g %8s  %s\n", rows[i].name, rows[i].unit, rows[i].base * rows[i].scale,
			       rows[i].now * rows[i].scale, rms, rows[i].from);
		}
		for (size_t i = 0; i < json_array_size(notes); i++)
			printf("# note: %s\n", json_string_value(json_array_get(notes, i)));
		printf("# wrote %s (zbench predict --hw %s); %.0f s", out_path, out_path, zb_wall_s() - t_start);
		if (s.run_id)
			printf("; stored as run %lld (table hw_profiles)", (long long)s.run_id);
		printf("\n");
		json_decref(m);
	}
	free(mtext);
	return 0;
}
