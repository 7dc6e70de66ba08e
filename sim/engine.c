/*
 * engine.c - the discrete-event loop; see engine.h.
 *
 * Each resource runs its tasks one at a time in id order (a CUDA stream, a copy
 * stream, the CPU pool's queue): a task starts when it is at the head of its
 * resource's queue, the resource is idle, and all its dependencies have finished.
 * A running task is a flow (resources.h). The only event is a flow finishing;
 * whenever the set of running flows changes, every flow whose rate changed gets a
 * new completion time.
 *
 * Why it is fast (a sweep runs millions of these): at most one flow per resource
 * runs, so the pending events are one slot per resource and the next event is
 * the minimum of ZB_RES_COUNT slots (ties broken by the order the slots were
 * scheduled, exactly as a heap with sequence numbers would break them); the rates
 * depend only on which resources are busy, so they are tabulated once per
 * configuration for all 2^ZB_RES_COUNT busy sets; each task's fixed cost and work
 * are computed once per configuration (and reused by the summary); the successor
 * index depends only on the graph (zb_sim_index, shared by every configuration
 * of that graph); the loop allocates nothing. The arithmetic is the same, in the
 * same order, as the heap-based loop this replaced, so results are identical bit
 * for bit (tests/test_engine_identity.c keeps that loop as its reference).
 *
 * Cost: O(E * ZB_RES_COUNT) for E events.
 */
#include "sim/engine.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/kernels.h"
#include "sim/resources.h"

#define NONE UINT32_MAX
/* The rates depend on which resources are busy and, for two of them, on what kind
 * of task runs there (resources.c): whether the CPU runs Adam (which draws on DRAM)
 * or framework host work (a duration), and whether H2D runs a pageable upload
 * (its own rate). A task's class bits sit above the resource bits of the busy set. */
#define CLS_ADAM (1u << ZB_RES_COUNT)
#define CLS_PAGEABLE (1u << (ZB_RES_COUNT + 1))
#define NSETS (1u << (ZB_RES_COUNT + 2))

struct zb_sim_index {
	const zb_graph *g;
	unsigned long serial;  /* tells indexes apart (an address may be reused) */
	uint32_t *deps0;       /* dependencies per task */
	uint32_t *succ_begin;  /* CSR of dependents */
	uint32_t *succ;
	uint32_t *order[ZB_RES_COUNT]; /* task ids of each resource, in id order */
	size_t count[ZB_RES_COUNT];
	uint32_t *last;        /* [step * ZB_RES_COUNT + res]: its last task in that step, or NONE */
	uint8_t *res;          /* each task's resource, packed (the summary's passes read only this) */
	uint8_t *cls;          /* each task's class bits (CLS_*) */
	uint8_t *host;         /* 1: a framework host task, timed by its own duration */
	int any_host;          /* the graph has one (DeepSpeed's schedule) */
	double *tiles;         /* each GEMM's output tiles (zb_gemm_tiles), 0 otherwise; NULL
	                          without collectives (the only readers: execprofile.h comm_wait) */
	int uniform[ZB_RES_COUNT]; /* every task of the resource has the same class and none is host work */
	/* the busy sets (with class bits) this graph can reach: subsets of the resources
	 * that have tasks, a class bit only with its resource and only if a task of
	 * that class exists; and every resource alone (the summary's rates). Only
	 * these rows of the rate table are computed, compared and kept by the memo. */
	uint16_t nsets;
	uint16_t sets[NSETS];
};

/* Per thread. The work of each task depends on the graph and the GPU only (see
 * zb_task_flow: copies and CPU Adam drain bytes, GPU tasks seconds at the GPU's
 * rates), so the scratch keeps it for the last WORK_SLOTS (GPU, dtype) pairs of
 * the graph: a sweep computes it once per GPU, not for every link or core count. */
#define WORK_SLOTS 8
typedef struct work_slot {
	unsigned long serial;  /* the index it was computed for (0: none) */
	zb_gpu gpu;            /* ... and the GPU and dtype */
	int dtype;
	int framework;         /* ... and the framework profile (DeepSpeed scales its kernels) */
	zb_ds_profile ds;
	double *work;          /* per task: work to drain (zb_task_flow) */
	/* each resource's work timed alone (the summary's work_s), for the fixed
	 * cost and alone rate it was last computed with: GPU compute, most of the
	 * tasks, has the same ones for every link and core count */
	int sum_valid[ZB_RES_COUNT];
	double sum_fixed[ZB_RES_COUNT], sum_alone[ZB_RES_COUNT], sum[ZB_RES_COUNT];
} work_slot;

struct zb_sim_scratch {
	size_t cap;
	uint32_t *waiting;     /* unfinished dependencies per task */
	double *work;          /* the work of the slot in use */
	work_slot *slot;       /* the slot in use */
	work_slot slots[WORK_SLOTS];
	int next_slot;
	double *start, *end;   /* the timeline handed out in the result */
	double *times;         /* [ntasks + 1] the time of each event so far (see catch_up) */
	int memo_on, memo_n, memo_next;
	struct memo *memo;     /* [MEMO] recent results, see zb_sim_scratch_memo */
};

/* A simulation is a function of the graph, each task's work (graph, GPU, dtype),
 * each resource's fixed cost and the rate table: configurations that agree on
 * all of them bit for bit have the same result bit for bit (a sweep over core
 * counts past the point where Adam is memory-bound is the common case). */
#define MEMO 8
typedef struct memo {
	unsigned long serial;
	int dtype;
	zb_gpu gpu;
	double fixed[ZB_RES_COUNT];
	double rates[NSETS][ZB_RES_COUNT];
	zb_sim_result res;  /* start, end NULL */
} memo;

typedef struct flow {
	uint32_t task;     /* NONE when the resource is idle */
	double fixed_left; /* seconds of fixed cost still to go */
	double work_left;  /* work still to drain */
	double rate;       /* work per second now */
	double t_last;     /* time fixed_left / work_left were last brought up to date */
	size_t caught;     /* events (sim.times) already applied to fixed_left / work_left */
} flow;

typedef struct sim {
	const zb_sim_index *ix;
	const zb_config *c;
	zb_sim_result *r;
	zb_sim_scratch *w;
	size_t head[ZB_RES_COUNT];
	flow flows[ZB_RES_COUNT];
	/* each flow's completion time at its current rate, and when that was scheduled
	 * (the tie-breaker); an idle resource has +inf and UINT64_MAX (see next_event) */
	double due[ZB_RES_COUNT];
	uint64_t seq[ZB_RES_COUNT];
	unsigned busy;                     /* bit res: resource res runs a flow */
	unsigned cls;                      /* the class bits (CLS_*) of the running flows */
	unsigned left;                     /* bit res: resource res has tasks not started */
	unsigned maybe;                    /* bit res: resource res may be able to start a task */
	unsigned fresh;                    /* bit res: started since the last reschedule */
	unsigned key;                      /* busy | cls at the last reschedule */
	int nan_rates;                     /* a rate is NaN (never equal to itself) */
	double fixed[ZB_RES_COUNT];        /* fixed cost of every task of a resource */
	uint64_t next_seq;
	double now;
	double *times;                     /* the scratch's event times, [nevents] so far */
	size_t nevents;
	uint64_t events;                   /* completion times scheduled (the result's events) */
	int comm_wait;                     /* execprofile.h comm_wait applies (see comm_blocked) */
	/* rate of each resource per busy set, the rows of ix->sets only; last: the
	 * rest of the struct is cleared, not this */
	double rates[NSETS][ZB_RES_COUNT];
} sim;

static int set_reachable(const zb_sim_index *ix, unsigned set, const unsigned cls_seen[ZB_RES_COUNT])
{
	unsigned res_bits = set & ((1u << ZB_RES_COUNT) - 1);
	if (__builtin_popcount(res_bits) == 1 && !(set & ~res_bits))
		return 1; /* a resource alone, class bits clear: read by the summary even without tasks */
	for (int res = 0; res < ZB_RES_COUNT; res++)
		if (res_bits & (1u << res) && !ix->count[res])
			return 0;
	/* the class bits of the running CPU and H2D tasks */
	unsigned cpu = res_bits & (1u << ZB_RES_CPU) ? cls_seen[ZB_RES_CPU] : 1u;
	unsigned h2d = res_bits & (1u << ZB_RES_H2D) ? cls_seen[ZB_RES_H2D] : 1u;
	unsigned c = set >> ZB_RES_COUNT; /* its CLS_ADAM and CLS_PAGEABLE bits */
	return (cpu >> (c & 1u)) & 1u && (h2d >> (c & 2u)) & 1u;
}

static void reachable_sets(zb_sim_index *ix, const unsigned cls_seen[ZB_RES_COUNT])
{
	ix->nsets = 0;
	for (unsigned set = 0; set < NSETS; set++)
		if (set_reachable(ix, set, cls_seen))
			ix->sets[ix->nsets++] = (uint16_t)set;
}

zb_sim_index *zb_sim_index_new(const zb_graph *g)
{
	static unsigned long serials;
	zb_sim_index *ix = zb_xcalloc(1, sizeof *ix);
	size_t n = g->ntasks;
	ix->g = g;
	ix->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	ix->deps0 = zb_xmalloc((n ? n : 1) * sizeof *ix->deps0);
	ix->res = zb_xmalloc(n ? n : 1);
	ix->cls = zb_xmalloc(n ? n : 1);
	ix->host = zb_xmalloc(n ? n : 1);
	unsigned first_cls[ZB_RES_COUNT];
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		ix->uniform[res] = 1;
		first_cls[res] = NONE;
	}
	size_t nlast = (size_t)(g->steps > 0 ? g->steps : 1) * ZB_RES_COUNT;
	ix->last = zb_xmalloc(nlast * sizeof *ix->last);
	unsigned cls_seen[ZB_RES_COUNT] = { 0 }; /* bit c: a task of class bits c (0..3 >> ZB_RES_COUNT) */
	for (size_t i = 0; i < nlast; i++)
		ix->last[i] = NONE;
	ix->succ_begin = zb_xcalloc(n + 1, sizeof *ix->succ_begin);
	ix->succ = zb_xmalloc((g->ndeps ? g->ndeps : 1) * sizeof *ix->succ);
	for (size_t i = 0; i < n; i++) {
		const zb_task *t = &g->tasks[i];
		const uint32_t *d = zb_task_deps(g, t);
		for (uint32_t j = 0; j < t->dep_count; j++)
			ix->succ_begin[d[j] + 1]++;
		ix->count[t->resource]++;
		ix->deps0[i] = t->dep_count;
		ix->res[i] = t->resource;
		ix->cls[i] = (uint8_t)((t->kind == ZB_TASK_CPU_ADAM ? CLS_ADAM : 0) |
				       (t->op == ZB_OP_PARAM_UP_PAGEABLE ? CLS_PAGEABLE : 0));
		ix->host[i] = t->kind == ZB_TASK_HOST;
		ix->any_host |= ix->host[i];
		cls_seen[t->resource] |= 1u << (ix->cls[i] >> ZB_RES_COUNT);
		if (first_cls[t->resource] == NONE)
			first_cls[t->resource] = ix->cls[i];
		if (ix->host[i] || ix->cls[i] != first_cls[t->resource])
			ix->uniform[t->resource] = 0;
		if (t->step >= 0 && t->step < g->steps)
			ix->last[(size_t)t->step * ZB_RES_COUNT + t->resource] = (uint32_t)i;
	}
	if (ix->count[ZB_RES_COMM]) {
		ix->tiles = zb_xcalloc(n, sizeof *ix->tiles);
		for (size_t i = 0; i < n; i++)
			if (g->tasks[i].kind == ZB_TASK_GEMM)
				ix->tiles[i] = zb_gemm_tiles(g->tasks[i].m, g->tasks[i].n, g->tasks[i].batch);
	}
	reachable_sets(ix, cls_seen);
	for (size_t i = 0; i < n; i++)
		ix->succ_begin[i + 1] += ix->succ_begin[i];
	uint32_t *fill = zb_xmalloc((n + 1) * sizeof *fill);
	memcpy(fill, ix->succ_begin, (n + 1) * sizeof *fill);
	for (size_t i = 0; i < n; i++) {
		const zb_task *t = &g->tasks[i];
		const uint32_t *d = zb_task_deps(g, t);
		for (uint32_t j = 0; j < t->dep_count; j++)
			ix->succ[fill[d[j]]++] = (uint32_t)i;
	}
	free(fill);
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		ix->order[res] = zb_xmalloc((ix->count[res] ? ix->count[res] : 1) * sizeof(uint32_t));
		ix->count[res] = 0;
	}
	for (size_t i = 0; i < n; i++) {
		int res = g->tasks[i].resource;
		ix->order[res][ix->count[res]++] = (uint32_t)i;
	}
	return ix;
}

void zb_sim_index_free(zb_sim_index *ix)
{
	if (!ix)
		return;
	free(ix->deps0);
	free(ix->res);
	free(ix->cls);
	free(ix->host);
	free(ix->tiles);
	free(ix->last);
	free(ix->succ_begin);
	free(ix->succ);
	for (int res = 0; res < ZB_RES_COUNT; res++)
		free(ix->order[res]);
	free(ix);
}

zb_sim_scratch *zb_sim_scratch_new(void) { return zb_xcalloc(1, sizeof(zb_sim_scratch)); }

void zb_sim_scratch_memo(zb_sim_scratch *w, int on)
{
	w->memo_on = on;
	if (on && !w->memo)
		w->memo = zb_xcalloc(MEMO, sizeof *w->memo);
	w->memo_n = w->memo_next = 0;
}

void zb_sim_scratch_free(zb_sim_scratch *w)
{
	if (!w)
		return;
	free(w->waiting);
	for (int i = 0; i < WORK_SLOTS; i++)
		free(w->slots[i].work);
	free(w->start);
	free(w->end);
	free(w->times);
	free(w->memo);
	free(w);
}

static void scratch_reserve(zb_sim_scratch *w, size_t n)
{
	if (n <= w->cap)
		return;
	size_t cap = n + n / 4;
	w->waiting = zb_xrealloc(w->waiting, cap * sizeof *w->waiting);
	for (int i = 0; i < WORK_SLOTS; i++) {
		free(w->slots[i].work);
		w->slots[i].work = NULL;
		w->slots[i].serial = 0;
	}
	w->start = zb_xrealloc(w->start, cap * sizeof *w->start);
	w->end = zb_xrealloc(w->end, cap * sizeof *w->end);
	w->times = zb_xrealloc(w->times, (cap + 1) * sizeof *w->times);
	w->cap = cap;
}

/* What depends on the configuration but not on time, first the small part: the
 * rates of every busy set and each resource's fixed cost per task (a kernel
 * launch, a copy's latency, a dispatch to the pool: the same for each of its
 * tasks). */
static void prepare_rates(sim *s)
{
	/* zb_resource_rates looks at which entries are non-NULL, the CPU task's kind and
	 * the H2D task's op: one stand-in task per class */
	static const zb_task any = { .kind = ZB_TASK_KERNEL };
	static const zb_task adam = { .kind = ZB_TASK_CPU_ADAM, .resource = ZB_RES_CPU };
	static const zb_task host = { .kind = ZB_TASK_HOST, .resource = ZB_RES_CPU };
	static const zb_task up = { .kind = ZB_TASK_COPY, .op = ZB_OP_PARAM_UP, .resource = ZB_RES_H2D };
	static const zb_task up_pageable = { .kind = ZB_TASK_COPY, .op = ZB_OP_PARAM_UP_PAGEABLE,
					     .resource = ZB_RES_H2D };
	for (unsigned i = 0; i < s->ix->nsets; i++) {
		unsigned set = s->ix->sets[i];
		const zb_task *active[ZB_RES_COUNT];
		for (int res = 0; res < ZB_RES_COUNT; res++)
			active[res] = set & (1u << res) ? &any : NULL;
		if (active[ZB_RES_CPU])
			active[ZB_RES_CPU] = set & CLS_ADAM ? &adam : &host;
		if (active[ZB_RES_H2D])
			active[ZB_RES_H2D] = set & CLS_PAGEABLE ? &up_pageable : &up;
		zb_resource_rates(s->c, active, s->rates[set]);
		for (int res = 0; res < ZB_RES_COUNT; res++) /* only a busy resource's rate is compared */
			s->nan_rates |= s->ix->count[res] && isnan(s->rates[set][res]);
	}
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		zb_task probe = { .kind = ZB_TASK_KERNEL, .resource = (uint8_t)res };
		double work;
		zb_task_flow(&probe, s->c, &s->fixed[res], &work);
	}
}

/* ... then the per-task part: dependency counters, and each task's work unless
 * the scratch has it for this graph, GPU and dtype. */
static void prepare_tasks(sim *s)
{
	const zb_sim_index *ix = s->ix;
	const zb_graph *g = ix->g;
	zb_sim_scratch *w = s->w;
	if (g->ntasks) /* an empty graph has no arrays (memcpy from NULL is undefined) */
		memcpy(w->waiting, ix->deps0, g->ntasks * sizeof *w->waiting);
	const zb_gpu *gpu = &s->c->hw.gpu;
	int dtype = (int)s->c->policy.dtype;
	int fw = (int)s->c->framework;
	const zb_ds_profile *ds = &s->c->hw.ds;
	for (int i = 0; i < WORK_SLOTS; i++) {
		work_slot *k = &w->slots[i];
		if (k->serial == ix->serial && k->dtype == dtype && !memcmp(&k->gpu, gpu, sizeof *gpu) &&
		    k->framework == fw && (fw == ZB_FW_ZBENCH || !memcmp(&k->ds, ds, sizeof *ds))) {
			w->work = k->work;
			w->slot = k;
			return;
		}
	}
	work_slot *k = &w->slots[w->next_slot];
	w->next_slot = (w->next_slot + 1) % WORK_SLOTS;
	if (!k->work)
		k->work = zb_xmalloc((w->cap ? w->cap : 1) * sizeof *k->work);
	for (size_t i = 0; i < g->ntasks; i++) {
		double fixed;
		zb_task_flow(&g->tasks[i], s->c, &fixed, &k->work[i]);
	}
	k->serial = ix->serial;
	k->dtype = dtype;
	memcpy(&k->gpu, gpu, sizeof *gpu);
	k->framework = fw;
	memcpy(&k->ds, ds, sizeof *ds);
	memset(k->sum_valid, 0, sizeof k->sum_valid);
	w->work = k->work;
	w->slot = k;
}

/* the rows of the sets the graph can reach (the others are never computed) */
static int same_rates(const sim *s, const memo *m)
{
	for (unsigned i = 0; i < s->ix->nsets; i++) {
		unsigned set = s->ix->sets[i];
		if (memcmp(m->rates[set], s->rates[set], sizeof m->rates[set]))
			return 0;
	}
	return 1;
}

static memo *memo_find(const sim *s)
{
	const zb_sim_scratch *w = s->w;
	for (int i = 0; i < w->memo_n; i++) {
		memo *m = &w->memo[i];
		if (m->serial == s->ix->serial && m->dtype == (int)s->c->policy.dtype &&
		    !memcmp(m->fixed, s->fixed, sizeof m->fixed) && same_rates(s, m) &&
		    !memcmp(&m->gpu, &s->c->hw.gpu, sizeof m->gpu))
			return m;
	}
	return NULL;
}

static void memo_add(const sim *s)
{
	zb_sim_scratch *w = s->w;
	memo *m = &w->memo[w->memo_next];
	w->memo_next = (w->memo_next + 1) % MEMO;
	if (w->memo_n < MEMO)
		w->memo_n++;
	m->serial = s->ix->serial;
	m->dtype = (int)s->c->policy.dtype;
	m->gpu = s->c->hw.gpu;
	memcpy(m->fixed, s->fixed, sizeof m->fixed);
	for (unsigned i = 0; i < s->ix->nsets; i++)
		memcpy(m->rates[s->ix->sets[i]], s->rates[s->ix->sets[i]], sizeof m->rates[0]);
	m->res = *s->r;
	m->res.start = m->res.end = NULL;
}

static void advance(flow *f, double now)
{
	double dt = now - f->t_last;
	if (dt > 0) {
		if (f->fixed_left >= dt) {
			f->fixed_left -= dt;
		} else {
			f->work_left -= (dt - f->fixed_left) * f->rate;
			f->fixed_left = 0;
			if (f->work_left < 0)
				f->work_left = 0;
		}
	}
	f->t_last = now;
}

/* A flow's fixed_left and work_left are brought up to date at every event, one
 * advance() per event, and read only when its rate changes. So they are brought
 * up to date only then: the same advance() calls, on the same event times, in the
 * same order (the times are logged), hence the same values to the bit; a flow
 * that keeps its rate until it finishes (most do) costs nothing per event. */
static void catch_up(sim *s, flow *f)
{
	for (size_t k = f->caught; k < s->nevents; k++)
		advance(f, s->times[k]);
	f->caught = s->nevents;
}

#define EACH(res, mask) for (unsigned m_ = (mask), res; m_ && (res = (unsigned)__builtin_ctz(m_), 1); m_ &= m_ - 1)

/* Start every task that can start now: an idle resource with tasks left whose
 * next task has no unfinished dependency. Only resources in `maybe` can have one
 * (the resource that just finished, those with a task whose last dependency just
 * finished): every other idle resource was already blocked before this event. */
/* A framework host task's duration (its fixed cost; it has no work). */
static double host_s(const sim *s, uint32_t id)
{
	double fixed, work;
	zb_task_flow(&s->ix->g->tasks[id], s->c, &fixed, &work);
	return fixed;
}

/* execprofile.h comm_wait: the seconds a collective starting now waits before it makes
 * progress. The block scheduler dispatches the running GEMM's blocks first; once its
 * last wave is dispatched, the SMs its finished blocks free go to the collective. So
 * the wait is the GEMM's time left less one wave (its duration at its rate now over
 * ceil(tiles / SMs) waves). A GEMM that starts at this very event, as the collective
 * becomes ready, does not hold it: both are launched together, and the measured
 * collective ran beside it. */
static double comm_blocked(const sim *s)
{
	if (!s->comm_wait || !(s->busy & (1u << ZB_RES_GPU)))
		return 0;
	uint32_t g = s->flows[ZB_RES_GPU].task;
	double t0 = s->w->start[g], tiles = s->ix->tiles[g];
	const zb_gpu *gpu = &s->c->hw.gpu;
	if (t0 >= s->now || !zb_gemm_fills(gpu, tiles))
		return 0;
	double waves = ceil(tiles / gpu->sms), wave = (s->due[ZB_RES_GPU] - t0) / waves;
	double left = s->due[ZB_RES_GPU] - s->now - wave;
	return left > 0 && isfinite(left) ? left : 0;
}

static inline __attribute__((always_inline)) void start_ready(sim *s)
{
	const zb_sim_index *ix = s->ix;
	zb_sim_scratch *w = s->w;
	unsigned maybe = s->maybe;
	s->maybe = 0;
	EACH(res, maybe & s->left & ~s->busy) {
		uint32_t id = ix->order[res][s->head[res]];
		if (w->waiting[id])
			continue;
		flow *f = &s->flows[res];
		f->fixed_left = ix->any_host && ix->host[id] ? host_s(s, id) : s->fixed[res];
		if (res == ZB_RES_COMM)
			f->fixed_left += comm_blocked(s);
		f->work_left = w->work[id];
		s->cls |= ix->cls[id];
		f->task = id;
		f->rate = -1; /* forces a completion time below */
		f->t_last = s->now;
		f->caught = s->nevents;
		w->start[id] = s->now;
		s->busy |= 1u << res;
		s->fresh |= 1u << res;
	}
}

/* New completion times for the flows whose rate changed with the busy set, in
 * resource order (the order gives the tie-breaking sequence numbers). After an
 * event that left the busy set and classes as they were (a stream's next task
 * started as its last one ended, the common case), every running flow already
 * has its rate from this set's row: only the flows just started can change. */
static inline __attribute__((always_inline)) void reschedule(sim *s)
{
	unsigned key = s->busy | s->cls;
	unsigned todo = key == s->key && !s->nan_rates ? s->fresh : s->busy;
	s->key = key;
	s->fresh = 0;
	const double *rate = s->rates[key];
	EACH(res, todo) {
		flow *f = &s->flows[res];
		if (f->rate == rate[res])
			continue;
		if (f->caught != s->nevents) /* not a flow started at this event */
			catch_up(s, f);
		f->rate = rate[res];
		s->due[res] = s->now + f->fixed_left + (f->work_left > 0 ? f->work_left / f->rate : 0);
		s->seq[res] = s->next_seq++;
		s->events++;
	}
}

/* The busy resource whose flow completes first (-1: none busy): the earliest
 * completion time, ties to the earliest scheduled. */
static inline __attribute__((always_inline)) int next_event(const sim *s)
{
	int best = -1;
	EACH(res, s->busy) {
		if (best < 0 || s->due[res] < s->due[best] || (s->due[res] == s->due[best] && s->seq[res] < s->seq[best]))
			best = (int)res;
	}
	return best;
}

static inline __attribute__((always_inline)) void finish(sim *s, int res)
{
	const zb_sim_index *ix = s->ix;
	flow *f = &s->flows[res];
	uint32_t id = f->task;
	s->w->end[id] = s->now;
	f->task = NONE;
	s->due[res] = INFINITY;
	s->seq[res] = UINT64_MAX;
	s->busy &= ~(1u << res);
	s->cls &= ~(unsigned)ix->cls[id];
	if (++s->head[res] == ix->count[res])
		s->left &= ~(1u << res);
	uint32_t *waiting = s->w->waiting;
	unsigned maybe = 1u << res;
	for (uint32_t i = ix->succ_begin[id]; i < ix->succ_begin[id + 1]; i++) {
		uint32_t t = ix->succ[i];
		if (--waiting[t] == 0)
			maybe |= 1u << ix->res[t];
	}
	s->maybe |= maybe;
}

/* Step s ends when its last GPU compute task ends: every step's boundary is then
 * the same kind of point, including the last one (a delayed parameter upload of
 * the last step has no next step to wait for, so ending steps at their last task
 * would make the last step look short). The first steps fill the pipeline (dpu
 * lets the GPU run up to two steps ahead of the CPU), so the steady state is
 * measured from the end of step `warm` to the end of the last step.
 *
 * GPU boundaries alone are not enough: with dpu and a CPU slower than the GPU, the
 * GPU spends the first steps using up its slack (the CPU falls further behind
 * each step until step s+2 has to wait for step s's update), and a short run
 * would report the GPU's pace, which cannot be sustained (gpt2-large, gen4, dpu,
 * ratio 0.6: 95 ms per step over 6 steps although the CPU's work alone is 106 ms
 * per step; the steady state is 108 ms). So the step time is the slowest pace of
 * any resource, each measured between the ends of its last tasks of two steps.
 * The other resources are measured one step earlier, up to the end of step N-2:
 * the last step's optimizer work is not steady (the final delayed uploads have
 * no next step to wait for and contend with the last CPU updates). Measured that
 * way against the pace of steps 50..99 of a 100-step run, over gpt2-large and
 * gpt2-xl x gen3..gen6 x every policy x ratios 0..1 x gas 1, 2, a 6-step run is
 * within 0.3% (the GPU alone: up to 12% fast, 7 of 304 below the busiest
 * resource's work). */
static int warm_steps(int steps) { return steps >= 4 ? 2 : steps - 2 > 0 ? steps - 2 : 0; }

static double *step_ends(const zb_graph *g, const double *end)
{
	double *b = zb_xcalloc((size_t)g->steps, sizeof *b);
	for (size_t i = 0; i < g->ntasks; i++) {
		int s = g->tasks[i].step;
		if (g->tasks[i].resource == ZB_RES_GPU && s >= 0 && s < g->steps && end[i] > b[s])
			b[s] = end[i];
	}
	return b;
}

void zb_step_boundaries(const zb_graph *g, const double *end, double *out)
{
	double *b = step_ends(g, end);
	memcpy(out, b, (size_t)g->steps * sizeof *out);
	free(b);
}

double zb_step_time_window(const zb_graph *g, const double *end, int warm)
{
	if (g->steps < 1 || g->ntasks == 0)
		return 0;
	if (warm > g->steps - 2)
		warm = g->steps - 2;
	if (warm < 0)
		warm = 0;
	double *b = step_ends(g, end);
	double step = g->steps == 1 ? b[0] : (b[g->steps - 1] - b[warm]) / (g->steps - 1 - warm);
	free(b);
	/* the other resources' pace from step `first` to step N-2 (see above) */
	int last = g->steps - 2, first = warm < last - 1 ? warm : last - 1;
	if (first < 0)
		return step;
	double lo[ZB_RES_COUNT], hi[ZB_RES_COUNT];
	for (int res = 0; res < ZB_RES_COUNT; res++)
		lo[res] = hi[res] = -1;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->step == first && end[i] > lo[t->resource])
			lo[t->resource] = end[i];
		if (t->step == last && end[i] > hi[t->resource])
			hi[t->resource] = end[i];
	}
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		if (res == ZB_RES_GPU || lo[res] < 0 || hi[res] < 0)
			continue; /* no task of this resource in one of the two steps (or not run) */
		double pace = (hi[res] - lo[res]) / (last - first);
		if (pace > step)
			step = pace;
	}
	return step;
}

int zb_settle_step(const zb_graph *g, const double *end, double tol)
{
	int n = g->steps;
	if (n < 3)
		return 0;
	double *b = step_ends(g, end);
	double pace = (b[n - 1] - b[n - 3]) / 2;
	int s = n - 1;
	while (s > 0 && fabs((b[s - 1] - (s >= 2 ? b[s - 2] : 0)) / pace - 1) <= tol)
		s--;
	free(b);
	return s;
}

double zb_steady_step_time(const zb_graph *g, const double *end)
{
	return zb_step_time_window(g, end, warm_steps(g->steps));
}

void zb_busy_window(const zb_graph *g, const double *start, const double *end, int warm,
		    double busy[ZB_RES_COUNT])
{
	int N = g->steps;
	double lo = 0, hi = 0;
	int per = 1;
	for (int res = 0; res < ZB_RES_COUNT; res++)
		busy[res] = 0;
	if (N > 1) {
		double *b = step_ends(g, end);
		int w = warm < 0 ? warm_steps(N) : warm > N - 2 ? N - 2 : warm;
		lo = b[w];
		hi = b[N - 1];
		per = N - 1 - w;
		free(b);
	} else {
		for (size_t i = 0; i < g->ntasks; i++)
			if (end[i] > hi)
				hi = end[i];
	}
	for (size_t i = 0; i < g->ntasks; i++) {
		if (start[i] < 0)
			continue; /* not run */
		double a = start[i] > lo ? start[i] : lo;
		double e = end[i] < hi ? end[i] : hi;
		if (e > a)
			busy[g->tasks[i].resource] += (e - a) / per;
	}
}

/* The steady-state figures of zb_steady_step_time and zb_busy_window (warm -1),
 * computed from the index: a resource runs its tasks one after another, so the
 * latest end among a resource's tasks of one step is the end of its last such
 * task, and the per-step scans over every task become lookups. Same operations
 * on the same values as those functions, so the same results to the bit. */
static double last_end(const zb_sim_index *ix, const double *end, int step, int res, double none)
{
	uint32_t id = ix->last[(size_t)step * ZB_RES_COUNT + res];
	return id == NONE || !(end[id] > none) ? none : end[id];
}

static double steady_step(const zb_sim_index *ix, const double *end)
{
	const zb_graph *g = ix->g;
	int N = g->steps, warm = warm_steps(N);
	if (N < 1 || g->ntasks == 0)
		return 0;
	if (warm > N - 2)
		warm = N - 2;
	if (warm < 0)
		warm = 0;
	double step = N == 1 ? last_end(ix, end, 0, ZB_RES_GPU, 0)
			     : (last_end(ix, end, N - 1, ZB_RES_GPU, 0) - last_end(ix, end, warm, ZB_RES_GPU, 0)) /
				       (N - 1 - warm);
	int last = N - 2, first = warm < last - 1 ? warm : last - 1;
	if (first < 0)
		return step;
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		double lo = last_end(ix, end, first, res, -1), hi = last_end(ix, end, last, res, -1);
		if (res == ZB_RES_GPU || lo < 0 || hi < 0)
			continue;
		double pace = (hi - lo) / (last - first);
		if (pace > step)
			step = pace;
	}
	return step;
}

static void busy_window(const zb_sim_index *ix, const double *start, const double *end, double busy[ZB_RES_COUNT])
{
	const zb_graph *g = ix->g;
	int N = g->steps;
	double lo = 0, hi = 0;
	int per = 1;
	for (int res = 0; res < ZB_RES_COUNT; res++)
		busy[res] = 0;
	if (N > 1) {
		int w = warm_steps(N);
		lo = last_end(ix, end, w, ZB_RES_GPU, 0);
		hi = last_end(ix, end, N - 1, ZB_RES_GPU, 0);
		per = N - 1 - w;
	} else {
		for (size_t i = 0; i < g->ntasks; i++)
			if (end[i] > hi)
				hi = end[i];
	}
	double sum[ZB_RES_COUNT] = { 0 }; /* in registers, added in the same order */
	for (size_t i = 0; i < g->ntasks; i++) {
		if (start[i] < 0)
			continue; /* not run */
		double a = start[i] > lo ? start[i] : lo;
		double e = end[i] < hi ? end[i] : hi;
		if (e > a)
			sum[ix->res[i]] += (e - a) / per;
	}
	for (int res = 0; res < ZB_RES_COUNT; res++)
		busy[res] = sum[res];
}

/* A resource's work per step, each task timed alone at its class's rate (in id
 * order, as one pass over every task would add them). */
static double mixed_work(const sim *s, int res, int N)
{
	const zb_sim_index *ix = s->ix;
	const double *work = s->w->work;
	double sum = 0;
	for (size_t j = 0; j < ix->count[res]; j++) {
		uint32_t id = ix->order[res][j];
		double alone = s->rates[(1u << res) | ix->cls[id]][res];
		double fixed = ix->host[id] ? host_s(s, id) : s->fixed[res];
		sum += (fixed + (work[id] > 0 ? work[id] / alone : 0)) / N;
	}
	return sum;
}

static void summarize(sim *s)
{
	const zb_graph *g = s->ix->g;
	zb_sim_result *r = s->r;
	int N = g->steps;
	/* the figures of sim/summary.h (zb_step_summarize), from the index: same values to the bit */
	r->step_time_s = steady_step(s->ix, r->end);
	r->tokens_per_s = r->step_time_s > 0 ? g->tokens_per_step / r->step_time_s : 0;
	r->tflops_per_gpu = r->step_time_s > 0 ? g->model_flops_per_step / r->step_time_s / 1e12 : 0;

	busy_window(s->ix, r->start, r->end, r->busy_s);
	/* each task's time alone: its resource's rate when only that resource is busy */
	const double *work = s->w->work;
	work_slot *k = s->w->slot;
	const zb_sim_index *ix = s->ix;
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		if (!ix->uniform[res]) { /* classes differ or host work: each task its own */
			r->work_s[res] = mixed_work(s, res, N);
			continue;
		}
		unsigned cls = ix->count[res] ? ix->cls[ix->order[res][0]] : 0;
		double alone = s->rates[(1u << res) | cls][res], fixed = s->fixed[res];
		if (!k->sum_valid[res] || k->sum_fixed[res] != fixed || k->sum_alone[res] != alone) {
			/* in id order, as one pass over every task would add them */
			const uint32_t *ids = s->ix->order[res];
			double sum = 0;
			for (size_t j = 0; j < s->ix->count[res]; j++) {
				double wk = work[ids[j]];
				sum += (fixed + (wk > 0 ? wk / alone : 0)) / N;
			}
			k->sum_valid[res] = 1;
			k->sum_fixed[res] = fixed;
			k->sum_alone[res] = alone;
			k->sum[res] = sum;
		}
		r->work_s[res] = k->sum[res];
	}
	r->lower_bound_s = 0;
	r->bottleneck = ZB_RES_GPU;
	r->bound_resource = ZB_RES_GPU;
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		if (r->work_s[res] > r->lower_bound_s) {
			r->lower_bound_s = r->work_s[res];
			r->bound_resource = (zb_resource)res;
		}
		if (r->busy_s[res] > r->busy_s[r->bottleneck])
			r->bottleneck = (zb_resource)res;
	}
}

zb_status zb_simulate_indexed(const zb_sim_index *ix, zb_sim_scratch *w, const zb_config *c,
			      zb_sim_result *r, zb_error *err)
{
	const zb_graph *g = ix->g;
	memset(r, 0, sizeof *r);
	r->ntasks = g->ntasks;
	scratch_reserve(w, g->ntasks);
	r->start = w->start;
	r->end = w->end;

	sim s;
	memset(&s, 0, offsetof(sim, rates));
	s.ix = ix;
	s.c = c;
	s.r = r;
	s.w = w;
	for (int res = 0; res < ZB_RES_COUNT; res++) {
		s.flows[res].task = NONE;
		s.due[res] = INFINITY;
		s.seq[res] = UINT64_MAX;
		if (ix->count[res])
			s.left |= 1u << res;
	}
	s.maybe = s.left;
	s.key = ~0u;
	s.times = w->times;
	prepare_rates(&s);
	if (ix->tiles && c->framework == ZB_FW_ZBENCH) {
		zb_exec_profile scratch;
		s.comm_wait = zb_exec_profile_of(&c->hw.gpu.exec, &scratch)->comm_wait > 0;
	}
	/* host durations come from the framework profile, which the memo does not key on */
	int memo_on = w->memo_on && c->framework == ZB_FW_ZBENCH;
	if (memo_on) {
		const memo *m = memo_find(&s);
		if (m) {
			*r = m->res;
			return ZB_OK;
		}
	}
	prepare_tasks(&s);

	size_t done = 0;
	start_ready(&s);
	reschedule(&s);
	for (int res; (res = next_event(&s)) >= 0;) {
		s.now = s.due[res];
		s.times[s.nevents++] = s.now; /* advances every other busy flow (catch_up) */
		finish(&s, res);
		done++;
		start_ready(&s);
		reschedule(&s);
	}
	r->events = s.events;
	r->total_s = s.now;
	if (done != g->ntasks) {
		r->start = r->end = NULL;
		return zb_fail(err, ZB_E_INTERNAL, "simulation stalled after %zu of %zu tasks", done,
			       g->ntasks);
	}
	summarize(&s);
	if (memo_on)
		memo_add(&s);
	return ZB_OK;
}

zb_status zb_simulate(const zb_graph *g, const zb_config *c, zb_sim_result *r, zb_error *err)
{
	zb_sim_index *ix = zb_sim_index_new(g);
	zb_sim_scratch *w = zb_sim_scratch_new();
	zb_status st = zb_simulate_indexed(ix, w, c, r, err);
	if (!st) { /* the result owns its timeline: take the scratch's arrays */
		w->start = w->end = NULL;
		w->cap = 0;
	}
	zb_sim_scratch_free(w);
	zb_sim_index_free(ix);
	return st;
}

void zb_sim_result_free(zb_sim_result *r)
{
	free(r->start);
	free(r->end);
	r->start = r->end = NULL;
}
