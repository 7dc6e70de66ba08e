/* suite.c - the built-in configuration suites and their runner; see suite.h. */
#include "validate/suite.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/stats.h"
#include "config/resolve.h"
#include "exec/executor.h"
#include "sim/engine.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"
#include "validate/suite_file.h"

/* The tables give a built-in entry's fields in order and leave out the last one
 * (user: a suite file's configuration, NULL here); the suites leave out from_file. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* model, policy, ratio, threads, micro-batch, seq, gas, ckpt, offload-param, pageable, group */
static const zb_suite_entry full[] = {
	/* speedup group 1: gpt2-medium (0.36B), 8 threads */
	{ "gpt2-medium", "offload", 1, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "overlap", 1, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "dpu", 1, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "dpu", 0.5, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "overlap", 0.25, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "none", 0, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	/* speedup group 2: gpt2-xl (1.56B), 16 threads */
	{ "gpt2-xl", "offload", 1, 16, 4, 1024, 1, NULL, 0, 0, 2, NULL, 0, 0, 0 },
	{ "gpt2-xl", "overlap", 1, 16, 4, 1024, 1, NULL, 0, 0, 2, NULL, 0, 0, 0 },
	{ "gpt2-xl", "dpu", 1, 16, 4, 1024, 1, NULL, 0, 0, 2, NULL, 0, 0, 0 },
	{ "gpt2-xl", "dpu", 0.75, 16, 4, 1024, 1, NULL, 0, 0, 2, NULL, 0, 0, 0 },
	{ "gpt2-xl", "dpu", 0.5, 16, 4, 1024, 1, NULL, 0, 0, 2, NULL, 0, 0, 0 },
	{ "gpt2-xl", "dpu", 0.25, 16, 4, 1024, 1, NULL, 0, 0, 2, NULL, 0, 0, 0 },
	{ "gpt2-xl", "dpu", 0, 16, 4, 1024, 1, NULL, 0, 0, 2, NULL, 0, 0, 0 },
	{ "gpt2-xl", "overlap", 0.5, 16, 4, 1024, 1, NULL, 0, 0, 2, NULL, 0, 0, 0 },
	{ "gpt2-xl", "none", 0, 16, 4, 1024, 1, NULL, 0, 0, 2, NULL, 0, 0, 0 },
	/* speedup group 3: gpt-2.5b (2.6B), seq 2048, the e2e benchmark's shape */
	{ "gpt-2.5b", "offload", 1, 16, 4, 2048, 1, NULL, 0, 0, 3, NULL, 0, 0, 0 },
	{ "gpt-2.5b", "dpu", 1, 16, 4, 2048, 1, NULL, 0, 0, 3, NULL, 0, 0, 0 },
	{ "gpt-2.5b", "dpu", 0.25, 16, 4, 2048, 1, NULL, 0, 0, 3, NULL, 0, 0, 0 },
	{ "gpt-2.5b", "dpu", 0.125, 16, 4, 2048, 1, NULL, 0, 0, 3, NULL, 0, 0, 0 },
	{ "gpt-2.5b", "none", 0, 16, 4, 2048, 1, NULL, 0, 0, 3, NULL, 0, 0, 0 },
	/* CPU threads 2 .. 16: gpt2-large (0.77B), full offload, the CPU flow decides */
	{ "gpt2-large", "dpu", 1, 2, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 4, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 8, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 16, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	/* micro-batch and gradient accumulation */
	{ "gpt2-large", "overlap", 0.5, 16, 1, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "overlap", 0.5, 16, 2, 1024, 2, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "overlap", 0.5, 16, 8, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 0.5, 16, 2, 1024, 4, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	/* checkpointing, parameter offload, pageable copies */
	{ "gpt2-large", "overlap", 1, 16, 4, 1024, 1, NULL, 1, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-xl", "dpu", 0.5, 16, 4, 1024, 1, "gpu", 0, 0, 0, NULL, 0, 0, 0 },
	{ "opt-1.3b", "dpu", 0.5, 12, 2, 2048, 1, "cpu", 0, 0, 0, NULL, 0, 0, 0 },
	{ "opt-1.3b", "offload", 1, 12, 2, 2048, 2, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-medium", "offload", 1, 8, 4, 1024, 1, NULL, 0, 1, 0, NULL, 0, 0, 0 },
	/* llama-6b (5.9B): Twin-Flow ratios that keep the pinned host state small */
	{ "llama-6b", "dpu", 0.25, 16, 2, 2048, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "llama-6b", "overlap", 0.3, 16, 2, 2048, 2, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "llama-6b", "none", 0, 16, 1, 2048, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
};

/* model, policy, ratio, threads, micro-batch, seq, gas, ckpt, offload-param, pageable, group,
 * attention, link GB/s, layers, kv heads */
#define LQ "llama2-7b" /* with 4 layers and 8 KV heads: a 1.1B grouped-query shape */
static const zb_suite_entry fid[] = {
	/* gpt2-medium, 8 threads: native link, gen3 and gen4 rates */
	{ "gpt2-medium", "offload", 1, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "overlap", 1, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "dpu", 1, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "dpu", 0.5, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "overlap", 0.25, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "none", 0, 8, 8, 1024, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "offload", 1, 8, 8, 1024, 1, NULL, 0, 0, 2, NULL, 12, 0, 0 },
	{ "gpt2-medium", "dpu", 1, 8, 8, 1024, 1, NULL, 0, 0, 2, NULL, 12, 0, 0 },
	{ "gpt2-medium", "dpu", 0.5, 8, 8, 1024, 1, NULL, 0, 0, 2, NULL, 12, 0, 0 },
	{ "gpt2-medium", "overlap", 0.25, 8, 8, 1024, 1, NULL, 0, 0, 2, NULL, 12, 0, 0 },
	{ "gpt2-medium", "offload", 1, 8, 8, 1024, 1, NULL, 0, 0, 3, NULL, 25, 0, 0 },
	{ "gpt2-medium", "dpu", 1, 8, 8, 1024, 1, NULL, 0, 0, 3, NULL, 25, 0, 0 },
	{ "gpt2-medium", "dpu", 0.5, 8, 8, 1024, 1, NULL, 0, 0, 3, NULL, 25, 0, 0 },
	{ "gpt2-medium", "overlap", 0.25, 8, 8, 1024, 1, NULL, 0, 0, 3, NULL, 25, 0, 0 },
	/* gpt2-large, 16 threads: native, gen3, gen4 */
	{ "gpt2-large", "offload", 1, 16, 4, 1024, 1, NULL, 0, 0, 4, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 16, 4, 1024, 1, NULL, 0, 0, 4, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 0.5, 16, 4, 1024, 1, NULL, 0, 0, 4, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 0.25, 16, 4, 1024, 1, NULL, 0, 0, 4, NULL, 0, 0, 0 },
	{ "gpt2-large", "none", 0, 16, 4, 1024, 1, NULL, 0, 0, 4, NULL, 0, 0, 0 },
	{ "gpt2-large", "offload", 1, 16, 4, 1024, 1, NULL, 0, 0, 5, NULL, 12, 0, 0 },
	{ "gpt2-large", "dpu", 1, 16, 4, 1024, 1, NULL, 0, 0, 5, NULL, 12, 0, 0 },
	{ "gpt2-large", "dpu", 0.5, 16, 4, 1024, 1, NULL, 0, 0, 5, NULL, 12, 0, 0 },
	{ "gpt2-large", "offload", 1, 16, 4, 1024, 1, NULL, 0, 0, 6, NULL, 25, 0, 0 },
	{ "gpt2-large", "dpu", 1, 16, 4, 1024, 1, NULL, 0, 0, 6, NULL, 25, 0, 0 },
	{ "gpt2-large", "dpu", 0.5, 16, 4, 1024, 1, NULL, 0, 0, 6, NULL, 25, 0, 0 },
	/* fewer cores: the CPU flow decides */
	{ "gpt2-large", "dpu", 1, 2, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 4, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 8, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-medium", "dpu", 1, 4, 8, 1024, 1, NULL, 0, 0, 0, NULL, 25, 0, 0 },
	/* pageable copies, checkpointing, parameter offload, micro-batch and accumulation */
	{ "gpt2-medium", "offload", 1, 8, 4, 1024, 1, NULL, 0, 1, 0, NULL, 0, 0, 0 },
	{ "gpt2-medium", "dpu", 1, 8, 8, 1024, 1, NULL, 0, 1, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 0.5, 16, 4, 1024, 1, "gpu", 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-medium", "dpu", 0.5, 8, 8, 1024, 1, "cpu", 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-medium", "overlap", 1, 8, 8, 1024, 1, NULL, 1, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-medium", "overlap", 0.5, 8, 2, 1024, 2, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "overlap", 0.5, 16, 1, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	/* grouped-query attention (Llama shape), eager and flash */
	{ LQ, "offload", 1, 16, 2, 1024, 1, NULL, 0, 0, 7, NULL, 0, 4, 8 },
	{ LQ, "dpu", 0.5, 16, 2, 1024, 1, NULL, 0, 0, 7, NULL, 0, 4, 8 },
	{ LQ, "none", 0, 16, 2, 1024, 1, NULL, 0, 0, 7, NULL, 0, 4, 8 },
	{ LQ, "none", 0, 16, 2, 1024, 1, NULL, 0, 0, 0, "flash", 0, 4, 8 },
	/* flash attention */
	{ "gpt2-medium", "none", 0, 8, 8, 1024, 1, NULL, 0, 0, 0, "flash", 0, 0, 0 },
	{ "gpt2-medium", "dpu", 0.5, 8, 8, 1024, 1, NULL, 0, 0, 0, "flash", 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 16, 4, 1024, 1, NULL, 0, 0, 0, "flash", 0, 0, 0 },
	{ "gpt2-large", "dpu", 0.5, 16, 4, 1024, 1, NULL, 0, 0, 0, "flash", 12, 0, 0 },
};
#undef LQ

/* "Faster link, slower step" on one host, both sides of each comparison
 * measured there: dpu ratio 1 (the CPU flow decides, copies overlap Adam) at the
 * native link and at 25 and 12 GB/s (gen4, gen3), on half the host's cores and on all
 * of them (threads ZB_SUITE_HALF_CORES and 0), so the suite fits the 16-core single
 * H200 machine and the 32-core 2x H200 one alike (scripts/suites/link.suite). */
#define H ZB_SUITE_HALF_CORES
static const zb_suite_entry linkrate[] = {
	{ "gpt-2.5b", "dpu", 1, H, 4, 2048, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt-2.5b", "dpu", 1, H, 4, 2048, 1, NULL, 0, 0, 0, NULL, 25, 0, 0 },
	{ "gpt-2.5b", "dpu", 1, 0, 4, 2048, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt-2.5b", "dpu", 1, 0, 4, 2048, 1, NULL, 0, 0, 0, NULL, 25, 0, 0 },
	{ "gpt2-large", "dpu", 1, H, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, H, 4, 1024, 1, NULL, 0, 0, 0, NULL, 25, 0, 0 },
	{ "gpt2-large", "dpu", 1, H, 4, 1024, 1, NULL, 0, 0, 0, NULL, 12, 0, 0 },
	{ "gpt2-large", "dpu", 1, 0, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 0, 4, 1024, 1, NULL, 0, 0, 0, NULL, 25, 0, 0 },
	{ "gpt2-large", "dpu", 1, 0, 4, 1024, 1, NULL, 0, 0, 0, NULL, 12, 0, 0 },
};

/* This host's CPU against the profile's (analysis/kfit_host.h): gpt2-large with the
 * whole optimizer on the CPU on 2, 4, half and all the cores, where the CPU flow decides
 * the step; the thread counts tell CPU Adam's per-core rate from its memory ceiling. Then
 * zbench calibrate --from-db <db> --base <profile> --fit-host moves a profile fitted on
 * another machine (or another host behind the same GPU) here: 1.95-2.34 % MAPE on another
 * host's fid suite against 6.6-7.0 % unmoved (BENCHMARKS.md). */
static const zb_suite_entry anchor[] = {
	{ "gpt2-large", "dpu", 1, 2, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 4, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, H, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	{ "gpt2-large", "dpu", 1, 0, 4, 1024, 1, NULL, 0, 0, 0, NULL, 0, 0, 0 },
	/* pageable copies beside Adam: their rates and DRAM queue differ between hosts by
	 * themselves (H2D beside 8 Adam threads 3.8-6.4 GB/s over six fid suites) */
	{ "gpt2-medium", "dpu", 1, 8, 8, 1024, 1, NULL, 0, 1, 0, NULL, 0, 0, 0 },
};
#undef H

static const zb_suite_entry quick[] = {
	{ "gpt2-medium", "offload", 1, 8, 2, 512, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "dpu", 0.5, 8, 2, 512, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-medium", "none", 0, 8, 2, 512, 1, NULL, 0, 0, 1, NULL, 0, 0, 0 },
	{ "gpt2-large", "overlap", 0.25, 4, 2, 512, 2, NULL, 0, 0, 0, NULL, 0, 0, 0 },
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const zb_suite suites[] = {
	{ "full", "36 configurations: every policy, ratios 0..1, 2..16 threads, 0.36B..5.9B parameters", full, COUNT(full), { 0 } },
	{ "quick", "4 small configurations (seq 512), seconds on the GPU", quick, COUNT(quick), { 0 } },
	{ "fid", "44 configurations in one GPU command: native, gen3 and gen4 link rates, 2..16 threads, pageable, "
		 "checkpointing, parameter offload, GQA, flash and eager; two rounds (forward, then backward) of "
		 "4 warm-up steps and half of at least 8 and about 3 s of measured steps each, then 120 s of "
		 "extra rounds for the least sure", fid, COUNT(fid),
	  /* 384 s on the H200 machine; 8-step means of the alternating configurations were
	   * uncertain by up to 7 %, these by a median 0.6 %, but the host drifted by more
	   * between configurations (CPU Adam alone 100.9 / 98.3 / 93.5 ms a step in three
	   * groups of one run): two rounds, the second backward. The rounds of a configuration
	   * on every core or with pageable copies differ by up to 20-27 % on some hosts, the
	   * others by a median 2-2.5 %: the extra rounds go there */
	  { .warmup = 4, .steps = 8, .measure_s = 3, .max_steps = 48, .rounds = 2, .extra_s = 120 } },
	{ "link", "10 configurations: dpu ratio 1 at the native link, 25 and 12 GB/s, half and all the cores "
		  "(faster link, slower step?)", linkrate, COUNT(linkrate), { 0 } },
	{ "anchor", "5 configurations (gpt2-large dpu 1 on 2, 4, half and all the cores; gpt2-medium dpu 1 with "
		    "pageable copies) to move a profile to this host: calibrate --from-db --fit-host; fid's "
		    "measurement, two rounds, then 40 s of extra rounds for the least sure",
	  /* on a disturbed host the anchor's second round was 6-18 % slower than its first on
	   * every configuration (a neighbour on the host), the DRAM scale came out x 0.88, and
	   * the fid suite's 16-thread configurations, measured at the first round's pace, 13-22 %
	   * too slow: more rounds where the two disagree most */
	  anchor, COUNT(anchor), { .warmup = 4, .steps = 8, .measure_s = 3, .max_steps = 48, .rounds = 2, .extra_s = 40 } },
};
#pragma GCC diagnostic pop

zb_status zb_suite_find(const char *name, const zb_suite **out, zb_error *err)
{
	for (int i = 0; i < COUNT(suites); i++)
		if (!strcmp(name, suites[i].name)) {
			*out = &suites[i];
			return ZB_OK;
		}
	return zb_fail(err, ZB_E_INPUT, "unknown suite '%s' (known: full, quick, fid, link, anchor)", name);
}

zb_status zb_suite_open(const char *name, const zb_suite **out, zb_error *err)
{
	if (zb_suite_find(name, out, NULL) == ZB_OK)
		return ZB_OK;
	if (access(name, F_OK) != 0)
		return zb_fail(err, ZB_E_INPUT,
			       "unknown suite '%s' (known: full, quick, fid, link, anchor, or a suite file: no file '%s')",
			       name, name);
	zb_suite *s;
	zb_status st = zb_suite_file_load(name, &s, err);
	if (!st)
		*out = s;
	return st;
}

void zb_suite_close(const zb_suite *s)
{
	if (s && s->from_file)
		zb_suite_file_free((zb_suite *)s);
}

void zb_suite_key(const zb_suite_entry *e, char *buf, size_t n)
{
	if (e->user) {
		snprintf(buf, n, "%s", zb_suite_user_key(e->user));
		return;
	}
	char t[16];
	if (e->threads == ZB_SUITE_HALF_CORES)
		snprintf(t, sizeof t, "half");
	else
		snprintf(t, sizeof t, "%d", e->threads);
	int w = snprintf(buf, n, "%s/%s/r%g/t%s/mb%d/s%d/gas%d%s%s%s%s", e->model, e->policy, e->ratio, t,
			 e->micro_batch, e->seq, e->gas, e->ckpt ? "/ckpt-" : "", e->ckpt ? e->ckpt : "",
			 e->offload_param ? "/op" : "", e->pageable ? "/pg" : "");
	if (w < 0 || (size_t)w >= n)
		return;
	if (e->layers || e->kv_heads) /* suite fid's overrides, only when set: keys of the others unchanged */
		w += snprintf(buf + w, n - (size_t)w, "/L%d/kv%d", e->layers, e->kv_heads);
	if ((size_t)w < n && e->attention)
		w += snprintf(buf + w, n - (size_t)w, "/%s", e->attention);
	if ((size_t)w < n && e->link_gbps > 0)
		snprintf(buf + w, n - (size_t)w, "/link%g", e->link_gbps);
}

int zb_suite_is_reference(const zb_suite_entry *e)
{
	return e->group && !strcmp(e->policy, "offload") && e->ratio == 1;
}

zb_status zb_suite_config(const zb_suite_entry *e, const char *hw, int warmup, int steps, zb_config *out,
			  zb_error *err)
{
	if (e->user)
		return zb_suite_user_config(e->user, hw, warmup, steps, out, err);
	char ratio[32], threads[16], mb[16], seq[16], gas[16], nsteps[16], layers[16], kv[16], link[32];
	snprintf(ratio, sizeof ratio, "%.10g", e->ratio);
	snprintf(threads, sizeof threads, "%d", e->threads == ZB_SUITE_HALF_CORES ? 0 : e->threads);
	snprintf(mb, sizeof mb, "%d", e->micro_batch);
	snprintf(seq, sizeof seq, "%d", e->seq);
	snprintf(gas, sizeof gas, "%d", e->gas);
	snprintf(nsteps, sizeof nsteps, "%d", warmup + steps);
	zb_config_inputs in = { .offload_param = e->offload_param, .pageable = e->pageable };
	const char **v = in.value;
	int llama6 = !strcmp(e->model, "llama-6b");
	v[ZB_AX_HW] = hw;
	v[ZB_AX_MODEL] = llama6 ? "llama2-7b" : e->model;
	if (llama6)
		v[ZB_AX_LAYERS] = "28"; /* 5.9B: llama2-7b's layers, 28 of them */
	v[ZB_AX_POLICY] = e->policy;
	v[ZB_AX_RATIO] = ratio;
	v[ZB_AX_THREADS] = e->threads > 0 ? threads : NULL; /* unset: every core */
	v[ZB_AX_MICRO_BATCH] = mb;
	v[ZB_AX_SEQ] = seq;
	v[ZB_AX_GAS] = gas;
	v[ZB_AX_CKPT] = e->ckpt;
	v[ZB_AX_STEPS] = nsteps;
	if (e->layers) {
		snprintf(layers, sizeof layers, "%d", e->layers);
		v[ZB_AX_LAYERS] = layers;
	}
	if (e->kv_heads) {
		snprintf(kv, sizeof kv, "%d", e->kv_heads);
		v[ZB_AX_KV_HEADS] = kv;
	}
	if (e->link_gbps > 0) {
		snprintf(link, sizeof link, "%.10g", e->link_gbps);
		v[ZB_AX_LINK_RATE] = link;
	}
	v[ZB_AX_ATTENTION] = e->attention;
	zb_status st = zb_config_resolve(&in, out, NULL, err);
	if (!st && e->threads == ZB_SUITE_HALF_CORES) { /* half of what the host's preset has */
		int half = out->hw.cpu.cores / 2 > 0 ? out->hw.cpu.cores / 2 : 1;
		snprintf(threads, sizeof threads, "%d", half);
		v[ZB_AX_THREADS] = threads;
		st = zb_config_resolve(&in, out, NULL, err);
	}
	if (!st && llama6)
		snprintf(out->model.name, sizeof out->model.name, "llama-6b");
	return st;
}

/* Setup rates, estimates for the H200 machine (to be replaced by what validate
 * prints as measured): cudaMallocHost pins ~4 GB/s; the executor's host
 * initialisation writes master/m/v/grad of each CPU-updated parameter on one
 * thread (~2.5 ns each); device fills run at ~1 TB/s; streams, one CUDA event
 * pair per GPU task, the cuBLASLt handle and plans, the thread pool ~1 s; the
 * store writes ~0.8 M rows/s and a task costs ~4 rows (task, dependencies, two
 * events). */
#define EST_FIXED_S 0.2 /* the fid suite (2 rounds, pinned pool): wall = estimate - 1.0 s at 1.0 */
#define EST_PIN_BPS 4e9
#define EST_HOST_INIT_S_PER_PARAM 2.5e-9
#define EST_DEVICE_FILL_BPS 1e12
#define EST_STORE_ROWS_PER_S 0.8e6

double zb_suite_estimate_s(const zb_config *c, const zb_prediction *p)
{
	if (!p->simulated)
		return 0;
	double host_params = (double)p->graph.cpu_params;
	double t = EST_FIXED_S + p->mem.host_bytes / EST_PIN_BPS + host_params * EST_HOST_INIT_S_PER_PARAM +
		   p->mem.gpu_bytes / EST_DEVICE_FILL_BPS + 4.0 * p->graph.ntasks / EST_STORE_ROWS_PER_S;
	return t + p->res.total_s;
}

int zb_suite_least_sure(const double *se_pct, const int *nround, const double *est_s, int n, double min_pct,
			int max_rounds, double left_s)
{
	int best = -1;
	for (int i = 0; i < n; i++)
		if (nround[i] >= 2 && nround[i] < max_rounds && est_s[i] <= left_s && se_pct[i] >= min_pct &&
		    (best < 0 || se_pct[i] > se_pct[best])) /* NaN fails every comparison */
			best = i;
	return best;
}

double zb_suite_pin_s(const zb_prediction *p)
{
	return p->simulated ? p->mem.host_bytes / EST_PIN_BPS : 0;
}

zb_status zb_suite_run(const zb_config *c, const zb_suite_run_opts *o, zb_suite_outcome *out, zb_error *err)
{
	memset(out, 0, sizeof *out);
	out->meas_step_s = out->meas_se_s = NAN;
	for (int r = 0; r < ZB_RES_COUNT; r++)
		out->meas_busy_s[r] = NAN;
	double t0 = zb_wall_s();
	zb_prediction p;
	zb_status st = zb_predict(&p, c, err);
	if (st)
		return st;
	out->fits = p.mem.fits && p.simulated;
	snprintf(out->reason, sizeof out->reason, "%s", p.mem.fits ? "" : p.mem.reason);
	out->tokens_per_step = p.graph.tokens_per_step;
	if (out->fits) {
		out->pred_step_s = zb_step_time_window(&p.graph, p.res.end, o->warmup);
		zb_graph sub = p.graph;
		zb_busy_window(&sub, p.res.start, p.res.end, o->warmup, out->pred_busy_s);
	}
	zb_exec_result r;
	int have_r = 0;
	if (out->fits && o->execute) {
		zb_exec_options eo = { .quiet = 1, .seed = 1234, .stop = o->stop };
		if ((st = zb_execute(&p.graph, c, &eo, &r, err))) {
			if (st == ZB_E_NOFIT || st == ZB_E_NOMEM) {
				/* the executor's own memory check: report, do not fail the suite */
				out->fits = 0;
				snprintf(out->reason, sizeof out->reason, "%.255s", err->msg);
				st = ZB_OK;
			}
		} else {
			have_r = 1;
			out->executed = r.steps_done > o->warmup;
			snprintf(out->device, sizeof out->device, "%s", r.device);
			if (out->executed) {
				zb_graph sub = p.graph;
				sub.steps = r.steps_done;
				out->meas_step_s = zb_step_time_window(&sub, r.end, o->warmup);
				out->meas_se_s = zb_step_spread(r.step_s, r.steps_done, o->warmup).se;
				zb_busy_window(&sub, r.start, r.end, o->warmup, out->meas_busy_s);
			}
		}
	}
	out->wall_s = zb_wall_s() - t0;
	if (!st && o->store) {
		char *json = zb_config_to_json(c);
		st = zb_store_add_config(o->store, o->run_id, c, json, &out->config_id, err);
		free(json);
		if (!st)
			st = zb_store_add_prediction(o->store, out->config_id, &p.graph, p.simulated ? &p.res : NULL, &p.mem,
						     err);
		if (!st && o->timeline && p.simulated) {
			st = zb_store_add_tasks(o->store, out->config_id, &p.graph, err);
			if (!st)
				st = zb_store_add_events(o->store, out->config_id, "predicted", &p.graph, p.res.start,
							 p.res.end, err);
			if (!st && have_r)
				st = zb_store_add_events(o->store, out->config_id, "measured", &p.graph, r.start, r.end,
							 err);
			if (!st && have_r)
				st = zb_store_add_steps(o->store, out->config_id, "measured", r.steps_done, r.step_s, err);
		}
	}
	if (have_r)
		zb_exec_result_free(&r);
	zb_prediction_free(&p);
	return st;
}
