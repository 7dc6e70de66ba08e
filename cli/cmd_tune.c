/*
 * cmd_tune.c - zbench tune: the fastest DeepSpeed settings for a model on this
 * machine, by DeepSpeed's schedule (sim/dstune.h), and the tuned config written as
 * DeepSpeed JSON with every other key of the input kept.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/outfile.h"
#include "cli/options.h"
#include "cli/report.h"
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

/* obj[key] as an object, created when absent. */
static json_t *child(json_t *obj, const char *key)
{
	json_t *c = json_object_get(obj, key);
	if (!json_is_object(c)) {
		c = json_object();
		json_object_set_new(obj, key, c);
	}
	return c;
}

/* The input config with the tuned knobs; every other key as it was. */
static json_t *tuned_json(json_t *root, const zb_ds_knobs *k)
{
	json_t *z = child(root, "zero_optimization");
	json_object_set_new(z, "stage", json_integer(k->stage));
	if (k->offload) {
		json_t *oo = child(z, "offload_optimizer");
		json_object_set_new(oo, "device", json_string("cpu"));
		json_object_set_new(oo, "pin_memory", json_boolean(k->pin));
		if (k->ratio_asked < 1)
			json_object_set_new(oo, "ratio", json_real(k->ratio_asked));
		else
			json_object_del(oo, "ratio");
	} else if (json_object_get(z, "offload_optimizer")) {
		json_object_set_new(child(z, "offload_optimizer"), "device", json_string("none"));
	}
	if (k->oparam) {
		json_t *op = child(z, "offload_param");
		json_object_set_new(op, "device", json_string("cpu"));
		json_object_set_new(op, "pin_memory", json_boolean(k->pin));
	} else if (json_object_get(z, "offload_param")) {
		json_object_set_new(child(z, "offload_param"), "device", json_string("none"));
	}
	json_object_set_new(z, "overlap_comm", json_boolean(k->overlap));
	if (k->stage == 3)
		json_object_set_new(z, "sub_group_size", json_integer((json_int_t)k->sub_group));
	json_object_set_new(root, "train_micro_batch_size_per_gpu", json_integer(k->micro_batch));
	json_object_set_new(root, "gradient_accumulation_steps", json_integer(k->gas));
	json_t *tb = json_object_get(root, "train_batch_size");
	if (tb && json_is_number(tb))
		json_object_set_new(root, "train_batch_size", json_integer(k->micro_batch * k->gas));
	if (k->ckpt == ZB_CKPT_NONE) {
		json_object_del(root, "activation_checkpointing");
	} else {
		json_t *ac = child(root, "activation_checkpointing");
		json_object_set_new(ac, "cpu_checkpointing", json_boolean(k->ckpt == ZB_CKPT_CPU));
	}
	return root;
}

static zb_status write_tuned(const char *in, const char *out, const zb_ds_knobs *k, zb_error *err)
{
	json_error_t je;
	json_t *root = json_load_file(in, 0, &je);
	if (!root || !json_is_object(root)) {
		json_decref(root);
		return zb_fail(err, ZB_E_INPUT, "cannot read %s again: %s", in, je.text);
	}
	tuned_json(root, k);
	zb_outfile o;
	zb_error e;
	int bad = zb_outfile_open(&o, out, &e) != ZB_OK;
	if (!bad && json_dumpf(root, o.f, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) != 0) {
		zb_outfile_abort(&o);
		bad = 1;
	} else if (!bad) {
		bad = zb_outfile_commit(&o, &e) != ZB_OK;
	}
	json_decref(root);
	if (bad)
		return zb_fail(err, ZB_E_INPUT, "cannot write tuned config '%s'", out);
	return ZB_OK;
}

/* Keep, in order, the candidates the --keep-* flags allow (offload: at least the
 * input's CPU share of the optimizer); returns how many are left. */
static int keep(zb_ds_candidate *v, int n, const zb_ds_knobs *in, const tune_flags *t)
{
	int m = 0;
	for (int i = 0; i < n; i++) {
		const zb_ds_knobs *k = &v[i].k;
		if (t->keep_offload && !(k->offload && k->ratio >= in->ratio - 1e-9))
			continue;
		if ((t->keep_stage && k->stage != in->stage) || (t->keep_ckpt && k->ckpt != in->ckpt))
			continue;
		v[m++] = v[i];
	}
	return m;
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
		return 2;
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
			return 2;
		}
	}
	n = keep(v, n, &in.k, &tf);
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
		if (write_tuned(o.ds.path, tf.out, &v[0].k, &err)) {
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
