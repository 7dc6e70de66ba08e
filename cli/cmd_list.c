/* cmd_list.c - zbench list presets | policies: what zbench knows by name. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/config.h"
#include "inputs/presets.h"

int cmd_list(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "presets";
	if (!strcmp(what, "--help") || !strcmp(what, "-h")) {
		printf("usage: zbench list [presets | policies]\n");
		return 0;
	}
	if (!strcmp(what, "presets")) {
		zb_presets_print(stdout);
		return 0;
	}
	if (!strcmp(what, "policies")) {
		printf("%-8s %s\n", "policy", "what it does");
		printf("%-8s %s\n", "none", "everything on the GPU, no offload (baseline)");
		printf("%-8s %s\n", "offload", "ZeRO-Offload: all gradients down after backward, CPU Adam, parameters up");
		printf("%-8s %s\n", "overlap", "gradient buckets go down during backward, updated as they land, up when ready");
		printf("%-8s %s\n", "dpu", "overlap + delayed parameter update (step i's update overlaps step i+1)");
		printf("\nmodifiers: --ratio r (Twin-Flow), --offload-param, --ckpt none|gpu|cpu, --gas, --pageable\n");
		return 0;
	}
	fprintf(stderr, "zbench: unknown list '%s' (known: presets, policies)\n", what);
	return ZB_EXIT_INPUT;
}
