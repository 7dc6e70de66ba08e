/* options.c - configuration options shared by predict, sweep and run; see options.h. */
#include "cli/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int zb_options_table(struct option *out, int cap, const struct option *extra)
{
	static const struct option common[] = {
		{ "offload-param", no_argument, NULL, ZB_OPT_OFFLOAD_PARAM },
		{ "pageable", no_argument, NULL, ZB_OPT_PAGEABLE },
		{ "bf16", no_argument, NULL, ZB_OPT_AXIS_BASE + 500 },
		{ "fp16", no_argument, NULL, ZB_OPT_AXIS_BASE + 501 },
		{ "db", required_argument, NULL, ZB_OPT_DB },
		{ "no-db", no_argument, NULL, ZB_OPT_NO_DB },
		{ "json", no_argument, NULL, ZB_OPT_JSON },
		{ "csv", no_argument, NULL, ZB_OPT_CSV },
		{ "quiet", no_argument, NULL, ZB_OPT_QUIET },
		{ "timeline", no_argument, NULL, ZB_OPT_TIMELINE },
		{ "plot", required_argument, NULL, ZB_OPT_PLOT },
		{ "ds-config", required_argument, NULL, ZB_OPT_DS_CONFIG },
		{ "hf-config", required_argument, NULL, ZB_OPT_HF_CONFIG },
		{ "help", no_argument, NULL, ZB_OPT_HELP },
	};
	int n = 0;
	for (int a = 0; a < ZB_AX_COUNT && n < cap - 1; a++)
		out[n++] = (struct option){ zb_axis_name(a), required_argument, NULL, ZB_OPT_AXIS_BASE + a };
	for (size_t i = 0; i < sizeof common / sizeof common[0] && n < cap - 1; i++)
		out[n++] = common[i];
	for (const struct option *e = extra; e && e->name && n < cap - 1; e++)
		out[n++] = *e;
	out[n] = (struct option){ 0 };
	return n;
}

int zb_options_take(zb_options *o, int opt, const char *arg, zb_error *err)
{
	if (opt >= ZB_OPT_AXIS_BASE && opt < ZB_OPT_AXIS_BASE + ZB_AX_COUNT) {
		if (!arg || !*arg) {
			zb_fail(err, ZB_E_INPUT, "empty value for %s", zb_axis_flag(opt - ZB_OPT_AXIS_BASE));
			return -1;
		}
		o->axis[opt - ZB_OPT_AXIS_BASE] = arg;
		return 1;
	}
	switch (opt) {
	case ZB_OPT_AXIS_BASE + 500: o->axis[ZB_AX_DTYPE] = "bf16"; return 1;
	case ZB_OPT_AXIS_BASE + 501: o->axis[ZB_AX_DTYPE] = "fp16"; return 1;
	case ZB_OPT_OFFLOAD_PARAM: o->offload_param = 1; return 1;
	case ZB_OPT_PAGEABLE: o->pageable = 1; return 1;
	case ZB_OPT_DB: o->db = arg; return 1;
	case ZB_OPT_NO_DB: o->no_db = 1; return 1;
	case ZB_OPT_JSON: o->json = 1; return 1;
	case ZB_OPT_CSV: o->csv = 1; return 1;
	case ZB_OPT_QUIET: o->quiet = 1; return 1;
	case ZB_OPT_TIMELINE: o->timeline = 1; return 1;
	case ZB_OPT_PLOT: o->plot = arg; return 1;
	case ZB_OPT_DS_CONFIG:
		if (zb_ds_load(arg, &o->ds, err))
			return -1;
		o->have_ds = 1;
		if (o->ds.nignored)
			fprintf(stderr, "zbench: warning: %s: %d key%s not modelled, ignored: %s\n", arg,
				o->ds.nignored, o->ds.nignored == 1 ? "" : "s", o->ds.ignored);
		return 1;
	case ZB_OPT_HF_CONFIG:
		if (zb_hf_load(arg, &o->hf, err))
			return -1;
		o->have_hf = 1;
		return 1;
	}
	return 0;
}

int zb_options_parse(int argc, char **argv, const struct option *extra, zb_option_fn fn, void *ctx,
		     void (*usage)(FILE *), zb_options *o, int *exit_code)
{
	struct option table[96];
	zb_error err = { 0 };
	int opt;
	zb_options_table(table, 96, extra);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", table, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			*exit_code = 0;
			return 0;
		}
		int took = zb_options_take(o, opt, optarg, &err);
		if (!took && fn)
			took = fn(ctx, opt, optarg, &err);
		if (took < 0) {
			fprintf(stderr, "zbench: %s\n", err.msg);
			*exit_code = zb_exit_code(err.status);
			return 0;
		}
		if (!took) {
			usage(stderr);
			*exit_code = 2;
			return 0;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zbench: unexpected argument '%s'\n", argv[optind]);
		*exit_code = 2;
		return 0;
	}
	return 1;
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

zb_status zb_options_config_src(const char *const v[ZB_AX_COUNT], const zb_options *o, zb_config *c,
				zb_sources *src, zb_error *err)
{
	zb_config_inputs in = { 0 };
	memcpy(in.value, v, sizeof in.value);
	if (o) {
		in.offload_param = o->offload_param;
		in.pageable = o->pageable;
		in.ds = o->have_ds ? &o->ds : NULL;
		in.hf = o->have_hf ? &o->hf : NULL;
	}
	return zb_config_resolve(&in, c, src, err);
}

zb_status zb_options_single(const zb_options *o, zb_config *out, zb_error *err)
{
	return zb_options_single_src(o, out, NULL, err);
}

zb_status zb_options_single_src(const zb_options *o, zb_config *out, zb_sources *src, zb_error *err)
{
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		const char *s = o->axis[a];
		if (!s)
			continue;
		if (strchr(s, ',') || (zb_axis_kind_of(a) != ZB_AXK_NAME && strchr(s, ':')))
			return zb_fail(err, ZB_E_INPUT,
				       "%s takes one value here (got '%s'); lists and ranges are for zbench sweep",
				       zb_axis_flag(a), s);
	}
	return zb_options_config_src(o->axis, o, out, src, err);
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
