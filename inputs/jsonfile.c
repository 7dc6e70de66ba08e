/* jsonfile.c - reading JSON input files; see jsonfile.h. */
#include "inputs/jsonfile.h"

#include "common/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *zb_json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

void zb_json_show(const json_t *v, char *buf, size_t n)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	if (!s) {
		snprintf(buf, n, "?");
		return;
	}
	if (strlen(s) >= n && n > 4)
		snprintf(buf, n, "%.*s...", (int)(n - 4), s);
	else
		snprintf(buf, n, "%s", s);
	free(s);
}

zb_status zb_json_load_object(const char *path, json_t **out, zb_error *err)
{
	*out = NULL;
	/* its name is printed in '#' header lines and messages, one line each */
	zb_status bad = zb_text_check_name("file name", path, err);
	if (bad)
		return bad;
	FILE *f = fopen(path, "r");
	if (!f)
		return zb_fail(err, ZB_E_INPUT, "cannot open %s: %s", path, strerror(errno));
	json_error_t je;
	json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
	fclose(f);
	if (!root)
		return zb_fail(err, ZB_E_INPUT, "%s: malformed JSON at line %d column %d: %s", path, je.line,
			       je.column, je.text);
	if (!json_is_object(root)) {
		zb_status st = zb_fail(err, ZB_E_INPUT, "%s: top level must be an object (got %s)", path,
				       zb_json_type_name(root));
		json_decref(root);
		return st;
	}
	*out = root;
	return ZB_OK;
}
