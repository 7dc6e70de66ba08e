/*
 * suite.h - the built-in suites of configurations `zbench validate`, `baseline
 * save` and `regress` run, and the one routine that runs a configuration through
 * the simulator and (when asked) the executor, storing what it made.
 *
 * Suites:
 *   full   36 configurations: every policy (none, offload, overlap, dpu), ratios 0
 *          to 1, 2 to 16 CPU threads, models from 0.36B (gpt2-medium) to 5.9B
 *          (llama-6b: llama2-7b's shape with 28 layers), micro-batch 1 to 8,
 *          gradient accumulation 1 to 4, activation checkpointing, parameter
 *          offload, pageable copies. Three speedup groups (gpt2-medium, gpt2-xl,
 *          gpt-2.5b) each hold plain offload (policy offload, ratio 1) and
 *          Twin-Flow ratios of the same shape, for the speedup check.
 *   fid    44 configurations that fit one GPU command (~6 min on the H200 machine with 1 warm-up
 *          + 2 measured steps): every policy and Twin-Flow ratios on gpt2-medium and
 *          gpt2-large, each speedup group on the native link and paced to gen3 (12 GB/s)
 *          and gen4 (25 GB/s) rates, 2..16 CPU threads, pageable copies, checkpointing on
 *          GPU and CPU, parameter offload, micro-batch 1..8 with accumulation, a
 *          grouped-query Llama shape (llama2-7b's blocks, 4 layers, 8 KV heads), and
 *          flash attention beside eager. Its predicted steps run from ~24 ms to ~600 ms
 *          and the fast ones are the noisy ones (per-step sd up to 20 % on the H200: 8
 *          steps leave the mean uncertain by ~7 %), so it is meant to be run with
 *          `validate --measure-s S`: each configuration gets about S seconds of measured
 *          steps (within --steps .. --max-steps) instead of one step count for all.
 *   quick  4 small configurations (gpt2-medium and gpt2-large, seq 512): seconds
 *          on the GPU, for smoke tests and regress.
 *   FILE   a suite file of the user's own configurations (suite_file.h).
 * Every configuration runs `warmup` + `steps` optimizer steps (default 2 + 3: the
 * engine's warm-up, and enough steady steps for a median-free pace); validate
 * --measure-s chooses `steps` per configuration from its predicted step.
 */
#ifndef ZB_SUITE_H
#define ZB_SUITE_H

#include <signal.h>
#include <stdint.h>

#include "common/error.h"
#include "common/stats.h"
#include "results/store.h"
#include "core/config.h"
#include "sim/predict.h"

/* A configuration of a suite file (suite_file.h): its flags, read and checked. */
typedef struct zb_suite_user zb_suite_user;

/* zb_suite_entry.threads: half of the cores of the host's preset (suite link) */
#define ZB_SUITE_HALF_CORES (-2)

typedef struct zb_suite_entry {
	const char *model;       /* preset name, or "llama-6b" */
	const char *policy;      /* none | offload | overlap | dpu */
	double ratio;
	int threads; /* 0: every core; ZB_SUITE_HALF_CORES: half of the host preset's */
	int micro_batch, seq, gas;
	const char *ckpt;        /* NULL: none */
	int offload_param;
	int pageable;
	int group;               /* speedup group (0: none); its offload ratio-1 member is the reference */
	/* suite fid; zero in the others */
	const char *attention;   /* NULL: eager; "flash" */
	double link_gbps;        /* --link-rate in GB/s (0: native) */
	int layers, kv_heads;    /* model overrides (0: the preset's) */
	/* a suite file's configuration: the fields above are unused but model and policy
	 * (the flags' values, "" when not given) */
	const zb_suite_user *user;
} zb_suite_entry;

/* How validate measures a suite when the command line does not say (0: validate's
 * defaults, 2 warm-up + 3 measured steps). */
typedef struct zb_suite_measure {
	int warmup, steps;   /* warm-up steps, measured steps (the least with measure_s) */
	double measure_s;    /* > 0: about that many seconds of measured steps each */
	int max_steps;       /* with measure_s: at most that many */
	int repeat;          /* the first that many executed configurations again at the end */
	int rounds;          /* > 1: every configuration measured in that many rounds, forward then
			      * backward (validate --rounds); the steps above are over all rounds */
	double extra_s;      /* with rounds: seconds of extra rounds for the least sure (validate --extra-s) */
} zb_suite_measure;

typedef struct zb_suite {
	const char *name;
	const char *description;
	const zb_suite_entry *entries;
	int n;
	zb_suite_measure measure;
	int from_file;       /* read from a suite file (suite_file.h): zb_suite_close frees it */
} zb_suite;

/* A built-in suite by name; ZB_E_INPUT naming the known ones. */
zb_status zb_suite_find(const char *name, const zb_suite **out, zb_error *err);

/* A built-in suite by name, else a suite file (suite_file.h) at that path: what
 * `--suite <name | file>` takes. ZB_E_INPUT naming the known suites when it is
 * neither; a suite file's own errors name its line. */
zb_status zb_suite_open(const char *name, const zb_suite **out, zb_error *err);
/* Free a suite zb_suite_open read from a file (a built-in one, or NULL: nothing). */
void zb_suite_close(const zb_suite *s);

/* The configuration of one entry on hardware `hw` (machine preset or JSON file,
 * NULL: the default machine) with warmup + steps steps. */
zb_status zb_suite_config(const zb_suite_entry *e, const char *hw, int warmup, int steps, zb_config *out,
			  zb_error *err);

/* A stable key ("gpt2-xl/dpu/r0.5/t16/mb4/s1024/gas1[/ckpt-gpu][/op][/pg]"; a suite
 * file's configuration: its name or flags): how baselines find the same
 * configuration again. */
void zb_suite_key(const zb_suite_entry *e, char *buf, size_t n);

/* Whether e is the reference (plain offload) of its group. */
int zb_suite_is_reference(const zb_suite_entry *e);

/* Estimated seconds the executor takes for c on the GPU machine: setup (pinning
 * host memory, first touch, CUDA handles) plus the predicted run plus storing its
 * timeline. An estimate from rates measured on the H200 machine (suite.c); the
 * measured wall time is printed beside it so it can be corrected. */
double zb_suite_estimate_s(const zb_config *c, const zb_prediction *p);

/* The part of that estimate which pins host memory (what a pool that kept the pinned
 * buffers of an earlier configuration saves, exec/host_pool.h). */
double zb_suite_pin_s(const zb_prediction *p);

/* validate --extra-s: which configuration gets the next extra round. Configuration i has
 * nround[i] rounds measured (< 2: not a candidate: no spread yet, or left out), its mean's
 * standard error se_pct[i] in % of it (NaN: not a candidate) and an extra round costs
 * est_s[i] seconds. The candidate with the largest se_pct of at least min_pct, fewer than
 * max_rounds rounds and est_s[i] <= left_s; -1 when none. Ties: the first. */
int zb_suite_least_sure(const double *se_pct, const int *nround, const double *est_s, int n, double min_pct,
			int max_rounds, double left_s);

typedef struct zb_suite_outcome {
	int fits;                /* memory model says it fits (else not simulated, not run) */
	char reason[256];
	int executed;            /* the executor ran it */
	double pred_step_s;      /* predicted, over the same steady window as the measurement */
	double meas_step_s;      /* NaN when not executed */
	double meas_se_s;        /* standard error of the mean measured step over the steady window
				  * (zb_step_spread); NaN when not executed or fewer than 2 steps */
	double pred_busy_s[ZB_RES_COUNT], meas_busy_s[ZB_RES_COUNT];
	double tokens_per_step;
	double wall_s;           /* the executor's wall time including setup, or the prediction's */
	int64_t config_id;       /* 0 without a store */
	char device[128];
} zb_suite_outcome;

/* What zb_suite_run stores (when store is not NULL), inside the caller's
 * transaction: the configuration and its prediction always; with timeline, the
 * tasks and predicted events too, and the measured events and step times of an
 * execution. */
typedef struct zb_suite_run_opts {
	int execute;             /* run on the GPU too */
	int warmup;              /* steps left out of the steady state */
	int timeline;
	zb_store *store;
	int64_t run_id;
	volatile sig_atomic_t *stop;
} zb_suite_run_opts;

/* Predict c and, with o->execute, execute it. A configuration that does not fit
 * is no error: out->fits = 0 with the reason. */
zb_status zb_suite_run(const zb_config *c, const zb_suite_run_opts *o, zb_suite_outcome *out, zb_error *err);

#endif
