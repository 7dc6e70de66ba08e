/*
 * plot.c - the plots of plot.h: the table of plot kinds (name, summary, the function
 * that draws it) and the entry point. Each kind is one file, plots/plot_<kind>.c,
 * that loads its rows (plots/rows.c, through the named queries of results/query.h),
 * writes gnuplot data files and a script and renders them (plots/gnuplot.c). A new
 * kind is a file, a line in this table and a value of zb_plot_kind in plot.h.
 *
 * Cost: gnuplot's own time dominates (about 0.1 s a plot; timelines of a few
 * thousand boxes about 0.3 s).
 */
#include "plots/parts.h"

#include <string.h>

/* ---- kinds ------------------------------------------------------------------ */

static const struct {
	const char *name;
	const char *summary;
	zb_status (*draw)(plot_ctx *c);
} kinds[ZB_PLOT_KIND_COUNT] = {
	[ZB_PLOT_RATIO] = { "ratio", "throughput against Twin-Flow ratio, one line per PCIe generation (a sweep)",
			    plot_ratio },
	[ZB_PLOT_HARDWARE] = { "hardware",
			       "speedup against PCIe generation and CPU cores, best settings each (a sweep)",
			       plot_hardware },
	[ZB_PLOT_ACCURACY] = { "accuracy", "predicted against measured step time, y = x and a +-5% band",
			       plot_accuracy },
	[ZB_PLOT_TIMELINE] = { "timeline",
			       "Gantt of one step: GPU, PCIe D2H/H2D, CPU Adam, GPU Adam; predicted above measured",
			       plot_timeline },
	[ZB_PLOT_MEMORY] = { "memory", "GPU and host memory per policy setting, stacked by term", plot_memory },
	[ZB_PLOT_SCALING] = { "scaling", "job throughput against GPUs per node, linear scaling dashed (a sweep over --gpus)",
			      plot_scaling },
};

const char *zb_plot_kind_name(zb_plot_kind k)
{
	return k < ZB_PLOT_KIND_COUNT ? kinds[k].name : "?";
}

const char *zb_plot_kind_summary(zb_plot_kind k)
{
	return k < ZB_PLOT_KIND_COUNT ? kinds[k].summary : "?";
}

zb_status zb_plot_kind_parse(const char *name, zb_plot_kind *out, zb_error *err)
{
	for (int k = 0; k < ZB_PLOT_KIND_COUNT; k++)
		if (!strcmp(name, kinds[k].name)) {
			*out = (zb_plot_kind)k;
			return ZB_OK;
		}
	return zb_fail(err, ZB_E_INPUT, "unknown plot kind '%s' (known: ratio, hardware, accuracy, timeline, memory, scaling)",
		       name);
}

/* ---- entry --------------------------------------------------------------------- */

zb_status zb_plot_make(zb_store *s, const zb_plot_request *req, zb_plot_info *info, zb_error *err)
{
	memset(info, 0, sizeof *info);
	zb_status st = req->script_only ? ZB_OK : zb_plot_check(req->output, err);
	if (st)
		return st;
	if (req->script_only && !req->keep_dir)
		return zb_fail(err, ZB_E_INTERNAL, "a plot script without a folder to keep it in");
	if (req->kind >= ZB_PLOT_KIND_COUNT)
		return zb_fail(err, ZB_E_INPUT, "unknown plot kind %d", (int)req->kind);
	plot_ctx c;
	memset(&c, 0, sizeof c);
	c.store = s;
	c.dbpath = zb_store_path(s);
	c.req = req;
	c.info = info;
	c.err = err;
	if ((st = plot_ctx_open(&c))) {
		plot_ctx_close(&c);
		return st;
	}
	st = kinds[req->kind].draw(&c);
	plot_ctx_close(&c);
	return st;
}
