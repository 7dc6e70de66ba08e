/*
 * resolve.c - zb_config_resolve (resolve.h): hardware, model, policy, in that
 * order, then the checks that need all three.
 */
#include "config/parts.h"

#include <stddef.h>
#include <string.h>

zb_status zb_config_resolve(const zb_config_inputs *in, zb_config *c, zb_sources *src, zb_error *err)
{
	zb_status st;
	zb_sources local;
	zb_sources *s = src ? src : &local;
	if (src) {
		memset(s, 0, sizeof *s);
	} else { /* the caller wants no sources: skip clearing and composing their 7 KB of text */
		size_t after = offsetof(zb_sources, detail) + sizeof s->detail;
		memset(s->from, 0, sizeof s->from);
		memset((char *)s + after, 0, sizeof *s - after);
		s->no_detail = 1;
	}
	memset(c, 0, sizeof *c);
	if ((st = zb_resolve_hardware(in, c, s, err)) || (st = zb_resolve_model(in, c, s, err)) ||
	    (st = zb_resolve_policy(in, c, s, err)))
		return st;
	/* rotary models have no position table, but a length they were built for (OPT's
	 * table is 2 rows longer than its positions) */
	const zb_hf_config *hf = in->hf;
	if (hf && c->model.max_seq != hf->max_positions && hf->max_positions > 0 && c->policy.seq > hf->max_positions)
		return zb_fail(err, ZB_E_INPUT, "seq %d exceeds max_position_embeddings %d of %s", c->policy.seq,
			       hf->max_positions, hf->path);
	return zb_config_validate(c, err);
}

zb_status zb_config_single(const zb_config_inputs *in, zb_error *err)
{
	for (int a = 0; a < ZB_AX_COUNT; a++) {
		const char *s = in->value[a];
		if (s && (strchr(s, ',') || (zb_axis_kind_of(a) != ZB_AXK_NAME && strchr(s, ':'))))
			return zb_fail(err, ZB_E_INPUT,
				       "%s takes one value here (got '%s'); lists and ranges are for zbench sweep",
				       zb_axis_flag(a), s);
	}
	return ZB_OK;
}
