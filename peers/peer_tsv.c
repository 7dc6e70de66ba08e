/* peer_tsv.c - zb_peer_read_tsv of peer.h: the first table of a TSV of measured
 * framework runs (data/deepspeed-h200-table.tsv), by column name. */
#include "peers/peer.h"

#include "common/number.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

enum { COL_CONFIG, COL_ZERO, COL_STEP, COL_STEPS, COL_PEAK, COL_RESERVED, COL_RSS, COL_COUNT };
static const char *const col_names[COL_COUNT] = { "config", "zero", "step_ms", "steps_ms",
						  "gpu_peak_GiB", "gpu_reserved_GiB", "host_rss_GiB" };

#define MAX_FIELDS 32

typedef struct tsv {
	const char *path;
	int line;
	int col[COL_COUNT]; /* field index of each known column, -1 when absent */
	char versions[256], date[16];
} tsv;

/* Split line (modified) at tabs; returns the number of fields. */
static int split(char *line, char **f)
{
	int n = 0;
	line[strcspn(line, "\r\n")] = 0;
	for (char *p = line; n < MAX_FIELDS;) {
		f[n++] = p;
		p = strchr(p, '\t');
		if (!p)
			break;
		*p++ = 0;
	}
	return n;
}

/* "# DeepSpeed 0.19.8 (PyTorch 2.11, CUDA 13.0) on ..., YYYY-MM-DD, ...": versions
 * as a JSON object and the first YYYY-MM-DD as the date, when the line says so. */
static void read_first_comment(const char *line, tsv *t)
{
	char ds[32], pt[32], cu[32];
	if (sscanf(line, "# DeepSpeed %31s (PyTorch %31[^,], CUDA %31[^)])", ds, pt, cu) == 3) {
		json_t *v = json_pack("{s:s, s:s, s:s}", "cuda", cu, "deepspeed", ds, "torch", pt);
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
		snprintf(t->versions, sizeof t->versions, "%s", s ? s : "");
		free(s);
		json_decref(v);
	}
	for (const char *p = line; *p; p++) {
		int y, m, d, used = 0;
		if (isdigit((unsigned char)*p) && sscanf(p, "%4d-%2d-%2d%n", &y, &m, &d, &used) == 3 && used == 10) {
			snprintf(t->date, sizeof t->date, "%.10s", p);
			break;
		}
	}
}

static zb_status read_header(char **f, int n, tsv *t, zb_error *err)
{
	for (int c = 0; c < COL_COUNT; c++) {
		t->col[c] = -1;
		for (int i = 0; i < n; i++)
			if (!strcmp(f[i], col_names[c]))
				t->col[c] = i;
	}
	if (t->col[COL_CONFIG] < 0 || t->col[COL_STEP] < 0)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: header has no '%s' column (need config and step_ms)", t->path,
			       t->line, t->col[COL_CONFIG] < 0 ? "config" : "step_ms");
	return ZB_OK;
}

/* One number of a row: NAN for an absent column or an empty field. */
static zb_status field_num(const tsv *t, char **f, int c, double lo, double *out, zb_error *err)
{
	*out = NAN;
	if (t->col[c] < 0 || !*f[t->col[c]])
		return ZB_OK;
	double v;
	if (zb_parse_decimal(f[t->col[c]], &v) || v < lo) /* plain decimals (common/number.h) */
		return zb_fail(err, ZB_E_INPUT, "%s:%d: %s '%s' is not a number >= %g", t->path, t->line, col_names[c],
			       f[t->col[c]], lo);
	*out = v;
	return ZB_OK;
}

static zb_status field_steps(const tsv *t, char **f, zb_peer_run *r, zb_error *err)
{
	if (t->col[COL_STEPS] < 0 || !*f[t->col[COL_STEPS]])
		return ZB_OK;
	const char *p = f[t->col[COL_STEPS]];
	while (*p) {
		const char *end;
		double v;
		if (zb_parse_decimal_prefix(p, &end, &v) || !(v > 0) || (*end && *end != ',') ||
		    r->nsteps == ZB_PEER_MAX_STEPS)
			return zb_fail(err, ZB_E_INPUT, "%s:%d: steps_ms '%s' is not a comma list of positive numbers",
				       t->path, t->line, f[t->col[COL_STEPS]]);
		r->steps_ms[r->nsteps++] = v;
		p = *end ? end + 1 : end;
	}
	return ZB_OK;
}

static zb_status read_row(char **f, int n, const tsv *t, zb_peer_run *r, zb_error *err)
{
	int need = 0;
	for (int c = 0; c < COL_COUNT; c++)
		if (t->col[c] >= need)
			need = t->col[c] + 1;
	if (n < need)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: %d field%s, the header has %d", t->path, t->line, n,
			       n == 1 ? "" : "s", need);
	zb_peer_run_init(r);
	const char *name = f[t->col[COL_CONFIG]];
	if (!*name || strlen(name) >= sizeof r->name)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: config name '%s' is empty or too long", t->path, t->line, name);
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->framework, sizeof r->framework, "%s", strcmp(name, "torch") ? "deepspeed" : "torch");
	snprintf(r->source, sizeof r->source, "import");
	snprintf(r->origin, sizeof r->origin, "%s", t->path);
	if (t->col[COL_ZERO] >= 0)
		snprintf(r->note, sizeof r->note, "%s", f[t->col[COL_ZERO]]);
	snprintf(r->versions, sizeof r->versions, "%s", t->versions);
	snprintf(r->measured_at, sizeof r->measured_at, "%s", t->date);
	if (field_num(t, f, COL_STEP, 0, &r->step_ms, err) || field_steps(t, f, r, err) ||
	    field_num(t, f, COL_PEAK, 0, &r->gpu_peak_gib, err) ||
	    field_num(t, f, COL_RESERVED, 0, &r->gpu_reserved_gib, err) ||
	    field_num(t, f, COL_RSS, 0, &r->host_rss_gib, err))
		return err->status;
	if (!(r->step_ms > 0))
		return zb_fail(err, ZB_E_INPUT, "%s:%d: step_ms of '%s' is missing or not positive", t->path, t->line,
			       name);
	return ZB_OK;
}

zb_status zb_peer_read_tsv(const char *path, zb_peer_run **rows, int *n, zb_error *err)
{
	*rows = NULL;
	*n = 0;
	FILE *fp = fopen(path, "r");
	if (!fp)
		return zb_fail(err, ZB_E_INPUT, "cannot open measurements '%s': %s", path, strerror(errno));
	tsv t = { .path = path };
	char *line = NULL, *f[MAX_FIELDS];
	size_t cap = 0;
	int have_header = 0, cap_rows = 0;
	zb_status st = ZB_OK;
	while (!st && getline(&line, &cap, fp) >= 0) {
		t.line++;
		int blank = strspn(line, " \t\r\n") == strlen(line);
		if (line[0] == '#' || blank) {
			if (t.line == 1)
				read_first_comment(line, &t);
			if (have_header)
				break; /* the first table ends here */
			continue;
		}
		int nf = split(line, f);
		if (!have_header) {
			st = read_header(f, nf, &t, err);
			have_header = 1;
			continue;
		}
		if (*n == cap_rows)
			*rows = zb_xrealloc(*rows, (size_t)(cap_rows = cap_rows ? 2 * cap_rows : 16) * sizeof **rows);
		st = read_row(f, nf, &t, &(*rows)[*n], err);
		if (!st)
			(*n)++;
	}
	free(line);
	fclose(fp);
	if (!st && *n == 0)
		st = zb_fail(err, ZB_E_INPUT, "%s: no measured rows (a header row with config and step_ms, then rows)",
			     path);
	if (st) {
		free(*rows);
		*rows = NULL;
		*n = 0;
	}
	return st;
}
