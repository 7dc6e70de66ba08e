/* fuzz_hwfile.c - hardware JSON files (--hw FILE), then a prediction on them. */
#include "fuzz/fuzz_common.h"
#include "inputs/hwfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	zb_config c;
	zb_error err;
	fuzz_base_config(&c);
	if (zb_hw_load(fuzz_file(data, size, "hw.json"), &c.hw, &err) != ZB_OK)
		return 0;
	fuzz_predict(&c);
	return 0;
}
