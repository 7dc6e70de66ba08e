/* import.c - which reader a file for `zbench import` needs; see import.h. */
#include "results/import.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "results/foreign.h"

const char *zb_import_format_name(zb_import_format f)
{
	return f == ZB_IMPORT_KINETO ? "PyTorch profiler trace (Kineto)" : "Nsight Systems SQLite export";
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && !strcmp(s + n - m, tail);
}

/* A path as one shell word: quoted when it holds anything but safe characters. */
static void shell_word(char *out, size_t n, const char *s, size_t len)
{
	int plain = len > 0;
	for (size_t i = 0; i < len; i++)
		plain &= !!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+,:@%", s[i]);
	if (plain || strchr(s, '\''))
		snprintf(out, n, "%.*s", (int)len, s);
	else
		snprintf(out, n, "'%.*s'", (int)len, s);
}

/* The nsys command that turns a report into what zbench reads. */
static zb_status nsys_rep(const char *path, zb_error *err)
{
	size_t stem = strlen(path) - (ends_with(path, ".nsys-rep") ? 9 : 6);
	char rep[300], out[300];
	shell_word(rep, sizeof rep, path, strlen(path));
	char sqlite[300];
	snprintf(sqlite, sizeof sqlite, "%.*s.sqlite", (int)stem, path);
	shell_word(out, sizeof out, sqlite, strlen(sqlite));
	return zb_fail(err, ZB_E_INPUT,
		       "'%s' is an Nsight Systems report; zbench reads its SQLite export: nsys export --type sqlite -o %s "
		       "%s, then zbench import %s",
		       path, out, rep, out);
}

zb_status zb_import_detect(const char *path, zb_import_format *f, zb_error *err)
{
	if (ends_with(path, ".nsys-rep") || ends_with(path, ".qdrep"))
		return nsys_rep(path, err);
	FILE *in = fopen(path, "rb");
	if (!in)
		return zb_fail(err, ZB_E_INPUT, "cannot read '%s': %s", path, strerror(errno));
	unsigned char head[64];
	size_t n = fread(head, 1, sizeof head, in);
	fclose(in);
	if (n >= 16 && !memcmp(head, "SQLite format 3", 16)) {
		*f = ZB_IMPORT_NSYS_SQLITE;
		return ZB_OK;
	}
	if (zb_kineto_sniff(head, n)) {
		*f = ZB_IMPORT_KINETO;
		return ZB_OK;
	}
	return zb_fail(err, ZB_E_INPUT,
		       "'%s' is not a trace zbench imports (accepted: an Nsight Systems SQLite export, from nsys export "
		       "--type sqlite; a PyTorch profiler / Kineto Chrome-trace JSON, .json or .json.gz; an .nsys-rep "
		       "after nsys export)",
		       path);
}

zb_status zb_store_import(zb_store *s, const char *path, const zb_run_info *info, zb_import_result *r,
			  zb_error *err)
{
	memset(r, 0, sizeof *r);
	zb_status st = zb_import_detect(path, &r->format, err);
	if (st)
		return st;
	if (r->format == ZB_IMPORT_KINETO)
		return zb_store_import_kineto(s, path, info, &r->run_id, &r->config_id, &r->kineto, err);
	return zb_store_import_nsys(s, path, info, &r->run_id, &r->config_id, &r->left_out, err);
}
