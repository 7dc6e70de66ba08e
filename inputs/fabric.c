/*
 * fabric.c - fabric presets; see fabric.h.
 *
 * Rates are NCCL bus bandwidths ("busbw" of nccl-tests, doc/PERFORMANCE.md): what a
 * ring collective reaches per GPU, the figure collective.h's model takes. NVLink's
 * line rate is not reached: NVLink packets carry ~20 % overhead (S. Jeaugey, NVIDIA,
 * github.com/NVIDIA/nccl/issues/1054: "the app-level bandwidth is 80% of the peak").
 * Latencies are NCCL's own tuning model (src/graph/tuning.cc, hwLat, Ring/Simple
 * protocol: the per-step latency it adds for NVLink and for the network); NCCL's base
 * latency per call (8.4 us there) is left out.
 */
#include "inputs/fabric.h"

#include <stdio.h>
#include <string.h>

#define GB 1e9

static const zb_fabric fabrics[] = {
	{
		.name = "nvswitch-v100",
		/* DGX-2: 16 V100 through 12 NVSwitches, 6 NVLink2 links per GPU at 25 GB/s each way =
		 * 150 GB/s per direction (NVIDIA DGX-2 datasheet: 300 GB/s bidirectional per GPU,
		 * 2.4 TB/s bisection). Estimate: NCCL's ~80 % of the NVLink line rate (S. Jeaugey,
		 * above), 120 GB/s busbw; no nccl-tests result of a DGX-2 was found. */
		.intra_bus_Bps = 120 * GB,
		.intra_latency_s = 5.7e-6, /* NCCL tuning.cc hwLat NVLink Ring Simple */
		/* 8x Mellanox EDR 100 Gb/s InfiniBand (DGX-2 datasheet) = 100 GB/s per node line
		 * rate; estimate: the 0.96 of line rate the DGX A100's 192 of 200 GB/s reaches. */
		.inter_bus_Bps = 96 * GB,
		.inter_latency_s = 6.6e-6, /* NCCL tuning.cc hwLat NET Ring Simple */
	},
	{
		.name = "nvswitch-a100",
		/* DGX A100: 12 NVLink3 links per GPU, 25 GB/s each way each = 300 GB/s per
		 * direction (NVIDIA A100 datasheet: 600 GB/s bidirectional). Achieved: "the
		 * total effective bandwidth should be 240GB/s on A100, but some other
		 * bottlenecks on the GPUs limits it to ~230GB/s" (S. Jeaugey,
		 * github.com/NVIDIA/nccl-tests/issues/149); 232.5 GB/s all_reduce_perf busbw
		 * on one 8x A100 node (nccl-tests/issues/175). */
		.intra_bus_Bps = 230 * GB,
		.intra_latency_s = 5.7e-6, /* NCCL tuning.cc hwLat NVLink Ring Simple */
		/* 8x ConnectX-6 HDR 200 Gb/s (DGX A100 datasheet) = 200 GB/s per node line
		 * rate; measured "On an Nvidia DGX-A100 system we have 8x200Gbit/s IB cards and
		 * we measure 192GB/s AllReduce BusBW" (D. Addison, NVIDIA,
		 * github.com/NVIDIA/nccl/issues/812). */
		.inter_bus_Bps = 192 * GB,
		.inter_latency_s = 6.6e-6, /* NCCL tuning.cc hwLat NET Ring Simple */
	},
	{
		.name = "nvswitch-h100",
		/* DGX H100: 18 NVLink4 links per GPU = 450 GB/s per direction (900 GB/s
		 * bidirectional, DGX H100 datasheet). "450GB/s is the line rate. With the
		 * protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of
		 * 370GB/s, which you can observe as BusBw when running non-allreduce
		 * operations, or when running with NCCL_ALGO=RING" (S. Jeaugey,
		 * github.com/NVIDIA/nccl-tests/issues/212). NVLink SHARP all-reduce (~480 GB/s
		 * busbw there) is not used: zbench's collectives are reduce-scatter and
		 * all-gather. */
		.intra_bus_Bps = 370 * GB,
		.intra_latency_s = 5.7e-6, /* NCCL tuning.cc hwLat NVLink Ring Simple */
		/* 8x ConnectX-7 NDR 400 Gb/s (DGX H100 datasheet); "CX-7 NICs at NDR rate
		 * (400Gbps) should achieve up to 48-49GB/s per NIC" (D. Addison, NVIDIA,
		 * github.com/NVIDIA/nccl-tests/issues/267): 8 x 48 GB/s per node. */
		.inter_bus_Bps = 8 * 48 * GB,
		.inter_latency_s = 6.6e-6, /* NCCL tuning.cc hwLat NET Ring Simple */
	},
	{
		.name = "nvlink-h200",
		/* H200 SXM: NVLink4, 900 GB/s bidirectional per GPU (NVIDIA H200 datasheet),
		 * the H100's links, so the H100 figure: 370 GB/s busbw (nccl-tests/issues/212);
		 * 8x H200 reached a 475 GB/s all-reduce busbw with NVLink SHARP
		 * (nccl-tests/issues/272), consistent with the H100. The lent 2x H200
		 * machine's own figure is not measured yet: `zbench calibrate` measures it
		 * (NCCL) and replaces this estimate in the calibrated hardware file. No
		 * network: one node. */
		.intra_bus_Bps = 370 * GB,
		.intra_latency_s = 5.7e-6, /* NCCL tuning.cc hwLat NVLink Ring Simple */
	},
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Machine presets (presets.c) and their fabrics. */
static const struct {
	const char *machine, *fabric;
} machine_fabrics[] = {
	{ "dgx-2", "nvswitch-v100" },
	{ "dgx-a100", "nvswitch-a100" },
	{ "dgx-h100", "nvswitch-h100" },
	{ "h200-x2", "nvlink-h200" },
};

zb_status zb_preset_fabric(const char *name, zb_fabric *out, zb_error *err)
{
	for (int i = 0; name && i < COUNT(fabrics); i++)
		if (strcmp(name, fabrics[i].name) == 0) {
			*out = fabrics[i];
			return ZB_OK;
		}
	char known[200];
	size_t len = 0;
	known[0] = 0;
	for (int i = 0; i < COUNT(fabrics) && len < sizeof known; i++)
		len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", fabrics[i].name);
	return zb_fail(err, ZB_E_INPUT, "unknown fabric '%s' (known: %s)", name ? name : "", known);
}

void zb_machine_fabric(const char *machine, zb_fabric *out)
{
	memset(out, 0, sizeof *out);
	for (int i = 0; machine && i < COUNT(machine_fabrics); i++)
		if (strcmp(machine, machine_fabrics[i].machine) == 0) {
			zb_status st = zb_preset_fabric(machine_fabrics[i].fabric, out, NULL);
			(void)st; /* built-in names; tests check each loads */
		}
}

int zb_fabric_count(void) { return COUNT(fabrics); }

const char *zb_fabric_name(int i) { return i >= 0 && i < COUNT(fabrics) ? fabrics[i].name : NULL; }

void zb_fabrics_print(FILE *f)
{
	fprintf(f, "\n# fabrics (between ranks: NCCL bus bandwidth, ring step latency)\n");
	fprintf(f, "#%-15s %10s %10s %10s %10s  %s\n", "name", "intra", "intra", "inter", "inter", "machines");
	fprintf(f, "#%-15s %10s %10s %10s %10s\n", "", "GB/s", "us", "GB/s/node", "us");
	for (int i = 0; i < COUNT(fabrics); i++) {
		const zb_fabric *x = &fabrics[i];
		char used[128] = "";
		size_t len = 0;
		for (int k = 0; k < COUNT(machine_fabrics) && len < sizeof used; k++)
			if (!strcmp(machine_fabrics[k].fabric, x->name))
				len += (size_t)snprintf(used + len, sizeof used - len, "%s%s", len ? ", " : "",
							machine_fabrics[k].machine);
		fprintf(f, " %-15s %10.0f %10.1f %10.0f %10.1f  %s\n", x->name, x->intra_bus_Bps / GB,
			x->intra_latency_s * 1e6, x->inter_bus_Bps / GB, x->inter_latency_s * 1e6, used);
	}
}
