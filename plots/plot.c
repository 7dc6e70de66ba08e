/*
 * plot.c - the plots of plot.h: queries of the results database that write gnuplot
 * data files and a generated gnuplot script, and the run of gnuplot itself.
 *
 * Every plot goes through one plot_ctx: a private scratch directory (mkdtemp, or the
 * caller's keep_dir) holding *.dat files and plot.gp; gnuplot is started with
 * posix_spawn (no shell, so no quoting of paths), its output goes to gnuplot.log,
 * and its image to FILE.tmp, renamed to FILE after gnuplot exited 0 and left a
 * non-empty file. User text reaches the script only through gq(), which writes a
 * double-quoted gnuplot string with its escapes; the terminals run "noenhanced" so
 * names like pcie_d2h print as they are rather than as subscripts.
 *
 * Rows of configs (with their prediction) load into struct row, with each
 * configuration column as a display string ("16 cores", "ratio 0.25") that is also
 * the grouping key, and as a number for numeric axes. A sweep's lines, bars and
 * labels come from which of those columns vary within the run, so a plot needs no
 * knowledge of the command line that made the sweep.
 *
 * Cost: one query per plot (plus one or two per configuration for measured step
 * times in the accuracy plot); a 100,000-row sweep loads in well under a second,
 * and gnuplot's own time dominates (about 0.1 s a plot; timelines of a few thousand
 * boxes about 0.3 s).
 */
#include "plots/plot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/stats.h"
#include "core/config.h"
#include "core/memory.h"
#include "inputs/presets.h"
#include "results/query.h"

extern char **environ;

#define GIB (1024.0 * 1024.0 * 1024.0)
#define INSTALL_HINT "install it: sudo apt-get install gnuplot-nox, or run scripts/deps.sh"

/* ---- kinds ------------------------------------------------------------------ */

static const struct {
	const char *name;
	const char *summary;
} kinds[ZB_PLOT_KIND_COUNT] = {
	[ZB_PLOT_RATIO] = { "ratio", "throughput against Twin-Flow ratio, one line per PCIe generation (a sweep)" },
	[ZB_PLOT_HARDWARE] = { "hardware", "speedup against PCIe generation and CPU cores, best settings each (a sweep)" },
	[ZB_PLOT_ACCURACY] = { "accuracy", "predicted against measured step time, y = x and a +-5% band" },
	[ZB_PLOT_TIMELINE] = { "timeline", "Gantt of one step: GPU, PCIe D2H/H2D, CPU Adam, GPU Adam; predicted above measured" },
	[ZB_PLOT_MEMORY] = { "memory", "GPU and host memory per policy setting, stacked by term" },
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
	return zb_fail(err, ZB_E_INPUT, "unknown plot kind '%s' (known: ratio, hardware, accuracy, timeline, memory)",
		       name);
}

/* ---- checks before any work ---------------------------------------------------- */

/* 1 for .svg, 0 for .png, -1 for anything else. */
static int output_is_svg(const char *path)
{
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	if (!dot || (slash && dot < slash))
		return -1;
	if (!strcasecmp(dot, ".svg"))
		return 1;
	if (!strcasecmp(dot, ".png"))
		return 0;
	return -1;
}

/* The gnuplot executable: $ZB_GNUPLOT (a path, or a name looked up on PATH) or
 * "gnuplot" on PATH. 0 when found. */
static int find_gnuplot(char *out, size_t n)
{
	const char *name = getenv("ZB_GNUPLOT");
	if (!name || !*name)
		name = "gnuplot";
	if (strchr(name, '/')) {
		snprintf(out, n, "%s", name);
		return access(out, X_OK) == 0 ? 0 : -1;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		if (len > 0 && len < n) {
			snprintf(out, n, "%.*s/%s", (int)len, path, name);
			struct stat st;
			if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
				return 0;
		}
		path += len + (end ? 1 : 0);
	}
	return -1;
}

zb_status zb_plot_check(const char *output, zb_error *err)
{
	if (!output || !*output)
		return zb_fail(err, ZB_E_INPUT, "missing plot output (-o FILE.png or FILE.svg)");
	if (output_is_svg(output) < 0)
		return zb_fail(err, ZB_E_INPUT, "unknown plot format '%s' (known: .png, .svg)", output);
	char exe[PATH_MAX];
	if (find_gnuplot(exe, sizeof exe))
		return zb_fail(err, ZB_E_INPUT, "gnuplot not found (%s)", INSTALL_HINT);
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", output) >= (int)sizeof tmp)
		return zb_fail(err, ZB_E_INPUT, "plot output path too long '%.64s...'", output);
	struct stat st;
	if (stat(output, &st) == 0 && S_ISDIR(st.st_mode))
		return zb_fail(err, ZB_E_INPUT, "plot output is a directory '%s'", output);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return zb_fail(err, ZB_E_INPUT, "cannot write plot '%s': %s", output, strerror(errno));
	fclose(f);
	unlink(tmp);
	return ZB_OK;
}

/* ---- the scratch directory, the script and gnuplot ----------------------------- */

typedef struct plot_ctx {
	zb_store *store;
	const char *dbpath;
	const zb_plot_request *req;
	zb_plot_info *info;
	zb_error *err;
	char dir[PATH_MAX];
	int keep;            /* leave dir in place */
	int svg;
	int width, height;   /* pixels */
	char out_tmp[PATH_MAX];
	FILE *gp;            /* plot.gp being written */
	char qbuf[8][1024];  /* gq()'s results, used round-robin within one gp() call */
	int qi;
} plot_ctx;

/* s as a double-quoted gnuplot string ("\" and '"' escaped, newlines as \n). The
 * result lives until eight more gq() calls. */
static const char *gq(plot_ctx *c, const char *s)
{
	char *b = c->qbuf[c->qi++ % 8];
	size_t n = sizeof c->qbuf[0], j = 0;
	b[j++] = '"';
	for (; *s && j < n - 4; s++) {
		if (*s == '\\' || *s == '"') {
			b[j++] = '\\';
			b[j++] = *s;
		} else if (*s == '\n') {
			b[j++] = '\\';
			b[j++] = 'n';
		} else if ((unsigned char)*s >= 0x20) {
			b[j++] = *s;
		}
	}
	b[j++] = '"';
	b[j] = 0;
	return b;
}

__attribute__((format(printf, 2, 3))) static void gp(plot_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(c->gp, fmt, ap);
	va_end(ap);
}

/* A data file in the scratch directory; its path goes to path. NULL with err set. */
static FILE *data_open(plot_ctx *c, const char *name, char *path, size_t n)
{
	snprintf(path, n, "%s/%s", c->dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		zb_fail(c->err, ZB_E_INPUT, "cannot write plot data '%s': %s", path, strerror(errno));
	return f;
}

static zb_status data_close(plot_ctx *c, FILE *f, const char *path)
{
	int bad = ferror(f);
	if (fclose(f) || bad)
		return zb_fail(c->err, ZB_E_INPUT, "cannot write plot data '%s'", path);
	return ZB_OK;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[PATH_MAX + 256];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static zb_status ctx_open(plot_ctx *c)
{
	const zb_plot_request *r = c->req;
	c->svg = output_is_svg(r->output) == 1;
	snprintf(c->out_tmp, sizeof c->out_tmp, "%s.tmp", r->output);
	if (r->keep_dir) {
		if (mkdir(r->keep_dir, 0755) && errno != EEXIST)
			return zb_fail(c->err, ZB_E_INPUT, "cannot create plot data directory '%s': %s", r->keep_dir,
				       strerror(errno));
		snprintf(c->dir, sizeof c->dir, "%s", r->keep_dir);
		c->keep = 1;
	} else {
		const char *t = getenv("TMPDIR");
		snprintf(c->dir, sizeof c->dir, "%s/zbench-plot-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(c->dir))
			return zb_fail(c->err, ZB_E_INPUT, "cannot create a scratch directory '%s': %s", c->dir,
				       strerror(errno));
	}
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/plot.gp", c->dir);
	c->gp = fopen(path, "w");
	if (!c->gp)
		return zb_fail(c->err, ZB_E_INPUT, "cannot write plot script '%s': %s", path, strerror(errno));
	gp(c, "# zbench %s: plot %s from %s (generated; rerun with: gnuplot plot.gp)\n", ZB_VERSION,
	   zb_plot_kind_name(r->kind), c->dbpath);
	return ZB_OK;
}

static void ctx_close(plot_ctx *c)
{
	if (c->gp)
		fclose(c->gp);
	c->gp = NULL;
	if (!c->keep && c->dir[0])
		remove_dir(c->dir);
}

/* Terminal, output, the look every plot shares, and the title with a smaller
 * subtitle (lines separated by \n) at fixed places above the plot area, which
 * starts below them (tmargin at screen). */
static void gp_begin(plot_ctx *c, int width, int height, const char *title, const char *sub)
{
	c->width = width;
	c->height = height;
	if (c->svg)
		gp(c, "set terminal svg size %d,%d dynamic noenhanced font 'Sans,13' background rgb 'white'\n", width,
		   height);
	else
		gp(c, "set terminal pngcairo size %d,%d noenhanced font 'Sans,11' background rgb 'white'\n", width,
		   height);
	gp(c, "set encoding utf8\n");
	gp(c, "set output %s\n", gq(c, c->out_tmp));
	gp(c, "set datafile missing 'NaN'\n");
	gp(c, "set border 3 lw 1.2 lc rgb '#444444'\n");
	gp(c, "set tics nomirror out\n");
	gp(c, "set grid lc rgb '#e4e4e4' lw 1 dt 1\n");
	gp(c, "set key opaque box lc rgb '#cccccc'\n");
	int lines = 1;
	for (const char *p = sub; *p; p++)
		lines += *p == '\n';
	double px = 1.0 / height;
	gp(c, "set label 101 %s at screen 0.5, screen %.5f center font ',15'\n", gq(c, title), 1 - 30 * px);
	gp(c, "set label 102 %s at screen 0.5, screen %.5f center font ',10' textcolor rgb '#555555'\n", gq(c, sub),
	   1 - 56 * px);
	gp(c, "set tmargin at screen %.5f\n", 1 - (56 + 16 * lines + 24) * px);
}

/* The last non-empty line of gnuplot's log: where it says what went wrong. */
static void log_tail(const char *path, char *out, size_t n)
{
	out[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		size_t l = strlen(line);
		while (l && (line[l - 1] == '\n' || line[l - 1] == '\r' || line[l - 1] == ' '))
			line[--l] = 0;
		if (l)
			snprintf(out, n, "%s", line);
	}
	fclose(f);
}

/* Run gnuplot on the finished script and move FILE.tmp to FILE. */
static zb_status ctx_render(plot_ctx *c)
{
	gp(c, "unset output\n");
	int bad = ferror(c->gp);
	if (fclose(c->gp) || bad) {
		c->gp = NULL;
		return zb_fail(c->err, ZB_E_INPUT, "cannot write plot script in '%s'", c->dir);
	}
	c->gp = NULL;

	char exe[PATH_MAX], script[PATH_MAX + 16], logp[PATH_MAX + 16];
	if (find_gnuplot(exe, sizeof exe))
		return zb_fail(c->err, ZB_E_INPUT, "gnuplot not found (%s)", INSTALL_HINT);
	snprintf(script, sizeof script, "%s/plot.gp", c->dir);
	snprintf(logp, sizeof logp, "%s/gnuplot.log", c->dir);

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	char *argv[] = { "gnuplot", script, NULL };
	pid_t pid;
	int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return zb_fail(c->err, ZB_E_INPUT, "cannot start gnuplot '%s': %s (%s)", exe, strerror(rc),
			       INSTALL_HINT);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return zb_fail(c->err, ZB_E_INTERNAL, "waiting for gnuplot: %s", strerror(errno));

	struct stat sb;
	int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && stat(c->out_tmp, &sb) == 0 && sb.st_size > 0;
	if (!ok) {
		char last[512];
		log_tail(logp, last, sizeof last);
		unlink(c->out_tmp);
		c->keep = 1; /* the script and data explain the failure */
		if (strstr(last, "unknown or ambiguous terminal"))
			return zb_fail(c->err, ZB_E_INPUT, "gnuplot has no %s terminal (%s)",
				       c->svg ? "svg" : "pngcairo", INSTALL_HINT);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			return zb_fail(c->err, ZB_E_INTERNAL, "gnuplot wrote no image '%s' (script kept in %s)",
				       c->out_tmp, c->dir);
		return zb_fail(c->err, ZB_E_INTERNAL, "gnuplot failed: %s (script kept in %s)",
			       last[0] ? last : "no message", c->dir);
	}
	if (rename(c->out_tmp, c->req->output)) {
		int e = errno;
		unlink(c->out_tmp);
		return zb_fail(c->err, ZB_E_INPUT, "cannot write plot '%s': %s", c->req->output, strerror(e));
	}
	return ZB_OK;
}

/* ---- small helpers ------------------------------------------------------------ */

static const char *const palette[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
				       "#76b7b2", "#9c755f", "#ff9da7", "#edc948", "#bab0ac" };
#define NPALETTE ((int)(sizeof palette / sizeof palette[0]))
static const int point_types[] = { 7, 5, 9, 11, 13, 15, 6, 4, 8, 10 };
#define NPOINTS ((int)(sizeof point_types / sizeof point_types[0]))

/* 84554 -> "84,554" */
static const char *thousands(double v, char *buf, size_t n)
{
	char raw[64];
	snprintf(raw, sizeof raw, "%.0f", fabs(v));
	size_t len = strlen(raw), j = 0;
	if (v < 0 && j < n - 1)
		buf[j++] = '-';
	for (size_t i = 0; i < len && j < n - 1; i++) {
		if (i && (len - i) % 3 == 0 && j < n - 1)
			buf[j++] = ',';
		buf[j++] = raw[i];
	}
	buf[j] = 0;
	return buf;
}


/* A named query (results/query.h) with ?1 = id when it takes one. */
static zb_status rows_open(plot_ctx *c, zb_query which, int64_t id, zb_rows **q)
{
	zb_status st = zb_rows_open(c->store, which, q, c->err);
	if (!st)
		zb_rows_bind_int(*q, 1, id);
	return st;
}

/* One integer from a named query; *found = 0 when it gives no row or NULL. */
static zb_status sql_int(plot_ctx *c, zb_query which, int64_t arg, int64_t *out, int *found)
{
	return zb_query_int(c->store, which, arg, out, found, c->err);
}

/* ---- configuration rows ------------------------------------------------------- */

/* Configuration columns, in the order of the configuration rows of results/query.h
 * (columns 2..19). */
enum {
	A_HW, A_LINK, A_GPU, A_CPU, A_CORES, A_MODEL, A_POLICY, A_RATIO, A_OFFLOAD_PARAM, A_PREFETCH,
	A_CKPT, A_GAS, A_MB, A_SEQ, A_DTYPE, A_PAGEABLE, A_BUCKET, A_THREADS, A_COUNT
};

static const struct attr {
	const char *col;   /* configs column */
	const char *axis;  /* axis title when it is the x axis */
	int numeric;       /* x positions are its values, not categories */
} attrs[A_COUNT] = {
	[A_HW] = { "hw", "machine", 0 },
	[A_LINK] = { "link", "host link (PCIe generation)", 0 },
	[A_GPU] = { "gpu", "GPU", 0 },
	[A_CPU] = { "cpu", "CPU", 0 },
	[A_CORES] = { "cpu_cores", "CPU cores", 1 },
	[A_MODEL] = { "model", "model", 0 },
	[A_POLICY] = { "policy", "offload policy", 0 },
	[A_RATIO] = { "ratio", "Twin-Flow ratio (fraction of parameters updated by the CPU)", 1 },
	[A_OFFLOAD_PARAM] = { "offload_param", "parameter offload", 0 },
	[A_PREFETCH] = { "prefetch_layers", "parameter prefetch (layers)", 1 },
	[A_CKPT] = { "ckpt", "activation checkpointing", 0 },
	[A_GAS] = { "gas", "gradient accumulation steps", 1 },
	[A_MB] = { "micro_batch", "micro-batch (sequences)", 1 },
	[A_SEQ] = { "seq", "sequence length (tokens)", 1 },
	[A_DTYPE] = { "dtype", "precision", 0 },
	[A_PAGEABLE] = { "pageable", "host buffers", 0 },
	[A_BUCKET] = { "bucket_params", "gradient bucket (parameters)", 1 },
	[A_THREADS] = { "cpu_threads", "CPU optimizer threads", 1 },
};

/* A list of distinct strings, in order of first appearance. */
typedef struct strlist {
	char **s;
	int n, cap;
} strlist;

static int sl_find(const strlist *l, const char *s)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->s[i], s))
			return i;
	return -1;
}

static int sl_intern(strlist *l, const char *s)
{
	int i = sl_find(l, s);
	if (i >= 0)
		return i;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->s = zb_xrealloc(l->s, (size_t)l->cap * sizeof *l->s);
	}
	l->s[l->n] = strdup(s);
	return l->n++;
}

static void sl_free(strlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->s[i]);
	free(l->s);
	memset(l, 0, sizeof *l);
}

typedef struct row {
	int64_t id, run_id;
	const char *val[A_COUNT]; /* display text, also the grouping key (in rowset.pool) */
	double num[A_COUNT];
	int has_pred, fits;
	double tokens_per_s, step_time_s, gpu_bytes, host_bytes;
	char *json;               /* config_json, when asked for */
} row;

/* Rows share their display strings: a 100,000-row sweep holds a few hundred. */
typedef struct rowset {
	row *r;
	int n;
	strlist pool[A_COUNT];
} rowset;

static void rowset_free(rowset *rs)
{
	for (int i = 0; i < rs->n; i++)
		free(rs->r[i].json);
	free(rs->r);
	for (int a = 0; a < A_COUNT; a++)
		sl_free(&rs->pool[a]);
	memset(rs, 0, sizeof *rs);
}

static void attr_format(rowset *rs, row *r, int a, zb_rows *q, int col)
{
	const char *t = zb_rows_text(q, col);
	double v = zb_rows_real(q, col, 0);
	char o[ZB_NAME_MAX + 32];
	size_t n = sizeof o;
	r->num[a] = v;
	if (!t)
		snprintf(o, n, "?");
	else switch (a) {
	case A_CORES: snprintf(o, n, "%.0f cores", v); break;
	case A_RATIO: snprintf(o, n, "ratio %.4g", v); break;
	case A_OFFLOAD_PARAM: snprintf(o, n, "%s", v ? "param offload" : "no param offload"); break;
	case A_PREFETCH: snprintf(o, n, "prefetch %.0f", v); break;
	case A_CKPT: snprintf(o, n, "ckpt %s", t); break;
	case A_GAS: snprintf(o, n, "gas %.0f", v); break;
	case A_MB: snprintf(o, n, "micro-batch %.0f", v); break;
	case A_SEQ: snprintf(o, n, "seq %.0f", v); break;
	case A_PAGEABLE: snprintf(o, n, "%s", v ? "pageable" : "pinned"); break;
	case A_BUCKET: snprintf(o, n, "bucket %.4gM", v / 1e6); break;
	case A_THREADS:
		if (v > 0)
			snprintf(o, n, "%.0f threads", v);
		else
			snprintf(o, n, "all cores");
		break;
	default: snprintf(o, n, "%s", t); break;
	}
	int k = sl_intern(&rs->pool[a], o); /* before reading .s, which it may move */
	r->val[a] = rs->pool[a].s[k];
}

/* Configurations (with their predictions) of a named query of configuration rows
 * (results/query.h, ?1 = arg), in id order; with_json keeps each config_json
 * (about 1 KB a row). */
static zb_status load_rows_json(plot_ctx *c, zb_query which, int64_t arg, int with_json, rowset *rs)
{
	zb_rows *q;
	zb_status st = rows_open(c, which, arg, &q);
	if (st)
		return st;
	memset(rs, 0, sizeof *rs);
	int cap = 0, rc;
	while ((rc = zb_rows_next(q)) > 0) {
		if (rs->n == cap) {
			cap = cap ? 2 * cap : 64;
			rs->r = zb_xrealloc(rs->r, (size_t)cap * sizeof *rs->r);
		}
		row *r = &rs->r[rs->n++];
		memset(r, 0, sizeof *r);
		r->id = zb_rows_int(q, 0, 0);
		r->run_id = zb_rows_int(q, 1, 0);
		for (int a = 0; a < A_COUNT; a++)
			attr_format(rs, r, a, q, 2 + a);
		int k = 2 + A_COUNT;
		r->has_pred = (int)zb_rows_int(q, k, 0);
		r->fits = (int)zb_rows_int(q, k + 1, 0);
		r->tokens_per_s = zb_rows_real(q, k + 2, NAN);
		r->step_time_s = zb_rows_real(q, k + 3, NAN);
		r->gpu_bytes = zb_rows_real(q, k + 4, NAN);
		r->host_bytes = zb_rows_real(q, k + 5, NAN);
		const char *js = zb_rows_text(q, k + 6);
		r->json = js && with_json ? strdup(js) : NULL;
		/* the ratio means nothing without offload */
		if (!strcmp(r->val[A_POLICY], "none")) {
			r->num[A_RATIO] = 0;
			int z = sl_intern(&rs->pool[A_RATIO], "ratio 0");
			r->val[A_RATIO] = rs->pool[A_RATIO].s[z];
		}
	}
	if (rc < 0)
		rowset_free(rs);
	return zb_rows_close(q, rc, NULL, c->err);
}

static zb_status load_rows(plot_ctx *c, zb_query which, int64_t arg, rowset *rs)
{
	return load_rows_json(c, which, arg, 0, rs);
}

static int row_plotted(const row *r)
{
	return r->has_pred && r->fits && r->tokens_per_s > 0;
}

/* Distinct values of attribute a among the rows that pass keep (NULL: all). */
static int distinct(const rowset *rs, int a, int (*keep)(const row *))
{
	strlist l = { 0 };
	for (int i = 0; i < rs->n; i++)
		if (!keep || keep(&rs->r[i]))
			sl_intern(&l, rs->r[i].val[a]);
	int n = l.n;
	sl_free(&l);
	return n;
}

/* "gen4, 16 cores, dpu": the values of the attributes in mask, in table order. The
 * ratio is left out for policy none. */
static void row_label(const row *r, unsigned mask, const char *sep, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (int a = 0; a < A_COUNT; a++) {
		if (!(mask & (1u << a)))
			continue;
		if (a == A_RATIO && !strcmp(r->val[A_POLICY], "none"))
			continue;
		int w = snprintf(buf + len, n - len, "%s%s", len ? sep : "", r->val[a]);
		if (w < 0 || (size_t)w >= n - len)
			break;
		len += (size_t)w;
	}
}

/* Attributes (as a mask) with more than one value among the rows that pass keep. */
static unsigned varying_mask(const rowset *rs, int (*keep)(const row *))
{
	unsigned m = 0;
	for (int a = 0; a < A_COUNT; a++)
		if (distinct(rs, a, keep) > 1)
			m |= 1u << a;
	return m;
}

/* The settings every plotted row shares, for a subtitle: "gpt2-large on
 * h200-machine (h200), dpu, micro-batch 8, seq 1024". */
static void constants_label(const row *r, unsigned varying, char *buf, size_t n)
{
	char hw[160] = "", rest[400];
	unsigned show = 0;
	static const int parts[] = { A_LINK, A_CORES, A_POLICY, A_RATIO, A_MB, A_SEQ, A_GAS,
				     A_CKPT, A_OFFLOAD_PARAM, A_DTYPE, A_THREADS };
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		int a = parts[i];
		if (varying & (1u << a))
			continue;
		if (a == A_CKPT && !strcmp(r->val[a], "ckpt none"))
			continue;
		if (a == A_GAS && r->num[a] == 1)
			continue;
		if (a == A_OFFLOAD_PARAM && !r->num[a])
			continue;
		if (a == A_DTYPE && !strcmp(r->val[a], "bf16"))
			continue;
		if (a == A_THREADS && r->num[a] <= 0)
			continue;
		show |= 1u << a;
	}
	row_label(r, show, ", ", rest, sizeof rest);
	if (!(varying & (1u << A_HW)))
		snprintf(hw, sizeof hw, " on %s", r->val[A_HW]);
	if (!(varying & (1u << A_GPU)))
		snprintf(hw + strlen(hw), sizeof hw - strlen(hw), " (%s)", r->val[A_GPU]);
	snprintf(buf, n, "%s%s%s%s", varying & (1u << A_MODEL) ? "" : r->val[A_MODEL], hw, rest[0] ? ", " : "",
		 rest);
}

/* ---- which run, which configuration ------------------------------------------- */

static zb_status check_run(plot_ctx *c, int64_t run)
{
	int64_t v;
	int found;
	zb_status st = sql_int(c, ZB_Q_RUN_ID, run, &v, &found);
	if (st)
		return st;
	if (!found) {
		int64_t last = 0;
		int any;
		if ((st = sql_int(c, ZB_Q_RUN_MAX, 0, &last, &any)))
			return st;
		if (any)
			return zb_fail(c->err, ZB_E_INPUT, "no run %lld in database '%s' (runs 1 to %lld)", (long long)run,
				       c->dbpath, (long long)last);
		return zb_fail(c->err, ZB_E_INPUT, "no run %lld in database '%s' (it has no runs)", (long long)run,
			       c->dbpath);
	}
	return ZB_OK;
}

static zb_status check_config(plot_ctx *c, int64_t id)
{
	int64_t v;
	int found;
	zb_status st = sql_int(c, ZB_Q_CONFIG_ID, id, &v, &found);
	if (st)
		return st;
	if (!found) {
		int64_t last = 0;
		int any;
		if ((st = sql_int(c, ZB_Q_CONFIG_MAX, 0, &last, &any)))
			return st;
		if (any)
			return zb_fail(c->err, ZB_E_INPUT, "no config %lld in database '%s' (configs 1 to %lld)",
				       (long long)id, c->dbpath, (long long)last);
		return zb_fail(c->err, ZB_E_INPUT, "no config %lld in database '%s' (it has no configs)",
			       (long long)id, c->dbpath);
	}
	return ZB_OK;
}

/* The run a sweep plot draws: --run, the run of --config, or the latest sweep. */
static zb_status sweep_run(plot_ctx *c, int64_t *run)
{
	const zb_plot_request *r = c->req;
	zb_status st;
	int found;
	if (r->run_id) {
		*run = r->run_id;
		return check_run(c, r->run_id);
	}
	if (r->config_id) {
		if ((st = check_config(c, r->config_id)))
			return st;
		return sql_int(c, ZB_Q_CONFIG_RUN, r->config_id, run, &found);
	}
	if ((st = sql_int(c, ZB_Q_LATEST_SWEEP_RUN, 0, run, &found)))
		return st;
	if (!found)
		return zb_fail(c->err, ZB_E_INPUT, "no sweep run in database '%s' (run zbench sweep, or give --run)",
			       c->dbpath);
	return ZB_OK;
}

/* ---- throughput against the ratio (or another axis) ---------------------------- */

#define MAX_LINES 12

/* Lines a key would give: distinct labels of its attributes among plotted rows. */
static int count_series(const rowset *rs, unsigned key)
{
	strlist l = { 0 };
	char label[512];
	for (int i = 0; i < rs->n; i++)
		if (row_plotted(&rs->r[i])) {
			row_label(&rs->r[i], key, ", ", label, sizeof label);
			sl_intern(&l, label);
		}
	int n = l.n;
	sl_free(&l);
	return n;
}

/* x axes in order of preference when the ratio does not vary */
static const int x_candidates[] = { A_RATIO, A_CORES, A_THREADS, A_MB, A_SEQ, A_GAS, A_BUCKET, A_PREFETCH,
				    A_LINK, A_MODEL, A_POLICY, A_GPU, A_HW, A_CPU, A_CKPT, A_DTYPE,
				    A_OFFLOAD_PARAM, A_PAGEABLE };

typedef struct point {
	double x, y;
	int series;
	int row;
} point;

static int cmp_point(const void *a, const void *b)
{
	const point *p = a, *q = b;
	if (p->series != q->series)
		return p->series - q->series;
	return (p->x > q->x) - (p->x < q->x);
}

static zb_status plot_throughput(plot_ctx *c)
{
	int64_t run;
	zb_status st = sweep_run(c, &run);
	if (st)
		return st;
	rowset rs;
	if ((st = load_rows(c, ZB_Q_CONFIG_ROWS_OF_RUN, run, &rs)))
		return st;
	c->info->run_id = run;
	int nplot = 0, nofit = 0;
	for (int i = 0; i < rs.n; i++) {
		nplot += row_plotted(&rs.r[i]);
		nofit += rs.r[i].has_pred && !rs.r[i].fits;
	}
	if (rs.n == 0) {
		rowset_free(&rs);
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configurations to plot", (long long)run);
	}
	if (nplot == 0) {
		rowset_free(&rs);
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configuration that fits in memory (nothing to plot)",
			       (long long)run);
	}

	unsigned vary = varying_mask(&rs, row_plotted);
	int x = A_RATIO;
	for (size_t i = 0; i < sizeof x_candidates / sizeof x_candidates[0]; i++)
		if (vary & (1u << x_candidates[i])) {
			x = x_candidates[i];
			break;
		}
	unsigned key = vary & ~(1u << x);
	/* more lines than a reader can tell apart: keep the hardware axes (else the link
	 * alone) as lines and draw the fastest of the other settings at each x */
	unsigned collapsed = 0;
	if (count_series(&rs, key) > MAX_LINES) {
		unsigned hw = key & ((1u << A_LINK) | (1u << A_HW) | (1u << A_GPU) | (1u << A_CPU) | (1u << A_CORES));
		unsigned k2 = count_series(&rs, hw) <= MAX_LINES ? hw : key & (1u << A_LINK);
		collapsed = key & ~k2;
		key = k2;
	}
	/* colour by PCIe generation when it varies, line style by the rest */
	int primary = (key & (1u << A_LINK)) ? A_LINK : -1;
	unsigned rest = primary >= 0 ? key & ~(1u << primary) : key;

	strlist series = { 0 }, prim = { 0 }, rests = { 0 }, cats = { 0 };
	point *pts = zb_xmalloc((size_t)nplot * sizeof *pts);
	int np = 0, best = -1;
	char label[512];
	for (int i = 0; i < rs.n; i++) {
		row *r = &rs.r[i];
		if (!row_plotted(r))
			continue;
		row_label(r, key, ", ", label, sizeof label);
		pts[np].series = sl_intern(&series, label);
		if (primary >= 0)
			sl_intern(&prim, r->val[primary]);
		row_label(r, rest, ", ", label, sizeof label);
		if (!(x == A_RATIO && !strcmp(r->val[A_POLICY], "none")))
			sl_intern(&rests, label); /* line styles for the offloading lines */
		pts[np].x = attrs[x].numeric ? r->num[x] : (double)sl_intern(&cats, r->val[x]);
		pts[np].y = r->tokens_per_s;
		pts[np].row = i;
		if (best < 0 || r->tokens_per_s > pts[best].y)
			best = np;
		np++;
	}
	double bx = pts[best].x, by = pts[best].y;
	const row *brow = &rs.r[pts[best].row];
	qsort(pts, (size_t)np, sizeof *pts, cmp_point);
	int kept = 0; /* one point per line and x: the fastest (more than one only when collapsed) */
	for (int i = 0; i < np; i++) {
		if (kept > 0 && pts[kept - 1].series == pts[i].series && pts[kept - 1].x == pts[i].x) {
			if (pts[i].y > pts[kept - 1].y)
				pts[kept - 1] = pts[i];
			continue;
		}
		pts[kept++] = pts[i];
	}
	np = kept;
	double xmin = pts[0].x, xmax = pts[0].x;
	for (int i = 0; i < np; i++) {
		xmin = fmin(xmin, pts[i].x);
		xmax = fmax(xmax, pts[i].x);
	}

	char path[PATH_MAX + 32];
	FILE *f = data_open(c, "throughput.dat", path, sizeof path);
	if (!f) {
		st = c->err->status;
		goto out;
	}
	fprintf(f, "# run %lld: x = %s, y = tokens/s; one block per line\n", (long long)run, attrs[x].col);
	int *flat = zb_xcalloc((size_t)series.n, sizeof *flat); /* a 'none' series: one value for any ratio */
	for (int s = 0, i = 0; s < series.n; s++) {
		fprintf(f, "# %s\n", series.s[s]);
		int first = i, count = 0;
		for (; i < np && pts[i].series == s; i++, count++)
			fprintf(f, "%.9g %.9g\n", pts[i].x, pts[i].y);
		if (x == A_RATIO && count == 1 && !strcmp(rs.r[pts[first].row].val[A_POLICY], "none") &&
		    xmax > xmin) {
			fprintf(f, "%.9g %.9g\n", pts[first].x == xmin ? xmax : xmin, pts[first].y);
			flat[s] = 1;
		}
		fprintf(f, "\n\n");
	}
	fprintf(f, "# fastest\n%.9g %.9g\n", bx, by);
	if ((st = data_close(c, f, path))) {
		free(flat);
		goto out;
	}

	char consts[512], sub[1024], bestl[512], num[32], bestv[600];
	constants_label(brow, vary, consts, sizeof consts);
	snprintf(sub, sizeof sub, "%s · run %lld: %d configurations", consts, (long long)run, nplot);
	if (nofit)
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), ", %d more did not fit in memory", nofit);
	row_label(brow, vary, ", ", bestl, sizeof bestl);
	snprintf(bestv, sizeof bestv, "\nfastest (circled): %s tokens/s%s%s%s", thousands(by, num, sizeof num),
		 bestl[0] ? ", " : "", bestl, "");
	snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "%s", bestv);
	if (collapsed) {
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "\neach line: the fastest");
		for (int a = 0, k = 0; a < A_COUNT; a++)
			if (collapsed & (1u << a))
				snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "%s %s", k++ ? "," : "",
					 attrs[a].col);
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), " at each point");
	}

	char title[200];
	if (x == A_RATIO)
		snprintf(title, sizeof title, "Throughput against Twin-Flow ratio");
	else
		snprintf(title, sizeof title, "Throughput against %s", attrs[x].axis);
	gp_begin(c, 1200, 750, title, sub);
	gp(c, "set xlabel %s\n", gq(c, attrs[x].axis));
	gp(c, "set ylabel %s\n", gq(c, "throughput (tokens/s)"));
	gp(c, "set yrange [0:*]\nset format y '%%.0f'\n");
	gp(c, "set offsets 0, 0, graph 0.08, 0\n");
	double pad = xmax > xmin ? 0.04 * (xmax - xmin) : 0.5;
	gp(c, "set xrange [%.9g:%.9g]\n", xmin - pad, xmax + pad);
	if (!attrs[x].numeric) {
		gp(c, "set xtics (");
		for (int i = 0; i < cats.n; i++)
			gp(c, "%s%s %d", i ? ", " : "", gq(c, cats.s[i]), i);
		gp(c, ")\n");
	} else if (x == A_RATIO) {
		gp(c, "set xtics 0.1\nset format x '%%.2g'\n");
	}
	int outside = series.n > 8;
	/* throughput falls with the ratio once the CPU bounds it, so the bottom left is
	 * free; on other axes it often rises from there, so the key goes outside */
	gp(c, "set key %s reverse Left\n",
	   outside || x != A_RATIO ? "outside right top vertical" : "inside bottom left vertical");
	gp(c, "plot ");
	for (int s = 0; s < series.n; s++) {
		int ci = s, di = 0;
		/* find this series' primary and rest indices from its label's row */
		for (int i = 0; i < np; i++)
			if (pts[i].series == s) {
				const row *r = &rs.r[pts[i].row];
				row_label(r, rest, ", ", label, sizeof label);
				di = sl_find(&rests, label);
				if (di < 0)
					di = 0;
				ci = primary >= 0 ? sl_find(&prim, r->val[primary]) : s;
				break;
			}
		const char *title = series.s[s][0] ? series.s[s] : "predicted";
		/* dash types 1 solid, 2 dashed, 4 dash-dot, 5 dash-dot-dot; 3 (dotted) marks
		 * the no-offload baseline */
		static const int dts[] = { 1, 2, 4, 5 };
		if (flat[s]) {
			char t[600];
			snprintf(t, sizeof t, "%s (no offload: any ratio)", title);
			gp(c, "%s %s index %d using 1:2 with lines lw 2 dt 3 lc rgb '%s' title %s", s ? ", \\\n  " : "",
			   gq(c, path), s, palette[ci % NPALETTE], gq(c, t));
		} else {
			gp(c, "%s %s index %d using 1:2 with linespoints lw 2 dt %d pt %d ps 1.2 lc rgb '%s' title %s",
			   s ? ", \\\n  " : "", gq(c, path), s, dts[di % 4], point_types[di % NPOINTS],
			   palette[ci % NPALETTE], gq(c, title));
		}
	}
	gp(c, ", \\\n   %s index %d using 1:2 with points pt 6 ps 3.5 lw 2 lc rgb '#222222' notitle\n", gq(c, path),
	   series.n);
	free(flat);
	if ((st = ctx_render(c)))
		goto out;
	snprintf(c->info->what, sizeof c->info->what, "run %lld: %d configurations in %d line%s", (long long)run,
		 nplot, series.n, series.n == 1 ? "" : "s");
out:
	free(pts);
	sl_free(&series);
	sl_free(&prim);
	sl_free(&rests);
	sl_free(&cats);
	rowset_free(&rs);
	return st;
}

/* ---- the hardware-purchase view ------------------------------------------------ */

static zb_status plot_hardware(plot_ctx *c)
{
	int64_t run;
	zb_status st = sweep_run(c, &run);
	if (st)
		return st;
	rowset rs;
	if ((st = load_rows(c, ZB_Q_CONFIG_ROWS_OF_RUN, run, &rs)))
		return st;
	c->info->run_id = run;
	int first = -1, nfit = 0;
	for (int i = 0; i < rs.n; i++)
		if (row_plotted(&rs.r[i])) {
			if (first < 0)
				first = i;
			nfit++;
		}
	if (first < 0) {
		rowset_free(&rs);
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no configuration that fits in memory (nothing to plot)",
			       (long long)run);
	}
	unsigned vary = varying_mask(&rs, row_plotted);
	/* one workload: the first plotted row's model and sequence length */
	const row *w = &rs.r[first];
	int other_workloads = (vary & ((1u << A_MODEL) | (1u << A_SEQ))) != 0;
	unsigned xkey = (1u << A_LINK) | (vary & ((1u << A_HW) | (1u << A_GPU)));
	unsigned bkey = (1u << A_CORES) | (vary & (1u << A_CPU));
	unsigned tuned = vary & ~(xkey | bkey | (1u << A_MODEL) | (1u << A_SEQ));

	strlist xs = { 0 }, bs = { 0 };
	char label[512];
	for (int i = 0; i < rs.n; i++) {
		row *r = &rs.r[i];
		if (!row_plotted(r) || strcmp(r->val[A_MODEL], w->val[A_MODEL]) || strcmp(r->val[A_SEQ], w->val[A_SEQ]))
			continue;
		row_label(r, xkey, " ", label, sizeof label);
		sl_intern(&xs, label);
		row_label(r, bkey, ", ", label, sizeof label);
		sl_intern(&bs, label);
	}
	/* bars in ascending core count */
	int nb = bs.n, nx = xs.n;
	double *best = zb_xmalloc((size_t)(nx * nb) * sizeof *best);
	int *arg = zb_xmalloc((size_t)(nx * nb) * sizeof *arg);
	double *bcores = zb_xmalloc((size_t)nb * sizeof *bcores);
	int *border = zb_xmalloc((size_t)nb * sizeof *border);
	for (int i = 0; i < nx * nb; i++) {
		best[i] = NAN;
		arg[i] = -1;
	}
	for (int b = 0; b < nb; b++)
		bcores[b] = -1;
	for (int i = 0; i < rs.n; i++) {
		row *r = &rs.r[i];
		if (!row_plotted(r) || strcmp(r->val[A_MODEL], w->val[A_MODEL]) || strcmp(r->val[A_SEQ], w->val[A_SEQ]))
			continue;
		row_label(r, xkey, " ", label, sizeof label);
		int xi = sl_find(&xs, label);
		row_label(r, bkey, ", ", label, sizeof label);
		int bi = sl_find(&bs, label);
		bcores[bi] = r->num[A_CORES];
		double *cell = &best[xi * nb + bi];
		if (isnan(*cell) || r->tokens_per_s > *cell) {
			*cell = r->tokens_per_s;
			arg[xi * nb + bi] = i;
		}
	}
	for (int b = 0; b < nb; b++)
		border[b] = b;
	for (int i = 1; i < nb; i++) /* insertion sort by cores, stable */
		for (int j = i; j > 0 && bcores[border[j - 1]] > bcores[border[j]]; j--) {
			int t = border[j];
			border[j] = border[j - 1];
			border[j - 1] = t;
		}
	double base = NAN;
	int base_cell = -1;
	for (int i = 0; i < nx * nb; i++)
		if (!isnan(best[i]) && (isnan(base) || best[i] < base)) {
			base = best[i];
			base_cell = i;
		}

	char path[PATH_MAX + 32];
	FILE *f = data_open(c, "hardware.dat", path, sizeof path);
	if (!f) {
		st = c->err->status;
		goto out;
	}
	double width = 0.8 / nb;
	fprintf(f, "# run %lld: x position, speedup, tokens/s; one block per core count\n", (long long)run);
	double ymax = 1.0;
	for (int bb = 0; bb < nb; bb++) {
		int b = border[bb];
		fprintf(f, "# %s\n", bs.s[b]);
		for (int xi = 0; xi < nx; xi++) {
			double v = best[xi * nb + b];
			double pos = xi + (bb - (nb - 1) / 2.0) * width;
			if (isnan(v))
				fprintf(f, "%.6g NaN NaN \"\" \"\"\n", pos);
			else {
				char lab[512];
				const row *r = &rs.r[arg[xi * nb + b]];
				int show_ratio = (tuned & (1u << A_RATIO)) && strcmp(r->val[A_POLICY], "none");
				int show_pol = (tuned & (1u << A_POLICY)) != 0;
				snprintf(lab, sizeof lab, "%s%s%s", show_pol ? r->val[A_POLICY] : "",
					 show_pol && show_ratio ? ", " : "", show_ratio ? r->val[A_RATIO] : "");
				fprintf(f, "%.6g %.9g %.9g \"%.2f×\" \"%s\"\n", pos, v / base, v, v / base, lab);
				ymax = fmax(ymax, v / base);
			}
		}
		fprintf(f, "\n\n");
	}
	if ((st = data_close(c, f, path)))
		goto out;

	char consts[512], sub[1200], num[32], tunedl[256] = "";
	unsigned cvary = vary | xkey | bkey;
	constants_label(w, cvary & ~((1u << A_MODEL) | (1u << A_SEQ)), consts, sizeof consts);
	for (int a = 0, k = 0; a < A_COUNT; a++)
		if (tuned & (1u << a)) {
			const char *nm = a == A_RATIO ? "ratio" : a == A_MB ? "micro-batch" : attrs[a].col;
			snprintf(tunedl + strlen(tunedl), sizeof tunedl - strlen(tunedl), "%s%s", k++ ? ", " : "", nm);
		}
	const row *br = &rs.r[arg[base_cell]];
	char basel[256];
	row_label(br, xkey | bkey, ", ", basel, sizeof basel);
	snprintf(sub, sizeof sub, "%s%s · run %lld · 1.00× = %s tokens/s (%s)%s%s%s", consts,
		 other_workloads ? " (first workload of the run)" : "", (long long)run, thousands(base, num, sizeof num),
		 basel, tunedl[0] ? "\neach bar: the fastest " : "", tunedl, tunedl[0] ? " of the run for that hardware" : "");

	gp_begin(c, 1200, 750, "Speedup by hardware: PCIe generation and CPU cores", sub);
	gp(c, "set xlabel %s\n", gq(c, "host link (PCIe generation)"));
	gp(c, "set ylabel %s\n", gq(c, "speedup over the slowest hardware (×)"));
	gp(c, "set yrange [0:%.6g]\n", ymax * 1.18);
	gp(c, "set xrange [-0.6:%.6g]\n", nx - 0.4);
	gp(c, "set grid noxtics\n");
	gp(c, "set xtics (");
	for (int i = 0; i < nx; i++)
		gp(c, "%s%s %d", i ? ", " : "", gq(c, xs.s[i]), i);
	gp(c, ")\n");
	gp(c, "set boxwidth %.6g absolute\nset style fill solid 0.85 border lc rgb '#333333'\n", width * 0.92);
	gp(c, "set key outside right top vertical title %s\n", gq(c, "CPU cores"));
	gp(c, "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb '#888888'\n");
	gp(c, "plot ");
	for (int bb = 0; bb < nb; bb++)
		gp(c, "%s%s index %d using 1:2 with boxes lc rgb '%s' title %s", bb ? ", \\\n  " : "", gq(c, path), bb,
		   palette[bb % NPALETTE], gq(c, bs.s[border[bb]]));
	/* the speedup above each bar, the settings that won written up inside it */
	for (int bb = 0; bb < nb; bb++)
		gp(c, ", \\\n  %s index %d using 1:2:4 with labels offset 0,0.8 font ',10' notitle", gq(c, path), bb);
	for (int bb = 0; bb < nb; bb++)
		gp(c, ", \\\n  %s index %d using 1:2:5 with labels rotate by 90 right offset 0,-0.6 font ',9'"
		      " textcolor rgb '#1a1a1a' notitle",
		   gq(c, path), bb);
	gp(c, "\n");
	if ((st = ctx_render(c)))
		goto out;
	snprintf(c->info->what, sizeof c->info->what, "run %lld: %d links x %d core counts from %d configurations",
		 (long long)run, nx, nb, nfit);
out:
	free(best);
	free(arg);
	free(bcores);
	free(border);
	sl_free(&xs);
	sl_free(&bs);
	rowset_free(&rs);
	return st;
}

/* ---- predicted against measured ----------------------------------------------- */

/* The measured steady-state step time of a configuration: the median of its
 * measured steps after the first two (warm-up, as predictions skip them), or, with
 * no steps rows, the median spacing of the measured events' step starts. 0 with
 * *out = NAN when nothing was measured. */
static zb_status measured_step_s(plot_ctx *c, int64_t id, double *out)
{
	*out = NAN;
	zb_rows *q;
	zb_status st = rows_open(c, ZB_Q_MEASURED_STEP_TIMES, id, &q);
	if (st)
		return st;
	double *v = NULL;
	int n = 0, cap = 0, rc;
	while ((rc = zb_rows_next(q)) > 0) {
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			v = zb_xrealloc(v, (size_t)cap * sizeof *v);
		}
		v[n++] = zb_rows_real(q, 0, 0);
	}
	if ((st = zb_rows_close(q, rc, NULL, c->err))) {
		free(v);
		return st;
	}
	if (n > 0) {
		int skip = n > 2 ? 2 : 0;
		*out = zb_median(v + skip, n - skip);
		free(v);
		return ZB_OK;
	}
	if ((st = rows_open(c, ZB_Q_MEASURED_STEP_SPANS, id, &q))) {
		free(v);
		return st;
	}
	double *s0 = NULL, first_end = 0;
	n = cap = 0;
	while ((rc = zb_rows_next(q)) > 0) {
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			s0 = zb_xrealloc(s0, (size_t)cap * sizeof *s0);
		}
		s0[n] = (double)zb_rows_int(q, 1, 0);
		if (n == 0)
			first_end = (double)zb_rows_int(q, 2, 0);
		n++;
	}
	free(v);
	if ((st = zb_rows_close(q, rc, NULL, c->err))) {
		free(s0);
		return st;
	}
	if (n == 1)
		*out = (first_end - s0[0]) * 1e-9;
	else if (n > 1) {
		int nd = n - 1;
		double *d = zb_xmalloc((size_t)nd * sizeof *d);
		for (int i = 0; i < nd; i++)
			d[i] = (s0[i + 1] - s0[i]) * 1e-9;
		int skip = nd > 2 ? 2 : 0;
		*out = zb_median(d + skip, nd - skip);
		free(d);
	}
	free(s0);
	return ZB_OK;
}

static zb_status plot_accuracy(plot_ctx *c)
{
	const zb_plot_request *r = c->req;
	zb_status st;
	rowset rs;
	if (r->config_id) {
		if ((st = check_config(c, r->config_id)) || (st = load_rows(c, ZB_Q_CONFIG_ROW, r->config_id, &rs)))
			return st;
		c->info->config_id = r->config_id;
	} else if (r->run_id) {
		if ((st = check_run(c, r->run_id)) || (st = load_rows(c, ZB_Q_CONFIG_ROWS_OF_RUN, r->run_id, &rs)))
			return st;
		c->info->run_id = r->run_id;
	} else {
		if ((st = load_rows(c, ZB_Q_CONFIG_ROWS_MEASURED, 0, &rs)))
			return st;
	}
	double *meas = zb_xmalloc((size_t)(rs.n ? rs.n : 1) * sizeof *meas);
	int n = 0;
	for (int i = 0; i < rs.n; i++) {
		meas[i] = NAN;
		if (!(rs.r[i].has_pred && rs.r[i].step_time_s > 0))
			continue;
		if ((st = measured_step_s(c, rs.r[i].id, &meas[i]))) {
			free(meas);
			rowset_free(&rs);
			return st;
		}
		n += meas[i] > 0;
	}
	if (n == 0) {
		char scope[64] = "";
		if (r->config_id)
			snprintf(scope, sizeof scope, "config %lld in ", (long long)r->config_id);
		else if (r->run_id)
			snprintf(scope, sizeof scope, "run %lld in ", (long long)r->run_id);
		free(meas);
		rowset_free(&rs);
		return zb_fail(c->err, ZB_E_INPUT,
			       "no configuration with both a prediction and measured steps in %sdatabase '%s'"
			       " (zbench run measures one on a GPU)",
			       scope, c->dbpath);
	}

	/* series by policy; errors and the range */
	strlist pol = { 0 };
	double lo = INFINITY, hi = 0, sum = 0, worst = -1;
	int worst_i = -1, outside = 0;
	for (int i = 0; i < rs.n; i++) {
		if (!(meas[i] > 0))
			continue;
		sl_intern(&pol, rs.r[i].val[A_POLICY]);
		double p = rs.r[i].step_time_s, m = meas[i];
		double e = fabs(p - m) / m;
		sum += e;
		if (e > worst) {
			worst = e;
			worst_i = i;
		}
		outside += e > 0.05;
		lo = fmin(lo, fmin(p, m) * 1e3); /* ms */
		hi = fmax(hi, fmax(p, m) * 1e3);
	}
	int logscale = hi / lo > 20;
	double plo = logscale ? lo / 1.5 : fmax(0, lo - 0.15 * (hi - lo) - 0.1 * lo);
	double phi = logscale ? hi * 1.5 : hi + 0.15 * (hi - lo) + 0.1 * hi;

	char path[PATH_MAX + 32];
	FILE *f = data_open(c, "accuracy.dat", path, sizeof path);
	if (!f) {
		st = c->err->status;
		goto out;
	}
	fprintf(f, "# predicted_ms measured_ms config_id error_pct; one block per policy\n");
	for (int s = 0; s < pol.n; s++) {
		fprintf(f, "# %s\n", pol.s[s]);
		for (int i = 0; i < rs.n; i++)
			if (meas[i] > 0 && !strcmp(rs.r[i].val[A_POLICY], pol.s[s]))
				fprintf(f, "%.9g %.9g %lld %.4g\n", rs.r[i].step_time_s * 1e3, meas[i] * 1e3,
					(long long)rs.r[i].id, 100 * (rs.r[i].step_time_s - meas[i]) / meas[i]);
		fprintf(f, "\n\n");
	}
	/* the configurations outside the band, labelled by id */
	fprintf(f, "# outside +-5%%\n");
	int nlab = 0;
	for (int i = 0; i < rs.n; i++)
		if (meas[i] > 0 && fabs(rs.r[i].step_time_s - meas[i]) / meas[i] > 0.05) {
			fprintf(f, "%.9g %.9g \"config %lld: %+.1f%%\"\n", rs.r[i].step_time_s * 1e3, meas[i] * 1e3,
				(long long)rs.r[i].id, 100 * (rs.r[i].step_time_s - meas[i]) / meas[i]);
			nlab++;
		}
	if (!nlab)
		fprintf(f, "NaN NaN \"\"\n");
	if ((st = data_close(c, f, path)))
		goto out;

	char sub[512];
	snprintf(sub, sizeof sub,
		 "%d configuration%s · mean |error| %.1f%% · worst %.1f%% (config %lld) · %d outside ±5%%\n"
		 "error = (predicted - measured) / measured; measured: median steady-state step (after the first two)",
		 n, n == 1 ? "" : "s", 100 * sum / n, 100 * worst, (long long)rs.r[worst_i].id, outside);
	gp_begin(c, 950, 900, "Predicted against measured step time", sub);
	gp(c, "set size ratio -1\n");
	if (logscale)
		gp(c, "set logscale xy\n");
	gp(c, "set xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n", plo, phi, plo, phi);
	gp(c, "set samples 200\n");
	gp(c, "set xlabel %s\nset ylabel %s\n", gq(c, "predicted step time (ms)"), gq(c, "measured step time (ms)"));
	gp(c, "set key inside top left vertical reverse Left\n");
	gp(c, "plot '+' using 1:(0.95*$1):(1.05*$1) with filledcurves fc rgb '#d6e6f4' fs solid 1.0 noborder"
	      " title %s, \\\n",
	   gq(c, "±5% band"));
	gp(c, "  x with lines lw 1.5 dt 2 lc rgb '#333333' title %s", gq(c, "y = x (exact prediction)"));
	for (int s = 0; s < pol.n; s++)
		gp(c, ", \\\n  %s index %d using 1:2 with points pt %d ps 1.6 lc rgb '%s' title %s", gq(c, path), s,
		   point_types[s % NPOINTS], palette[s % NPALETTE], gq(c, pol.s[s]));
	gp(c, ", \\\n  %s index %d using 1:2:3 with labels left offset 1,0.6 font ',9' textcolor rgb '#aa2222' notitle\n",
	   gq(c, path), pol.n);
	if ((st = ctx_render(c)))
		goto out;
	snprintf(c->info->what, sizeof c->info->what,
		 "%d configuration%s, mean |error| %.1f%%, worst %.1f%%", n, n == 1 ? "" : "s", 100 * sum / n,
		 100 * worst);
out:
	sl_free(&pol);
	free(meas);
	rowset_free(&rs);
	return st;
}

/* ---- the timeline of one step --------------------------------------------------- */

/* Resources top to bottom, with their row titles. */
static const struct {
	const char *name;  /* tasks.resource */
	const char *title;
} lanes_of[] = {
	{ "gpu", "GPU compute" },
	{ "gpu_opt", "GPU Adam" },
	{ "pcie_d2h", "PCIe D2H" },
	{ "pcie_h2d", "PCIe H2D" },
	{ "cpu", "CPU Adam" },
};
#define NRES ((int)(sizeof lanes_of / sizeof lanes_of[0]))

/* Colour classes of tasks. */
/* drawn in this order: short kernels first, so GEMMs drawn after them stay visible
 * where a kernel narrower than a pixel would otherwise paint over its neighbours */
enum { K_KERNEL, K_GEMM, K_GRAD_DOWN, K_PARAM_UP, K_ACT_COPY, K_OTHER_COPY, K_CPU_ADAM, K_GPU_ADAM, K_COUNT };
static const struct {
	const char *title;
	const char *color;
} klass[K_COUNT] = {
	[K_GEMM] = { "GEMM", "#4e79a7" },
	[K_KERNEL] = { "other GPU kernels", "#a0cbe8" },
	[K_GRAD_DOWN] = { "gradients to host", "#f28e2b" },
	[K_PARAM_UP] = { "parameters to GPU", "#59a14f" },
	[K_ACT_COPY] = { "activation checkpoints", "#b07aa1" },
	[K_OTHER_COPY] = { "other copies", "#9c755f" },
	[K_CPU_ADAM] = { "CPU Adam", "#e15759" },
	[K_GPU_ADAM] = { "GPU Adam", "#76b7b2" },
};

static int task_class(const char *kind, const char *op)
{
	if (!strcmp(kind, "gemm"))
		return K_GEMM;
	if (!strcmp(kind, "kernel"))
		return K_KERNEL;
	if (!strcmp(kind, "cpu_adam"))
		return K_CPU_ADAM;
	if (!strcmp(kind, "gpu_adam"))
		return K_GPU_ADAM;
	if (!strcmp(op, "grad_down"))
		return K_GRAD_DOWN;
	if (!strcmp(op, "param_up") || !strcmp(op, "param_fetch"))
		return K_PARAM_UP;
	if (!strcmp(op, "act_down") || !strcmp(op, "act_up"))
		return K_ACT_COPY;
	return K_OTHER_COPY;
}

typedef struct bar {
	double s, e;  /* ms from the step's first task */
	int res, klass, lane;
} bar;

#define MAX_LANES 8
#define TIMELINE_BINS 1100 /* about the plot area's width in pixels */

/* Events of one source and step, with lanes assigned per resource (greedy: the
 * first lane free at the task's start). */
static zb_status load_bars(plot_ctx *c, int64_t id, const char *source, int64_t step, bar **out, int *nout,
			   int lanes[NRES], double *span_ms)
{
	zb_rows *q;
	zb_status st = rows_open(c, ZB_Q_STEP_BARS, id, &q);
	if (st)
		return st;
	zb_rows_bind_text(q, 2, source);
	zb_rows_bind_int(q, 3, step);
	bar *b = NULL;
	int n = 0, cap = 0, rc;
	int64_t t0 = 0, tend = 0;
	double lane_end[NRES][MAX_LANES];
	for (int r = 0; r < NRES; r++) {
		lanes[r] = 0;
		for (int l = 0; l < MAX_LANES; l++)
			lane_end[r][l] = -INFINITY;
	}
	while ((rc = zb_rows_next(q)) > 0) {
		const char *res = zb_rows_text(q, 0);
		int ri = -1;
		for (int r = 0; r < NRES && res; r++)
			if (!strcmp(res, lanes_of[r].name))
				ri = r;
		if (ri < 0)
			continue;
		int64_t s = zb_rows_int(q, 3, 0), e = zb_rows_int(q, 4, 0);
		if (n == 0)
			t0 = s;
		if (e > tend || n == 0)
			tend = e;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			b = zb_xrealloc(b, (size_t)cap * sizeof *b);
		}
		bar *x = &b[n++];
		x->s = (double)(s - t0) * 1e-6;
		x->e = (double)(e - t0) * 1e-6;
		x->res = ri;
		const char *kind = zb_rows_text(q, 1);
		const char *op = zb_rows_text(q, 2);
		x->klass = task_class(kind ? kind : "", op ? op : "");
		int l = 0;
		while (l < MAX_LANES - 1 && lane_end[ri][l] > x->s)
			l++;
		x->lane = l;
		lane_end[ri][l] = fmax(lane_end[ri][l], x->e);
		if (l + 1 > lanes[ri])
			lanes[ri] = l + 1;
	}
	if ((st = zb_rows_close(q, rc, NULL, c->err))) {
		free(b);
		return st;
	}
	*out = b;
	*nout = n;
	*span_ms = n ? (double)(tend - t0) * 1e-6 : 0;
	return ZB_OK;
}

static zb_status plot_timeline(plot_ctx *c)
{
	const zb_plot_request *r = c->req;
	zb_status st;
	int64_t id = r->config_id;
	int found;
	if (id) {
		if ((st = check_config(c, id)))
			return st;
	} else if (r->run_id) {
		if ((st = check_run(c, r->run_id)) ||
		    (st = sql_int(c, ZB_Q_RUN_LATEST_CONFIG_EVENTS, r->run_id, &id, &found)))
			return st;
		if (!found)
			return zb_fail(c->err, ZB_E_INPUT,
				       "run %lld has no timeline events (zbench predict --timeline or zbench run store them)",
				       (long long)r->run_id);
	} else {
		if ((st = sql_int(c, ZB_Q_LATEST_CONFIG_EVENTS, 0, &id, &found)))
			return st;
		if (!found)
			return zb_fail(c->err, ZB_E_INPUT,
				       "no timeline events in database '%s' (zbench predict --timeline or zbench run store them)",
				       c->dbpath);
	}
	c->info->config_id = id;

	/* the middle step among those with events */
	zb_rows *q;
	if ((st = rows_open(c, ZB_Q_STEPS_WITH_EVENTS, id, &q)))
		return st;
	int64_t steps[4096];
	int nsteps = 0, rc;
	while ((rc = zb_rows_next(q)) > 0)
		if (nsteps < 4096)
			steps[nsteps++] = zb_rows_int(q, 0, 0);
	if ((st = zb_rows_close(q, rc, NULL, c->err)))
		return st;
	if (nsteps == 0)
		return zb_fail(c->err, ZB_E_INPUT,
			       "config %lld has no timeline events with tasks (zbench predict --timeline or zbench run store them)",
			       (long long)id);
	int64_t step = steps[nsteps / 2];

	rowset rs;
	if ((st = load_rows(c, ZB_Q_CONFIG_ROW, id, &rs)))
		return st;
	static const char *const sources[2] = { "predicted", "measured" };
	bar *bars[2] = { NULL, NULL };
	int nbars[2] = { 0, 0 }, lanes[2][NRES];
	double span[2] = { 0, 0 }, steptime[2] = { NAN, NAN };
	for (int s = 0; s < 2; s++)
		if ((st = load_bars(c, id, sources[s], step, &bars[s], &nbars[s], lanes[s], &span[s])))
			goto out;
	if (rs.n && rs.r[0].has_pred)
		steptime[0] = rs.r[0].step_time_s;
	if (nbars[1] && (st = measured_step_s(c, id, &steptime[1])))
		goto out;

	/* rows, top to bottom: per resource, predicted lanes then measured lanes */
	int rowof[2][NRES][MAX_LANES];
	char ylabels[2 * NRES * MAX_LANES][96];
	int nrows = 0;
	double seps[NRES];
	int nseps = 0;
	int threads = rs.n ? (int)(rs.r[0].num[A_THREADS] > 0 ? rs.r[0].num[A_THREADS] : rs.r[0].num[A_CORES]) : 0;
	for (int res = 0; res < NRES; res++) {
		if (res > 0)
			seps[nseps++] = nrows;
		for (int s = 0; s < 2; s++) {
			if (!nbars[s])
				continue;
			int nl = lanes[s][res] ? lanes[s][res] : 1;
			for (int l = 0; l < nl; l++) {
				rowof[s][res][l] = nrows;
				char title[64];
				if (res == NRES - 1 && threads > 0)
					snprintf(title, sizeof title, "CPU Adam (%d threads)", threads);
				else
					snprintf(title, sizeof title, "%s", lanes_of[res].title);
				snprintf(ylabels[nrows], sizeof ylabels[0], "%s%s%s%s", title,
					 nbars[0] && nbars[1] ? (s ? " · measured" : " · predicted") : "",
					 nl > 1 ? " #" : "", "");
				if (nl > 1)
					snprintf(ylabels[nrows] + strlen(ylabels[nrows]),
						 sizeof ylabels[0] - strlen(ylabels[nrows]), "%d", l + 1);
				nrows++;
			}
		}
	}

	char path[PATH_MAX + 32];
	FILE *f = data_open(c, "timeline.dat", path, sizeof path);
	if (!f) {
		st = c->err->status;
		goto out;
	}
	/* Resample each row at about the plot's pixel width: a bin takes the class
	 * busiest in it, and runs of bins of one class become one box. Drawn one box a
	 * task, a thousand sub-pixel kernels and GEMMs antialias into a pale smear that
	 * hides which class dominates; resampled, the picture is what a reader would
	 * see zoomed in, and the SVG stays small. A task shorter than a bin still
	 * paints the bin where it starts. */
	double xend = fmax(span[0], span[1]);
	if (!(xend > 0))
		xend = 1e-3;
	double bw = xend / TIMELINE_BINS;
	double *busy = zb_xcalloc((size_t)nrows * TIMELINE_BINS * K_COUNT, sizeof *busy);
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < nbars[s]; i++) {
			bar *b = &bars[s][i];
			double *rowbins = busy + (size_t)rowof[s][b->res][b->lane] * TIMELINE_BINS * K_COUNT;
			int b0 = (int)(b->s / bw), b1 = (int)(b->e / bw);
			if (b0 >= TIMELINE_BINS)
				b0 = TIMELINE_BINS - 1;
			if (b1 >= TIMELINE_BINS)
				b1 = TIMELINE_BINS - 1;
			if (b->e <= b->s) {
				rowbins[b0 * K_COUNT + b->klass] += 1e-9;
				continue;
			}
			for (int k = b0; k <= b1; k++) {
				double lo = fmax(b->s, k * bw), hi = fmin(b->e, (k + 1) * bw);
				rowbins[k * K_COUNT + b->klass] += hi > lo ? hi - lo : 1e-9;
			}
		}
	fprintf(f, "# config %lld step %lld: x_center_ms y half_width_ms half_height, resampled to %d bins of"
		   " %.4g ms a row; one block per task class\n",
		(long long)id, (long long)step, TIMELINE_BINS, bw);
	int used[K_COUNT] = { 0 };
	for (int k = 0; k < K_COUNT; k++) {
		fprintf(f, "# %s\n", klass[k].title);
		for (int rr = 0; rr < nrows; rr++) {
			const double *rowbins = busy + (size_t)rr * TIMELINE_BINS * K_COUNT;
			int run = -1;
			for (int b = 0; b <= TIMELINE_BINS; b++) {
				int mine = 0;
				if (b < TIMELINE_BINS) {
					int arg = -1;
					double m = 0;
					for (int kk = 0; kk < K_COUNT; kk++)
						if (rowbins[b * K_COUNT + kk] > m) {
							m = rowbins[b * K_COUNT + kk];
							arg = kk;
						}
					mine = arg == k;
				}
				if (mine && run < 0)
					run = b;
				if (!mine && run >= 0) {
					double x0 = run * bw, x1 = b * bw;
					fprintf(f, "%.6f %d %.6f 0.38\n", 0.5 * (x0 + x1), nrows - 1 - rr, 0.5 * (x1 - x0));
					used[k]++;
					run = -1;
				}
			}
		}
		if (!used[k])
			fprintf(f, "NaN NaN NaN NaN\n");
		fprintf(f, "\n\n");
	}
	free(busy);
	if ((st = data_close(c, f, path)))
		goto out;

	char title[200], sub[1024], desc[512];
	snprintf(title, sizeof title, "Timeline of step %lld of config %lld", (long long)step, (long long)id);
	if (rs.n) {
		constants_label(&rs.r[0], 0, desc, sizeof desc);
	} else {
		desc[0] = 0;
	}
	size_t len = (size_t)snprintf(sub, sizeof sub, "%s", desc);
	for (int s = 0; s < 2 && len < sizeof sub; s++)
		if (nbars[s]) {
			len += (size_t)snprintf(sub + len, sizeof sub - len, "%s%s: step time %.2f ms, this step's tasks span %.2f ms",
						len ? (s == 0 || !nbars[0] ? "\n" : " · ") : "", sources[s],
						steptime[s] * 1e3, span[s]);
		}
	int height = 230 + 38 * nrows;
	if (height < 520)
		height = 520;
	gp_begin(c, 1500, height, title, sub);
	gp(c, "set lmargin 36\nset rmargin 4\nset bmargin at screen %.5f\n", 100.0 / height);
	gp(c, "set key at screen 0.5, screen %.5f center bottom horizontal\n", 12.0 / height);
	gp(c, "set xlabel %s\n", gq(c, "time from the step's first task (ms)"));
	gp(c, "set yrange [-0.7:%d.7]\n", nrows - 1);
	gp(c, "set xrange [0:%.6g]\n", xend * 1.01);
	gp(c, "set grid xtics noytics\n");
	gp(c, "set ytics (");
	for (int i = 0; i < nrows; i++)
		gp(c, "%s%s %d", i ? ", " : "", gq(c, ylabels[i]), nrows - 1 - i);
	gp(c, ") nomirror scale 0\n");
	for (int i = 0; i < nseps; i++)
		gp(c, "set arrow from graph 0, first %.1f to graph 1, first %.1f nohead lc rgb '#bbbbbb' lw 1\n",
		   nrows - seps[i] - 0.5, nrows - seps[i] - 0.5);
	gp(c, "set style fill solid 1.0 noborder\n");
	gp(c, "plot ");
	int first = 1;
	for (int k = 0; k < K_COUNT; k++) {
		if (!used[k])
			continue;
		gp(c, "%s%s index %d using 1:2:3:4 with boxxyerror lc rgb '%s' title %s", first ? "" : ", \\\n  ",
		   gq(c, path), k, klass[k].color, gq(c, klass[k].title));
		first = 0;
	}
	gp(c, "\n");
	if ((st = ctx_render(c)))
		goto out;
	snprintf(c->info->what, sizeof c->info->what, "config %lld, step %lld: %d predicted and %d measured tasks",
		 (long long)id, (long long)step, nbars[0], nbars[1]);
out:
	free(bars[0]);
	free(bars[1]);
	rowset_free(&rs);
	return st;
}

/* ---- memory per policy --------------------------------------------------------- */

/* Rebuild the model and policy of a stored configuration and estimate its memory
 * term by term. 0 when the terms' totals equal the stored ones. */
static int memory_terms(const row *r, zb_memory *m, double *gpu_cap, double *host_cap)
{
	*gpu_cap = *host_cap = NAN;
	if (!r->json)
		return -1;
	json_t *root = json_loads(r->json, 0, NULL);
	if (!root)
		return -1;
	zb_config c;
	memset(&c, 0, sizeof c);
	zb_preset_default_hw(&c.hw);
	json_t *hw = json_object_get(root, "hw");
	json_t *g = json_object_get(json_object_get(hw, "gpu"), "mem_bytes");
	json_t *h = json_object_get(json_object_get(hw, "cpu"), "mem_bytes");
	if (json_is_number(g))
		*gpu_cap = c.hw.gpu.mem_bytes = json_number_value(g);
	if (json_is_number(h))
		*host_cap = c.hw.cpu.mem_bytes = json_number_value(h);
	json_t *mo = json_object_get(root, "model");
	int bad = !json_is_object(mo);
	zb_model *md = &c.model;
	static const struct {
		const char *key;
		size_t off;
		int flag;
		int required;
	} mf[] = {
		{ "layers", offsetof(zb_model, layers), 0, 1 },
		{ "hidden", offsetof(zb_model, hidden), 0, 1 },
		{ "heads", offsetof(zb_model, heads), 0, 1 },
		{ "kv_heads", offsetof(zb_model, kv_heads), 0, 0 },
		{ "ffn", offsetof(zb_model, ffn), 0, 1 },
		{ "vocab", offsetof(zb_model, vocab), 0, 1 },
		{ "max_seq", offsetof(zb_model, max_seq), 0, 0 },
		{ "gated_mlp", offsetof(zb_model, gated_mlp), 1, 1 },
		{ "bias", offsetof(zb_model, bias), 1, 1 },
		{ "tied_embeddings", offsetof(zb_model, tied_embeddings), 1, 1 },
		{ "embed_proj", offsetof(zb_model, embed_proj), 0, 0 },
	};
	for (size_t i = 0; !bad && i < sizeof mf / sizeof mf[0]; i++) {
		json_t *v = json_object_get(mo, mf[i].key);
		int *dst = (int *)((char *)md + mf[i].off);
		if (!v) {
			bad = mf[i].required;
			continue;
		}
		if (mf[i].flag)
			*dst = json_is_true(v);
		else if (json_is_integer(v))
			*dst = (int)json_integer_value(v);
		else
			bad = 1;
	}
	if (!bad && md->kv_heads == 0)
		md->kv_heads = md->heads;
	json_decref(root);
	if (bad || zb_model_validate(md, NULL))
		return -1;

	zb_policy *p = &c.policy;
	zb_policy_defaults(p);
	if (zb_policy_parse(r->val[A_POLICY], &p->kind, NULL) || zb_ckpt_parse(r->val[A_CKPT] + 5, &p->ckpt, NULL) ||
	    zb_dtype_parse(r->val[A_DTYPE], &p->dtype, NULL))
		return -1;
	p->ratio = r->num[A_RATIO];
	p->offload_param = r->num[A_OFFLOAD_PARAM] != 0;
	p->prefetch_layers = (int)r->num[A_PREFETCH];
	p->gas = (int)r->num[A_GAS];
	p->micro_batch = (int)r->num[A_MB];
	p->seq = (int)r->num[A_SEQ];
	p->pageable = r->num[A_PAGEABLE] != 0;
	p->bucket_params = (int64_t)r->num[A_BUCKET];
	p->cpu_threads = (int)r->num[A_THREADS];
	c.steps = 1;
	zb_memory_estimate(&c, m);
	if (!(fabs(m->gpu_bytes - r->gpu_bytes) <= 1e-6 * fmax(1, r->gpu_bytes)) ||
	    !(fabs(m->host_bytes - r->host_bytes) <= 1e-6 * fmax(1, r->host_bytes)))
		return -1;
	return 0;
}

#define MAX_MEMORY_BARS 24

static int row_has_memory(const row *r)
{
	return r->has_pred && r->gpu_bytes > 0;
}

static zb_status plot_memory(plot_ctx *c)
{
	const zb_plot_request *req = c->req;
	zb_status st;
	int64_t run = req->run_id;
	rowset rs;
	int found;
	if (req->config_id) {
		if ((st = check_config(c, req->config_id)) ||
		    (st = load_rows_json(c, ZB_Q_CONFIG_ROW, req->config_id, 1, &rs)))
			return st;
		c->info->config_id = req->config_id;
	} else {
		if (run) {
			if ((st = check_run(c, run)))
				return st;
		} else {
			/* the latest sweep (many policies), else the latest run with predictions */
			if ((st = sql_int(c, ZB_Q_LATEST_SWEEP_RUN_PREDICTED, 0, &run, &found)))
				return st;
			if (!found && (st = sql_int(c, ZB_Q_LATEST_RUN_PREDICTED, 0, &run, &found)))
				return st;
			if (!found)
				return zb_fail(c->err, ZB_E_INPUT,
					       "no predictions in database '%s' (run zbench predict or sweep, or give --run)",
					       c->dbpath);
		}
		if ((st = load_rows_json(c, ZB_Q_CONFIG_ROWS_OF_RUN, run, 1, &rs)))
			return st;
		c->info->run_id = run;
	}
	/* one bar per distinct memory setting (hardware and link do not change memory) */
	unsigned memkey = (1u << A_MODEL) | (1u << A_POLICY) | (1u << A_RATIO) | (1u << A_OFFLOAD_PARAM) |
			  (1u << A_PREFETCH) | (1u << A_CKPT) | (1u << A_GAS) | (1u << A_MB) | (1u << A_SEQ) |
			  (1u << A_DTYPE) | (1u << A_PAGEABLE) | (1u << A_BUCKET);
	unsigned vary = varying_mask(&rs, row_has_memory);
	unsigned shown = vary & memkey;
	if (!shown)
		shown = (1u << A_POLICY) | (1u << A_RATIO);
	if (!(shown & (1u << A_OFFLOAD_PARAM)) && (vary & (1u << A_PREFETCH)) == 0)
		shown &= ~(1u << A_PREFETCH);
	strlist keys = { 0 };
	int *pick = zb_xmalloc((size_t)(rs.n ? rs.n : 1) * sizeof *pick);
	char label[512];
	for (int i = 0; i < rs.n; i++) {
		if (!row_has_memory(&rs.r[i]))
			continue;
		row_label(&rs.r[i], memkey, "|", label, sizeof label);
		int before = keys.n;
		int k = sl_intern(&keys, label);
		if (keys.n > before)
			pick[k] = i;
	}
	if (keys.n == 0) {
		free(pick);
		rowset_free(&rs);
		if (req->config_id)
			return zb_fail(c->err, ZB_E_INPUT, "config %lld has no prediction with a memory estimate",
				       (long long)req->config_id);
		return zb_fail(c->err, ZB_E_INPUT, "run %lld has no prediction with a memory estimate", (long long)run);
	}

	/* past about 24 bars the labels no longer fit: draw the first ones and say so */
	int nb = keys.n < MAX_MEMORY_BARS ? keys.n : MAX_MEMORY_BARS, fallback = 0;
	double gcap = NAN, hcap = NAN, gmax = 0, hmax = 0;
	int cap_same = 1;
	char path[PATH_MAX + 32];
	FILE *f = data_open(c, "memory.dat", path, sizeof path);
	if (!f) {
		st = c->err->status;
		goto out;
	}
	/* cumulative sums, top term first, so drawing the columns in order stacks them */
	fprintf(f, "# x gpu: params +grads +optimizer +activations +workspace total_only;"
		   " host: optimizer +grads +params +activations total_only (GiB)\n");
	for (int b = 0; b < nb; b++) {
		const row *r = &rs.r[pick[b]];
		zb_memory m;
		double gc, hc;
		int ok = memory_terms(r, &m, &gc, &hc) == 0;
		if (b == 0) {
			gcap = gc;
			hcap = hc;
		} else if (!(gc == gcap) || !(hc == hcap)) {
			cap_same = 0;
		}
		double g[5] = { 0 }, h[4] = { 0 }, gt = NAN, ht = NAN;
		if (ok) {
			double gv[5] = { m.gpu_params, m.gpu_grads, m.gpu_optimizer, m.gpu_activations, m.gpu_workspace };
			double hv[4] = { m.host_optimizer, m.host_grads, m.host_params, m.host_activations };
			double acc = 0;
			for (int k = 0; k < 5; k++)
				g[k] = (acc += gv[k]) / GIB;
			acc = 0;
			for (int k = 0; k < 4; k++)
				h[k] = (acc += hv[k]) / GIB;
		} else {
			fallback++;
			gt = r->gpu_bytes / GIB;
			ht = r->host_bytes / GIB;
		}
		fprintf(f, "%d", b);
		for (int k = 0; k < 5; k++)
			fprintf(f, " %.6f", ok ? g[k] : NAN);
		fprintf(f, " %.6f", gt);
		for (int k = 0; k < 4; k++)
			fprintf(f, " %.6f", ok ? h[k] : NAN);
		fprintf(f, " %.6f\n", ht);
		gmax = fmax(gmax, r->gpu_bytes / GIB);
		hmax = fmax(hmax, r->host_bytes / GIB);
	}
	if ((st = data_close(c, f, path)))
		goto out;

	char consts[512], sub[1024];
	const row *r0 = &rs.r[pick[0]];
	constants_label(r0, vary | (1u << A_LINK) | (1u << A_CORES) | (1u << A_THREADS), consts, sizeof consts);
	if (req->config_id)
		snprintf(sub, sizeof sub, "%s · config %lld", consts, (long long)req->config_id);
	else
		snprintf(sub, sizeof sub, "%s · run %lld: %d memory setting%s", consts, (long long)run, nb,
			 nb == 1 ? "" : "s");
	if (keys.n > nb)
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), " (the first %d of %d; --config for one)", nb,
			 keys.n);
	if (fallback)
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub), " · %d without a term breakdown (stored totals)",
			 fallback);
	if (cap_same && gcap > 0 && hcap > 0)
		snprintf(sub + strlen(sub), sizeof sub - strlen(sub),
			 "\ncapacity: GPU %s %.1f GiB (%.1f usable), host %.1f GiB (%.1f usable for pinned buffers)",
			 r0->val[A_GPU], gcap / GIB, 0.95 * gcap / GIB, hcap / GIB, 0.9 * hcap / GIB);

	gp_begin(c, 1500, 800, "Memory per policy setting", sub);
	gp(c, "set multiplot\n");
	gp(c, "set tmargin at screen %.5f\n", 1 - 165.0 / 800);
	gp(c, "set bmargin %d\n", nb > 8 ? 10 : 6);
	gp(c, "set style fill solid 0.9 border lc rgb '#333333'\nset boxwidth 0.6 absolute\n");
	gp(c, "set xrange [-0.6:%.1f]\nset grid noxtics\n", nb - 0.4);
	gp(c, "set xtics (");
	for (int b = 0; b < nb; b++) {
		/* many bars: one rotated line each; few: stacked words under the bar */
		row_label(&rs.r[pick[b]], shown, nb > 8 ? ", " : "\n", label, sizeof label);
		gp(c, "%s%s %d", b ? ", " : "", gq(c, label), b);
	}
	gp(c, ")%s\n", nb > 8 ? " rotate by -40 left font ',10'" : "");
	gp(c, "set key inside top right vertical reverse Left\n");
	gp(c, "set ylabel %s\n", gq(c, "GiB"));

	static const char *const gterms[] = { "parameters (16-bit)", "gradients (16-bit)", "optimizer states (fp32)",
					      "activations", "workspace" };
	static const char *const hterms[] = { "optimizer states (fp32)", "gradients (16-bit)", "parameters (16-bit)",
					      "activation checkpoints" };
	static const char *const gcol[] = { "#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#bab0ac" };
	static const char *const hcol[] = { "#e15759", "#f28e2b", "#4e79a7", "#b07aa1" };

	/* GPU panel */
	double gtop = gmax * 1.4; /* room for the key above the bars */
	int gcap_show = cap_same && gcap > 0 && 0.95 * gcap / GIB < 3 * gmax;
	if (gcap_show)
		gtop = fmax(gtop, 0.95 * gcap / GIB * 1.12);
	gp(c, "set title %s font ',12'\n", gq(c, "GPU memory"));
	gp(c, "set lmargin at screen 0.06\nset rmargin at screen 0.49\n");
	gp(c, "set yrange [0:%.6g]\n", gtop);
	if (gcap_show) {
		char l[160];
		snprintf(l, sizeof l, "usable GPU memory %.1f GiB (95%% of %.1f)", 0.95 * gcap / GIB, gcap / GIB);
		gp(c, "set arrow 1 from graph 0, first %.6g to graph 1, first %.6g nohead dt 2 lw 2 lc rgb '#aa2222'\n",
		   0.95 * gcap / GIB, 0.95 * gcap / GIB);
		gp(c, "set label 2 %s at graph 0.02, first %.6g offset 0,0.7 font ',9' textcolor rgb '#aa2222'\n",
		   gq(c, l), 0.95 * gcap / GIB);
	}
	gp(c, "plot ");
	for (int k = 4; k >= 0; k--)
		gp(c, "%s%s using 1:%d with boxes lc rgb '%s' title %s", k == 4 ? "" : ", \\\n  ", gq(c, path), k + 2,
		   gcol[k], gq(c, gterms[k]));
	if (fallback)
		gp(c, ", \\\n  %s using 1:7 with boxes lc rgb '#888888' title %s", gq(c, path),
		   gq(c, "total (no breakdown stored)"));
	gp(c, "\n");
	gp(c, "unset arrow 1\nunset label 2\nunset label 101\nunset label 102\n");

	/* host panel */
	double htop = hmax * 1.4;
	if (htop <= 0)
		htop = 1;
	int hcap_show = cap_same && hcap > 0 && 0.9 * hcap / GIB < 3 * hmax;
	if (hcap_show)
		htop = fmax(htop, 0.9 * hcap / GIB * 1.12);
	gp(c, "set title %s font ',12'\n", gq(c, "host memory (pinned)"));
	gp(c, "set lmargin at screen 0.55\nset rmargin at screen 0.95\n");
	gp(c, "set yrange [0:%.6g]\n", htop);
	if (hcap_show) {
		char l[160];
		snprintf(l, sizeof l, "usable host memory %.1f GiB (90%% of %.1f)", 0.9 * hcap / GIB, hcap / GIB);
		gp(c, "set arrow 1 from graph 0, first %.6g to graph 1, first %.6g nohead dt 2 lw 2 lc rgb '#aa2222'\n",
		   0.9 * hcap / GIB, 0.9 * hcap / GIB);
		gp(c, "set label 2 %s at graph 0.02, first %.6g offset 0,0.7 font ',9' textcolor rgb '#aa2222'\n",
		   gq(c, l), 0.9 * hcap / GIB);
	}
	gp(c, "plot ");
	for (int k = 3; k >= 0; k--)
		gp(c, "%s%s using 1:%d with boxes lc rgb '%s' title %s", k == 3 ? "" : ", \\\n  ", gq(c, path), k + 8,
		   hcol[k], gq(c, hterms[k]));
	if (fallback)
		gp(c, ", \\\n  %s using 1:12 with boxes lc rgb '#888888' title %s", gq(c, path),
		   gq(c, "total (no breakdown stored)"));
	gp(c, "\nunset multiplot\n");
	if ((st = ctx_render(c)))
		goto out;
	snprintf(c->info->what, sizeof c->info->what, "%d memory setting%s%s", nb, nb == 1 ? "" : "s",
		 fallback ? " (some without a term breakdown)" : "");
out:
	free(pick);
	sl_free(&keys);
	rowset_free(&rs);
	return st;
}

/* ---- entry --------------------------------------------------------------------- */

zb_status zb_plot_make(zb_store *s, const zb_plot_request *req, zb_plot_info *info, zb_error *err)
{
	memset(info, 0, sizeof *info);
	zb_status st = zb_plot_check(req->output, err);
	if (st)
		return st;
	if (req->kind >= ZB_PLOT_KIND_COUNT)
		return zb_fail(err, ZB_E_INPUT, "unknown plot kind %d", (int)req->kind);
	plot_ctx c;
	memset(&c, 0, sizeof c);
	c.store = s;
	c.dbpath = zb_store_path(s);
	c.req = req;
	c.info = info;
	c.err = err;
	if ((st = ctx_open(&c))) {
		ctx_close(&c);
		return st;
	}
	switch (req->kind) {
	case ZB_PLOT_RATIO: st = plot_throughput(&c); break;
	case ZB_PLOT_HARDWARE: st = plot_hardware(&c); break;
	case ZB_PLOT_ACCURACY: st = plot_accuracy(&c); break;
	case ZB_PLOT_TIMELINE: st = plot_timeline(&c); break;
	case ZB_PLOT_MEMORY: st = plot_memory(&c); break;
	default: st = zb_fail(err, ZB_E_INTERNAL, "plot kind %d", (int)req->kind); break;
	}
	ctx_close(&c);
	return st;
}
