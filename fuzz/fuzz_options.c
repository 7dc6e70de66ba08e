/* fuzz_options.c - the command line of predict and sweep: the input is split at
 * newlines into argv, parsed with the common options, every axis expanded (lists
 * and ranges) and the first value of each built into a configuration. */
#include "fuzz/fuzz_common.h"
#include "cli/options.h"

#define MAX_ARGS 24

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 2048)
		return 0;
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = 0;
	char *argv[MAX_ARGS + 2];
	int argc = 0;
	argv[argc++] = "zbench";
	for (char *tok = strtok(text, "\n"); tok && argc < MAX_ARGS + 1; tok = strtok(NULL, "\n"))
		argv[argc++] = tok;
	argv[argc] = NULL;

	zb_options o;
	memset(&o, 0, sizeof o);
	int code = 0;
	opterr = 0; /* getopt's own messages: not what is tested */
	if (zb_options_parse(argc, argv, NULL, zb_options_usage, &o, &code)) {
		const char *first[ZB_AX_COUNT] = { 0 };
		char **vals[ZB_AX_COUNT] = { 0 }, *storage[ZB_AX_COUNT] = { 0 };
		int ok = 1;
		zb_error err;
		for (int a = 0; a < ZB_AX_COUNT; a++) {
			if (!o.axis[a])
				continue;
			/* files named on the command line are other harnesses' business */
			if (a == ZB_AX_HW || a == ZB_AX_MODEL_FILE)
				ok = 0;
			int n = zb_axis_values(o.axis[a], (zb_axis)a, &vals[a], &storage[a], &err);
			if (n < 1)
				ok = 0;
			else
				first[a] = vals[a][0];
		}
		zb_config c;
		if (ok && zb_options_config(first, &o, &c, &err) == ZB_OK)
			fuzz_predict(&c);
		zb_options single = o;
		if (ok && zb_options_single(&single, &c, &err) == ZB_OK)
			fuzz_predict(&c);
		for (int a = 0; a < ZB_AX_COUNT; a++) {
			free(vals[a]);
			free(storage[a]);
		}
	}
	free(text);
	return 0;
}
