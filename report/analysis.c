/* analysis.c - a trace's steps and per-step resource use, shown; see analysis.h. */
#include "report/analysis.h"

static double gbps(double bytes, double s) { return s > 0 ? bytes / s / 1e9 : 0; }

void zb_analysis_print(FILE *f, const zb_analysis *a)
{
	const zb_step_stats *m = &a->median;
	double st = m->step_s > 0 ? m->step_s : 1;
	fprintf(f, "\n%-10s %12s %8s %14s %10s\n", "resource", "measured", "util", "bytes", "achieved");
	fprintf(f, "%-10s %12s %8s %14s %10s\n", "", "ms/step", "%", "GB/step", "GB/s");
	fprintf(f, "%-10s %12.2f %8.1f %14s %10s\n", "gpu", m->compute_s * 1e3, 100 * m->compute_s / st, "-", "-");
	fprintf(f, "%-10s %12.2f %8.1f %14.3f %10.1f\n", "d2h", m->d2h_s * 1e3, 100 * m->d2h_s / st, m->d2h_bytes / 1e9,
		gbps(m->d2h_bytes, m->d2h_s));
	fprintf(f, "%-10s %12.2f %8.1f %14.3f %10.1f\n", "h2d", m->h2d_s * 1e3, 100 * m->h2d_s / st, m->h2d_bytes / 1e9,
		gbps(m->h2d_bytes, m->h2d_s));
	fprintf(f, "%-10s %12.2f %8.1f %14s %10s   (CPU optimizer active)\n", "cpu", m->cpu_opt_s * 1e3,
		100 * m->cpu_opt_s / st, "-", "-");
	fprintf(f, "%-10s %12s %8s %14s %10s   (GPU optimizer kernels count as gpu)\n", "gpu_opt", "-", "-", "-", "-");
	fprintf(f, "\nstep time      %10.2f ms\n", m->step_s * 1e3);
	fprintf(f, "  compute only %10.2f ms\n", m->compute_only_s * 1e3);
	fprintf(f, "  copy only    %10.2f ms\n", m->copy_only_s * 1e3);
	fprintf(f, "  overlap      %10.2f ms  (copies while kernels run)\n", m->overlap_s * 1e3);
	fprintf(f, "  gpu idle     %10.2f ms  (%.2f ms of it while the CPU optimizer runs; %.0f gaps >= 0.1 ms,"
		   " the longest %.2f ms)\n",
		m->idle_s * 1e3, m->idle_cpu_s * 1e3, m->idle_gaps, m->max_gap_s * 1e3);
	fprintf(f, "cpu time       %10.2f core-s/step (every thread of the traced processes)\n", m->cpu_core_s);
	if (m->pageable_bytes > 0)
		fprintf(f, "pageable       %10.3f GB/step of the copies are from or to pageable memory\n",
			m->pageable_bytes / 1e9);
	fprintf(f, "# %zu steps found by %s; medians of steps %zu..%zu\n", a->nsteps, a->found_by, a->first_steady + 1,
		a->nsteps);
	fprintf(f, "# CPU optimizer from %s\n", a->cpu_opt_from);
}

void zb_analysis_steps_print(FILE *f, const zb_analysis *a)
{
	fprintf(f, "\n%5s %10s %10s %10s %10s %10s %10s %10s %10s %10s %8s\n", "step", "start", "time", "compute", "h2d",
		"d2h", "overlap", "idle", "cpu-opt", "parts-sum", "kernels");
	fprintf(f, "%5s %10s %10s %10s %10s %10s %10s %10s %10s %10s %8s\n", "", "ms", "ms", "ms", "ms", "ms", "ms", "ms",
		"ms", "ms", "");
	for (size_t i = 0; i < a->nsteps; i++) {
		const zb_step_stats *s = &a->steps[i];
		double sum = s->compute_only_s + s->copy_only_s + s->overlap_s + s->idle_s;
		fprintf(f, "%5zu %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %8.0f\n", i + 1,
			(double)s->start * 1e-6, s->step_s * 1e3, s->compute_s * 1e3, s->h2d_s * 1e3, s->d2h_s * 1e3,
			s->overlap_s * 1e3, s->idle_s * 1e3, s->cpu_opt_s * 1e3, sum * 1e3, s->kernels);
	}
}

static json_t *step_json(const zb_step_stats *s)
{
	json_t *j = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}",
			 "step_s", s->step_s, "compute_s", s->compute_s, "h2d_s", s->h2d_s, "d2h_s", s->d2h_s,
			 "copy_s", s->copy_s, "compute_only_s", s->compute_only_s, "copy_only_s", s->copy_only_s,
			 "overlap_s", s->overlap_s, "idle_s", s->idle_s, "idle_cpu_s", s->idle_cpu_s, "cpu_opt_s",
			 s->cpu_opt_s, "cpu_core_s", s->cpu_core_s, "h2d_bytes", s->h2d_bytes, "d2h_bytes", s->d2h_bytes,
			 "h2d_GBps", gbps(s->h2d_bytes, s->h2d_s), "d2h_GBps", gbps(s->d2h_bytes, s->d2h_s), "start_ns",
			 (json_int_t)s->start, "end_ns", (json_int_t)s->end);
	json_object_set_new(j, "kernels", json_real(s->kernels));
	json_object_set_new(j, "copies", json_real(s->copies));
	json_object_set_new(j, "pageable_bytes", json_real(s->pageable_bytes));
	json_object_set_new(j, "idle_gaps", json_real(s->idle_gaps));
	json_object_set_new(j, "max_gap_s", json_real(s->max_gap_s));
	return j;
}

json_t *zb_analysis_json(const zb_analysis *a, int64_t cfg)
{
	json_t *steps = json_array();
	for (size_t i = 0; i < a->nsteps; i++)
		json_array_append_new(steps, step_json(&a->steps[i]));
	return json_pack("{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:o}", "config_id", (json_int_t)cfg, "method",
			 a->method, "found_by", a->found_by, "cpu_optimizer_from", a->cpu_opt_from, "period_ops", (json_int_t)a->period, "nsteps", (json_int_t)a->nsteps,
			 "first_steady", (json_int_t)a->first_steady, "median", step_json(&a->median), "steps", steps);
}
