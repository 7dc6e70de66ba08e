/*
 * gnuplot.c - the gnuplot driver behind every plot (plots/parts.h).
 *
 * Every plot goes through one plot_ctx: a private scratch directory (mkdtemp, or the
 * caller's keep_dir) holding *.dat files and plot.gp; gnuplot is started with
 * posix_spawn (no shell, so no quoting of paths), its output goes to gnuplot.log,
 * and its image to FILE.tmp, renamed to FILE after gnuplot exited 0 and left a
 * non-empty file. User text reaches the script only through plot_gq(), which writes
 * a double-quoted gnuplot string with its escapes; the terminals run "noenhanced" so
 * names like pcie_d2h print as they are rather than as subscripts.
 */
#include "plots/parts.h"

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


/* s as a double-quoted gnuplot string ("\" and '"' escaped, newlines as \n). The
 * result lives until eight more plot_gq() calls. */
const char *plot_gq(plot_ctx *c, const char *s)
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

__attribute__((format(printf, 2, 3))) void plot_gp(plot_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(c->gp, fmt, ap);
	va_end(ap);
}

/* A data file in the scratch directory; its path goes to path. NULL with err set. */
FILE *plot_data_open(plot_ctx *c, const char *name, char *path, size_t n)
{
	snprintf(path, n, "%s/%s", c->dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		zb_fail(c->err, ZB_E_INPUT, "cannot write plot data '%s': %s", path, strerror(errno));
	return f;
}

zb_status plot_data_close(plot_ctx *c, FILE *f, const char *path)
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

zb_status plot_ctx_open(plot_ctx *c)
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
	plot_gp(c, "# zbench %s: plot %s from %s (generated; rerun with: gnuplot plot.gp)\n", ZB_VERSION,
	   zb_plot_kind_name(r->kind), c->dbpath);
	return ZB_OK;
}

void plot_ctx_close(plot_ctx *c)
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
	plot_gp(c, "set output %s\n", plot_gq(c, c->out_tmp));
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

/* Run gnuplot on the finished script and move FILE.tmp to FILE. */
zb_status plot_render(plot_ctx *c)
{
	plot_gp(c, "unset output\n");
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
