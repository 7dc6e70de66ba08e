/* summary.c - the step summary of summary.h, over the step windows of engine.h. */
#include "sim/summary.h"

#include "sim/engine.h"

void zb_step_summarize(const zb_graph *g, const double *start, const double *end, zb_step_summary *out)
{
	out->step_time_s = zb_steady_step_time(g, end);
	out->tokens_per_s = out->step_time_s > 0 ? g->tokens_per_step / out->step_time_s : 0;
	out->tflops_per_gpu = out->step_time_s > 0 ? g->model_flops_per_step / out->step_time_s / 1e12 : 0;
	zb_busy_window(g, start, end, -1, out->busy_s);
}
