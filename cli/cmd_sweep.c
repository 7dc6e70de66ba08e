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
#include "cli/session.h"
#include "common/csv.h"
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
}

typedef struct sweep_flags {
	int jobs, shard_k, shard_n, yes;
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

static const char *cols[] = { "model", "pcie", "gpu", "cpu", "cores", "policy", "ratio", "mb", "gas",
			      "step", "tokens/s", "TFLOP/s", "bottleneck", "bound", "gpu_mem", "fits", "framework", "zero",
			      "sub_group" };
static const char *units[] = { "", "", "", "", "", "", "", "", "", "ms", "1/s", "per GPU", "", "ms", "GiB", "", "", "", "" };
static const char *fmt_head = "%-12s %-10s %-9s %-13s %5s %-8s %5s %4s %4s %10s %10s %8s %-10s %10s %8s %-4s %-9s %4s %s\n";

/* --gpus or --nodes given: the per-rank columns of report_ranks.h follow */
static int rank_cols;

/* A row's common columns without the newline (eol ""), for the rank columns to follow. */
static void print_row_fixed(FILE *f, const zb_sweep_row *p, int csv, double ratio, const char *step, const char *tps,
			    const char *tfl, const char *bound, const char *bn, const char *zero, const char *sg,
			    const char *eol)
{
	const zb_config *c = &p->cfg;
	char q[4][ZB_CSV_CELL_MAX]; /* the names as CSV cells (common/csv.h) */
	if (csv)
		fprintf(f, "%s,%s,%s,%s,%d,%s,%.4g,%d,%d,%s,%s,%s,%s,%s,%.2f,%s,%s,%s,%s%s",
			zb_csv_cell(c->model.name, q[0], sizeof q[0]), zb_csv_cell(c->hw.link.name, q[1], sizeof q[1]),
			zb_csv_cell(c->hw.gpu.name, q[2], sizeof q[2]), zb_csv_cell(c->hw.cpu.name, q[3], sizeof q[3]),
			c->hw.cpu.cores, zb_policy_name(c->policy.kind),
			ratio, c->policy.micro_batch, c->policy.gas, step, tps, tfl, bn, bound, p->mem.gpu_bytes / GiB,
			p->mem.fits ? "yes" : "no", zb_framework_name(c->framework), zero, sg, eol);
	else
		fprintf(f, "%-12s %-10s %-9s %-13s %5d %-8s %5.2f %4d %4d %10s %10s %8s %-10s %10s %8.1f %-4s %-9s %4s %-10s%s",
			c->model.name, c->hw.link.name, c->hw.gpu.name, c->hw.cpu.name, c->hw.cpu.cores,
			zb_policy_name(c->policy.kind), ratio, c->policy.micro_batch, c->policy.gas, step, tps, tfl,
			bn, bound, p->mem.gpu_bytes / GiB, p->mem.fits ? "yes" : "no", zb_framework_name(c->framework),
			zero, sg, eol);
}

static void print_row(FILE *f, const zb_sweep_row *p, int csv)
{
	const zb_config *c = &p->cfg;
	double ratio = c->policy.kind == ZB_POLICY_NONE ? 0.0 : c->policy.ratio;
	char step[32] = "-", tps[32] = "-", tfl[32] = "-", bound[32] = "-";
	const char *bn = "-";
	if (p->simulated) {
		snprintf(step, sizeof step, "%.2f", p->res.step_time_s * 1e3);
		snprintf(tps, sizeof tps, "%.0f", p->res.tokens_per_s);
		snprintf(tfl, sizeof tfl, "%.1f", p->res.tflops_per_gpu);
		snprintf(bound, sizeof bound, "%.2f", p->res.lower_bound_s * 1e3);
		bn = zb_resource_name(p->res.bottleneck);
	}
	char zero[8] = "-", sg[24] = "-";
	if (c->framework == ZB_FW_DEEPSPEED) {
		snprintf(zero, sizeof zero, "%d", zb_ds_stage(c));
		snprintf(sg, sizeof sg, "%lld", (long long)zb_ds_sub_group(c));
	}
	if (rank_cols) { /* the same columns, then the ranks' */
		print_row_fixed(f, p, csv, ratio, step, tps, tfl, bound, bn, zero, sg, "");
		zb_ranks_sweep_row(f, csv, c, p->simulated ? &p->head : NULL, p->simulated ? &p->res : NULL);
		fputc('\n', f);
		return;
	}
	if (csv) {
		print_row_fixed(f, p, csv, ratio, step, tps, tfl, bound, bn, zero, sg, "\n");
		return;
	}
	fprintf(f, "%-12s %-10s %-9s %-13s %5d %-8s %5.2f %4d %4d %10s %10s %8s %-10s %10s %8.1f %-4s %-9s %4s %s\n",
		c->model.name, c->hw.link.name, c->hw.gpu.name, c->hw.cpu.name, c->hw.cpu.cores,
		zb_policy_name(c->policy.kind), ratio, c->policy.micro_batch, c->policy.gas, step, tps, tfl, bn, bound,
		p->mem.gpu_bytes / GiB, p->mem.fits ? "yes" : "no", zb_framework_name(c->framework), zero, sg);
}

/* What each row goes to. */
typedef struct sink {
	const zb_options *o;
	zb_session *s;
	long long rows;
	int have_best;
	zb_config best;
	zb_sim_result best_res;
	int unstored;       /* storing failed (locked, damaged, disk full): rows are still printed */
	zb_error store_err; /* ... why */
} sink;

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
		print_row(stdout, row, o->csv);
	}
	if (row->simulated && (!k->have_best || row->res.tokens_per_s > k->best_res.tokens_per_s)) {
		k->have_best = 1;
		k->best = row->cfg;
		k->best_res = row->res;
	}
	k->rows++;
	return ZB_OK;
}

/* --json: the row's prediction, formatted on the sweep's threads */
static char *pred_json(const zb_sweep_row *row)
{
	json_t *j = zb_prediction_json(&row->cfg, row->simulated ? &row->head : NULL, row->simulated ? &row->res : NULL,
				       &row->mem);
	char *text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	json_decref(j);
	return text;
}

static void print_head(const zb_options *o, const zb_sweep_grid *g, const sweep_flags *f, long long rows,
		       const zb_config *first, const zb_sources *src)
{
	if (o->json)
		return;
	rank_cols = o->axis[ZB_AX_GPUS] || o->axis[ZB_AX_NODES];
	if (o->csv) {
		for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
			printf("%s%s%s%s", i ? "," : "", cols[i], units[i][0] ? "_" : "", units[i]);
		if (rank_cols)
			zb_ranks_sweep_head(stdout, 1, 0);
		printf("\n");
		return;
	}
	if (rows)
		zb_print_header(stdout, "sweep", first);
	if (rows)
		zb_sources_print(stdout, first, src, 1);
	if (f->shard_n)
		printf("# shard %d/%d: rows %lld to %lld of %lld\n", f->shard_k, f->shard_n, g->first, g->end - 1,
		       g->total);
	printf("# %lld configurations; the lines above describe the first, the columns what varies\n", rows);
	if (rank_cols) { /* the rank columns after a padded sub_group column */
		static const char *fmt_wide = "%-12s %-10s %-9s %-13s %5s %-8s %5s %4s %4s %10s %10s %8s %-10s %10s %8s %-4s %-9s %4s %-10s";
		for (int u = 0; u < 2; u++) {
			const char **v = u ? units : cols;
			printf(fmt_wide, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12],
			       v[13], v[14], v[15], v[16], v[17], v[18]);
			zb_ranks_sweep_head(stdout, 0, u);
			printf("\n");
		}
		return;
	}
	printf(fmt_head, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8],
	       cols[9], cols[10], cols[11], cols[12], cols[13], cols[14], cols[15], cols[16], cols[17], cols[18]);
	printf(fmt_head, units[0], units[1], units[2], units[3], units[4], units[5], units[6], units[7],
	       units[8], units[9], units[10], units[11], units[12], units[13], units[14], units[15], units[16],
	       units[17], units[18]);
}

static void print_tail(const zb_options *o, const sink *k)
{
	if (o->json) {
		fputs(k->rows ? "\n]\n" : "[]\n", stdout);
	} else if (!o->csv && k->have_best) {
		char label[512];
		zb_config_label(&k->best, label, sizeof label);
		printf("# fastest: %s: %.0f tokens/s (%.2f ms/step, bound by %s)\n", label, k->best_res.tokens_per_s,
		       k->best_res.step_time_s * 1e3, zb_resource_name(k->best_res.bottleneck));
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
		    zb_session *s, const zb_error *begin_err)
{
	zb_error err = { 0 };
	sink k = { .o = o, .s = s };
	if (begin_err) {
		k.unstored = 1;
		k.store_err = *begin_err;
	}
	zb_sweep_opts so = { .jobs = f->jobs, .config_json = s->store != NULL, .pred_json = o->json ? pred_json : NULL,
			     .timeline = o->timeline && s->store != NULL, .progress = stderr };
	zb_stop_catch(); /* Ctrl-C, SIGTERM, SIGHUP: stop after the current row */
	long long done = 0;
	zb_status st = zb_sweep_run(g, rows, &so, emit_row, &k, &zb_stop_requested, &done, &err);
	zb_stop_release();
	if (st && st != ZB_E_INTERRUPTED) {
		fflush(stdout);
		zb_session_abort(s);
		return zb_report_error(&err);
	}
	print_tail(o, &k);
	fflush(stdout);
	if (!k.unstored && s->store && zb_session_commit(s, st ? "interrupted" : "ok", &k.store_err))
		k.unstored = 1;
	if (k.unstored) {
		fprintf(stderr, "zbench: the %lld rows above were printed but NOT stored: %s\n", k.rows, k.store_err.msg);
		return zb_exit_code(k.store_err.status);
	}
	if (st) {
		if (s->run_id)
			fprintf(stderr, "zbench: interrupted by %s after %lld of %lld configurations (the rows so far are "
				"stored as run %lld in %s, marked interrupted)\n", zb_stop_name(), done, rows,
				(long long)s->run_id, s->path);
		else
			fprintf(stderr, "zbench: interrupted by %s after %lld of %lld configurations (nothing stored: "
				"--no-db)\n", zb_stop_name(), done, rows);
		return zb_stop_exit_code();
	}
	return 0;
}

int cmd_sweep(int argc, char **argv)
{
	zb_options o = { 0 };
	zb_error err = { 0 };
	sweep_flags f = { .jobs = zb_sweep_default_jobs() };
	const zb_flag extra[] = {
		{ .name = "jobs", .short_name = 'j', .kind = ZB_FLAG_INT, .dest = &f.jobs, .lo = 1, .hi = 1024, .arg = "<n>" },
		ZB_CALL("shard", &f, take_shard, "<k/n>", NULL),
		ZB_SWITCH("yes", &f.yes, NULL),
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
	/* a DeepSpeed config decides the policy and ratio itself */
	if (!o.axis[ZB_AX_POLICY] && !o.axis[ZB_AX_RATIO] && !o.have_ds) {
		o.axis[ZB_AX_POLICY] = "none,offload,overlap,dpu";
		o.axis[ZB_AX_RATIO] = "0:1:0.25";
	}

	zb_sweep_grid g;
	zb_config_inputs in;
	zb_options_inputs(&o, &in);
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
	print_head(&o, &g, &f, rows, &first, &src);
	rc = run_rows(&o, &g, &f, rows, &s, begin_err.status ? &begin_err : NULL);
	if (!rc && o.plot)
		rc = plot_sweep(&o, s.run_id);
out:
	zb_sweep_grid_free(&g);
	return rc;
}
