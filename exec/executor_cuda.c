/*
 * executor_cuda.c - runs a schedule on the GPU, its copy engines and the CPU; see
 * executor.h for the model of execution.
 *
 * Memory (allocated once, checked against free memory first):
 *   device  params16[P], grads16[P] (the flat vectors the buckets index), fp32
 *           master/m/v of the GPU-updated share [0, split), an fp32 gradient
 *           accumulator with gas > 1, activation scratch sized by the largest task
 *   host    16-bit gradients, fp32 master/m/v and 16-bit parameters of the CPU share
 *           [split, P) (pinned unless --pageable), activation checkpoints (ckpt cpu)
 * Weights are real slices of params16 (each unit laid out as in unit_layout());
 * activations flow through scratch buffers reused by every layer: the shapes and
 * the bytes moved are the model's, the forward values are not a trained network's.
 * Bias additions are not executed (their parameters are updated like the others).
 *
 * Precision check (--check): every gradient the optimizer reads is replaced, right
 * before it is read, by a fixed pseudo-random value of (step, parameter index);
 * afterwards the fp32 master weights are compared with a double-precision Adam run
 * on the same gradients at a sample of indices, and the 16-bit parameters with the
 * master weights rounded to nearest even.
 */
#include "exec/exec_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/cuda_check.h"
#include "exec/host_pool.h"
#include "profiler/spans.h"
#include "profiler/trace.h"
#include "core/attention.h"
#include "sim/engine.h"
#include "sim/summary.h"

/* ---- small helpers ------------------------------------------------------------ */

void exec_set_state(exec *x, uint32_t id, int st)
{
	pthread_mutex_lock(&x->mu);
	x->state[id] = st;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

/* Wait until dependency `dep` was issued (GPU side) or done (CPU); returns its
 * state, T_SKIPPED when it will never run or the run failed. */
int exec_wait_dep(exec *x, uint32_t dep)
{
	int need = is_gpu_side(x->g->tasks[dep].resource) ? T_ISSUED : T_DONE;
	pthread_mutex_lock(&x->mu);
	while (x->state[dep] < need && !x->failed)
		pthread_cond_wait(&x->cv, &x->mu);
	int st = x->failed ? T_SKIPPED : x->state[dep];
	pthread_mutex_unlock(&x->mu);
	return st;
}

void exec_fail_run(exec *x)
{
	pthread_mutex_lock(&x->mu);
	x->failed = 1;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

/* ---- dispatchers ------------------------------------------------------------------ */

/* Tracing: a host wait of task for dep that began at w0 becomes a span when it
 * lasted over 1 us (shorter ones are the cost of looking); returns now. */
static int64_t note_wait(zb_span_buf *sb, uint32_t task, uint32_t dep, int64_t w0)
{
	int64_t w1 = zb_now_ns();
	if (w1 - w0 > 1000)
		zb_span_add(sb, ZB_SPAN_WAIT, (int32_t)task, (int32_t)dep, w0, w1);
	return w1;
}

/* Tracing: a CPU task's span and each pool worker's share of it (zb_pool_spans of
 * the run that just ended), the workers on virtual threads. */
static void note_cpu_task(exec *x, zb_span_buf *sb, zb_span_buf **wk, const zb_task *t)
{
	zb_span_add(sb, ZB_SPAN_TASK, (int32_t)t->id, -1, x->host_start[t->id], x->host_end[t->id]);
	const zb_pool_span *ps = zb_pool_spans(x->pool);
	for (int i = 0; i < zb_pool_threads(x->pool); i++) {
		if (ps[i].items == 0 || ps[i].start_ns < x->host_start[t->id])
			continue; /* idle in this run, or the spans of an earlier run (an empty task) */
		if (!wk[i]) {
			char name[48];
			snprintf(name, sizeof name, "zb-pool-%d (cpu %d)", i, zb_pool_cpu(x->pool, i));
			wk[i] = zb_spans_virtual(x->o->spans, name, i);
		}
		zb_span_add(wk[i], ZB_SPAN_WORKER, (int32_t)t->id, -1, ps[i].start_ns, ps[i].end_ns);
	}
}

static int should_skip(exec *x, const zb_task *t)
{
	pthread_mutex_lock(&x->mu);
	if (t->resource == ZB_RES_GPU) {
		int first_of_step = t->step != x->gpu_step;
		x->gpu_step = t->step;
		/* the compute stream notices a stop request first; the step it is in
		 * is finished, no later step starts */
		if (x->o->stop && *x->o->stop && x->stop_step == INT32_MAX)
			x->stop_step = first_of_step ? t->step : t->step + 1;
	}
	int skip = t->step >= x->stop_step || x->failed;
	pthread_mutex_unlock(&x->mu);
	return skip;
}

static void *dispatch(void *arg)
{
	dispatcher *dp = arg;
	exec *x = dp->x;
	const zb_graph *g = x->g;
	zb_status st = ZB_OK;
	if (cudaSetDevice(x->device) != cudaSuccess) {
		dp->status = zb_fail(&dp->err, ZB_E_CUDA, "cudaSetDevice(%d) failed in dispatcher", x->device);
		exec_fail_run(x);
		return NULL;
	}
	/* tracing: this thread's span buffer, the pool workers' (CPU), the task tag */
	zb_span_buf *sb = NULL, **wk = NULL;
	int tagged = 0;
	if (x->o->spans) {
		char name[32];
		snprintf(name, sizeof name, "zb-disp-%s", zb_resource_name(dp->resource));
		sb = zb_spans_thread(x->o->spans, name);
		if (dp->resource == ZB_RES_CPU)
			wk = zb_xcalloc((size_t)zb_pool_threads(x->pool), sizeof *wk);
	}
	for (size_t i = 0; i < g->ntasks && !st; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->resource != dp->resource)
			continue;
		if (tagged) { /* the previous task's calls are over */
			zb_trace_pop_task();
			tagged = 0;
		}
		if (x->o->trace) {
			zb_trace_push_task(t->id);
			tagged = 1;
		}
		int skip = should_skip(x, t);
		const uint32_t *deps = zb_task_deps(g, t);
		for (uint32_t j = 0; j < t->dep_count && !skip; j++) {
			uint32_t d = deps[j];
			int64_t w0 = sb ? zb_now_ns() : 0;
			if (exec_wait_dep(x, d) == T_SKIPPED) {
				skip = 1;
				break;
			}
			if (sb)
				w0 = note_wait(sb, t->id, d, w0);
			int dres = g->tasks[d].resource;
			if (dres == dp->resource)
				continue; /* same stream or same thread: already ordered */
			if (dp->resource == ZB_RES_CPU) {
				if (is_gpu_side(dres) && cudaEventSynchronize(x->ev_end[d]) != cudaSuccess)
					st = zb_fail(&dp->err, ZB_E_CUDA, "waiting for task %u failed", d);
				if (sb)
					note_wait(sb, t->id, d, w0);
			} else if (is_gpu_side(dres)) {
				if (cudaStreamWaitEvent(dp->stream, x->ev_end[d], 0) != cudaSuccess)
					st = zb_fail(&dp->err, ZB_E_CUDA, "cudaStreamWaitEvent for task %u failed", d);
			} /* a CPU dependency of a GPU task: wait_dep already waited for it */
		}
		if (st)
			break;
		if (skip) {
			exec_set_state(x, t->id, T_SKIPPED);
			continue;
		}
		if (dp->resource == ZB_RES_CPU) {
			x->host_start[t->id] = zb_now_ns();
			st = exec_run_cpu_adam(dp, t);
			x->host_end[t->id] = zb_now_ns();
			if (!st && sb)
				note_cpu_task(x, sb, wk, t);
			if (!st)
				exec_set_state(x, t->id, T_DONE);
			continue;
		}
		int64_t issue0 = sb ? zb_now_ns() : 0;
		if (cudaEventRecord(x->ev_start[t->id], dp->stream) != cudaSuccess) {
			st = zb_fail(&dp->err, ZB_E_CUDA, "cudaEventRecord failed for task %u", t->id);
			break;
		}
		switch (t->kind) {
		case ZB_TASK_GEMM: st = exec_run_gemm(dp, t); break;
		case ZB_TASK_KERNEL: st = exec_run_kernel(dp, t); break;
		case ZB_TASK_COPY: st = exec_run_copy(dp, t); break;
		case ZB_TASK_GPU_ADAM: st = exec_run_gpu_adam(dp, t); break;
		case ZB_TASK_COLLECTIVE: st = exec_run_collective(dp, t); break;
		default: st = zb_fail(&dp->err, ZB_E_INTERNAL, "task %u: unknown kind %d", t->id, t->kind);
		}
		if (!st && cudaEventRecord(x->ev_end[t->id], dp->stream) != cudaSuccess)
			st = zb_fail(&dp->err, ZB_E_CUDA, "cudaEventRecord failed for task %u", t->id);
		if (!st)
			exec_set_state(x, t->id, T_ISSUED);
		if (!st && sb)
			zb_span_add(sb, ZB_SPAN_ISSUE, (int32_t)t->id, -1, issue0, zb_now_ns());
	}
	if (tagged)
		zb_trace_pop_task();
	free(wk);
	if (!st && is_gpu_side(dp->resource) && cudaStreamSynchronize(dp->stream) != cudaSuccess)
		st = zb_fail(&dp->err, ZB_E_CUDA, "%s stream failed: %s", zb_resource_name(dp->resource),
			     cudaGetErrorString(cudaGetLastError()));
	dp->status = st;
	if (st)
		exec_fail_run(x);
	return NULL;
}

/* ---- entry points ------------------------------------------------------------------- */

int zb_exec_available(zb_error *err)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		zb_fail(err, ZB_E_NOGPU, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		return 0;
	}
	return 1;
}

static void *progress(void *arg);

/* The shapes the executor's tasks use, from the configuration. */
static void exec_init(exec *x, const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r)
{
	memset(x, 0, sizeof *x);
	x->g = g, x->c = c, x->o = o, x->r = r;
	const zb_model *m = &c->model;
	x->P = g->params;
	x->split = g->params - g->cpu_params;
	x->T = (int64_t)c->policy.micro_batch * c->policy.seq;
	x->h = m->hidden, x->kv = zb_model_kv_dim(m), x->f = m->ffn, x->F = (m->gated_mlp ? 2 : 1) * m->ffn;
	x->V = m->vocab, x->s = c->policy.seq, x->d = zb_model_head_dim(m);
	x->bh = (int64_t)c->policy.micro_batch * m->heads;
	x->flash = c->policy.attention == ZB_ATTN_FLASH;
	x->nS = x->flash ? 1 : x->bh * x->s * x->s;
	x->pinned = !c->policy.pageable;
	x->stop_step = INT32_MAX;
	x->gpu_step = -1;
	x->nranks = 1;
}

/* The rank's device (0 with one rank) with blocking-sync waits, its name, and
 * whether the run fits in GPU and host memory (refused with the figures before
 * anything is allocated; every rank has its own host buffers). */
static zb_status open_device(exec *x, zb_error *err)
{
	zb_exec_result *r = x->r;
	ZB_CUDA_TRY(err, cudaSetDevice(x->device));
	/* host waits sleep instead of spinning on a core Adam needs; too late once a
	 * context exists (cudaErrorSetOnActiveProcess), which only costs that */
	cudaError_t fe = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
	if (fe != cudaSuccess && fe != cudaErrorSetOnActiveProcess)
		return zb_fail(err, ZB_E_CUDA, "cudaSetDeviceFlags failed: %s", cudaGetErrorString(fe));
	cudaGetLastError();
	struct cudaDeviceProp prop;
	ZB_CUDA_TRY(err, cudaGetDeviceProperties(&prop, x->device));
	snprintf(r->device, sizeof r->device, "%.127s", prop.name);
	size_t free_b = 0, total_b = 0;
	ZB_CUDA_TRY(err, cudaMemGetInfo(&free_b, &total_b));
	double need_dev, need_host;
	exec_plan_bytes(x, &need_dev, &need_host);
	if (need_dev > 0.97 * (double)free_b)
		return zb_fail(err, ZB_E_NOFIT, "the run needs %.2f GiB of GPU memory, %.2f GiB are free on %s",
			       need_dev / 1073741824.0, free_b / 1073741824.0, r->device);
	double avail = exec_host_available(), idle = zb_host_pool_idle_bytes();
	need_host *= x->nranks;
	/* Blocks the pool holds idle (exec/host_pool.h) are this run's: a pinned run
	 * gets them back or, when pinning fails, the pool frees them and tries again.
	 * A pageable run cannot use them, so when it is short they go first. */
	if (avail > 0 && x->pinned)
		avail += idle;
	else if (avail > 0 && idle > 0 && need_host > 0.9 * avail) {
		zb_host_pool_drain();
		avail = exec_host_available();
	}
	if (avail > 0 && need_host > 0.9 * avail)
		return zb_fail(err, ZB_E_NOFIT, "the run needs %.2f GiB of host memory, %.2f GiB are available",
			       need_host / 1073741824.0, avail / 1073741824.0);
	return ZB_OK;
}

/* Per-task bookkeeping and the result's timelines. */
static void alloc_tasks(exec *x)
{
	const zb_graph *g = x->g;
	zb_exec_result *r = x->r;
	r->ntasks = g->ntasks;
	r->start = zb_xmalloc(g->ntasks * sizeof *r->start);
	r->end = zb_xmalloc(g->ntasks * sizeof *r->end);
	r->step_s = zb_xcalloc((size_t)g->steps, sizeof *r->step_s);
	x->state = zb_xcalloc(g->ntasks, sizeof *x->state);
	x->ev_start = zb_xcalloc(g->ntasks, sizeof *x->ev_start);
	x->ev_end = zb_xcalloc(g->ntasks, sizeof *x->ev_end);
	x->host_start = zb_xcalloc(g->ntasks, sizeof *x->host_start);
	x->host_end = zb_xcalloc(g->ntasks, sizeof *x->host_end);
	x->coeffs = zb_xcalloc((size_t)g->steps, sizeof *x->coeffs);
	pthread_mutex_init(&x->mu, NULL);
	pthread_cond_init(&x->cv, NULL);
}

/* A resource's stream. ZB_COMM_PRIORITY=high gives the collectives' stream the
 * device's greatest priority (an experiment, off by default): on 2 H200s a collective
 * issued while a large GEMM held every SM waited for that GEMM to end (0.55 ms
 * instead of 0.17 beside it); with priority its blocks go first as SMs free up. */
static zb_status create_stream(int res, cudaStream_t *s, zb_error *err)
{
	const char *pri = getenv("ZB_COMM_PRIORITY");
	if (res == ZB_RES_COMM && pri && !strcmp(pri, "high")) {
		int least = 0, greatest = 0;
		ZB_CUDA_TRY(err, cudaDeviceGetStreamPriorityRange(&least, &greatest));
		ZB_CUDA_TRY(err, cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, greatest));
		return ZB_OK;
	}
	ZB_CUDA_TRY(err, cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
	return ZB_OK;
}

/* Adam coefficients of every step, CUDA events of every GPU task, the buffers, the
 * CPU pool, one stream per GPU-side resource, cuBLASLt, the initial values. */
static zb_status prepare(exec *x, dispatcher dps[ZB_RES_COUNT], zb_error *err)
{
	const zb_graph *g = x->g;
	zb_exec_result *r = x->r;
	zb_status st = ZB_OK;
	x->adam = zb_adam_defaults();
	x->adam.grad_type = x->adam.param_type = x->c->policy.dtype == ZB_FP16 ? ZB_HALF_FP16 : ZB_HALF_BF16;
	for (int s = 0; s < g->steps && !st; s++) {
		zb_adam_params p = x->adam;
		p.step = s + 1;
		st = zb_gpu_adam_coeffs_make(&p, &x->coeffs[s], err);
	}
	if (st)
		return st;
	for (size_t i = 0; i < g->ntasks && !st; i++) {
		r->start[i] = r->end[i] = -1;
		if (is_gpu_side(g->tasks[i].resource)) {
			if (cudaEventCreate(&x->ev_start[i]) != cudaSuccess || cudaEventCreate(&x->ev_end[i]) != cudaSuccess)
				st = zb_fail(err, ZB_E_CUDA, "cudaEventCreate failed for task %zu", i);
		}
	}
	if (st || (st = exec_allocate(x, err)))
		return st;
	if ((st = zb_pool_create_slice(exec_rank_threads(x), x->rank, x->nranks, &x->pool, err)))
		return st;
	r->cpu_threads = zb_pool_threads(x->pool);
	zb_adam_isa isa;
	if ((st = zb_adam_isa_resolve(ZB_ADAM_ISA_AUTO, &isa, err)))
		return st;
	r->adam_isa = zb_adam_isa_name(isa);
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		dps[res].x = x;
		dps[res].resource = res;
		if (is_gpu_side(res) && (st = create_stream(res, &dps[res].stream, err)))
			return st;
		if (x->o->trace && dps[res].stream)
			zb_trace_name_stream(dps[res].stream, res, zb_resource_name(res));
		if ((res == ZB_RES_H2D || res == ZB_RES_D2H) && x->c->policy.link_rate_Bps > 0 && x->pinned) {
			if ((st = zb_pacer_create(&dps[res].pacer, x->c->policy.link_rate_Bps, res == ZB_RES_H2D,
						  dps[res].stream, err)))
				return st;
			r->link_native_Bps[res == ZB_RES_H2D] = zb_pacer_native_Bps(dps[res].pacer);
		}
	}
	if ((st = zb_gemm_create(&dps[ZB_RES_GPU].gemm, err)))
		return st;
	return exec_initialize(x, dps[ZB_RES_GPU].stream, err);
}

/* Time zero: a reference event on the idle compute stream, placed on the host
 * clock by polling (a blocking sync would add its wake-up latency): of several
 * tries keep the one whose [record, observed] window is narrowest and take its
 * middle, so GPU and CPU times agree to a few microseconds. */
static zb_status time_zero(exec *x, cudaStream_t stream, zb_error *err)
{
	int64_t best = INT64_MAX;
	for (int i = 0; i < 20; i++) {
		cudaEvent_t e;
		ZB_CUDA_TRY(err, cudaEventCreate(&e));
		int64_t a = zb_now_ns();
		if (cudaEventRecord(e, stream) != cudaSuccess) {
			cudaEventDestroy(e);
			return zb_fail(err, ZB_E_CUDA, "cudaEventRecord of the reference event failed");
		}
		cudaError_t q;
		while ((q = cudaEventQuery(e)) == cudaErrorNotReady)
			;
		int64_t b = zb_now_ns();
		if (q != cudaSuccess) {
			cudaEventDestroy(e);
			return zb_fail(err, ZB_E_CUDA, "cudaEventQuery failed: %s", cudaGetErrorString(q));
		}
		if (b - a < best) {
			best = b - a;
			if (x->ref)
				cudaEventDestroy(x->ref);
			x->ref = e;
			x->ref_ns = a + (b - a) / 2;
		} else {
			cudaEventDestroy(e);
		}
	}
	x->t0_ns = x->ref_ns;
	x->r->t0_ns = x->t0_ns;
	return ZB_OK;
}

/* One dispatcher thread per resource (and the progress line), until they end; the
 * first dispatcher's failure is the run's. */
static zb_status run_dispatchers(exec *x, dispatcher dps[ZB_RES_COUNT], zb_error *err)
{
	zb_status st = ZB_OK;
	pthread_t prog;
	int prog_started = 0, started = 0;
	if (!x->o->quiet && pthread_create(&prog, NULL, progress, x) == 0)
		prog_started = 1;
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		if (pthread_create(&dps[res].thread, NULL, dispatch, &dps[res]) != 0) {
			st = zb_fail(err, ZB_E_INTERNAL, "cannot start the %s dispatcher", zb_resource_name(res));
			exec_fail_run(x);
			break;
		}
		started++;
	}
	for (int res = 0; res < started; res++)
		pthread_join(dps[res].thread, NULL);
	if (x->failed & 1)
		exec_rank_close(x, ZB_E_CUDA); /* a failed rank's peers must not wait for it in a collective */
	x->r->wall_s = (zb_now_ns() - x->t0_ns) * 1e-9;
	pthread_mutex_lock(&x->mu);
	x->failed |= 2; /* tells the progress thread to end */
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
	if (prog_started)
		pthread_join(prog, NULL);
	for (int res = 0; res < started && !st; res++)
		if (dps[res].status) {
			*err = dps[res].err;
			st = dps[res].status;
		}
	return st;
}

/* The timeline on one clock (GPU tasks from their events, CPU tasks from the host
 * clock), then step times, busy times and throughput of the steps that ran. */
static zb_status collect(exec *x, zb_error *err)
{
	const zb_graph *g = x->g;
	zb_exec_result *r = x->r;
	for (size_t i = 0; i < g->ntasks; i++) {
		if (x->state[i] == T_SKIPPED || x->state[i] == T_PENDING)
			continue;
		if (g->tasks[i].resource == ZB_RES_CPU) {
			r->start[i] = (x->host_start[i] - x->t0_ns) * 1e-9;
			r->end[i] = (x->host_end[i] - x->t0_ns) * 1e-9;
		} else {
			float a = 0, b = 0;
			if (cudaEventElapsedTime(&a, x->ref, x->ev_start[i]) != cudaSuccess ||
			    cudaEventElapsedTime(&b, x->ref, x->ev_end[i]) != cudaSuccess)
				return zb_fail(err, ZB_E_CUDA, "reading the timing of task %zu failed", i);
			r->start[i] = a * 1e-3;
			r->end[i] = b * 1e-3;
		}
	}
	r->steps_done = x->stop_step < g->steps ? x->stop_step : g->steps;
	r->interrupted = x->stop_step < g->steps;
	double *bound = zb_xmalloc((size_t)g->steps * sizeof *bound);
	zb_step_boundaries(g, r->end, bound);
	for (int s = 0; s < r->steps_done; s++)
		r->step_s[s] = bound[s] - (s ? bound[s - 1] : 0);
	free(bound);
	if (r->steps_done >= 1) {
		zb_graph sub = *g; /* the steps that ran */
		sub.steps = r->steps_done;
		zb_step_summary sum;
		zb_step_summarize(&sub, r->start, r->end, &sum);
		r->step_time_s = sum.step_time_s;
		r->tokens_per_s = sum.tokens_per_s;
		r->tflops_per_gpu = sum.tflops_per_gpu;
		memcpy(r->busy_s, sum.busy_s, sizeof r->busy_s);
	}
	return ZB_OK;
}

static void cleanup(exec *x, dispatcher dps[ZB_RES_COUNT])
{
	const zb_graph *g = x->g;
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		if (dps[res].gemm)
			zb_gemm_destroy(dps[res].gemm, NULL);
		zb_pacer_destroy(dps[res].pacer);
		if (dps[res].stream)
			cudaStreamDestroy(dps[res].stream);
	}
	if (x->ref)
		cudaEventDestroy(x->ref);
	for (size_t i = 0; i < g->ntasks; i++) {
		if (x->ev_start && x->ev_start[i])
			cudaEventDestroy(x->ev_start[i]);
		if (x->ev_end && x->ev_end[i])
			cudaEventDestroy(x->ev_end[i]);
	}
	zb_pool_destroy(x->pool);
	exec_release(x);
	free((void *)x->state);
	free(x->ev_start);
	free(x->ev_end);
	free(x->host_start);
	free(x->host_end);
	free(x->coeffs);
	pthread_mutex_destroy(&x->mu);
	pthread_cond_destroy(&x->cv);
}

zb_status zb_execute(const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r,
		     zb_error *err)
{
	memset(r, 0, sizeof *r);
	if (!zb_exec_available(err))
		return ZB_E_NOGPU;
	if (g->ranks > 1)
		return zb_fail(err, ZB_E_INTERNAL, "a graph of %d ranks runs through zb_execute_ranks", g->ranks);
	return exec_run_rank(g, c, o, r, NULL, 0, 1, err);
}

zb_status exec_run_rank(const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r,
			exec_ranks *ranks, int rank, int nranks, zb_error *err)
{
	exec xs;
	exec *x = &xs;
	exec_init(x, g, c, o, r);
	x->ranks = ranks, x->rank = rank, x->nranks = nranks, x->device = rank;
	const zb_model *m = &c->model;
	if (m->embed_proj > 0 && m->embed_proj != m->hidden)
		return zb_fail(err, ZB_E_INPUT, "the executor does not run models with embed_proj (%d)", m->embed_proj);
	if (m->head_dim || m->linear_bias || m->norms || m->experts) /* its kernels lay out GPT and Llama blocks */
		return zb_fail(err, ZB_E_INPUT, "the executor does not run %s: a head_dim, biases, norms or experts "
			       "of its own (predict it, or measure it with validate --deepspeed)", m->name);
	if (x->flash && !zb_attention_flash_ok(m))
		return zb_fail(err, ZB_E_INPUT, "--attention flash: head dim %d not supported by the fused kernels",
			       (int)x->d);
	zb_status st = open_device(x, err);
	if (st) {
		exec_rank_close(x, st); /* the other ranks must not wait for this one */
		return st;
	}
	alloc_tasks(x);
	dispatcher dps[ZB_RES_COUNT];
	memset(dps, 0, sizeof dps);
	if (!(st = prepare(x, dps, err)) && !(st = exec_rank_open(x, err)) &&
	    !(st = time_zero(x, dps[ZB_RES_GPU].stream, err)) && !(st = exec_rank_sync(x, err)) &&
	    !(st = run_dispatchers(x, dps, err)) && !(st = collect(x, err)) && !(st = exec_rank_digest(x, err)) &&
	    o->check && !r->interrupted)
		st = exec_precision_check(x, err);
	exec_rank_close(x, st);
	cleanup(x, dps);
	if (st)
		zb_exec_result_free(r);
	return st;
}

/* A progress line on stderr once the run has lasted a second. */
static void *progress(void *arg)
{
	exec *x = arg;
	const zb_graph *g = x->g;
	int printed = 0;
	for (;;) {
		usleep(200000);
		pthread_mutex_lock(&x->mu);
		int end = x->failed;
		pthread_mutex_unlock(&x->mu);
		if (end)
			break;
		double t = (zb_now_ns() - x->t0_ns) * 1e-9;
		if (t < 1.0)
			continue;
		size_t done = 0;
		for (size_t i = 0; i < g->ntasks; i++)
			done += x->state[i] != T_PENDING;
		fprintf(stderr, "\rzbench run: %5.1f s, %zu/%zu tasks issued (%.0f%%)   ", t, done, g->ntasks,
			100.0 * done / g->ntasks);
		printed = 1;
	}
	if (printed)
		fprintf(stderr, "\n");
	return NULL;
}

void zb_exec_result_free(zb_exec_result *r)
{
	free(r->start);
	free(r->end);
	free(r->step_s);
	r->start = r->end = r->step_s = NULL;
}
