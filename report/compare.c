/* compare.c - predicted against measured for people and machines; see compare.h. */
#include "report/compare.h"

#include <math.h>
#include <stdio.h>

static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *pme(double p, double m, double e)
{
	json_t *o = json_object();
	json_object_set_new(o, "predicted", num(p));
	json_object_set_new(o, "measured", num(m));
	json_object_set_new(o, "error", num(e));
	return o;
}

static void shares(const zb_timeline_stats *s, double share[ZB_RES_COUNT + 1])
{
	double tot = s->crit_wait_s;
	for (int r = 0; r < ZB_RES_COUNT; r++)
		tot += s->crit_s[r];
	for (int r = 0; r < ZB_RES_COUNT; r++)
		share[r] = tot > 0 ? s->crit_s[r] / tot : 0;
	share[ZB_RES_COUNT] = tot > 0 ? s->crit_wait_s / tot : 0;
}

void zb_stored_config_label(const zb_stored_config *i, char *buf, size_t n)
{
	char th[24] = "all cores";
	if (i->cpu_threads > 0)
		snprintf(th, sizeof th, "%d threads", i->cpu_threads);
	snprintf(buf, n, "%s on %s: %s ratio %.2f, micro-batch %d, seq %d, gas %d, %s", i->model, i->hw, i->policy,
		 i->ratio, i->micro_batch, i->seq, i->gas, th);
}

json_t *zb_comparison_json(const zb_stored_config *info, const zb_comparison *c)
{
	char label[256];
	zb_stored_config_label(info, label, sizeof label);
	json_t *o = json_object();
	json_object_set_new(o, "config_id", json_integer(info->config_id));
	json_object_set_new(o, "run_id", json_integer(info->run_id));
	json_object_set_new(o, "label", json_string(label));
	json_object_set_new(o, "device", json_string(info->device));
	json_object_set_new(o, "warmup", json_integer(c->meas.warm));
	json_object_set_new(o, "window_steps", json_integer(c->meas.window_steps));
	json_object_set_new(o, "step_time_s", pme(c->pred.step_time_s, c->meas.step_time_s, c->step_err));
	json_t *busy = json_object();
	for (int r = 0; r < ZB_RES_COUNT; r++)
		json_object_set_new(busy, zb_resource_name(r), pme(c->pred.busy_s[r], c->meas.busy_s[r], c->busy_err[r]));
	json_object_set_new(o, "busy_s", busy);
	json_t *cls = json_object();
	for (int k = 0; k < ZB_CLASS_COUNT; k++) {
		json_t *e = pme(c->pred.class_s[k], c->meas.class_s[k], c->class_err[k]);
		json_object_set_new(e, "tasks", json_integer(c->meas.class_n[k]));
		json_object_set_new(e, "task_mape", num(c->class_task_mape[k]));
		json_object_set_new(cls, zb_task_class_name(k), e);
	}
	json_object_set_new(o, "classes", cls);
	json_t *ov = json_object();
	json_object_set_new(ov, "hidden_frac",
			    pme(c->pred.hidden_frac, c->meas.hidden_frac, c->hidden_frac_diff));
	json_object_set_new(ov, "union_s", pme(c->pred.union_s, c->meas.union_s,
					       zb_rel_err(c->pred.union_s, c->meas.union_s)));
	json_object_set_new(ov, "overlap_s", pme(c->pred.overlap_s, c->meas.overlap_s,
						 zb_rel_err(c->pred.overlap_s, c->meas.overlap_s)));
	json_t *hid = json_object();
	for (int r = 0; r < ZB_RES_COUNT; r++)
		json_object_set_new(hid, zb_resource_name(r), pme(c->pred.hidden_s[r], c->meas.hidden_s[r],
								   zb_rel_err(c->pred.hidden_s[r], c->meas.hidden_s[r])));
	json_object_set_new(ov, "hidden_s", hid);
	json_object_set_new(o, "overlap", ov);
	double sp[ZB_RES_COUNT + 1], sm[ZB_RES_COUNT + 1];
	shares(&c->pred, sp);
	shares(&c->meas, sm);
	json_t *cp = json_object();
	for (int r = 0; r <= ZB_RES_COUNT; r++) {
		int wait = r == ZB_RES_COUNT;
		json_t *e = json_object();
		json_object_set_new(e, "predicted_s", num(wait ? c->pred.crit_wait_s : c->pred.crit_s[r]));
		json_object_set_new(e, "measured_s", num(wait ? c->meas.crit_wait_s : c->meas.crit_s[r]));
		json_object_set_new(e, "predicted_share", num(sp[r]));
		json_object_set_new(e, "measured_share", num(sm[r]));
		json_object_set_new(cp, wait ? "wait" : zb_resource_name(r), e);
	}
	json_object_set_new(o, "critical_path", cp);
	return o;
}

static void row(FILE *f, const char *what, double p, double m, double e, const char *note)
{
	char es[16] = "-";
	if (isfinite(e))
		snprintf(es, sizeof es, "%+.1f", 100 * e);
	fprintf(f, "%-22s %12.3f %12.3f %8s  %s\n", what, p * 1e3, m * 1e3, es, note ? note : "");
}

void zb_comparison_print(FILE *f, const zb_stored_config *info, const zb_comparison *c)
{
	char label[256];
	zb_stored_config_label(info, label, sizeof label);
	fprintf(f, "# run %lld (%s%s%s), config %lld: %s\n", (long long)info->run_id, info->run_kind,
		info->device[0] ? ", " : "", info->device, (long long)info->config_id, label);
	fprintf(f, "# steady state: %d warm-up steps left out, %d step%s in the window; error = (predicted - "
		   "measured) / measured\n",
		c->meas.warm, c->meas.window_steps, c->meas.window_steps == 1 ? "" : "s");
	fprintf(f, "%-22s %12s %12s %8s  %s\n", "", "predicted", "measured", "error", "");
	fprintf(f, "%-22s %12s %12s %8s  %s\n", "", "ms/step", "ms/step", "%", "");
	row(f, "step", c->pred.step_time_s, c->meas.step_time_s, c->step_err, NULL);
	for (int r = 0; r < ZB_RES_COUNT; r++) {
		char w[40];
		snprintf(w, sizeof w, "busy %s", zb_resource_name(r));
		row(f, w, c->pred.busy_s[r], c->meas.busy_s[r], c->busy_err[r], NULL);
	}
	for (int k = 0; k < ZB_CLASS_COUNT; k++) {
		if (!c->meas.class_n[k] && !c->pred.class_n[k])
			continue;
		char w[40], note[64] = "";
		snprintf(w, sizeof w, "class %s", zb_task_class_name(k));
		if (c->class_tasks[k])
			snprintf(note, sizeof note, "%lld tasks, per-task MAPE %.1f%%", (long long)c->class_tasks[k],
				 100 * c->class_task_mape[k]);
		row(f, w, c->pred.class_s[k], c->meas.class_s[k], c->class_err[k], note);
	}
	row(f, "union (any busy)", c->pred.union_s, c->meas.union_s, zb_rel_err(c->pred.union_s, c->meas.union_s),
	    NULL);
	row(f, "overlap (saved)", c->pred.overlap_s, c->meas.overlap_s,
	    zb_rel_err(c->pred.overlap_s, c->meas.overlap_s), "sum of busy - union");
	fprintf(f, "%-22s %11.1f%% %11.1f%% %+8.1f  %s\n", "hidden under compute", 100 * c->pred.hidden_frac,
		100 * c->meas.hidden_frac, 100 * c->hidden_frac_diff,
		"of the non-compute busy time (difference in points)");
	double sp[ZB_RES_COUNT + 1], sm[ZB_RES_COUNT + 1];
	shares(&c->pred, sp);
	shares(&c->meas, sm);
	fprintf(f, "\ncritical path          %12s %12s %8s\n", "predicted", "measured", "diff");
	fprintf(f, "%-22s %12s %12s %8s\n", "(to the end of the GPU", "% of path", "% of path", "points");
	fprintf(f, "%-22s %12s %12s %8s\n", " step, walked back)", "", "", "");
	for (int r = 0; r <= ZB_RES_COUNT; r++) {
		if (sp[r] == 0 && sm[r] == 0)
			continue;
		fprintf(f, "  %-20s %12.1f %12.1f %+8.1f\n", r == ZB_RES_COUNT ? "wait" : zb_resource_name(r),
			100 * sp[r], 100 * sm[r], 100 * (sp[r] - sm[r]));
	}
	double worst = 0;
	const char *worst_what = "step";
	for (int k = 0; k < ZB_CLASS_COUNT; k++)
		if (isfinite(c->class_err[k]) && fabs(c->class_err[k]) > fabs(worst))
			worst = c->class_err[k], worst_what = zb_task_class_name(k);
	fprintf(f, "# verdict: step time %s by %.1f%%; largest class error %s %+.1f%%\n",
		c->step_err > 0 ? "overpredicted" : "underpredicted", 100 * fabs(c->step_err), worst_what,
		100 * worst);
}
