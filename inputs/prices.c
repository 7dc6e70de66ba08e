/* prices.c - the price table of `--prices FILE`; see prices.h. */
#include "inputs/prices.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static zb_status row_parse(char *line, const char *path, int lineno, zb_price_row *r, zb_error *err)
{
	char *f[5] = { 0 };
	int n = 0;
	for (char *tok = strtok(line, "\t"); tok && n < 5; tok = strtok(NULL, "\t"))
		f[n++] = tok;
	if (n < 3)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: expected kind, name, per_hour (tab-separated)", path, lineno);
	if (strcmp(f[0], "gpu") && strcmp(f[0], "cpu") && strcmp(f[0], "pcie") && strcmp(f[0], "hw"))
		return zb_fail(err, ZB_E_INPUT, "%s:%d: unknown kind '%s' (known: gpu, cpu, pcie, hw)", path, lineno, f[0]);
	if (strlen(f[1]) >= ZB_NAME_MAX || !f[1][0])
		return zb_fail(err, ZB_E_INPUT, "%s:%d: bad name '%s'", path, lineno, f[1]);
	char *end;
	errno = 0;
	double p = strtod(f[2], &end);
	if (end == f[2] || *end || errno || !isfinite(p) || p < 0)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: per_hour '%s' must be a non-negative number", path, lineno, f[2]);
	snprintf(r->kind, sizeof r->kind, "%s", f[0]);
	snprintf(r->name, sizeof r->name, "%s", f[1]);
	r->per_hour = p;
	return ZB_OK;
}

zb_status zb_prices_load(const char *path, zb_price_table *t, zb_error *err)
{
	memset(t, 0, sizeof *t);
	snprintf(t->path, sizeof t->path, "%s", path);
	FILE *f = fopen(path, "r");
	if (!f)
		return zb_fail(err, ZB_E_INPUT, "cannot read price table %s: %s", path, strerror(errno));
	char line[2048];
	int lineno = 0;
	zb_status st = ZB_OK;
	while (!st && fgets(line, sizeof line, f)) {
		lineno++;
		line[strcspn(line, "\r\n")] = 0;
		if (!line[0] || line[0] == '#' || !strncmp(line, "kind\t", 5))
			continue;
		if (t->n == ZB_PRICE_ROWS_MAX) {
			st = zb_fail(err, ZB_E_INPUT, "%s: more than %d rows", path, ZB_PRICE_ROWS_MAX);
			break;
		}
		st = row_parse(line, path, lineno, &t->rows[t->n], err);
		if (!st)
			t->n++;
	}
	fclose(f);
	return st;
}

/* The row of kind and name; NULL when the table has none. */
static const zb_price_row *find(const zb_price_table *t, const char *kind, const char *name)
{
	for (int i = t->n - 1; i >= 0; i--) /* a later row overrides an earlier one */
		if (!strcmp(t->rows[i].kind, kind) && !strcmp(t->rows[i].name, name))
			return &t->rows[i];
	return NULL;
}

double zb_prices_machine(const zb_price_table *t, const zb_hw *hw, int gpus)
{
	if (!t)
		return 0;
	const zb_price_row *r = find(t, "hw", hw->name);
	if (r)
		return r->per_hour;
	const zb_price_row *g = find(t, "gpu", hw->gpu.name);
	if (!g)
		return 0;
	const zb_price_row *c = find(t, "cpu", hw->cpu.name), *l = find(t, "pcie", hw->link.name);
	return g->per_hour * (gpus > 1 ? gpus : 1) + (c ? c->per_hour : 0) + (l ? l->per_hour : 0);
}
