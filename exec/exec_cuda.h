/*
 * exec_cuda.h - private to exec/: the state of one run on the GPU and the parts of
 * the executor that share it. executor_cuda.c runs the schedule (dispatcher threads,
 * time zero, the timeline); tasks_cuda.c issues each task (GEMMs, kernels, copies,
 * Adam); buffers_cuda.c sizes, allocates and initializes device and host memory;
 * check_cuda.c is the --check precision check. The public API is executor.h.
 */
#ifndef ZB_EXEC_CUDA_H
#define ZB_EXEC_CUDA_H

#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>

#include "core/model.h"
#include "exec/cpu_adam.h"
#include "exec/executor.h"
#include "exec/gemm.h"
#include "exec/gpu_adam.h"
#include "exec/pacing.h"
#include "exec/threadpool.h"

enum { T_PENDING = 0, T_ISSUED, T_DONE, T_SKIPPED };

#define CHECK_SAMPLES 1000000
#define GRAD_LO -1e-2f
#define GRAD_HI 1e-2f

typedef struct exec exec;
typedef struct exec_ranks exec_ranks; /* ranks_cuda.c: what the ranks of one run share */

typedef struct dispatcher {
	exec *x;
	int resource;
	cudaStream_t stream;
	zb_gemm *gemm;       /* GPU compute only */
	zb_pacer *pacer;     /* copy streams under --link-rate, else NULL */
	pthread_t thread;
	zb_error err;
	zb_status status;
} dispatcher;

struct exec {
	const zb_graph *g;
	const zb_config *c;
	const zb_exec_options *o;
	zb_exec_result *r;
	int64_t P, split, T, h, kv, f, F, V, s, d, bh;

	/* device */
	uint16_t *params16, *grads16;
	float *gmaster, *gm, *gv, *acc;
	int32_t *tokens;
	uint16_t *X, *N, *Y, *QKV, *S, *O, *H, *H2, *logits, *dX, *dY, *dH, *dS, *Xsave;
	float *mean, *rstd, *losses, *loss_mean, *dgain, *dbias;
	int flash;                      /* fused attention: lse and workspace, no S/dS matrices */
	float *lse;
	void *fa_ws;
	int64_t nS;                     /* elements of S and dS (1 with flash) */
	/* host */
	uint16_t *hgrad, *hparam16, *hact;
	float *hmaster, *hm, *hv;
	int pinned;

	zb_pool *pool;
	zb_adam_params adam;
	zb_gpu_adam_coeffs *coeffs; /* per step */

	/* task state and timing */
	volatile int *state;
	cudaEvent_t *ev_start, *ev_end; /* per task (GPU-side resources) */
	int64_t *host_start, *host_end; /* CPU tasks, ns */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop_step;                  /* first step not started (INT32_MAX: run all) */
	int gpu_step;                   /* step of the last GPU compute task dispatched */
	int failed;
	int64_t t0_ns;
	cudaEvent_t ref;
	int64_t ref_ns;

	/* data-parallel ranks (ranks_cuda.c); rank 0 of 1 on device 0 otherwise */
	int rank, nranks, device;
	exec_ranks *ranks;              /* NULL with one rank */
	void *comm;                     /* this rank's ncclComm_t */
	uint16_t *coll_scratch;         /* staged collectives (exec/shard.h) */
};

/* Offsets of a unit's tensors inside its slice of the flat parameter vector;
 * the sizes add up to zb_model_unit_params(). */
typedef struct unit_layout {
	int64_t qkv_w, qkv_b, proj_w, proj_b, fc1_w, fc1_b, fc2_w, fc2_b, n1_g, n1_b, n2_g, n2_b;
	int64_t nf_g, nf_b, lm_w;       /* head */
	int64_t wte, wpe;               /* embeddings */
} unit_layout;

static inline int is_gpu_side(int res) { return res != ZB_RES_CPU; }
static inline size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }
/* The seed of the synthetic gradients of a step (--check). */
static inline uint64_t exec_grad_seed(const exec *x, int step)
{
	return x->o->seed * 1000003ull + (uint64_t)step * 7919ull;
}

/* Task states and the run's failure (executor_cuda.c). */
void exec_set_state(exec *x, uint32_t id, int st);
int exec_wait_dep(exec *x, uint32_t dep);
void exec_fail_run(exec *x);

/* One task on its dispatcher's stream or the CPU pool (tasks_cuda.c). */
unit_layout exec_layout_of(const exec *x, int unit);
zb_status exec_run_gemm(dispatcher *dp, const zb_task *t);
zb_status exec_run_kernel(dispatcher *dp, const zb_task *t);
zb_status exec_run_copy(dispatcher *dp, const zb_task *t);
zb_status exec_run_gpu_adam(dispatcher *dp, const zb_task *t);
zb_status exec_run_cpu_adam(dispatcher *dp, const zb_task *t);

/* Several ranks (ranks_cuda.c): the part of a per-rank task this rank works on
 * (the task's own range with one rank), a collective on the COMM stream, the
 * communicator and scratch of a rank, the start of the dispatchers in step. */
void exec_task_range(const exec *x, const zb_task *t, int64_t *off, int64_t *n);
zb_status exec_run_collective(dispatcher *dp, const zb_task *t);
zb_status exec_rank_open(exec *x, zb_error *err);
zb_status exec_rank_sync(exec *x, zb_error *err);
void exec_rank_close(exec *x, zb_status st);
zb_status exec_rank_digest(exec *x, zb_error *err); /* r->params_digest, several ranks only */
int exec_rank_threads(const exec *x);
/* One rank's whole run (executor_cuda.c); ranks NULL for the single-GPU run. */
zb_status exec_run_rank(const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r,
			exec_ranks *ranks, int rank, int nranks, zb_error *err);

/* Memory (buffers_cuda.c): what the run needs, allocation, release, initial values. */
void exec_plan_bytes(const exec *x, double *dev, double *host);
double exec_host_available(void);
zb_status exec_allocate(exec *x, zb_error *err);
void exec_release(exec *x);
zb_status exec_initialize(exec *x, cudaStream_t s, zb_error *err);

/* --check: master weights against a double-precision Adam (check_cuda.c). */
zb_status exec_precision_check(exec *x, zb_error *err);

#endif
