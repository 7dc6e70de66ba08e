/* fuzz_ds_tasks.c - the schedule's size estimate (core/limits.h) against the
 * schedules built, DeepSpeed's above all: the input's bytes choose a model shape
 * and the policy (framework, ZeRO stage, offload, Twin-Flow ratio, checkpointing,
 * parameter offload, ranks, gas, sub-group size, steps). An estimate below the
 * tasks built, or a schedule built past the limit, aborts. */
#include "fuzz/fuzz_common.h"
#include "core/graph.h"
#include "core/dsprofile.h"
#include "schedules/framework.h"

typedef struct bytes {
	const uint8_t *p;
	size_t n;
} bytes;

/* The next byte (0 past the end). */
static unsigned take(bytes *b)
{
	if (!b->n)
		return 0;
	b->n--;
	return *b->p++;
}

static void shape(bytes *b, zb_model *m)
{
	m->heads = 1 + (int)(take(b) % 16);
	m->kv_heads = (take(b) & 1) && m->heads % 2 == 0 ? m->heads / 2 : m->heads; /* grouped-query */
	m->hidden = m->heads * (8 + 8 * (int)(take(b) % 16));
	m->layers = 1 + (int)(take(b) % 48);
	m->ffn = m->hidden * (1 + (int)(take(b) % 4));
	m->vocab = 64 + 97 * (int)take(b);
	unsigned f = take(b);
	m->gated_mlp = f & 1;
	m->bias = (f >> 1) & 1;
	m->tied_embeddings = (f >> 2) & 1;
	m->max_seq = (f >> 3) & 1 ? 0 : 4096;
	snprintf(m->name, sizeof m->name, "fuzz");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bytes b = { data, size };
	zb_config c;
	zb_error err;
	fuzz_base_config(&c);
	shape(&b, &c.model);
	unsigned f = take(&b);
	c.framework = f % 4 ? ZB_FW_DEEPSPEED : ZB_FW_ZBENCH;
	c.policy.kind = (zb_policy_kind)((f >> 2) % ZB_POLICY_COUNT);
	c.policy.ckpt = (zb_ckpt)((f >> 4) % ZB_CKPT_COUNT);
	c.policy.offload_param = (f >> 6) & 1;
	c.policy.zero_stage = (int)(take(&b) % 4);
	c.policy.ratio = (double)(take(&b) % 101) / 100.0;
	c.policy.gas = 1 + (int)(take(&b) % 64);
	c.policy.micro_batch = 1 + (int)(take(&b) % 4);
	c.policy.seq = 16 * (1 + (int)(take(&b) % 32));
	unsigned sg = take(&b);
	c.policy.sub_group_size = sg ? (int64_t)sg * sg * 64 : 0;
	c.policy.bucket_params = 1000 * (1 + (int64_t)take(&b) * take(&b));
	c.steps = 1 + (int)(take(&b) % 8);
	unsigned h = take(&b);
	if (h & 1) {
		if (zb_preset_hw("h200-x2", &c.hw, &err) != ZB_OK)
			abort();
		c.policy.gpus = 2;
	}
	if (h & 2) { /* DeepSpeed's eager attention */
		zb_ds_profile_defaults(&c.hw.ds);
		c.hw.ds.set = 1;
		c.hw.ds.flash = 0;
	}
	int64_t est = zb_limits_tasks(&c);
	if (est <= 0)
		abort(); /* an estimate is at least one task */
	zb_graph g;
	if (est > FUZZ_MAX_TASKS) {
		/* too large to build here: the limit must refuse what it bounds above the limit */
		if (est > ZB_MAX_TASKS && zb_graph_build(&g, &c, &err) == ZB_OK) {
			fprintf(stderr, "a schedule of ~%lld tasks was built past the limit\n", (long long)est);
			abort();
		}
		return 0;
	}
	if (zb_graph_build(&g, &c, &err) != ZB_OK)
		return 0;
	if ((int64_t)g.ntasks > est) {
		fprintf(stderr,
			"%u tasks built, the estimate says at most %lld: framework %d, stage %d, policy %d, ckpt %d,"
			" offload_param %d, ratio %g, gpus %d, gas %d, steps %d, layers %d, buckets %u, bucket %lld\n",
			(unsigned)g.ntasks, (long long)est, c.framework, c.policy.zero_stage, (int)c.policy.kind,
			(int)c.policy.ckpt, c.policy.offload_param, c.policy.ratio, c.policy.gpus, c.policy.gas, c.steps,
			c.model.layers, (unsigned)g.nbuckets, (long long)c.policy.bucket_params);
		abort();
	}
	zb_graph_free(&g);
	return 0;
}
