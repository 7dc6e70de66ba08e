/*
 * sweep.c - the grid, the check pass, and the threads of `zbench sweep`; see
 * sweep.h.
 *
 * Threads: the rows are cut into items (at most ITEM_ROWS rows of one schedule).
 * Workers take items in order and fill the item's slot in a ring of 4 per
 * thread; the calling thread empties the slots in item order, so rows come out
 * in the same order whatever the number of threads, and at most the ring's rows
 * are held at once. Each worker keeps the last graph it built (with its successor
 * index) and a scratch timeline, so a worker allocates per schedule, not per row.
 */
#include "sim/sweep.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inputs/config_text.h"
#include "sim/predict.h"

#define ITEM_ROWS 256
#define SLOTS_PER_JOB 4

/* ---- the grid --------------------------------------------------------------- */

static int hw_axis(int a)
{
	return a == ZB_AX_HW || a == ZB_AX_PCIE || a == ZB_AX_GPU || a == ZB_AX_CPU || a == ZB_AX_CORES ||
	       a == ZB_AX_GPUS_PER_LINK || a == ZB_AX_HOST_MEM || a == ZB_AX_DRAM_BW || a == ZB_AX_CPU_ADAM ||
	       a == ZB_AX_PRICE;
}

zb_status zb_sweep_grid_init(zb_sweep_grid *g, const zb_config_inputs *in, int shard_k, int shard_n, int yes,
			     zb_error *err)
{
	memset(g, 0, sizeof *g);
	g->in = *in;
	int k = 0;
	for (int pass = 0; pass < 2; pass++) /* schedule axes first, hardware axes fastest */
		for (int a = 0; a < ZB_AX_COUNT; a++)
			if (hw_axis(a) == pass)
				g->order[k++] = a;
	g->total = 1;
	g->hw_rows = 1;
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		g->n[a] = 1;
		if (!in->value[a])
			continue;
		g->n[a] = zb_axis_values(in->value[a], (zb_axis)a, &g->vals[a], &g->storage[a], err);
		if (g->n[a] < 0) {
			g->n[a] = 1;
			zb_sweep_grid_free(g);
			return err->status;
		}
		if (g->total > (1LL << 53) / g->n[a]) {
			zb_sweep_grid_free(g);
			return zb_fail(err, ZB_E_INPUT, "sweep of more than 2^53 configurations (%s has %d values)",
				       zb_axis_flag((zb_axis)a), g->n[a]);
		}
		g->total *= g->n[a];
		if (hw_axis(a))
			g->hw_rows *= g->n[a];
	}
	if (g->total > ZB_SWEEP_LIMIT && !yes) {
		long long n = g->total;
		zb_sweep_grid_free(g);
		return zb_fail(err, ZB_E_INPUT,
			       "sweep of %lld configurations is larger than %lld: give --yes to run it"
			       " (--shard K/N splits it over jobs)", n, ZB_SWEEP_LIMIT);
	}
	g->first = 0;
	g->end = g->total;
	if (shard_n > 0) {
		g->first = (long long)((__int128)g->total * (shard_k - 1) / shard_n);
		g->end = (long long)((__int128)g->total * shard_k / shard_n);
	}
	return ZB_OK;
}

void zb_sweep_grid_free(zb_sweep_grid *g)
{
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		free(g->vals[a]);
		free(g->storage[a]);
		g->vals[a] = NULL;
		g->storage[a] = NULL;
	}
}

/* The axis values of row r, and whether the row repeats another: the ratio means
 * nothing without offload, so 'none' has one row, at the first ratio. */
static void row_values(const zb_sweep_grid *g, long long r, const char *v[ZB_AX_COUNT], int idx[ZB_AX_COUNT])
{
	for (int i = ZB_AX_COUNT - 1; i >= 0; i--) {
		int a = g->order[i];
		idx[a] = (int)(r % g->n[a]);
		r /= g->n[a];
		v[a] = g->vals[a] ? g->vals[a][idx[a]] : NULL;
	}
}

static int repeated(const zb_sweep_grid *g, const zb_config *c, const int idx[ZB_AX_COUNT])
{
	return c->policy.kind == ZB_POLICY_NONE && g->vals[ZB_AX_RATIO] && idx[ZB_AX_RATIO] > 0;
}

/* Row r's configuration; 1 when it is a row of the sweep, 0 when it repeats one,
 * -1 with err on a bad value. */
static int row_config(const zb_sweep_grid *g, long long r, zb_config *c, zb_sources *src, zb_error *err)
{
	zb_config_inputs in = g->in;
	int idx[ZB_AX_COUNT];
	row_values(g, r, in.value, idx);
	if (zb_config_resolve(&in, c, src, err))
		return -1;
	return !repeated(g, c, idx);
}

zb_status zb_sweep_check(const zb_sweep_grid *g, long long *rows, zb_config *first, zb_sources *src,
			 zb_error *err)
{
	*rows = 0;
	for (long long r = g->first; r < g->end; r++) {
		zb_config c;
		int use = row_config(g, r, &c, r == g->first ? src : NULL, err);
		if (use < 0)
			return err->status;
		if (!use)
			continue;
		zb_status st = zb_graph_validate(&c, err);
		if (st)
			return st;
		if (*rows == 0 && first)
			*first = c;
		(*rows)++;
	}
	return ZB_OK;
}

/* ---- one row ------------------------------------------------------------------ */

/* One schedule kept between rows: the graph, its successor index, what it was built for. */
typedef struct sched {
	zb_graph graph;
	int have_graph;
	zb_config key;
	zb_sim_index *ix;
} sched;

typedef struct worker {
	sched main, alt;        /* the row's schedule, and the other framework's (opts.both) */
	zb_sim_scratch *scratch, *alt_scratch; /* each its own memo (engine.h) */
	zb_config_text *text;
} worker;

/* Whether a and b have the same schedule: the graph depends on the model, the
 * policy and the steps only. Compared field by field (padding may differ). */
static int same_schedule(const zb_config *a, const zb_config *b)
{
	const zb_model *ma = &a->model, *mb = &b->model;
	const zb_policy *pa = &a->policy, *pb = &b->policy;
	return a->steps == b->steps && !memcmp(&ma->layers, &mb->layers, sizeof *ma - offsetof(zb_model, layers)) &&
	       pa->kind == pb->kind && pa->ratio == pb->ratio && pa->offload_param == pb->offload_param &&
	       pa->prefetch_layers == pb->prefetch_layers && pa->ckpt == pb->ckpt && pa->gas == pb->gas &&
	       pa->micro_batch == pb->micro_batch && pa->seq == pb->seq && pa->dtype == pb->dtype &&
	       pa->pageable == pb->pageable && pa->bucket_params == pb->bucket_params &&
	       pa->cpu_threads == pb->cpu_threads && pa->gpus == pb->gpus && pa->nodes == pb->nodes &&
	       pa->zero_stage == pb->zero_stage && a->framework == b->framework;
}

static void worker_init(worker *w, int timeline)
{
	memset(w, 0, sizeof *w);
	w->scratch = zb_sim_scratch_new();
	zb_sim_scratch_memo(w->scratch, !timeline);
	w->alt_scratch = zb_sim_scratch_new();
	zb_sim_scratch_memo(w->alt_scratch, 1);
	w->text = zb_config_text_new();
}

static void sched_drop(sched *k)
{
	if (!k->have_graph)
		return;
	zb_sim_index_free(k->ix);
	zb_graph_free(&k->graph);
	k->ix = NULL;
	k->have_graph = 0;
}

/* The schedule of c in k, built when k holds another. */
static zb_status sched_get(sched *k, const zb_config *c, zb_error *err)
{
	if (k->have_graph && same_schedule(&k->key, c))
		return ZB_OK;
	sched_drop(k);
	zb_status st = zb_graph_build(&k->graph, c, err);
	if (st)
		return st;
	k->have_graph = 1;
	k->key = *c;
	k->ix = zb_sim_index_new(&k->graph);
	return ZB_OK;
}

static void worker_free(worker *w)
{
	sched_drop(&w->main);
	sched_drop(&w->alt);
	zb_sim_scratch_free(w->scratch);
	zb_sim_scratch_free(w->alt_scratch);
	zb_config_text_free(w->text);
}

static void row_clear(zb_sweep_row *row)
{
	free(row->config_json);
	free(row->pred_json);
	row->config_json = row->pred_json = NULL;
}

/* DeepSpeed at long gas (predict.h's shortcut): three short schedules simulated on
 * their own instead of one of every micro-step shared across machines, which would be
 * about gas/5 times larger. res gets the figures (no per-task times), head (may be
 * NULL) the graph's summary without its tasks. */
static zb_status predict_summary(const zb_config *c, zb_sim_result *res, zb_graph *head, int *simulated,
				 zb_error *err)
{
	zb_prediction p;
	zb_status st = zb_predict(&p, c, err);
	*simulated = !st && p.simulated;
	if (*simulated) {
		*res = p.res;
		res->start = res->end = NULL;
		if (head) {
			*head = p.graph;
			head->tasks = NULL;
			head->deps = NULL;
			head->buckets = NULL;
		}
	}
	zb_prediction_free(&p);
	return st;
}

/* Row r under the other framework's schedule into row->alt_*: resolved again with
 * --framework set, so DeepSpeed's own rules (ZeRO-3 sub-groups for a ratio) apply. A
 * configuration that schedule cannot run (dpu under DeepSpeed) is state 3, not an error. */
static int alt_run(worker *w, const zb_sweep_grid *g, long long r, zb_sweep_row *row, zb_error *err)
{
	zb_config_inputs in = g->in;
	int idx[ZB_AX_COUNT];
	row_values(g, r, in.value, idx);
	in.value[ZB_AX_FRAMEWORK] = row->cfg.framework == ZB_FW_DEEPSPEED ? "zbench" : "deepspeed";
	zb_error e;
	row->alt_state = 3;
	if (zb_config_resolve(&in, &row->alt_cfg, NULL, &e) || zb_graph_validate(&row->alt_cfg, &e))
		return 0;
	zb_memory_estimate(&row->alt_cfg, &row->alt_mem);
	row->alt_state = 2;
	if (!row->alt_mem.fits)
		return 0;
	row->alt_state = 3;
	if (zb_predict_shortcut(&row->alt_cfg)) {
		int simulated;
		if (predict_summary(&row->alt_cfg, &row->alt_res, NULL, &simulated, &e))
			return e.status == ZB_E_INPUT ? 0 : (*err = e, -1);
		row->alt_state = simulated ? 1 : 3;
		return 0;
	}
	if (sched_get(&w->alt, &row->alt_cfg, &e)) /* the builder refuses what its framework cannot run */
		return e.status == ZB_E_INPUT ? 0 : (*err = e, -1);
	/* a grid of one machine per schedule shares one scratch: one schedule's memory at a time */
	zb_sim_scratch *sc = g->hw_rows == 1 ? w->scratch : w->alt_scratch;
	if (zb_simulate_indexed(w->alt.ix, sc, &row->alt_cfg, &row->alt_res, err))
		return -1;
	row->alt_res.start = row->alt_res.end = NULL;
	row->alt_state = 1;
	return 0;
}

/* Simulate row r into *row; 0 when r repeats another row (nothing filled). The
 * memory check comes first: a configuration that does not fit is reported
 * without building its graph. */
static int row_run(worker *w, const zb_sweep_grid *g, const zb_sweep_opts *so, long long r, zb_sweep_row *row,
		   zb_error *err)
{
	memset(row, 0, sizeof *row);
	int use = row_config(g, r, &row->cfg, NULL, err);
	if (use <= 0)
		return use;
	zb_memory_estimate(&row->cfg, &row->mem);
	if (row->mem.fits && !so->timeline && zb_predict_shortcut(&row->cfg)) {
		if (predict_summary(&row->cfg, &row->res, &row->head, &row->simulated, err))
			return -1;
	} else if (row->mem.fits) {
		if (sched_get(&w->main, &row->cfg, err))
			return -1;
		if (zb_simulate_indexed(w->main.ix, w->scratch, &row->cfg, &row->res, err))
			return -1;
		row->simulated = 1;
		row->head = w->main.graph;
		row->head.tasks = NULL;
		row->head.deps = NULL;
		row->head.buckets = NULL;
		if (so->timeline) {
			row->graph = &w->main.graph;
		} else {
			row->res.start = row->res.end = NULL;
		}
	}
	if (so->both) {
		/* no other machine shares the schedule: one schedule at a time, as without both */
		if (g->hw_rows == 1)
			sched_drop(&w->main);
		if (alt_run(w, g, r, row, err) < 0)
			return -1;
		if (g->hw_rows == 1)
			sched_drop(&w->alt);
	}
	if (so->config_json)
		row->config_json = strdup(zb_config_text_get(w->text, &row->cfg, (long)(r % g->hw_rows)));
	if (so->pred_json)
		row->pred_json = so->pred_json(row);
	if ((so->config_json && !row->config_json) || (so->pred_json && !row->pred_json)) {
		row_clear(row);
		return zb_fail(err, ZB_E_NOMEM, "out of memory formatting configuration %lld", r), -1;
	}
	return 1;
}

/* ---- progress ------------------------------------------------------------------ */

typedef struct progress {
	FILE *f;            /* NULL: no progress line */
	int shown;
	double t0, last;
	long long total;
} progress;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress_tick(progress *p, long long done)
{
	if (!p->f || (done & 63))
		return;
	double t = now_s();
	if (t - p->t0 < 2.0 || t - p->last < 0.25)
		return;
	p->last = t;
	p->shown = 1;
	double rate = done / (t - p->t0);
	double eta = rate > 0 ? (p->total - done) / rate : 0;
	fprintf(p->f, "\rsweep: %lld/%lld configurations, %.0f/s, ETA %dm%02ds  ", done, p->total, rate,
		(int)(eta / 60), (int)eta % 60);
}

static void progress_end(progress *p)
{
	if (p->shown)
		fprintf(p->f, "\r\033[K");
}

/* ---- one thread ------------------------------------------------------------------ */

static zb_status run_serial(const zb_sweep_grid *g, const zb_sweep_opts *so, zb_sweep_emit_fn emit, void *ctx,
			    volatile sig_atomic_t *stop, long long *done, progress *pr, zb_error *err)
{
	worker w;
	worker_init(&w, so->timeline);
	zb_status st = ZB_OK;
	zb_sweep_row row;
	for (long long r = g->first; r < g->end && !st; r++) {
		if (stop && *stop) {
			st = zb_fail(err, ZB_E_INTERRUPTED, "interrupted");
			break;
		}
		int use = row_run(&w, g, so, r, &row, err);
		if (use < 0) {
			st = err->status;
			break;
		}
		if (!use)
			continue;
		st = emit(ctx, &row, err);
		row_clear(&row);
		if (!st)
			progress_tick(pr, ++*done);
	}
	worker_free(&w);
	return st;
}

/* ---- threads ------------------------------------------------------------------------ */

typedef struct slot {
	long long item;      /* which item the slot holds; -1 empty */
	int ready;
	int n;               /* rows filled */
	zb_sweep_row rows[ITEM_ROWS];
	zb_status st;        /* a worker's failure on this item */
	zb_error err;
} slot;

typedef struct pool {
	const zb_sweep_grid *g;
	const zb_sweep_opts *so;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	slot *slots;
	int nslots;
	long long next_row;   /* first row of the next item to hand out */
	long long next_item;
	long long emitted;    /* items emptied by the writer */
	int quit;
} pool;

static void *worker_main(void *arg)
{
	pool *p = arg;
	worker w;
	worker_init(&w, p->so->timeline);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->quit && p->next_row < p->g->end && p->next_item - p->emitted >= p->nslots)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->quit || p->next_row >= p->g->end)
			break;
		long long a = p->next_row, group_end = (a / p->g->hw_rows + 1) * p->g->hw_rows;
		long long b = a + ITEM_ROWS;
		if (b > group_end)
			b = group_end;
		if (b > p->g->end)
			b = p->g->end;
		long long item = p->next_item++;
		p->next_row = b;
		slot *s = &p->slots[item % p->nslots];
		s->item = item;
		s->ready = 0;
		pthread_mutex_unlock(&p->mu);

		s->n = 0;
		s->st = ZB_OK;
		for (long long r = a; r < b; r++) {
			int use = row_run(&w, p->g, p->so, r, &s->rows[s->n], &s->err);
			if (use < 0) {
				s->st = s->err.status;
				break;
			}
			s->n += use;
		}
		pthread_mutex_lock(&p->mu);
		s->ready = 1;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	worker_free(&w);
	return NULL;
}

static zb_status run_threads(const zb_sweep_grid *g, const zb_sweep_opts *so, zb_sweep_emit_fn emit, void *ctx,
			     volatile sig_atomic_t *stop, long long *done, progress *pr, zb_error *err)
{
	pool p = { .g = g, .so = so, .nslots = so->jobs * SLOTS_PER_JOB, .next_row = g->first };
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	p.slots = zb_xcalloc((size_t)p.nslots, sizeof *p.slots);
	for (int i = 0; i < p.nslots; i++)
		p.slots[i].item = -1;
	pthread_t *th = zb_xcalloc((size_t)so->jobs, sizeof *th);
	int started = 0;
	zb_status st = ZB_OK;
	for (; started < so->jobs; started++)
		if (pthread_create(&th[started], NULL, worker_main, &p)) {
			if (!started)
				st = zb_fail(err, ZB_E_INTERNAL, "cannot start a sweep thread");
			break;
		}
	for (long long item = 0; !st; item++) {
		slot *s = &p.slots[item % p.nslots];
		pthread_mutex_lock(&p.mu);
		while (!(s->item == item && s->ready) && !(p.next_row >= g->end && item >= p.next_item))
			pthread_cond_wait(&p.cv, &p.mu);
		int finished = !(s->item == item && s->ready);
		pthread_mutex_unlock(&p.mu);
		if (finished)
			break;
		if (s->st) {
			*err = s->err;
			st = s->st;
		}
		for (int i = 0; i < s->n; i++) {
			if (!st && stop && *stop)
				st = zb_fail(err, ZB_E_INTERRUPTED, "interrupted");
			if (!st) {
				st = emit(ctx, &s->rows[i], err);
				if (!st)
					progress_tick(pr, ++*done);
			}
			row_clear(&s->rows[i]);
		}
		pthread_mutex_lock(&p.mu);
		s->item = -1;
		p.emitted++;
		pthread_cond_broadcast(&p.cv);
		pthread_mutex_unlock(&p.mu);
	}
	pthread_mutex_lock(&p.mu);
	p.quit = 1;
	pthread_cond_broadcast(&p.cv);
	pthread_mutex_unlock(&p.mu);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < p.nslots; i++) /* rows of items done but not emitted */
		if (p.slots[i].item >= 0)
			for (int k = 0; k < p.slots[i].n; k++)
				row_clear(&p.slots[i].rows[k]);
	free(th);
	free(p.slots);
	pthread_cond_destroy(&p.cv);
	pthread_mutex_destroy(&p.mu);
	return st;
}

zb_status zb_sweep_run(const zb_sweep_grid *g, long long rows, const zb_sweep_opts *so, zb_sweep_emit_fn emit,
		       void *ctx, volatile sig_atomic_t *stop, long long *done, zb_error *err)
{
	json_object_seed(0); /* jansson's hash seed, set before threads build objects (pred_json) */
	progress pr = { .f = so->progress && isatty(fileno(so->progress)) ? so->progress : NULL, .total = rows };
	pr.t0 = now_s();
	*done = 0;
	zb_status st = so->jobs <= 1 || so->timeline ? run_serial(g, so, emit, ctx, stop, done, &pr, err)
						    : run_threads(g, so, emit, ctx, stop, done, &pr, err);
	progress_end(&pr);
	return st;
}

int zb_sweep_hw_varies(const zb_config_inputs *in)
{
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		const char *v = in->value[a];
		if (hw_axis(a) && a != ZB_AX_PRICE && v && (strchr(v, ',') || strchr(v, ':')))
			return 1;
	}
	return 0;
}

int zb_sweep_default_jobs(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

void zb_sweep_row_predict_alt(zb_sweep_row *r)
{
	zb_error e;
	zb_prediction p;
	r->alt_state = 3;
	if (zb_predict(&p, &r->alt_cfg, &e))
		return;
	r->alt_mem = p.mem;
	r->alt_state = p.simulated ? 1 : 2;
	if (p.simulated) {
		r->alt_res = p.res;
		r->alt_res.start = r->alt_res.end = NULL;
	}
	zb_prediction_free(&p);
}
