/* fuzz_kineto.c - PyTorch profiler (Kineto) traces as `zbench import` reads them
 * (profiler/kineto.h, plain or gzip through zlib), then, when one is accepted, its
 * records through the step analysis of `zbench analyze` (profiler/analyze.h): each
 * step's parts must add up to its time. */
#include "fuzz/fuzz_common.h"
#include "profiler/analyze.h"
#include "profiler/kineto.h"

/* The analysis's input from the records, as results/foreign.c reads them back. */
static void to_input(const zb_kineto_trace *k, zb_trace_input *in)
{
	const zb_trace *t = k->t;
	memset(in, 0, sizeof *in);
	size_t n = t->nkernels + t->nmemcpys + t->nmemsets;
	in->ops = calloc(n ? n : 1, sizeof *in->ops);
	for (size_t i = 0; i < t->nkernels; i++)
		in->ops[in->nops++] = (zb_gpu_op){ t->kernels[i].start, t->kernels[i].end, 0, (int32_t)t->kernels[i].short_name,
						   ZB_GOP_KERNEL, 0 };
	for (size_t i = 0; i < t->nmemcpys; i++) {
		const zb_tr_memcpy *m = &t->memcpys[i];
		uint8_t kind = m->copy_kind == 1   ? ZB_GOP_H2D
			       : m->copy_kind == 2 ? ZB_GOP_D2H
			       : m->copy_kind == 8 ? ZB_GOP_D2D
						   : ZB_GOP_OTHER_COPY;
		in->ops[in->nops++] = (zb_gpu_op){ m->start, m->end, (int64_t)m->bytes, -1, kind,
						   m->src_kind == 1 || m->dst_kind == 1 };
	}
	for (size_t i = 0; i < t->nmemsets; i++)
		in->ops[in->nops++] = (zb_gpu_op){ t->memsets[i].start, t->memsets[i].end, (int64_t)t->memsets[i].bytes, -1,
						   ZB_GOP_MEMSET, 0 };
	in->ranges = calloc(t->nnvtxs ? t->nnvtxs : 1, sizeof *in->ranges);
	for (size_t i = 0; i < t->nnvtxs; i++)
		if (t->nvtxs[i].kind == ZB_NVTX_PROGRAM)
			in->ranges[in->nranges++] = (zb_range){ t->nvtxs[i].start, t->nvtxs[i].end, (int32_t)t->nvtxs[i].text,
								t->nvtxs[i].thread };
	in->names = t->strings;
	in->nnames = t->nstrings;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	zb_kineto_trace k;
	zb_error err;
	if (zb_kineto_read(fuzz_file(data, size, "trace.json"), &k, &err) != ZB_OK)
		return 0;
	zb_trace_input in;
	to_input(&k, &in);
	zb_analysis a;
	if (in.nops && zb_analyze(&in, NULL, &a, &err) == ZB_OK) {
		for (size_t i = 0; i < a.nsteps; i++) {
			const zb_step_stats *s = &a.steps[i];
			double sum = s->compute_only_s + s->copy_only_s + s->overlap_s + s->idle_s;
			if (!(fabs(sum - s->step_s) <= 1e-6 * (s->step_s > 1 ? s->step_s : 1) + 1e-9))
				abort(); /* the parts of a step add up to it (analyze.h) */
		}
		zb_analysis_free(&a);
	}
	free(in.ops);
	free(in.ranges);
	zb_kineto_free(&k);
	return 0;
}
