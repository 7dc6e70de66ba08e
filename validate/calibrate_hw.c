/*
 * calibrate_hw.c - zbench calibrate (calibrate_hw.h): measure this machine and fit the
 * simulator's hardware model to it (analysis/fit.h), writing a hardware profile (a --hw JSON file,
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
#include "validate/calibrate_hw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/calibrate.h"
#include "common/outfile.h"
#include "common/clock.h"
#include "common/stats.h"
#include "common/version.h"
#include "report/report.h"
#include "validate/suite.h"
#include "exec/cpu_adam.h"
#include "exec/cpu_adam_bench.h"
#include "exec/executor.h"
#include "exec/nccl_bench.h"
#include "exec/threadpool.h"
#include "results/records.h"
#include "analysis/compare.h"
#include "analysis/fit.h"
#include "core/graph.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

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


/* Everything one calibration measures, fits and reports. */
struct zb_calibration {
	/* options (zb_calibrate_opts) */
	const char *out_path, *name, *base_name, *models;
	int quick, cpu_only, threads, mb, seq;
	/* inputs */
	zb_hw base, hw;
	zb_calib_plan plan;
	/* measurements */
	int64_t params;
	int reps, nt, tc[16];
	double rate[16], task_lat, t_start;
	zb_triad_bench tb;
	zb_calib_gpu g;
	zb_nccl_fabric fab;            /* 2 GPUs or more */
	int have_fab;
	/* fits */
	param_row rows[MAX_ROWS];
	int nrows;
	json_t *fits, *notes;
	char note[600];
};

typedef zb_calibration calib;

static void add_row(calib *k, const char *name, const char *unit, double scale, double base, double now, double rms,
		    const char *from)
{
	if (k->nrows < MAX_ROWS)
		k->rows[k->nrows++] = (param_row){ name, unit, scale, base, now, rms, from };
}

/* ---- plan ---------------------------------------------------------------------------- */

/* The base hardware, the GEMM shapes, and the checks before minutes of measuring. */
static zb_status plan(calib *k, zb_error *err)
{
	zb_status st;
	if (k->base_name && (strchr(k->base_name, '/') || strstr(k->base_name, ".json")))
		st = zb_hw_load(k->base_name, &k->base, err);
	else if (k->base_name)
		st = zb_preset_hw(k->base_name, &k->base, err);
	else
		zb_preset_default_hw(&k->base), st = ZB_OK;
	if (st)
		return st;
	k->plan.quick = k->quick;
	if (!k->cpu_only && (st = plan_gemms(k->models, k->mb, k->seq, &k->plan, err)))
		return st;
	if (!k->cpu_only && !zb_exec_available(err)) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		return zb_fail(err, err->status, "%s (zbench calibrate --cpu-only measures the CPU alone)", msg);
	}
	/* the output must be writable before minutes of measuring */
	zb_error pe;
	if (zb_outfile_probe(k->out_path, &pe))
		return zb_fail(err, ZB_E_INPUT, "cannot write the profile next to %s (%s)", k->out_path, pe.msg);
	if (k->threads <= 0) {
		long nc = sysconf(_SC_NPROCESSORS_ONLN);
		k->threads = nc > 0 ? (int)nc : 1;
	}
	return ZB_OK;
}

/* ---- measure ------------------------------------------------------------------------- */

/* CPU Adam over 1, 2, 4, ... threads, the triad, the pool's dispatch cost. */
static zb_status measure_cpu(calib *k, FILE *log, zb_error *err)
{
	zb_status st;
	k->params = k->quick ? (8LL << 20) : ZB_BENCH_ADAM_PARAMS;
	k->reps = k->quick ? 3 : ZB_BENCH_REPEATS;
	k->nt = 0;
	for (int t = 1; k->nt < 16; t *= 2) {
		int n = k->nt;
		k->tc[n] = t < k->threads ? t : k->threads;
		zb_cpu_adam_bench ab;
		if ((st = zb_bench_cpu_adam(k->params, k->tc[n], k->reps, &ab, err)))
			return st;
		k->rate[n] = ab.gparams_per_s * 1e9;
		fprintf(log, "  cpu adam %2d threads: %.3f Gparam/s (%s, %lld M params)\n", k->tc[n], ab.gparams_per_s,
			zb_adam_isa_name(ab.isa), (long long)(k->params >> 20));
		if (k->tc[k->nt++] == k->threads)
			break;
	}
	if ((st = zb_bench_triad(k->params, k->threads, k->reps, &k->tb, err)))
		return st;
	if ((st = task_latency(k->threads, k->quick ? 50 : 500, &k->task_lat, err)))
		return st;
	fprintf(log, "  triad %d threads: %.1f GB/s (12 B/element); pool dispatch %.1f us\n", k->threads, k->tb.GBps,
		k->task_lat * 1e6);
	return ZB_OK;
}

static zb_status measure_gpu(calib *k, FILE *log, zb_error *err)
{
	memset(&k->g, 0, sizeof k->g);
	if (k->cpu_only)
		return ZB_OK;
	k->plan.threads = k->threads;
	k->plan.adam_params = k->params;
	zb_status st = zb_calibrate_gpu(&k->plan, &k->g, log, err);
	k->have_fab = 0;
	if (st || zb_nccl_gpus() < 2)
		return st;
	zb_error ferr = { 0 }; /* without NCCL the fabric keeps the base value, with a note */
	k->have_fab = zb_nccl_calibrate(k->quick, &k->fab, log, &ferr) == ZB_OK;
	if (!k->have_fab) {
		snprintf(k->note, sizeof k->note, "fabric not measured: %s", ferr.msg);
		fprintf(log, "  %s\n", k->note);
	}
	return ZB_OK;
}

/* The fabric between this machine's GPUs: the ring model fitted to NCCL's times. */
static void fit_fabric(calib *k)
{
	if (!k->have_fab) {
		if (k->note[0] && !strncmp(k->note, "fabric", 6))
			json_array_append_new(k->notes, json_string(k->note));
		return;
	}
	const zb_nccl_fabric *f = &k->fab;
	k->hw.fabric.intra_bus_Bps = f->bus_Bps;
	k->hw.fabric.intra_latency_s = f->latency_s;
	add_row(k, "fabric.intra_bus_Bps", "GB/s", 1e-9, k->base.fabric.intra_bus_Bps, f->bus_Bps, f->rms_rel,
		"NCCL rs+ag");
	add_row(k, "fabric.intra_latency_s", "us", 1e6, k->base.fabric.intra_latency_s, f->latency_s, f->rms_rel,
		"NCCL rs+ag");
	json_t *pts = json_array();
	for (int i = 0; i < f->npoints; i++)
		json_array_append_new(pts, json_pack("{s:s, s:f, s:f, s:f}", "op", zb_op_name(f->points[i].op), "bytes",
						     f->points[i].bytes, "time_s", f->points[i].time_s, "busbw_Bps",
						     f->points[i].busbw_Bps));
	json_object_set_new(k->fits, "fabric", json_pack("{s:i, s:f, s:f, s:f, s:o}", "gpus", f->ranks, "bus_Bps",
							 f->bus_Bps, "latency_s", f->latency_s, "rms_rel", f->rms_rel,
							 "points", pts));
}

/* ---- fit ----------------------------------------------------------------------------- */

/* Pinned copies: latency, bandwidth each way, duplex; pageable bandwidth. */
static void fit_link(calib *k)
{
	double b[ZB_CALIB_MAX_SIZES], h[ZB_CALIB_MAX_SIZES], d[ZB_CALIB_MAX_SIZES], bh[ZB_CALIB_MAX_SIZES],
		bd[ZB_CALIB_MAX_SIZES];
	for (int i = 0; i < k->g.npinned; i++)
		b[i] = k->g.pinned[i].bytes, h[i] = k->g.pinned[i].h2d_s, d[i] = k->g.pinned[i].d2h_s,
		bh[i] = k->g.pinned[i].both_h2d_s, bd[i] = k->g.pinned[i].both_d2h_s;
	zb_copy_fit fh, fd, fbh, fbd;
	zb_error fe = { 0 };
	if (!zb_fit_copy(b, h, k->g.npinned, &fh, &fe) && !zb_fit_copy(b, d, k->g.npinned, &fd, &fe)) {
		double lat = (fh.latency_s + fd.latency_s) / 2;
		zb_fit_copy_bw(b, h, k->g.npinned, lat, &fh, NULL);
		zb_fit_copy_bw(b, d, k->g.npinned, lat, &fd, NULL);
		k->hw.link.copy_latency_s = lat;
		k->hw.link.h2d_Bps = fh.Bps;
		k->hw.link.d2h_Bps = fd.Bps;
		add_row(k, "link.copy_latency_s", "us", 1e6, k->base.link.copy_latency_s, lat, NAN,
			"pinned copies 4 KB..1 GB, intercept");
		add_row(k, "link.h2d_Bps", "GB/s", 1e-9, k->base.link.h2d_Bps, fh.Bps, fh.rms_rel_err,
			"pinned H2D alone");
		add_row(k, "link.d2h_Bps", "GB/s", 1e-9, k->base.link.d2h_Bps, fd.Bps, fd.rms_rel_err,
			"pinned D2H alone");
		json_object_set_new(k->fits, "pinned_h2d", json_pack("{s:f, s:f, s:f, s:f}", "latency_s", lat, "Bps", fh.Bps,
								   "rms_rel_err", fh.rms_rel_err, "max_rel_err",
								   fh.max_rel_err));
		json_object_set_new(k->fits, "pinned_d2h", json_pack("{s:f, s:f, s:f, s:f}", "latency_s", lat, "Bps", fd.Bps,
								   "rms_rel_err", fd.rms_rel_err, "max_rel_err",
								   fd.max_rel_err));
		if (!zb_fit_copy_bw(b, bh, k->g.npinned, lat, &fbh, &fe) && !zb_fit_copy_bw(b, bd, k->g.npinned, lat, &fbd, &fe)) {
			k->hw.link.duplex_h2d = zb_fit_duplex(fh.Bps, fbh.Bps);
			k->hw.link.duplex_d2h = zb_fit_duplex(fd.Bps, fbd.Bps);
			add_row(k, "link.duplex_h2d", "", 1, k->base.link.duplex_h2d, k->hw.link.duplex_h2d,
				fbh.rms_rel_err, "both at once / alone");
			add_row(k, "link.duplex_d2h", "", 1, k->base.link.duplex_d2h, k->hw.link.duplex_d2h,
				fbd.rms_rel_err, "both at once / alone");
			json_object_set_new(k->fits, "duplex", json_pack("{s:f, s:f, s:f, s:f}", "both_h2d_Bps", fbh.Bps,
								       "both_d2h_Bps", fbd.Bps, "duplex_h2d",
								       k->hw.link.duplex_h2d, "duplex_d2h", k->hw.link.duplex_d2h));
		} else {
			snprintf(k->note, sizeof k->note, "duplex not fitted: %s", fe.msg);
			json_array_append_new(k->notes, json_string(k->note));
		}
		/* pageable: latency kept from the pinned fit (the model has one) */
		for (int i = 0; i < k->g.npageable; i++)
			b[i] = k->g.pageable[i].bytes, h[i] = k->g.pageable[i].h2d_s, d[i] = k->g.pageable[i].d2h_s;
		zb_copy_fit ph, pd;
		if (!zb_fit_copy_bw(b, h, k->g.npageable, lat, &ph, &fe) && !zb_fit_copy_bw(b, d, k->g.npageable, lat, &pd, &fe)) {
			k->hw.link.pageable_h2d_Bps = ph.Bps;
			k->hw.link.pageable_d2h_Bps = pd.Bps;
			add_row(k, "link.pageable_h2d_Bps", "GB/s", 1e-9, k->base.link.pageable_h2d_Bps, ph.Bps,
				ph.rms_rel_err, "pageable H2D 64 KB..1 GB");
			add_row(k, "link.pageable_d2h_Bps", "GB/s", 1e-9, k->base.link.pageable_d2h_Bps, pd.Bps,
				pd.rms_rel_err, "pageable D2H 64 KB..1 GB");
			json_object_set_new(k->fits, "pageable", json_pack("{s:f, s:f, s:f, s:f}", "h2d_Bps", ph.Bps, "d2h_Bps",
									 pd.Bps, "h2d_rms_rel_err", ph.rms_rel_err,
									 "d2h_rms_rel_err", pd.rms_rel_err));
		} else {
			snprintf(k->note, sizeof k->note, "pageable bandwidth not fitted: %s", fe.msg);
			json_array_append_new(k->notes, json_string(k->note));
		}
		snprintf(k->hw.link.name, sizeof k->hw.link.name, "%.50s-cal", k->base.link.name);
	} else {
		snprintf(k->note, sizeof k->note, "link not fitted: %s", fe.msg);
		json_array_append_new(k->notes, json_string(k->note));
	}
}

/* Device memory (the copy kernel): kernel latency and HBM bandwidth. */
static void fit_device_memory(calib *k)
{
	zb_error fe = { 0 };
	zb_copy_fit fm;
	if (!zb_fit_copy(k->g.dev_bytes, k->g.dev_s, k->g.ndev, &fm, &fe)) {
		k->hw.gpu.kernel_latency_s = fm.latency_s;
		k->hw.gpu.hbm_Bps = fm.Bps;
		add_row(k, "gpu.kernel_latency_s", "us", 1e6, k->base.gpu.kernel_latency_s, fm.latency_s, NAN,
			"device copy kernel, intercept");
		add_row(k, "gpu.hbm_Bps", "GB/s", 1e-9, k->base.gpu.hbm_Bps, fm.Bps, fm.rms_rel_err,
			"device copy kernel, read + write");
		json_object_set_new(k->fits, "hbm", json_pack("{s:f, s:f, s:f, s:f}", "latency_s", fm.latency_s, "Bps",
							    fm.Bps, "rms_rel_err", fm.rms_rel_err, "max_rel_err",
							    fm.max_rel_err));
	} else {
		snprintf(k->note, sizeof k->note, "device memory not fitted: %s", fe.msg);
		json_array_append_new(k->notes, json_string(k->note));
	}
}

/* GEMMs: achievable peak and the efficiency curve's half dimension. */
static void fit_gemm(calib *k)
{
	zb_error fe = { 0 };
	zb_gemm_sample gs[ZB_CALIB_MAX_GEMMS];
	for (int i = 0; i < k->plan.ngemm; i++)
		gs[i] = (zb_gemm_sample){ k->plan.gemm[i].m, k->plan.gemm[i].n, k->plan.gemm[i].k, k->plan.gemm[i].batch,
					  k->plan.gemm[i].flops, k->plan.gemm[i].time_s, k->plan.gemm[i].weight };
	zb_gemm_fit gf;
	if (!zb_fit_gemm(gs, k->plan.ngemm, k->hw.gpu.kernel_latency_s, 4096, &gf, &fe)) {
		double ratio = k->base.gpu.bf16_flops > 0 ? k->base.gpu.fp16_flops / k->base.gpu.bf16_flops : 1;
		k->hw.gpu.bf16_flops = gf.peak_flops;
		k->hw.gpu.fp16_flops = gf.peak_flops * ratio;
		k->hw.gpu.gemm_half_dim = gf.half_dim;
		add_row(k, "gpu.bf16_flops", "TFLOP/s", 1e-12, k->base.gpu.bf16_flops, gf.peak_flops,
			gf.rms_rel_err, "model GEMM shapes, weighted");
		add_row(k, "gpu.fp16_flops", "TFLOP/s", 1e-12, k->base.gpu.fp16_flops, k->hw.gpu.fp16_flops, NAN,
			"bf16 x the base's fp16/bf16 ratio");
		add_row(k, "gpu.gemm_half_dim", "", 1, k->base.gpu.gemm_half_dim, gf.half_dim, gf.rms_rel_err,
			"same fit");
		json_object_set_new(k->fits, "gemm", json_pack("{s:f, s:f, s:f, s:f}", "peak_flops", gf.peak_flops,
							     "half_dim", gf.half_dim, "rms_rel_err", gf.rms_rel_err,
							     "max_rel_err", gf.max_rel_err));
	} else {
		snprintf(k->note, sizeof k->note, "GEMM efficiency not fitted: %s", fe.msg);
		json_array_append_new(k->notes, json_string(k->note));
	}
}

static zb_status fit_cpu(calib *k, zb_error *err)
{
	zb_cpu_samples cs = { k->nt, k->tc, k->rate, k->g.together_adam_params_per_s, k->g.together_copy_Bps,
			      k->tb.GBps * 1e9 };
	zb_cpu_fit cf;
	zb_status st = zb_fit_cpu(&cs, &cf, err);
	if (st)
		return st;
	zb_hw *hw = &k->hw;
	const zb_hw *base = &k->base;
	hw->cpu.cores = cf.cores;
	hw->cpu.adam_params_per_core = cf.adam_params_per_core;
	hw->cpu.adam_Bps = cf.adam_Bps;
	hw->cpu.dram_Bps = cf.dram_Bps;
	hw->cpu.task_latency_s = k->task_lat;
	double mt = mem_total();
	if (mt > 0)
		hw->cpu.mem_bytes = mt;
	snprintf(hw->cpu.name, sizeof hw->cpu.name, "%.50s-cal", base->cpu.name);
	add_row(k, "cpu.cores", "", 1, base->cpu.cores, cf.cores, NAN, "threads measured (top)");
	add_row(k, "cpu.adam_params_per_core", "Gparam/s", 1e-9, base->cpu.adam_params_per_core,
		cf.adam_params_per_core, cf.rms_rel_err, "best Adam rate per thread (rms over thread counts)");
	add_row(k, "cpu.adam_Bps", "GB/s", 1e-9, base->cpu.adam_Bps, cf.adam_Bps, NAN, "fastest Adam rate x 28 B");
	add_row(k, "cpu.dram_Bps", "GB/s", 1e-9, base->cpu.dram_Bps, cf.dram_Bps, NAN, cf.dram_source);
	add_row(k, "cpu.task_latency_s", "us", 1e6, base->cpu.task_latency_s, k->task_lat, NAN, "pool dispatch median");
	add_row(k, "cpu.mem_bytes", "GiB", 1.0 / (1 << 30), base->cpu.mem_bytes, hw->cpu.mem_bytes, NAN, "MemTotal");
	json_object_set_new(k->fits, "cpu", json_pack("{s:i, s:f, s:f, s:s, s:f, s:f}", "cores", cf.cores,
						      "adam_params_per_core", cf.adam_params_per_core, "adam_Bps",
						      cf.adam_Bps, "dram_Bps", cf.dram_Bps, "dram_source", cf.dram_source,
						      "rms_rel_err", cf.rms_rel_err, "max_rel_err", cf.max_rel_err));
	if (cf.max_rel_err > 0.1) {
		snprintf(k->note, sizeof k->note,
			 "the CPU model is linear in threads under the DRAM cap: off by up to %.0f%% at fewer threads than %d",
			 100 * cf.max_rel_err, cf.cores);
		json_array_append_new(k->notes, json_string(k->note));
	}
	return ZB_OK;
}

/* Every fit, starting from the base; anything not measured keeps the base value. */
static zb_status fit(calib *k, zb_error *err)
{
	k->hw = k->base;
	snprintf(k->hw.name, sizeof k->hw.name, "%s", k->name ? k->name : "calibrated");
	k->nrows = 0;
	k->fits = json_object();
	k->notes = json_array();
	if (!k->cpu_only) {
		fit_link(k);
		fit_device_memory(k);
		fit_gemm(k);
		k->hw.gpu.mem_bytes = k->g.mem_bytes;
		add_row(k, "gpu.mem_bytes", "GiB", 1.0 / (1 << 30), k->base.gpu.mem_bytes, k->g.mem_bytes, NAN,
			k->g.device);
		snprintf(k->hw.gpu.name, sizeof k->hw.gpu.name, "%.50s-cal", k->base.gpu.name);
		fit_fabric(k);
	}
	zb_status st = fit_cpu(k, err);
	if (st)
		return st;
	if (!k->cpu_only && k->hw.gpu.hbm_Bps > 0) {
		double adam_Bps = k->g.gpu_adam_params_per_s * ZB_ADAM_BYTES_PER_PARAM;
		if (fabs(adam_Bps / k->hw.gpu.hbm_Bps - 1) > 0.05) {
			snprintf(k->note, sizeof k->note,
				 "GPU Adam moves %.0f GB/s at 28 B/param, %+.0f%% from the copy kernel's %.0f GB/s the model uses",
				 adam_Bps / 1e9, 100 * (adam_Bps / k->hw.gpu.hbm_Bps - 1), k->hw.gpu.hbm_Bps / 1e9);
			json_array_append_new(k->notes, json_string(k->note));
		}
	}
	return ZB_OK;
}

/* ---- store and report ------------------------------------------------------------------ */

/* The GPU measurements: copies, the device copy kernel, GEMMs, GPU Adam, CPU Adam
 * and copies together. */
static json_t *gpu_measurements_json(const calib *k)
{
	json_t *gj = json_object();
	json_object_set_new(gj, "device", json_string(k->g.device));
	const char *kinds[2] = { "pinned", "pageable" };
	for (int kd = 0; kd < 2; kd++) {
		const zb_calib_copy *rows2 = kd ? k->g.pageable : k->g.pinned;
		int nr = kd ? k->g.npageable : k->g.npinned;
		json_t *a = json_array();
		for (int i = 0; i < nr; i++)
			json_array_append_new(a, json_pack("{s:f, s:f, s:f, s:f, s:f}", "bytes", rows2[i].bytes, "h2d_s",
							   rows2[i].h2d_s, "d2h_s", rows2[i].d2h_s, "both_h2d_s",
							   rows2[i].both_h2d_s, "both_d2h_s", rows2[i].both_d2h_s));
		json_object_set_new(gj, kinds[kd], a);
	}
	json_t *dv = json_array();
	for (int i = 0; i < k->g.ndev; i++)
		json_array_append_new(dv, json_pack("{s:f, s:f}", "bytes", k->g.dev_bytes[i], "time_s", k->g.dev_s[i]));
	json_object_set_new(gj, "device_copy", dv);
	json_t *gm = json_array();
	for (int i = 0; i < k->plan.ngemm; i++) {
		const zb_calib_gemm *x = &k->plan.gemm[i];
		json_array_append_new(gm, json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f}", "transa", x->transa,
						    "transb", x->transb, "m", x->m, "n", x->n, "k", x->k, "batch",
						    x->batch, "flops", x->flops, "weight", x->weight, "time_s",
						    x->time_s));
	}
	json_object_set_new(gj, "gemm", gm);
	json_object_set_new(gj, "gpu_adam", json_pack("{s:I, s:f}", "params", (json_int_t)k->g.gpu_adam_params,
						       "params_per_s", k->g.gpu_adam_params_per_s));
	json_object_set_new(gj, "together",
			    json_pack("{s:i, s:f, s:f, s:f, s:f}", "threads", k->threads, "alone_adam_params_per_s",
				      k->g.alone_adam_params_per_s, "alone_copy_Bps", k->g.alone_copy_Bps,
				      "together_adam_params_per_s", k->g.together_adam_params_per_s, "together_copy_Bps",
				      k->g.together_copy_Bps));
	json_object_set_new(gj, "seconds", json_real(k->g.seconds));
	return gj;
}

/* Every measurement behind the fits, for the hw_profiles row; takes the fits and notes. */
static json_t *measurements_json(calib *k)
{
	json_t *m = json_object(), *cpu = json_object(), *arr = json_array();
	for (int i = 0; i < k->nt; i++)
		json_array_append_new(arr, json_pack("{s:i, s:f}", "threads", k->tc[i], "adam_params_per_s", k->rate[i]));
	json_object_set_new(cpu, "adam", arr);
	json_object_set_new(cpu, "adam_params", json_integer(k->params));
	json_object_set_new(cpu, "triad_GBps", json_real(k->tb.GBps));
	json_object_set_new(cpu, "task_latency_s", json_real(k->task_lat));
	json_object_set_new(m, "cpu", cpu);
	if (!k->cpu_only)
		json_object_set_new(m, "gpu", gpu_measurements_json(k));
	json_object_set_new(m, "fits", k->fits);
	json_object_set_new(m, "notes", k->notes);
	json_object_set_new(m, "quick", json_boolean(k->quick));
	json_object_set_new(m, "seconds", json_real(zb_wall_s() - k->t_start));
	return m;
}

static char *slurp(const char *path)
{
	FILE *pf = fopen(path, "r");
	char *text = NULL;
	if (pf) {
		fseek(pf, 0, SEEK_END);
		long len = ftell(pf);
		fseek(pf, 0, SEEK_SET);
		text = zb_xcalloc((size_t)len + 1, 1);
		if (fread(text, 1, (size_t)len, pf) != (size_t)len)
			text[0] = 0;
		fclose(pf);
	}
	return text;
}

zb_status zb_calibration_store(const zb_calibration *k, zb_store *s, int64_t run_id, const char *mtext, zb_error *err)
{
	char *hw_text = slurp(k->out_path);
	int64_t profile_id = 0;
	zb_status st = zb_hw_profile_add(s, run_id, k->hw.name, k->out_path, hw_text ? hw_text : "{}", mtext,
					 &profile_id, err);
	free(hw_text);
	return st;
}

json_t *zb_calibration_json(const zb_calibration *k, json_t *m)
{
	json_t *root = json_object();
	json_object_set_new(root, "profile", json_string(k->out_path));
	json_t *p = json_object();
	for (int i = 0; i < k->nrows; i++)
		json_object_set_new(p, k->rows[i].name,
				    json_pack("{s:o, s:o, s:o, s:s}", "base", num(k->rows[i].base), "calibrated",
					      num(k->rows[i].now), "rms_rel_err", num(k->rows[i].rms), "from", k->rows[i].from));
	json_object_set_new(root, "parameters", p);
	json_object_set_new(root, "measurements", m);
	return root;
}

void zb_calibration_text(const zb_calibration *k, int64_t run_id, FILE *out)
{
	fprintf(out, "# zbench %s%s%s calibrate: %s%s, %d CPU threads, base %s%s\n", ZB_VERSION, ZB_GIT_COMMIT[0] ? " " : "",
	       ZB_GIT_COMMIT, k->cpu_only ? "CPU only" : "device ", k->cpu_only ? "" : k->g.device, k->threads,
	       k->base.name, k->quick ? ", quick (small sizes: not for real use)" : "");
	fprintf(out, "%-26s %-9s %12s %12s %8s  %s\n", "parameter", "unit", "base", "calibrated", "fit rms", "from");
	fprintf(out, "%-26s %-9s %12s %12s %8s  %s\n", "", "", "", "", "%", "");
	for (int i = 0; i < k->nrows; i++) {
		const param_row *r = &k->rows[i];
		char rms[16] = "-";
		if (isfinite(r->rms))
			snprintf(rms, sizeof rms, "%.1f", 100 * r->rms);
		fprintf(out, "%-26s %-9s %12.4g %12.4g %8s  %s\n", r->name, r->unit, r->base * r->scale, r->now * r->scale,
		       rms, r->from);
	}
	for (size_t i = 0; i < json_array_size(k->notes); i++)
		fprintf(out, "# note: %s\n", json_string_value(json_array_get(k->notes, i)));
	fprintf(out, "# wrote %s (zbench predict --hw %s); %.0f s", k->out_path, k->out_path, zb_wall_s() - k->t_start);
	if (run_id)
		fprintf(out, "; stored as run %lld (table hw_profiles)", (long long)run_id);
	fprintf(out, "\n");
}

/* ---- the calibration (calibrate_hw.h) -------------------------------------------------- */

zb_status zb_calibration_run(const zb_calibrate_opts *o, FILE *log, zb_calibration **out, zb_error *err)
{
	calib *k = zb_xcalloc(1, sizeof *k);
	*out = NULL;
	k->out_path = o->out_path;
	k->name = o->name;
	k->base_name = o->base_name;
	k->models = o->models;
	k->quick = o->quick;
	k->cpu_only = o->cpu_only;
	k->threads = o->threads;
	k->mb = o->mb;
	k->seq = o->seq;
	zb_status st = plan(k, err);
	if (st) {
		free(k);
		return st;
	}
	k->t_start = zb_wall_s();
	fprintf(log, "# zbench calibrate: %d CPU threads%s, base %s%s\n", k->threads, k->cpu_only ? " (CPU only)" : "",
		k->base.name, k->quick ? ", quick (small sizes: not for real use)" : "");
	if ((st = measure_cpu(k, log, err)) || (st = measure_gpu(k, log, err))) {
		free(k);
		return st;
	}
	if ((st = fit(k, err)) || (st = zb_hw_validate(&k->hw, err)) || (st = zb_hw_save(k->out_path, &k->hw, err))) {
		zb_calibration_free(k);
		return st;
	}
	*out = k;
	return ZB_OK;
}

json_t *zb_calibration_measurements(zb_calibration *k)
{
	json_incref(k->notes); /* the text report reads them after the document is freed */
	json_t *m = measurements_json(k);
	k->fits = NULL; /* the document's now */
	return m;
}

const char *zb_calibration_device(const zb_calibration *k)
{
	return k->cpu_only ? NULL : k->g.device;
}

void zb_calibration_free(zb_calibration *k)
{
	if (!k)
		return;
	json_decref(k->fits);
	json_decref(k->notes);
	free(k);
}
