/*
 * ranks_cuda.c - several GPUs of one node (core/graph.h, "Several GPUs"): one thread
 * per rank, rank r on device r, each running the whole graph with the executor of
 * executor_cuda.c (its own streams, buffers, host memory and CPU Adam pool pinned to
 * its 1/R of the cores), the collectives of ZB_RES_COMM on an NCCL stream of its own.
 *
 * Data: every rank holds the full 16-bit parameter and gradient vectors (the
 * collectives and copies move what ZeRO moves; memory is not partitioned).
 * Reduce-scatter averages (ncclAvg, as data-parallel training does) a bucket's
 * gradients into each rank's shard; the per-rank GRAD_DOWN/ADAM/PARAM_UP then work
 * on that shard (exec_task_range); all-gather sends each rank's updated shard to
 * all. A range whose padding (exec/shard.h) reaches past it goes through a scratch
 * buffer so the elements after it are left alone.
 *
 * Failure: a rank that fails marks the run failed and aborts every rank's
 * communicator (ncclCommAbort), so no peer waits forever in a collective or in the
 * start barrier. Ctrl-C is not honoured with several ranks (each rank would decide
 * its last step on its own and leave the others in a collective): the run ends.
 */
#include "exec/exec_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda_check.h"
#include "exec/nccl_dl.h"
#include "exec/shard.h"

enum { COMM_NONE, COMM_ALIVE, COMM_GONE };

struct exec_ranks {
	int n;
	ncclUniqueId id;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int arrived, generation;
	int failed, failed_rank;
	ncclComm_t *comms;
	int *comm_state;         /* changed holding comm_mu[rank] and then mu */
	pthread_mutex_t *comm_mu; /* held by a rank's collective calls (exec_run_collective) */
};

/* comm_state[r] = to; returns the old state. */
static int set_comm_state(exec_ranks *s, int r, int to)
{
	pthread_mutex_lock(&s->comm_mu[r]);
	pthread_mutex_lock(&s->mu);
	int was = s->comm_state[r];
	s->comm_state[r] = to;
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&s->comm_mu[r]);
	return was;
}

/* ---- per-rank work ranges ------------------------------------------------------- */

void exec_task_range(const exec *x, const zb_task *t, int64_t *off, int64_t *n)
{
	*off = t->param_offset, *n = t->params;
	int per_rank = t->op == ZB_OP_GRAD_DOWN || t->op == ZB_OP_PARAM_UP || t->op == ZB_OP_ADAM;
	if (x->nranks <= 1 || t->bucket < 0 || t->bucket >= x->g->nbuckets || !per_rank)
		return;
	const zb_bucket *b = &x->g->buckets[t->bucket];
	zb_shard_range(b->param_offset, b->params, x->nranks, x->rank, off, n);
}

int exec_rank_threads(const exec *x) { return zb_config_cpu_threads(x->c); }

/* ---- start, barrier, end ---------------------------------------------------------- */

/* Wait for every rank; fails when one of them failed (then nobody waits). */
static zb_status barrier(exec *x, zb_error *err)
{
	exec_ranks *s = x->ranks;
	pthread_mutex_lock(&s->mu);
	int gen = s->generation;
	if (++s->arrived == s->n) {
		s->arrived = 0;
		s->generation++;
		pthread_cond_broadcast(&s->cv);
	}
	while (gen == s->generation && !s->failed)
		pthread_cond_wait(&s->cv, &s->mu);
	int failed = s->failed, who = s->failed_rank;
	pthread_mutex_unlock(&s->mu);
	if (failed)
		return zb_fail(err, ZB_E_CUDA, "rank %d of %d failed, rank %d stops", who, s->n, x->rank);
	return ZB_OK;
}

/* Elements of the largest collective that goes through the scratch buffer. */
static int64_t scratch_elems(const exec *x)
{
	int64_t most = 0;
	for (size_t i = 0; i < x->g->ntasks; i++) {
		const zb_task *t = &x->g->tasks[i];
		if (t->kind != ZB_TASK_COLLECTIVE)
			continue;
		zb_collective_layout l = zb_collective_layout_of(t->params, x->nranks);
		if (l.staged && l.padded > most)
			most = l.padded;
	}
	return most;
}

zb_status exec_rank_open(exec *x, zb_error *err)
{
	if (!x->ranks)
		return ZB_OK;
	exec_ranks *s = x->ranks;
	zb_status st = barrier(x, err); /* every rank got its device and memory checked */
	if (st)
		return st;
	ncclComm_t comm = NULL;
	ZB_CUDA_TRY(err, cudaSetDevice(x->device));
	ZB_NCCL_TRY(err, zb_nccl()->CommInitRank(&comm, s->n, s->id, x->rank));
	s->comms[x->rank] = comm;
	set_comm_state(s, x->rank, COMM_ALIVE);
	x->comm = comm;
	int64_t n = scratch_elems(x);
	if (n > 0)
		ZB_CUDA_MALLOC(err, (void **)&x->coll_scratch, (size_t)n * sizeof(uint16_t));
	return ZB_OK;
}

zb_status exec_rank_sync(exec *x, zb_error *err)
{
	return x->ranks ? barrier(x, err) : ZB_OK;
}

void exec_rank_close(exec *x, zb_status st)
{
	exec_ranks *s = x->ranks;
	if (!s)
		return;
	if (st) {
		pthread_mutex_lock(&s->mu);
		if (!s->failed) {
			s->failed = 1;
			s->failed_rank = x->rank;
		}
		pthread_cond_broadcast(&s->cv); /* out of the barrier */
		pthread_mutex_unlock(&s->mu);
		/* every rank's communicator: a peer may wait for this rank in a collective */
		for (int r = 0; r < s->n; r++)
			if (set_comm_state(s, r, COMM_GONE) == COMM_ALIVE)
				zb_nccl()->CommAbort(s->comms[r]);
	} else if (set_comm_state(s, x->rank, COMM_GONE) == COMM_ALIVE) {
		zb_nccl()->CommDestroy(s->comms[x->rank]);
	}
	if (x->coll_scratch) {
		cudaFree(x->coll_scratch);
		x->coll_scratch = NULL;
	}
}

zb_status exec_rank_digest(exec *x, zb_error *err)
{
	if (!x->ranks)
		return ZB_OK;
	size_t n = (size_t)x->P;
	uint16_t *h = malloc(n * 2 + 2);
	if (!h)
		return zb_fail(err, ZB_E_NOMEM, "cannot allocate %.2f GiB for the parameters' digest", n * 2 / 1073741824.0);
	cudaError_t e = cudaMemcpy(h, x->params16, n * 2, cudaMemcpyDeviceToHost);
	if (e != cudaSuccess) {
		free(h);
		return zb_fail(err, ZB_E_CUDA, "copying rank %d's parameters failed: %s", x->rank, cudaGetErrorString(e));
	}
	uint64_t d = 0xcbf29ce484222325ull; /* FNV-1a over the bytes */
	const unsigned char *b = (const unsigned char *)h;
	for (size_t i = 0; i < n * 2; i++)
		d = (d ^ b[i]) * 0x100000001b3ull;
	free(h);
	x->r->params_digest = d;
	return ZB_OK;
}

/* ---- collectives ------------------------------------------------------------------ */

static zb_status reduce_scatter(dispatcher *dp, const zb_task *t, ncclDataType_t ty, zb_collective_layout l)
{
	exec *x = dp->x;
	const zb_nccl_api *nc = zb_nccl();
	uint16_t *base = x->grads16 + t->param_offset, *slot = base + (int64_t)x->rank * l.shard;
	int64_t off, n;
	zb_shard_range(t->param_offset, t->params, x->nranks, x->rank, &off, &n);
	if (n == l.shard) { /* in place: NCCL's recvbuff == sendbuff + rank * recvcount */
		ZB_NCCL_TRY(&dp->err, nc->ReduceScatter(base, slot, (size_t)l.shard, ty, ncclAvg, x->comm, dp->stream));
		return ZB_OK;
	}
	/* this rank's slot reaches past the range: receive aside, keep the part inside */
	ZB_NCCL_TRY(&dp->err,
		    nc->ReduceScatter(base, x->coll_scratch, (size_t)l.shard, ty, ncclAvg, x->comm, dp->stream));
	if (n > 0)
		ZB_CUDA_TRY(&dp->err, cudaMemcpyAsync(x->grads16 + off, x->coll_scratch, (size_t)n * 2,
						      cudaMemcpyDeviceToDevice, dp->stream));
	return ZB_OK;
}

static zb_status all_gather(dispatcher *dp, const zb_task *t, ncclDataType_t ty, zb_collective_layout l)
{
	exec *x = dp->x;
	const zb_nccl_api *nc = zb_nccl();
	uint16_t *base = x->params16 + t->param_offset, *slot = base + (int64_t)x->rank * l.shard;
	if (!l.staged) { /* in place: sendbuff == recvbuff + rank * sendcount */
		ZB_NCCL_TRY(&dp->err, nc->AllGather(slot, base, (size_t)l.shard, ty, x->comm, dp->stream));
		return ZB_OK;
	}
	/* the padded result would overwrite what follows the range on every rank */
	ZB_NCCL_TRY(&dp->err, nc->AllGather(slot, x->coll_scratch, (size_t)l.shard, ty, x->comm, dp->stream));
	ZB_CUDA_TRY(&dp->err, cudaMemcpyAsync(base, x->coll_scratch, (size_t)t->params * 2, cudaMemcpyDeviceToDevice,
					      dp->stream));
	return ZB_OK;
}

static zb_status issue_collective(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	ncclDataType_t ty = x->adam.grad_type == ZB_HALF_FP16 ? ncclFloat16 : ncclBfloat16;
	zb_collective_layout l = zb_collective_layout_of(t->params, x->nranks);
	switch (t->op) {
	case ZB_OP_REDUCE_SCATTER: return reduce_scatter(dp, t, ty, l);
	case ZB_OP_ALL_GATHER: return all_gather(dp, t, ty, l);
	case ZB_OP_ALL_REDUCE:
		ZB_NCCL_TRY(&dp->err, zb_nccl()->AllReduce(x->grads16 + t->param_offset, x->grads16 + t->param_offset,
							   (size_t)t->params, ty, ncclAvg, x->comm, dp->stream));
		return ZB_OK;
	default:
		return zb_fail(&dp->err, ZB_E_INTERNAL, "task %u: no collective for op %s", t->id, zb_op_name(t->op));
	}
}

/* Under the rank's communicator lock, so that a failed peer's ncclCommAbort
 * (exec_rank_close) never frees the communicator while a call on it is under way:
 * the peer marks it gone under that lock first, and a call that finds it gone fails.
 * A call never waits for a peer inside NCCL (connections are made at init:
 * NCCL_RUNTIME_CONNECT=0, nccl_dl.c), so holding the lock cannot block the peer. */
zb_status exec_run_collective(dispatcher *dp, const zb_task *t)
{
	exec *x = dp->x;
	if (!x->comm)
		return zb_fail(&dp->err, ZB_E_INTERNAL, "task %u: a collective in a run of one rank", t->id);
	if (t->param_offset < 0 || t->params < 0 || t->param_offset + t->params > x->P)
		return zb_fail(&dp->err, ZB_E_INTERNAL, "task %u: collective range [%lld, +%lld) outside the %lld "
			       "parameters", t->id, (long long)t->param_offset, (long long)t->params, (long long)x->P);
	exec_ranks *s = x->ranks;
	if (!s) /* a test driving one rank's collectives itself */
		return issue_collective(dp, t);
	pthread_mutex_lock(&s->comm_mu[x->rank]);
	zb_status st = s->comm_state[x->rank] == COMM_ALIVE
			       ? issue_collective(dp, t)
			       : zb_fail(&dp->err, ZB_E_CUDA, "another rank failed, rank %d stops", x->rank);
	pthread_mutex_unlock(&s->comm_mu[x->rank]);
	return st;
}

/* ---- the run of all ranks ------------------------------------------------------------ */

typedef struct rank_arg {
	const zb_graph *g;
	const zb_config *c;
	zb_exec_options o;
	zb_exec_result *r;
	exec_ranks *s;
	int rank;
	zb_error err;
	zb_status st;
	pthread_t thread;
} rank_arg;

static void *rank_main(void *p)
{
	rank_arg *a = p;
	a->st = exec_run_rank(a->g, a->c, &a->o, a->r, a->s, a->rank, a->s->n, &a->err);
	return NULL;
}

/* What every rank needs before any starts: GPUs enough, NCCL, options it supports. */
static zb_status check_ranks(const zb_graph *g, const zb_exec_options *o, zb_error *err)
{
	int R = g->ranks, n = 0;
	if (R > 64)
		return zb_fail(err, ZB_E_INPUT, "--gpus %d: the executor runs at most 64 ranks", R);
	ZB_CUDA_TRY(err, cudaGetDeviceCount(&n));
	if (n < R)
		return zb_fail(err, ZB_E_NOGPU, "--gpus %d needs %d GPUs, %d present", R, R, n);
	if (o->check)
		return zb_fail(err, ZB_E_INPUT, "--check runs one GPU (drop --gpus or --check)");
	if (o->trace)
		return zb_fail(err, ZB_E_INPUT, "--trace runs one GPU (drop --gpus or --trace)");
	return zb_nccl_load(err);
}

zb_status zb_execute_ranks(const zb_graph *g, const zb_config *c, const zb_exec_options *o, zb_exec_result *r,
			   zb_error *err)
{
	int R = g->ranks > 0 ? g->ranks : 1;
	for (int i = 0; i < R; i++)
		memset(&r[i], 0, sizeof r[i]);
	if (!zb_exec_available(err))
		return ZB_E_NOGPU;
	if (R == 1)
		return zb_execute(g, c, o, r, err);
	zb_status st = check_ranks(g, o, err);
	if (st)
		return st;
	exec_ranks s = { .n = R };
	ZB_NCCL_TRY(err, zb_nccl()->GetUniqueId(&s.id));
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);
	s.comms = zb_xcalloc((size_t)R, sizeof *s.comms);
	s.comm_state = zb_xcalloc((size_t)R, sizeof *s.comm_state);
	s.comm_mu = zb_xcalloc((size_t)R, sizeof *s.comm_mu);
	for (int i = 0; i < R; i++)
		pthread_mutex_init(&s.comm_mu[i], NULL);
	rank_arg *a = zb_xcalloc((size_t)R, sizeof *a);
	int started = 0;
	for (int i = 0; i < R; i++) {
		a[i] = (rank_arg){ .g = g, .c = c, .o = *o, .r = &r[i], .s = &s, .rank = i };
		a[i].o.stop = NULL;              /* see the top of this file */
		a[i].o.quiet = o->quiet || i > 0; /* one progress line */
		if (pthread_create(&a[i].thread, NULL, rank_main, &a[i]) != 0) {
			a[i].st = zb_fail(&a[i].err, ZB_E_INTERNAL, "cannot start the thread of rank %d", i);
			pthread_mutex_lock(&s.mu);
			s.failed = 1, s.failed_rank = i;
			pthread_cond_broadcast(&s.cv);
			pthread_mutex_unlock(&s.mu);
			break;
		}
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(a[i].thread, NULL);
	/* the rank that failed first says why; the others only say that it did */
	int who = s.failed ? s.failed_rank : -1;
	for (int i = 0; i < R && who < 0; i++)
		if (a[i].st)
			who = i;
	if (who >= 0 && a[who].st) {
		*err = a[who].err;
		st = a[who].st;
		if (strncmp(err->msg, "rank ", 5) != 0) {
			char m[sizeof err->msg];
			snprintf(m, sizeof m, "rank %d: %.480s", who, err->msg);
			memcpy(err->msg, m, sizeof m);
		}
		for (int i = 0; i < R; i++)
			zb_exec_result_free(&r[i]);
	}
	free(a);
	free(s.comms);
	free(s.comm_state);
	for (int i = 0; i < R; i++)
		pthread_mutex_destroy(&s.comm_mu[i]);
	free(s.comm_mu);
	pthread_mutex_destroy(&s.mu);
	pthread_cond_destroy(&s.cv);
	return st;
}
