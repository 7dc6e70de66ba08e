/* report_ranks.c - several ranks in the report; see report_ranks.h. */
#include "cli/report_ranks.h"

#include "sim/collective.h"
#include "sim/numa.h"
#include "sim/resources.h"

void zb_rank_usage_of(const zb_config *c, const zb_graph *g, const zb_sim_result *r, zb_rank_usage *u)
{
	double step = r->step_time_s > 0 ? r->step_time_s : 1;
	double adam = 0, comm = 0;
	for (size_t i = 0; i < g->ntasks; i++) {
		const zb_task *t = &g->tasks[i];
		if (t->kind == ZB_TASK_CPU_ADAM)
			adam += t->bytes;
		else if (t->resource == ZB_RES_COMM)
			comm += t->bytes;
	}
	int steps = g->steps > 0 ? g->steps : 1;
	double copies = g->copy_bytes[ZB_RES_D2H] + g->copy_bytes[ZB_RES_H2D]; /* per step */
	u->ranks = g->ranks;
	u->gpus = c->policy.gpus;
	u->nodes = c->policy.nodes;
	u->job_tokens_per_s = r->tokens_per_s * g->ranks;
	u->threads = zb_config_cpu_threads(c);
	u->node_threads = u->threads * c->policy.gpus;
	u->node_dram_Bps = c->hw.cpu.dram_Bps;
	u->rank_dram_Bps = c->hw.cpu.dram_Bps * zb_numa_share(c);
	u->rank_dram_used_Bps = (adam / steps + (c->policy.pageable ? 3 : 1) * copies) / step;
	u->node_dram_used_Bps = u->rank_dram_used_Bps * c->policy.gpus;
	u->link_sharers = zb_link_sharers(c);
	u->link_used_Bps = copies / step * u->link_sharers;
	u->comm_bytes = comm / steps;
	u->comm_busbw_Bps = zb_collective_bus_Bps(c);
}

void zb_ranks_print(FILE *f, const zb_config *c, const zb_graph *g, const zb_sim_result *r)
{
	zb_rank_usage u;
	zb_rank_usage_of(c, g, r, &u);
	fprintf(f, "\nranks          %10d     (%d GPUs x %d nodes, data parallel; the table above is one rank)\n",
		u.ranks, u.gpus, u.nodes);
	fprintf(f, "job throughput %10.0f tokens/s over all ranks\n", u.job_tokens_per_s);
	fprintf(f, "%-22s %12s %12s\n", "shared by a node", "one rank", "node");
	fprintf(f, "%-22s %12d %12d   of %d cores\n", "cpu threads", u.threads, u.node_threads, c->hw.cpu.cores);
	fprintf(f, "%-22s %12.1f %12.1f   of %.1f GB/s (rank's share %.1f)\n", "host DRAM GB/s", u.rank_dram_used_Bps / 1e9,
		u.node_dram_used_Bps / 1e9, u.node_dram_Bps / 1e9, u.rank_dram_Bps / 1e9);
	fprintf(f, "%-22s %12.1f %12.1f   %d rank(s) per uplink\n", "host link GB/s", u.link_used_Bps / u.link_sharers / 1e9,
		u.link_used_Bps / 1e9, u.link_sharers);
	fprintf(f, "%-22s %12.3f %12s   ring busbw %.0f GB/s\n", "collectives GB/step", u.comm_bytes / 1e9, "-",
		u.comm_busbw_Bps / 1e9);
}

json_t *zb_ranks_json(const zb_config *c, const zb_graph *g, const zb_sim_result *r)
{
	zb_rank_usage u;
	zb_rank_usage_of(c, g, r, &u);
	json_t *j = json_object();
	json_object_set_new(j, "ranks", json_integer(u.ranks));
	json_object_set_new(j, "gpus", json_integer(u.gpus));
	json_object_set_new(j, "nodes", json_integer(u.nodes));
	json_object_set_new(j, "job_tokens_per_s", json_real(u.job_tokens_per_s));
	json_object_set_new(j, "rank_threads", json_integer(u.threads));
	json_object_set_new(j, "node_threads", json_integer(u.node_threads));
	json_object_set_new(j, "rank_dram_Bps", json_real(u.rank_dram_Bps));
	json_object_set_new(j, "rank_dram_used_Bps", json_real(u.rank_dram_used_Bps));
	json_object_set_new(j, "node_dram_Bps", json_real(u.node_dram_Bps));
	json_object_set_new(j, "node_dram_used_Bps", json_real(u.node_dram_used_Bps));
	json_object_set_new(j, "link_sharers", json_integer(u.link_sharers));
	json_object_set_new(j, "link_used_Bps", json_real(u.link_used_Bps));
	json_object_set_new(j, "comm_bytes", json_real(u.comm_bytes));
	json_object_set_new(j, "comm_busbw_Bps", json_real(u.comm_busbw_Bps));
	return j;
}
