/* baseline_file.c - baselines as JSON files; see baseline_file.h. */
#include "validate/baseline_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/outfile.h"

int zb_baseline_is_file(const char *tag)
{
	size_t n = strlen(tag);
	return strchr(tag, '/') || (n > 5 && !strcmp(tag + n - 5, ".json"));
}

static json_t *real_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *text_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *config_json(const zb_baseline_result *r, const char *spec)
{
	json_t *sa = json_array();
	for (int k = 0; k < r->nsamples; k++)
		json_array_append_new(sa, json_real(r->samples[k]));
	int fits = isfinite(r->step_time_s);
	return json_pack("{s:s, s:o, s:s, s:b, s:o, s:o, s:o}", "key", r->key, "spec", text_or_null(spec), "label",
			 r->label, "fits", fits, "step_time_s", real_or_null(r->step_time_s), "tokens_per_s",
			 real_or_null(r->tokens_per_s), "samples_s", sa);
}

static json_t *document(const zb_baseline_file *f)
{
	const zb_baseline *b = &f->b;
	json_error_t je;
	json_t *profile = b->hw_json ? json_loads(b->hw_json, 0, &je) : json_null();
	json_t *configs = json_array();
	for (int i = 0; i < f->n; i++)
		json_array_append_new(configs, config_json(&f->results[i], f->specs ? f->specs[i] : NULL));
	return json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:o, s:{s:s, s:o}, s:o}", "format",
			 ZB_BASELINE_FORMAT, "version", ZB_BASELINE_FORMAT_VERSION, "tag", b->tag, "created_at",
			 b->created_at, "zbench", f->zbench, "suite", b->suite, "source", b->source, "repeats",
			 b->repeats, "warmup", b->warmup, "steps", b->steps, "device", text_or_null(f->device),
			 "hardware", "name", f->hw_name, "profile", profile ? profile : json_null(), "configs",
			 configs);
}

zb_status zb_baseline_file_dump(FILE *out, const char *path, const zb_baseline_file *f, zb_error *err)
{
	json_t *doc = document(f);
	if (!doc)
		return zb_fail(err, ZB_E_INTERNAL, "cannot format the baseline for '%s' (a text that is not UTF-8?)", path);
	int bad = json_dumpf(doc, out, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) != 0 || fputc('\n', out) == EOF;
	json_decref(doc);
	return bad ? zb_fail(err, ZB_E_INPUT, "cannot write '%s'", path) : ZB_OK;
}

zb_status zb_baseline_file_write(const char *path, const zb_baseline_file *f, zb_error *err)
{
	zb_outfile o;
	zb_status st = zb_outfile_open(&o, path, err);
	if (!st && (st = zb_baseline_file_dump(o.f, path, f, err)))
		zb_outfile_abort(&o);
	else if (!st)
		st = zb_outfile_commit(&o, err);
	return st;
}

/* ---- reading ---------------------------------------------------------------------------- */

static zb_status bad(zb_error *err, const char *path, const char *what)
{
	return zb_fail(err, ZB_E_INPUT, "'%s' is not a zbench baseline file: %s", path, what);
}

static int copy_string(json_t *o, const char *key, char *out, size_t n, int required)
{
	json_t *v = json_object_get(o, key);
	if (json_is_string(v) && json_string_length(v) < n) {
		snprintf(out, n, "%s", json_string_value(v));
		return 1;
	}
	out[0] = 0;
	return !required && (!v || json_is_null(v));
}

static int get_int(json_t *o, const char *key, int lo, int hi, int *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return 0;
	*out = (int)json_integer_value(v);
	return 1;
}

static double get_real(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : NAN;
}

/* The format and version first: a newer file is refused before anything else. */
static zb_status read_head(const char *path, json_t *root, zb_baseline_file *f, zb_error *err)
{
	const char *fmt = json_string_value(json_object_get(root, "format"));
	if (!fmt || strcmp(fmt, ZB_BASELINE_FORMAT))
		return bad(err, path, "no \"format\": \"" ZB_BASELINE_FORMAT "\"");
	json_t *ver = json_object_get(root, "version");
	if (!json_is_integer(ver) || json_integer_value(ver) < 1)
		return bad(err, path, "\"version\" is not a positive integer");
	if (json_integer_value(ver) > ZB_BASELINE_FORMAT_VERSION)
		return zb_fail(err, ZB_E_INPUT,
			       "'%s' is a baseline of format version %lld, newer than this zbench reads (%d): update "
			       "zbench or save the baseline again",
			       path, (long long)json_integer_value(ver), ZB_BASELINE_FORMAT_VERSION);
	zb_baseline *b = &f->b;
	if (!copy_string(root, "tag", b->tag, sizeof b->tag, 1) || !copy_string(root, "suite", b->suite, sizeof b->suite, 1) ||
	    !copy_string(root, "source", b->source, sizeof b->source, 1) ||
	    (strcmp(b->source, "predicted") && strcmp(b->source, "measured")))
		return bad(err, path, "\"tag\", \"suite\" and \"source\" (predicted or measured) are needed");
	if (!get_int(root, "repeats", 1, ZB_BASELINE_MAX_SAMPLES, &b->repeats) ||
	    !get_int(root, "warmup", 0, 100000, &b->warmup) || !get_int(root, "steps", 1, 100000, &b->steps))
		return bad(err, path, "\"repeats\", \"warmup\" and \"steps\" must be integers in range");
	copy_string(root, "created_at", b->created_at, sizeof b->created_at, 0);
	copy_string(root, "zbench", f->zbench, sizeof f->zbench, 0);
	if (!copy_string(root, "device", f->device, sizeof f->device, 0))
		return bad(err, path, "\"device\" must be a string or null");
	json_t *hw = json_object_get(root, "hardware");
	json_t *profile = json_object_get(hw, "profile");
	if (!json_is_object(profile) || !copy_string(hw, "name", f->hw_name, sizeof f->hw_name, 1))
		return bad(err, path, "\"hardware\" needs a \"name\" and a \"profile\" object");
	b->hw_json = json_dumps(profile, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
	return b->hw_json ? ZB_OK : zb_fail(err, ZB_E_INTERNAL, "cannot format the hardware of '%s'", path);
}

static zb_status read_config(const char *path, json_t *c, int i, zb_baseline_file *f, zb_error *err)
{
	zb_baseline_result *r = &f->results[i];
	char what[160];
	snprintf(what, sizeof what, "configuration %d needs a \"key\" and \"label\" (strings)", i + 1);
	if (!json_is_object(c) || !copy_string(c, "key", r->key, sizeof r->key, 1) || !r->key[0] ||
	    !copy_string(c, "label", r->label, sizeof r->label, 0))
		return bad(err, path, what);
	json_t *spec = json_object_get(c, "spec");
	if (json_is_string(spec))
		f->specs[i] = strdup(json_string_value(spec));
	else if (spec && !json_is_null(spec))
		return bad(err, path, "a \"spec\" is a string or null");
	int fits = json_is_true(json_object_get(c, "fits"));
	r->step_time_s = fits ? get_real(c, "step_time_s") : NAN;
	r->tokens_per_s = fits ? get_real(c, "tokens_per_s") : NAN;
	if (fits && !(isfinite(r->step_time_s) && isfinite(r->tokens_per_s))) {
		snprintf(what, sizeof what, "configuration '%.40s' fits but has no positive step_time_s and tokens_per_s",
			 r->key);
		return bad(err, path, what);
	}
	json_t *sa = json_object_get(c, "samples_s");
	for (size_t k = 0; json_is_array(sa) && k < json_array_size(sa) && k < ZB_BASELINE_MAX_SAMPLES; k++)
		r->samples[r->nsamples++] = json_number_value(json_array_get(sa, k));
	for (int j = 0; j < i; j++)
		if (!strcmp(f->results[j].key, r->key)) {
			snprintf(what, sizeof what, "configuration '%.40s' is there twice", r->key);
			return bad(err, path, what);
		}
	return ZB_OK;
}

zb_status zb_baseline_file_read(const char *path, zb_baseline_file *f, zb_error *err)
{
	memset(f, 0, sizeof *f);
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		FILE *t = fopen(path, "r");
		if (!t)
			return zb_fail(err, ZB_E_INPUT, "cannot read baseline file '%s'", path);
		fclose(t);
		return zb_fail(err, ZB_E_INPUT, "%s:%d: %s", path, je.line, je.text);
	}
	zb_status st = json_is_object(root) ? read_head(path, root, f, err) : bad(err, path, "not a JSON object");
	json_t *configs = json_object_get(root, "configs");
	if (!st && !json_is_array(configs))
		st = bad(err, path, "no \"configs\" list");
	if (!st) {
		f->n = (int)json_array_size(configs);
		f->results = zb_xcalloc((size_t)(f->n ? f->n : 1), sizeof *f->results);
		f->specs = zb_xcalloc((size_t)(f->n ? f->n : 1), sizeof *f->specs);
		for (int i = 0; i < f->n && !st; i++)
			st = read_config(path, json_array_get(configs, (size_t)i), i, f, err);
	}
	json_decref(root);
	if (st)
		zb_baseline_file_free(f);
	return st;
}

void zb_baseline_file_free(zb_baseline_file *f)
{
	for (int i = 0; f->specs && i < f->n; i++)
		free(f->specs[i]);
	free(f->specs);
	free(f->results);
	zb_baseline_clear(&f->b);
	memset(f, 0, sizeof *f);
}
