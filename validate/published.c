/* published.c - published offload measurements against the presets; see published.h. */
#include "validate/published.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/number.h"
#include "config/resolve.h"
#include "core/graph.h"
#include "sim/predict.h"
#include "sim/resources.h"

enum { C_ID, C_GEN, C_GPUS, C_HW, C_GPU, C_SHAPE, C_POLICY, C_RATIO, C_OPARAM, C_CKPT, C_DTYPE,
       C_MB, C_GAS, C_SEQ, C_THREADS, C_GPC, C_METRIC, C_VALUE, C_CHECK, C_SOURCE, C_SETUP,
       C_COUNT };

#define MAX_CASES 256

typedef struct pcase {
	char *f[C_COUNT];
	int line;
	int gpus;
	int nodes;               /* nodes the ranks fill (several GPUs) */
	double value;
	int predicted;           /* 1: pred and err are set */
	double pred, err;        /* in the metric's units; err = pred / value - 1 */
	char status[640];        /* why not predicted, or what the memory model missed */
} pcase;

static zb_status bad(zb_error *err, const char *path, int line, const char *what, const char *val)
{
	return zb_fail(err, ZB_E_INPUT, "%s:%d: %s '%s'", path, line, what, val);
}

/* Split a line into tab-separated fields in place; returns the count. */
static int split(char *s, char **f, int cap)
{
	int n = 0;
	while (n < cap) {
		f[n++] = s;
		char *t = strchr(s, '\t');
		if (!t)
			break;
		*t = '\0';
		s = t + 1;
	}
	return n;
}

static const char *given(const char *s)
{
	return strcmp(s, "-") == 0 ? NULL : s;
}

/* model=<preset> | layers=..,hidden=..,heads=.. | params=<n>: fills the axes; *params
 * is set (> 0) for an optimizer-only case. */
static int shape_axes(char *shape, const char *v[ZB_AX_COUNT], double *params)
{
	static const struct { const char *key; zb_axis ax; } keys[] = {
		{ "model", ZB_AX_MODEL }, { "layers", ZB_AX_LAYERS }, { "hidden", ZB_AX_HIDDEN },
		{ "heads", ZB_AX_HEADS }, { "kv_heads", ZB_AX_KV_HEADS }, { "ffn", ZB_AX_FFN },
		{ "vocab", ZB_AX_VOCAB },
		/* the framework the case was measured with (DeepSpeed's schedule for DeepSpeed runs) */
		{ "framework", ZB_AX_FRAMEWORK }, { "zero_stage", ZB_AX_ZERO_STAGE },
		{ "sub_group", ZB_AX_SUB_GROUP },
	};
	*params = 0;
	for (char *tok = strtok(shape, ","); tok; tok = strtok(NULL, ",")) {
		char *eq = strchr(tok, '=');
		if (!eq)
			return -1;
		*eq = '\0';
		if (strcmp(tok, "params") == 0) {
			if (zb_parse_decimal(eq + 1, params) || !(*params > 0))
				return -1;
			continue;
		}
		size_t i;
		for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (strcmp(tok, keys[i].key) == 0)
				break;
		if (i == sizeof keys / sizeof keys[0])
			return -1;
		v[keys[i].ax] = eq + 1;
	}
	return 0;
}

/* Megatron-LM's FLOPs per token (Narayanan et al. 2021, eq. 3): 72 l h^2 (1 + s/6h +
 * V/16lh), 96 with activation recomputation (a second forward). Papers of the
 * ZeRO line report TFLOPS this way. */
static double megatron_flops_per_token(const zb_config *c)
{
	const zb_model *m = &c->model;
	double l = m->layers, h = m->hidden, s = c->policy.seq, V = m->vocab;
	double k = c->policy.ckpt == ZB_CKPT_NONE ? 72.0 : 96.0;
	return k * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

/* Predict one single-GPU case; leaves predicted 0 with a status when it cannot. */
static void predict_case(pcase *pc)
{
	zb_config_inputs in = { 0 };
	const char **v = in.value;
	char shape[256];
	snprintf(shape, sizeof shape, "%s", pc->f[C_SHAPE]);
	double params;
	if (strncmp(shape, "hf=", 3) == 0 || shape_axes(shape, v, &params)) {
		snprintf(pc->status, sizeof pc->status, "shape '%s' not predictable", pc->f[C_SHAPE]);
		return;
	}
	static const struct { int col; zb_axis ax; } cols[] = {
		{ C_HW, ZB_AX_HW }, { C_GPU, ZB_AX_GPU }, { C_POLICY, ZB_AX_POLICY },
		{ C_RATIO, ZB_AX_RATIO }, { C_CKPT, ZB_AX_CKPT }, { C_DTYPE, ZB_AX_DTYPE },
		{ C_MB, ZB_AX_MICRO_BATCH }, { C_GAS, ZB_AX_GAS }, { C_SEQ, ZB_AX_SEQ },
		{ C_THREADS, ZB_AX_THREADS }, { C_GPC, ZB_AX_GPUS_PER_CPU },
	};
	for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
		if (given(pc->f[cols[i].col]))
			v[cols[i].ax] = pc->f[cols[i].col];
	in.offload_param = strcmp(pc->f[C_OPARAM], "1") == 0;
	zb_config c;
	zb_error err = { 0 };
	char gpus[16], nodes[16];
	if (pc->gpus > 1) {
		if (params > 0) {
			snprintf(pc->status, sizeof pc->status, "multi-GPU optimizer-only case: not predicted");
			return;
		}
		/* the machine's GPUs fill one node, then the next (a DGX-2 has 16): its preset's
		 * gpus_per_cpu before the case's --gpus-per-cpu, which says how much of the host
		 * the run had */
		zb_config_inputs hw = { 0 };
		hw.value[ZB_AX_HW] = v[ZB_AX_HW];
		if (zb_config_resolve(&hw, &c, NULL, &err)) {
			snprintf(pc->status, sizeof pc->status, "config: %s", err.msg);
			return;
		}
		int node = c.hw.gpus_per_cpu > 1 ? c.hw.gpus_per_cpu : pc->gpus;
		int per = pc->gpus < node ? pc->gpus : node;
		snprintf(gpus, sizeof gpus, "%d", per);
		snprintf(nodes, sizeof nodes, "%d", pc->gpus / per);
		pc->nodes = pc->gpus / per;
		v[ZB_AX_GPUS] = gpus;
		v[ZB_AX_NODES] = nodes;
	}
	if (zb_config_resolve(&in, &c, NULL, &err)) {
		snprintf(pc->status, sizeof pc->status, "config: %s", err.msg);
		return;
	}
	const char *metric = pc->f[C_METRIC];
	if (params > 0) {
		/* another framework's CPU Adam: the CPU model's figures, not the curve fitted to
		 * zbench's own executor (execprofile.h), as for DeepSpeed's schedule */
		c.hw.gpu.exec.set = 0;
		double rate = zb_cpu_adam_Bps(&c) / ZB_ADAM_BYTES_PER_PARAM; /* params/s */
		pc->pred = strcmp(metric, "adam_s") == 0 ? params / rate : rate / 1e9;
		pc->predicted = 1;
		pc->err = pc->pred / pc->value - 1;
		return;
	}
	/* The source ran it, so it fit: a memory estimate that says otherwise is a miss
	 * of the memory model, reported beside the time, which is predicted anyway. */
	zb_prediction p;
	if (zb_predict_even_if_too_big(&p, &c, &err)) {
		snprintf(pc->status, sizeof pc->status, "predict: %s", err.msg);
		return;
	}
	if (!p.mem.fits)
		snprintf(pc->status, sizeof pc->status, "ran, but zbench's memory estimate says it does not fit: %s%s",
			 p.mem.reason,
			 c.policy.gas > 1 && !v[ZB_AX_FRAMEWORK] ? " (zbench accumulates fp32 gradients on the GPU at gas > 1)" : "");
	double step = p.res.step_time_s;
	if (strcmp(metric, "step_ms") == 0) {
		pc->pred = step * 1e3;
	} else { /* tflops */
		double tokens = (double)c.policy.micro_batch * c.policy.gas * c.policy.seq;
		pc->pred = tokens * megatron_flops_per_token(&c) / step / 1e12;
	}
	zb_prediction_free(&p);
	pc->predicted = 1;
	pc->err = pc->pred / pc->value - 1;
}

static zb_status load(const char *path, pcase *cs, int *n, char **buf, zb_error *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return zb_fail(err, ZB_E_INPUT, "cannot open published suite '%s': %s", path, strerror(errno));
	static const char *const metrics[] = { "step_ms", "tflops", "adam_s", "adam_gps", "speedup" };
	char line[4096];
	int ln = 0, header = 0;
	*n = 0;
	*buf = NULL;
	size_t used = 0;
	while (fgets(line, sizeof line, f)) {
		ln++;
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (!header) { /* the column names */
			header = 1;
			continue;
		}
		if (*n == MAX_CASES) {
			fclose(f);
			return bad(err, path, ln, "more cases than", "256");
		}
		size_t len = strlen(line) + 1;
		*buf = realloc(*buf, used + len); /* offsets fixed up below */
		if (!*buf)
			abort();
		memcpy(*buf + used, line, len);
		pcase *pc = &cs[*n];
		memset(pc, 0, sizeof *pc);
		pc->line = ln;
		pc->f[0] = (char *)(uintptr_t)used; /* an offset until the buffer stops moving */
		used += len;
		(*n)++;
	}
	fclose(f);
	if (!header || *n == 0)
		return bad(err, path, ln, "no cases in", path);
	for (int i = 0; i < *n; i++) {
		pcase *pc = &cs[i];
		char *s = *buf + (uintptr_t)pc->f[0];
		if (split(s, pc->f, C_COUNT) != C_COUNT)
			return bad(err, path, pc->line, "expected 21 tab-separated fields in case", s);
		/* every number a plain decimal (common/number.h): no nan, inf, hex or overflow;
		 * a ratio may also be "tuned" (the source's own choice: not predicted) */
		static const struct { int col; const char *what; } nums[] = {
			{ C_GPUS, "bad gpus" }, { C_RATIO, "bad ratio" }, { C_MB, "bad mb" }, { C_GAS, "bad gas" },
			{ C_SEQ, "bad seq" }, { C_THREADS, "bad threads" }, { C_GPC, "bad gpc" }, { C_VALUE, "bad value" },
		};
		for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
			double x;
			if (given(pc->f[nums[k].col]) && zb_parse_decimal(pc->f[nums[k].col], &x) &&
			    !(nums[k].col == C_RATIO && !strcmp(pc->f[C_RATIO], "tuned")))
				return bad(err, path, pc->line, nums[k].what, pc->f[nums[k].col]);
		}
		int64_t gpus;
		if (zb_parse_whole(pc->f[C_GPUS], 1, 1 << 20, &gpus))
			return bad(err, path, pc->line, "bad gpus", pc->f[C_GPUS]);
		pc->gpus = (int)gpus;
		if (zb_parse_decimal(pc->f[C_VALUE], &pc->value) || !(pc->value > 0))
			return bad(err, path, pc->line, "bad value", pc->f[C_VALUE]);
		size_t m;
		for (m = 0; m < sizeof metrics / sizeof metrics[0]; m++)
			if (strcmp(pc->f[C_METRIC], metrics[m]) == 0)
				break;
		if (m == sizeof metrics / sizeof metrics[0])
			return bad(err, path, pc->line, "unknown metric", pc->f[C_METRIC]);
		for (int j = 0; j < i; j++)
			if (strcmp(cs[j].f[C_ID], pc->f[C_ID]) == 0)
				return bad(err, path, pc->line, "duplicate case id", pc->f[C_ID]);
	}
	return 0;
}

/* Mean |err| in % over predicted single-GPU cases whose column col equals val (col < 0:
 * all); *count gets their number. */
static double mape(const pcase *cs, int n, int col, const char *val, int *count)
{
	double sum = 0;
	int k = 0;
	for (int i = 0; i < n; i++)
		if (cs[i].predicted && cs[i].gpus == 1 && (col < 0 || strcmp(cs[i].f[col], val) == 0)) {
			sum += fabs(cs[i].err);
			k++;
		}
	*count = k;
	return k ? 100 * sum / k : 0;
}

static void print_table(FILE *out, const pcase *cs, int n)
{
	fprintf(out, "%-24s %-5s %4s %-8s %10s %10s %8s  %-8s %s\n", "case", "gen", "gpus", "metric",
		"published", "predicted", "error", "check", "");
	for (int i = 0; i < n; i++) {
		const pcase *pc = &cs[i];
		if (pc->predicted)
			fprintf(out, "%-24s %-5s %4d %-8s %10.4g %10.4g %+7.1f%%  %-8s %s\n", pc->f[C_ID],
				pc->f[C_GEN], pc->gpus, pc->f[C_METRIC], pc->value, pc->pred,
				100 * pc->err, pc->f[C_CHECK], pc->status[0] ? "(memory: see below)" : "");
		else
			fprintf(out, "%-24s %-5s %4d %-8s %10.4g %10s %8s  %-8s %s\n", pc->f[C_ID], pc->f[C_GEN],
				pc->gpus, pc->f[C_METRIC], pc->value, "-", "-", pc->f[C_CHECK], pc->status);
	}
}

/* Mean |err| in % over predicted single-GPU cases that no preset value was fitted to
 * (check without "+fit"); *count gets their number. */
static double mape_out_of_sample(const pcase *cs, int n, int *count)
{
	double sum = 0;
	int k = 0;
	for (int i = 0; i < n; i++)
		if (cs[i].predicted && cs[i].gpus == 1 && !strstr(cs[i].f[C_CHECK], "+fit")) {
			sum += fabs(cs[i].err);
			k++;
		}
	*count = k;
	return k ? 100 * sum / k : 0;
}

/* One MAPE line per distinct value of column col, in order of first appearance. */
static void print_groups(FILE *out, const pcase *cs, int n, int col, const char *label)
{
	const char *seen[32];
	int ns = 0, k;
	for (int i = 0; i < n && ns < 32; i++) {
		int dup = 0;
		for (int j = 0; j < ns; j++)
			dup |= strcmp(seen[j], cs[i].f[col]) == 0;
		if (dup)
			continue;
		seen[ns++] = cs[i].f[col];
		double m = mape(cs, n, col, cs[i].f[col], &k);
		if (k)
			fprintf(out, "  %-5s %-11s MAPE %5.1f%% over %d\n", label, cs[i].f[col], m, k);
	}
}

/* The cases of one scaling study: same shape, machine and metric, by GPU count. */
static int same_series(const pcase *a, const pcase *b)
{
	return !strcmp(a->f[C_SHAPE], b->f[C_SHAPE]) && !strcmp(a->f[C_HW], b->f[C_HW]) &&
	       !strcmp(a->f[C_METRIC], b->f[C_METRIC]) && !strcmp(a->f[C_SOURCE], b->f[C_SOURCE]);
}

/* Per series of predicted cases over several GPU counts: the change of the per-GPU figure
 * from the fewest GPUs to each count, published against predicted, whether the direction
 * agrees, and the worst error (target: the direction right, each point within 20 %). */
static void print_scaling(FILE *out, const pcase *cs, int n)
{
	for (int i = 0; i < n; i++) {
		int first = 1, lo = i;
		for (int j = 0; j < i && first; j++)
			first = !same_series(&cs[j], &cs[i]);
		if (!first || !cs[i].predicted)
			continue;
		int pts = 0, agree = 1, several = 0;
		double worst = 0, worst_node = 0;
		for (int j = i; j < n; j++)
			if (same_series(&cs[j], &cs[i]) && cs[j].predicted) {
				pts++;
				several |= cs[j].gpus != cs[i].gpus;
				if (cs[j].gpus < cs[lo].gpus)
					lo = j;
			}
		if (pts < 2 || !several) /* a scaling study has several GPU counts */
			continue;
		fprintf(out, "  scaling %s on %s, per-GPU %s from %d GPU:", cs[i].f[C_SHAPE], cs[i].f[C_HW],
			cs[i].f[C_METRIC], cs[lo].gpus);
		for (int j = i; j < n; j++) {
			if (!same_series(&cs[j], &cs[i]) || !cs[j].predicted)
				continue;
			worst = fmax(worst, fabs(cs[j].err));
			if (cs[j].nodes <= 1)
				worst_node = fmax(worst_node, fabs(cs[j].err));
			if (j == lo)
				continue;
			double pub = cs[j].value / cs[lo].value - 1, pred = cs[j].pred / cs[lo].pred - 1;
			agree &= (pub < 0) == (pred < 0) || fabs(pub) < 0.02; /* a change under 2 % has no direction */
			fprintf(out, " %d: %+.0f%%/%+.0f%%", cs[j].gpus, 100 * pub, 100 * pred);
		}
		fprintf(out, " (published/predicted); direction %s, worst point %.1f%%, within one node %.1f%% (target: "
			"within 20%%)\n", agree ? "agrees" : "DISAGREES", 100 * worst, 100 * worst_node);
	}
}

static void print_summary(FILE *out, const pcase *cs, int n)
{
	int k, multi = 0, multi_pred = 0;
	double msum = 0;
	for (int i = 0; i < n; i++) {
		multi += cs[i].gpus > 1;
		if (cs[i].gpus > 1 && cs[i].predicted) {
			multi_pred++;
			msum += fabs(cs[i].err);
		}
	}
	double all = mape(cs, n, -1, NULL, &k);
	fprintf(out, "\nsingle-GPU MAPE %.1f%% over %d cases (target <= 20%%, goal 10%%); %d multi-GPU cases, %d "
		"predicted", all, k, multi, multi_pred);
	if (multi_pred)
		fprintf(out, " (MAPE %.1f%%)", 100 * msum / multi_pred);
	fprintf(out, "\n");
	print_scaling(out, cs, n);
	double oos = mape_out_of_sample(cs, n, &k);
	fprintf(out, "  out-of-sample (no preset value fitted to them) MAPE %.1f%% over %d\n", oos, k);
	print_groups(out, cs, n, C_CHECK, "check");
	print_groups(out, cs, n, C_GEN, "gen");
}

/* Compare with the recorded errors; prints each regression, *worse = 1 if any. */
static zb_status check(FILE *out, const char *path, const pcase *cs, int n, int *worse, zb_error *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return zb_fail(err, ZB_E_INPUT, "cannot open check file '%s': %s", path, strerror(errno));
	char line[512];
	int ln = 0, k;
	*worse = 0;
	while (fgets(line, sizeof line, f)) {
		ln++;
		char id[128], num[64];
		double rec;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%127s %63s", id, num) != 2 || zb_parse_decimal(num, &rec)) {
			fclose(f);
			line[strcspn(line, "\n")] = '\0';
			return bad(err, path, ln, "expected 'id error%' in", line);
		}
		if (strcmp(id, "mape") == 0) {
			double now = mape(cs, n, -1, NULL, &k);
			if (now > rec + 0.05) {
				fprintf(out, "regression: single-GPU MAPE %.1f%% > recorded %.1f%%\n", now, rec);
				*worse = 1;
			}
			continue;
		}
		int i;
		for (i = 0; i < n && strcmp(cs[i].f[C_ID], id) != 0; i++)
			;
		if (i == n || !cs[i].predicted) {
			fprintf(out, "regression: case %s was predicted (error %+.1f%%) and is not now\n", id, rec);
			*worse = 1;
		} else if (fabs(100 * cs[i].err) > fabs(rec) + 0.5) {
			fprintf(out, "regression: case %s error %+.1f%%, recorded %+.1f%%\n", id,
				100 * cs[i].err, rec);
			*worse = 1;
		}
	}
	fclose(f);
	fprintf(out, "check against %s: %s\n", path, *worse ? "WORSE" : "no case worse than recorded");
	return ZB_OK;
}

zb_status zb_published_run(const char *path, const char *check_path, int record, FILE *out, int *worse,
			   zb_error *err)
{
	pcase *cs = zb_xcalloc(MAX_CASES, sizeof *cs);
	char *buf = NULL;
	int n = 0;
	*worse = 0;
	zb_status st = load(path, cs, &n, &buf, err);
	if (st) {
		free(buf);
		free(cs);
		return st;
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(cs[i].f[C_METRIC], "speedup") == 0)
			snprintf(cs[i].status, sizeof cs[i].status, "speedup: not predicted");
		else
			predict_case(&cs[i]);
	}
	if (record) {
		int k;
		fprintf(out, "# recorded by zbench validate --published --record: case, error %%\n");
		for (int i = 0; i < n; i++)
			if (cs[i].predicted)
				fprintf(out, "%s\t%+.1f\n", cs[i].f[C_ID], 100 * cs[i].err);
		fprintf(out, "mape\t%.1f\n", mape(cs, n, -1, NULL, &k));
	} else {
		print_table(out, cs, n);
		print_summary(out, cs, n);
		for (int i = 0; i < n; i++)
			if (!cs[i].predicted)
				fprintf(out, "  not predicted: %s: %s\n", cs[i].f[C_ID], cs[i].status);
			else if (cs[i].predicted && cs[i].status[0])
				fprintf(out, "  %s: %s\n", cs[i].f[C_ID], cs[i].status);
	}
	if (check_path)
		st = check(out, check_path, cs, n, worse, err);
	free(buf);
	free(cs);
	return st;
}
