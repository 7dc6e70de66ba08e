/*
 * dsphases.h - the forward, backward and optimizer phases of one simulated step,
 * to set beside the harness's fwd_ms, bwd_ms and opt_ms (peers/ds_step.py).
 *
 * The simulator has no host-side launch queue, so a phase here ends when its last
 * task ends (GPU work finished, copies landed); the harness times the host's return
 * from engine(), engine.backward() and engine.step() without a synchronize, so GPU
 * work a phase queued but did not wait for is counted in the next phase there.
 * Expect measured fwd <= predicted fwd and measured opt >= predicted opt when a
 * phase ends without a synchronize; the three sum to the step in both.
 */
#ifndef ZB_DSPHASES_H
#define ZB_DSPHASES_H

#include "sim/engine.h"
#include "core/graph.h"

typedef struct zb_ds_phases {
	double fwd_s, bwd_s, opt_s;
} zb_ds_phases;

/* The phases of the last simulated step of g (times r->end); all 0 when g has no
 * steps. Forward: from the previous step's end to the end of the last forward
 * task; backward: to the end of the last backward (or recompute) task; optimizer:
 * the rest of the step. */
void zb_ds_phases_of(const zb_graph *g, const zb_sim_result *r, zb_ds_phases *out);

#endif
