/*
 * cmd_sweep.c - zbench sweep: predict the cartesian product of the axes given as
 * lists or ranges; a fixed-width table with a units row (or --csv / --json), every
 * row stored in the database in one transaction.
 *
 * Without --policy and --ratio the grid covers the policies none, offload,
 * overlap and dpu and the ratios 0, 0.25, 0.5, 0.75, 1, so `zbench sweep` alone
 * and `zbench sweep --pcie gen4` answer "which policy and ratio, and why" for the
 * default gpt2-large example.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/commands.h"
#include "bench/options.h"
#include "bench/report.h"
#include "bench/session.h"
#include "plots/plot.h"
#include "sim/limits.h"
#include "sim/predict.h"

#define MAX_ROWS 100000
#define SWEEP_TIMELINE_TASKS (4 * ZB_MAX_TASKS) /* ~1 GB of schedules and times */
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
}

typedef struct axis_values {
	int n;
	char **vals;
	char *storage;
} axis_values;

static const char *cols[] = { "model", "pcie", "gpu", "cpu", "cores", "policy", "ratio", "mb", "gas",
			      "step", "tokens/s", "TFLOP/s", "bottleneck", "bound", "gpu_mem", "fits" };
static const char *units[] = { "", "", "", "", "", "", "", "", "", "ms", "1/s", "per GPU", "", "ms", "GiB", "" };
static const char *fmt_head = "%-12s %-10s %-9s %-13s %5s %-8s %5s %4s %4s %10s %10s %8s %-10s %10s %8s %s\n";

static void print_row(FILE *f, const zb_prediction *p, int csv)
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
	if (csv)
		fprintf(f, "%s,%s,%s,%s,%d,%s,%.4g,%d,%d,%s,%s,%s,%s,%s,%.2f,%s\n", c->model.name, c->hw.link.name,
			c->hw.gpu.name, c->hw.cpu.name, c->hw.cpu.cores, zb_policy_name(c->policy.kind), ratio,
			c->policy.micro_batch, c->policy.gas, step, tps, tfl, bn, bound, p->mem.gpu_bytes / GiB,
			p->mem.fits ? "yes" : "no");
	else
		fprintf(f, "%-12s %-10s %-9s %-13s %5d %-8s %5.2f %4d %4d %10s %10s %8s %-10s %10s %8.1f %s\n",
			c->model.name, c->hw.link.name, c->hw.gpu.name, c->hw.cpu.name, c->hw.cpu.cores,
			zb_policy_name(c->policy.kind), ratio, c->policy.micro_batch, c->policy.gas, step, tps, tfl,
			bn, bound, p->mem.gpu_bytes / GiB, p->mem.fits ? "yes" : "no");
}

int cmd_sweep(int argc, char **argv)
{
	zb_options o = { 0 };
	zb_error err = { 0 };
	int rc;
	if (!zb_options_parse(argc, argv, NULL, NULL, NULL, usage, &o, &rc))
		return rc;
	if (o.plot) { /* fail before the sweep runs, not after */
		if (o.no_db) {
			fprintf(stderr, "zbench: --plot draws from the database: drop --no-db (got --plot '%s')\n", o.plot);
			return 2;
		}
		if (zb_plot_check(o.plot, &err))
			return zb_report_error(&err);
	}
	/* a DeepSpeed config decides the policy and ratio itself */
	if (!o.axis[ZB_AX_POLICY] && !o.axis[ZB_AX_RATIO] && !o.have_ds) {
		o.axis[ZB_AX_POLICY] = "none,offload,overlap,dpu";
		o.axis[ZB_AX_RATIO] = "0:1:0.25";
	}

	/* expand the axes */
	axis_values ax[ZB_AX_COUNT];
	memset(ax, 0, sizeof ax);
	long long total = 1;
	rc = 0;
	zb_sources src0; /* where the first row's settings came from */
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		ax[a].n = 1;
		if (!o.axis[a])
			continue;
		ax[a].n = zb_axis_values(o.axis[a], a, &ax[a].vals, &ax[a].storage, &err);
		if (ax[a].n < 0) {
			rc = zb_report_error(&err);
			goto out;
		}
		total *= ax[a].n;
		if (total > MAX_ROWS) {
			zb_fail(&err, ZB_E_INPUT, "sweep of more than %d configurations (%s has %d values)", MAX_ROWS,
				zb_axis_flag(a), ax[a].n);
			rc = zb_report_error(&err);
			goto out;
		}
	}

	/* build and validate every configuration first: a bad value fails the
	 * sweep before anything is printed or stored */
	zb_config *cfgs = zb_xmalloc((size_t)total * sizeof *cfgs);
	int idx[ZB_AX_COUNT] = { 0 };
	int ncfg = 0;
	for (long long row = 0; row < total; row++) {
		const char *v[ZB_AX_COUNT];
		for (int a = 0; a < ZB_AX_COUNT; a++)
			v[a] = ax[a].vals ? ax[a].vals[idx[a]] : NULL;
		zb_config c;
		if (zb_options_config_src(v, &o, &c, row == 0 ? &src0 : NULL, &err)) {
			rc = zb_report_error(&err);
			free(cfgs);
			goto out;
		}
		/* the ratio means nothing without offload: one row for 'none' */
		int dup = c.policy.kind == ZB_POLICY_NONE && ax[ZB_AX_RATIO].vals && idx[ZB_AX_RATIO] > 0;
		if (!dup)
			cfgs[ncfg++] = c;
		for (int a = ZB_AX_COUNT - 1; a >= 0; a--) { /* odometer, last axis fastest */
			if (++idx[a] < ax[a].n)
				break;
			idx[a] = 0;
		}
	}

	zb_session s;
	if (zb_session_prepare(&s, &o, &err)) {
		free(cfgs);
		rc = zb_report_error(&err);
		goto out;
	}
	/* --timeline keeps every schedule until the one transaction stores them:
	 * bounded in all, like one schedule is (without it, each row keeps only its
	 * figures) */
	if (o.timeline) {
		int64_t sum = 0;
		for (int i = 0; i < ncfg; i++) {
			zb_memory m;
			zb_memory_estimate(&cfgs[i], &m);
			sum += m.fits ? zb_limits_tasks(&cfgs[i]) : 0;
		}
		if (sum > SWEEP_TIMELINE_TASKS) {
			zb_session_abort(&s);
			free(cfgs);
			zb_fail(&err, ZB_E_INPUT,
				"sweep --timeline of %d configurations: ~%lld tasks in all exceeds the limit %lld (drop "
				"--timeline, or sweep fewer configurations or steps)",
				ncfg, (long long)sum, (long long)SWEEP_TIMELINE_TASKS);
			rc = zb_report_error(&err);
			goto out;
		}
	}
	zb_prediction *preds = zb_xcalloc((size_t)ncfg, sizeof *preds);
	int npred = 0;
	for (int i = 0; i < ncfg; i++, npred++) {
		if (zb_predict(&preds[i], &cfgs[i], &err)) {
			zb_session_abort(&s);
			rc = zb_report_error(&err);
			goto free_preds;
		}
		if (!o.timeline)
			zb_prediction_drop_schedule(&preds[i]);
	}

	/* Rows that cannot be stored (database locked, damaged, disk full) are still
	 * printed: the error after the table says they were not stored. */
	zb_error store_err = { 0 };
	int stored = !zb_session_begin(&s, "sweep", NULL, argc, argv, &store_err);
	for (int i = 0; stored && i < ncfg; i++) {
		int64_t id;
		zb_prediction *p = &preds[i];
		if (zb_session_store_prediction(&s, &p->cfg, &p->graph, p->simulated ? &p->res : NULL, &p->mem,
						o.timeline, &id, &store_err)) {
			zb_session_abort(&s);
			stored = 0;
		}
	}
	if (stored && zb_session_commit(&s, "ok", &store_err))
		stored = 0;

	if (o.json) {
		json_t *arr = json_array();
		for (int i = 0; i < ncfg; i++) {
			zb_prediction *p = &preds[i];
			json_array_append_new(arr, zb_prediction_json(&p->cfg, &p->graph,
								      p->simulated ? &p->res : NULL, &p->mem));
		}
		zb_json_print(stdout, arr);
		json_decref(arr);
	} else if (o.csv) {
		for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
			printf("%s%s%s%s", i ? "," : "", cols[i], units[i][0] ? "_" : "", units[i]);
		printf("\n");
		for (int i = 0; i < ncfg; i++)
			print_row(stdout, &preds[i], 1);
	} else {
		zb_print_header(stdout, "sweep", &cfgs[0]);
		zb_sources_print(stdout, &cfgs[0], &src0, 1);
		printf("# %d configurations; the lines above describe the first, the columns what varies\n", ncfg);
		printf(fmt_head, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8],
		       cols[9], cols[10], cols[11], cols[12], cols[13], cols[14], cols[15]);
		printf(fmt_head, units[0], units[1], units[2], units[3], units[4], units[5], units[6], units[7],
		       units[8], units[9], units[10], units[11], units[12], units[13], units[14], units[15]);
		int best = -1;
		for (int i = 0; i < ncfg; i++) {
			print_row(stdout, &preds[i], 0);
			if (preds[i].simulated && (best < 0 || preds[i].res.tokens_per_s > preds[best].res.tokens_per_s))
				best = i;
		}
		if (best >= 0) {
			char label[512];
			zb_config_label(&preds[best].cfg, label, sizeof label);
			printf("# fastest: %s: %.0f tokens/s (%.2f ms/step, bound by %s)\n", label,
			       preds[best].res.tokens_per_s, preds[best].res.step_time_s * 1e3,
			       zb_resource_name(preds[best].res.bottleneck));
		}
	}

	if (!stored) {
		fprintf(stderr, "zbench: the %d rows above were printed but NOT stored: %s\n", ncfg, store_err.msg);
		rc = zb_exit_code(store_err.status);
		goto free_preds;
	}
	if (o.plot) {
		zb_store *db;
		zb_plot_request req = { .kind = ZB_PLOT_RATIO, .run_id = s.run_id, .output = o.plot };
		zb_plot_info info;
		if (zb_store_open_readonly(&db, o.db ? o.db : ZB_STORE_DEFAULT_PATH, 2000, &err)) {
			rc = zb_report_error(&err);
		} else {
			if (zb_plot_make(db, &req, &info, &err))
				rc = zb_report_error(&err);
			else if (!o.json && !o.csv)
				printf("# plot: %s -> %s\n", info.what, o.plot);
			zb_store_close(db);
		}
	}

free_preds:
	for (int i = 0; i < npred; i++)
		zb_prediction_free(&preds[i]);
	free(preds);
	free(cfgs);
out:
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		free(ax[a].vals);
		free(ax[a].storage);
	}
	return rc;
}
