/*
 * families.c - the table of schedule families: which family places the optimizer
 * work of a configuration (builder.h). One line per policy; a framework whose
 * schedule differs (a DeepSpeed step() after backward, several GPUs) adds a family
 * file and a line here.
 */
#include "schedules/builder.h"

static const struct {
	zb_policy_kind policy;
	const sched_family *family;
} families[] = {
	{ ZB_POLICY_NONE, &sched_serial },         /* no offload: GPU Adam after backward */
	{ ZB_POLICY_OFFLOAD, &sched_serial },      /* ZeRO-Offload, no overlap */
	{ ZB_POLICY_OVERLAP, &sched_overlapped },  /* buckets updated as they land */
	{ ZB_POLICY_DPU, &sched_overlapped },      /* ... with delayed parameter update */
};

const sched_family *sched_family_for(const zb_config *c)
{
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
		if (families[i].policy == c->policy.kind)
			return families[i].family;
	return &sched_serial; /* unreachable: zb_config_validate checks the policy */
}
