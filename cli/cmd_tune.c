/*
 * cmd_tune.c - zbench tune: the fastest DeepSpeed settings for a model on this
 * machine, by DeepSpeed's schedule (sim/dstune.h), and the tuned config written as
 * DeepSpeed JSON with every other key of the input kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "report/report.h"
#include "analysis/dstune.h"
#include "sim/predict.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void usage(FILE *f)
{
	fprintf(f, "usage: zbench tune --ds-config <file> [--hf-config <file> | --model <name>] [--hw <machine|file>]\n"
		   "                  [--top <n>] [-o <tuned.json>] [options]\n\n"
		   "Search the DeepSpeed knobs zbench models (ZeRO stage, optimizer offload, Twin-Flow ratio as\n"
		   "sub-groups, sub_group_size, overlap_comm, pin_memory, offload_param, activation\n"
		   "checkpointing, micro-batch x gradient accumulation at the same global batch) with\n"
		   "DeepSpeed's schedule, print the fastest settings that fit with their predicted step time\n"
		   "and memory, and write the best as a DeepSpeed config (all other keys of the input kept).\n"
		   "  --top <n>          settings to print (default 10)\n"
		   "  -o, --out <file>   write the tuned DeepSpeed config\n"
		   "  --keep-offload     only settings that keep the optimizer on the CPU, at least the input's\n"
		   "                     Twin-Flow ratio (for runs that offload because the GPU is short)\n"
		   "  --keep-stage       only settings with the input's ZeRO stage\n"
		   "  --keep-ckpt        only settings with the input's activation checkpointing (a training\n"
		   "                     script that does not call DeepSpeed's checkpointing cannot change it)\n\n");
	zb_options_usage(f);
}

typedef struct tune_flags {
	int top;
	const char *out;
	int keep_offload, keep_stage, keep_ckpt;
} tune_flags;

static void print_knobs_head(void)
{
	printf("%4s %9s %7s %9s %7s %7s %5s %-7s %6s %9s %7s %3s %6s %-4s %3s %3s\n", "rank", "step", "speedup",
	       "tokens/s", "gpu", "host", "stage", "offload", "ratio", "sub_group", "overlap", "pin", "oparam", "ckpt",
	       "mb", "gas");
	printf("%4s %9s %7s %9s %7s %7s\n", "", "ms", "x", "1/s", "GiB", "GiB");
}

static void print_knobs(const char *rank, const zb_ds_candidate *d, double ref_s)
{
	const zb_ds_knobs *k = &d->k;
	printf("%4s %9.1f %7.2f %9.0f %7.1f %7.1f %5d %-7s %6.3f %9.3g %7s %3s %6s %-4s %3d %3d\n", rank,
	       d->step_s * 1e3, ref_s > 0 ? ref_s / d->step_s : 0, d->tokens_per_s, d->gpu_B / GIB, d->host_B / GIB,
	       k->stage, k->offload ? "cpu" : "none", k->offload ? k->ratio : 0.0, (double)k->sub_group,
	       k->overlap ? "true" : "false", k->pin ? "yes" : "no", k->oparam ? "cpu" : "none",
	       zb_ckpt_name((zb_ckpt)k->ckpt), k->micro_batch, k->gas);
}

int cmd_tune(int argc, char **argv)
{
	zb_options o = { 0 };
	zb_error err = { 0 };
	tune_flags tf = { 10, NULL, 0, 0, 0 };
	const zb_flag extra[] = {
		ZB_INT("top", &tf.top, 1, 100000, "<n>", NULL),
		{ .name = "out", .short_name = 'o', .kind = ZB_FLAG_STRING, .dest = &tf.out, .arg = "<tuned.json>" },
		ZB_SWITCH("keep-offload", &tf.keep_offload, NULL),
		ZB_SWITCH("keep-stage", &tf.keep_stage, NULL),
		ZB_SWITCH("keep-ckpt", &tf.keep_ckpt, NULL),
		{ 0 },
	};
	int rc;
	if (!zb_options_parse(argc, argv, extra, usage, &o, &rc))
		return rc;
	if (!o.have_ds) {
		fprintf(stderr, "zbench: tune needs --ds-config FILE (the DeepSpeed config to tune)\n");
		return ZB_EXIT_INPUT;
	}
	zb_config c;
	zb_sources src;
	if (zb_options_single_src(&o, &c, &src, &err))
		return zb_report_error(&err);
	c.framework = ZB_FW_DEEPSPEED;
	zb_ds_candidate in = { 0 }, *v = NULL;
	zb_ds_knobs_of(&c, &in.k);
	if (src.twinflow)
		in.k.ratio_asked = src.ratio_asked;
	zb_prediction p;
	if (zb_predict(&p, &c, &err))
		return zb_report_error(&err);
	int in_fits = p.simulated;
	if (in_fits) {
		in.step_s = p.res.step_time_s;
		in.tokens_per_s = p.res.tokens_per_s;
	}
	in.gpu_B = p.mem.gpu_bytes;
	in.host_B = p.mem.host_bytes;
	zb_prediction_free(&p);

	int n, tried;
	if (zb_ds_tune(&c, &v, &n, &tried, &err))
		return zb_report_error(&err);
	if (tf.keep_offload) {
		if (!in.k.offload) {
			free(v);
			fprintf(stderr, "zbench: --keep-offload: the input config does not offload the optimizer\n");
			return ZB_EXIT_INPUT;
		}
	}
	n = zb_ds_tune_keep(v, n, &in.k, tf.keep_offload, tf.keep_stage, tf.keep_ckpt);
	char label[512];
	zb_config_label(&c, label, sizeof label);
	printf("# zbench tune: %s\n", label);
	printf("# hardware %s, DeepSpeed profile: %s; %d settings tried, %d fit; global batch %d sequences\n",
	       c.hw.name, c.hw.ds.set ? "the hardware file's" : "defaults", tried, n,
	       c.policy.micro_batch * c.policy.gas);
	print_knobs_head();
	if (in_fits)
		print_knobs("in", &in, in.step_s);
	else
		printf("  in  does not fit: %s\n", p.mem.reason);
	for (int i = 0; i < n && i < tf.top; i++) {
		char r[16];
		snprintf(r, sizeof r, "%d", i + 1);
		print_knobs(r, &v[i], in_fits ? in.step_s : 0);
	}
	rc = 0;
	if (n == 0) {
		fprintf(stderr, "zbench: no DeepSpeed setting of this model fits this machine\n");
		rc = 1;
	} else if (tf.out) {
		if (zb_ds_tuned_write(o.ds.path, tf.out, &v[0].k, &err)) {
			rc = zb_report_error(&err);
		} else {
			printf("# wrote %s: rank 1", tf.out);
			if (in_fits)
				printf(", predicted %.1f ms vs %.1f ms (%.2fx)", v[0].step_s * 1e3, in.step_s * 1e3,
				       in.step_s / v[0].step_s);
			printf("\n");
		}
	}
	free(v);
	return rc;
}
