/* execprofile.c - the executor profile's defaults, checks and JSON; see execprofile.h. */
#include "core/execprofile.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/graph.h"

_Static_assert((int)ZB_OP_COUNT <= (int)ZB_EXEC_KOPS, "ZB_EXEC_KOPS must cover every op");

const char *zb_gemm_group_name(int g)
{
	static const char *n[] = { "dense", "batched", "unaligned", "flash" };
	return g >= 0 && g < ZB_GEMM_GROUPS ? n[g] : "?";
}

const char *zb_exec_pass_name(int p)
{
	static const char *n[] = { "fwd", "bwd_data", "bwd_weight" };
	return p >= 0 && p < ZB_EXEC_PASSES ? n[p] : "?";
}

/* The fit of the H200 machine's full validate suite (run of 2026-11-30 19:52, 30 measured
 * configurations, 114 676 GPU tasks, 988 CPU Adam tasks alone; `zbench calibrate --from-db`
 * over the h200-machine preset, 3 significant digits; hw/h200-machine-executor.json holds
 * the full fit): fractions of the GPU's own peaks, so other GPU presets take them as
 * estimates for zbench's kernels. Fused attention was not in that run: its factors are 1
 * (the GPU's flash efficiency alone). */
static const struct { zb_op op; double fwd, bwd; } kernel_fit[] = {
	{ ZB_OP_EMBED, 0.668, 0.845 },   { ZB_OP_NORM1, 0.986, 0.275 }, { ZB_OP_SOFTMAX, 0.577, 1.31 },
	{ ZB_OP_RESID, 1.41, 1.44 },     { ZB_OP_NORM2, 0.974, 0.266 }, { ZB_OP_ACT, 0.799, 0.872 },
	{ ZB_OP_NORMF, 1.01, 0.289 },    { ZB_OP_LOSS, 0.216, 1 },      { ZB_OP_GRAD_ACC, 1, 0.806 },
};
static const double gemm_fit[ZB_GEMM_GROUPS][ZB_EXEC_PASSES] = {
	[ZB_GEMM_DENSE] = { 0.932, 0.930, 0.927 },
	[ZB_GEMM_BATCHED] = { 0.873, 0.875, 1 },
	[ZB_GEMM_UNALIGNED] = { 0.118, 0.166, 0.174 },
	[ZB_GEMM_FLASH] = { 1, 1, 1 },
};
static zb_exec_profile fit_h200, neutral;
static pthread_once_t fit_once = PTHREAD_ONCE_INIT;

static void fill_neutral(zb_exec_profile *p)
{
	memset(p, 0, sizeof *p);
	for (int g = 0; g < ZB_GEMM_GROUPS; g++)
		for (int s = 0; s < ZB_EXEC_PASSES; s++)
			p->gemm[g][s] = 1;
	for (int o = 0; o < ZB_EXEC_KOPS; o++)
		p->kernel[o][0] = p->kernel[o][1] = 1;
	p->gpu_adam = 1;
}

static void fill_profiles(void)
{
	fill_neutral(&neutral);
	zb_exec_profile *p = &fit_h200;
	fill_neutral(p);
	p->set = 2;
	memcpy(p->gemm, gemm_fit, sizeof p->gemm);
	for (size_t i = 0; i < sizeof kernel_fit / sizeof kernel_fit[0]; i++) {
		p->kernel[kernel_fit[i].op][0] = kernel_fit[i].fwd;
		p->kernel[kernel_fit[i].op][1] = kernel_fit[i].bwd;
	}
	p->gemm_half_dim = 49.2;
	p->gpu_adam = 0.958;
	p->launch_s = 6.66e-6;
	p->adam_thread = 1.11; /* x cpu.adam_params_per_core: 0.79 Gparam/s a thread on the h200-machine CPU */
	p->adam_mem = 1.61;    /* x cpu.adam_Bps / 28: 7.1 Gparam/s; 16 threads 4.5 alone */
	p->adam_task_s = 2.88e-5;
	p->starved = 0.70;
	p->shared_gpu = 0.708; /* compute while GPU Adam runs: 1.4x its alone time */
	p->shared_opt = 0.529; /* GPU Adam while compute runs: 2136 against 3956 GB/s alone */
	/* host DRAM as a queue (kernels.h zb_exec_dram), `calibrate --from-db` on the same
	 * run: H2D copies under Adam on 2 / 4 / 8 / 16 threads 53 / 52 / 46 / 37 GB/s against
	 * 54.6 alone, D2H 53-55 either way (BENCHMARKS.md, issue 12) */
	p->h2d_queue = 0.16;
	/* CPU Adam beside copies (kernels.h zb_exec_dram, execprofile.h adam_copy): fid run C's fit,
	 * 0.627 at its 133 GB/s budget, at this budget's 140 (run B: 0.724 at 124; BENCHMARKS.md) */
	p->adam_copy = 0.66;
	/* --link-rate: GEMMs beside one / two paced copies x1.03-1.05 / x1.07-1.10 (the pacer's
	 * spin kernels hold SMs); `calibrate --from-db` on the fid runs v4, A, B: 0.947, 0.944,
	 * 0.941 (BENCHMARKS.md, issue 12) */
	p->paced_gpu = 0.944;
	/* 2 H200s, gpt2-large none, 50 MB buckets (execprofile.h): the ring's work (96 us of
	 * its 111) took 145 us beside compute, 295 beside GPU Adam */
	p->comm_gpu = 0.66;
	p->comm_opt = 0.33;
	p->comm_wait = 1;
}

void zb_exec_profile_h200(zb_exec_profile *p)
{
	pthread_once(&fit_once, fill_profiles);
	*p = fit_h200;
}

void zb_exec_profile_neutral(zb_exec_profile *p)
{
	pthread_once(&fit_once, fill_profiles);
	*p = neutral;
}

const zb_exec_profile *zb_exec_profile_of(const zb_exec_profile *maybe, zb_exec_profile *scratch)
{
	(void)scratch;
	if (maybe && maybe->set)
		return maybe;
	pthread_once(&fit_once, fill_profiles);
	return &neutral;
}

static int factor_ok(double x) { return isfinite(x) && x >= 0 && x <= 10; }

zb_status zb_exec_profile_validate(const zb_exec_profile *p, zb_error *err)
{
	for (int g = 0; g < ZB_GEMM_GROUPS; g++)
		for (int s = 0; s < ZB_EXEC_PASSES; s++)
			if (!factor_ok(p->gemm[g][s]))
				return zb_fail(err, ZB_E_INPUT, "executor.gemm.%s_%s %g out of range [0, 10]",
					       zb_gemm_group_name(g), zb_exec_pass_name(s), p->gemm[g][s]);
	for (int o = 0; o < ZB_OP_COUNT; o++)
		for (int d = 0; d < 2; d++)
			if (!factor_ok(p->kernel[o][d]))
				return zb_fail(err, ZB_E_INPUT, "executor.kernel.%s_%s %g out of range [0, 10]",
					       zb_op_name((zb_op)o), d ? "bwd" : "fwd", p->kernel[o][d]);
	const struct { const char *k; double v, hi; } one[] = {
		{ "gemm_half_dim", p->gemm_half_dim, 1e5 }, { "gpu_adam", p->gpu_adam, 10 },
		{ "launch_s", p->launch_s, 1 },           { "adam_thread", p->adam_thread, 10 },
		{ "adam_mem", p->adam_mem, 10 },          { "adam_task_s", p->adam_task_s, 1 },
		{ "starved", p->starved, 1 },           { "paced_h2d", p->paced_h2d, 2 },
		{ "paced_d2h", p->paced_d2h, 2 },
		{ "paced_gpu", p->paced_gpu, 1 },       { "shared_gpu", p->shared_gpu, 1 },
		{ "shared_opt", p->shared_opt, 1 },     { "h2d_queue", p->h2d_queue, 10 },
		{ "comm_gpu", p->comm_gpu, 1 },         { "comm_opt", p->comm_opt, 1 },
		{ "comm_wait", p->comm_wait, 1 },       { "adam_copy", p->adam_copy, 10 },
		{ "starved_s", p->starved_s, 1 },         { "adam_launch", p->adam_launch, 0.5 },
		{ "adam_gap_s", p->adam_gap_s, 1e-3 },  { "pageable_queue", p->pageable_queue, 10 },
	};
	for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
		if (!isfinite(one[i].v) || one[i].v < 0 || one[i].v > one[i].hi)
			return zb_fail(err, ZB_E_INPUT, "executor.%s %g out of range [0, %g]", one[i].k, one[i].v,
				       one[i].hi);
	return ZB_OK;
}

/* A "<a>_<b>" key of a table into its slot; NULL when unknown. */
static double *gemm_slot(zb_exec_profile *p, const char *key)
{
	char buf[64];
	for (int g = 0; g < ZB_GEMM_GROUPS; g++)
		for (int s = 0; s < ZB_EXEC_PASSES; s++) {
			snprintf(buf, sizeof buf, "%s_%s", zb_gemm_group_name(g), zb_exec_pass_name(s));
			if (!strcmp(buf, key))
				return &p->gemm[g][s];
		}
	return NULL;
}

static double *kernel_slot(zb_exec_profile *p, const char *key)
{
	char buf[64];
	for (int o = 0; o < ZB_OP_COUNT; o++)
		for (int d = 0; d < 2; d++) {
			snprintf(buf, sizeof buf, "%s_%s", zb_op_name((zb_op)o), d ? "bwd" : "fwd");
			if (!strcmp(buf, key))
				return &p->kernel[o][d];
		}
	return NULL;
}

static zb_status read_table(const json_t *o, const char *path, const char *name, zb_exec_profile *p,
			    double *(*slot)(zb_exec_profile *, const char *), zb_error *err)
{
	if (!json_is_object(o))
		return zb_fail(err, ZB_E_INPUT, "%s: key 'executor.%s' must be an object", path, name);
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)o, key, v) {
		double *d = slot(p, key);
		if (!d)
			return zb_fail(err, ZB_E_INPUT, "%s: unknown key 'executor.%s.%s'", path, name, key);
		if (!json_is_number(v))
			return zb_fail(err, ZB_E_INPUT, "%s: key 'executor.%s.%s' must be a number", path, name, key);
		*d = json_number_value(v);
	}
	return ZB_OK;
}

static double *scalar_slot(zb_exec_profile *p, const char *key)
{
	if (!strcmp(key, "gemm_half_dim")) return &p->gemm_half_dim;
	if (!strcmp(key, "gpu_adam")) return &p->gpu_adam;
	if (!strcmp(key, "launch_s")) return &p->launch_s;
	if (!strcmp(key, "adam_thread")) return &p->adam_thread;
	if (!strcmp(key, "adam_mem")) return &p->adam_mem;
	if (!strcmp(key, "adam_task_s")) return &p->adam_task_s;
	if (!strcmp(key, "starved")) return &p->starved;
	if (!strcmp(key, "paced_h2d")) return &p->paced_h2d;
	if (!strcmp(key, "paced_d2h")) return &p->paced_d2h;
	if (!strcmp(key, "paced_gpu")) return &p->paced_gpu;
	if (!strcmp(key, "shared_gpu")) return &p->shared_gpu;
	if (!strcmp(key, "shared_opt")) return &p->shared_opt;
	if (!strcmp(key, "h2d_queue")) return &p->h2d_queue;
	if (!strcmp(key, "pageable_queue")) return &p->pageable_queue;
	if (!strcmp(key, "comm_gpu")) return &p->comm_gpu;
	if (!strcmp(key, "comm_opt")) return &p->comm_opt;
	if (!strcmp(key, "comm_wait")) return &p->comm_wait;
	if (!strcmp(key, "adam_copy")) return &p->adam_copy;
	if (!strcmp(key, "starved_s")) return &p->starved_s;
	if (!strcmp(key, "adam_launch")) return &p->adam_launch;
	if (!strcmp(key, "adam_gap_s")) return &p->adam_gap_s;
	return NULL;
}

zb_status zb_exec_profile_from_json(const void *obj, const char *path, zb_exec_profile *out, zb_error *err)
{
	const json_t *o = obj;
	zb_exec_profile p;
	if (json_is_string(o) && !strcmp(json_string_value(o), "h200")) { /* the h200 preset's */
		zb_exec_profile_h200(out);
		return ZB_OK;
	}
	zb_exec_profile_neutral(&p);
	p.set = 1;
	if (!json_is_object(o))
		return zb_fail(err, ZB_E_INPUT, "%s: key 'executor' must be an object or \"h200\"", path);
	const char *key;
	json_t *v;
	zb_status st;
	json_object_foreach((json_t *)o, key, v) {
		if (!strcmp(key, "gemm") || !strcmp(key, "kernel")) {
			if ((st = read_table(v, path, key, &p, key[0] == 'g' ? gemm_slot : kernel_slot, err)))
				return st;
			continue;
		}
		double *d = scalar_slot(&p, key);
		if (!d)
			return zb_fail(err, ZB_E_INPUT, "%s: unknown key 'executor.%s'", path, key);
		if (!json_is_number(v))
			return zb_fail(err, ZB_E_INPUT, "%s: key 'executor.%s' must be a number", path, key);
		*d = json_number_value(v);
	}
	zb_error e;
	if (zb_exec_profile_validate(&p, &e))
		return zb_fail(err, ZB_E_INPUT, "%s: %s", path, e.msg);
	*out = p;
	return ZB_OK;
}

void *zb_exec_profile_to_json(const zb_exec_profile *p)
{
	if (p->set == 2) /* a preset's: its name reads back the same */
		return json_string("h200");
	json_t *o = json_object(), *g = json_object(), *k = json_object();
	char buf[64];
	json_object_set_new(o, "gemm_half_dim", json_real(p->gemm_half_dim));
	for (int a = 0; a < ZB_GEMM_GROUPS; a++)
		for (int s = 0; s < ZB_EXEC_PASSES; s++) {
			snprintf(buf, sizeof buf, "%s_%s", zb_gemm_group_name(a), zb_exec_pass_name(s));
			json_object_set_new(g, buf, json_real(p->gemm[a][s]));
		}
	json_object_set_new(o, "gemm", g);
	for (int op = 0; op < ZB_OP_COUNT; op++)
		for (int d = 0; d < 2; d++)
			if (p->kernel[op][d] != 1) { /* only the fitted ones */
				snprintf(buf, sizeof buf, "%s_%s", zb_op_name((zb_op)op), d ? "bwd" : "fwd");
				json_object_set_new(k, buf, json_real(p->kernel[op][d]));
			}
	json_object_set_new(o, "kernel", k);
	json_object_set_new(o, "gpu_adam", json_real(p->gpu_adam));
	json_object_set_new(o, "launch_s", json_real(p->launch_s));
	json_object_set_new(o, "adam_thread", json_real(p->adam_thread));
	json_object_set_new(o, "adam_mem", json_real(p->adam_mem));
	json_object_set_new(o, "adam_task_s", json_real(p->adam_task_s));
	json_object_set_new(o, "starved", json_real(p->starved));
	json_object_set_new(o, "paced_h2d", json_real(p->paced_h2d));
	json_object_set_new(o, "paced_d2h", json_real(p->paced_d2h));
	if (p->paced_gpu > 0) /* files without the term stay as they were */
		json_object_set_new(o, "paced_gpu", json_real(p->paced_gpu));
	json_object_set_new(o, "shared_gpu", json_real(p->shared_gpu));
	json_object_set_new(o, "shared_opt", json_real(p->shared_opt));
	if (p->h2d_queue > 0) /* files of the proportional model stay as they were */
		json_object_set_new(o, "h2d_queue", json_real(p->h2d_queue));
	if (p->pageable_queue > 0) /* files without the term stay as they were */
		json_object_set_new(o, "pageable_queue", json_real(p->pageable_queue));
	if (p->adam_copy > 0) /* files without the term stay as they were */
		json_object_set_new(o, "adam_copy", json_real(p->adam_copy));
	json_object_set_new(o, "comm_gpu", json_real(p->comm_gpu));
	json_object_set_new(o, "comm_opt", json_real(p->comm_opt));
	if (p->comm_wait > 0) /* files without the rule stay as they were */
		json_object_set_new(o, "comm_wait", json_real(p->comm_wait));
	if (p->starved_s > 0) /* files of the rate form stay as they were */
		json_object_set_new(o, "starved_s", json_real(p->starved_s));
	if (p->adam_launch > 0) /* files without the term stay as they were */
		json_object_set_new(o, "adam_launch", json_real(p->adam_launch));
	if (p->adam_gap_s > 0) /* files without the term stay as they were */
		json_object_set_new(o, "adam_gap_s", json_real(p->adam_gap_s));
	return o;
}
