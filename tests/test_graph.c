/*
 * test_graph.c - the schedule builder over its whole option space: gpt2-large and
 * two small custom models (GPT-style tied, Llama-style untied with grouped-query
 * attention) x every policy x Twin-Flow ratios 0, 0.3, 0.5, 1 x gas 1 and 3 x
 * checkpointing none/gpu/cpu x parameter offload where legal.
 *
 * For each graph: zb_graph_check passes; the split and the buckets are exact; PCIe
 * bytes per step are what the policy says; and the hazards the executor would race
 * on are ordered. "A before B" is computed as happens-before over the dependency
 * edges plus each resource's FIFO order (a resource runs its tasks in id order), so
 * the checks hold for any timing, not just the simulated one.
 */
#include "tests/harness.h"

#include "core/config.h"
#include "sim/engine.h"
#include "core/graph.h"
#include "core/model.h"
#include "inputs/presets.h"

#define STEPS 4

static void base_config(zb_config *c, const char *model)
{
	memset(c, 0, sizeof *c);
	zb_preset_default_hw(&c->hw);
	zb_policy_defaults(&c->policy);
	c->steps = STEPS;
	zb_error err = { 0 };
	if (strcmp(model, "tiny-gpt") == 0) {
		zb_model m = { .name = "tiny-gpt", .layers = 4, .hidden = 256, .heads = 4, .kv_heads = 4,
			       .ffn = 1024, .vocab = 1000, .max_seq = 256, .gated_mlp = 0, .bias = 1,
			       .tied_embeddings = 1, .embed_proj = 0 };
		c->model = m;
		c->policy.micro_batch = 2;
		c->policy.seq = 128;
		c->policy.bucket_params = 150000; /* not a divisor of anything: buckets straddle units */
	} else if (strcmp(model, "tiny-llama") == 0) {
		zb_model m = { .name = "tiny-llama", .layers = 3, .hidden = 256, .heads = 8, .kv_heads = 2,
			       .ffn = 688, .vocab = 1000, .max_seq = 0, .gated_mlp = 1, .bias = 0,
			       .tied_embeddings = 0, .embed_proj = 0 };
		c->model = m;
		c->policy.micro_batch = 1;
		c->policy.seq = 64;
		c->policy.bucket_params = 123457;
	} else {
		assert_int_equal(zb_preset_model(model, &c->model, &err), ZB_OK);
	}
}

static void build_ok(zb_graph *g, const zb_config *c)
{
	zb_error err = { 0 };
	zb_status st = zb_graph_build(g, c, &err);
	if (st)
		print_error("zb_graph_build: %s\n", err.msg);
	assert_int_equal(st, ZB_OK);
	st = zb_graph_check(g, &err);
	if (st)
		print_error("zb_graph_check: %s\n", err.msg);
	assert_int_equal(st, ZB_OK);
}

/* ---- happens-before ---------------------------------------------------------- */

/* hb[i * R + r]: the largest id of a task on resource r that has finished whenever
 * task i starts (-1: none). Tasks of one resource finish in id order, so "task a has
 * finished before b starts" is hb[b][res(a)] >= a. */
static int64_t *happens_before(const zb_graph *g)
{
	enum { R = ZB_RES_COUNT };
	int64_t *hb = malloc(g->ntasks * R * sizeof *hb + 1);
	assert_non_null(hb);
	int64_t prev[R];
	for (int r = 0; r < R; r++)
		prev[r] = -1;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		int64_t *row = hb + i * R;
		if (prev[t->resource] >= 0) {
			memcpy(row, hb + prev[t->resource] * R, R * sizeof *row);
			if (row[t->resource] < prev[t->resource])
				row[t->resource] = prev[t->resource];
		} else {
			for (int r = 0; r < R; r++)
				row[r] = -1;
		}
		const uint32_t *d = zb_task_deps(g, t);
		for (uint32_t j = 0; j < t->dep_count; j++) {
			assert_true(d[j] < i); /* no task depends on a later one */
			const int64_t *dr = hb + (size_t)d[j] * R;
			for (int r = 0; r < R; r++)
				if (dr[r] > row[r])
					row[r] = dr[r];
			int rd = g->tasks[d[j]].resource;
			if ((int64_t)d[j] > row[rd])
				row[rd] = d[j];
		}
		prev[t->resource] = (int64_t)i;
	}
	return hb;
}

typedef struct checker {
	const zb_graph *g;
	const zb_config *c;
	int64_t *hb;
	int U, gas, NB;
	/* per (step, micro, unit), task ids, -1 when none */
	int64_t *fwd_first;  /* first GPU task of the unit's forward */
	int64_t *bwd_last;   /* last GPU task of its backward that reads parameters */
	int64_t *gw_first;   /* first GPU task writing its gradients */
	int64_t *gw_last;    /* last one */
	int64_t *fetch[2];   /* ZeRO-3 parameter fetch before forward [0] / backward [1] */
	/* per (step, bucket): task ids and counts */
	int64_t *down, *adam, *up, *gadam;
	int *ndown, *nadam, *nup, *ngadam;
	const char *what;    /* the configuration, for messages */
} checker;

static size_t smu(const checker *k, int s, int m, int u) { return ((size_t)s * k->gas + m) * k->U + u; }
static size_t sb(const checker *k, int s, int b) { return (size_t)s * k->NB + b; }

static int64_t *ids(size_t n)
{
	int64_t *a = malloc(n * sizeof *a + 1);
	assert_non_null(a);
	for (size_t i = 0; i < n; i++)
		a[i] = -1;
	return a;
}

static void set_min(int64_t *slot, int64_t id) { if (*slot < 0 || id < *slot) *slot = id; }
static void set_max(int64_t *slot, int64_t id) { if (id > *slot) *slot = id; }

static void checker_init(checker *k, const zb_graph *g, const zb_config *c, const char *what)
{
	memset(k, 0, sizeof *k);
	k->g = g;
	k->c = c;
	k->what = what;
	k->U = zb_model_units(&c->model);
	k->gas = c->policy.gas;
	k->NB = g->nbuckets;
	size_t n1 = (size_t)g->steps * k->gas * k->U, n2 = (size_t)g->steps * k->NB;
	k->fwd_first = ids(n1);
	k->bwd_last = ids(n1);
	k->gw_first = ids(n1);
	k->gw_last = ids(n1);
	k->fetch[0] = ids(n1);
	k->fetch[1] = ids(n1);
	k->down = ids(n2);
	k->adam = ids(n2);
	k->up = ids(n2);
	k->gadam = ids(n2);
	k->ndown = calloc(n2 + 1, sizeof(int));
	k->nadam = calloc(n2 + 1, sizeof(int));
	k->nup = calloc(n2 + 1, sizeof(int));
	k->ngadam = calloc(n2 + 1, sizeof(int));
	k->hb = happens_before(g);
	int tied = c->model.tied_embeddings;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		assert_true(t->step >= 0 && t->step < g->steps);
		if (t->resource == ZB_RES_GPU) {
			assert_true(t->micro >= 0 && t->micro < k->gas);
			assert_true(t->unit >= 0 && t->unit < k->U);
			size_t x = smu(k, t->step, t->micro, t->unit);
			if (t->pass == ZB_PASS_FWD)
				set_min(&k->fwd_first[x], (int64_t)i);
			else if (t->op != ZB_OP_GRAD_ACC)
				set_max(&k->bwd_last[x], (int64_t)i);
			int writes = t->pass == ZB_PASS_BWD_WEIGHT ||
				     (t->kind == ZB_TASK_KERNEL && t->pass == ZB_PASS_BWD_DATA &&
				      (t->op == ZB_OP_NORM1 || t->op == ZB_OP_NORM2 || t->op == ZB_OP_NORMF ||
				       t->op == ZB_OP_EMBED || t->op == ZB_OP_GRAD_ACC));
			if (writes) {
				/* a tied LM head's weight gradient is the embedding's */
				int u = t->op == ZB_OP_LMHEAD && tied ? 0 : t->unit;
				size_t y = smu(k, t->step, t->micro, u);
				set_min(&k->gw_first[y], (int64_t)i);
				set_max(&k->gw_last[y], (int64_t)i);
			}
			continue;
		}
		if (t->op == ZB_OP_PARAM_FETCH) {
			size_t x = smu(k, t->step, t->micro, t->unit);
			int pass = t->pass == ZB_PASS_FWD ? 0 : 1;
			assert_int_equal(k->fetch[pass][x], -1); /* one fetch per pass */
			k->fetch[pass][x] = (int64_t)i;
			continue;
		}
		if (t->bucket < 0)
			continue;
		assert_true(t->bucket < k->NB);
		size_t x = sb(k, t->step, t->bucket);
		if (t->op == ZB_OP_GRAD_DOWN)
			k->down[x] = (int64_t)i, k->ndown[x]++;
		else if (t->op == ZB_OP_PARAM_UP)
			k->up[x] = (int64_t)i, k->nup[x]++;
		else if (t->kind == ZB_TASK_CPU_ADAM)
			k->adam[x] = (int64_t)i, k->nadam[x]++;
		else if (t->kind == ZB_TASK_GPU_ADAM)
			k->gadam[x] = (int64_t)i, k->ngadam[x]++;
	}
}

static void checker_free(checker *k)
{
	int64_t *arrays[] = { k->fwd_first, k->bwd_last, k->gw_first, k->gw_last, k->fetch[0], k->fetch[1],
			      k->down, k->adam, k->up, k->gadam, k->hb };
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
		free(arrays[i]);
	free(k->ndown);
	free(k->nadam);
	free(k->nup);
	free(k->ngadam);
}

/* a has finished whenever b starts */
static int before(const checker *k, int64_t a, int64_t b)
{
	if (a < 0 || b < 0)
		return 1; /* nothing to order */
	return k->hb[(size_t)b * ZB_RES_COUNT + k->g->tasks[a].resource] >= a;
}

#define ORDERED(k, a, b, why)                                                                            \
	do {                                                                                             \
		int64_t a_ = (a), b_ = (b);                                                              \
		if (!before((k), a_, b_)) {                                                              \
			print_error("%s: task %lld (%s %s step %d) is not ordered before task %lld (%s %s " \
				    "step %d): %s\n",                                                    \
				    (k)->what, (long long)a_, zb_resource_name((k)->g->tasks[a_].resource),     \
				    zb_op_name((k)->g->tasks[a_].op), (k)->g->tasks[a_].step, (long long)b_,    \
				    zb_resource_name((k)->g->tasks[b_].resource),                        \
				    zb_op_name((k)->g->tasks[b_].op), (k)->g->tasks[b_].step, why);      \
			fail();                                                                          \
		}                                                                                        \
	} while (0)

static int64_t unit_cpu_params(const zb_graph *g, const zb_model *m, int u)
{
	int64_t lo = zb_model_unit_offset(m, u), hi = lo + zb_model_unit_params(m, u);
	int64_t split = g->params - g->cpu_params;
	return hi <= split ? 0 : hi - (lo > split ? lo : split);
}

static void check_hazards(const checker *k)
{
	const zb_graph *g = k->g;
	const zb_policy *p = &k->c->policy;
	int dpu = p->kind == ZB_POLICY_DPU, op = p->offload_param, M = k->gas - 1;
	for (int s = 0; s < g->steps; s++) {
		for (int b = 0; b < k->NB; b++) {
			const zb_bucket *bu = &g->buckets[b];
			size_t x = sb(k, s, b);
			int64_t gw_last = -1, rd_last = -1;
			for (int u = bu->first_unit; u <= bu->last_unit; u++) {
				set_max(&gw_last, k->gw_last[smu(k, s, M, u)]);
				set_max(&rd_last, k->bwd_last[smu(k, s, M, u)]);
			}
			assert_true(gw_last >= 0 && rd_last >= 0);
			if (!bu->on_cpu) {
				assert_int_equal(k->ngadam[x], 1);
				assert_int_equal(k->ndown[x] + k->nadam[x] + k->nup[x], 0);
				ORDERED(k, gw_last, k->gadam[x], "GPU Adam reads the bucket's complete gradients");
				ORDERED(k, rd_last, k->gadam[x], "GPU Adam overwrites parameters backward still reads");
				if (s + 1 < g->steps)
					for (int u = bu->first_unit; u <= bu->last_unit; u++) {
						ORDERED(k, k->gadam[x], k->fwd_first[smu(k, s + 1, 0, u)],
							"next forward uses the updated parameters");
						ORDERED(k, k->gadam[x], k->gw_first[smu(k, s + 1, 0, u)],
							"next backward overwrites gradients GPU Adam reads");
					}
				continue;
			}
			assert_int_equal(k->ndown[x], 1);
			assert_int_equal(k->nadam[x], 1);
			assert_int_equal(k->nup[x], op ? 0 : 1);
			assert_int_equal(k->ngadam[x], 0);
			ORDERED(k, gw_last, k->down[x], "gradients complete before they go down");
			ORDERED(k, k->down[x], k->adam[x], "CPU Adam reads the gradients that came down");
			if (!op)
				ORDERED(k, k->adam[x], k->up[x], "updated parameters go up after the update");
			if (s + 1 >= g->steps)
				continue;
			size_t x1 = sb(k, s + 1, b);
			ORDERED(k, k->adam[x], k->down[x1], "host gradient buffer free (documented hazard)");
			for (int u = bu->first_unit; u <= bu->last_unit; u++)
				ORDERED(k, k->down[x], k->gw_first[smu(k, s + 1, 0, u)],
					"GPU gradients read by D2H before being overwritten (documented hazard)");
			if (op) {
				for (int u = bu->first_unit; u <= bu->last_unit; u++) {
					if (!unit_cpu_params(g, &k->c->model, u))
						continue;
					for (int m = 0; m < k->gas; m++)
						for (int ps = 0; ps < 2; ps++) {
							int64_t f = k->fetch[ps][smu(k, s + 1, m, u)];
							assert_true(f >= 0);
							ORDERED(k, k->adam[x], f, "fetch brings the updated parameters");
							ORDERED(k, f, k->adam[x1],
								"CPU Adam overwrites host parameters a fetch reads");
						}
				}
			} else if (dpu) {
				ORDERED(k, rd_last, k->up[x], "step s+1 uses the old parameters (documented hazard)");
				for (int u = bu->first_unit; u <= bu->last_unit; u++)
					ORDERED(k, k->bwd_last[smu(k, s + 1, M, u)], k->up[x],
						"delayed update waits for step s+1's last use");
				ORDERED(k, k->up[x], k->adam[x1],
					"CPU Adam of step s+1 overwrites the host copy step s's upload reads");
				if (s + 2 < g->steps)
					for (int u = bu->first_unit; u <= bu->last_unit; u++)
						ORDERED(k, k->up[x], k->fwd_first[smu(k, s + 2, 0, u)],
							"step s+2 runs on step s's update");
			} else {
				for (int u = bu->first_unit; u <= bu->last_unit; u++)
					ORDERED(k, k->up[x], k->fwd_first[smu(k, s + 1, 0, u)],
						"next forward uses the updated parameters");
				ORDERED(k, k->up[x], k->adam[x1],
					"CPU Adam of step s+1 overwrites the host copy step s's upload reads");
			}
		}
		/* ZeRO-3: compute of a unit waits for its fetch */
		if (op)
			for (int m = 0; m < k->gas; m++)
				for (int u = 0; u < k->U; u++) {
					size_t y = smu(k, s, m, u);
					ORDERED(k, k->fetch[0][y], k->fwd_first[y], "forward waits for its fetch");
					if (k->fetch[1][y] >= 0) {
						/* the first backward task of the unit: the smallest GPU
						 * id of the unit after its forward */
						int64_t first = -1;
						for (int64_t i = k->fetch[1][y] + 1; i < (int64_t)g->ntasks; i++) {
							const zb_task *t = &g->tasks[i];
							if (t->resource == ZB_RES_GPU && t->unit == u && t->pass != ZB_PASS_FWD &&
							    t->step == s && t->micro == m) {
								first = i;
								break;
							}
						}
						assert_true(first >= 0);
						ORDERED(k, k->fetch[1][y], first, "backward waits for its fetch");
					}
				}
	}
}

/* ---- the per-configuration checks ----------------------------------------------- */

static double block_gemm_flops(const zb_graph *g, const zb_model *m, int pass_only)
{
	double f = 0;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->kind != ZB_TASK_GEMM || t->unit < 1 || t->unit > m->layers)
			continue;
		if (pass_only >= 0 && t->pass != pass_only)
			continue;
		f += t->flops;
	}
	return f;
}

static void check_config(const zb_config *c, const char *what, int simulate)
{
	zb_graph g;
	build_ok(&g, c);
	const zb_policy *p = &c->policy;
	const zb_model *m = &c->model;
	int64_t P = zb_model_params(m);
	assert_int_equal(g.params, P);
	assert_int_equal(g.steps, c->steps);
	assert_int_equal(g.grad_bytes_per_param, 2);
	int offl = p->kind != ZB_POLICY_NONE;
	int64_t want_cpu = offl ? (int64_t)llround(p->ratio * (double)P) : 0;
	if (g.cpu_params != want_cpu)
		print_error("%s: cpu_params %lld, want %lld\n", what, (long long)g.cpu_params, (long long)want_cpu);
	assert_int_equal(g.cpu_params, want_cpu);
	assert_close(g.tokens_per_step, (double)p->micro_batch * p->seq * p->gas, 0);
	assert_close(g.model_flops_per_step, zb_model_flops_per_token(m, p->seq) * g.tokens_per_step, 1e-12);

	/* buckets: from the top of the vector down, CPU ones first, none straddling
	 * the split, none larger than asked, units right */
	int64_t split = P - g.cpu_params, top = P;
	int seen_gpu = 0;
	for (int b = 0; b < g.nbuckets; b++) {
		const zb_bucket *bu = &g.buckets[b];
		assert_true(bu->params > 0 && bu->params <= p->bucket_params);
		assert_int_equal(bu->param_offset + bu->params, top);
		top = bu->param_offset;
		if (bu->on_cpu) {
			assert_false(seen_gpu);
			assert_true(bu->param_offset >= split);
		} else {
			seen_gpu = 1;
			assert_true(bu->param_offset + bu->params <= split);
		}
		int fu = bu->first_unit, lu = bu->last_unit;
		assert_true(fu <= lu);
		assert_true(zb_model_unit_offset(m, fu) <= bu->param_offset);
		assert_true(bu->param_offset < zb_model_unit_offset(m, fu) + zb_model_unit_params(m, fu));
		int64_t last = bu->param_offset + bu->params - 1;
		assert_true(zb_model_unit_offset(m, lu) <= last);
		assert_true(last < zb_model_unit_offset(m, lu) + zb_model_unit_params(m, lu));
	}
	assert_int_equal(top, 0);

	/* every parameter updated exactly once per step: the Adam ranges of a step
	 * tile [0, P) without overlap (buckets tile, each bucket's Adam once); and the
	 * gradients that go down tile [split, P) */
	int64_t *upd = calloc((size_t)g.nbuckets * STEPS + 1, sizeof *upd);
	assert_non_null(upd);
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *t = &g.tasks[i];
		if (t->op != ZB_OP_ADAM && t->op != ZB_OP_GRAD_DOWN && t->op != ZB_OP_PARAM_UP)
			continue;
		assert_true(t->bucket >= 0 && t->bucket < g.nbuckets);
		const zb_bucket *bu = &g.buckets[t->bucket];
		assert_int_equal(t->param_offset, bu->param_offset);
		assert_int_equal(t->params, bu->params);
		if (t->op == ZB_OP_ADAM) {
			upd[(size_t)t->step * g.nbuckets + t->bucket]++;
			assert_int_equal(t->kind, bu->on_cpu ? ZB_TASK_CPU_ADAM : ZB_TASK_GPU_ADAM);
			assert_int_equal(t->resource, bu->on_cpu ? ZB_RES_CPU : ZB_RES_GPU_OPT);
			assert_close(t->bytes, ZB_ADAM_BYTES_PER_PARAM * t->params, 0);
		} else {
			assert_true(bu->on_cpu); /* only offloaded buckets cross PCIe */
			assert_int_equal(t->resource, t->op == ZB_OP_GRAD_DOWN ? ZB_RES_D2H : ZB_RES_H2D);
			assert_close(t->bytes, 2.0 * t->params, 0);
		}
	}
	for (int s = 0; s < STEPS; s++)
		for (int b = 0; b < g.nbuckets; b++)
			assert_int_equal(upd[(size_t)s * g.nbuckets + b], 1);
	free(upd);

	/* PCIe bytes per step */
	int L = m->layers;
	double act = p->ckpt == ZB_CKPT_CPU ? (double)L * p->gas * p->micro_batch * p->seq * m->hidden * 2.0 : 0;
	double down = 2.0 * g.cpu_params + act;
	double up = (p->offload_param ? 4.0 * p->gas * g.cpu_params : 2.0 * g.cpu_params) + act;
	if (fabs(g.copy_bytes[ZB_RES_D2H] - down) > 1e-9 * down || fabs(g.copy_bytes[ZB_RES_H2D] - up) > 1e-9 * up)
		print_error("%s: copy bytes d2h %.0f h2d %.0f, want %.0f %.0f\n", what, g.copy_bytes[ZB_RES_D2H],
			    g.copy_bytes[ZB_RES_H2D], down, up);
	assert_close(g.copy_bytes[ZB_RES_D2H], down, 1e-12);
	assert_close(g.copy_bytes[ZB_RES_H2D], up, 1e-12);
	/* no CPU work at all without offloaded parameters */
	if (g.cpu_params == 0)
		for (size_t i = 0; i < g.ntasks; i++) {
			const zb_task *t = &g.tasks[i];
			assert_true(t->resource != ZB_RES_CPU);
			if (t->resource == ZB_RES_D2H || t->resource == ZB_RES_H2D)
				assert_true(t->op == ZB_OP_ACT_DOWN || t->op == ZB_OP_ACT_UP);
		}

	/* task fields: kinds on their resources, GEMM shapes and FLOPs consistent */
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *t = &g.tasks[i];
		switch (t->kind) {
		case ZB_TASK_GEMM:
			assert_int_equal(t->resource, ZB_RES_GPU);
			assert_true(t->m > 0 && t->n > 0 && t->k > 0 && t->batch > 0);
			assert_close(t->flops, 2.0 * t->m * t->n * t->k * (double)t->batch, 1e-15);
			break;
		case ZB_TASK_KERNEL:
			assert_int_equal(t->resource, ZB_RES_GPU);
			assert_true(t->bytes > 0);
			break;
		case ZB_TASK_COPY:
			assert_true(t->resource == ZB_RES_D2H || t->resource == ZB_RES_H2D);
			assert_true(t->bytes > 0);
			break;
		default:
			break;
		}
	}

	checker k;
	checker_init(&k, &g, c, what);
	check_hazards(&k);
	checker_free(&k);

	if (simulate) {
		/* a schedule that deadlocks would stall the engine */
		zb_sim_result r;
		zb_error err = { 0 };
		zb_status st = zb_simulate(&g, c, &r, &err);
		if (st)
			print_error("%s: %s\n", what, err.msg);
		assert_int_equal(st, ZB_OK);
		assert_true(r.step_time_s > 0);
		zb_sim_result_free(&r);
	}
	zb_graph_free(&g);
}

static void sweep_model(const char *model, int simulate)
{
	static const double ratios[] = { 0, 0.3, 0.5, 1 };
	static const int gases[] = { 1, 3 };
	int n = 0;
	for (int pk = 0; pk < ZB_POLICY_COUNT; pk++)
		for (size_t ri = 0; ri < sizeof ratios / sizeof ratios[0]; ri++)
			for (size_t gi = 0; gi < sizeof gases / sizeof gases[0]; gi++)
				for (int ck = 0; ck < ZB_CKPT_COUNT; ck++)
					for (int op = 0; op <= 1; op++) {
						if (op && (pk == ZB_POLICY_NONE || pk == ZB_POLICY_DPU))
							continue;
						zb_config c;
						base_config(&c, model);
						c.policy.kind = (zb_policy_kind)pk;
						c.policy.ratio = ratios[ri];
						c.policy.gas = gases[gi];
						c.policy.ckpt = (zb_ckpt)ck;
						c.policy.offload_param = op;
						char what[256];
						snprintf(what, sizeof what, "%s %s ratio %g gas %d ckpt %s%s", model,
							 zb_policy_name(c.policy.kind), ratios[ri], gases[gi],
							 zb_ckpt_name(c.policy.ckpt), op ? " offload-param" : "");
						check_config(&c, what, simulate);
						n++;
					}
	assert_true(n > 100);
}

static void test_matrix_gpt2_large(void **state) { sweep_model("gpt2-large", 0); }
static void test_matrix_tiny_gpt(void **state) { sweep_model("tiny-gpt", 1); }
static void test_matrix_tiny_llama(void **state) { sweep_model("tiny-llama", 1); }

/* ---- specific properties ------------------------------------------------------------- */

/* ZeRO-Offload in bf16 at ratio 1: 2 bytes per parameter down, 2 up, per step. */
static void test_zero_offload_bytes(void **state)
{
	for (int pk = ZB_POLICY_OFFLOAD; pk <= ZB_POLICY_DPU; pk++)
		for (int gas = 1; gas <= 3; gas += 2) {
			zb_config c;
			base_config(&c, "gpt2-large");
			c.policy.kind = (zb_policy_kind)pk;
			c.policy.ratio = 1;
			c.policy.gas = gas;
			zb_graph g;
			build_ok(&g, &c);
			double P = (double)zb_model_params(&c.model);
			assert_int_equal(g.cpu_params, zb_model_params(&c.model));
			assert_close(g.copy_bytes[ZB_RES_D2H], 2 * P, 0);
			assert_close(g.copy_bytes[ZB_RES_H2D], 2 * P, 0);
			zb_graph_free(&g);
		}
}

/* Policy none: everything on the GPU, nothing crosses PCIe, whatever the ratio. */
static void test_none_has_no_copies(void **state)
{
	for (int ck = ZB_CKPT_NONE; ck <= ZB_CKPT_GPU; ck++) {
		zb_config c;
		base_config(&c, "gpt2-large");
		c.policy.kind = ZB_POLICY_NONE;
		c.policy.ratio = 0.7; /* ignored */
		c.policy.ckpt = (zb_ckpt)ck;
		zb_graph g;
		build_ok(&g, &c);
		assert_int_equal(g.cpu_params, 0);
		assert_true(g.copy_bytes[ZB_RES_D2H] == 0 && g.copy_bytes[ZB_RES_H2D] == 0);
		for (size_t i = 0; i < g.ntasks; i++) {
			assert_int_not_equal(g.tasks[i].kind, ZB_TASK_COPY);
			assert_int_not_equal(g.tasks[i].kind, ZB_TASK_CPU_ADAM);
		}
		for (int b = 0; b < g.nbuckets; b++)
			assert_false(g.buckets[b].on_cpu);
		zb_graph_free(&g);
	}
}

static void assert_rejected(const zb_config *c, const char *needle)
{
	zb_graph g;
	zb_error err = { 0 };
	zb_status st = zb_graph_build(&g, c, &err);
	assert_int_equal(st, ZB_E_INPUT);
	if (!strstr(err.msg, needle)) {
		print_error("message '%s' does not mention '%s'\n", err.msg, needle);
		fail();
	}
	zb_graph_free(&g); /* safe on a failed build */
}

static void test_illegal_combinations(void **state)
{
	zb_config c;
	base_config(&c, "gpt2-large");
	c.policy.kind = ZB_POLICY_DPU;
	c.policy.offload_param = 1;
	assert_rejected(&c, "dpu");
	c.policy.kind = ZB_POLICY_NONE;
	assert_rejected(&c, "offload-param");
	base_config(&c, "gpt2-large");
	c.steps = 0;
	assert_rejected(&c, "steps");
	base_config(&c, "gpt2-large");
	c.policy.ratio = 1.5;
	assert_rejected(&c, "1.5");
	base_config(&c, "gpt2-large");
	c.policy.gas = 0;
	assert_rejected(&c, "gas");
}

/* Recompute (ckpt gpu or cpu) runs every block's forward GEMMs again in backward:
 * the blocks' GEMM FLOPs go from 3F (forward + two backward) to 4F. */
static void test_recompute_flops(void **state)
{
	const char *models[] = { "gpt2-large", "tiny-llama" };
	for (size_t mi = 0; mi < 2; mi++)
		for (int ck = ZB_CKPT_GPU; ck <= ZB_CKPT_CPU; ck++) {
			zb_config c;
			base_config(&c, models[mi]);
			c.policy.kind = ZB_POLICY_OVERLAP;
			c.policy.gas = 2;
			zb_graph plain, re;
			build_ok(&plain, &c);
			c.policy.ckpt = (zb_ckpt)ck;
			build_ok(&re, &c);
			double f0 = block_gemm_flops(&plain, &c.model, -1);
			double f1 = block_gemm_flops(&re, &c.model, -1);
			double fwd = block_gemm_flops(&plain, &c.model, ZB_PASS_FWD);
			assert_close(f1 / f0, 4.0 / 3.0, 1e-12);
			assert_close(block_gemm_flops(&re, &c.model, ZB_PASS_RECOMPUTE), fwd, 1e-12);
			assert_close(block_gemm_flops(&plain, &c.model, ZB_PASS_RECOMPUTE), 0, 0);
			/* model FLOPs (for TFLOP/s) do not count recompute */
			assert_close(re.model_flops_per_step, plain.model_flops_per_step, 0);
			zb_graph_free(&plain);
			zb_graph_free(&re);
		}
}

/* The GEMM FLOPs of one step add up to the model's FLOPs: 6 x matmul params x
 * tokens plus attention's 12 x layers x hidden x seq per token. */
static void test_gemm_flops_match_model(void **state)
{
	const char *models[] = { "gpt2-large", "tiny-gpt", "tiny-llama", "llama2-7b" };
	for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
		zb_config c;
		base_config(&c, models[mi]);
		c.steps = 1;
		if (strcmp(models[mi], "llama2-7b") == 0)
			c.policy.micro_batch = 1;
		zb_graph g;
		build_ok(&g, &c);
		double f = 0;
		for (size_t i = 0; i < g.ntasks; i++)
			if (g.tasks[i].kind == ZB_TASK_GEMM)
				f += g.tasks[i].flops;
		/* the causal-mask convention aside, attention is counted in full both ways */
		assert_close(f, g.model_flops_per_step, 1e-9);
		zb_graph_free(&g);
	}
}

/* The ratio splits the parameters exactly, at odd ratios too. */
static void test_ratio_split_exact(void **state)
{
	static const double ratios[] = { 0, 1e-9, 0.1, 0.3333333, 0.5, 0.77, 0.999, 1 };
	for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
		zb_config c;
		base_config(&c, "tiny-gpt");
		c.policy.kind = ZB_POLICY_OVERLAP;
		c.policy.ratio = ratios[i];
		c.steps = 1;
		zb_graph g;
		build_ok(&g, &c);
		int64_t P = zb_model_params(&c.model);
		assert_int_equal(g.cpu_params, (int64_t)llround(ratios[i] * (double)P));
		int64_t cpu = 0;
		for (int b = 0; b < g.nbuckets; b++)
			if (g.buckets[b].on_cpu)
				cpu += g.buckets[b].params;
		assert_int_equal(cpu, g.cpu_params);
		zb_graph_free(&g);
	}
}

/* Dependencies always point backwards, so the graph is acyclic, and each task has
 * at most one dependency per resource. */
static void test_deps_point_backwards(void **state)
{
	zb_config c;
	base_config(&c, "gpt2-large");
	c.policy.kind = ZB_POLICY_DPU;
	c.policy.ratio = 0.5;
	c.policy.gas = 2;
	c.policy.ckpt = ZB_CKPT_CPU;
	zb_graph g;
	build_ok(&g, &c);
	assert_true(g.ndeps > 0);
	for (size_t i = 0; i < g.ntasks; i++) {
		const zb_task *t = &g.tasks[i];
		assert_int_equal(t->id, i);
		assert_true(t->dep_count <= ZB_RES_COUNT);
		assert_true((size_t)t->dep_begin + t->dep_count <= g.ndeps);
		const uint32_t *d = zb_task_deps(&g, t);
		int per_res[ZB_RES_COUNT] = { 0 };
		for (uint32_t j = 0; j < t->dep_count; j++) {
			assert_true(d[j] < t->id);
			per_res[g.tasks[d[j]].resource]++;
		}
		for (int r = 0; r < ZB_RES_COUNT; r++)
			assert_true(per_res[r] <= 1);
	}
	/* a corrupted graph is caught by the checker */
	zb_error err = { 0 };
	uint32_t *d = g.deps + g.tasks[g.ntasks - 1].dep_begin;
	assert_true(g.tasks[g.ntasks - 1].dep_count > 0);
	uint32_t saved = d[0];
	d[0] = (uint32_t)(g.ntasks - 1);
	assert_int_equal(zb_graph_check(&g, &err), ZB_E_INTERNAL);
	d[0] = saved;
	assert_int_equal(zb_graph_check(&g, &err), ZB_OK);
	g.buckets[0].params--;
	assert_int_equal(zb_graph_check(&g, &err), ZB_E_INTERNAL);
	g.buckets[0].params++;
	zb_graph_free(&g);
}

/* The same configuration builds the same graph. */
static void test_build_deterministic(void **state)
{
	zb_config c;
	base_config(&c, "tiny-llama");
	c.policy.kind = ZB_POLICY_DPU;
	c.policy.ratio = 0.3;
	c.policy.gas = 3;
	zb_graph a, b;
	build_ok(&a, &c);
	build_ok(&b, &c);
	assert_int_equal(a.ntasks, b.ntasks);
	assert_int_equal(a.ndeps, b.ndeps);
	assert_memory_equal(a.tasks, b.tasks, a.ntasks * sizeof *a.tasks);
	assert_memory_equal(a.deps, b.deps, a.ndeps * sizeof *a.deps);
	zb_graph_free(&a);
	zb_graph_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix_gpt2_large),
		cmocka_unit_test(test_matrix_tiny_gpt),
		cmocka_unit_test(test_matrix_tiny_llama),
		cmocka_unit_test(test_zero_offload_bytes),
		cmocka_unit_test(test_none_has_no_copies),
		cmocka_unit_test(test_illegal_combinations),
		cmocka_unit_test(test_recompute_flops),
		cmocka_unit_test(test_gemm_flops_match_model),
		cmocka_unit_test(test_ratio_split_exact),
		cmocka_unit_test(test_deps_point_backwards),
		cmocka_unit_test(test_build_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
