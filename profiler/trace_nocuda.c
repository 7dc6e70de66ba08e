/* trace_nocuda.c - the CUPTI side of trace.h in a build without nvcc: it says so. */
#include "profiler/trace.h"

zb_status zb_trace_start(zb_trace *t, zb_error *err)
{
	(void)t;
	return zb_fail(err, ZB_E_NOCUDA, "CUPTI cannot trace here: built without CUDA");
}

zb_status zb_trace_stop(zb_trace *t, zb_error *err)
{
	(void)t, (void)err;
	return ZB_OK;
}

zb_status zb_trace_stop_foreign(zb_trace *t, zb_error *err) { return zb_trace_stop(t, err); }

void zb_trace_set_kinds(unsigned kinds) { (void)kinds; }
int zb_trace_active(void) { return 0; }
void zb_trace_push_task(uint32_t task) { (void)task; }
void zb_trace_pop_task(void) {}
void zb_trace_name_stream(void *cuda_stream, int resource, const char *name) { (void)cuda_stream, (void)resource, (void)name; }

void zb_trace_add_cupti_record(zb_trace *t, const void *record)
{
	(void)record;
	t->unknown_records++;
}
