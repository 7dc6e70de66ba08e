/* dsmeasured.c - the measured DeepSpeed table; see dsmeasured.h. */
#include "inputs/dsmeasured.h"
#include "inputs/dsmeasured_jsonl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/number.h"
#include "common/text.h"
#include "inputs/dsconfig.h"
#include "inputs/hfconfig.h"
#include "inputs/hwfile.h"
#include "core/model.h"
#include "inputs/presets.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

enum { C_CONFIG, C_ZERO, C_STEP, C_GPU, C_HOST, C_MODEL, C_SEQ, C_MB, C_SG, C_BUSY, C_STEPS, C_WARM, C_N };
static const char *const colnames[C_N] = { "config", "zero", "step_ms", "gpu_peak_GiB", "host_rss_GiB",
					    "model", "seq", "micro_batch", "sub_group_size", "gpu_busy_ms",
					    "steps_ms", "warmup_steps" };

/* Split a line at tabs in place; returns the field count. */
static int split_tabs(char *line, char **f, int cap)
{
	int n = 0;
	char *p = line;
	while (n < cap) {
		f[n++] = p;
		char *t = strchr(p, '\t');
		if (!t)
			break;
		*t = 0;
		p = t + 1;
	}
	return n;
}

/* A measured number: a plain decimal (common/number.h: no nan, inf, hex or overflow). */
static int parse_num(const char *s, double *out) { return zb_parse_decimal(s, out); }

static zb_status bad(zb_error *err, const char *path, int line, const char *col, const char *v)
{
	return zb_fail(err, ZB_E_INPUT, "%s:%d: bad %s '%s'", path, line, col, v);
}

/* "5348,1537,1478,...": every step of the run, in ms; the first `warm` are dropped. */
static zb_status read_steps(const char *v, int warm, const char *path, int line, zb_ds_row *r, zb_error *err)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", v);
	int k = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), k++) {
		double x;
		if (parse_num(t, &x) || x <= 0)
			return bad(err, path, line, "steps_ms", v);
		if (k >= warm && r->nsteps < ZB_DS_MAX_STEPS)
			r->steps_s[r->nsteps++] = x / 1e3;
	}
	return ZB_OK;
}

static zb_status read_row(char **f, int nf, const int *col, const char *path, int line, zb_ds_row *r,
			  zb_error *err)
{
	memset(r, 0, sizeof *r);
	r->line = line;
	int warm = ZB_DS_DEFAULT_WARMUP;
	if (col[C_WARM] >= 0 && col[C_WARM] < nf) {
		double x;
		if (parse_num(f[col[C_WARM]], &x) || x < 0 || x != floor(x) || x > ZB_DS_MAX_STEPS * 1000)
			return bad(err, path, line, colnames[C_WARM], f[col[C_WARM]]);
		warm = (int)x;
	}
	for (int c = 0; c < C_N; c++) {
		if (col[c] < 0)
			continue;
		if (col[c] >= nf)
			return zb_fail(err, ZB_E_INPUT, "%s:%d: missing column '%s'", path, line, colnames[c]);
		const char *v = f[col[c]];
		double x;
		switch (c) {
		case C_CONFIG:
			if (zb_text_control(v))
				return bad(err, path, line, colnames[c], v);
			snprintf(r->name, sizeof r->name, "%s", v);
			break;
		case C_ZERO: snprintf(r->zero, sizeof r->zero, "%s", v); break;
		case C_MODEL: snprintf(r->model, sizeof r->model, "%s", v); break;
		case C_WARM: break; /* read first */
		case C_STEPS: {
			zb_status st = read_steps(v, warm, path, line, r, err);
			if (st)
				return st;
			break;
		}
		case C_BUSY: /* optional per row: "-" where not measured */
			if (strcmp(v, "-") == 0)
				break;
			if (parse_num(v, &x) || x <= 0)
				return bad(err, path, line, colnames[c], v);
			r->gpu_busy_s = x / 1e3;
			break;
		default:
			if (parse_num(v, &x) || x <= 0)
				return bad(err, path, line, colnames[c], v);
			if (c == C_STEP) r->step_s = x / 1e3;
			if (c == C_GPU) r->gpu_peak_B = x * GIB;
			if (c == C_HOST) r->host_rss_B = x * GIB;
			if ((c == C_SEQ || c == C_MB || c == C_SG) &&
			    (x != floor(x) || x > (c == C_SG ? 1e15 : (double)INT32_MAX)))
				return bad(err, path, line, colnames[c], v); /* a whole count */
			if (c == C_SEQ) r->seq = (int)x;
			if (c == C_MB) r->micro_batch = (int)x;
			if (c == C_SG) r->sub_group_size = (int64_t)x;
		}
	}
	return ZB_OK;
}

zb_status zb_ds_measured_load(const char *path, zb_ds_measured *out, zb_error *err)
{
	if (zb_ds_measured_is_jsonl(path))
		return zb_ds_measured_load_jsonl(path, out, err);
	memset(out, 0, sizeof *out);
	snprintf(out->path, sizeof out->path, "%s", path);
	FILE *fp = fopen(path, "r");
	if (!fp)
		return zb_fail(err, ZB_E_INPUT, "cannot open measured table '%s': %s", path, strerror(errno));
	char line[4096];
	char *f[32];
	int col[C_N], in_table = 0, ln = 0, cap = 0;
	zb_status st = ZB_OK;
	while (fgets(line, sizeof line, fp)) {
		ln++;
		line[strcspn(line, "\r\n")] = 0;
		if (!in_table) {
			if (line[0] == '#' || strncmp(line, "config\t", 7) != 0)
				continue;
			int nf = split_tabs(line, f, 32);
			for (int c = 0; c < C_N; c++) {
				col[c] = -1;
				for (int i = 0; i < nf; i++)
					if (strcmp(f[i], colnames[c]) == 0)
						col[c] = i;
			}
			for (int c = C_CONFIG; c <= C_STEP; c++)
				if (col[c] < 0) {
					st = zb_fail(err, ZB_E_INPUT, "%s:%d: the header has no '%s' column", path, ln,
						     colnames[c]);
					goto out;
				}
			in_table = 1;
			continue;
		}
		if (!line[0] || line[0] == '#')
			break;
		int nf = split_tabs(line, f, 32);
		if (out->n == cap) {
			cap = cap ? 2 * cap : 16;
			out->rows = zb_xrealloc(out->rows, sizeof *out->rows * (size_t)cap);
		}
		if ((st = read_row(f, nf, col, path, ln, &out->rows[out->n], err)))
			goto out;
		out->n++;
	}
	if (!in_table || out->n == 0)
		st = zb_fail(err, ZB_E_INPUT, "%s: no measured table (a header line 'config<TAB>zero<TAB>step_ms ...' "
					      "followed by rows)", path);
out:
	fclose(fp);
	if (st)
		zb_ds_measured_free(out);
	return st;
}

void zb_ds_measured_free(zb_ds_measured *m)
{
	free(m->rows);
	m->rows = NULL;
	m->n = 0;
}

zb_status zb_ds_model_named(const char *name, const char *dir_of, zb_model *out, zb_error *err)
{
	size_t n = strlen(name);
	if (n < 5 || strcmp(name + n - 5, ".json") != 0)
		return zb_preset_model(name, out, err);
	char path[1024];
	snprintf(path, sizeof path, "%s", name);
	const char *slash = dir_of ? strrchr(dir_of, '/') : NULL;
	if (access(path, R_OK) != 0 && name[0] != '/' && slash)
		snprintf(path, sizeof path, "%.*s/%s", (int)(slash - dir_of), dir_of, name);
	zb_hf_config hf;
	zb_error e1;
	if (zb_hf_load(path, &hf, &e1) == ZB_OK) {
		*out = hf.model;
		return ZB_OK;
	}
	zb_error e2;
	if (zb_model_load(path, out, &e2) == ZB_OK)
		return ZB_OK;
	return zb_fail(err, ZB_E_INPUT, "model '%s' is neither a Hugging Face config (%s) nor a zbench model file",
		       name, e1.msg);
}

/* The value after a word of the zero column ("stage 3" -> "3"), NULL if absent. */
static const char *after(const char *text, const char *word)
{
	const char *p = strstr(text, word);
	if (!p)
		return NULL;
	p += strlen(word);
	while (*p == ' ' || *p == '=' || *p == ':')
		p++;
	return p;
}

zb_status zb_ds_row_config(const zb_ds_row *r, const char *path, const zb_config *base, zb_config *out,
			   zb_error *err)
{
	zb_config c = *base;
	char z[sizeof r->zero];
	for (size_t i = 0; i < sizeof z; i++)
		z[i] = (char)tolower((unsigned char)r->zero[i]);
	c.framework = ZB_FW_DEEPSPEED;
	zb_error me;
	if (r->have_shape)
		c.model = r->shape;
	else if (r->model[0] && zb_ds_model_named(r->model, path, &c.model, &me))
		return zb_fail(err, ZB_E_INPUT, "%s:%d: %s", path, r->line, me.msg);
	if (r->seq)
		c.policy.seq = r->seq;
	if (r->micro_batch)
		c.policy.micro_batch = r->micro_batch;
	if (r->sub_group_size)
		c.policy.sub_group_size = r->sub_group_size;
	const char *s = after(z, "stage");
	if (!s || *s < '1' || *s > '3' || isdigit((unsigned char)s[1]))
		return zb_fail(err, ZB_E_INPUT, "%s:%d: zero column '%s' names no stage 1, 2 or 3", path, r->line,
			       r->zero);
	c.policy.zero_stage = *s - '0';
	int offload = after(z, "offload_optimizer cpu") != NULL;
	c.policy.offload_param = after(z, "offload_param cpu") != NULL;
	int overlap = c.policy.zero_stage == 3;
	if ((s = after(z, "overlap_comm")))
		overlap = strncmp(s, "true", 4) == 0;
	c.policy.kind = !offload ? ZB_POLICY_NONE : overlap ? ZB_POLICY_OVERLAP : ZB_POLICY_OFFLOAD;
	c.policy.ratio = 1.0;
	if ((s = after(z, "ratio"))) {
		double x;
		if (zb_parse_decimal_prefix(s, NULL, &x) || x <= 0 || x > 1)
			return zb_fail(err, ZB_E_INPUT, "%s:%d: bad ratio in '%s'", path, r->line, r->zero);
		c.policy.ratio = x;
	}
	if (offload && c.policy.zero_stage == 3 && c.policy.ratio < 1) {
		zb_ds_twinflow tf;
		int64_t sg = c.policy.sub_group_size > 0 ? c.policy.sub_group_size : 1000000000;
		zb_ds_twinflow_split(&c.model, sg, c.policy.ratio, &tf);
		c.policy.ratio = tf.ratio;
	}
	/* stage3_prefetch_bucket_size at DeepSpeed's default 5e7 elements, in blocks
	 * (the rule of dsconfig.h) */
	int64_t block = zb_model_unit_params(&c.model, 1);
	c.policy.prefetch_layers = block > 0 ? (int)((50000000 + block - 1) / block) : 1;
	if (c.policy.prefetch_layers < 1)
		c.policy.prefetch_layers = 1;
	zb_error e;
	if (zb_config_validate(&c, &e))
		return zb_fail(err, ZB_E_INPUT, "%s:%d: %s", path, r->line, e.msg);
	*out = c;
	return ZB_OK;
}

zb_status zb_ds_measured_load_many(const char *const *paths, int n, const zb_model *base_model,
				   zb_ds_measured *out, zb_error *err)
{
	zb_status st = zb_ds_measured_load(paths[0], out, err);
	for (int i = 1; i < n && !st; i++) {
		zb_ds_measured more;
		if ((st = zb_ds_measured_load(paths[i], &more, err)))
			break;
		out->rows = zb_xrealloc(out->rows, sizeof *out->rows * (size_t)(out->n + more.n));
		memcpy(out->rows + out->n, more.rows, sizeof *out->rows * (size_t)more.n);
		out->n += more.n;
		zb_ds_measured_free(&more);
	}
	for (int i = 0; i < out->n && !st && n > 1; i++)
		if (!out->rows[i].have_shape && !out->rows[i].model[0]) {
			out->rows[i].have_shape = 1;
			out->rows[i].shape = *base_model;
		}
	if (st)
		zb_ds_measured_free(out);
	return st;
}
