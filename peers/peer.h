/*
 * peer.h - measuring another framework (DeepSpeed, plain PyTorch) on a zbench
 * configuration, for `zbench validate --deepspeed`.
 *
 * The measuring itself is peers/ds_step.py, a Python program (DeepSpeed has no C
 * API): one process per configuration, so a crash, an out-of-memory or a hang
 * costs one configuration, and each starts with a clean CUDA context and allocator
 * (peak memory is per process). This module builds its command line from a
 * zb_config, runs it under a timeout, and reads the one JSON line it prints last
 * into a zb_peer_run (results/peers.h). It also reads earlier measurements from a
 * TSV (data/deepspeed-h200-table.tsv), so they can be compared without a GPU.
 */
#ifndef ZB_PEER_H
#define ZB_PEER_H

#include "common/error.h"
#include "results/peers.h"
#include "core/config.h"

/* How to run the harness for one configuration. */
typedef struct zb_peer_cmd {
	const char *python;    /* interpreter, looked up in PATH when it has no '/' */
	const char *harness;   /* peers/ds_step.py */
	const char *ds_config; /* DeepSpeed JSON; NULL: plain PyTorch (--no-deepspeed) */
	const char *hf_config; /* Hugging Face config.json: the harness builds that model with
	                          transformers (--hf-config, the precision and HF gradient
	                          checkpointing of the configuration's policy, --ds-counts);
	                          NULL: its own modules of the model's family */
	int steps;             /* steps the harness times (the first 3 are warm-up) */
	int timeout_s;         /* the process is killed (its whole process group) after this */
	const char *log_path;  /* keep the process's output here; NULL: a temporary file */
} zb_peer_cmd;

/* The harness's model family for m: "gpt" (LayerNorm, GeLU MLP, biases, learned
 * positions, tied head) or "llama" (RMSNorm, SwiGLU, no biases, rotary positions).
 * ZB_E_INPUT naming what does not match when m is neither. */
zb_status zb_peer_family(const zb_model *m, const char **family, zb_error *err);

/* The harness's argument vector for configuration c (shape, seq, micro-batch, gas)
 * under cmd: argv[0] is cmd->python. With cmd->hf_config the shape is the file's and
 * --dtype and --grad-ckpt come from c's policy (ckpt gpu / cpu: checkpoints on the GPU /
 * in pinned host memory); without it the model must be a harness family and ckpt none.
 * NULL-terminated, malloc'd strings; free with zb_peer_argv_free. */
zb_status zb_peer_argv(const zb_peer_cmd *cmd, const zb_config *c, char ***argv, zb_error *err);
void zb_peer_argv_free(char **argv);

/* Run the harness and read its result into r (zb_peer_run_init'ed here). Errors
 * (ZB_E_INPUT, one line): the interpreter cannot be run, the process exits non-zero
 * (with its last line of output), is killed by a signal or the timeout, prints
 * no result line or a malformed one, or one of another shape or batch than c. stop (may be NULL): polled; when it becomes
 * non-zero the process is terminated and ZB_E_INTERRUPTED returned. */
zb_status zb_peer_run_harness(const zb_peer_cmd *cmd, const zb_config *c, volatile const int *stop,
			      zb_peer_run *r, zb_error *err);

/* The result line in a harness's output (the last line that starts with
 * {"harness": "ds_step"), parsed into r: step_ms, steps_ms, gpu_peak_GiB,
 * gpu_reserved_GiB and host_rss_GiB are required; fwd_ms, bwd_ms, opt_ms, params,
 * warmup_steps, versions, measured_at, config optional; of a Hugging Face model also
 * model_type, skipped_steps (fp16 overflows), tag (into note) and ds_counts, an object
 * of numbers (DeepSpeed's per-step path counts, peers/ds_counts.py), kept as its JSON
 * text (zb_peer_count reads one). r->result_json gets the line. ZB_E_INPUT naming the
 * problem when there is no such line, it is malformed, or it is a --dry-run line
 * (no measurement). */
zb_status zb_peer_parse_output(const char *output, zb_peer_run *r, zb_error *err);

/* What the harness says it ran (r->result_json: layers, hidden, heads, kv_heads,
 * ffn, vocab, seq, micro_batch, gas) against configuration c: ZB_E_INPUT naming the
 * first difference ("the harness ran seq 2048, the configuration has 1024"). A run
 * without a result line (a TSV row) passes. */
zb_status zb_peer_check_shape(const zb_peer_run *r, const zb_config *c, zb_error *err);

/* Measurements from a file: result lines of the harness, one per line (a file
 * whose first character is '{', like the ds-results.jsonl of
 * scripts/suites/deepspeed.suite), else a TSV (zb_peer_read_tsv). *rows as there. */
zb_status zb_peer_read_file(const char *path, zb_peer_run **rows, int *n, zb_error *err);

/* Read the first table of a TSV of measured runs: '#' comment lines, then a header
 * row naming the columns (config and step_ms required; zero, steps_ms (comma
 * list), gpu_peak_GiB, gpu_reserved_GiB, host_rss_GiB optional), then rows up to
 * the first blank or comment line. *rows is malloc'd (free each with
 * zb_peer_run_clear, then the array). Versions are read from a first comment line
 * "# DeepSpeed X (PyTorch Y, CUDA Z) ..." when the file has one. Errors name the
 * file, line and column. */
zb_status zb_peer_read_tsv(const char *path, zb_peer_run **rows, int *n, zb_error *err);

#endif
