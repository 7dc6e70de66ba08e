/* framework.c - the table of schedule builders; see framework.h. */
#include "schedules/framework.h"

#include <string.h>

#include "core/limits.h"
#include "schedules/deepspeed.h"

static const zb_framework_ops table[ZB_FW_COUNT] = {
	[ZB_FW_ZBENCH] = { zb_graph_build_zbench, zb_memory_estimate },
	[ZB_FW_DEEPSPEED] = { zb_ds_graph_build, zb_ds_memory_estimate },
};

const zb_framework_ops *zb_framework_get(int fw)
{
	return fw >= 0 && fw < ZB_FW_COUNT ? &table[fw] : NULL;
}

zb_status zb_graph_build(zb_graph *g, const zb_config *cfg, zb_error *err)
{
	const zb_framework_ops *o = zb_framework_get(cfg->framework);
	if (!o) {
		memset(g, 0, sizeof *g);
		return zb_fail(err, ZB_E_INPUT, "framework %d out of range", cfg->framework);
	}
	/* every builder, before it allocates: the schedule's size from the shape alone */
	zb_status st = zb_config_validate(cfg, err);
	if (!st)
		st = zb_limits_schedule(cfg, err);
	if (st) {
		memset(g, 0, sizeof *g);
		return st;
	}
	return o->build(g, cfg, err);
}

void zb_framework_memory(const zb_config *c, zb_memory *out)
{
	const zb_framework_ops *o = zb_framework_get(c->framework);
	(o ? o->memory : zb_memory_estimate)(c, out);
}
