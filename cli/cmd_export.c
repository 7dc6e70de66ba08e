/*
 * cmd_export.c - zbench export: one stored configuration's timelines as a file
 * other tools open.
 *
 *   --format perfetto  Chrome Trace Event JSON (the Perfetto UI and chrome://tracing
 *                      open it): process 1 "predicted" with one track per resource of
 *                      the schedule; process 2 "measured" with one track per CUDA
 *                      stream (kernels, copies, memsets from CUPTI) and one per CPU
 *                      thread (CPU spans and CUDA API calls) when the run was traced
 *                      (zbench run --trace), else one track per resource from the
 *                      executor's own timing. Times in microseconds as the format
 *                      wants (ns precision), shifted so the earliest event is at 0;
 *                      otherData.time_zero_us says where the run's time zero landed.
 *   --format csv       one row per interval: source, track, task, kind, name,
 *                      start_ns, end_ns, duration_ns, bytes (times from time zero).
 *
 * RUN is a configuration id (the one `zbench run` stores and prints; a sweep or run
 * invocation has one per configuration), or "latest": the newest configuration with
 * measured events. The file is written to FILE.tmp and renamed when complete, so a
 * failure leaves no partial file behind.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include "cli/commands.h"
#include "common/csv.h"
#include "common/outfile.h"
#include "cli/flags.h"
#include "results/query.h"
#include "results/store.h"

enum { FMT_PERFETTO, FMT_CSV };

static const char *format, *path, *dbpath;

static const zb_flag flags[] = {
	{ .name = "format", .short_name = 'f', .kind = ZB_FLAG_STRING, .dest = &format, .arg = "<format>",
	  .help = "perfetto (default) or csv" },
	{ .name = "output", .short_name = 'o', .kind = ZB_FLAG_STRING, .dest = &path, .arg = "<file>",
	  .help = "the file to write (written to <file>.tmp, then renamed)" },
	ZB_STRING("db", &dbpath, "<path>", "results database (default " ZB_STORE_DEFAULT_PATH ")"),
	{ 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench export <config-id> | latest [--format perfetto | csv] -o <file> [--db <path>]\n\n"
		   "Write a stored configuration's predicted and measured timelines to <file>:\n"
		   "perfetto (default) is Chrome Trace Event JSON for the Perfetto UI or chrome://tracing,\n"
		   "one track per resource (predicted) and per CUDA stream and CPU thread (measured,\n"
		   "from zbench run --trace); csv is one row per interval for spreadsheets.\n"
		   "<config-id> is the configuration id `zbench run` prints and stores (latest: the\n"
		   "newest configuration with measured events).\n\n"
		   "options:\n");
	zb_flags_usage(f, flags);
}

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
	double zero_us;    /* added to every time (perfetto) */
	int64_t rows;
	int64_t overlaps;  /* intervals moved to an overlap lane */
	track *tracks;
	size_t ntracks, cap_tracks;
} out;

/* ---- writing ---------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
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

/* One interval. args_json: extra "key":value pairs (JSON only) or NULL. */
static void emit(out *o, int pid, int64_t tid, const char *source, const char *track, const char *cat,
		 const char *name, int64_t task, int64_t start, int64_t end, int64_t bytes, const char *args_json)
{
	o->rows++;
	if (o->fmt == FMT_CSV) {
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
	fprintf(o->f, "%s\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":%.3f,\"dur\":%.3f,\"cat\":", o->first ? "" : ",",
		pid, tid, start / 1e3 + o->zero_us, (end - start) / 1e3);
	o->first = 0;
	json_str(o->f, cat);
	fputs(",\"name\":", o->f);
	json_str(o->f, name);
	fputs(",\"args\":{", o->f);
	int comma = 0;
	if (task >= 0) {
		fprintf(o->f, "\"task\":%" PRId64, task);
		comma = 1;
	}
	if (bytes >= 0) {
		fprintf(o->f, "%s\"bytes\":%" PRId64, comma ? "," : "", bytes);
		comma = 1;
	}
	if (args_json && *args_json)
		fprintf(o->f, "%s%s", comma ? "," : "", args_json);
	fputs("}}", o->f);
}

static void meta(out *o, const char *what, int pid, int64_t tid, const char *key, const char *sval, int64_t ival)
{
	if (o->fmt != FMT_PERFETTO)
		return;
	if (!strcmp(what, "thread_name") && tid >= 0 && tid < LANE_TID) {
		track *t = track_of(o, pid, tid);
		snprintf(t->name, sizeof t->name, "%s", sval);
	}
	fprintf(o->f, "%s\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d", o->first ? "" : ",", what, pid);
	o->first = 0;
	if (tid >= 0)
		fprintf(o->f, ",\"tid\":%" PRId64, tid);
	fprintf(o->f, ",\"args\":{\"%s\":", key);
	if (sval)
		json_str(o->f, sval);
	else
		fprintf(o->f, "%" PRId64, ival);
	fputs("}}", o->f);
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
		char name[96], args[96];
		snprintf(name, sizeof name, "%s %s #%" PRId64, col_s(q, 5), col_s(q, 6), col_i(q, 0, -1));
		snprintf(args, sizeof args, "\"step\":%" PRId64, col_i(q, 7, -1));
		double bytes = zb_rows_real(q, 8, 0);
		emit(o, pid, resource_index(res) + 1, source, res, col_s(q, 3), name, col_i(q, 0, -1), col_i(q, 1, 0),
		     col_i(q, 2, 0), bytes > 0 ? (int64_t)bytes : -1, args);
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
	char track[64], args[200];
	/* GPU records of all kinds in one pass, by start, so each stream's lanes see
	 * them in order (an enclosing interval before what it encloses) */
	zb_status st = prep(r, ZB_Q_TRACE_GPU_RECORDS, &q);
	if (st)
		return st;
	while ((rc = zb_rows_next(q)) > 0) {
		int64_t stream = col_i(q, 2, 0);
		snprintf(track, sizeof track, "stream %" PRId64, stream);
		const char *cat = col_s(q, 4);
		if (!strcmp(cat, "kernel"))
			snprintf(args, sizeof args,
				 "\"grid\":[%" PRId64 ",%" PRId64 ",%" PRId64 "],\"block\":[%" PRId64 ",%" PRId64 ",%" PRId64
				 "],\"registers\":%" PRId64 ",\"correlation\":%" PRId64,
				 col_i(q, 8, 0), col_i(q, 9, 0), col_i(q, 10, 0), col_i(q, 11, 0), col_i(q, 12, 0),
				 col_i(q, 13, 0), col_i(q, 14, 0), col_i(q, 15, 0));
		else
			snprintf(args, sizeof args, "\"correlation\":%" PRId64, col_i(q, 15, 0));
		emit(o, pid, 1000000 + stream, cat, track, cat, col_s(q, 5), col_i(q, 3, -1), col_i(q, 0, 0), col_i(q, 1, 0),
		     col_i(q, 6, -1), o->fmt == FMT_PERFETTO ? args : NULL);
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

/* ---- command ---------------------------------------------------------------------- */

static zb_status find_config(reader *r, const char *run, zb_error *err)
{
	if (!strcmp(run, "latest"))
		return zb_store_latest_config(r->s, "measured", &r->cid, err);
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
		fprintf(o->f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"zbench_config_id\":%lld,"
			      "\"time_zero_us\":%.3f,\"source\":\"zbench export\"},\n\"traceEvents\":[",
			(long long)r->cid, o->zero_us);
		o->first = 1;
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
	return st;
}

int cmd_export(int argc, char **argv)
{
	format = "perfetto";
	path = NULL;
	dbpath = ZB_STORE_DEFAULT_PATH;
	const char *run = NULL;
	int npos, rc;
	if (!zb_flags_parse(argc, argv, flags, &run, 1, &npos, usage, &rc))
		return rc;
	if (!npos) {
		fprintf(stderr, "zbench: export needs a configuration id (zbench export --help)\n");
		return 2;
	}
	out o = { .first = 1 };
	if (!strcmp(format, "perfetto") || !strcmp(format, "json"))
		o.fmt = FMT_PERFETTO;
	else if (!strcmp(format, "csv"))
		o.fmt = FMT_CSV;
	else {
		fprintf(stderr, "zbench: unknown export format '%s' (known: perfetto, csv)\n", format);
		return 2;
	}
	if (!path || !*path) {
		fprintf(stderr, "zbench: export needs an output file (-o <file>)\n");
		return 2;
	}
	if (access(dbpath, F_OK) != 0) {
		fprintf(stderr, "zbench: no database '%s' (zbench run stores into it; --db <path>)\n", dbpath);
		return 2;
	}
	zb_error err = { 0 };
	reader r = { .err = &err };
	if (zb_store_open_readonly(&r.s, dbpath, 2000, &err))
		return zb_report_error(&err);
	zb_status st = find_config(&r, run, &err);
	/* a fresh temporary beside the file, renamed over it when complete (a device or
	 * pipe such as /dev/stdout is written in place) */
	zb_outfile file = { 0 };
	if (!st && !(st = zb_outfile_open(&file, path, &err)))
		o.f = file.f;
	if (!st)
		st = export_all(&r, &o);
	if (!st)
		st = zb_outfile_commit(&file, &err);
	zb_outfile_abort(&file);
	zb_store_close(r.s);
	free_tracks(&o);
	if (st)
		return zb_report_error(&err);
	printf("wrote %lld intervals of configuration %lld to %s", (long long)o.rows, (long long)r.cid, path);
	if (o.overlaps)
		printf(" (%lld partly overlapping others of their track, on overlap tracks)", (long long)o.overlaps);
	printf("\n");
	return 0;
}
