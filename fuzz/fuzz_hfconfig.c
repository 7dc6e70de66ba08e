/* fuzz_hfconfig.c - Hugging Face config.json files (--hf-config FILE): the model
 * shape, its tensors in DeepSpeed order, then a prediction when small. */
#include "fuzz/fuzz_common.h"
#include "inputs/dsconfig.h"
#include "inputs/hfconfig.h"
#include "core/model.h"

static void add(int64_t size, void *ctx) { *(int64_t *)ctx += size; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static zb_hf_config hf;
	zb_config c;
	zb_error err;
	fuzz_base_config(&c);
	if (zb_hf_load(fuzz_file(data, size, "config.json"), &hf, &err) != ZB_OK)
		return 0;
	c.model = hf.model;
	int64_t sum = 0;
	zb_ds_tensors(&c.model, add, &sum);
	if (sum != zb_model_params(&c.model))
		abort(); /* the tensors must add up to the parameter count (dsconfig.h) */
	c.policy.seq = c.model.max_seq > 0 && c.model.max_seq < 256 ? c.model.max_seq : 256;
	fuzz_predict(&c);
	return 0;
}
