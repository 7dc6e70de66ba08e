/*
 * ranks_fixture.h - "measured" runs of several ranks for the calibration tests of the
 * 2-GPU terms (test_kfit_comm, test_starved_s, test_kfit_ranks): one `run` row per configuration whose
 * measured timeline, and both ranks' (when it has two), are its own simulation, so that
 * a fit must give back what they were simulated with. Header-only, like harness.h;
 * include after it.
 */
#ifndef ZB_TEST_RANKS_FIXTURE_H
#define ZB_TEST_RANKS_FIXTURE_H

#include <stdlib.h>

#include "common/error.h" /* zb_xmalloc */
#include "inputs/hwfile.h" /* zb_config_to_json */
#include "results/store.h"
#include "results/store_ranks.h"
#include "sim/predict.h"

/* One run of c, inside s's transaction, with c's simulation on c->hw as its measured
 * timeline and as both ranks' rows when c has several GPUs: rank 1's is the simulation,
 * rank 0 (the slowest, whose timeline is the run's) reaches every collective `early`
 * seconds before it and spins in it until rank 1 comes. */
static inline void zb_test_store_ranks_run_early(zb_store *s, const zb_config *c, double early)
{
	zb_prediction p;
	zb_error err;
	int64_t run, id;
	zb_run_info info = { .kind = "run", .command = "test", .version = "t", .git_commit = "" };
	assert_int_equal(zb_predict(&p, c, &err), ZB_OK);
	const zb_graph *g = &p.graph;
	double *s0 = zb_xmalloc(g->ntasks * sizeof *s0);
	for (size_t i = 0; i < g->ntasks; i++)
		s0[i] = p.res.start[i] - (g->tasks[i].resource == ZB_RES_COMM ? early : 0);
	char *json = zb_config_to_json(c);
	assert_int_equal(zb_store_add_run(s, &info, &run, &err), ZB_OK);
	assert_int_equal(zb_store_add_config(s, run, c, json, &id, &err), ZB_OK);
	assert_int_equal(zb_store_add_prediction(s, id, g, &p.res, &p.mem, &err), ZB_OK);
	assert_int_equal(zb_store_add_tasks(s, id, g, &err), ZB_OK);
	assert_int_equal(zb_store_add_events(s, id, "measured", g, s0, p.res.end, &err), ZB_OK);
	if (c->policy.gpus > 1) {
		zb_rank_row rows[2] = {
			{ .rank = 0, .device = "test", .cpu_threads = 1, .slowest = 1, .start = s0, .end = p.res.end },
			{ .rank = 1, .device = "test", .cpu_threads = 1, .start = p.res.start, .end = p.res.end },
		};
		assert_int_equal(zb_store_add_ranks(s, id, g, rows, 2, &err), ZB_OK);
	}
	free(json);
	free(s0);
	zb_prediction_free(&p);
}

/* The same with both ranks at the same time. */
static inline void zb_test_store_ranks_run(zb_store *s, const zb_config *c)
{
	zb_test_store_ranks_run_early(s, c, 0);
}

#endif
