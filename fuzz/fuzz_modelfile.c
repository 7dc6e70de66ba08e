/* fuzz_modelfile.c - model JSON files (--model-file FILE): parameter counts, memory,
 * and a prediction when the schedule is small. */
#include "fuzz/fuzz_common.h"
#include "inputs/hwfile.h"
#include "core/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	zb_config c;
	zb_error err;
	fuzz_base_config(&c);
	if (zb_model_load(fuzz_file(data, size, "model.json"), &c.model, &err) != ZB_OK)
		return 0;
	if (zb_model_params(&c.model) <= 0 || !isfinite(zb_model_flops_per_token(&c.model, 256)))
		abort(); /* a validated model must have a positive size */
	c.policy.seq = c.model.max_seq > 0 && c.model.max_seq < 256 ? c.model.max_seq : 256;
	fuzz_predict(&c);
	return 0;
}
