/* cmd_predict.c - zbench predict: one configuration, per-resource breakdown. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "report/report.h"
#include "report/sweep_table.h"
#include "cli/session.h"
#include "sim/predict.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench predict [options] [--json] [--timeline]\n\n"
		   "Predict one training configuration with the discrete-event model: per-resource busy\n"
		   "time, step time, tokens/s, TFLOP/s, bottleneck and lower bound, memory and whether it\n"
		   "fits. --timeline prints every task's predicted start and end and stores them.\n\n");
	zb_options_usage(f);
	fprintf(f, "  %-26s %s\n", "--tokens <n>", "the training run the cost lines price (default 1e10)");
	fprintf(f, "\nThe schedule is zbench's own unless --framework deepspeed or a --ds-config; either way the other\n"
		   "schedule's throughput follows: what DeepSpeed gets on this box, what the hardware allows.\n");
}

/* The same configuration under the other framework's schedule, for "DeepSpeed gets X
 * on this box; the hardware allows Y": into r's alt fields (state 3 when that schedule
 * cannot run it, 2 when it does not fit). */
static void other_schedule(const zb_options *o, zb_sweep_row *r)
{
	zb_config_inputs in;
	zb_options_inputs(o, &in);
	in.value[ZB_AX_FRAMEWORK] = r->cfg.framework == ZB_FW_DEEPSPEED ? "zbench" : "deepspeed";
	zb_error e;
	r->alt_state = 3;
	if (zb_config_resolve(&in, &r->alt_cfg, NULL, &e))
		return;
	zb_sweep_row_predict_alt(r);
}

int cmd_predict(int argc, char **argv)
{
	zb_options o = { 0 };
	zb_error err = { 0 };
	int rc;
	double tokens = 1e10;
	const zb_flag extra[] = {
		ZB_REAL("tokens", &tokens, 1, 1e18, "<n>", NULL),
		{ 0 },
	};
	if (!zb_options_parse(argc, argv, extra, usage, &o, &rc))
		return rc;
	zb_config c;
	zb_sources src;
	if (zb_options_single_src(&o, &c, &src, &err))
		return zb_report_error(&err);

	zb_session s;
	if (zb_session_prepare(&s, &o, &err))
		return zb_report_error(&err);
	zb_prediction p;
	if (zb_predict(&p, &c, &err)) {
		zb_session_abort(&s);
		return zb_report_error(&err);
	}

	/* A result that cannot be stored (database locked, disk full) is still
	 * printed: the error after it says it was not stored. */
	int64_t config_id;
	zb_error store_err = { 0 };
	int stored = 1;
	if (zb_session_begin(&s, "predict", NULL, argc, argv, &store_err) ||
	    zb_session_store_prediction(&s, &c, &p.graph, p.simulated ? &p.res : NULL, &p.mem, o.timeline,
					&config_id, &store_err) ||
	    zb_session_commit(&s, p.mem.fits ? "ok" : "does not fit", &store_err)) {
		zb_session_abort(&s);
		stored = 0;
	}

	zb_sweep_row both = { .cfg = c, .mem = p.mem, .simulated = p.simulated };
	if (p.simulated)
		both.res = p.res;
	other_schedule(&o, &both);
	if (o.json) {
		json_t *j = zb_prediction_json(&c, &p.graph, p.simulated ? &p.res : NULL, &p.mem);
		zb_sweep_row_json(j, &both, tokens);
		zb_sources_json(j, &c, &src);
		if (o.timeline && p.simulated) {
			json_t *tl = json_array();
			for (size_t i = 0; i < p.graph.ntasks; i++) {
				const zb_task *t = &p.graph.tasks[i];
				json_t *e = json_pack("{s:I, s:s, s:s, s:s, s:i, s:i, s:i, s:f, s:f}", "task",
						      (json_int_t)t->id, "resource", zb_resource_name(t->resource), "op",
						      zb_op_name(t->op), "pass", zb_pass_name(t->pass), "step", t->step,
						      "unit", t->unit, "bucket", t->bucket, "start_s", p.res.start[i],
						      "end_s", p.res.end[i]);
				json_array_append_new(tl, e);
			}
			json_object_set_new(j, "timeline", tl);
		}
		zb_json_print(stdout, j);
		json_decref(j);
	} else {
		zb_print_header(stdout, "predict", &c);
		zb_sources_print(stdout, &c, &src, 0);
		zb_prediction_print(stdout, &c, &p.graph, p.simulated ? &p.res : NULL, &p.mem);
		zb_sweep_row_summary(stdout, &both, tokens);
		if (o.timeline && p.simulated) {
			printf("\n");
			zb_timeline_print(stdout, &p.graph, p.res.start, p.res.end);
		}
	}
	rc = 0;
	if (!p.mem.fits) {
		fprintf(stderr, "zbench: configuration does not fit: %s\n", p.mem.reason);
		rc = ZB_EXIT_NOFIT;
	}
	if (!stored) {
		fprintf(stderr, "zbench: the prediction above was printed but NOT stored: %s\n", store_err.msg);
		rc = zb_exit_code(store_err.status);
	}
	zb_prediction_free(&p);
	return rc;
}
