/* pacing.c - the chunk and release plan of a paced copy; see pacing.h. */
#include "exec/pacing.h"

#include <math.h>

zb_status zb_pace_plan_make(size_t bytes, double rate_Bps, double native_Bps, size_t chunk_bytes,
			    zb_pace_plan *p, zb_error *err)
{
	if (!(rate_Bps > 0) || !isfinite(rate_Bps))
		return zb_fail(err, ZB_E_INPUT, "pacing: rate %g B/s must be > 0", rate_Bps);
	if (!(native_Bps > 0) || !isfinite(native_Bps))
		return zb_fail(err, ZB_E_INPUT, "pacing: native rate %g B/s must be > 0", native_Bps);
	if (chunk_bytes == 0)
		return zb_fail(err, ZB_E_INPUT, "pacing: chunk size 0");
	p->bytes = bytes;
	p->rate_Bps = rate_Bps;
	p->native_Bps = native_Bps;
	p->paced = rate_Bps < native_Bps;
	p->chunk_bytes = p->paced ? chunk_bytes : (bytes ? bytes : 1);
	p->chunks = bytes ? (int64_t)((bytes + p->chunk_bytes - 1) / p->chunk_bytes) : 1;
	return ZB_OK;
}

size_t zb_pace_chunk_size(const zb_pace_plan *p, int64_t k)
{
	if (k < 0 || k >= p->chunks)
		return 0;
	size_t start = (size_t)k * p->chunk_bytes;
	size_t left = p->bytes > start ? p->bytes - start : 0;
	return left < p->chunk_bytes ? left : p->chunk_bytes;
}

double zb_pace_release_s(const zb_pace_plan *p, int64_t k)
{
	if (!p->paced || k < 0 || k >= p->chunks)
		return 0;
	double end = (double)k * p->chunk_bytes + (double)zb_pace_chunk_size(p, k);
	double r = end / p->rate_Bps - (double)zb_pace_chunk_size(p, k) / p->native_Bps;
	return r > 0 ? r : 0;
}

double zb_pace_end_s(const zb_pace_plan *p)
{
	int64_t last = p->chunks - 1;
	return zb_pace_release_s(p, last) + (double)zb_pace_chunk_size(p, last) / p->native_Bps;
}
