/*
 * gnuplot.c - the gnuplot driver behind every plot (plots/parts.h).
 *
 * Every plot goes through one plot_ctx: a private scratch directory (mkdtemp, or the
 * caller's keep_dir) holding *.dat files and plot.gp, each written through a fresh
 * temporary renamed into place (common/outfile.h). gnuplot is started with
 * posix_spawn (no shell) in that directory, so the script names its data files by
 * fixed relative names; it writes the image to its standard output, which is a
 * temporary beside FILE renamed to FILE after gnuplot exited 0 and left a
 * non-empty file; its messages go to gnuplot.log.
 *
 * No user text is script text. Names from the database reach the script only
 * through plot_gq(), as single-quoted gnuplot strings: inside those gnuplot expands
 * nothing (no backquote command substitution, no @macros, no backslash escapes).
 * A quote cannot be written inside one (gnuplot's '' escape is not reliable:
 * 5.4 ends the string at a second '' in a row), so the text is split there and the
 * pieces joined with the constants "'" and "\n": 'it'."'".'s'. Control characters
 * are left out.
 * Neither the database path nor the output path appears in the script. The
 * terminals run "noenhanced" so names like pcie_d2h print as they are rather than
 * as subscripts.
 */
#include "plots/parts.h"

#include "common/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *const plot_palette[NPALETTE] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
				       "#76b7b2", "#9c755f", "#ff9da7", "#edc948", "#bab0ac" };
const int plot_point_types[NPOINTS] = { 7, 5, 9, 11, 13, 15, 6, 4, 8, 10 };

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
	if (strlen(output) + 16 >= PATH_MAX)
		return zb_fail(err, ZB_E_INPUT, "plot output path too long '%.64s...'", output);
	struct stat st;
	if (stat(output, &st) == 0 && S_ISDIR(st.st_mode))
		return zb_fail(err, ZB_E_INPUT, "plot output is a directory '%s'", output);
	return zb_outfile_probe(output, err); /* "cannot write 'FILE': why" */
}

/* ---- the scratch directory, the script and gnuplot ----------------------------- */


/* s as a gnuplot string expression of single-quoted pieces (see the top of this
 * file): 'it'."'".'s'. The result lives until eight more plot_gq() calls. */
const char *plot_gq(plot_ctx *c, const char *s)
{
	char *b = c->qbuf[c->qi++ % 8];
	size_t n = sizeof c->qbuf[0], j = 0;
	int open = 0, pieces = 0;
	for (; *s && j + 16 < n; s++) { /* room for the longest piece and the closing quote */
		unsigned char ch = (unsigned char)*s;
		if (ch == '\'' || ch == '\n') {
			if (open)
				b[j++] = '\'';
			open = 0;
			if (pieces++)
				b[j++] = '.';
			memcpy(b + j, ch == '\'' ? "\"'\"" : "\"\\n\"", ch == '\'' ? 3 : 4);
			j += ch == '\'' ? 3 : 4;
		} else if (ch >= 0x20 && ch != 0x7f) {
			if (!open) {
				if (pieces++)
					b[j++] = '.';
				b[j++] = '\'';
				open = 1;
			}
			b[j++] = (char)ch;
		}
	}
	if (open)
		b[j++] = '\'';
	if (!pieces) {
		b[j++] = '\'';
		b[j++] = '\'';
	}
	b[j] = 0;
	return b;
}

/* s as the text of a data file's comment or quoted field: its control characters
 * and double quotes left out, so it cannot end the line or the field. */
const char *plot_data_text(const char *s, char *buf, size_t n)
{
	size_t j = 0;
	for (; *s && j + 1 < n; s++)
		if ((unsigned char)*s >= 0x20 && *s != 0x7f && *s != '"')
			buf[j++] = *s;
	buf[j] = 0;
	return buf;
}

__attribute__((format(printf, 2, 3))) void plot_gp(plot_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(c->gp, fmt, ap);
	va_end(ap);
}

/* A data file in the scratch directory; the name the script uses for it (relative:
 * gnuplot runs in that directory) goes to path. NULL with err set. */
FILE *plot_data_open(plot_ctx *c, const char *name, char *path, size_t n)
{
	char full[PATH_MAX + 64];
	snprintf(path, n, "%s", name);
	snprintf(full, sizeof full, "%s/%s", c->dir, name);
	if (c->data.f)
		zb_outfile_abort(&c->data);
	return zb_outfile_open(&c->data, full, c->err) ? NULL : c->data.f;
}

zb_status plot_data_close(plot_ctx *c, FILE *f, const char *path)
{
	(void)f;
	(void)path;
	return zb_outfile_commit(&c->data, c->err);
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

zb_status plot_ctx_open(plot_ctx *c)
{
	const zb_plot_request *r = c->req;
	c->svg = output_is_svg(r->output) == 1;
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
	zb_error e;
	if (zb_outfile_open(&c->script, path, &e))
		return zb_fail(c->err, ZB_E_INPUT, "cannot write plot script: %s", e.msg);
	c->gp = c->script.f;
	/* no path in the script, not even in a comment */
	plot_gp(c, "# zbench %s: plot %s (generated; rerun in this folder: gnuplot plot.gp > plot.%s)\n", ZB_VERSION,
		zb_plot_kind_name(r->kind), c->svg ? "svg" : "png");
	return ZB_OK;
}

void plot_ctx_close(plot_ctx *c)
{
	zb_outfile_abort(&c->script);
	zb_outfile_abort(&c->data);
	zb_outfile_abort(&c->out);
	zb_outfile_abort(&c->log);
	c->gp = NULL;
	if (!c->keep && c->dir[0])
		remove_dir(c->dir);
}

/* Terminal, output, the look every plot shares, and the title with a smaller
 * subtitle (lines separated by \n) at fixed places above the plot area, which
 * starts below them (tmargin at screen). */
void plot_begin(plot_ctx *c, int width, int height, const char *title, const char *sub)
{
	c->width = width;
	c->height = height;
	if (c->svg)
		plot_gp(c, "set terminal svg size %d,%d dynamic noenhanced font 'Sans,13' background rgb 'white'\n", width,
		   height);
	else
		plot_gp(c, "set terminal pngcairo size %d,%d noenhanced font 'Sans,11' background rgb 'white'\n", width,
		   height);
	plot_gp(c, "set encoding utf8\n");
	plot_gp(c, "set datafile missing 'NaN'\n");
	plot_gp(c, "set border 3 lw 1.2 lc rgb '#444444'\n");
	plot_gp(c, "set tics nomirror out\n");
	plot_gp(c, "set grid lc rgb '#e4e4e4' lw 1 dt 1\n");
	plot_gp(c, "set key opaque box lc rgb '#cccccc'\n");
	int lines = 1;
	for (const char *p = sub; *p; p++)
		lines += *p == '\n';
	double px = 1.0 / height;
	plot_gp(c, "set label 101 %s at screen 0.5, screen %.5f center font ',15'\n", plot_gq(c, title), 1 - 30 * px);
	plot_gp(c, "set label 102 %s at screen 0.5, screen %.5f center font ',10' textcolor rgb '#555555'\n", plot_gq(c, sub),
	   1 - 56 * px);
	plot_gp(c, "set tmargin at screen %.5f\n", 1 - (56 + 16 * lines + 24) * px);
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

/* gnuplot on plot.gp in the scratch directory: image to out, messages to log. */
static zb_status spawn_gnuplot(plot_ctx *c, const char *exe, int *status)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, zb_outfile_fd(&c->out), 1);
	posix_spawn_file_actions_adddup2(&fa, zb_outfile_fd(&c->log), 2);
	posix_spawn_file_actions_addchdir_np(&fa, c->dir);
	char *argv[] = { "gnuplot", "plot.gp", NULL };
	pid_t pid;
	int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return zb_fail(c->err, ZB_E_INPUT, "cannot start gnuplot '%s': %s (%s)", exe, strerror(rc),
			       INSTALL_HINT);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return zb_fail(c->err, ZB_E_INTERNAL, "waiting for gnuplot: %s", strerror(errno));
	return ZB_OK;
}

/* Run gnuplot on the finished script; its image replaces the output once complete. */
zb_status plot_render(plot_ctx *c)
{
	plot_gp(c, "unset output\n");
	c->gp = NULL;
	zb_error e;
	if (zb_outfile_commit(&c->script, &e))
		return zb_fail(c->err, ZB_E_INPUT, "cannot write plot script: %s", e.msg);
	if (c->req->script_only)
		return ZB_OK;

	char found[PATH_MAX], exe[PATH_MAX], logp[PATH_MAX + 16];
	if (find_gnuplot(found, sizeof found) || !realpath(found, exe)) /* absolute: gnuplot runs in c->dir */
		return zb_fail(c->err, ZB_E_INPUT, "gnuplot not found (%s)", INSTALL_HINT);
	snprintf(logp, sizeof logp, "%s/gnuplot.log", c->dir);
	if (zb_outfile_open(&c->out, c->req->output, c->err) || zb_outfile_open(&c->log, logp, c->err))
		return c->err->status;
	int st = 0;
	zb_status s = spawn_gnuplot(c, exe, &st);
	if (s)
		return s;
	struct stat sb;
	int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && fstat(zb_outfile_fd(&c->out), &sb) == 0 &&
		 (sb.st_size > 0 || !S_ISREG(sb.st_mode));
	zb_outfile_commit(&c->log, &e); /* gnuplot.log, which explains a failure */
	if (!ok) {
		char last[512];
		log_tail(logp, last, sizeof last);
		zb_outfile_abort(&c->out);
		c->keep = 1; /* the script and data explain the failure */
		if (strstr(last, "unknown or ambiguous terminal"))
			return zb_fail(c->err, ZB_E_INPUT, "gnuplot has no %s terminal (%s)",
				       c->svg ? "svg" : "pngcairo", INSTALL_HINT);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			return zb_fail(c->err, ZB_E_INTERNAL, "gnuplot wrote no image for '%s' (script kept in %s)",
				       c->req->output, c->dir);
		return zb_fail(c->err, ZB_E_INTERNAL, "gnuplot failed: %s (script kept in %s)",
			       last[0] ? last : "no message", c->dir);
	}
	if (zb_outfile_commit(&c->out, &e))
		return zb_fail(c->err, ZB_E_INPUT, "cannot write plot '%s': %s", c->req->output, e.msg);
	return ZB_OK;
}

/* ---- small helpers ------------------------------------------------------------ */

/* 84554 -> "84,554" */
const char *plot_thousands(double v, char *buf, size_t n)
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
