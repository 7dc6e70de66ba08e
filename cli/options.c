/* options.c - configuration options shared by predict, sweep and run; see options.h. */
#include "cli/options.h"

#include "report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static zb_status set_bf16(void *dest, const char *v, zb_error *err)
{
	*(const char **)dest = "bf16";
	return ZB_OK;
}

static zb_status set_fp16(void *dest, const char *v, zb_error *err)
{
	*(const char **)dest = "fp16";
	return ZB_OK;
}

/* --ds-config: read now, so a bad file fails before any work. */
static zb_status load_ds(void *dest, const char *arg, zb_error *err)
{
	zb_options *o = dest;
	zb_status st = zb_ds_load(arg, &o->ds, err);
	if (st)
		return st;
	o->have_ds = 1;
	zb_ds_ignored_print(stderr, &o->ds);
	return ZB_OK;
}

zb_status zb_options_load_ds(zb_options *o, const char *path, zb_error *err)
{
	return load_ds(o, path, err);
}

static zb_status load_hf(void *dest, const char *arg, zb_error *err)
{
	zb_options *o = dest;
	zb_status st = zb_hf_load(arg, &o->hf, err);
	if (!st)
		o->have_hf = 1;
	return st;
}

/* --prices: read now, so a bad table fails before any work. */
static zb_status load_prices(void *dest, const char *arg, zb_error *err)
{
	zb_options *o = dest;
	zb_status st = zb_prices_load(arg, &o->prices, err);
	if (!st)
		o->have_prices = 1;
	return st;
}

int zb_options_table(zb_flag *out, int cap, zb_options *o, const zb_flag *extra)
{
	const zb_flag common[] = {
		ZB_SWITCH("offload-param", &o->offload_param, NULL),
		ZB_SWITCH("pageable", &o->pageable, NULL),
		ZB_SWITCH("hypothetical-cpu", &o->hypothetical_cpu, NULL),
		ZB_CALL("prices", o, load_prices, "<file>", NULL),
		ZB_CALL0("bf16", &o->axis[ZB_AX_DTYPE], set_bf16, NULL),
		ZB_CALL0("fp16", &o->axis[ZB_AX_DTYPE], set_fp16, NULL),
		ZB_STRING("db", &o->db, "<path>", NULL),
		ZB_SWITCH("no-db", &o->no_db, NULL),
		ZB_SWITCH("json", &o->json, NULL),
		ZB_SWITCH("csv", &o->csv, NULL),
		ZB_SWITCH("quiet", &o->quiet, NULL),
		ZB_SWITCH("timeline", &o->timeline, NULL),
		ZB_STRING("plot", &o->plot, "<file>", NULL),
		ZB_CALL("ds-config", o, load_ds, "<file>", NULL),
		ZB_CALL("hf-config", o, load_hf, "<file>", NULL),
	};
	int n = 0;
	for (int a = 0; a < ZB_AX_COUNT && n < cap - 1; a++)
		out[n++] = (zb_flag)ZB_STRING(zb_axis_name(a), &o->axis[a], NULL, NULL);
	for (size_t i = 0; i < sizeof common / sizeof common[0] && n < cap - 1; i++)
		out[n++] = common[i];
	for (const zb_flag *e = extra; e && e->name && n < cap - 1; e++)
		out[n++] = *e;
	out[n] = (zb_flag){ 0 };
	return n;
}

int zb_options_parse(int argc, char **argv, const zb_flag *extra, void (*usage)(FILE *), zb_options *o,
		     int *exit_code)
{
	zb_flag table[96];
	zb_options_table(table, 96, o, extra);
	return zb_flags_parse(argc, argv, table, NULL, 0, NULL, usage, exit_code);
}

void zb_options_usage(FILE *f)
{
	fprintf(f, "configuration:\n");
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		char left[48];
		zb_axis_kind k = zb_axis_kind_of(a);
		snprintf(left, sizeof left, "--%s <%s>", zb_axis_name(a),
			 k == ZB_AXK_NAME ? "name" : k == ZB_AXK_INT ? "n" : "x");
		fprintf(f, "  %-26s %s\n", left, zb_axis_help(a));
	}
	fprintf(f, "  %-26s %s\n", "--offload-param", "ZeRO-3: parameters live on the host, fetched per layer");
	fprintf(f, "  %-26s %s\n", "--pageable", "copy from pageable instead of pinned host memory");
	fprintf(f, "  %-26s %s\n", "--hypothetical-cpu", "allow --cores above the CPU's own (labelled hypothetical)");
	fprintf(f, "  %-26s %s\n", "--prices <file>", "price table (data/prices.tsv: edit it) for cost columns");
	fprintf(f, "  %-26s %s\n", "--bf16 | --fp16", "compute precision (same as --dtype)");
	fprintf(f, "  %-26s %s\n", "--ds-config <file>", "DeepSpeed JSON config: batch, precision, ZeRO offload policy");
	fprintf(f, "  %-26s %s\n", "--hf-config <file>", "Hugging Face config.json: the model shape");
	fprintf(f, "  %-26s %s\n", "", "(flags given explicitly override both files)");
	fprintf(f, "output:\n");
	fprintf(f, "  %-26s %s\n", "--db <path>", "results database (default " "results/zbench.db" ")");
	fprintf(f, "  %-26s %s\n", "--no-db", "do not store results");
	fprintf(f, "  %-26s %s\n", "--json | --csv", "machine-readable output");
}

zb_status zb_options_config(const char *const v[ZB_AX_COUNT], const zb_options *o, zb_config *c,
			    zb_error *err)
{
	return zb_options_config_src(v, o, c, NULL, err);
}

void zb_options_inputs(const zb_options *o, zb_config_inputs *in)
{
	memset(in, 0, sizeof *in);
	memcpy(in->value, o->axis, sizeof in->value);
	in->offload_param = o->offload_param;
	in->pageable = o->pageable;
	in->hypothetical_cpu = o->hypothetical_cpu;
	in->prices = o->have_prices ? &o->prices : NULL;
	in->ds = o->have_ds ? &o->ds : NULL;
	in->hf = o->have_hf ? &o->hf : NULL;
}

zb_status zb_options_config_src(const char *const v[ZB_AX_COUNT], const zb_options *o, zb_config *c,
				zb_sources *src, zb_error *err)
{
	zb_config_inputs in = { 0 };
	if (o)
		zb_options_inputs(o, &in);
	memcpy(in.value, v, sizeof in.value);
	return zb_config_resolve(&in, c, src, err);
}

zb_status zb_options_single(const zb_options *o, zb_config *out, zb_error *err)
{
	return zb_options_single_src(o, out, NULL, err);
}

zb_status zb_options_single_src(const zb_options *o, zb_config *out, zb_sources *src, zb_error *err)
{
	zb_config_inputs in;
	zb_options_inputs(o, &in);
	zb_status st = zb_config_single(&in, err);
	return st ? st : zb_config_resolve(&in, out, src, err);
}

char *zb_command_line(int argc, char **argv)
{
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 3;
	char *s = zb_xmalloc(len), *p = s;
	*p = 0;
	for (int i = 0; i < argc; i++) {
		int quote = strchr(argv[i], ' ') != NULL;
		p += sprintf(p, "%s%s%s%s", i ? " " : "", quote ? "'" : "", argv[i], quote ? "'" : "");
	}
	return s;
}
