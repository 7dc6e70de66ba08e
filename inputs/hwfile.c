/*
 * hwfile.c - hardware and model descriptions as JSON files, through jansson.
 *
 * Each struct of config.h is described once, as a table of fields (key, kind,
 * offset); reading, range checks, "missing key" and "unknown key" errors and
 * writing all walk the same table, so the file format cannot drift from the struct.
 *
 * A part of a machine (link, gpu, cpu) and a model may be given as a preset name
 * ("link": "gen5") or as an object; an object may start from a preset
 * ("preset": "gen5") and override some fields, otherwise it must give every
 * required field. A hardware file may also start from a whole machine
 * ({"preset": "dgx-a100", "cpu": {"cores": 64}}).
 *
 * Reals are written with the fewest digits that read back to the same double
 * (up to 17 when a calibrated value needs them), so saved files stay readable and a
 * save/load round trip is exact.
 */
#include "inputs/jsonfile.h"
#include "inputs/hwfile.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/outfile.h"
#include "inputs/fabric.h"
#include "core/execprofile.h"
#include "inputs/presets.h"

/* ---- field tables ---------------------------------------------------------- */

typedef enum fkind {
	F_POS,        /* double > 0 */
	F_FRAC,       /* double in (0, 1] */
	F_NONNEG,     /* double >= 0 */
	F_INT_POS,    /* int > 0 */
	F_INT_NONNEG, /* int >= 0 */
	F_FLAG,       /* int 0/1, written as a JSON boolean */
	F_INT_OPT,    /* int >= 0, optional, written only when not 0 (so files and stored
	                 configurations without it read and write as before) */
	F_STR,        /* char[ZB_NAME_MAX] */
	F_FLAG_OPT,   /* int 0/1, optional, written (as true) only when set */
	F_NONNEG_OPT, /* double >= 0, optional, written only when not 0 */
} fkind;

typedef struct field {
	const char *key;
	fkind kind;
	size_t off;
	int required; /* must be present unless the object starts from a preset */
} field;

#define FLD(type, name, kind, req) {#name, kind, offsetof(type, name), req}

static const field link_fields[] = {
	FLD(zb_link, name, F_STR, 0),
	FLD(zb_link, h2d_Bps, F_POS, 1),
	FLD(zb_link, d2h_Bps, F_POS, 1),
	FLD(zb_link, duplex_h2d, F_FRAC, 1),
	FLD(zb_link, duplex_d2h, F_FRAC, 1),
	FLD(zb_link, copy_latency_s, F_NONNEG, 1),
	FLD(zb_link, pageable_h2d_Bps, F_POS, 1),
	FLD(zb_link, pageable_d2h_Bps, F_POS, 1),
};

static const field gpu_fields[] = {
	FLD(zb_gpu, name, F_STR, 0),
	FLD(zb_gpu, mem_bytes, F_POS, 1),
	FLD(zb_gpu, bf16_flops, F_POS, 1),
	FLD(zb_gpu, fp16_flops, F_POS, 1),
	FLD(zb_gpu, hbm_Bps, F_POS, 1),
	FLD(zb_gpu, gemm_half_dim, F_NONNEG, 1),
	FLD(zb_gpu, kernel_latency_s, F_NONNEG, 1),
	FLD(zb_gpu, l2_bytes, F_NONNEG, 0),
	FLD(zb_gpu, flash_efficiency, F_NONNEG, 0),
	FLD(zb_gpu, sms, F_INT_NONNEG, 0),
	FLD(zb_gpu, builtin_link, F_STR, 0),
};

static const field cpu_fields[] = {
	FLD(zb_cpu, name, F_STR, 0),
	FLD(zb_cpu, cores, F_INT_POS, 1),
	FLD(zb_cpu, adam_params_per_core, F_POS, 1),
	FLD(zb_cpu, adam_Bps, F_NONNEG, 0),
	FLD(zb_cpu, dram_Bps, F_POS, 1),
	FLD(zb_cpu, mem_bytes, F_POS, 1),
	FLD(zb_cpu, task_latency_s, F_NONNEG, 1),
	FLD(zb_cpu, sockets, F_INT_NONNEG, 0),
	FLD(zb_cpu, xsocket_Bps, F_NONNEG, 0),
	FLD(zb_cpu, hypothetical, F_FLAG_OPT, 0),
};

/* Several GPUs: all optional, 0 = none (one GPU needs no fabric). */
static const field fabric_fields[] = {
	FLD(zb_fabric, name, F_STR, 0),
	FLD(zb_fabric, intra_bus_Bps, F_NONNEG, 0),
	FLD(zb_fabric, intra_latency_s, F_NONNEG, 0),
	FLD(zb_fabric, inter_bus_Bps, F_NONNEG, 0),
	FLD(zb_fabric, inter_latency_s, F_NONNEG, 0),
};

/* kv_heads defaults to heads and embed_proj to 0; the flags are required because a
 * wrong default (bias, tied head) silently changes the parameter count. */
static const field model_fields[] = {
	FLD(zb_model, name, F_STR, 0),
	FLD(zb_model, layers, F_INT_POS, 1),
	FLD(zb_model, hidden, F_INT_POS, 1),
	FLD(zb_model, heads, F_INT_POS, 1),
	FLD(zb_model, kv_heads, F_INT_POS, 0),
	FLD(zb_model, ffn, F_INT_POS, 1),
	FLD(zb_model, vocab, F_INT_POS, 1),
	FLD(zb_model, max_seq, F_INT_NONNEG, 1),
	FLD(zb_model, gated_mlp, F_FLAG, 1),
	FLD(zb_model, bias, F_FLAG, 1),
	FLD(zb_model, tied_embeddings, F_FLAG, 1),
	FLD(zb_model, embed_proj, F_INT_NONNEG, 0),
	FLD(zb_model, head_dim, F_INT_OPT, 0),
	FLD(zb_model, linear_bias, F_INT_OPT, 0),
	FLD(zb_model, norms, F_INT_OPT, 0),
	FLD(zb_model, experts, F_INT_OPT, 0),
	FLD(zb_model, experts_active, F_INT_OPT, 0),
	FLD(zb_model, shared_ffn, F_INT_OPT, 0),
	FLD(zb_model, loss, F_INT_OPT, 0),
};

#define NFIELDS(t) ((int)(sizeof(t) / sizeof((t)[0])))

/* ---- reading --------------------------------------------------------------- */

typedef struct rd {
	const char *path;
	zb_error *err;
} rd;

static zb_status bad_value(rd *r, const char *key, const char *want, const json_t *v)
{
	char got[96];
	zb_json_show(v, got, sizeof got);
	return zb_fail(r->err, ZB_E_INPUT, "%s: key '%s' must be %s (got %s)", r->path, key, want,
		       got);
}

static const char *kind_want(fkind k)
{
	switch (k) {
	case F_POS: return "a positive number";
	case F_FRAC: return "a number in (0, 1]";
	case F_NONNEG:
	case F_NONNEG_OPT: return "a non-negative number";
	case F_INT_POS: return "a positive integer";
	case F_INT_NONNEG:
	case F_INT_OPT: return "a non-negative integer";
	case F_FLAG:
	case F_FLAG_OPT: return "true, false, 0 or 1";
	default: return "a string of at most 63 characters";
	}
}

/* An integer, or a real with an integral value ("layers": 36.0), within int range. */
static int json_int_value(const json_t *v, long long *out)
{
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return *out >= INT_MIN && *out <= INT_MAX;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d != floor(d) || d < INT_MIN || d > INT_MAX)
			return 0;
		*out = (long long)d;
		return 1;
	}
	return 0;
}

static zb_status read_field(rd *r, const char *key, const field *f, const json_t *v, void *base)
{
	char *p = (char *)base + f->off;
	double d;
	long long i;
	switch (f->kind) {
	case F_POS:
	case F_FRAC:
	case F_NONNEG:
	case F_NONNEG_OPT:
		if (!json_is_number(v))
			return bad_value(r, key, kind_want(f->kind), v);
		d = json_number_value(v);
		if ((f->kind == F_POS && !(d > 0)) || (f->kind == F_FRAC && !(d > 0 && d <= 1)) ||
		    ((f->kind == F_NONNEG || f->kind == F_NONNEG_OPT) && !(d >= 0)) || !isfinite(d))
			return bad_value(r, key, kind_want(f->kind), v);
		*(double *)p = d;
		return ZB_OK;
	case F_INT_POS:
	case F_INT_NONNEG:
	case F_INT_OPT:
		if (!json_int_value(v, &i) || (f->kind == F_INT_POS ? i <= 0 : i < 0))
			return bad_value(r, key, kind_want(f->kind), v);
		*(int *)p = (int)i;
		return ZB_OK;
	case F_FLAG:
	case F_FLAG_OPT:
		if (json_is_boolean(v)) {
			*(int *)p = json_is_true(v);
			return ZB_OK;
		}
		if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)) {
			*(int *)p = (int)json_integer_value(v);
			return ZB_OK;
		}
		return bad_value(r, key, kind_want(f->kind), v);
	case F_STR:
		if (!json_is_string(v) || json_string_length(v) >= ZB_NAME_MAX)
			return bad_value(r, key, kind_want(f->kind), v);
		snprintf(p, ZB_NAME_MAX, "%s", json_string_value(v));
		return ZB_OK;
	}
	return zb_fail(r->err, ZB_E_INTERNAL, "%s: field kind %d unknown", r->path, (int)f->kind);
}

/* "gpu" + "." + "hbm_Bps", or just the key at top level. */
static void full_key(char *buf, size_t n, const char *prefix, const char *key)
{
	snprintf(buf, n, "%s%s%s", prefix, prefix[0] ? "." : "", key);
}

/* "name, h2d_Bps, ..." for an unknown-key message: the table's keys and the caller's. */
static void known_keys(const field *fields, int nf, const char *const *extra, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < nf && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", fields[i].key);
	for (int i = 0; extra && extra[i] && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, ", %s", extra[i]);
}

/* Fill base from obj by the field table. Keys in `skip` (NULL-terminated) belong to
 * the caller. Reports unknown keys, bad values and, unless have_base, missing
 * required fields. *present gets a bit per field found. */
static zb_status read_fields(rd *r, const json_t *obj, const char *prefix, const field *fields,
			     int nf, const char *const *skip, void *base, int have_base,
			     unsigned *present)
{
	const char *key;
	json_t *v;
	char fk[160];
	unsigned seen = 0;
	json_object_foreach((json_t *)obj, key, v) {
		int skipped = 0;
		for (int s = 0; skip && skip[s]; s++)
			if (strcmp(key, skip[s]) == 0)
				skipped = 1;
		if (skipped)
			continue;
		full_key(fk, sizeof fk, prefix, key);
		int i;
		for (i = 0; i < nf; i++)
			if (strcmp(key, fields[i].key) == 0)
				break;
		if (i == nf) {
			char known[640];
			known_keys(fields, nf, skip, known, sizeof known);
			return zb_fail(r->err, ZB_E_INPUT, "%s: unknown key '%s' (known: %s)", r->path, fk, known);
		}
		zb_status st = read_field(r, fk, &fields[i], v, base);
		if (st != ZB_OK)
			return st;
		seen |= 1u << i;
	}
	if (!have_base) {
		for (int i = 0; i < nf; i++) {
			if (fields[i].required && !(seen & (1u << i))) {
				full_key(fk, sizeof fk, prefix, fields[i].key);
				return zb_fail(r->err, ZB_E_INPUT, "%s: missing required key '%s'",
					       r->path, fk);
			}
		}
	}
	if (present)
		*present = seen;
	return ZB_OK;
}

typedef zb_status (*preset_fn)(const char *name, void *out, zb_error *err);

static zb_status link_preset(const char *n, void *o, zb_error *e) { return zb_preset_link(n, o, e); }
static zb_status gpu_preset(const char *n, void *o, zb_error *e) { return zb_preset_gpu(n, o, e); }
static zb_status cpu_preset(const char *n, void *o, zb_error *e) { return zb_preset_cpu(n, o, e); }
static zb_status model_preset(const char *n, void *o, zb_error *e) { return zb_preset_model(n, o, e); }
static zb_status fabric_preset(const char *n, void *o, zb_error *e) { return zb_preset_fabric(n, o, e); }

/* Look a preset up for key; its "unknown ..." message gets the file and key in front. */
static zb_status load_preset(rd *r, const char *key, const json_t *v, preset_fn fn, void *out)
{
	if (!json_is_string(v))
		return bad_value(r, key, "a preset name", v);
	zb_error e;
	if (fn(json_string_value(v), out, &e) != ZB_OK)
		return zb_fail(r->err, e.status, "%s: key '%s': %s", r->path, key, e.msg);
	return ZB_OK;
}

/* One part (link, gpu, cpu) or a model: a preset name, or an object with an optional
 * "preset" base. has_base: *out already holds a base (a machine preset's part) that
 * an object without its own "preset" overrides. */
static zb_status read_part(rd *r, const char *key, const json_t *v, const field *fields, int nf,
			   preset_fn fn, void *out, int has_base, unsigned *present)
{
	if (present)
		*present = 0;
	if (json_is_string(v))
		return load_preset(r, key, v, fn, out);
	if (!json_is_object(v))
		return bad_value(r, key, "a preset name or an object", v);
	const json_t *pv = json_object_get(v, "preset");
	if (pv) {
		char pk[160];
		full_key(pk, sizeof pk, key, "preset");
		zb_status st = load_preset(r, pk, pv, fn, out);
		if (st != ZB_OK)
			return st;
		has_base = 1;
	}
	static const char *const skip[] = {"preset", NULL};
	return read_fields(r, v, key, fields, nf, skip, out, has_base, present);
}

/* Open and parse; the top level must be an object. Caller json_decref()s. */
static zb_status load_json(rd *r, json_t **out)
{
	return zb_json_load_object(r->path, out, r->err);
}

/* The file's name without directories and ".json", for a default name. */
static void name_from_path(const char *path, char *name)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(b);
	if (n > 5 && strcmp(b + n - 5, ".json") == 0)
		n -= 5;
	if (n >= ZB_NAME_MAX)
		n = ZB_NAME_MAX - 1;
	memcpy(name, b, n);
	name[n] = '\0';
}

static zb_status prefixed(rd *r, zb_status st, const zb_error *e)
{
	return zb_fail(r->err, st, "%s: %s", r->path, e->msg);
}

zb_status zb_hw_load(const char *path, zb_hw *out, zb_error *err)
{
	rd r = {path, err};
	json_t *root;
	zb_status st = load_json(&r, &root);
	if (st != ZB_OK)
		return st;
	st = zb_hw_from_json(root, path, out, err);
	json_decref(root);
	return st;
}

/* An unknown key of a profile object: the message gets the keys it knows. */
static void profile_keys(zb_error *err, const char *object)
{
	char want[64];
	snprintf(want, sizeof want, "unknown key '%s.", object);
	if (!err || !strstr(err->msg, want) || strstr(err->msg, "(known:"))
		return;
	char list[768];
	size_t len = 0;
	list[0] = 0;
	if (!strcmp(object, "deepspeed")) {
		for (int i = 0; i < ZB_DS_NPARAM && len < sizeof list; i++)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s, ", zb_ds_param(i)->key);
		snprintf(list + len, sizeof list - len, "flash");
	} else { /* core/execprofile.h documents each */
		snprintf(list, sizeof list, "gemm.<batched|unaligned|flash>, kernel.<class>, gpu_adam, launch_s, "
			 "adam_thread, adam_mem, adam_task_s, starved, shared_gpu, shared_opt, h2d_queue, pageable_queue, "
			 "adam_copy, comm_gpu, comm_opt, comm_wait");
	}
	size_t m = strlen(err->msg);
	snprintf(err->msg + m, sizeof err->msg - m, " (known: %s)", list);
}

zb_status zb_hw_from_json(const void *obj, const char *path, zb_hw *out, zb_error *err)
{
	rd r = {path, err};
	json_t *root = (json_t *)obj;
	zb_status st;
	if (!json_is_object(root))
		return zb_fail(err, ZB_E_INPUT, "%s: hardware must be a JSON object", path);

	zb_hw hw;
	memset(&hw, 0, sizeof hw);
	hw.gpus_per_link = 1;
	hw.gpus_per_cpu = 1;
	int base = 0;
	const json_t *v;

	static const char *const top_keys[] = {"name", "preset", "link", "gpu", "cpu",
					       "gpus_per_link", "gpus_per_cpu", "deepspeed", "fabric", "executor",
					       "price_per_hour", NULL};
	const char *key;
	json_t *jv;
	json_object_foreach(root, key, jv) {
		int known = 0;
		for (int i = 0; top_keys[i]; i++)
			if (strcmp(key, top_keys[i]) == 0)
				known = 1;
		if (!known) {
			char list[400];
			size_t len = 0;
			for (int i = 0; top_keys[i] && len < sizeof list; i++)
				len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", top_keys[i]);
			st = zb_fail(err, ZB_E_INPUT, "%s: unknown key '%s' (known: %s)", path, key, list);
			goto out;
		}
	}

	if ((v = json_object_get(root, "preset"))) {
		zb_error e;
		if (!json_is_string(v)) {
			st = bad_value(&r, "preset", "a machine preset name", v);
			goto out;
		}
		if ((st = zb_preset_hw(json_string_value(v), &hw, &e)) != ZB_OK) {
			st = zb_fail(err, st, "%s: key 'preset': %s", path, e.msg);
			goto out;
		}
		base = 1;
	}
	if ((v = json_object_get(root, "name"))) {
		if (!json_is_string(v) || json_string_length(v) >= ZB_NAME_MAX) {
			st = bad_value(&r, "name", kind_want(F_STR), v);
			goto out;
		}
		snprintf(hw.name, sizeof hw.name, "%s", json_string_value(v));
	} else if (!base) {
		name_from_path(path, hw.name);
	}

	/* gpu first: its builtin_link is the link when the file gives none. */
	static const struct {
		const char *key;
		const field *fields;
		int nf;
		preset_fn fn;
		size_t off;
	} parts[] = {
		{"gpu", gpu_fields, NFIELDS(gpu_fields), gpu_preset, offsetof(zb_hw, gpu)},
		{"cpu", cpu_fields, NFIELDS(cpu_fields), cpu_preset, offsetof(zb_hw, cpu)},
		{"link", link_fields, NFIELDS(link_fields), link_preset, offsetof(zb_hw, link)},
	};
	for (int i = 0; i < 3; i++) {
		void *dst = (char *)&hw + parts[i].off;
		v = json_object_get(root, parts[i].key);
		if (v) {
			st = read_part(&r, parts[i].key, v, parts[i].fields, parts[i].nf,
				       parts[i].fn, dst, base, NULL);
			if (st != ZB_OK)
				goto out;
			continue;
		}
		if (base)
			continue;
		if (parts[i].fn == link_preset && hw.gpu.builtin_link[0]) {
			zb_error e;
			if ((st = zb_preset_link(hw.gpu.builtin_link, &hw.link, &e)) != ZB_OK) {
				st = zb_fail(err, st, "%s: key 'gpu.builtin_link': %s", path, e.msg);
				goto out;
			}
			continue;
		}
		st = zb_fail(err, ZB_E_INPUT, "%s: missing required key '%s'", path,
			     parts[i].key);
		goto out;
	}

	static const field counts[] = {
		FLD(zb_hw, gpus_per_link, F_INT_POS, 0),
		FLD(zb_hw, gpus_per_cpu, F_INT_POS, 0),
		FLD(zb_hw, price_per_hour, F_NONNEG_OPT, 0),
	};
	for (int i = 0; i < 3; i++)
		if ((v = json_object_get(root, counts[i].key)) &&
		    (st = read_field(&r, counts[i].key, &counts[i], v, &hw)) != ZB_OK)
			goto out;

	/* between ranks: a fabric preset name or an object (over the machine's, if any) */
	if ((v = json_object_get(root, "fabric")) &&
	    (st = read_part(&r, "fabric", v, fabric_fields, NFIELDS(fabric_fields), fabric_preset, &hw.fabric,
			    1, NULL)) != ZB_OK)
		goto out;

	/* the DeepSpeed framework profile (dsprofile.h), when calibrated */
	if ((v = json_object_get(root, "deepspeed")) &&
	    (st = zb_ds_profile_from_json(v, path, &hw.ds, err)) != ZB_OK) {
		profile_keys(err, "deepspeed");
		goto out;
	}
	/* the executor profile (execprofile.h), when calibrated */
	if ((v = json_object_get(root, "executor")) &&
	    (st = zb_exec_profile_from_json(v, path, &hw.gpu.exec, err)) != ZB_OK) {
		profile_keys(err, "executor");
		goto out;
	}

	zb_error e;
	if ((st = zb_hw_validate(&hw, &e)) != ZB_OK) {
		st = prefixed(&r, st, &e);
		goto out;
	}
	*out = hw;
	st = ZB_OK;
out:
	return st;
}

zb_status zb_model_from_json(const void *obj, const char *path, zb_model *out, zb_error *err)
{
	rd r = {path, err};
	const json_t *root = obj;
	if (!json_is_object(root))
		return zb_fail(err, ZB_E_INPUT, "%s: a model must be a JSON object", path);
	zb_model m;
	memset(&m, 0, sizeof m);
	unsigned present = 0;
	int from_preset = json_object_get(root, "preset") != NULL;
	zb_status st = read_part(&r, "", root, model_fields, NFIELDS(model_fields), model_preset, &m, 0,
				 &present);
	if (st != ZB_OK)
		return st;
	if (!from_preset) {
		/* model_fields[0] is name, [4] kv_heads: defaults when absent. */
		if (!(present & 1u))
			name_from_path(path, m.name);
		if (!(present & (1u << 4)))
			m.kv_heads = m.heads;
	}
	zb_error e;
	if ((st = zb_model_validate(&m, &e)) != ZB_OK)
		return prefixed(&r, st, &e);
	*out = m;
	return ZB_OK;
}

zb_status zb_model_load(const char *path, zb_model *out, zb_error *err)
{
	rd r = {path, err};
	json_t *root;
	zb_status st = load_json(&r, &root);
	if (st != ZB_OK)
		return st;
	st = zb_model_from_json(root, path, out, err);
	json_decref(root);
	return st;
}

/* ---- writing --------------------------------------------------------------- */

/* Digits %.*g needs for x to read back as the same double. */
static int digits_needed(double x)
{
	char buf[40];
	for (int p = 1; p < 17; p++) {
		snprintf(buf, sizeof buf, "%.*g", p, x);
		if (strtod(buf, NULL) == x)
			return p;
	}
	return 17;
}

/* The reals of one document, to choose one precision for all of them. */
typedef struct wr {
	double reals[64];
	int n;
} wr;

static json_t *put_real(wr *w, double x)
{
	if (w->n < (int)(sizeof w->reals / sizeof w->reals[0]))
		w->reals[w->n++] = x;
	return json_real(x);
}

static void put_fields(wr *w, json_t *obj, const field *fields, int nf, const void *base)
{
	for (int i = 0; i < nf; i++) {
		const char *p = (const char *)base + fields[i].off;
		const field *f = &fields[i];
		switch (f->kind) {
		case F_POS:
		case F_FRAC:
		case F_NONNEG: {
			json_object_set_new(obj, f->key, put_real(w, *(const double *)p));
			break;
		}
		case F_INT_POS:
		case F_INT_NONNEG:
			json_object_set_new(obj, f->key, json_integer(*(const int *)p));
			break;
		case F_FLAG:
			json_object_set_new(obj, f->key, json_boolean(*(const int *)p));
			break;
		case F_FLAG_OPT:
			if (*(const int *)p)
				json_object_set_new(obj, f->key, json_true());
			break;
		case F_NONNEG_OPT:
			if (*(const double *)p > 0)
				json_object_set_new(obj, f->key, put_real(w, *(const double *)p));
			break;
		case F_INT_OPT:
			if (*(const int *)p)
				json_object_set_new(obj, f->key, json_integer(*(const int *)p));
			break;
		case F_STR:
			/* builtin_link "" means none: leave it out; name is always written. */
			if (p[0] || strcmp(f->key, "name") == 0)
				json_object_set_new(obj, f->key, json_string(p));
			break;
		}
	}
}

static json_t *hw_json(wr *w, const zb_hw *hw)
{
	json_t *o = json_object(), *l = json_object(), *g = json_object(), *c = json_object();
	json_object_set_new(o, "name", json_string(hw->name));
	put_fields(w, l, link_fields, NFIELDS(link_fields), &hw->link);
	put_fields(w, g, gpu_fields, NFIELDS(gpu_fields), &hw->gpu);
	put_fields(w, c, cpu_fields, NFIELDS(cpu_fields), &hw->cpu);
	json_object_set_new(o, "link", l);
	json_object_set_new(o, "gpu", g);
	json_object_set_new(o, "cpu", c);
	json_object_set_new(o, "gpus_per_link", json_integer(hw->gpus_per_link));
	json_object_set_new(o, "gpus_per_cpu", json_integer(hw->gpus_per_cpu));
	if (hw->price_per_hour > 0) /* not priced: files and stored configurations as before */
		json_object_set_new(o, "price_per_hour", put_real(w, hw->price_per_hour));
	if (hw->fabric.intra_bus_Bps > 0 || hw->fabric.inter_bus_Bps > 0) { /* none: one-GPU files unchanged */
		json_t *f = json_object();
		put_fields(w, f, fabric_fields, NFIELDS(fabric_fields), &hw->fabric);
		json_object_set_new(o, "fabric", f);
	}
	if (hw->ds.set)
		json_object_set_new(o, "deepspeed", zb_ds_profile_to_json(&hw->ds));
	if (hw->gpu.exec.set) /* a preset's (2) as its name, "h200" */
		json_object_set_new(o, "executor", zb_exec_profile_to_json(&hw->gpu.exec));
	return o;
}

static json_t *model_json(wr *w, const zb_model *m)
{
	json_t *o = json_object();
	put_fields(w, o, model_fields, NFIELDS(model_fields), m);
	return o;
}

/* Precision flag for json_dumps: the fewest digits with which every real of the
 * document reads back exactly, so preset figures stay short ("0.87" rather than
 * "0.86999999999999999", "8.5e14" rather than "850000000000000.0"). A precision one
 * value needs is not always enough for another written with more digits than it
 * needs (near powers of two), hence the check of all of them; 17 always works. */
static size_t precision_flag(const wr *w)
{
	int p = 1;
	for (int i = 0; i < w->n; i++) {
		int need = digits_needed(w->reals[i]);
		if (need > p)
			p = need;
	}
	for (; p < 17; p++) {
		int all = 1;
		char buf[40];
		for (int i = 0; i < w->n && all; i++) {
			snprintf(buf, sizeof buf, "%.*g", p, w->reals[i]);
			all = strtod(buf, NULL) == w->reals[i];
		}
		if (all)
			break;
	}
	return JSON_REAL_PRECISION(p);
}

static zb_status save_atomic(const char *path, json_t *root, const wr *w, zb_error *err)
{
	char *text = json_dumps(root, JSON_INDENT(2) | precision_flag(w));
	json_decref(root);
	if (!text)
		return zb_fail(err, ZB_E_NOMEM, "cannot format %s: out of memory", path);

	/* a temporary beside the file, renamed over it (a write error fails the commit) */
	zb_outfile o;
	zb_status st = zb_outfile_open(&o, path, err);
	if (!st) {
		fputs(text, o.f);
		fputc('\n', o.f);
		st = zb_outfile_commit(&o, err);
	}
	free(text);
	return st;
}

zb_status zb_hw_save(const char *path, const zb_hw *hw, zb_error *err)
{
	wr w = {0};
	return save_atomic(path, hw_json(&w, hw), &w, err);
}

zb_status zb_model_save(const char *path, const zb_model *m, zb_error *err)
{
	wr w = {0};
	return save_atomic(path, model_json(&w, m), &w, err);
}

static json_t *policy_json(wr *w, const zb_config *c)
{
	const zb_policy *p = &c->policy;
	json_t *pol = json_object();
	json_object_set_new(pol, "kind", json_string(zb_policy_name(p->kind)));
	json_object_set_new(pol, "ratio", put_real(w, p->ratio));
	json_object_set_new(pol, "offload_param", json_boolean(p->offload_param));
	json_object_set_new(pol, "prefetch_layers", json_integer(p->prefetch_layers));
	json_object_set_new(pol, "ckpt", json_string(zb_ckpt_name(p->ckpt)));
	json_object_set_new(pol, "gas", json_integer(p->gas));
	json_object_set_new(pol, "micro_batch", json_integer(p->micro_batch));
	json_object_set_new(pol, "seq", json_integer(p->seq));
	json_object_set_new(pol, "dtype", json_string(zb_dtype_name(p->dtype)));
	json_object_set_new(pol, "pageable", json_boolean(p->pageable));
	json_object_set_new(pol, "bucket_params", json_integer((json_int_t)p->bucket_params));
	json_object_set_new(pol, "cpu_threads", json_integer(p->cpu_threads));
	if (p->gpus > 1 || p->nodes > 1) { /* several ranks; one GPU's text unchanged */
		json_object_set_new(pol, "gpus", json_integer(p->gpus));
		json_object_set_new(pol, "nodes", json_integer(p->nodes));
		if (c->framework != ZB_FW_DEEPSPEED && p->zero_stage)
			json_object_set_new(pol, "zero_stage", json_integer(p->zero_stage));
	}
	/* only when not the default, so earlier stored configurations read the same */
	if (p->attention != ZB_ATTN_EAGER)
		json_object_set_new(pol, "attention", json_string(p->attention == ZB_ATTN_FLASH ? "flash" : "eager"));
	if (p->link_rate_Bps > 0)
		json_object_set_new(pol, "link_rate_Bps", put_real(w, p->link_rate_Bps));
	if (c->framework == ZB_FW_DEEPSPEED) {
		json_object_set_new(pol, "zero_stage", json_integer(p->zero_stage));
		json_object_set_new(pol, "sub_group_size", json_integer((json_int_t)p->sub_group_size));
	}
	return pol;
}

/* The policy object of zb_config_to_json back into p (zb_policy_defaults first). */
static zb_status policy_from_json(const json_t *o, zb_policy *p, zb_error *err)
{
	zb_policy_defaults(p);
	if (!json_is_object(o))
		return zb_fail(err, ZB_E_INPUT, "stored configuration: 'policy' must be an object");
	const json_t *v;
	zb_status st;
	if ((v = json_object_get(o, "kind")) && (st = zb_policy_parse(json_string_value(v), &p->kind, err)))
		return st;
	if ((v = json_object_get(o, "ckpt")) && (st = zb_ckpt_parse(json_string_value(v), &p->ckpt, err)))
		return st;
	if ((v = json_object_get(o, "dtype")) && (st = zb_dtype_parse(json_string_value(v), &p->dtype, err)))
		return st;
	if ((v = json_object_get(o, "attention")))
		p->attention = !strcmp(json_string_value(v) ? json_string_value(v) : "", "flash") ? ZB_ATTN_FLASH : ZB_ATTN_EAGER;
	if ((v = json_object_get(o, "ratio")))
		p->ratio = json_number_value(v);
	if ((v = json_object_get(o, "link_rate_Bps")))
		p->link_rate_Bps = json_number_value(v);
	const struct { const char *k; int *f; } ints[] = {
		{ "offload_param", &p->offload_param }, { "prefetch_layers", &p->prefetch_layers },
		{ "gas", &p->gas }, { "micro_batch", &p->micro_batch }, { "seq", &p->seq },
		{ "pageable", &p->pageable }, { "cpu_threads", &p->cpu_threads }, { "gpus", &p->gpus },
		{ "nodes", &p->nodes }, { "zero_stage", &p->zero_stage },
	};
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
		if ((v = json_object_get(o, ints[i].k)))
			*ints[i].f = json_is_boolean(v) ? json_is_true(v) : (int)json_integer_value(v);
	if ((v = json_object_get(o, "bucket_params")))
		p->bucket_params = json_integer_value(v);
	if ((v = json_object_get(o, "sub_group_size")))
		p->sub_group_size = json_integer_value(v);
	return ZB_OK;
}

zb_status zb_config_from_json(const char *text, zb_config *out, zb_error *err)
{
	json_error_t je;
	json_t *root = json_loads(text ? text : "", 0, &je);
	if (!root)
		return zb_fail(err, ZB_E_INPUT, "stored configuration: bad JSON (%s)", je.text);
	zb_config c;
	memset(&c, 0, sizeof c);
	c.framework = json_object_get(root, "framework") ? ZB_FW_DEEPSPEED : ZB_FW_ZBENCH;
	zb_status st = zb_hw_from_json(json_object_get(root, "hw"), "stored configuration", &c.hw, err);
	if (!st)
		st = zb_model_from_json(json_object_get(root, "model"), "stored model", &c.model, err);
	if (!st)
		st = policy_from_json(json_object_get(root, "policy"), &c.policy, err);
	c.steps = (int)json_integer_value(json_object_get(root, "steps"));
	json_decref(root);
	if (!st)
		st = zb_config_validate(&c, err);
	if (!st)
		*out = c;
	return st;
}

char *zb_config_to_json(const zb_config *c)
{
	wr w = {0};
	json_t *root = json_object();
	json_object_set_new(root, "hw", hw_json(&w, &c->hw));
	json_object_set_new(root, "model", model_json(&w, &c->model));
	if (c->framework == ZB_FW_DEEPSPEED)
		json_object_set_new(root, "framework", json_string("deepspeed"));
	json_object_set_new(root, "policy", policy_json(&w, c));
	json_object_set_new(root, "steps", json_integer(c->steps));

	char *text = json_dumps(root, JSON_COMPACT | precision_flag(&w));
	json_decref(root);
	return text;
}

char *zb_config_json_part(const zb_config *c, zb_config_part part, int precision, zb_json_digits *digits)
{
	wr w = {0};
	json_t *o = part == ZB_PART_HW ? hw_json(&w, &c->hw)
		  : part == ZB_PART_MODEL ? model_json(&w, &c->model) : policy_json(&w, c);
	if (digits) {
		digits->least = 1;
		digits->ok = 0;
		for (int i = 0; i < w.n; i++) {
			int need = digits_needed(w.reals[i]);
			if (need > digits->least)
				digits->least = need;
		}
		char buf[40];
		for (int p = 1; p < 17; p++) {
			int all = 1;
			for (int i = 0; i < w.n && all; i++) {
				snprintf(buf, sizeof buf, "%.*g", p, w.reals[i]);
				all = strtod(buf, NULL) == w.reals[i];
			}
			if (all)
				digits->ok |= 1u << p;
		}
	}
	char *text = precision > 0 ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(precision)) : NULL;
	json_decref(o);
	return text;
}

int zb_json_digits_join(const zb_json_digits *parts, int n)
{
	int p = 1;
	unsigned ok = ~0u;
	for (int i = 0; i < n; i++) {
		if (parts[i].least > p)
			p = parts[i].least;
		ok &= parts[i].ok;
	}
	for (; p < 17; p++) /* as precision_flag: the first that suits every real */
		if (ok & (1u << p))
			return p;
	return 17;
}
