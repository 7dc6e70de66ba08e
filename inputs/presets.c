/*
 * presets.c - built-in links, GPUs, CPUs, models and whole machines.
 *
 * Every figure carries its source: a datasheet, a paper, or the H200 machine
 * measurements in data/h200-machine.tsv ("the data file").
 * Where a figure is an estimate the comment says so and why; those are the numbers
 * `zbench calibrate` is meant to replace with measurements.
 *
 * Conventions: 1 GB = 1e9 bytes. Device memory is what nvidia-smi reports as total
 * (datasheet "GB" of HBM is in practice GiB: the H200's "141 GB" shows as 143771
 * MiB); memory.c plans for a fixed fraction of it. PCIe x16 raw rates after
 * 128b/130b encoding: gen3 15.75, gen4 31.5, gen5 63.0 GB/s per direction.
 */
#include "inputs/presets.h"

#include "inputs/fabric.h"

#include <string.h>

#include "core/model.h"

#define GB 1e9
#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)
#define TIB (1024.0 * GIB)

/* Datasheet-only GPUs: dense tensor rate times ACHIEVABLE_GEMM, the fraction cuBLAS
 * typically reaches on large bf16 GEMMs (the H200 measured 0.80-0.90 of its 989 TFLOP/s
 * datasheet: 4096^3 872, 8192^3 894, gpt2-large shapes 777-844, in the data file);
 * the lower end is taken because those GPUs were not measured. HBM: datasheet times
 * ACHIEVABLE_HBM, the H200's measured 4.3 of 4.8 TB/s device copy. */
#define ACHIEVABLE_GEMM 0.80
#define ACHIEVABLE_HBM 0.90

/* ---- links ----------------------------------------------------------------- */

static const zb_link links[] = {
	{
		.name = "gen3",
		/* x16 at 8 GT/s: 15.75 GB/s raw. ~12 GB/s pinned is the usual bandwidthTest
		 * result on gen3 x16 hosts (V100 DGX-1/DGX-2 class): 0.76 of raw, the TLP
		 * header cost at 256 B max payload plus DMA overhead. Estimate, not measured
		 * by this project. */
		.h2d_Bps = 12.0 * GB,
		.d2h_Bps = 12.0 * GB,
		/* Estimate: no duplex measurement of a gen3 host here; taken as the gen5
		 * measurement (0.87) rounded down, PCIe being full duplex at every generation. */
		.duplex_h2d = 0.85,
		.duplex_d2h = 0.85,
		/* Estimate: the per-copy cost is driver submission plus DMA-engine setup, not
		 * the link; taken equal to the gen5 fit (see gen5). */
		.copy_latency_s = 4e-6,
		/* Estimate: pageable copies stage through a driver-pinned buffer, so a host
		 * memcpy serialises with the DMA: about half the pinned rate. */
		.pageable_h2d_Bps = 6.0 * GB,
		.pageable_d2h_Bps = 6.0 * GB,
	},
	{
		.name = "gen4",
		/* x16 at 16 GT/s: 31.5 GB/s raw. Estimate: ~25 GB/s pinned one way (0.79 of
		 * raw, the fraction between gen3's estimate and gen5's measured 0.88) on A100
		 * systems (DGX A100, EPYC 7742 root complex); no published bandwidthTest of a
		 * DGX A100 was found while sourcing these presets. */
		.h2d_Bps = 25.0 * GB,
		.d2h_Bps = 25.0 * GB,
		/* A100 systems with both directions busy: H2D measured at 11-13 GB/s while D2H
		 * stays ~24 GB/s (figures supplied with this project's brief, not re-measured
		 * here): 12/25 = 0.48 and 24/25 = 0.96. The asymmetry is the point: full
		 * offload sends grads down while params go up, and on these hosts H2D loses. */
		.duplex_h2d = 0.48,
		.duplex_d2h = 0.96,
		/* Estimate: equal to the gen5 fit, as for gen3. */
		.copy_latency_s = 4e-6,
		/* Estimate: staging-bound like gen5's measured 7/12 GB/s; slightly lower for the
		 * older host memory system. */
		.pageable_h2d_Bps = 6.0 * GB,
		.pageable_d2h_Bps = 10.0 * GB,
	},
	{
		.name = "gen5",
		/* Measured on the H200 machine (data file): 1 GiB pinned cudaMemcpyAsync
		 * 55.33 GB/s H2D, 55.31 GB/s D2H (0.88 of the 63.0 GB/s raw). */
		.h2d_Bps = 55.3 * GB,
		.d2h_Bps = 55.3 * GB,
		/* Measured: both directions at once 45.7-49.0 GB/s each for 16 MiB-1 GiB
		 * copies (48.81 at 1 GiB, 46.85 at 256 MiB): ~48/55.3 = 0.87. */
		.duplex_h2d = 0.87,
		.duplex_d2h = 0.87,
		/* Measured: t = latency + bytes/55.3e9 fits the 4 KB-1 MB rows with latency
		 * 4.2-4.5 us for H2D and 2.9-3.6 us for D2H (4 KB: 0.95 and 1.16 GB/s). One
		 * field for both directions: 4 us, so a 4 KB copy runs at ~1 GB/s. */
		.copy_latency_s = 4e-6,
		/* Measured: pageable 1 GiB cudaMemcpy, two runs: H2D 6.1-7.9, D2H 9.0-14.7 GB/s;
		 * midpoints rounded. */
		.pageable_h2d_Bps = 7.0 * GB,
		.pageable_d2h_Bps = 12.0 * GB,
	},
	{
		.name = "gen6",
		/* Projected, not measured: PCIe 6.0 doubles gen5's per-lane rate (64 GT/s PAM4,
		 * FLIT mode), so 2 x the gen5 measurement. No gen6 host was available. */
		.h2d_Bps = 110.6 * GB,
		.d2h_Bps = 110.6 * GB,
		/* Projected: the gen5 measurement. */
		.duplex_h2d = 0.87,
		.duplex_d2h = 0.87,
		/* Projected: the gen5 measurement (driver-bound, not link-bound). */
		.copy_latency_s = 4e-6,
		/* Projected: the gen5 measurement; pageable copies are bound by the host-side
		 * staging memcpy, which a faster link does not speed up. */
		.pageable_h2d_Bps = 7.0 * GB,
		.pageable_d2h_Bps = 12.0 * GB,
	},
	{
		.name = "nvlink-c2c",
		/* GH200's NVLink-C2C: 900 GB/s total, 450 GB/s per direction nominal (NVIDIA
		 * Grace Hopper Superchip architecture whitepaper). Achievable: estimate, 0.8 of
		 * nominal (below the 0.88 of raw that gen5 reaches on the H200 machine, to stay
		 * conservative); not measured by this project. */
		.h2d_Bps = 360.0 * GB,
		.d2h_Bps = 360.0 * GB,
		/* Estimate: C2C has separate lanes per direction; what two-way traffic really
		 * contends for is Grace's LPDDR5X, which the cpu preset's dram_Bps models. */
		.duplex_h2d = 0.9,
		.duplex_d2h = 0.9,
		/* Estimate: equal to the gen5 fit (driver submission dominates). */
		.copy_latency_s = 4e-6,
		/* Estimate: pageable copies are staged by one host thread's memcpy; a Grace
		 * core copies at a few tens of GB/s. */
		.pageable_h2d_Bps = 25.0 * GB,
		.pageable_d2h_Bps = 25.0 * GB,
	},
};

/* ---- GPUs ------------------------------------------------------------------ */

static const zb_gpu gpus[] = {
	{
		.name = "v100",
		/* V100 SXM2 32GB (NVIDIA V100 datasheet): 32 GiB HBM2. */
		.mem_bytes = 32.0 * GIB,
		/* Volta has no bf16 tensor cores: cuBLAS runs bf16 GEMMs on the CUDA cores at
		 * about the FP32 rate, 15.7 TFLOP/s (datasheet) x ACHIEVABLE_GEMM. Use fp16. */
		.bf16_flops = 15.7e12 * ACHIEVABLE_GEMM,
		/* Datasheet fp16 tensor 125 TFLOP/s x ACHIEVABLE_GEMM. */
		.fp16_flops = 125e12 * ACHIEVABLE_GEMM,
		/* Datasheet 900 GB/s x ACHIEVABLE_HBM. */
		.hbm_Bps = 900 * GB * ACHIEVABLE_HBM,
		/* Estimate: the H200 figure (tile and wave quantisation are similar). */
		.gemm_half_dim = 64,
		/* Estimate: the H200 figure. */
		.kernel_latency_s = 4e-6,
		.sms = 80, /* SMs (NVIDIA architecture whitepaper) */
		.l2_bytes = 6.0 * MIB, /* L2 6 MiB (NVIDIA Tesla V100 architecture whitepaper) */
	},
	{
		.name = "a100-40g",
		/* A100 SXM4 40GB (NVIDIA A100 datasheet): 40 GiB HBM2, 1555 GB/s, dense
		 * bf16/fp16 tensor 312 TFLOP/s (624 is with sparsity). */
		.mem_bytes = 40.0 * GIB,
		.bf16_flops = 312e12 * ACHIEVABLE_GEMM,
		.fp16_flops = 312e12 * ACHIEVABLE_GEMM,
		.hbm_Bps = 1555 * GB * ACHIEVABLE_HBM,
		.gemm_half_dim = 64,       /* estimate: the H200 figure */
		.kernel_latency_s = 4e-6,  /* estimate: the H200 figure */
		.sms = 108, /* SMs (NVIDIA architecture whitepaper) */
		.l2_bytes = 40.0 * MIB, /* L2 40 MB (NVIDIA A100 datasheet; architecture whitepaper) */
	},
	{
		.name = "a100-80g",
		/* A100 SXM4 80GB (NVIDIA A100 datasheet): 80 GiB HBM2e, 2039 GB/s, dense
		 * bf16/fp16 tensor 312 TFLOP/s. */
		.mem_bytes = 80.0 * GIB,
		.bf16_flops = 312e12 * ACHIEVABLE_GEMM,
		.fp16_flops = 312e12 * ACHIEVABLE_GEMM,
		.hbm_Bps = 2039 * GB * ACHIEVABLE_HBM,
		.gemm_half_dim = 64,       /* estimate: the H200 figure */
		.kernel_latency_s = 4e-6,  /* estimate: the H200 figure */
		.sms = 108, /* SMs (NVIDIA architecture whitepaper) */
		.l2_bytes = 40.0 * MIB, /* L2 40 MB (NVIDIA A100 datasheet; architecture whitepaper) */
	},
	{
		.name = "h100",
		/* H100 SXM5 80GB (NVIDIA H100 datasheet): 80 GiB HBM3, 3.35 TB/s, dense
		 * bf16/fp16 tensor 989.4 TFLOP/s (1979 is with sparsity). Same compute die as
		 * the H200, which measured 0.86 of that; ACHIEVABLE_GEMM (0.80) is kept here
		 * because the H100's lower memory bandwidth feeds its GEMMs less well. */
		.mem_bytes = 80.0 * GIB,
		.bf16_flops = 989.4e12 * ACHIEVABLE_GEMM,
		.fp16_flops = 989.4e12 * ACHIEVABLE_GEMM,
		.hbm_Bps = 3350 * GB * ACHIEVABLE_HBM,
		.gemm_half_dim = 64,       /* estimate: the H200 figure */
		.kernel_latency_s = 4e-6,  /* estimate: the H200 figure */
		.sms = 132, /* SMs (NVIDIA architecture whitepaper) */
		.l2_bytes = 50.0 * MIB, /* L2 50 MB (NVIDIA H100 architecture whitepaper, SXM5) */
	},
	{
		.name = "h200",
		/* Measured on the H200 machine: nvidia-smi memory.total 143771 MiB (616 MiB
		 * reserved, 143156 MiB = 139.8 GiB free); datasheet "141 GB". */
		.mem_bytes = 143771.0 * MIB,
		/* Measured (data file), bf16 cuBLAS: 4096^3 872, 8192^3 894, 4096x16384x4096
		 * 795-859, 2048x5120x5120 798-844, 8192x1280x5120 777-789 TFLOP/s. With
		 * gemm_half_dim 64 scaling each dim by d/(d+64), 850e12 reproduces the two
		 * gpt2-large shapes within +-3% (794 vs 777-789, 804 vs 798-844) and the
		 * square ones within -7%; 800e12 would undershoot every shape by 5-12%. This
		 * is 0.86 of the 989.4 TFLOP/s datasheet. */
		.bf16_flops = 850e12,
		/* Not measured: the datasheet fp16 and bf16 tensor rates are equal. */
		.fp16_flops = 850e12,
		/* Measured: device-to-device copy ~4.3 TB/s (read + write) of the 4.8 TB/s
		 * datasheet HBM3e. */
		.hbm_Bps = 4.3e12,
		/* Fitted to the GEMM shapes above (see bf16_flops). */
		.gemm_half_dim = 64,
		/* Estimate from the H200 machine: launch (~2-3 us) plus the tail of a kernel. */
		.kernel_latency_s = 4e-6,
		.sms = 132, /* SMs (NVIDIA architecture whitepaper) */
		.l2_bytes = 50.0 * MIB, /* L2 50 MB: the H100 SXM5 die (NVIDIA H100 architecture whitepaper) */
	},
	{
		.name = "b200",
		/* B200 (NVIDIA DGX B200 datasheet: 1440 GB HBM3e and 64 TB/s over 8 GPUs):
		 * 180 GiB and 8 TB/s per GPU; dense bf16/fp16 tensor 2.25 PFLOP/s (4.5 with
		 * sparsity, HGX B200 datasheet). */
		.mem_bytes = 180.0 * GIB,
		.bf16_flops = 2250e12 * ACHIEVABLE_GEMM,
		.fp16_flops = 2250e12 * ACHIEVABLE_GEMM,
		.hbm_Bps = 8000 * GB * ACHIEVABLE_HBM,
		.gemm_half_dim = 64,       /* estimate: the H200 figure */
		.kernel_latency_s = 4e-6,  /* estimate: the H200 figure */
		.sms = 148, /* SMs (NVIDIA architecture whitepaper) */
	},
	{
		.name = "gh200",
		/* GH200 96GB HBM3 version (NVIDIA GH200 datasheet): 96 GiB, 4 TB/s, the H100
		 * compute die: dense bf16/fp16 989.4 TFLOP/s. Its CPU link is NVLink-C2C. */
		.mem_bytes = 96.0 * GIB,
		.bf16_flops = 989.4e12 * ACHIEVABLE_GEMM,
		.fp16_flops = 989.4e12 * ACHIEVABLE_GEMM,
		.hbm_Bps = 4000 * GB * ACHIEVABLE_HBM,
		.gemm_half_dim = 64,       /* estimate: the H200 figure */
		.kernel_latency_s = 4e-6,  /* estimate: the H200 figure */
		.sms = 132, /* SMs (NVIDIA architecture whitepaper) */
		.l2_bytes = 50.0 * MIB, /* L2 50 MB: the H100 die (NVIDIA H100 architecture whitepaper) */
		.builtin_link = "nvlink-c2c",
	},
};

/* ---- CPUs ------------------------------------------------------------------ */

/* Two-socket machines: STREAM-class rates reach ~75-85% of the DDR peak (e.g. 74-79 % of
 * wire rate in TI's STREAM tables, SPRAD45A Table 3-3; the h200-machine's triad 137 GB/s
 * in its data file); the low end is taken since Adam plus DMA spans two NUMA nodes.
 * Estimate: no STREAM result of a DGX host was found while sourcing these presets. */
#define ACHIEVABLE_DRAM 0.75

/* The CPU law, one for every CPU (docs/hardware.md; sim/resources.c applies it):
 *   DRAM   dram_Bps = sockets x channels x MT/s x 8 B x ACHIEVABLE_DRAM, unless measured
 *   Adam   rate(t threads) = min(t x adam_params_per_core, adam_Bps, dram share) / 28 B,
 *          adam_Bps = ADAM_OF_DRAM x dram_Bps unless measured: Adam's own traffic stops
 *          short of what Adam and DMA move together. Measured on the h200-machine: Adam
 *          alone tops out at 4.4e9 x 28 B = 123 GB/s of the 150 GB/s both flows reach, 0.82.
 * So a part's cores raise the rate until its memory channels cap it; a CPU with more cores
 * than the part has is a hypothetical one (--hypothetical-cpu) with the same channels. */
#define DDR(ch, mts) ((ch) * (mts) * 1e6 * 8.0)
#define ADAM_OF_DRAM 0.82
/* Estimate for current server cores with AVX-512 (Zen 4, Zen 5, Xeon 6 P-cores): the
 * h200-machine's measured one-thread fused Adam, 0.71 Gparam/s (BENCHMARKS.md, zbench bench
 * --filter cpu-adam). Not measured on these parts; `zbench calibrate` there replaces it. */
#define ADAM_CORE_AVX512 0.71e9
/* Estimate of a typical build's host memory: one 64 GiB RDIMM per channel (--host-mem sets
 * the box's own). */
#define DIMMS(ch) ((ch) * 64.0 * GIB)

/* One socket of a current server CPU by the law above. */
#define SERVER_CPU(nm, c, ch, mts)                                                           \
	{                                                                                    \
		.name = nm, .cores = c, .adam_params_per_core = ADAM_CORE_AVX512,            \
		.dram_Bps = DDR(ch, mts) * ACHIEVABLE_DRAM,                                  \
		.adam_Bps = DDR(ch, mts) * ACHIEVABLE_DRAM * ADAM_OF_DRAM,                   \
		.mem_bytes = DIMMS(ch), .task_latency_s = 5e-6, .sockets = 1,                \
	}

static const zb_cpu cpus[] = {
	{
		.name = "h200-machine",
		/* Measured: 16-core Xeon (AVX-512, AMX), one socket, one NUMA node. */
		.cores = 16,
		/* Measured (BENCHMARKS.md, zbench bench --filter cpu-adam, 268M params): the
		 * fused AVX-512 Adam on one thread runs 0.712 Gparam/s (2 threads 1.47, 4: 2.55,
		 * 8: 3.73). Context: PyTorch's fused CPU AdamW reaches 3.8-3.9 Gparam/s on 16. */
		.adam_params_per_core = 0.71e9,
		/* Measured (data file): Adam alone on 16 threads runs 4.35-4.47 Gparam/s and no
		 * faster: its cores saturate the memory controller at 4.4e9 x 28 B = 123 GB/s,
		 * below the 150 GB/s Adam and DMA move together. */
		.adam_Bps = 4.4e9 * 28,
		/* Measured (data file): what Adam and PCIe DMA move together when both run:
		 * 15 threads, Adam 2.72-2.79 Gparam/s x 28 B = ~77 GB/s plus 65.3 GB/s of copies
		 * both ways = ~143 GB/s; 12 threads ~80 + 64 = ~144 GB/s; the data file's reading
		 * is ~150 GB/s. More than either flow alone (Adam ~123 GB/s, triad 137 GB/s), so
		 * this is the shared ceiling; Adam alone stays below it and is core-bound. */
		.dram_Bps = 150 * GB,
		/* Measured: free -b total 135148564480 bytes (125.9 GiB). */
		.mem_bytes = 135148564480.0,
		/* Estimate: waking a pool thread through a futex and handing it a bucket, a few
		 * microseconds on Linux. */
		.task_latency_s = 5e-6,
		/* Measured: lscpu shows one socket, one NUMA node. */
		.sockets = 1,
	},
	{
		.name = "h200-x2",
		/* The lent 2x H200 machine (device tool: 2 H200 of one host, 32 cores, 256 GiB
		 * memory): a slice of a larger host, twice the 16-core, 128 GiB h200-machine
		 * slice. Estimates until `zbench calibrate` measures it there: every rate is
		 * the h200-machine's measured one, doubled where the host resource is twice
		 * as large (same CPU generation assumed). */
		.cores = 32,
		.adam_params_per_core = 0.71e9, /* estimate: the h200-machine's measured rate */
		.adam_Bps = 2 * 4.4e9 * 28,     /* estimate: twice the h200-machine's ceiling */
		.dram_Bps = 2 * 150 * GB,       /* estimate: twice the h200-machine's measured budget */
		.mem_bytes = 256.0 * GIB,       /* device tool: 256 GiB */
		.task_latency_s = 5e-6,         /* estimate: as h200-machine */
		.sockets = 1,                   /* estimate: not seen yet (lscpu there will say) */
	},
	{
		.name = "dgx-2",
		/* DGX-2 (NVIDIA DGX-2 datasheet; ZeRO-Offload paper, Ren et al. USENIX ATC'21,
		 * Table 2, re-read from an image of it: "2 Intel Xeon Platinum 8168",
		 * "1.5TB 2666MHz DDR4", "bidirectional 32 GBps PCIe"): 24 cores each at 2.7 GHz
		 * (Intel ARK). */
		.cores = 48,
		/* Estimate: Skylake-SP with AVX-512 but lower AVX-512 clocks than the measured
		 * h200-machine (0.71e9 on one thread): ~0.3 of it. Not binding on the whole host:
		 * adam_Bps below caps 48 threads at 3.9 Gparam/s. */
		.adam_params_per_core = 0.2e9,
		/* Published measurement: ZeRO-Offload paper (arXiv:2101.06840) Table 4, DeepSpeed
		 * CPU-Adam on this host: 1B params 0.22 s, 2B 0.51, 4B 1.03, 8B 2.41, 10B 2.57 s
		 * (re-read from an image of the table), i.e. 3.3-4.5 Gparam/s, median
		 * 3.9 Gparam/s x 28 B. */
		.adam_Bps = 3.9e9 * 28,
		/* 6 channels DDR4-2666 per socket (Intel ARK): 2 x 128 GB/s peak, x
		 * ACHIEVABLE_DRAM (estimate: no STREAM result for this host was found). */
		.dram_Bps = 2 * 128 * GB * ACHIEVABLE_DRAM,
		.mem_bytes = 1.5 * TIB,
		.task_latency_s = 5e-6,    /* estimate: as h200-machine */
		/* Two sockets (DGX-2 datasheet). UPI: 3 links at 10.4 GT/s (Intel ARK, Xeon
		 * 8168), 20.8 GB/s each way per link (vendor figure for 10.4 GT/s x 2 B). */
		.sockets = 2,
		.xsocket_Bps = 3 * 20.8 * GB,
	},
	{
		.name = "dgx-a100",
		/* DGX A100 (NVIDIA DGX A100 datasheet): 2x AMD EPYC 7742, 64 cores each, 2 TB
		 * DDR4 in the 640 GB (a100-80g) system. */
		.cores = 128,
		/* Estimate: Zen 2 has no AVX-512, so a SIMD Adam runs 256-bit AVX2: about half
		 * the measured AVX-512 per-core rate, rounded up for the higher clocks. No
		 * published CPU-Adam measurement of an EPYC 7742 was found; Adam's ceiling is the
		 * law's ADAM_OF_DRAM of dram_Bps below (an estimate). */
		.adam_params_per_core = 0.15e9,
		/* 8 channels DDR4-3200 per socket (AMD EPYC 7742 spec): 2 x 204.8 GB/s peak,
		 * x ACHIEVABLE_DRAM. */
		.dram_Bps = 2 * 204.8 * GB * ACHIEVABLE_DRAM,
		.adam_Bps = 2 * 204.8 * GB * ACHIEVABLE_DRAM * ADAM_OF_DRAM,
		.mem_bytes = 2.0 * TIB,
		.task_latency_s = 5e-6,    /* estimate: as h200-machine */
		/* Two sockets (DGX A100 datasheet). xGMI: estimate, 4 links x16 at 16 GT/s
		 * between the sockets, 32 GB/s each way per link (PCIe gen4 signalling rate);
		 * the DGX's actual link count was not found. */
		.sockets = 2,
		.xsocket_Bps = 4 * 32 * GB,
	},
	{
		.name = "dgx-h100",
		/* DGX H100 (NVIDIA DGX H100 datasheet): 2x Xeon Platinum 8480C, 56 cores each,
		 * 2 TB DDR5. */
		.cores = 112,
		/* Estimate: Sapphire Rapids, the same AVX-512/AMX core generation as the
		 * measured h200-machine, whose 16 threads run Adam at 4.4 Gparam/s, 0.275e9 each
		 * (one thread alone: 0.71e9); the all-thread figure is taken. No published CPU-Adam measurement of a
		 * Xeon 8480C was found; Adam's ceiling is the law's ADAM_OF_DRAM of dram_Bps
		 * below (an estimate). */
		.adam_params_per_core = 0.275e9,
		/* 8 channels DDR5-4800 per socket (Intel ARK): 2 x 307.2 GB/s peak, x
		 * ACHIEVABLE_DRAM. */
		.dram_Bps = 2 * 307.2 * GB * ACHIEVABLE_DRAM,
		.adam_Bps = 2 * 307.2 * GB * ACHIEVABLE_DRAM * ADAM_OF_DRAM,
		.mem_bytes = 2.0 * TIB,
		.task_latency_s = 5e-6,    /* estimate: as h200-machine */
		/* Two sockets (DGX H100 datasheet). UPI 2.0: 4 links at 16 GT/s (Intel ARK,
		 * Xeon 8480+), 32 GB/s each way per link (16 GT/s x 2 B: estimate of the
		 * usable rate, Intel gives only the transfer rate). */
		.sockets = 2,
		.xsocket_Bps = 4 * 32 * GB,
	},
	{
		.name = "gh200",
		/* Grace (NVIDIA GH200 datasheet): 72 Arm Neoverse V2 cores, up to 480 GB
		 * LPDDR5X at ~500 GB/s (the architecture whitepaper quotes up to 546 GB/s). */
		.cores = 72,
		/* Estimate: 4x128-bit SVE2 pipes per core, half the vector width of an AVX-512
		 * core but higher clocks: ~0.75 of the measured h200-machine's all-thread rate
		 * per core (0.275e9). */
		.adam_params_per_core = 0.2e9,
		/* Published measurement: SuperOffload blog (Lian et al., DeepSpeed repository,
		 * blogs/deepspeed-superoffload, Figure 5, a table image), DeepSpeed CPU-Adam on
		 * one GH200's Grace: 1B params 0.098 s, 2B 0.198, 4B 0.393, 8B 0.769 s, i.e.
		 * 10.1-10.4 Gparam/s, median 10.2 Gparam/s x 28 B (threads not stated: all
		 * cores taken). The datasheet estimate before it (dram_Bps below / 28 = 14.3
		 * Gparam/s) was 40 % too fast: it put these steps 27-29 % short. GraceAdam,
		 * SVE-tuned, runs 13.2 Gparam/s in the same table; zbench models DeepSpeed's
		 * CPU-Adam. */
		.adam_Bps = 10.2e9 * 28,
		/* Estimate: 0.8 of the 500 GB/s datasheet figure; one socket, one NUMA node, so
		 * a higher fraction than ACHIEVABLE_DRAM. */
		.dram_Bps = 500 * GB * 0.8,
		.mem_bytes = 480 * GB,
		.task_latency_s = 5e-6,    /* estimate: as h200-machine */
		.sockets = 1,              /* one Grace die, one NUMA node of CPU memory */
	},
	/* AMD EPYC 9004 (Genoa, Zen 4), one socket: cores and "12 channels DDR5-4800,
	 * 460.8 GB/s per socket" from AMD's product pages (amd.com, EPYC 9124 / 9354 / 9554 /
	 * 9654 specifications). */
	SERVER_CPU("epyc-9124", 16, 12, 4800),
	SERVER_CPU("epyc-9354", 32, 12, 4800),
	SERVER_CPU("epyc-9554", 64, 12, 4800),
	SERVER_CPU("epyc-9654", 96, 12, 4800),
	/* AMD EPYC 9005 (Turin, Zen 5), one socket: cores and "12 channels DDR5-6000, 576 GB/s
	 * per socket" from AMD's product pages (amd.com, EPYC 9135 / 9355 / 9555 / 9755). */
	SERVER_CPU("epyc-9135", 16, 12, 6000),
	SERVER_CPU("epyc-9355", 32, 12, 6000),
	SERVER_CPU("epyc-9555", 64, 12, 6000),
	SERVER_CPU("epyc-9755", 128, 12, 6000),
	/* Intel Xeon 6 (Granite Rapids, P-cores), one socket, Intel's product pages (ark.intel.com):
	 * 6700P series 8 channels DDR5-6400 (6732P 32 cores, 6776P 64 cores), 6900P series 12
	 * channels DDR5-6400 (6980P 128 cores); MRDIMM-8800 is faster, give --dram-bw for it. */
	SERVER_CPU("xeon-6732p", 32, 8, 6400),
	SERVER_CPU("xeon-6776p", 64, 8, 6400),
	SERVER_CPU("xeon-6980p", 128, 12, 6400),
	{
		.name = "grace-superchip",
		/* NVIDIA Grace CPU Superchip datasheet (nvidia.com): two Grace dies joined by
		 * NVLink-C2C, 144 Arm Neoverse V2 cores, up to 960 GB LPDDR5X at up to 1 TB/s. */
		.cores = 144,
		/* Estimate: the gh200 preset's per-core figure (one Grace die of the same cores). */
		.adam_params_per_core = 0.2e9,
		/* Twice the gh200 preset's measured DeepSpeed CPU-Adam of one Grace die (10.2
		 * Gparam/s, SuperOffload blog): estimate, each die runs on its own memory. */
		.adam_Bps = 2 * 10.2e9 * 28,
		/* Estimate: 0.8 of the 1 TB/s datasheet figure, as for gh200. */
		.dram_Bps = 1000 * GB * 0.8,
		.mem_bytes = 960 * GB,
		.task_latency_s = 5e-6,    /* estimate: as h200-machine */
		/* Two dies, two NUMA nodes; between them NVLink-C2C, 900 GB/s both ways (datasheet). */
		.sockets = 2,
		.xsocket_Bps = 450 * GB,
	},
};

/* ---- models ---------------------------------------------------------------- */

/* GPT-2 (Radford et al. 2019; Hugging Face config.json of gpt2, gpt2-medium,
 * gpt2-large, gpt2-xl): LayerNorm and biases, GeLU MLP of 4 x hidden, 50257 tokens,
 * 1024 learned positions, LM head tied to the token embedding. */
#define GPT2(nm, l, h, nh)                                                                   \
	{                                                                                    \
		.name = nm, .layers = l, .hidden = h, .heads = nh, .kv_heads = nh,           \
		.ffn = 4 * (h), .vocab = 50257, .max_seq = 1024, .gated_mlp = 0, .bias = 1,   \
		.tied_embeddings = 1, .embed_proj = 0                                         \
	}
/* OPT (Zhang et al. 2022, Table 1; HF facebook/opt-* config.json): GPT-2-like blocks
 * (ReLU instead of GeLU, same shapes), 50272 tokens, 2048 learned positions (HF's table
 * has 2 extra offset rows, ignored), tied LM head. */
#define OPT(nm, l, h, nh)                                                                    \
	{                                                                                    \
		.name = nm, .layers = l, .hidden = h, .heads = nh, .kv_heads = nh,           \
		.ffn = 4 * (h), .vocab = 50272, .max_seq = 2048, .gated_mlp = 0, .bias = 1,   \
		.tied_embeddings = 1, .embed_proj = 0                                         \
	}
/* Llama 2 (Touvron et al. 2023; HF meta-llama/Llama-2-*-hf config.json): RMSNorm, no
 * biases, SwiGLU MLP, rotary positions, 32000 tokens, untied LM head. */
#define LLAMA(nm, l, h, nh, nkv, f)                                                          \
	{                                                                                    \
		.name = nm, .layers = l, .hidden = h, .heads = nh, .kv_heads = nkv,          \
		.ffn = f, .vocab = 32000, .max_seq = 0, .gated_mlp = 1, .bias = 0,            \
		.tied_embeddings = 0, .embed_proj = 0                                         \
	}

static const zb_model models[] = {
	GPT2("gpt2", 12, 768, 12),         /* 124M */
	GPT2("gpt2-medium", 24, 1024, 16), /* 355M */
	GPT2("gpt2-large", 36, 1280, 20),  /* 774M: the reference model */
	GPT2("gpt2-xl", 48, 1600, 25),     /* 1.558B */
	/* GPT-2 style 2.5B (32 x 2560, ffn 10240, 2048 positions), the shape of the
	 * ~2.5B GPT-2 configurations used in the ZeRO-Offload and Megatron experiments. */
	{
		.name = "gpt-2.5b", .layers = 32, .hidden = 2560, .heads = 32, .kv_heads = 32,
		.ffn = 10240, .vocab = 50257, .max_seq = 2048, .gated_mlp = 0, .bias = 1,
		.tied_embeddings = 1, .embed_proj = 0,
	},
	OPT("opt-1.3b", 24, 2048, 32),  /* 1.316B */
	OPT("opt-13b", 40, 5120, 40),   /* 12.85B */
	OPT("opt-30b", 48, 7168, 56),   /* 29.97B */
	LLAMA("llama2-7b", 32, 4096, 32, 32, 11008),  /* 6.738B */
	LLAMA("llama2-13b", 40, 5120, 40, 40, 13824), /* 13.016B */
	/* Grouped-query attention: 8 kv heads; ffn 28672. */
	LLAMA("llama2-70b", 80, 8192, 64, 8, 28672),  /* 68.98B */
};

/* ---- machines -------------------------------------------------------------- */

typedef struct hw_preset {
	const char *name, *link, *gpu, *cpu;
	int gpus_per_link, gpus_per_cpu;
} hw_preset;

static const hw_preset machines[] = {
	/* The machine this project measures on: one H200 on PCIe gen5 x16, 16 cores. */
	{"h200-machine", "gen5", "h200", "h200-machine", 1, 1},
	/* DGX-2 (NVIDIA DGX-2 datasheet): 16 V100 on gen3 behind PCIe switches, one 2-socket
	 * host; gpus_per_cpu 16 is the full machine (3 threads per GPU), a one-GPU run as
	 * in the ZeRO-Offload paper takes --gpus-per-cpu 1. Each GPU has its own x16 to a
	 * switch, and pairs share the switch's uplink to the CPU: gpus_per_link 2, which
	 * divides the link only when --gpus puts two ranks behind a switch (sim/resources.h),
	 * so a one-GPU run keeps its link. Fabric (fabric.c): NVSwitch, 8x EDR between nodes. */
	{"dgx-2", "gen3", "v100", "dgx-2", 2, 16},
	/* DGX A100 (640 GB) (NVIDIA DGX A100 datasheet): 8 A100-80GB on gen4, 2x EPYC 7742.
	 * gpus_per_cpu 8: the full machine; a one-GPU run takes --gpus-per-cpu 1.
	 * gpus_per_link 2: four PCIe gen4 switches, each with two GPUs and two HDR NICs
	 * behind one uplink to the CPU (DGX A100 User Guide, system topology); it divides
	 * the link only when --gpus puts two ranks behind a switch (sim/resources.h).
	 * Fabric (fabric.c): NVSwitch, 8x HDR 200 Gb/s between nodes. */
	{"dgx-a100", "gen4", "a100-80g", "dgx-a100", 2, 8},
	/* DGX H100 (NVIDIA DGX H100 datasheet): 8 H100 SXM on gen5, 2x Xeon 8480C.
	 * gpus_per_cpu 8: the full machine; a one-GPU run takes --gpus-per-cpu 1.
	 * gpus_per_link 2: PCIe gen5 switches with two GPUs (and their NDR NICs) behind
	 * one uplink to the CPU (DGX H100 User Guide, system topology), as on the A100.
	 * Fabric (fabric.c): NVSwitch gen 3, 8x NDR 400 Gb/s between nodes. */
	{"dgx-h100", "gen5", "h100", "dgx-h100", 2, 8},
	/* The lent 2x H200 machine (device tool, nvidia-h200-x2): two H200 on gen5, 32
	 * cores; their NVLink fabric: fabric.c (nvlink-h200, until calibrated). */
	{"h200-x2", "gen5", "h200", "h200-x2", 1, 1},
	/* One GH200 superchip: Grace and Hopper joined by NVLink-C2C. */
	{"gh200", "nvlink-c2c", "gh200", "gh200", 1, 1},
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- lookup ---------------------------------------------------------------- */

/* "gen3, gen4, ..." for an error message. */
static void known_list(const char *family, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	int count = zb_preset_count(family);
	for (int i = 0; i < count && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "",
					zb_preset_name(family, i));
}

static zb_status unknown(const char *family, const char *what, const char *name, zb_error *err)
{
	char known[400];
	known_list(family, known, sizeof known);
	return zb_fail(err, ZB_E_INPUT, "unknown %s '%s' (known: %s)", what, name ? name : "",
		       known);
}

zb_status zb_preset_link(const char *name, zb_link *out, zb_error *err)
{
	for (int i = 0; name && i < COUNT(links); i++)
		if (strcmp(name, links[i].name) == 0) {
			*out = links[i];
			return ZB_OK;
		}
	return unknown("pcie", "pcie generation", name, err);
}

zb_status zb_preset_gpu(const char *name, zb_gpu *out, zb_error *err)
{
	for (int i = 0; name && i < COUNT(gpus); i++)
		if (strcmp(name, gpus[i].name) == 0) {
			/* first principles only, like every GPU: a calibrated profile is an overlay the
			 * user names (--hw FILE, e.g. hw/h200-machine-executor.json) */
			*out = gpus[i];
			return ZB_OK;
		}
	return unknown("gpu", "gpu", name, err);
}

zb_status zb_preset_cpu(const char *name, zb_cpu *out, zb_error *err)
{
	for (int i = 0; name && i < COUNT(cpus); i++)
		if (strcmp(name, cpus[i].name) == 0) {
			*out = cpus[i];
			return ZB_OK;
		}
	return unknown("cpu", "cpu", name, err);
}

zb_status zb_preset_model(const char *name, zb_model *out, zb_error *err)
{
	for (int i = 0; name && i < COUNT(models); i++)
		if (strcmp(name, models[i].name) == 0) {
			*out = models[i];
			return ZB_OK;
		}
	return unknown("model", "model", name, err);
}

zb_status zb_preset_hw(const char *name, zb_hw *out, zb_error *err)
{
	for (int i = 0; name && i < COUNT(machines); i++) {
		const hw_preset *m = &machines[i];
		if (strcmp(name, m->name) != 0)
			continue;
		zb_hw hw;
		memset(&hw, 0, sizeof hw);
		snprintf(hw.name, sizeof hw.name, "%s", m->name);
		zb_error part;
		if (zb_preset_link(m->link, &hw.link, &part) != ZB_OK ||
		    zb_preset_gpu(m->gpu, &hw.gpu, &part) != ZB_OK ||
		    zb_preset_cpu(m->cpu, &hw.cpu, &part) != ZB_OK)
			return zb_fail(err, ZB_E_INTERNAL, "machine preset %s: %s", m->name,
				       part.msg);
		hw.gpus_per_link = m->gpus_per_link;
		hw.gpus_per_cpu = m->gpus_per_cpu;
		zb_machine_fabric(m->name, &hw.fabric);
		*out = hw;
		return ZB_OK;
	}
	return unknown("hw", "machine", name, err);
}

void zb_preset_default_hw(zb_hw *out)
{
	zb_status st = zb_preset_hw("h200-machine", out, NULL);
	(void)st; /* a built-in preset; the tests check it loads */
}

void zb_preset_default_model(zb_model *out)
{
	zb_status st = zb_preset_model("gpt2-large", out, NULL);
	(void)st;
}

int zb_preset_count(const char *family)
{
	if (!family)
		return 0;
	if (strcmp(family, "pcie") == 0 || strcmp(family, "link") == 0)
		return COUNT(links);
	if (strcmp(family, "gpu") == 0)
		return COUNT(gpus);
	if (strcmp(family, "cpu") == 0)
		return COUNT(cpus);
	if (strcmp(family, "model") == 0)
		return COUNT(models);
	if (strcmp(family, "hw") == 0)
		return COUNT(machines);
	return 0;
}

const char *zb_preset_name(const char *family, int i)
{
	if (i < 0 || i >= zb_preset_count(family))
		return NULL;
	if (strcmp(family, "pcie") == 0 || strcmp(family, "link") == 0)
		return links[i].name;
	if (strcmp(family, "gpu") == 0)
		return gpus[i].name;
	if (strcmp(family, "cpu") == 0)
		return cpus[i].name;
	if (strcmp(family, "model") == 0)
		return models[i].name;
	return machines[i].name;
}

/* ---- sources ----------------------------------------------------------------- */

/* Where each preset's figures come from, in one line each: the comments above in short,
 * for `zbench report` and `zbench list presets`. "measured" is this project's own
 * measurement (data/, BENCHMARKS.md), "datasheet" a vendor figure, "estimate" neither. */
static const struct { const char *family, *name, *source; } sources[] = {
	{ "pcie", "gen3", "estimate: ~12 GB/s pinned, the usual bandwidthTest result on gen3 x16 hosts; duplex, latency and pageable as gen5 or scaled" },
	{ "pcie", "gen4", "estimate: ~25 GB/s pinned (0.79 of the 31.5 GB/s raw); duplex 0.48/0.96 reported for A100 hosts" },
	{ "pcie", "gen5", "measured on the H200 machine: 55.3 GB/s pinned each way, 0.87 duplex, 4 us per copy, pageable 7/12 GB/s" },
	{ "pcie", "gen6", "projection: twice the gen5 measurement; no gen6 host measured" },
	{ "pcie", "nvlink-c2c", "datasheet: 450 GB/s per direction (Grace Hopper whitepaper) x 0.8 (estimate)" },
	{ "gpu", "v100", "datasheet: 32 GiB, 125 TFLOP/s fp16 tensor, 900 GB/s; x0.80 GEMM and x0.90 HBM achievable (the H200's measured fractions)" },
	{ "gpu", "a100-40g", "datasheet: 40 GiB, 312 TFLOP/s bf16, 1555 GB/s; x0.80 / x0.90 achievable" },
	{ "gpu", "a100-80g", "datasheet: 80 GiB, 312 TFLOP/s bf16, 2039 GB/s; x0.80 / x0.90 achievable" },
	{ "gpu", "h100", "datasheet: 80 GiB, 989 TFLOP/s bf16, 3.35 TB/s; x0.80 / x0.90 achievable" },
	{ "gpu", "h200", "measured on the H200 machine: 850 TFLOP/s bf16 GEMMs (0.86 of 989), 4.3 TB/s device copy, 143771 MiB" },
	{ "gpu", "b200", "datasheet (DGX/HGX B200): 180 GiB, 2250 TFLOP/s bf16, 8 TB/s; x0.80 / x0.90 achievable" },
	{ "gpu", "gh200", "datasheet: 96 GiB HBM3, 989 TFLOP/s bf16, 4 TB/s; x0.80 / x0.90 achievable; NVLink-C2C link" },
	{ "cpu", "h200-machine", "measured: 16 cores, Adam 0.71 Gparam/s on one thread and 4.4 on 16, 150 GB/s Adam + DMA, 125.9 GiB" },
	{ "cpu", "h200-x2", "estimate: the h200-machine's measured rates, doubled where the host is twice as large (32 cores, 256 GiB)" },
	{ "cpu", "dgx-2", "datasheet 2x Xeon 8168 (48 cores, 6ch DDR4-2666 each); published DeepSpeed CPU-Adam 3.9 Gparam/s (ZeRO-Offload paper, Table 4)" },
	{ "cpu", "dgx-a100", "datasheet 2x EPYC 7742 (128 cores, 8ch DDR4-3200 each) x0.75; Adam per core estimate (AVX2)" },
	{ "cpu", "dgx-h100", "datasheet 2x Xeon 8480C (112 cores, 8ch DDR5-4800 each) x0.75; Adam per core estimate" },
	{ "cpu", "gh200", "datasheet Grace (72 cores, 480 GB LPDDR5X, 500 GB/s x0.8 estimate); published DeepSpeed CPU-Adam 10.2 Gparam/s (SuperOffload blog)" },
	{ "cpu", "epyc-9124", "AMD product page: 16 cores, 12ch DDR5-4800 (460.8 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "epyc-9354", "AMD product page: 32 cores, 12ch DDR5-4800 (460.8 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "epyc-9554", "AMD product page: 64 cores, 12ch DDR5-4800 (460.8 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "epyc-9654", "AMD product page: 96 cores, 12ch DDR5-4800 (460.8 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "epyc-9135", "AMD product page: 16 cores, 12ch DDR5-6000 (576 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "epyc-9355", "AMD product page: 32 cores, 12ch DDR5-6000 (576 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "epyc-9555", "AMD product page: 64 cores, 12ch DDR5-6000 (576 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "epyc-9755", "AMD product page: 128 cores, 12ch DDR5-6000 (576 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "xeon-6732p", "Intel product page: 32 cores, 8ch DDR5-6400 (409.6 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "xeon-6776p", "Intel product page: 64 cores, 8ch DDR5-6400 (409.6 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "xeon-6980p", "Intel product page: 128 cores, 12ch DDR5-6400 (614.4 GB/s) x0.75; Adam 0.71 Gparam/s per core estimate (AVX-512)" },
	{ "cpu", "grace-superchip", "NVIDIA datasheet: 144 cores, 960 GB LPDDR5X, 1 TB/s x0.8 estimate; Adam twice gh200's published rate (estimate)" },
};

const char *zb_preset_source(const char *family, const char *name)
{
	for (size_t i = 0; family && name && i < sizeof sources / sizeof sources[0]; i++)
		if (!strcmp(sources[i].family, family) && !strcmp(sources[i].name, name))
			return sources[i].source;
	return NULL;
}

/* ---- listing --------------------------------------------------------------- */

void zb_presets_print(FILE *f)
{
	fprintf(f, "# links\n");
	fprintf(f, "#%-13s %8s %8s %7s %7s %8s %9s %9s\n", "name", "h2d", "d2h", "duplex",
		"duplex", "latency", "pageable", "pageable");
	fprintf(f, "#%-13s %8s %8s %7s %7s %8s %9s %9s\n", "", "GB/s", "GB/s", "h2d", "d2h", "us",
		"h2d GB/s", "d2h GB/s");
	for (int i = 0; i < COUNT(links); i++) {
		const zb_link *l = &links[i];
		fprintf(f, " %-13s %8.1f %8.1f %7.2f %7.2f %8.1f %9.1f %9.1f\n", l->name,
			l->h2d_Bps / GB, l->d2h_Bps / GB, l->duplex_h2d, l->duplex_d2h,
			l->copy_latency_s * 1e6, l->pageable_h2d_Bps / GB, l->pageable_d2h_Bps / GB);
	}

	fprintf(f, "\n# gpus\n");
	fprintf(f, "#%-13s %8s %8s %8s %8s %9s %8s  %s\n", "name", "memory", "bf16", "fp16", "hbm",
		"gemm half", "kernel", "link");
	fprintf(f, "#%-13s %8s %8s %8s %8s %9s %8s\n", "", "GiB", "TFLOP/s", "TFLOP/s", "TB/s",
		"dim", "us");
	for (int i = 0; i < COUNT(gpus); i++) {
		const zb_gpu *g = &gpus[i];
		fprintf(f, " %-13s %8.1f %8.1f %8.1f %8.2f %9.0f %8.1f  %s\n", g->name,
			g->mem_bytes / GIB, g->bf16_flops / 1e12, g->fp16_flops / 1e12,
			g->hbm_Bps / 1e12, g->gemm_half_dim, g->kernel_latency_s * 1e6,
			g->builtin_link[0] ? g->builtin_link : "-");
	}

	fprintf(f, "\n# cpus\n");
	fprintf(f, "#%-15s %6s %10s %9s %8s %8s %8s %7s %9s\n", "name", "cores", "adam/core", "adam max",
		"dram", "memory", "task", "sockets", "x-socket");
	fprintf(f, "#%-15s %6s %10s %9s %8s %8s %8s %7s %9s\n", "", "", "Gparam/s", "Gparam/s", "GB/s",
		"GiB", "us", "", "GB/s");
	for (int i = 0; i < COUNT(cpus); i++) {
		const zb_cpu *c = &cpus[i];
		/* the whole host: all cores, capped by Adam's memory ceiling (dram_Bps if unset) */
		double all = c->cores * c->adam_params_per_core;
		double cap = (c->adam_Bps > 0 ? c->adam_Bps : c->dram_Bps) / 28.0;
		fprintf(f, " %-15s %6d %10.3f %9.2f %8.1f %8.0f %8.1f %7d %9.1f\n", c->name, c->cores,
			c->adam_params_per_core / 1e9, (all < cap ? all : cap) / 1e9, c->dram_Bps / GB,
			c->mem_bytes / GIB, c->task_latency_s * 1e6, c->sockets > 1 ? c->sockets : 1,
			c->xsocket_Bps / GB);
	}

	fprintf(f, "\n# models\n");
	fprintf(f, "#%-13s %6s %6s %5s %5s %6s %6s %7s %9s %-5s %-4s %s\n", "name", "layers",
		"hidden", "heads", "kv", "ffn", "vocab", "max_seq", "params", "mlp", "bias", "head");
	fprintf(f, "#%-13s %6s %6s %5s %5s %6s %6s %7s %9s %s\n", "", "", "", "", "heads", "",
		"", "", "M", "");
	for (int i = 0; i < COUNT(models); i++) {
		const zb_model *m = &models[i];
		fprintf(f, " %-13s %6d %6d %5d %5d %6d %6d %7d %9.1f %-5s %-4s %s\n", m->name,
			m->layers, m->hidden, m->heads, m->kv_heads, m->ffn, m->vocab, m->max_seq,
			(double)zb_model_params(m) / 1e6, m->gated_mlp ? "gated" : "plain",
			m->bias ? "yes" : "no", m->tied_embeddings ? "tied" : "untied");
	}

	fprintf(f, "\n# machines\n");
	fprintf(f, "#%-13s %-11s %-9s %-13s %9s %8s\n", "name", "link", "gpu", "cpu", "gpus per",
		"gpus per");
	fprintf(f, "#%-13s %-11s %-9s %-13s %9s %8s\n", "", "", "", "", "link", "cpu");
	for (int i = 0; i < COUNT(machines); i++) {
		const hw_preset *m = &machines[i];
		fprintf(f, " %-13s %-11s %-9s %-13s %9d %8d\n", m->name, m->link, m->gpu, m->cpu,
			m->gpus_per_link, m->gpus_per_cpu);
	}
	zb_fabrics_print(f);
	fprintf(f, "\n# sources (inputs/presets.c has each in full; docs/hardware.md the CPU law)\n");
	for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++)
		fprintf(f, " %-5s %-16s %s\n", sources[i].family, sources[i].name, sources[i].source);
}
