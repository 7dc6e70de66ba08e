/*
 * sweep.h - the engine room of `zbench sweep`: the grid of configurations,
 * checked first, then simulated on threads and handed back in order, one row at a
 * time, so a sweep's memory stays flat whatever its size.
 *
 * Order: the hardware axes (--hw, --pcie, --gpu, --cpu, --cores, --gpus-per-link, --host-mem,
 * --dram-bw, --cpu-adam, --price)
 * vary fastest, so consecutive rows share a schedule (the task graph depends on
 * the model, policy and steps, never on the hardware): each graph is built once
 * and simulated on every machine of the grid, then released. The order depends
 * only on the axes, never on the number of threads.
 *
 * Shards: --shard K/N takes the K-th of N contiguous slices of that order, so
 * concatenating the shards in K order gives the unsharded sweep's rows.
 */
#ifndef ZB_SWEEP_H
#define ZB_SWEEP_H

#include <signal.h>
#include <stdio.h>

#include "config/resolve.h"
#include "core/graph.h"
#include "core/memory.h"
#include "sim/engine.h"

/* Sweeps larger than this are refused unless --yes is given. */
#define ZB_SWEEP_LIMIT 10000000LL

typedef struct zb_sweep_grid {
	zb_config_inputs in;       /* the axes as given: lists and ranges (value[a] NULL: not given) */
	int n[ZB_AX_COUNT];        /* values per axis (1 when not given) */
	char **vals[ZB_AX_COUNT];  /* NULL when not given */
	char *storage[ZB_AX_COUNT];
	int order[ZB_AX_COUNT];    /* slowest axis first; hardware axes last */
	long long total;           /* rows of the cartesian product */
	long long hw_rows;         /* rows per schedule: product of the hardware axes */
	long long first, end;      /* this shard's rows, [first, end) */
} zb_sweep_grid;

/* Expand the axes of in (each value a list or a range; the files and switches
 * apply to every row; in's files must outlive the grid). shard_k is 1..shard_n
 * (0/0: no shard). A grid of more than ZB_SWEEP_LIMIT rows is refused unless yes. */
zb_status zb_sweep_grid_init(zb_sweep_grid *g, const zb_config_inputs *in, int shard_k, int shard_n, int yes,
			     zb_error *err);
void zb_sweep_grid_free(zb_sweep_grid *g);

/* Build and check every configuration of the shard (nothing is simulated): a bad
 * value fails the sweep before anything is printed or stored. Counts the rows
 * (a 'none' policy has one row whatever the ratios) and gives the first row's
 * configuration and where its settings came from (may be NULL). */
zb_status zb_sweep_check(const zb_sweep_grid *g, long long *rows, zb_config *first, zb_sources *src,
			 zb_error *err);

/* One row of results. */
typedef struct zb_sweep_row {
	zb_config cfg;
	zb_memory mem;
	int simulated;       /* fits: scheduled and simulated */
	zb_sim_result res;   /* the figures when simulated; start/end NULL unless timeline */
	zb_graph head;       /* the schedule's scalars (ntasks, steps, copy_bytes); tasks NULL */
	const zb_graph *graph; /* the whole schedule, only with timeline */
	/* the same configuration under the other framework's schedule (DeepSpeed's for a zbench
	 * row, zbench's for a DeepSpeed row), with zb_sweep_opts.both: what DeepSpeed gets
	 * beside what the hardware allows */
	int alt_state;       /* 0: not asked, 1: simulated, 2: does not fit, 3: that schedule cannot run it */
	zb_config alt_cfg;
	zb_memory alt_mem;
	zb_sim_result alt_res; /* start/end NULL */
	char *config_json;   /* zb_config_to_json text, when asked for */
	char *pred_json;     /* the text of zb_sweep_opts.pred_json, when asked for */
} zb_sweep_row;

typedef struct zb_sweep_opts {
	int jobs;            /* threads simulating (>= 1) */
	int config_json;     /* fill row.config_json */
	/* fill row.pred_json with what this returns for the row (a malloc'ed string; NULL:
	 * out of memory), on the worker's thread, so formatting runs on every thread */
	char *(*pred_json)(const zb_sweep_row *row);
	int timeline;        /* rows carry the graph and timeline (implies one thread) */
	int both;            /* each row also under the other framework's schedule (alt_*) */
	FILE *progress;      /* a terminal: a progress line there after ~2 s (NULL: none) */
} zb_sweep_opts;

/* Called on the calling thread for each row, in order. Non-zero status stops the
 * sweep and is returned. */
typedef zb_status (*zb_sweep_emit_fn)(void *ctx, const zb_sweep_row *row, zb_error *err);

/* Simulate the shard's rows. *stop (set by a signal handler) ends the sweep
 * after the row being emitted: ZB_E_INTERRUPTED, with *done rows emitted. */
zb_status zb_sweep_run(const zb_sweep_grid *g, long long rows, const zb_sweep_opts *so, zb_sweep_emit_fn emit,
		       void *ctx, volatile sig_atomic_t *stop, long long *done, zb_error *err);

/* r->alt_cfg (set by the caller) predicted into r's other alt fields: state 1 simulated, 2
 * when it does not fit, 3 when that schedule cannot run it. */
void zb_sweep_row_predict_alt(zb_sweep_row *r);

/* Whether the inputs give several values (a list or a range) to a hardware axis: a
 * purchase question, which `zbench sweep` answers for DeepSpeed's schedule. */
int zb_sweep_hw_varies(const zb_config_inputs *in);

/* The machine's online cores (the default -j). */
int zb_sweep_default_jobs(void);

#endif
