/* ranks.c - several ranks in the report; see ranks.h. */
#include "report/ranks.h"

#include <math.h>

#include "report/csv.h"

#include "sim/collective.h"
#include "sim/numa.h"
#include "sim/resources.h"

/* From the graph's scalars only (a sweep row keeps no tasks): CPU Adam moves
 * 28 B per parameter of the rank's shard of the CPU side, the copies are the
 * graph's per-step PCIe bytes. */
void zb_rank_usage_of(const zb_config *c, const zb_graph *g, const zb_sim_result *r, zb_rank_usage *u)
{
	double step = r->step_time_s > 0 ? r->step_time_s : 1;
	double adam = (double)zb_shard_params(g->cpu_params, g->ranks) * ZB_ADAM_BYTES_PER_PARAM;
	double copies = g->copy_bytes[ZB_RES_D2H] + g->copy_bytes[ZB_RES_H2D]; /* per step */
	u->ranks = g->ranks;
	u->gpus = c->policy.gpus;
	u->nodes = c->policy.nodes;
	u->job_tokens_per_s = r->tokens_per_s * g->ranks;
	u->threads = zb_config_cpu_threads(c);
	u->node_threads = u->threads * c->policy.gpus;
	u->node_dram_Bps = c->hw.cpu.dram_Bps;
	u->rank_dram_Bps = c->hw.cpu.dram_Bps * zb_numa_share(c);
	u->rank_dram_used_Bps = (adam + (c->policy.pageable ? 3 : 1) * copies) / step;
	u->node_dram_used_Bps = u->rank_dram_used_Bps * c->policy.gpus;
	u->link_sharers = zb_link_sharers(c);
	u->link_used_Bps = copies / step * u->link_sharers;
	u->comm_busy_s = r->busy_s[ZB_RES_COMM];
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
	fprintf(f, "%-22s %12.2f %12s   ring busbw %.0f GB/s\n", "collectives ms/step", u.comm_busy_s * 1e3, "-",
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
	json_object_set_new(j, "comm_busy_s", json_real(u.comm_busy_s));
	json_object_set_new(j, "comm_busbw_Bps", json_real(u.comm_busbw_Bps));
	return j;
}

/* ---- sweep columns ---------------------------------------------------------- */

static const char *const rcols[] = { "gpus", "nodes", "job_tok/s", "gpu", "d2h", "h2d", "cpu", "comm", "node_dram" };
static const char *const runits[] = { "", "", "1/s", "ms", "ms", "ms", "ms", "ms", "GB/s" };
/* the CSV's names: snake_case with the unit in the name (report/csv.h) */
static const char *const rcsv[] = { "gpus", "nodes", "job_tokens_per_s", "rank_gpu_busy_ms", "rank_d2h_busy_ms",
				    "rank_h2d_busy_ms", "rank_cpu_busy_ms", "rank_comm_busy_ms", "node_dram_gbps" };

void zb_ranks_sweep_head(FILE *f, int csv, int units_row)
{
	const char *const *v = units_row ? runits : rcols;
	for (int i = 0; i < 9; i++) {
		if (csv)
			zb_csv_put(f, rcsv[i], 0);
		else
			fprintf(f, i < 2 ? " %5s" : i == 2 ? " %10s" : " %8s", v[i]);
	}
}

void zb_ranks_sweep_row(FILE *f, int csv, const zb_config *c, const zb_graph *head, const zb_sim_result *r)
{
	if (csv) {
		zb_csv_num(f, c->policy.gpus, 10, 0);
		zb_csv_num(f, c->policy.nodes, 10, 0);
	} else {
		fprintf(f, " %5d %5d", c->policy.gpus, c->policy.nodes);
	}
	if (!r || !head) {
		for (int i = 2; i < 9; i++)
			if (csv)
				zb_csv_put(f, NULL, 0);
			else
				fprintf(f, i == 2 ? " %10s" : " %8s", "-");
		return;
	}
	zb_rank_usage u;
	zb_rank_usage_of(c, head, r, &u);
	static const int res[] = { ZB_RES_GPU, ZB_RES_D2H, ZB_RES_H2D, ZB_RES_CPU, ZB_RES_COMM };
	if (csv) {
		zb_csv_num(f, round(u.job_tokens_per_s), 15, 0);
		for (int i = 0; i < 5; i++)
			zb_csv_num(f, r->busy_s[res[i]] * 1e3, 6, 0);
		zb_csv_num(f, u.node_dram_used_Bps / 1e9, 5, 0);
		return;
	}
	fprintf(f, " %10.0f", u.job_tokens_per_s);
	for (int i = 0; i < 5; i++)
		fprintf(f, " %8.2f", r->busy_s[res[i]] * 1e3);
	fprintf(f, " %8.1f", u.node_dram_used_Bps / 1e9);
}
