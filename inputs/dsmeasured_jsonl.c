/* dsmeasured_jsonl.c - the harness's JSON lines as measured rows; see dsmeasured_jsonl.h. */
#include "inputs/dsmeasured_jsonl.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/number.h"
#include "common/text.h"
#include "core/model.h"
#include "inputs/presets.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

int zb_ds_measured_is_jsonl(const char *path)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return 0;
	int ch;
	while ((ch = fgetc(fp)) == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
		;
	fclose(fp);
	return ch == '{';
}

static long long int_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* Every number of a result line: finite and of a measured size (common/number.h),
 * counts whole and within int, else "path:line: bad key 'value'". */
static zb_status check_numbers(json_t *o, const char *path, int ln, zb_error *err)
{
	static const char *const counts[] = { "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq",
					      "micro_batch", "gas", "warmup_steps" };
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		size_t i;
		json_t *x;
		json_array_foreach(json_is_array(v) ? v : NULL, i, x)
			if (json_is_number(x) && !zb_number_ok(json_number_value(x)))
				return zb_fail(err, ZB_E_INPUT, "%s:%d: bad %s[%zu] '%g'", path, ln, key, i, json_number_value(x));
		if (!json_is_number(v))
			continue;
		double d = json_number_value(v);
		int count = 0;
		for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
			count |= !strcmp(key, counts[k]);
		if (!zb_number_ok(d) || (count && (!json_is_integer(v) || d < 0 || d > INT32_MAX)))
			return zb_fail(err, ZB_E_INPUT, "%s:%d: bad %s '%g'", path, ln, key, d);
	}
	return ZB_OK;
}

/* The row's model from the shape keys; named like a preset of the same shape. */
static zb_status shape_of(json_t *o, const char *path, int ln, zb_model *m, zb_error *err)
{
	const char *fam = json_string_value(json_object_get(o, "family"));
	memset(m, 0, sizeof *m);
	m->layers = (int)int_of(o, "layers");
	m->hidden = (int)int_of(o, "hidden");
	m->heads = (int)int_of(o, "heads");
	m->kv_heads = (int)int_of(o, "kv_heads");
	m->ffn = (int)int_of(o, "ffn");
	m->vocab = (int)int_of(o, "vocab");
	m->tied_embeddings = json_is_true(json_object_get(o, "tied_head"));
	if (!fam || (strcmp(fam, "gpt") && strcmp(fam, "llama")) || m->layers < 1 || m->hidden < 1 || m->heads < 1 ||
	    m->vocab < 1)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: no model shape (family gpt|llama, layers, hidden, heads, vocab)",
			       path, ln);
	if (!m->kv_heads)
		m->kv_heads = m->heads;
	if (!m->ffn)
		m->ffn = 4 * m->hidden;
	int gpt = !strcmp(fam, "gpt");
	m->bias = gpt;
	m->gated_mlp = !gpt;
	m->max_seq = gpt ? (int)int_of(o, "seq") : 0;
	snprintf(m->name, sizeof m->name, "%s-%dx%d", fam, m->layers, m->hidden);
	for (int i = 0; i < zb_preset_count("model"); i++) {
		zb_model p;
		zb_error e;
		if (zb_preset_model(zb_preset_name("model", i), &p, &e) == ZB_OK && p.layers == m->layers &&
		    p.hidden == m->hidden && p.heads == m->heads && p.kv_heads == m->kv_heads && p.ffn == m->ffn &&
		    p.vocab == m->vocab && p.gated_mlp == m->gated_mlp)
			snprintf(m->name, sizeof m->name, "%s", p.name);
	}
	long long want = int_of(o, "params");
	if (want > 0 && llabs(zb_model_params(m) - want) > want / 1000)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: the harness built %lld parameters, the shape gives %lld", path,
			       ln, want, (long long)zb_model_params(m));
	return ZB_OK;
}

/* The zero column's words (dsmeasured.h) from the DeepSpeed JSON the run used. */
static zb_status zero_of(const char *ds, const char *path, int ln, zb_ds_row *r, zb_error *err)
{
	char p[1024];
	snprintf(p, sizeof p, "%s", ds);
	const char *slash = strrchr(path, '/');
	if (access(p, R_OK) != 0 && ds[0] != '/' && slash) {
		/* data/x.jsonl names peers/configs/y.json: from the directory above data/ */
		snprintf(p, sizeof p, "%.*s/../%s", (int)(slash - path), path, ds);
	}
	json_error_t je;
	json_t *root = json_load_file(p, 0, &je);
	json_t *z = json_object_get(root, "zero_optimization");
	if (!json_is_object(z)) {
		json_decref(root);
		return zb_fail(err, ZB_E_INPUT, "%s:%d: ds_config '%s': no zero_optimization (%s)", path, ln, ds,
			       root ? "missing key" : je.text);
	}
	const char *od = json_string_value(json_object_get(json_object_get(z, "offload_optimizer"), "device"));
	const char *pd = json_string_value(json_object_get(json_object_get(z, "offload_param"), "device"));
	json_t *ratio = json_object_get(json_object_get(z, "offload_optimizer"), "ratio");
	json_t *ov = json_object_get(z, "overlap_comm");
	int n = snprintf(r->zero, sizeof r->zero, "stage %lld", (long long)int_of(z, "stage"));
	if (od && !strcmp(od, "cpu"))
		n += snprintf(r->zero + n, sizeof r->zero - (size_t)n, ", offload_optimizer cpu");
	if (json_is_number(ratio))
		n += snprintf(r->zero + n, sizeof r->zero - (size_t)n, " ratio %g", json_number_value(ratio));
	if (json_is_boolean(ov))
		n += snprintf(r->zero + n, sizeof r->zero - (size_t)n, ", overlap_comm %s", json_is_true(ov) ? "true" : "false");
	if (pd && !strcmp(pd, "cpu"))
		snprintf(r->zero + n, sizeof r->zero - (size_t)n, ", offload_param cpu");
	json_t *sg = json_object_get(z, "sub_group_size");
	if (json_is_number(sg) && !(json_number_value(sg) >= 0 && json_number_value(sg) <= ZB_NUMBER_MAX)) {
		json_decref(root);
		return zb_fail(err, ZB_E_INPUT, "%s:%d: ds_config '%s': bad sub_group_size '%g'", path, ln, ds,
			       json_number_value(sg));
	}
	if (json_is_number(sg))
		r->sub_group_size = (int64_t)json_number_value(sg);
	json_decref(root);
	return ZB_OK;
}

static zb_status read_line(json_t *o, const char *path, int ln, zb_ds_row *r, zb_error *err)
{
	memset(r, 0, sizeof *r);
	r->line = ln;
	zb_status bad = check_numbers(o, path, ln, err);
	if (bad)
		return bad;
	const char *name = json_string_value(json_object_get(o, "config"));
	const char *ds = json_string_value(json_object_get(o, "ds_config"));
	json_t *step = json_object_get(o, "step_ms");
	if (!name || !ds || !json_is_number(step) || json_number_value(step) <= 0)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: a result line needs config, ds_config and step_ms > 0", path, ln);
	if (int_of(o, "gas") > 1)
		return zb_fail(err, ZB_E_INPUT, "%s:%d: gas %lld: measured rows are read with gas 1 only", path, ln,
			       int_of(o, "gas"));
	if (zb_text_control(name))
		return zb_fail(err, ZB_E_INPUT, "%s:%d: bad config '%s'", path, ln, name);
	snprintf(r->name, sizeof r->name, "%s", name);
	r->step_s = json_number_value(step) / 1e3;
	json_t *steps = json_object_get(o, "steps_ms"), *x;
	json_t *warm = json_object_get(o, "warmup_steps");
	size_t k;
	int skip = json_is_integer(warm) ? (int)json_integer_value(warm) : ZB_DS_DEFAULT_WARMUP;
	json_array_foreach(steps, k, x) {
		if (!json_is_number(x) || json_number_value(x) <= 0)
			return zb_fail(err, ZB_E_INPUT, "%s:%d: steps_ms[%zu] is not a positive number", path, ln, k);
		if ((int)k >= skip && r->nsteps < ZB_DS_MAX_STEPS)
			r->steps_s[r->nsteps++] = json_number_value(x) / 1e3;
	}
	r->gpu_peak_B = json_number_value(json_object_get(o, "gpu_peak_GiB")) * GIB;
	r->host_rss_B = json_number_value(json_object_get(o, "host_rss_GiB")) * GIB;
	r->seq = (int)int_of(o, "seq");
	r->micro_batch = (int)int_of(o, "micro_batch");
	r->have_shape = 1;
	zb_status st = shape_of(o, path, ln, &r->shape, err);
	if (!st)
		snprintf(r->model, sizeof r->model, "%s", r->shape.name);
	return st ? st : zero_of(ds, path, ln, r, err);
}

zb_status zb_ds_measured_load_jsonl(const char *path, zb_ds_measured *out, zb_error *err)
{
	memset(out, 0, sizeof *out);
	snprintf(out->path, sizeof out->path, "%s", path);
	FILE *fp = fopen(path, "r");
	if (!fp)
		return zb_fail(err, ZB_E_INPUT, "cannot open measured results '%s'", path);
	char *line = NULL;
	size_t cap_line = 0;
	int ln = 0, cap = 0;
	zb_status st = ZB_OK;
	while (!st && getline(&line, &cap_line, fp) > 0) {
		ln++;
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		json_error_t je;
		json_t *o = json_loads(line, 0, &je);
		if (!json_is_object(o)) {
			st = zb_fail(err, ZB_E_INPUT, "%s:%d: not a JSON object: %s", path, ln, je.text);
		} else {
			if (out->n == cap) {
				cap = cap ? 2 * cap : 16;
				out->rows = zb_xrealloc(out->rows, sizeof *out->rows * (size_t)cap);
			}
			if (!(st = read_line(o, path, ln, &out->rows[out->n], err)))
				out->n++;
		}
		json_decref(o);
	}
	free(line);
	fclose(fp);
	if (!st && out->n == 0)
		st = zb_fail(err, ZB_E_INPUT, "%s: no result lines", path);
	if (st)
		zb_ds_measured_free(out);
	return st;
}
