/*
 * spool.c - trace <-> spool file (spool.h).
 */
#include "profiler/spool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/outfile.h"

#define MAGIC "ZBSPOOL1"
#define FORMAT 2 /* 2: kinds, cupti_tid, parse_ns */

/* Counters and session facts, in file order. */
typedef struct spool_head {
	char magic[8];
	uint32_t format, pid;
	uint32_t sizes[8]; /* sizeof of each record struct: a different build is refused */
	uint64_t dropped, launches, buffers, buffer_failures, parse_errors, unknown_records, untimed_records;
	uint64_t nvtx_unmatched, nvtx_open;
	uint32_t kinds_refused, clock_method; /* 0 none, 1 timestamp-callback, 2 offset */
	uint32_t kinds, cupti_tid;
	uint64_t parse_ns;
	int64_t clock_offset_ns, clock_residual_ns, started_ns, stopped_ns;
	uint64_t counts[8]; /* records per array, then strings */
} spool_head;

static void sizes_of(uint32_t *s)
{
	s[0] = sizeof(zb_tr_kernel), s[1] = sizeof(zb_tr_memcpy), s[2] = sizeof(zb_tr_memset);
	s[3] = sizeof(zb_tr_api), s[4] = sizeof(zb_tr_sync), s[5] = sizeof(zb_tr_overhead);
	s[6] = sizeof(zb_tr_extcorr), s[7] = sizeof(zb_tr_nvtx);
}

static const char *const methods[] = { "none", "timestamp-callback", "offset" };

static uint32_t method_id(const char *m)
{
	for (uint32_t i = 0; i < 3; i++)
		if (m && !strcmp(m, methods[i]))
			return i;
	return 0;
}

zb_status zb_spool_write(const zb_trace *t, const char *path, zb_error *err)
{
	zb_outfile o;
	if (zb_outfile_open(&o, path, err))
		return err->status;
	FILE *f = o.f;
	spool_head h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, MAGIC, 8);
	h.format = FORMAT;
	h.pid = t->pid;
	sizes_of(h.sizes);
	h.dropped = t->dropped, h.launches = t->launches, h.buffers = t->buffers;
	h.buffer_failures = t->buffer_failures, h.parse_errors = t->parse_errors;
	h.unknown_records = t->unknown_records, h.untimed_records = t->untimed_records;
	h.nvtx_unmatched = t->nvtx_unmatched, h.nvtx_open = t->nnvtx_open;
	h.kinds_refused = t->kinds_refused, h.clock_method = method_id(t->clock_method);
	h.kinds = t->kinds, h.parse_ns = t->parse_ns, h.cupti_tid = t->cupti_tid;
	h.clock_offset_ns = t->clock_offset_ns, h.clock_residual_ns = t->clock_residual_ns;
	h.started_ns = t->started_ns, h.stopped_ns = t->stopped_ns;
	const void *arr[7] = { t->kernels, t->memcpys, t->memsets, t->apis, t->syncs, t->overheads, t->nvtxs };
	size_t n[7] = { t->nkernels, t->nmemcpys, t->nmemsets, t->napis, t->nsyncs, t->noverheads, t->nnvtxs };
	size_t sz[7] = { h.sizes[0], h.sizes[1], h.sizes[2], h.sizes[3], h.sizes[4], h.sizes[5], h.sizes[7] };
	for (int i = 0; i < 7; i++)
		h.counts[i] = n[i];
	h.counts[7] = t->nstrings;
	int ok = fwrite(&h, sizeof h, 1, f) == 1;
	for (int i = 0; i < 7 && ok; i++)
		ok = n[i] == 0 || fwrite(arr[i], sz[i], n[i], f) == n[i];
	for (size_t i = 0; i < t->nstrings && ok; i++) {
		uint32_t len = (uint32_t)strlen(t->strings[i]);
		ok = fwrite(&len, sizeof len, 1, f) == 1 && (len == 0 || fwrite(t->strings[i], len, 1, f) == 1);
	}
	if (!ok) {
		zb_outfile_abort(&o);
		return zb_fail(err, ZB_E_INPUT, "cannot write spool file '%s': %s", path, strerror(errno));
	}
	return zb_outfile_commit(&o, err);
}

static zb_status bad(zb_error *err, const char *path, const char *what)
{
	return zb_fail(err, ZB_E_INPUT, "spool file '%s' %s", path, what);
}

/* Read n records of size sz into a fresh array (*v, its count *cnt and capacity). */
static int read_arr(FILE *f, void **v, size_t *cnt, size_t *cap, size_t sz, uint64_t n)
{
	if (n == 0)
		return 1;
	if (n > ((uint64_t)1 << 40) / sz)
		return 0;
	*v = zb_xmalloc((size_t)n * sz);
	*cnt = *cap = (size_t)n;
	return fread(*v, sz, (size_t)n, f) == (size_t)n;
}

zb_status zb_spool_read(const char *path, zb_trace **out, zb_error *err)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return zb_fail(err, ZB_E_INPUT, "cannot open spool file '%s': %s", path, strerror(errno));
	spool_head h;
	uint32_t sizes[8];
	sizes_of(sizes);
	zb_status st = ZB_OK;
	if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, MAGIC, 8))
		st = bad(err, path, "is not a zbench spool file (no ZBSPOOL1 header)");
	else if (h.format != FORMAT || memcmp(h.sizes, sizes, sizeof sizes))
		st = bad(err, path, "was written by another zbench build (record layout differs)");
	if (st) {
		fclose(f);
		return st;
	}
	zb_trace *t = zb_trace_create();
	t->pid = h.pid;
	t->dropped = h.dropped, t->launches = h.launches, t->buffers = h.buffers;
	t->buffer_failures = h.buffer_failures, t->parse_errors = h.parse_errors;
	t->unknown_records = h.unknown_records, t->untimed_records = h.untimed_records;
	t->nvtx_unmatched = h.nvtx_unmatched + h.nvtx_open; /* ranges never closed count as unmatched */
	t->kinds_refused = h.kinds_refused;
	t->kinds = h.kinds, t->parse_ns = h.parse_ns, t->cupti_tid = h.cupti_tid;
	t->clock_method = methods[h.clock_method < 3 ? h.clock_method : 0];
	t->clock_offset_ns = h.clock_offset_ns, t->clock_residual_ns = h.clock_residual_ns;
	t->started_ns = h.started_ns, t->stopped_ns = h.stopped_ns;
	int ok = read_arr(f, (void **)&t->kernels, &t->nkernels, &t->cap_kernels, sizes[0], h.counts[0]) &&
		 read_arr(f, (void **)&t->memcpys, &t->nmemcpys, &t->cap_memcpys, sizes[1], h.counts[1]) &&
		 read_arr(f, (void **)&t->memsets, &t->nmemsets, &t->cap_memsets, sizes[2], h.counts[2]) &&
		 read_arr(f, (void **)&t->apis, &t->napis, &t->cap_apis, sizes[3], h.counts[3]) &&
		 read_arr(f, (void **)&t->syncs, &t->nsyncs, &t->cap_syncs, sizes[4], h.counts[4]) &&
		 read_arr(f, (void **)&t->overheads, &t->noverheads, &t->cap_overheads, sizes[5], h.counts[5]) &&
		 read_arr(f, (void **)&t->nvtxs, &t->nnvtxs, &t->cap_nvtxs, sizes[7], h.counts[6]);
	char *buf = NULL;
	for (uint64_t i = 0; i < h.counts[7] && ok; i++) {
		uint32_t len;
		ok = fread(&len, sizeof len, 1, f) == 1 && len < (1u << 24);
		if (!ok)
			break;
		buf = zb_xrealloc(buf, (size_t)len + 1);
		ok = len == 0 || fread(buf, len, 1, f) == 1;
		buf[len] = 0;
		/* the pool holds each string once, so interning in order gives the same ids */
		ok = ok && zb_trace_intern(t, buf) == (uint32_t)i;
	}
	free(buf);
	fclose(f);
	if (!ok) {
		zb_trace_free(t);
		return bad(err, path, "is truncated or corrupt");
	}
	/* every string id a record holds must exist */
	for (size_t i = 0; i < t->nkernels && ok; i++)
		ok = t->kernels[i].mangled < t->nstrings && t->kernels[i].demangled < t->nstrings &&
		     t->kernels[i].short_name < t->nstrings;
	for (size_t i = 0; i < t->napis && ok; i++)
		ok = t->apis[i].name < t->nstrings;
	for (size_t i = 0; i < t->nnvtxs && ok; i++)
		ok = t->nvtxs[i].text < t->nstrings && t->nvtxs[i].domain < t->nstrings;
	if (!ok) {
		zb_trace_free(t);
		return bad(err, path, "holds a string id beyond its string pool");
	}
	*out = t;
	return ZB_OK;
}
