/*
 * peers.h - measured runs of other training frameworks ("peers": DeepSpeed, plain
 * PyTorch) stored beside zbench's prediction of the same configuration.
 *
 * `zbench validate --deepspeed` predicts a configuration (a configs row and its
 * predictions row, as predict stores them), measures it with peers/ds_step.py or
 * imports an earlier measurement from a TSV, and stores the measurement here, in
 * the peer_runs table of schema version 4 (results/store.c), keyed by that
 * configuration:
 *
 *   framework      "deepspeed" or "torch"
 *   name           the configuration's name: "s2-off" (peers/configs/s2-off.json)
 *   source         "harness" (measured by this zbench) or "import" (a TSV)
 *   origin         the DeepSpeed config file run, or the TSV it came from
 *   note           free text: the TSV's description of the configuration
 *   step_ms        median step time after warm-up, milliseconds
 *   steps_ms       every step, warm-up included, as a JSON array of milliseconds
 *   warmup_steps   steps left out of the median
 *   fwd_ms, bwd_ms, opt_ms   median host wall time of the engine's forward,
 *                  backward and step calls in one step (NULL when not measured)
 *   gpu_peak_gib   torch.cuda.max_memory_allocated, GiB
 *   gpu_reserved_gib  torch.cuda.max_memory_reserved, GiB
 *   host_rss_gib   peak resident set of the process, GiB
 *   params         parameters of the model the harness built (0: unknown)
 *   device, versions, measured_at   the GPU, a JSON object of versions (python,
 *                  torch, cuda, deepspeed), the UTC time of the measurement
 *   result_json    the harness's whole JSON line (NULL for imports)
 * and, from schema version 9, of a Hugging Face model measured by the harness:
 *   model_type     the config.json's model_type ("llama", "qwen2", ...); NULL for the
 *                  harness's own modules and imports
 *   skipped_steps  steps DeepSpeed skipped on an fp16 overflow (NULL: not reported)
 *   ds_counts      DeepSpeed's per-step path counts and host seconds (peers/ds_counts.py),
 *                  a JSON object of numbers, e.g. {"fetch_fwd_calls": 640, "fetch_fwd_s":
 *                  0.41, ...}, the median step after warm-up; NULL when not counted
 *
 * The view peer_vs_predicted joins it with configs and predictions (measured and
 * predicted step time, relative error, GPU and host memory in GiB).
 */
#ifndef ZB_PEERS_H
#define ZB_PEERS_H

#include <stdint.h>

#include "common/error.h"
#include "results/store.h"

#define ZB_PEER_MAX_STEPS 256

typedef struct zb_peer_run {
	char framework[16];
	char name[64];
	char source[16];
	char origin[512];
	char note[256];
	double step_ms;
	int nsteps;
	double steps_ms[ZB_PEER_MAX_STEPS];
	int warmup_steps;                        /* -1: unknown */
	double fwd_ms, bwd_ms, opt_ms;           /* NAN: not measured */
	double gpu_peak_gib, gpu_reserved_gib, host_rss_gib; /* NAN: not measured */
	int64_t params;
	char device[128];
	char versions[512];                      /* JSON object text, "" when unknown */
	char measured_at[40];
	char model_type[32];                     /* "" when not a Hugging Face model */
	int skipped_steps;                       /* -1: not reported */
	char *result_json;                       /* malloc'd or NULL; zb_peer_run_clear frees */
} zb_peer_run;

/* An empty run: numbers NAN, warmup_steps and skipped_steps -1, strings "". */
void zb_peer_run_init(zb_peer_run *r);
void zb_peer_run_clear(zb_peer_run *r);

/* One of DeepSpeed's path counts of r ("fetch_fwd_calls"): the result line's ds_counts
 * entry, NAN when the run has no such count (not counted, or not a path of its stage). */
double zb_peer_count(const zb_peer_run *r, const char *key);

/* The ds_counts object of r's result line as compact JSON text (malloc'd), NULL when
 * there is none. */
char *zb_peer_counts_json(const zb_peer_run *r);

/* Store r for configuration config_id (inside the caller's transaction, or as its
 * own statement). ZB_E_INPUT for a run without a positive step time. */
zb_status zb_peer_store_add(zb_store *s, int64_t config_id, const zb_peer_run *r, zb_error *err);

/* Read the run stored for config_id back; ZB_E_INPUT when there is none. */
zb_status zb_peer_store_get(zb_store *s, int64_t config_id, zb_peer_run *r, zb_error *err);

#endif
