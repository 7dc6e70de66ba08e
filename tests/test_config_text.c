/*
 * test_config_text.c - the cached configuration text (sim/config_text.h) is byte
 * for byte zb_config_to_json's, over configurations whose reals need different
 * precisions (ratios on a fine grid, 1/3, values near powers of two), whose parts
 * change in every order, and with wrong hardware slot hints.
 */
#include "tests/harness.h"

#include "inputs/config_text.h"
#include "inputs/hwfile.h"
#include "inputs/presets.h"

static void check(zb_config_text *t, const zb_config *c, long slot, int *n)
{
	char *want = zb_config_to_json(c);
	const char *got = zb_config_text_get(t, c, slot);
	if (strcmp(got, want)) {
		print_error("cached text:\n%s\nzb_config_to_json:\n%s\n", got, want);
		fail();
	}
	free(want);
	(*n)++;
}

static void test_same_text(void **state)
{
	const char *links[] = { "gen3", "gen4", "gen5", "gen6", "nvlink-c2c" };
	const char *gpus[] = { "a100-80g", "h100", "h200", "b200", "gh200" };
	const double ratios[] = { 0, 0.05, 0.1, 1.0 / 3, 0.7, 0.125, 1 - 1e-16, 0.30000000000000004, 1 };
	const double drams[] = { 150e9, 1.0 / 3 * 1e11, 0x1p37, 0x1.fffffffffffffp36 };
	zb_config_text *t = zb_config_text_new();
	zb_error err = { 0 };
	int n = 0;
	for (int r = 0; r < 9; r++)
		for (int l = 0; l < 5; l++)
			for (int g = 0; g < 5; g++)
				for (int d = 0; d < 4; d++) {
					zb_config c;
					memset(&c, 0, sizeof c);
					zb_preset_default_hw(&c.hw);
					zb_preset_default_model(&c.model);
					zb_policy_defaults(&c.policy);
					c.steps = 6 + r % 2;
					assert_int_equal(zb_preset_link(links[l], &c.hw.link, &err), ZB_OK);
					assert_int_equal(zb_preset_gpu(gpus[g], &c.hw.gpu, &err), ZB_OK);
					c.hw.cpu.dram_Bps = drams[d];
					c.policy.ratio = ratios[r];
					c.policy.kind = (zb_policy_kind)(r % ZB_POLICY_COUNT);
					long slot = l * 20 + g * 4 + d;
					check(t, &c, slot, &n);
					check(t, &c, slot, &n);    /* from the cache */
					check(t, &c, slot + 1, &n); /* a wrong hint */
				}
	printf("# %d texts identical\n", n);
	zb_config_text_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
