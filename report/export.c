/*
 * export.c - one stored configuration's timelines as a file other tools open
 * (zbench export); see export.h.
 *
 * Every JSON value goes through jansson (one event object at a time, so an export
 * of millions of intervals never holds them all); the CSV fields are quoted where
 * they need it.
 */
#include "report/export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/csv.h"
#include "common/outfile.h"
#include "results/query.h"

enum { FMT_PERFETTO = ZB_EXPORT_PERFETTO, FMT_CSV = ZB_EXPORT_CSV };

/* A track of the Perfetto output and its lanes: the trace event format wants the
 * complete events of one thread nested (a slice that starts inside another and
 * ends after it is dropped by the viewer), so an interval that overlaps the open
 * one only partly goes to the next lane, a track of its own named "... (overlap
 * N)" (two kernels of one stream can overlap a little under programmatic dependent
 * launch, for one). Each lane keeps the ends of its open intervals as a stack. */
#define MAX_LANES 16
#define LANE_TID 100000000LL /* tid of lane l: tid + l * LANE_TID */

typedef struct lane {
	int64_t *end;
	size_t n, cap;
} lane;

typedef struct track {
	int pid;
	int64_t tid;
	char name[96];
	lane lanes[MAX_LANES];
	int nlanes;
} track;

typedef struct out {
	FILE *f;
	int fmt;
	int first;         /* JSON: no comma before the next event */
	int unformatted;   /* JSON: a value jansson could not build or write (out of memory) */
	double zero_us;    /* added to every time (perfetto) */
	int64_t rows;
	int64_t overlaps;  /* intervals moved to an overlap lane */
	track *tracks;
	size_t ntracks, cap_tracks;
} out;

/* ---- writing ---------------------------------------------------------------------- */

/* A string as JSON: the text, or where it is not UTF-8 (a kernel name from the
 * trace may hold any byte), the text with each byte outside ASCII as '?'. */
static json_t *text(const char *s)
{
	json_t *j = json_string(s ? s : "");
	if (j || !s)
		return j;
	char *t = zb_xmalloc(strlen(s) + 1);
	size_t i = 0;
	for (; s[i]; i++)
		t[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
	t[i] = 0;
	j = json_string(t);
	free(t);
	return j;
}

/* Microseconds to the nanosecond, the trace's unit: the number %.3f writes, as a double. */
static json_t *us(double x)
{
	char b[64];
	snprintf(b, sizeof b, "%.3f", x);
	return json_real(strtod(b, NULL));
}

/* Writes of the JSON values: 15 significant digits give every time of a run shorter than
 * eleven days back exactly as %.3f wrote it. */
#define JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

/* One element of traceEvents (takes v): a separator, then the value on a line of its own. */
static void put(out *o, json_t *v)
{
	char buf[1024];
	size_t n = v ? json_dumpb(v, buf, sizeof buf, JSON_FLAGS) : 0;
	fputs(o->first ? "\n" : ",\n", o->f);
	o->first = 0;
	if (n > 0 && n <= sizeof buf) /* one write; a longer one (rare) through the stream */
		fwrite(buf, 1, n, o->f);
	else if (!v || json_dumpf(v, o->f, JSON_FLAGS))
		o->unformatted = 1;
	json_decref(v);
}

static void csv_str(FILE *f, const char *s) { zb_csv_field(f, s); } /* common/csv.h */

static void meta(out *o, const char *what, int pid, int64_t tid, const char *key, const char *sval, int64_t ival);

static track *track_of(out *o, int pid, int64_t tid)
{
	for (size_t i = 0; i < o->ntracks; i++)
		if (o->tracks[i].pid == pid && o->tracks[i].tid == tid)
			return &o->tracks[i];
	if (o->ntracks == o->cap_tracks) {
		o->cap_tracks = o->cap_tracks ? 2 * o->cap_tracks : 32;
		o->tracks = zb_xrealloc(o->tracks, o->cap_tracks * sizeof *o->tracks);
	}
	track *t = &o->tracks[o->ntracks++];
	memset(t, 0, sizeof *t);
	t->pid = pid;
	t->tid = tid;
	snprintf(t->name, sizeof t->name, "thread %lld", (long long)tid);
	return t;
}

static void free_tracks(out *o)
{
	for (size_t i = 0; i < o->ntracks; i++)
		for (int l = 0; l < o->tracks[i].nlanes; l++)
			free(o->tracks[i].lanes[l].end);
	free(o->tracks);
}

/* The lane of [start, end) on its track (intervals arrive by start); opens and
 * names a lane when needed. Returns the tid to write. */
static int64_t place(out *o, int pid, int64_t tid, int64_t start, int64_t end)
{
	track *t = track_of(o, pid, tid);
	int l = 0;
	for (;; l++) {
		if (l == t->nlanes) {
			if (t->nlanes == MAX_LANES) { /* pathological: keep the last lane */
				l = MAX_LANES - 1;
				break;
			}
			t->nlanes++;
			if (l > 0) {
				char name[128];
				snprintf(name, sizeof name, "%s (overlap %d)", t->name, l);
				meta(o, "thread_name", pid, tid + l * LANE_TID, "name", name, 0);
			}
		}
		lane *ln = &t->lanes[l];
		while (ln->n > 0 && ln->end[ln->n - 1] <= start)
			ln->n--;
		if (ln->n == 0 || end <= ln->end[ln->n - 1])
			break;
	}
	lane *ln = &t->lanes[l];
	if (ln->n == ln->cap) {
		ln->cap = ln->cap ? 2 * ln->cap : 16;
		ln->end = zb_xrealloc(ln->end, ln->cap * sizeof *ln->end);
	}
	ln->end[ln->n++] = end;
	o->overlaps += l > 0;
	return tid + l * LANE_TID;
}

/* One interval. args: extra members of the event's "args" (JSON only; taken), or NULL. */
static void emit(out *o, int pid, int64_t tid, const char *source, const char *track, const char *cat,
		 const char *name, int64_t task, int64_t start, int64_t end, int64_t bytes, json_t *args)
{
	o->rows++;
	if (o->fmt == FMT_CSV) {
		json_decref(args);
		csv_str(o->f, source);
		fputc(',', o->f);
		csv_str(o->f, track);
		fputc(',', o->f);
		if (task >= 0)
			fprintf(o->f, "%" PRId64, task);
		fputc(',', o->f);
		csv_str(o->f, cat);
		fputc(',', o->f);
		csv_str(o->f, name);
		fprintf(o->f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",", start, end, end - start);
		if (bytes >= 0)
			fprintf(o->f, "%" PRId64, bytes);
		fputc('\n', o->f);
		return;
	}
	tid = place(o, pid, tid, start, end);
	json_t *a = json_object();
	if (task >= 0)
		json_object_set_new(a, "task", json_integer(task));
	if (bytes >= 0)
		json_object_set_new(a, "bytes", json_integer(bytes));
	if (args && json_object_update(a, args))
		o->unformatted = 1;
	json_decref(args);
	put(o, json_pack("{s:s, s:i, s:I, s:o, s:o, s:o, s:o, s:o}", "ph", "X", "pid", pid, "tid", (json_int_t)tid, "ts",
			 us(start / 1e3 + o->zero_us), "dur", us((end - start) / 1e3), "cat", text(cat), "name", text(name),
			 "args", a));
}

static void meta(out *o, const char *what, int pid, int64_t tid, const char *key, const char *sval, int64_t ival)
{
	if (o->fmt != FMT_PERFETTO)
		return;
	if (!strcmp(what, "thread_name") && tid >= 0 && tid < LANE_TID) {
		track *t = track_of(o, pid, tid);
		snprintf(t->name, sizeof t->name, "%s", sval);
	}
	json_t *m = json_pack("{s:s, s:s, s:i}", "ph", "M", "name", what, "pid", pid);
	if (m && tid >= 0)
		json_object_set_new(m, "tid", json_integer(tid));
	if (m)
		json_object_set_new(m, "args", json_pack("{s:o}", key, sval ? text(sval) : json_integer(ival)));
	put(o, m);
}

/* ---- reading ---------------------------------------------------------------------- */

typedef struct reader {
	zb_store *s;
	int64_t cid;
	zb_error *err;
} reader;

/* A named query of the configuration (?1), results/query.h. */
static zb_status prep(reader *r, zb_query which, zb_rows **q)
{
	zb_status st = zb_rows_open(r->s, which, q, r->err);
	if (!st)
		zb_rows_bind_int(*q, 1, r->cid);
	return st;
}

static int64_t col_i(zb_rows *q, int c, int64_t dflt)
{
	return zb_rows_int(q, c, dflt);
}

static const char *col_s(zb_rows *q, int c)
{
	const char *t = zb_rows_text(q, c);
	return t ? t : "";
}

/* Step through a query; returns ZB_OK at its end. */
static zb_status finish(reader *r, zb_rows *q, int rc, const char *doing)
{
	return zb_rows_close(q, rc, doing, r->err);
}

static int64_t scalar(reader *r, zb_query which, const char *source, int64_t dflt)
{
	zb_rows *q = NULL;
	int64_t v = dflt;
	if (prep(r, which, &q) == ZB_OK) {
		if (source)
			zb_rows_bind_text(q, 2, source);
		if (zb_rows_next(q) > 0)
			v = col_i(q, 0, dflt);
	}
	zb_rows_close(q, 0, NULL, NULL);
	return v;
}

static int resource_index(const char *name)
{
	for (int i = 0; i < ZB_RES_COUNT; i++)
		if (!strcmp(name, zb_resource_name((zb_resource)i)))
			return i;
	return ZB_RES_COUNT;
}

/* The events of one source, one track per resource. */
static zb_status write_events(reader *r, out *o, const char *source, int pid)
{
	zb_rows *q = NULL;
	zb_status st = prep(r, ZB_Q_EVENTS_OF_SOURCE, &q);
	if (st)
		return st;
	zb_rows_bind_text(q, 2, source);
	int rc;
	while ((rc = zb_rows_next(q)) > 0) {
		const char *res = col_s(q, 4);
		char name[96];
		snprintf(name, sizeof name, "%s %s #%" PRId64, col_s(q, 5), col_s(q, 6), col_i(q, 0, -1));
		double bytes = zb_rows_real(q, 8, 0);
		emit(o, pid, resource_index(res) + 1, source, res, col_s(q, 3), name, col_i(q, 0, -1), col_i(q, 1, 0),
		     col_i(q, 2, 0), bytes > 0 ? (int64_t)bytes : -1, json_pack("{s:I}", "step", (json_int_t)col_i(q, 7, -1)));
	}
	return finish(r, q, rc, "read the events");
}

static zb_status write_tracks_meta(reader *r, out *o, int pid, int traced)
{
	if (!traced) {
		for (int i = 0; i < ZB_RES_COUNT; i++) {
			meta(o, "thread_name", pid, i + 1, "name", zb_resource_name((zb_resource)i), 0);
			meta(o, "thread_sort_index", pid, i + 1, "sort_index", NULL, i);
		}
		return ZB_OK;
	}
	/* one track per stream that has records, named after the executor's resource */
	zb_rows *q = NULL;
	zb_status st = prep(r, ZB_Q_TRACE_STREAMS, &q);
	if (st)
		return st;
	int rc;
	while ((rc = zb_rows_next(q)) > 0) {
		int64_t stream = col_i(q, 0, 0);
		char name[96];
		if (!zb_rows_is_null(q, 1))
			snprintf(name, sizeof name, "stream %" PRId64 ": %s", stream, col_s(q, 1));
		else
			snprintf(name, sizeof name, "stream %" PRId64, stream);
		meta(o, "thread_name", pid, 1000000 + stream, "name", name, 0);
		meta(o, "thread_sort_index", pid, 1000000 + stream, "sort_index", NULL, stream);
	}
	if ((st = finish(r, q, rc, "read the streams")))
		return st;
	st = prep(r, ZB_Q_TRACE_THREAD_NAMES, &q);
	if (st)
		return st;
	int i = 0;
	while ((rc = zb_rows_next(q)) > 0) {
		meta(o, "thread_name", pid, col_i(q, 0, 0), "name", col_s(q, 1), 0);
		meta(o, "thread_sort_index", pid, col_i(q, 0, 0), "sort_index", NULL, 100000 + i++);
	}
	return finish(r, q, rc, "read the thread names");
}

static zb_status write_trace(reader *r, out *o, int pid)
{
	zb_rows *q = NULL;
	int rc;
	char track[64];
	/* GPU records of all kinds in one pass, by start, so each stream's lanes see
	 * them in order (an enclosing interval before what it encloses) */
	zb_status st = prep(r, ZB_Q_TRACE_GPU_RECORDS, &q);
	if (st)
		return st;
	while ((rc = zb_rows_next(q)) > 0) {
		int64_t stream = col_i(q, 2, 0);
		snprintf(track, sizeof track, "stream %" PRId64, stream);
		const char *cat = col_s(q, 4);
		json_t *args = NULL;
		if (o->fmt == FMT_PERFETTO && !strcmp(cat, "kernel"))
			args = json_pack("{s:[I, I, I], s:[I, I, I], s:I, s:I}", "grid", (json_int_t)col_i(q, 8, 0),
					 (json_int_t)col_i(q, 9, 0), (json_int_t)col_i(q, 10, 0), "block",
					 (json_int_t)col_i(q, 11, 0), (json_int_t)col_i(q, 12, 0), (json_int_t)col_i(q, 13, 0),
					 "registers", (json_int_t)col_i(q, 14, 0), "correlation", (json_int_t)col_i(q, 15, 0));
		else if (o->fmt == FMT_PERFETTO)
			args = json_pack("{s:I}", "correlation", (json_int_t)col_i(q, 15, 0));
		emit(o, pid, 1000000 + stream, cat, track, cat, col_s(q, 5), col_i(q, 3, -1), col_i(q, 0, 0), col_i(q, 1, 0),
		     col_i(q, 6, -1), args);
	}
	if ((st = finish(r, q, rc, "read the GPU records")))
		return st;
	/* CPU spans and CUDA API calls, one pass by start: a thread's calls nest in its spans */
	st = prep(r, ZB_Q_TRACE_CPU_RECORDS, &q);
	if (st)
		return st;
	while ((rc = zb_rows_next(q)) > 0) {
		int64_t tid = col_i(q, 2, 0);
		snprintf(track, sizeof track, "thread %" PRId64, tid);
		emit(o, pid, tid, col_s(q, 6), !zb_rows_is_null(q, 9) ? col_s(q, 9) : track, col_s(q, 4),
		     col_s(q, 5), col_i(q, 3, -1), col_i(q, 0, 0), col_i(q, 1, 0), -1, NULL);
	}
	return finish(r, q, rc, "read the CPU spans and API calls");
}

/* ---- the export -------------------------------------------------------------------- */

static zb_status find_config(reader *r, const char *run, zb_error *err)
{
	if (!strcmp(run, "latest")) { /* the newest of any kind: run, validate, predict --timeline, trace, import */
		r->cid = scalar(r, ZB_Q_LATEST_CONFIG_TIMELINE, NULL, 0);
		return r->cid > 0 ? ZB_OK
				  : zb_fail(err, ZB_E_INPUT, "database '%s' holds no timeline to export (predict --timeline, "
							     "run, trace and import store one)", zb_store_path(r->s));
	}
	char *end;
	errno = 0;
	long long v = strtoll(run, &end, 10);
	if (*end || end == run || errno || v <= 0)
		return zb_fail(err, ZB_E_INPUT, "invalid configuration id '%s' (a positive integer or latest)", run);
	r->cid = v;
	if (scalar(r, ZB_Q_CONFIG_COUNT, NULL, 0) == 0)
		return zb_fail(err, ZB_E_INPUT, "unknown configuration %lld in database '%s'", v, zb_store_path(r->s));
	return ZB_OK;
}

/* The document's members before its events, and the opening of "traceEvents": the
 * events follow one at a time, so the document is never held whole. */
static void head(out *o, int64_t cid)
{
	json_t *h = json_pack("{s:s, s:{s:I, s:o, s:s}}", "displayTimeUnit", "ns", "otherData", "zbench_config_id",
			      (json_int_t)cid, "time_zero_us", us(o->zero_us), "source", "zbench export");
	char *t = h ? json_dumps(h, JSON_FLAGS) : NULL;
	json_decref(h);
	if (!t)
		o->unformatted = 1;
	else /* the object without its closing brace, then the array */
		fprintf(o->f, "%.*s,\n\"traceEvents\":[", (int)strlen(t) - 1, t);
	free(t);
	o->first = 1;
}

static zb_status export_all(reader *r, out *o)
{
	int64_t measured = scalar(r, ZB_Q_EVENT_COUNT, "measured", 0);
	int64_t predicted = scalar(r, ZB_Q_EVENT_COUNT, "predicted", 0);
	int64_t traced = scalar(r, ZB_Q_TRACE_RECORD_COUNT, NULL, 0);
	if (!measured && !predicted && !traced)
		return zb_fail(r->err, ZB_E_INPUT,
			       "configuration %lld has no timeline to export (predict with --timeline, or zbench run)",
			       (long long)r->cid);
	if (o->fmt == FMT_PERFETTO) {
		/* the earliest interval at 0: setup work before the run's time zero is negative */
		int64_t lo = scalar(r, ZB_Q_TIMELINE_ORIGIN, NULL, 0);
		o->zero_us = lo < 0 ? -lo / 1e3 : 0;
		head(o, r->cid);
		meta(o, "process_name", 1, -1, "name", "predicted (zbench model)", 0);
		meta(o, "process_sort_index", 1, -1, "sort_index", NULL, 1);
		meta(o, "process_name", 2, -1, "name",
		     traced ? "measured (CUPTI trace + CPU spans)" : "measured (executor CUDA events)", 0);
		meta(o, "process_sort_index", 2, -1, "sort_index", NULL, 2);
		zb_status st = write_tracks_meta(r, o, 1, 0);
		if (!st)
			st = write_tracks_meta(r, o, 2, traced > 0);
		if (st)
			return st;
	} else {
		fputs("source,track,task_id,kind,name,start_ns,end_ns,duration_ns,bytes\n", o->f);
	}
	zb_status st = write_events(r, o, "predicted", 1);
	if (!st && (o->fmt == FMT_CSV || !traced))
		st = write_events(r, o, "measured", 2);
	if (!st && traced)
		st = write_trace(r, o, 2);
	if (!st && o->fmt == FMT_PERFETTO)
		fputs("\n]}\n", o->f);
	if (!st && o->unformatted)
		st = zb_fail(r->err, ZB_E_NOMEM, "out of memory formatting the trace of configuration %lld",
			     (long long)r->cid);
	return st;
}

zb_status zb_export_format_parse(const char *s, zb_export_format *out, zb_error *err)
{
	if (!strcmp(s, "perfetto") || !strcmp(s, "json"))
		*out = ZB_EXPORT_PERFETTO;
	else if (!strcmp(s, "csv"))
		*out = ZB_EXPORT_CSV;
	else
		return zb_fail(err, ZB_E_INPUT, "unknown export format '%s' (known: perfetto, csv)", s);
	return ZB_OK;
}

zb_status zb_export(zb_store *s, const char *which, zb_export_format fmt, const char *path, zb_export_result *res,
		    zb_error *err)
{
	out o = { .first = 1, .fmt = fmt };
	reader r = { .s = s, .err = err };
	memset(res, 0, sizeof *res);
	zb_status st = find_config(&r, which, err);
	if (st)
		return st;
	/* a fresh temporary beside the file, renamed over it when complete (a device or
	 * pipe such as /dev/stdout is written in place) */
	zb_outfile file = { 0 };
	if (!(st = zb_outfile_open(&file, path, err)))
		o.f = file.f;
	if (!st)
		st = export_all(&r, &o);
	if (!st)
		st = zb_outfile_commit(&file, err);
	zb_outfile_abort(&file);
	free_tracks(&o);
	res->config_id = r.cid;
	res->rows = o.rows;
	res->overlaps = o.overlaps;
	return st;
}
