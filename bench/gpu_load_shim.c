/*
 * gpu_load_shim.c - build/zbench's side of bench/'s GPU functions (gpu_entry.h):
 * the GPU calibration and the GPU benchmark cases, forwarding to the table of
 * build/lib/libzbench_gpu.so, which exec/gpu_load_shim.c loads on the first call.
 * Linked only into build/zbench of a CUDA build (the Makefile's *_shim.c rule).
 */
#include <string.h>

#include "bench/gpu_cases.h"
#include "bench/gpu_entry.h"
#include "exec/gpu_entry.h"

/* The library's table, checked against this zbench; NULL with err when there is none. */
static const zb_bench_gpu_entry *bench_table(zb_error *err)
{
	const zb_bench_gpu_entry *(*entry)(void) =
		(const zb_bench_gpu_entry *(*)(void))zb_gpu_symbol("zb_bench_gpu_entry_points", err);
	if (!entry)
		return NULL;
	const zb_bench_gpu_entry *t = entry();
	if (!t || t->abi != ZB_BENCH_GPU_ABI || t->size != sizeof *t) {
		zb_fail(err, ZB_E_NOCUDA, "the GPU library does not match this zbench (bench abi %u, want %u): rebuild both",
			t ? t->abi : 0u, (unsigned)ZB_BENCH_GPU_ABI);
		return NULL;
	}
	return t;
}

zb_status zb_calibrate_gpu(zb_calib_plan *plan, zb_calib_gpu *out, FILE *log, zb_error *err)
{
	const zb_bench_gpu_entry *t = bench_table(err);
	return t ? t->calibrate_gpu(plan, out, log, err) : err->status;
}

/* The GPU benchmark cases: listed without the library (names and descriptions
 * from gpu_cases.h); asking whether one can run, or running it, loads it and
 * hands over to the library's case of the same name (built from the same list). */
static const zb_bench_case *library_case(const char *name, zb_error *err)
{
	const zb_bench_gpu_entry *t = bench_table(err);
	if (!t)
		return NULL;
	for (const zb_bench_case *c = t->bench_gpu_cases; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	zb_fail(err, ZB_E_NOCUDA, "the GPU library has no bench case '%s': rebuild it", name);
	return NULL;
}

static const char *waived_by_name(const char *name)
{
	static zb_error err;
	const zb_bench_case *c = library_case(name, &err);
	if (!c)
		return err.msg;
	return c->waived ? c->waived() : NULL;
}

static zb_status run_by_name(const char *name, const zb_bench_args *a, FILE *out, json_t *res, zb_error *err)
{
	const zb_bench_case *c = library_case(name, err);
	return c ? c->run(a, out, res, err) : err->status;
}

#define FORWARDERS(name, description, waived, run)                                                            \
	static const char *fwd_waived_##run(void) { return waived_by_name(name); }                     \
	static zb_status fwd_##run(const zb_bench_args *a, FILE *out, json_t *res, zb_error *err) \
	{                                                                                               \
		return run_by_name(name, a, out, res, err);                                             \
	}
ZB_BENCH_GPU_CASES(FORWARDERS)

#define CASE(name, description, waived, run) { name, "gpu", description, fwd_waived_##run, fwd_##run },
const zb_bench_case zb_bench_gpu_cases[] = {
	ZB_BENCH_GPU_CASES(CASE)
	{ 0 },
};
