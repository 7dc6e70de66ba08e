/* fuzz_range.c - the list and range syntax of sweep axes ("gen3,gen4",
 * "0:1:0.25", "8M"): the first byte picks the axis, the rest is the value. */
#include "fuzz/fuzz_common.h"
#include "cli/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 512)
		return 0;
	zb_axis a = (zb_axis)(data[0] % ZB_AX_COUNT);
	if (a == ZB_AX_HW || a == ZB_AX_MODEL_FILE)
		return 0; /* file names: other harnesses */
	char *raw = malloc(size);
	memcpy(raw, data + 1, size - 1);
	raw[size - 1] = 0;
	char **vals = NULL, *storage = NULL;
	zb_error err;
	int n = zb_axis_values(raw, a, &vals, &storage, &err);
	if (n > 0) {
		if (n > 10001)
			abort(); /* ranges are bounded to 10 000 values */
		/* each value through the configuration builder, as sweep does */
		for (int i = 0; i < n && i < 4; i++) {
			const char *v[ZB_AX_COUNT] = { 0 };
			v[a] = vals[i];
			zb_config c;
			if (zb_options_config(v, NULL, &c, &err) == ZB_OK && zb_limits_tasks(&c) <= FUZZ_MAX_TASKS) {
				c.policy.seq = c.policy.seq > 512 ? 512 : c.policy.seq;
				fuzz_predict(&c);
			}
		}
	}
	free(vals);
	free(storage);
	free(raw);
	return 0;
}
