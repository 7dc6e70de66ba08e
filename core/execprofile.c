/* execprofile.c - the executor profile's defaults, checks and JSON; see execprofile.h. */
#include "core/execprofile.h"

#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

const char *zb_gemm_group_name(int g)
{
	static const char *n[] = { "dense", "batched", "unaligned", "flash" };
	return g >= 0 && g < ZB_GEMM_GROUPS ? n[g] : "?";
}

const char *zb_kernel_class_name(int k)
{
	static const char *n[] = { "stream", "softmax_fwd", "softmax_bwd", "embed_fwd", "embed_bwd", "loss" };
	return k >= 0 && k < ZB_KERN_CLASSES ? n[k] : "?";
}

static zb_exec_profile fit_h200, neutral;
static pthread_once_t fit_once = PTHREAD_ONCE_INIT;

static void fill_neutral(zb_exec_profile *p)
{
	memset(p, 0, sizeof *p);
	for (int g = 0; g < ZB_GEMM_GROUPS; g++)
		p->gemm[g] = 1;
	for (int k = 0; k < ZB_KERN_CLASSES; k++)
		p->kernel[k] = 1;
	p->gpu_adam = 1;
}

/* The h200 preset's profile: the "executor" object of hw/h200-machine-executor.json, which
 * the build turns into the string zb_h200_executor_json (Makefile, build/gen/): one source
 * for the preset and the file. A build whose copy does not read is a build error, caught
 * by test_presets; here it leaves the neutral profile. */
extern const char zb_h200_executor_json[];

static void fill_profiles(void)
{
	fill_neutral(&neutral);
	fill_neutral(&fit_h200);
	json_error_t je;
	json_t *root = json_loads(zb_h200_executor_json, 0, &je);
	zb_exec_profile p;
	zb_error err;
	if (root && !zb_exec_profile_from_json(json_object_get(root, "executor"), "hw/h200-machine-executor.json", &p,
					     &err)) {
		fit_h200 = p;
		fit_h200.set = 2;
	}
	json_decref(root);
}

void zb_exec_profile_h200(zb_exec_profile *p)
{
	pthread_once(&fit_once, fill_profiles);
	*p = fit_h200;
}

void zb_exec_profile_neutral(zb_exec_profile *p)
{
	pthread_once(&fit_once, fill_profiles);
	*p = neutral;
}

const zb_exec_profile *zb_exec_profile_of(const zb_exec_profile *maybe, zb_exec_profile *scratch)
{
	(void)scratch;
	if (maybe && maybe->set)
		return maybe;
	pthread_once(&fit_once, fill_profiles);
	return &neutral;
}

static int factor_ok(double x) { return isfinite(x) && x >= 0 && x <= 10; }

zb_status zb_exec_profile_validate(const zb_exec_profile *p, zb_error *err)
{
	for (int g = 0; g < ZB_GEMM_GROUPS; g++)
		if (!factor_ok(p->gemm[g]))
			return zb_fail(err, ZB_E_INPUT, "executor.gemm.%s %g out of range [0, 10]", zb_gemm_group_name(g),
				       p->gemm[g]);
	for (int k = 0; k < ZB_KERN_CLASSES; k++)
		if (!factor_ok(p->kernel[k]))
			return zb_fail(err, ZB_E_INPUT, "executor.kernel.%s %g out of range [0, 10]",
				       zb_kernel_class_name(k), p->kernel[k]);
	const struct { const char *k; double v, hi; } one[] = {
		{ "gpu_adam", p->gpu_adam, 10 },
		{ "launch_s", p->launch_s, 1 },           { "adam_thread", p->adam_thread, 10 },
		{ "adam_mem", p->adam_mem, 10 },          { "adam_task_s", p->adam_task_s, 1 },
		{ "shared_gpu", p->shared_gpu, 1 },
		{ "shared_opt", p->shared_opt, 1 },     { "h2d_queue", p->h2d_queue, 10 },
		{ "comm_gpu", p->comm_gpu, 1 },         { "comm_opt", p->comm_opt, 1 },
		{ "adam_copy", p->adam_copy, 10 },
		{ "starved", p->starved, 1 },
		{ "pageable_queue", p->pageable_queue, 10 },
	};
	for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
		if (!isfinite(one[i].v) || one[i].v < 0 || one[i].v > one[i].hi)
			return zb_fail(err, ZB_E_INPUT, "executor.%s %g out of range [0, %g]", one[i].k, one[i].v,
				       one[i].hi);
	return ZB_OK;
}

/* A key of the gemm or kernel table into its slot; NULL when unknown. */
static double *gemm_slot(zb_exec_profile *p, const char *key)
{
	for (int g = 0; g < ZB_GEMM_GROUPS; g++)
		if (!strcmp(zb_gemm_group_name(g), key))
			return &p->gemm[g];
	return NULL;
}

static double *kernel_slot(zb_exec_profile *p, const char *key)
{
	for (int k = 0; k < ZB_KERN_CLASSES; k++)
		if (!strcmp(zb_kernel_class_name(k), key))
			return &p->kernel[k];
	return NULL;
}

static zb_status read_table(const json_t *o, const char *path, const char *name, zb_exec_profile *p,
			    double *(*slot)(zb_exec_profile *, const char *), zb_error *err)
{
	if (!json_is_object(o))
		return zb_fail(err, ZB_E_INPUT, "%s: key 'executor.%s' must be an object", path, name);
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)o, key, v) {
		double *d = slot(p, key);
		if (!d && strchr(key, '_') && slot == gemm_slot) /* "dense_fwd": per pass, as earlier files */
			return zb_fail(err, ZB_E_INPUT, "%s: key 'executor.gemm.%s' is no longer a factor (now one per "
				       "group: dense, batched, unaligned, flash): refit with zbench calibrate --from-db",
				       path, key);
		if (!d)
			return zb_fail(err, ZB_E_INPUT, "%s: unknown key 'executor.%s.%s' (known: %s)", path, name, key,
				       slot == gemm_slot ? "dense, batched, unaligned, flash"
							 : "stream, softmax_fwd, softmax_bwd, embed_fwd, embed_bwd, loss");
		if (!json_is_number(v))
			return zb_fail(err, ZB_E_INPUT, "%s: key 'executor.%s.%s' must be a number", path, name, key);
		*d = json_number_value(v);
	}
	return ZB_OK;
}

/* The scalar factors, in the order files hold them. */
static const struct { const char *key; size_t off; } scalars[] = {
#define S(f) { #f, offsetof(zb_exec_profile, f) }
	S(gpu_adam),   S(launch_s),  S(adam_thread),    S(adam_mem),  S(adam_task_s), S(starved),
	S(shared_gpu), S(shared_opt), S(h2d_queue),     S(pageable_queue), S(adam_copy), S(comm_gpu),
	S(comm_opt),
#undef S
};

/* Keys of earlier files that are no longer factors: what replaced each. */
static const struct { const char *key, *now; } removed[] = {
	{ "gemm_half_dim", "the GPU's gpu.gemm_half_dim (one value per GPU)" },
	{ "starved_s", "starved, the same starvation as the GPU's rate" },
	{ "adam_launch", "a count: one core of the CPU's to the GPU's launches" },
	{ "paced_h2d", "the asked --link-rate: the pacer's plan delivers it (exec/pacing.h)" },
	{ "paced_d2h", "the asked --link-rate: the pacer's plan delivers it (exec/pacing.h)" },
	{ "paced_gpu", "nothing: it did not lower the held-out error (docs/model.md)" },
	{ "adam_gap_s", "nothing: it did not lower the held-out error (docs/model.md)" },
};

static double *scalar_slot(zb_exec_profile *p, const char *key)
{
	for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
		if (!strcmp(key, scalars[i].key))
			return (double *)((char *)p + scalars[i].off);
	return NULL;
}

/* comm_wait: a model option, true | false (or 0 | 1, as earlier files wrote it). */
static zb_status read_comm_wait(const json_t *v, const char *path, zb_exec_profile *p, zb_error *err)
{
	if (json_is_boolean(v)) {
		p->comm_wait = json_is_true(v);
		return ZB_OK;
	}
	double d = json_is_number(v) ? json_number_value(v) : -1;
	if (d != 0 && d != 1)
		return zb_fail(err, ZB_E_INPUT, "%s: key 'executor.comm_wait' must be true or false", path);
	p->comm_wait = d == 1;
	return ZB_OK;
}

static zb_status read_key(const char *key, json_t *v, const char *path, zb_exec_profile *p, zb_error *err)
{
	if (!strcmp(key, "gemm") || !strcmp(key, "kernel"))
		return read_table(v, path, key, p, key[0] == 'g' ? gemm_slot : kernel_slot, err);
	if (!strcmp(key, "comm_wait"))
		return read_comm_wait(v, path, p, err);
	for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++)
		if (!strcmp(key, removed[i].key))
			return zb_fail(err, ZB_E_INPUT, "%s: key 'executor.%s' is no longer a factor (now %s): refit with "
				       "zbench calibrate --from-db", path, key, removed[i].now);
	double *d = scalar_slot(p, key);
	if (!d)
		return zb_fail(err, ZB_E_INPUT, "%s: unknown key 'executor.%s'", path, key);
	if (!json_is_number(v))
		return zb_fail(err, ZB_E_INPUT, "%s: key 'executor.%s' must be a number", path, key);
	*d = json_number_value(v);
	return ZB_OK;
}

zb_status zb_exec_profile_from_json(const void *obj, const char *path, zb_exec_profile *out, zb_error *err)
{
	const json_t *o = obj;
	zb_exec_profile p;
	if (json_is_string(o) && !strcmp(json_string_value(o), "h200")) { /* the h200 preset's */
		zb_exec_profile_h200(out);
		return ZB_OK;
	}
	fill_neutral(&p); /* not zb_exec_profile_neutral: the preset's own loading comes here */
	p.set = 1;
	if (!json_is_object(o))
		return zb_fail(err, ZB_E_INPUT, "%s: key 'executor' must be an object or \"h200\"", path);
	const char *key;
	json_t *v;
	zb_status st;
	json_object_foreach((json_t *)o, key, v)
		if ((st = read_key(key, v, path, &p, err)))
			return st;
	zb_error e;
	if (zb_exec_profile_validate(&p, &e))
		return zb_fail(err, ZB_E_INPUT, "%s: %s", path, e.msg);
	*out = p;
	return ZB_OK;
}

void *zb_exec_profile_to_json(const zb_exec_profile *p)
{
	if (p->set == 2) /* a preset's: its name reads back the same */
		return json_string("h200");
	json_t *o = json_object(), *g = json_object(), *k = json_object();
	for (int a = 0; a < ZB_GEMM_GROUPS; a++)
		if (p->gemm[a] != 1) /* only the fitted ones */
			json_object_set_new(g, zb_gemm_group_name(a), json_real(p->gemm[a]));
	json_object_set_new(o, "gemm", g);
	for (int c = 0; c < ZB_KERN_CLASSES; c++)
		if (p->kernel[c] != 1)
			json_object_set_new(k, zb_kernel_class_name(c), json_real(p->kernel[c]));
	json_object_set_new(o, "kernel", k);
	for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
		double v = *(const double *)((const char *)p + scalars[i].off);
		if (v != 0) /* 0: the term is off (the plain model's) */
			json_object_set_new(o, scalars[i].key, json_real(v));
	}
	if (p->comm_wait)
		json_object_set_new(o, "comm_wait", json_true());
	return o;
}
