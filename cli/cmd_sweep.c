/*
 * cmd_sweep.c - zbench sweep: predict the cartesian product of the axes given as
 * lists or ranges; a fixed-width table with a units row (or --csv / --json), every
 * row stored in the database in one transaction.
 *
 * Without --policy and --ratio the grid covers the policies none, offload,
 * overlap and dpu and the ratios 0, 0.25, 0.5, 0.75, 1, so `zbench sweep` alone
 * and `zbench sweep --pcie gen4` answer "which policy and ratio, and why" for the
 * default gpt2-large example.
 *
 * Rows stream: each is printed and stored as soon as it is simulated, in one
 * transaction committed at the end (or at Ctrl-C, with the run marked
 * 'interrupted'), so memory stays flat for millions of rows; see sim/sweep.h for
 * the order, the threads and the shards.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/stop.h"
#include "cli/options.h"
#include "report/report.h"
#include "report/ranks.h"
#include "report/sweep_table.h"
#include "cli/session.h"
#include "plots/plot.h"
#include "schedules/deepspeed.h"
#include "sim/predict.h"
#include "sim/sweep.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench sweep [options] [--csv | --json]\n\n"
		   "Predict a grid of configurations. Any configuration option takes a list (--pcie gen3,gen5)\n"
		   "and numeric ones a range lo:hi:step (--ratio 0:1:0.1). Default grid: policies none,\n"
		   "offload, overlap, dpu and ratios 0:1:0.25 on gpt2-large and the H200 machine.\n\n");
	zb_options_usage(f);
	fprintf(f, "  %-26s %s\n", "--plot <file.png | .svg>",
		"after storing, plot the sweep's throughput (zbench plot ratio --run <this run>)");
	fprintf(f, "  %-26s %s\n", "-j, --jobs <n>", "threads simulating (default: the machine's cores)");
	fprintf(f, "  %-26s %s\n", "--shard <k/n>", "only the k-th of n slices of the grid (1 <= k <= n);");
	fprintf(f, "  %-26s %s\n", "", "combine the shards' databases with zbench merge");
	fprintf(f, "  %-26s %s\n", "--yes", "run a sweep of more than 10^7 configurations");
	fprintf(f, "  %-26s %s\n", "--tokens <n>", "the training run the cost columns price (default 1e10)");
	fprintf(f, "  %-26s %s\n", "--no-other-schedule", "leave out the other framework's schedule (half the work)");
	fprintf(f, "\nA sweep of several values of a hardware axis (--hw, --gpu, --pcie, --cpu, --cores, --host-mem,\n"
		   "--dram-bw, --cpu-adam, --gpus-per-link) is a purchase question: it answers for DeepSpeed's schedule\n"
		   "unless --framework zbench (or a --ds-config, or policy dpu) says otherwise. Every row also gives the\n"
		   "other schedule's tokens/s: what DeepSpeed gets, what the hardware allows (zbench's).\n");
}

typedef struct sweep_flags {
	int jobs, shard_k, shard_n, yes;
	int one_schedule;   /* --no-other-schedule */
	double tokens;      /* --tokens: the training run the cost columns price */
} sweep_flags;

/* --shard k/n */
static zb_status take_shard(void *dest, const char *arg, zb_error *err)
{
	sweep_flags *f = dest;
	long k, n;
	int used = 0;
	if (sscanf(arg, "%ld/%ld%n", &k, &n, &used) != 2 || arg[used] || n < 1 || k < 1 || k > n || n > 1000000)
		return zb_fail(err, ZB_E_INPUT, "invalid --shard '%s' (expected k/n with 1 <= k <= n)", arg);
	f->shard_k = (int)k;
	f->shard_n = (int)n;
	return ZB_OK;
}

/* The best row of each machine (its hardware), for the ranking by cost. */
#define RANK_MACHINES 1024
typedef struct machine_best {
	zb_config cfg;
	zb_row_cost cost;
	double tps;
} machine_best;

/* What each row goes to. */
typedef struct sink {
	const zb_options *o;
	const zb_sweep_table *table;
	zb_session *s;
	long long rows;
	int have_best;
	zb_config best;
	zb_sim_result best_res;
	zb_row_cost best_cost;
	machine_best *machines; /* [RANK_MACHINES] */
	int nmachines;
	int unstored;       /* storing failed (locked, damaged, disk full): rows are still printed */
	zb_error store_err; /* ... why */
} sink;

static int same_machine(const zb_hw *a, const zb_hw *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->link.name, b->link.name) && !strcmp(a->gpu.name, b->gpu.name) &&
	       !strcmp(a->cpu.name, b->cpu.name) && a->cpu.cores == b->cpu.cores && a->cpu.mem_bytes == b->cpu.mem_bytes &&
	       a->cpu.dram_Bps == b->cpu.dram_Bps && a->price_per_hour == b->price_per_hour;
}

/* Keep the row if it is its machine's most tokens per dollar so far. */
static void rank_machine(sink *k, const zb_sweep_row *row, const zb_row_cost *cost)
{
	int i;
	for (i = 0; i < k->nmachines && !same_machine(&k->machines[i].cfg.hw, &row->cfg.hw); i++)
		;
	if (i == k->nmachines) {
		if (k->nmachines == RANK_MACHINES)
			return; /* beyond that many machines the ranking lists the first ones */
		k->nmachines++;
	} else if (k->machines[i].cost.tokens_per_dollar >= cost->tokens_per_dollar) {
		return;
	}
	k->machines[i] = (machine_best){ .cfg = row->cfg, .cost = *cost, .tps = row->res.tokens_per_s };
}

static zb_status emit_row(void *ctx, const zb_sweep_row *row, zb_error *err)
{
	sink *k = ctx;
	const zb_options *o = k->o;
	if (k->s->store && !k->unstored) {
		int64_t id;
		zb_store *db = k->s->store;
		const zb_graph *g = row->simulated ? &row->head : NULL;
		const zb_sim_result *res = row->simulated ? &row->res : NULL;
		zb_status st = zb_store_add_config(db, k->s->run_id, &row->cfg, row->config_json, &id, err);
		if (!st)
			zb_session_note_config(k->s, id);
		if (!st)
			st = zb_store_add_prediction(db, id, g, res, &row->mem, err);
		if (!st && o->timeline && row->simulated) {
			st = zb_store_add_tasks(db, id, row->graph, err);
			if (!st)
				st = zb_store_add_events(db, id, "predicted", row->graph, row->res.start, row->res.end,
							 err);
		}
		if (st) { /* the rows are still printed; the error after the table says they are not stored */
			k->store_err = *err;
			k->unstored = 1;
			zb_session_abort(k->s);
		}
	}
	if (o->json) {
		/* the element as an array member: every line two spaces in */
		fputs(k->rows ? ",\n  " : "[\n  ", stdout);
		for (const char *c = row->pred_json; *c; c++) {
			putchar(*c);
			if (*c == '\n')
				fputs("  ", stdout);
		}
	} else {
		zb_sweep_table_row(stdout, k->table, row);
	}
	zb_row_cost cost;
	zb_sweep_row_cost(row, k->table->tokens, &cost);
	if (row->simulated && (!k->have_best || row->res.tokens_per_s > k->best_res.tokens_per_s)) {
		k->have_best = 1;
		k->best = row->cfg;
		k->best_res = row->res;
		k->best_cost = cost;
	}
	if (row->simulated && cost.tokens_per_dollar >= 0)
		rank_machine(k, row, &cost);
	k->rows++;
	return ZB_OK;
}

static double json_tokens = 1e10; /* --tokens, for pred_json (set before the threads start) */

/* --json: the row's prediction, formatted on the sweep's threads */
static char *pred_json(const zb_sweep_row *row)
{
	json_t *j = zb_prediction_json(&row->cfg, row->simulated ? &row->head : NULL, row->simulated ? &row->res : NULL,
				       &row->mem);
	zb_sweep_row_json(j, row, json_tokens);
	char *text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	json_decref(j);
	return text;
}

static void print_head(const zb_options *o, const zb_sweep_grid *g, const sweep_flags *f, long long rows,
		       const zb_config *first, const zb_sources *src, const zb_sweep_table *t, const char *why)
{
	if (o->json)
		return;
	if (o->csv) {
		zb_sweep_table_head(stdout, t);
		return;
	}
	if (rows)
		zb_print_header(stdout, "sweep", first);
	if (why)
		printf("# %s\n", why);
	if (rows)
		zb_sources_print(stdout, first, src, 1);
	if (f->shard_n)
		printf("# shard %d/%d: rows %lld to %lld of %lld\n", f->shard_k, f->shard_n, g->first, g->end - 1,
		       g->total);
	printf("# %lld configurations; the lines above describe the first, the columns what varies; zbench and "
	       "deepspeed: each schedule's tokens/s on the row's hardware; train: %.3g tokens\n", rows, t->tokens);
	zb_sweep_table_head(stdout, t);
}

static int by_tokens_per_dollar(const void *a, const void *b)
{
	double x = ((const machine_best *)a)->cost.tokens_per_dollar, y = ((const machine_best *)b)->cost.tokens_per_dollar;
	return x < y ? 1 : x > y ? -1 : 0;
}

static void print_tail(const zb_options *o, sink *k)
{
	if (o->json) {
		fputs(k->rows ? "\n]\n" : "[]\n", stdout);
		return;
	}
	if (o->csv || !k->have_best)
		return;
	char label[512];
	zb_config_label(&k->best, label, sizeof label);
	printf("# fastest: %s: %.0f tokens/s (%.2f ms/step, bound by %s)\n", label, k->best_res.tokens_per_s,
	       k->best_res.step_time_s * 1e3, zb_resource_name(k->best_res.bottleneck));
	const zb_row_cost *c = &k->best_cost;
	if (c->deepspeed_tps >= 0 && c->zbench_tps >= 0)
		printf("# on that box DeepSpeed gets %.0f tokens/s; the hardware allows %.0f (zbench's schedule, x%.2f)\n",
		       c->deepspeed_tps, c->zbench_tps, c->zbench_tps / c->deepspeed_tps);
	if (!k->nmachines)
		return;
	qsort(k->machines, (size_t)k->nmachines, sizeof *k->machines, by_tokens_per_dollar);
	printf("# by tokens per dollar (each machine's best row; train %.3g tokens):\n", k->table->tokens);
	for (int i = 0; i < k->nmachines && i < 10; i++) {
		const machine_best *m = &k->machines[i];
		const zb_hw *h = &m->cfg.hw;
		printf("#  %2d. %s, %s, %s%s %d cores: %.3f M tokens per dollar, %.0f tokens/s at %.2f per hour, "
		       "%.1f hours and %.0f to train\n", i + 1, h->gpu.name, h->link.name, h->cpu.name,
		       h->cpu.hypothetical ? "*" : "", h->cpu.cores, m->cost.tokens_per_dollar / 1e6, m->tps,
		       h->price_per_hour, m->cost.train_hours, m->cost.train_cost);
	}
}

static int plot_sweep(const zb_options *o, int64_t run_id)
{
	zb_error err = { 0 };
	zb_store *db;
	zb_plot_request req = { .kind = ZB_PLOT_RATIO, .run_id = run_id, .output = o->plot };
	zb_plot_info info;
	int rc = 0;
	if (zb_store_open_readonly(&db, o->db ? o->db : ZB_STORE_DEFAULT_PATH, 2000, &err))
		return zb_report_error(&err);
	if (zb_plot_make(db, &req, &info, &err))
		rc = zb_report_error(&err);
	else if (!o->json && !o->csv)
		printf("# plot: %s -> %s\n", info.what, o->plot);
	zb_store_close(db);
	return rc;
}

/* Simulate, print and store the rows; Ctrl-C stops after the current row and
 * keeps what was stored. */
static int run_rows(const zb_options *o, const zb_sweep_grid *g, const sweep_flags *f, long long rows,
		    zb_session *s, const zb_error *begin_err, const zb_sweep_table *t)
{
	zb_error err = { 0 };
	sink k = { .o = o, .s = s, .table = t };
	k.machines = zb_xcalloc(RANK_MACHINES, sizeof *k.machines);
	if (begin_err) {
		k.unstored = 1;
		k.store_err = *begin_err;
	}
	zb_sweep_opts so = { .jobs = f->jobs, .config_json = s->store != NULL, .pred_json = o->json ? pred_json : NULL,
			     .timeline = o->timeline && s->store != NULL, .progress = stderr,
			     .both = !o->timeline && !f->one_schedule /* a second schedule per row would double a
								     timeline's memory */ };
	zb_stop_catch(); /* Ctrl-C, SIGTERM, SIGHUP: stop after the current row */
	long long done = 0;
	zb_status st = zb_sweep_run(g, rows, &so, emit_row, &k, &zb_stop_requested, &done, &err);
	zb_stop_release();
	int rc = 0;
	if (st && st != ZB_E_INTERRUPTED) {
		fflush(stdout);
		zb_session_abort(s);
		rc = zb_report_error(&err);
		goto out;
	}
	print_tail(o, &k);
	fflush(stdout);
	if (!k.unstored && s->store && zb_session_commit(s, st ? "interrupted" : "ok", &k.store_err))
		k.unstored = 1;
	if (k.unstored) {
		fprintf(stderr, "zbench: the %lld rows above were printed but NOT stored: %s\n", k.rows, k.store_err.msg);
		rc = zb_exit_code(k.store_err.status);
	} else if (st) {
		if (s->run_id)
			fprintf(stderr, "zbench: interrupted by %s after %lld of %lld configurations (the rows so far are "
				"stored as run %lld in %s, marked interrupted)\n", zb_stop_name(), done, rows,
				(long long)s->run_id, s->path);
		else
			fprintf(stderr, "zbench: interrupted by %s after %lld of %lld configurations (nothing stored: "
				"--no-db)\n", zb_stop_name(), done, rows);
		rc = zb_stop_exit_code();
	}
out:
	free(k.machines);
	return rc;
}

int cmd_sweep(int argc, char **argv)
{
	zb_options o = { 0 };
	zb_error err = { 0 };
	sweep_flags f = { .jobs = zb_sweep_default_jobs(), .tokens = 1e10 };
	const zb_flag extra[] = {
		{ .name = "jobs", .short_name = 'j', .kind = ZB_FLAG_INT, .dest = &f.jobs, .lo = 1, .hi = 1024, .arg = "<n>" },
		ZB_CALL("shard", &f, take_shard, "<k/n>", NULL),
		ZB_SWITCH("yes", &f.yes, NULL),
		ZB_REAL("tokens", &f.tokens, 1, 1e18, "<n>", NULL),
		ZB_SWITCH("no-other-schedule", &f.one_schedule, NULL),
		{ 0 },
	};
	int rc;
	if (!zb_options_parse(argc, argv, extra, usage, &o, &rc))
		return rc;
	if (o.plot) { /* fail before the sweep runs, not after */
		if (o.no_db) {
			fprintf(stderr, "zbench: --plot draws from the database: drop --no-db (got --plot '%s')\n", o.plot);
			return ZB_EXIT_INPUT;
		}
		if (zb_plot_check(o.plot, &err))
			return zb_report_error(&err);
	}
	zb_config_inputs in;
	zb_options_inputs(&o, &in);
	/* a purchase question (several values of a hardware axis) answers for DeepSpeed's
	 * schedule, what the buyer will run, unless --framework, a DeepSpeed config or a
	 * policy DeepSpeed lacks (dpu) says otherwise; the header says which */
	const char *why = NULL;
	int purchase = !o.axis[ZB_AX_FRAMEWORK] && !o.have_ds && zb_sweep_hw_varies(&in);
	/* a DeepSpeed config decides the policy and ratio itself */
	if (!o.axis[ZB_AX_POLICY] && !o.axis[ZB_AX_RATIO] && !o.have_ds) {
		o.axis[ZB_AX_POLICY] = purchase ? "none,offload,overlap" : "none,offload,overlap,dpu";
		o.axis[ZB_AX_RATIO] = "0:1:0.25";
	}
	if (purchase && strstr(o.axis[ZB_AX_POLICY] ? o.axis[ZB_AX_POLICY] : "", "dpu")) {
		why = "a purchase sweep answers for DeepSpeed's schedule, but policy dpu has none: these rows are "
		      "ZBENCH'S schedule (the deepspeed column is empty for dpu)";
	} else if (purchase) {
		o.axis[ZB_AX_FRAMEWORK] = "deepspeed";
		why = "a purchase sweep (several hardware values): DeepSpeed's schedule, what the buyer will run; "
		      "--framework zbench for zbench's";
	}
	zb_options_inputs(&o, &in);
	json_tokens = f.tokens;

	zb_sweep_grid g;
	if (zb_sweep_grid_init(&g, &in, f.shard_k, f.shard_n, f.yes, &err))
		return zb_report_error(&err);
	/* check every configuration first: a bad value fails the sweep before
	 * anything is printed or stored */
	long long rows;
	zb_config first;
	zb_sources src;
	if (zb_sweep_check(&g, &rows, &first, &src, &err)) {
		rc = zb_report_error(&err);
		goto out;
	}
	/* the database is opened before the work; a run that cannot begin (locked
	 * past the wait) still prints its rows, and says they were not stored */
	zb_session s;
	if (zb_session_prepare(&s, &o, &err)) {
		rc = zb_report_error(&err);
		goto out;
	}
	zb_error begin_err = { 0 };
	zb_session_begin(&s, "sweep", NULL, argc, argv, &begin_err);
	if (s.store)
		zb_store_set_no_savepoints(s.store, 1); /* the whole sweep rolls back on failure */
	zb_sweep_table t;
	zb_sweep_table_init(&t, &g, o.csv, o.axis[ZB_AX_GPUS] || o.axis[ZB_AX_NODES], f.tokens);
	print_head(&o, &g, &f, rows, &first, &src, &t, why);
	rc = run_rows(&o, &g, &f, rows, &s, begin_err.status ? &begin_err : NULL, &t);
	if (!rc && o.plot)
		rc = plot_sweep(&o, s.run_id);
out:
	zb_sweep_grid_free(&g);
	return rc;
}
