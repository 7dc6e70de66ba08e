/* fuzz_dsconfig.c - DeepSpeed JSON configs (--ds-config FILE): reading, resolving
 * for a model and batch, the ZeRO-3 sub-group split, then a prediction. */
#include "fuzz/fuzz_common.h"
#include "inputs/dsconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static zb_ds_config ds; /* large: not on the stack */
	zb_config c;
	zb_error err;
	fuzz_base_config(&c);
	if (zb_ds_load(fuzz_file(data, size, "ds.json"), &ds, &err) != ZB_OK)
		return 0;
	/* the first byte picks whether the batch flags were given */
	int flags = size ? data[0] : 0;
	zb_ds_batch b = { 4, 2, flags & 1, (flags >> 1) & 1 };
	static zb_ds_plan plan;
	if (zb_ds_plan_make(&ds, &c.model, &b, &plan, &err) != ZB_OK)
		return 0;
	zb_ds_twinflow tf;
	zb_ds_twinflow_split(&c.model, plan.sub_group_size, plan.policy.ratio, &tf);
	c.policy = plan.policy;
	c.policy.seq = 256;
	fuzz_predict(&c);
	return 0;
}
