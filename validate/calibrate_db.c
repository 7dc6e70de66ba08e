/*
 * calibrate_db.c - zbench calibrate --from-db: the executor profile fitted from the
 * measured tasks of a validate run (analysis/kfit.h), written as a hardware profile,
 * and how well it predicts: the step time of every measured configuration re-simulated
 * on the base and on the fitted profile (in-sample), and on profiles fitted on half of
 * the configurations predicting the other half, and with --holdout fitted on what a split
 * rule leaves in and judged on what it holds out (analysis/kfit_split.h).
 * --eval FILE instead evaluates a given profile on the run without fitting.
 */
#include "validate/calibrate_db.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/kfit.h"
#include "analysis/kfit_eval.h"
#include "analysis/kfit_host.h"
#include "analysis/kfit_split.h"
#include "validate/calibrate_comm.h"
#include "report/report.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

/* The options and the report's stream of this calibration (one per process). */
static zb_calibrate_db_opts o;
static FILE *out;

static zb_status load_hw(const char *name, zb_hw *hw, zb_error *err)
{
	if (!name) {
		zb_preset_default_hw(hw);
		return ZB_OK;
	}
	if (strchr(name, '/') || strstr(name, ".json"))
		return zb_hw_load(name, hw, err);
	return zb_preset_hw(name, hw, err);
}

static void print_summary(const char *label, const zb_kfit_summary *m)
{
	fprintf(out, "%-34s MAPE %6.2f%%  worst %6.2f%%  within 3%%: %d/%d  within 8%%: %d/%d  speedups within 5%%: %d/%d "
		"(worst %.1f%%)  order %s (%d of %d pairs swapped)\n",
		label, 100 * m->mape, 100 * m->worst, m->within3, m->n, m->within8, m->n, m->speed_ok, m->nspeed,
		100 * m->speed_worst, m->order_swaps ? "NOT preserved" : "preserved", m->order_swaps, m->order_pairs);
	fprintf(out, "%-34s beyond the noise (2 standard errors of the rounds): %d speedup%s off by more than 5%%, %d of "
		"%d pairs swapped\n",
		"", m->speed_miss_sure, m->speed_miss_sure == 1 ? "" : "s", m->order_swaps_sure, m->order_pairs_sure);
	if (m->noisy) /* only then: the line of every other run stays as it was */
		fprintf(out, "%-34s measured to %.0f %%: worst %.2f%% (%d configuration%s measured less surely left out)\n",
			"", 100 * ZB_KFIT_JUDGE_NOISE, 100 * m->worst_sure, m->noisy, m->noisy == 1 ? "" : "s");
	fprintf(out, "%-34s busy-time MAPE:", "");
	for (int r = 0; r < ZB_RES_COUNT; r++)
		if (isfinite(m->busy_mape[r]))
			fprintf(out, " %s %.1f%%", zb_resource_name((zb_resource)r), 100 * m->busy_mape[r]);
	fprintf(out, "\n");
}

/* One fit and its predictions of every configuration; the four of a --from-db run (in-sample,
 * the two halves, --holdout) are independent and run on threads of their own: each
 * re-simulates every configuration tens of times (the fid suite's 44: ~30 s a fit on one core). */
typedef struct fit_job {
	const zb_kfit_set *s;
	const zb_hw *base;
	unsigned char *use; /* NULL: every configuration */
	zb_hw fitted;
	zb_kfit_stats stats;
	zb_kfit_pred *pred; /* s->n */
	zb_status st;
	zb_error err;
	pthread_t thread;
	int started;
} fit_job;

static void *fit_job_run(void *arg)
{
	fit_job *j = arg;
	j->stats = (zb_kfit_stats){ 0 };
	j->st = zb_kfit_fit(j->s, j->use, j->base, &j->fitted, &j->stats, &j->err);
	if (!j->st)
		j->st = zb_kfit_predict(j->s, &j->fitted, j->pred, &j->err);
	return NULL;
}

static void fit_job_init(fit_job *j, const zb_kfit_set *s, const zb_hw *base, int with_use)
{
	*j = (fit_job){ .s = s, .base = base };
	j->use = with_use ? zb_xcalloc((size_t)s->n, 1) : NULL;
	j->pred = zb_xcalloc((size_t)s->n, sizeof *j->pred);
}

static void fit_job_free(fit_job *j)
{
	free(j->use);
	free(j->pred);
}

/* Run jobs[0..n) at once (one after the other where a thread cannot start); the first
 * failure in *err. */
static zb_status run_fit_jobs(fit_job *jobs, int n, zb_error *err)
{
	for (int i = 0; i < n; i++)
		jobs[i].started = pthread_create(&jobs[i].thread, NULL, fit_job_run, &jobs[i]) == 0;
	for (int i = 0; i < n; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].thread, NULL);
		else
			fit_job_run(&jobs[i]);
	}
	for (int i = 0; i < n; i++)
		if (jobs[i].st) {
			*err = jobs[i].err;
			return jobs[i].st;
		}
	return ZB_OK;
}

/* The fits of a --from-db run at once: with `fit`, in-sample (*fitted, *stats and its
 * predictions in pf) and each half predicting the other (px). */
static zb_status fit_all(const zb_kfit_set *s, const zb_hw *base, int fit, zb_hw *fitted, zb_kfit_stats *stats,
			 zb_kfit_pred *pf, zb_kfit_pred *px, zb_error *err)
{
	fit_job jobs[3];
	int njobs = 0;
	zb_status st = ZB_OK;
	if (fit) {
		fit_job_init(&jobs[njobs++], s, base, 0);
		int *point = zb_xmalloc((size_t)(s->n ? s->n : 1) * sizeof *point);
		zb_kfit_points(s, point); /* the rounds of a configuration stay on one side */
		for (int half = 0; half < 2; half++) {
			fit_job *j = &jobs[njobs++];
			fit_job_init(j, s, base, 1);
			for (int i = 0; i < s->n; i++)
				j->use[i] = (point[i] % 2) != half;
		}
		free(point);
	}
	if (njobs)
		st = run_fit_jobs(jobs, njobs, err);
	if (!st && fit) {
		*fitted = jobs[0].fitted;
		*stats = jobs[0].stats;
		memcpy(pf, jobs[0].pred, (size_t)s->n * sizeof *pf);
		for (int half = 1; half <= 2; half++)
			for (int i = 0; i < s->n; i++)
				if (!jobs[half].use[i])
					px[i] = jobs[half].pred[i];
	}
	for (int i = 0; i < njobs; i++)
		fit_job_free(&jobs[i]);
	return st;
}

/* --busy: each configuration's busy time per resource, ms per step (measured, base,
 * fitted or eval), where the resource was busy in the measurement. */
static void print_busy(const zb_kfit_set *s, const zb_kfit_pred *pb, const zb_kfit_pred *pf)
{
	const int res[] = { ZB_RES_GPU, ZB_RES_D2H, ZB_RES_H2D, ZB_RES_CPU, ZB_RES_GPU_OPT };
	fprintf(out, "# busy ms per step: measured / base / %s, per resource\n%3s  %-52s", o.eval ? "eval" : "fitted", "#",
		"configuration");
	for (size_t r = 0; r < sizeof res / sizeof res[0]; r++)
		fprintf(out, " %23s", zb_resource_name((zb_resource)res[r]));
	fprintf(out, "\n");
	for (int i = 0; i < s->n; i++) {
		const zb_kfit_item *x = &s->it[i];
		fprintf(out, "%3d  %-52s", i + 1, x->key);
		for (size_t r = 0; r < sizeof res / sizeof res[0]; r++) {
			double m = x->meas_busy_s[res[r]];
			if (m > 1e-3 * x->meas_step_s)
				fprintf(out, " %7.1f/%7.1f/%7.1f", m * 1e3, pb[i].busy_s[res[r]] * 1e3, pf[i].busy_s[res[r]] * 1e3);
			else
				fprintf(out, " %23s", "-");
		}
		fprintf(out, "\n");
	}
}

/* Several ranks: each configuration's collectives, ms per step. */
static void print_comm(const zb_kfit_set *s, const zb_kfit_pred *pb, const zb_kfit_pred *pf)
{
	int head = 0;
	for (int i = 0; i < s->n; i++) {
		const zb_kfit_item *x = &s->it[i];
		if (x->g.ranks <= 1)
			continue;
		if (!head++)
			fprintf(out, "# collectives, ms per step: measured transfer (latest rank's start to the ranks' mean end),\n"
				"# the slowest rank's NCCL stream occupancy (waits included), predicted on base and %s\n"
				"%3s  %-52s %9s %9s %9s %7s %9s %7s\n",
				o.eval ? "eval" : "fitted", "#", "configuration", "transfer", "occupied", "base", "err",
				o.eval ? "eval" : "fitted", "err");
		double m = x->meas_busy_s[ZB_RES_COMM];
		fprintf(out, "%3d  %-52s %9.2f %9.2f %9.2f %+7.1f %9.2f %+7.1f\n", i + 1, x->key, m * 1e3, x->meas_comm_raw_s * 1e3,
			pb[i].busy_s[ZB_RES_COMM] * 1e3, 100 * (pb[i].busy_s[ZB_RES_COMM] / m - 1),
			pf[i].busy_s[ZB_RES_COMM] * 1e3, 100 * (pf[i].busy_s[ZB_RES_COMM] / m - 1));
	}
}

static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *summary_json_plain(const zb_kfit_summary *m, json_t *b);

static json_t *summary_json(const zb_kfit_summary *m)
{
	json_t *b = json_object();
	for (int r = 0; r < ZB_RES_COUNT; r++)
		json_object_set_new(b, zb_resource_name((zb_resource)r), num(m->busy_mape[r]));
	json_t *o2 = summary_json_plain(m, b);
	if (m->noisy) { /* only then: the object of every other run stays as it was */
		json_object_set_new(o2, "noisy_configs", json_integer(m->noisy));
		json_object_set_new(o2, "max_abs_err_measured_to_5pct", num(m->worst_sure));
	}
	return o2;
}

static json_t *summary_json_plain(const zb_kfit_summary *m, json_t *b)
{
	return json_pack("{s:i, s:o, s:o, s:i, s:i, s:i, s:i, s:o, s:i, s:i, s:i, s:i, s:i, s:o}", "configs", m->n,
			 "mape", num(m->mape), "max_abs_err", num(m->worst), "within_3pct", m->within3, "within_8pct",
			 m->within8, "speedups", m->nspeed, "speedups_within_5pct", m->speed_ok, "speedup_worst",
			 num(m->speed_worst), "order_pairs", m->order_pairs, "order_swaps", m->order_swaps,
			 "order_pairs_beyond_noise", m->order_pairs_sure, "order_swaps_beyond_noise", m->order_swaps_sure,
			 "speedup_misses_beyond_noise", m->speed_miss_sure, "busy_mape", b);
}

/* --holdout: the held-out fit's predictions of the held-out and judged configurations, and its
 * errors, in-sample and held out, by model and by policy. */
static void print_holdout_rows(const zb_kfit_set *s, const zb_kfit_set *j, const zb_kfit_holdout *h)
{
	fprintf(out, "# --holdout %s: fitted on %d configurations, judged on %d held out and %d of %s the fit never saw\n"
		"%3s  %-52s %9s %9s %7s\n", o.holdout, h->fit_n, h->held_n, h->judge_n, o.judge_db ? o.judge_db : "-",
		"#", "configuration", "measured", "held-out", "err");
	for (int side = 0; side < 2; side++)
		for (int i = 0; i < (side ? (j ? j->n : 0) : s->n); i++) {
			const zb_kfit_item *x = side ? &j->it[i] : &s->it[i];
			double m = x->meas_step_s, p = (side ? h->jpred : h->pred)[i].step_s;
			if ((side ? h->judged : h->held)[i])
				fprintf(out, "%3d%c %-52s %9.2f %9.2f %+7.1f\n", i + 1, side ? 'j' : ' ', x->key, m * 1e3,
					p * 1e3, 100 * (p / m - 1));
		}
}

static void print_holdout(const zb_kfit_holdout *h)
{
	char label[96];
	snprintf(label, sizeof label, "held-out fit, in-sample (%d)", h->fit_n);
	print_summary(label, &h->in_sample);
	snprintf(label, sizeof label, "held out (%d + %d judged)", h->held_n, h->judge_n);
	print_summary(label, &h->held_out);
	for (int f = 0; f < h->nfam; f++) {
		const zb_kfit_summary *m = &h->fam[f].sum;
		fprintf(out, "  held out, %-24s MAPE %6.2f%%  worst %6.2f%%  configurations %d\n", h->fam[f].name,
			100 * m->mape, 100 * m->worst, m->n);
	}
}

static json_t *holdout_json(const zb_kfit_set *j, const zb_kfit_holdout *h)
{
	json_t *fam = json_object(), *judged = json_array();
	for (int f = 0; f < h->nfam; f++)
		json_object_set_new(fam, h->fam[f].name, summary_json(&h->fam[f].sum));
	for (int i = 0; j && i < j->n; i++)
		if (h->judged[i])
			json_array_append_new(judged, json_pack("{s:s, s:I, s:o, s:o}", "key", j->it[i].key, "config_id",
								(json_int_t)j->it[i].config_id, "measured_step_s",
								num(j->it[i].meas_step_s), "holdout_step_s", num(h->jpred[i].step_s)));
	return json_pack("{s:s, s:o, s:i, s:i, s:i, s:o, s:o, s:o, s:o}", "rule", o.holdout, "judge_db",
			 o.judge_db ? json_string(o.judge_db) : json_null(), "fit_configs", h->fit_n, "held_out_configs",
			 h->held_n, "judged_configs", h->judge_n, "in_sample", summary_json(&h->in_sample), "held_out",
			 summary_json(&h->held_out), "families", fam, "judged", judged);
}

/* --fit-host warns when a configuration's mean is less sure than this (its rounds' spread) */
#define ANCHOR_NOISE 0.05

/* --fit-host: --base's host scaled to this run's measurements (kfit_host.h), written to
 * --out; the run's errors before and after. */
static zb_status fit_host(const zb_kfit_set *s, const zb_hw *base, zb_error *err)
{
	zb_hw fitted;
	zb_kfit_host h;
	zb_status st = zb_kfit_host_fit(s, base, &fitted, &h, err);
	zb_kfit_pred *pb = zb_xcalloc((size_t)s->n, sizeof *pb), *pf = zb_xcalloc((size_t)s->n, sizeof *pf);
	if (!st)
		st = zb_kfit_predict(s, base, pb, err);
	if (!st)
		st = zb_kfit_predict(s, &fitted, pf, err);
	if (!st) {
		snprintf(fitted.name, sizeof fitted.name, "%s", o.name ? o.name : "executor-fit");
		st = zb_hw_save(o.out, &fitted, err);
	}
	if (st) {
		free(pb), free(pf);
		return st;
	}
	zb_kfit_summary mb, mf, mx;
	zb_kfit_summarize(s, pb, &mb);
	zb_kfit_summarize(s, pf, &mf);
	/* half-out: the scales fitted on half of the configurations, predicting the others
	 * (needs 4; the anchor's 5 give a rough one, a suite's 44 a real one) */
	zb_error hx = { 0 };
	int half_out = zb_kfit_host_half_out(s, base, pf, &hx) == ZB_OK; /* pf: summarized above, free again */
	if (half_out)
		zb_kfit_summarize(s, pf, &mx);
	free(pb), free(pf);
	const char *bname = o.base ? o.base : "h200-machine";
	if (o.json) {
		json_t *root = json_pack("{s:s, s:I, s:{s:f, s:f, s:i, s:i, s:f}, s:o, s:o, s:s}", "db", o.db, "run_id",
					 (json_int_t)s->run_id, "host", "cpu", h.cpu, "mem", h.mem, "configs", h.configs,
					 "pageable_configs", h.pageable, "noise_worst", mf.noise_worst, "base",
					 summary_json(&mb), "fitted", summary_json(&mf), "profile", o.out);
		json_object_set_new(root, "half_out", half_out ? summary_json(&mx) : json_null());
		zb_json_print(out, root);
		json_decref(root);
		return ZB_OK;
	}
	fprintf(out, "# zbench calibrate --from-db %s --fit-host: run %lld, %d configurations, over %s\n", o.db,
		(long long)s->run_id, h.configs, bname);
	fprintf(out, "host: CPU Adam per core x %.2f, memory (DRAM, Adam's ceiling) x %.2f\n", h.cpu, h.mem);
	if (h.pageable)
		fprintf(out, "pageable copies (%d measured configurations, %d copies): H2D %.2f GB/s and D2H %.2f GB/s alone, "
			"pageable_queue %.3f\n",
			h.pageable, h.pageable_copies, fitted.link.pageable_h2d_Bps / 1e9, fitted.link.pageable_d2h_Bps / 1e9,
			fitted.gpu.exec.pageable_queue);
	print_summary(bname, &mb);
	print_summary("host fitted", &mf);
	if (half_out)
		print_summary("host fitted on half, other half", &mx);
	/* a disturbed anchor moves the profile by its disturbance (seen: rounds of 189 and 161 ms) */
	if (mf.noise_worst > ANCHOR_NOISE && mf.noise_worst_item >= 0)
		fprintf(out, "warning: the rounds of %s differ: its mean is uncertain by %.1f %% (> %.0f %%), and the scales "
			"may be off by as much; measure the anchor again\n",
			s->it[mf.noise_worst_item].key, 100 * mf.noise_worst, 100 * ANCHOR_NOISE);
	fprintf(out, "# wrote %s\n", o.out);
	return ZB_OK;
}

/* Options that cannot go together: ZB_E_INPUT naming them. */
static zb_status check_opts(zb_error *err)
{
	if (o.all_runs && o.run)
		return zb_fail(err, ZB_E_INPUT, "--run %lld and --all-runs: give one of them", (long long)o.run);
	if ((o.fit_comm || o.fit_adam || o.fit_starved) &&
	    (o.eval || o.json || o.holdout || o.fit_host || o.fit_comm + o.fit_adam + o.fit_starved > 1)) {
		const char *a = o.fit_comm ? "fit-comm" : o.fit_adam ? "fit-adam" : "fit-starved";
		return zb_fail(err, ZB_E_INPUT, "--%s with --%s: give one of them", a,
			       o.eval ? "eval" : o.json ? "json" : o.holdout ? "holdout" : o.fit_host ? "fit-host" : o.fit_starved && strcmp(a, "fit-starved") ? "fit-starved" : "fit-adam");
	}
	if (o.fit_host && (o.eval || o.holdout))
		return zb_fail(err, ZB_E_INPUT, "--fit-host with --%s: give one of them", o.eval ? "eval" : "holdout");
	if (o.judge_db && !o.holdout)
		return zb_fail(err, ZB_E_INPUT, "--judge-db %s: needs --holdout", o.judge_db);
	return ZB_OK;
}

zb_status zb_calibrate_from_db(const zb_calibrate_db_opts *opts, FILE *f, zb_error *err)
{
	o = *opts;
	out = f;
	zb_hw base, eval;
	zb_kfit_set s, judge = { 0 };
	zb_kfit_rule rule;
	zb_status st;
	if ((st = check_opts(err)) || (o.holdout && (st = zb_kfit_rule_parse(o.holdout, &rule, err))) ||
	    (st = load_hw(o.base, &base, err)) || (o.eval && (st = load_hw(o.eval, &eval, err))) ||
	    (st = zb_kfit_load(o.db, o.all_runs ? -1 : o.run, o.warmup, &base, &s, err)))
		return st;
	if (o.judge_db && (st = zb_kfit_load(o.judge_db, 0, o.warmup, &base, &judge, err))) { /* its newest run */
		zb_kfit_free(&s);
		return st;
	}
	if (o.fit_host) {
		st = fit_host(&s, &base, err);
		zb_kfit_free(&s);
		return st;
	}
	if (o.fit_comm || o.fit_adam || o.fit_starved) {
		st = zb_calibrate_comm(&s, &base, o.base ? o.base : "h200-machine", o.out, o.name,
				       o.fit_starved ? 2 : o.fit_adam, out, err);
		zb_kfit_free(&s);
		return st;
	}
	zb_kfit_pred *pb = zb_xcalloc((size_t)s.n, sizeof *pb), *pf = zb_xcalloc((size_t)s.n, sizeof *pf),
		     *px = zb_xcalloc((size_t)s.n, sizeof *px);
	zb_hw fitted;
	zb_kfit_stats stats = { 0 };
	st = zb_kfit_predict(&s, &base, pb, err);
	if (!st && o.eval)
		st = zb_kfit_predict(&s, &eval, pf, err);
	zb_kfit_holdout ho = { 0 };
	if (!st)
		st = fit_all(&s, &base, !o.eval, &fitted, &stats, pf, px, err);
	if (!st && o.holdout) /* fitted on what the rule leaves in (kfit_split.h) */
		st = zb_kfit_holdout_run(&s, o.judge_db ? &judge : NULL, &rule, &base, &ho, err);
	if (!st && !o.eval) { /* with --holdout the profile its held-out errors describe */
		zb_hw *w = o.holdout ? &ho.fitted : &fitted;
		snprintf(w->name, sizeof w->name, "%s", o.name ? o.name : "executor-fit");
		st = zb_hw_save(o.out, w, err);
	}
	if (st) {
		zb_kfit_free(&s), zb_kfit_free(&judge), zb_kfit_holdout_free(&ho);
		free(pb), free(pf), free(px);
		return st;
	}
	zb_kfit_summary mb, mf, mx;
	zb_kfit_summarize(&s, pb, &mb);
	zb_kfit_summarize(&s, pf, &mf);
	if (!o.eval)
		zb_kfit_summarize(&s, px, &mx);
	if (o.json) {
		json_t *root = json_object(), *arr = json_array();
		json_object_set_new(root, "db", json_string(o.db));
		json_object_set_new(root, "run_id", json_integer(s.run_id));
		json_object_set_new(root, "skipped", json_integer(s.skipped));
		json_object_set_new(root, "base", summary_json(&mb));
		json_object_set_new(root, o.eval ? "eval" : "fitted", summary_json(&mf));
		if (o.holdout)
			json_object_set_new(root, "holdout", holdout_json(&judge, &ho));
		if (!o.eval) {
			json_object_set_new(root, "half_out", summary_json(&mx));
			json_object_set_new(root, "profile", json_string(o.out));
			json_object_set_new(root, "samples", json_pack("{s:i, s:i, s:i, s:o, s:o}", "gpu", stats.gpu_samples,
								       "cpu", stats.cpu_samples, "copy",
								       stats.copy_samples, "gpu_rms", num(stats.gpu_rms),
								       "cpu_rms", num(stats.cpu_rms)));
		}
		for (int i = 0; i < s.n; i++) {
			json_t *c = json_pack("{s:s, s:I, s:o, s:o, s:o, s:o}", "key", s.it[i].key, "config_id",
					      (json_int_t)s.it[i].config_id, "measured_step_s", num(s.it[i].meas_step_s),
					      "base_step_s", num(pb[i].step_s), o.eval ? "eval_step_s" : "fitted_step_s",
					      num(pf[i].step_s), "half_out_step_s", num(o.eval ? NAN : px[i].step_s));
			if (o.holdout) { /* the held-out fit's prediction, and whether this one was held out */
				json_object_set_new(c, "held_out", json_boolean(ho.held[i]));
				json_object_set_new(c, "holdout_step_s", num(ho.pred[i].step_s));
			}
			if (s.it[i].g.ranks > 1) /* the collectives: transfer, stream occupancy, predicted */
				json_object_set_new(c, "comm_s", json_pack("{s:o, s:o, s:o, s:o}", "measured",
									  num(s.it[i].meas_busy_s[ZB_RES_COMM]), "raw",
									  num(s.it[i].meas_comm_raw_s), "base",
									  num(pb[i].busy_s[ZB_RES_COMM]),
									  o.eval ? "eval" : "fitted",
									  num(pf[i].busy_s[ZB_RES_COMM])));
			json_array_append_new(arr, c);
		}
		json_object_set_new(root, "configs", arr);
		zb_json_print(out, root);
		json_decref(root);
	} else {
		fprintf(out, "# zbench calibrate --from-db %s: run %lld, %d measured configurations (%d left out), warm-up %d\n",
			o.db, (long long)s.run_id, s.n, s.skipped, o.warmup);
		if (!o.quiet) {
			fprintf(out, "%3s  %-52s %9s %9s %7s %9s %7s %9s %7s\n", "#", "configuration", "measured", "base", "err",
				o.eval ? "eval" : "fitted", "err", "half-out", "err");
			for (int i = 0; i < s.n; i++) {
				double m = s.it[i].meas_step_s;
				fprintf(out, "%3d  %-52s %9.2f %9.2f %+7.1f %9.2f %+7.1f %9.2f %+7.1f\n", i + 1, s.it[i].key, m * 1e3,
					pb[i].step_s * 1e3, 100 * (pb[i].step_s / m - 1), pf[i].step_s * 1e3,
					100 * (pf[i].step_s / m - 1), o.eval ? NAN : px[i].step_s * 1e3,
					o.eval ? NAN : 100 * (px[i].step_s / m - 1));
			}
			print_comm(&s, pb, pf);
			if (o.busy)
				print_busy(&s, pb, pf);
		}
		print_summary(o.base ? o.base : "base h200-machine", &mb);
		print_summary(o.eval ? o.eval : "fitted (in-sample)", &mf);
		if (o.holdout) {
			if (!o.quiet)
				print_holdout_rows(&s, &judge, &ho);
			print_holdout(&ho);
		}
		if (!o.eval) {
			print_summary("fitted on half, other half", &mx);
			fprintf(out, "# fit: %d GPU task samples (time-weighted rms %.1f%%), %d CPU Adam (rms %.1f%%), %d copies; "
				"wrote %s%s\n",
				stats.gpu_samples, 100 * stats.gpu_rms, stats.cpu_samples, 100 * stats.cpu_rms,
				stats.copy_samples, o.out, o.holdout ? " (the held-out fit: the configurations left in)" : "");
		}
	}
	zb_kfit_free(&s), zb_kfit_free(&judge), zb_kfit_holdout_free(&ho);
	free(pb), free(pf), free(px);
	return ZB_OK;
}
