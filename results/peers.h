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
	char *result_json;                       /* malloc'd or NULL; zb_peer_run_clear frees */
} zb_peer_run;

/* An empty run: numbers NAN, warmup_steps -1, strings "". */
void zb_peer_run_init(zb_peer_run *r);
void zb_peer_run_clear(zb_peer_run *r);

/* Store r for configuration config_id (inside the caller's transaction, or as its
 * own statement). ZB_E_INPUT for a run without a positive step time. */
zb_status zb_peer_store_add(zb_store *s, int64_t config_id, const zb_peer_run *r, zb_error *err);

/* Read the run stored for config_id back; ZB_E_INPUT when there is none. */
zb_status zb_peer_store_get(zb_store *s, int64_t config_id, zb_peer_run *r, zb_error *err);

#endif
