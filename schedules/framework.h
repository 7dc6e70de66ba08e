/*
 * framework.h - the table of schedules: one entry per training framework whose
 * step zbench can predict. Each entry builds the task graph (graph.h) of its
 * framework and estimates memory as that framework allocates it; everything
 * downstream (simulator, reports, sweeps) is shared.
 *
 *   zbench     zbench's own idealized schedule, the one the executor runs (graph.c)
 *   deepspeed  DeepSpeed's ZeRO-1/2/3 engine with optimizer/parameter offload,
 *              Twin-Flow sub-groups (deepspeed.c)
 *
 * A new framework (Megatron's hybrid optimizer, say) is one more row here and one
 * more name in core/config.c (zb_framework_name, zb_framework_parse: the names
 * live there, so resolving a configuration needs no schedule).
 */
#ifndef ZB_FRAMEWORK_H
#define ZB_FRAMEWORK_H

#include "common/error.h"
#include "core/config.h"
#include "core/graph.h"
#include "core/memory.h"

typedef struct zb_framework_ops {
	zb_status (*build)(zb_graph *g, const zb_config *c, zb_error *err);
	void (*memory)(const zb_config *c, zb_memory *out);
} zb_framework_ops;

const zb_framework_ops *zb_framework_get(int fw); /* NULL when out of range */

/* Memory of c as its framework allocates it. */
void zb_framework_memory(const zb_config *c, zb_memory *out);

#endif
