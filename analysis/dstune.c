/* dstune.c - the DeepSpeed knob search; see dstune.h. */
#include "analysis/dstune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/outfile.h"

#include "inputs/dsconfig.h"
#include "sim/predict.h"
#include "schedules/deepspeed.h"

void zb_ds_knobs_of(const zb_config *c, zb_ds_knobs *k)
{
	const zb_policy *p = &c->policy;
	memset(k, 0, sizeof *k);
	k->stage = zb_ds_stage(c);
	k->offload = p->kind != ZB_POLICY_NONE;
	k->ratio = k->offload ? p->ratio : 0;
	k->ratio_asked = k->ratio;
	k->sub_group = zb_ds_sub_group(c);
	k->overlap = p->kind == ZB_POLICY_OVERLAP;
	k->pin = !p->pageable;
	k->oparam = p->offload_param;
	k->ckpt = p->ckpt;
	k->micro_batch = p->micro_batch;
	k->gas = p->gas;
}

void zb_ds_knobs_apply(const zb_ds_knobs *k, zb_config *c)
{
	zb_policy *p = &c->policy;
	/* stage 3 from a stage 1/2 input: the prefetch window of DeepSpeed's default
	 * stage3_prefetch_bucket_size (a stage 3 input's was planned from its config),
	 * as `predict --ds-config` reads the written config */
	if (k->stage == 3 && zb_ds_stage(c) != 3)
		p->prefetch_layers = zb_ds_prefetch_layers(&c->model, ZB_DS_PREFETCH_DEFAULT);
	c->framework = ZB_FW_DEEPSPEED;
	p->zero_stage = k->stage;
	p->kind = !k->offload ? ZB_POLICY_NONE : k->overlap ? ZB_POLICY_OVERLAP : ZB_POLICY_OFFLOAD;
	p->ratio = k->offload ? k->ratio : 1.0;
	p->sub_group_size = k->sub_group;
	p->pageable = !k->pin;
	p->offload_param = k->oparam;
	p->ckpt = (zb_ckpt)k->ckpt;
	p->micro_batch = k->micro_batch;
	p->gas = k->gas;
}

static int knobs_changed(const zb_ds_knobs *a, const zb_ds_knobs *b)
{
	return (a->stage != b->stage) + (a->offload != b->offload) + (a->ratio != b->ratio) +
	       (a->sub_group != b->sub_group) + (a->overlap != b->overlap) + (a->pin != b->pin) +
	       (a->oparam != b->oparam) + (a->ckpt != b->ckpt) + (a->micro_batch != b->micro_batch) +
	       (a->gas != b->gas);
}

typedef struct list {
	zb_ds_candidate *v;
	int n, cap, tried;
	zb_ds_knobs input; /* the input configuration's knobs */
} list;

static void try_knobs(list *l, const zb_config *base, const zb_ds_knobs *k)
{
	zb_config c = *base;
	zb_ds_knobs_apply(k, &c);
	l->tried++;
	zb_memory mem;
	zb_ds_memory_estimate(&c, &mem);
	if (!mem.fits)
		return;
	zb_prediction p;
	zb_error err;
	if (zb_predict(&p, &c, &err))
		return; /* a combination DeepSpeed refuses */
	if (p.simulated) {
		if (l->n == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 256;
			l->v = zb_xrealloc(l->v, sizeof *l->v * (size_t)l->cap);
		}
		zb_ds_candidate *d = &l->v[l->n++];
		d->k = *k;
		d->changed = knobs_changed(k, &l->input);
		d->step_s = p.res.step_time_s;
		d->tokens_per_s = p.res.tokens_per_s;
		d->gpu_B = p.mem.gpu_bytes;
		d->host_B = p.mem.host_bytes;
	}
	zb_prediction_free(&p);
}

/* Faster first; of equal predictions the one that changes fewer of the input's knobs (a
 * knob the model sees no gain in, such as overlap_comm beside stage 2 offload, stays). */
static int by_time(const void *a, const void *b)
{
	const zb_ds_candidate *x = a, *y = b;
	if (x->step_s != y->step_s)
		return x->step_s < y->step_s ? -1 : 1;
	return (x->changed > y->changed) - (x->changed < y->changed);
}


/* Effective Twin-Flow ratios of whole sub-groups: the distinct splits of asking
 * 1, 0.9, ..., 0.1 (DeepSpeed's rule, zb_ds_twinflow_split). */
static int ratios(const zb_model *m, int64_t sg, double *out, double *asked)
{
	int n = 0;
	for (int i = 10; i >= 1; i--) {
		zb_ds_twinflow tf;
		zb_ds_twinflow_split(m, sg, i / 10.0, &tf);
		if (tf.cpu_sub_groups == 0 || (n && fabs(out[n - 1] - tf.ratio) < 1e-9))
			continue;
		asked[n] = i / 10.0;
		out[n++] = tf.ratio;
	}
	return n;
}

zb_status zb_ds_tune(const zb_config *base, zb_ds_candidate **out, int *n, int *tried, zb_error *err)
{
	zb_config b = *base;
	b.framework = ZB_FW_DEEPSPEED;
	zb_status st = zb_config_validate(&b, err);
	if (st)
		return st;
	int batch = base->policy.micro_batch * base->policy.gas;
	static const int64_t sgs[] = { 100000000, 200000000, 500000000, 1000000000 };
	list l = { 0 };
	zb_ds_knobs_of(&b, &l.input);
	for (int mb = 1; mb <= batch && mb <= 64; mb++) {
		if (batch % mb)
			continue;
		for (int ck = 0; ck < ZB_CKPT_COUNT; ck++) {
			zb_ds_knobs k = { .micro_batch = mb, .gas = batch / mb, .ckpt = ck, .pin = 1, .ratio = 1,
					  .ratio_asked = 1 };
			/* no offload: stage 2 and 3 */
			for (k.stage = 2; k.stage <= 3; k.stage++)
				try_knobs(&l, &b, &k);
			k.offload = 1;
			for (k.pin = 0; k.pin <= 1; k.pin++) {
				k.stage = 2, k.ratio = k.ratio_asked = 1, k.oparam = 0, k.sub_group = sgs[3];
				for (k.overlap = 0; k.overlap <= 1; k.overlap++)
					try_knobs(&l, &b, &k);
				k.stage = 3, k.overlap = 1;
				for (size_t s = 0; s < sizeof sgs / sizeof sgs[0]; s++) {
					double r[10], asked[10];
					int nr = ratios(&b.model, sgs[s], r, asked);
					k.sub_group = sgs[s];
					for (int i = 0; i < nr; i++) {
						k.ratio = r[i];
						k.ratio_asked = asked[i];
						for (k.oparam = 0; k.oparam <= 1; k.oparam++)
							try_knobs(&l, &b, &k);
					}
					k.oparam = 0;
				}
			}
		}
	}
	qsort(l.v, (size_t)l.n, sizeof *l.v, by_time);
	*out = l.v;
	*n = l.n;
	*tried = l.tried;
	return ZB_OK;
}

int zb_ds_tune_keep(zb_ds_candidate *v, int n, const zb_ds_knobs *in, int keep_offload, int keep_stage, int keep_ckpt)
{
	int m = 0;
	for (int i = 0; i < n; i++) {
		const zb_ds_knobs *k = &v[i].k;
		if (keep_offload && !(k->offload && k->ratio >= in->ratio - 1e-9))
			continue;
		if ((keep_stage && k->stage != in->stage) || (keep_ckpt && k->ckpt != in->ckpt))
			continue;
		v[m++] = v[i];
	}
	return m;
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

zb_status zb_ds_tuned_write(const char *in, const char *out, const zb_ds_knobs *k, zb_error *err)
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
