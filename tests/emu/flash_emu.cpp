/*
 * flash_emu.cpp - runs the FlashAttention-2 kernels of exec/flash_mma.cu on the CPU,
 * unchanged, and checks O, lse, dQ, dK, dV against a double-precision reference
 * (the checks of tests/gpu/test_flash_attn, on smaller shapes): a way to test the
 * kernels' loops, masks, tiling and barriers where there is no GPU.
 *
 * Each CTA runs as 128 or 256 POSIX threads (one per CUDA thread) over one shared-memory
 * buffer; the warp-wide instructions are emulated from the PTX ISA's definitions:
 * ldmatrix .x4 (plain and .trans) and mma.sync m16n8k16 exchange their operands
 * through a per-warp slot array between two warp barriers, __shfl_xor_sync the same
 * way, __syncthreads is a barrier of the whole CTA. cp.async copies are deferred until
 * cp.async.wait_group (so a read before the wait sees stale data, not the new tile),
 * shared memory starts as NaN bytes (0xff) for every CTA, and every ldmatrix and
 * cp.async address is checked to lie inside the launch's shared memory and to be
 * 16-byte aligned. Float atomics take a mutex.
 *
 * Build and run: scripts/flash-emu.sh [case [fwd_mw [bwd_br [bwd_w]]]] (g++, CUDA headers for the
 * bf16 type only); -1 for every case, 0 for the kernels' default tiles.
 */
#include <cuda_runtime.h>
#include <cuda_bf16.h>

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <thread>
#include <vector>

#include "exec/cuda_check.h"

/* ---- the CUDA execution model, on threads ------------------------------------------ */

#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __shared__
#define __shared__
#undef threadIdx
#undef blockIdx
#undef gridDim

#define EMU_THREADS 256 /* at most */
#define EMU_SMEM (228 * 1024)

alignas(128) unsigned char smem[EMU_SMEM]; /* the kernels' extern __shared__ array */
static size_t g_smem_bytes;                /* this launch's dynamic size */
static uint3 g_block, g_grid;
static thread_local uint3 t_thread;
#define threadIdx t_thread
#define blockIdx g_block
#define gridDim g_grid

static pthread_barrier_t g_cta_bar[2]; /* 128 and 256 threads */
static int g_threads = 128;                /* this launch's block size */
struct warp_slots {
	pthread_barrier_t bar;
	const void *ptr[32];
	uint32_t a[32][4], b[32][2];
	float f[32];
};
static warp_slots g_warp[EMU_THREADS / 32];
static std::mutex g_atomic;
struct pending_copy {
	void *dst;
	const void *src;
};
static thread_local std::vector<pending_copy> t_copies;

static void emu_fail(const char *what)
{
	fprintf(stderr, "flash_emu: %s (block %u %u %u, thread %u)\n", what, g_block.x, g_block.y, g_block.z,
		t_thread.x);
	abort();
}

static void check_smem(const void *p, size_t n, const char *what)
{
	const unsigned char *c = (const unsigned char *)p;
	if (c < smem || c + n > smem + g_smem_bytes)
		emu_fail(what);
	if ((uintptr_t)c % 16)
		emu_fail("shared address not 16-byte aligned");
}

static void __syncthreads(void) { pthread_barrier_wait(&g_cta_bar[g_threads == 256]); }
static warp_slots &my_warp(void) { return g_warp[t_thread.x / 32]; }
static void warp_sync(void) { pthread_barrier_wait(&my_warp().bar); }

static float __shfl_xor_sync(unsigned mask, float v, int x)
{
	warp_slots &w = my_warp();
	int lane = t_thread.x % 32;
	if (mask != 0xffffffffu)
		emu_fail("partial shuffle mask");
	w.f[lane] = v;
	warp_sync();
	float r = w.f[lane ^ x];
	warp_sync();
	return r;
}

static void atomicAdd(float *p, float v)
{
	std::lock_guard<std::mutex> g(g_atomic);
	*p += v;
}

typedef __nv_bfloat16 bf16;

static uint16_t lane_b16(const void *row, int i) { return ((const uint16_t *)row)[i]; }

/* ldmatrix .x4: lanes 8j..8j+7 address the rows of matrix j; lane L receives row L/4,
 * elements 2(L%4), 2(L%4)+1 of matrix j (trans: of its transpose). */
static void emu_ldsm(uint32_t r[], const bf16 *p, int trans, int nmat)
{
	warp_slots &w = my_warp();
	int lane = t_thread.x % 32;
	if (lane < 8 * nmat)
		check_smem(p, 16, "ldmatrix row outside shared memory");
	w.ptr[lane] = p;
	warp_sync();
	for (int j = 0; j < nmat; j++) {
		uint16_t lo, hi;
		if (!trans) {
			const void *row = w.ptr[8 * j + lane / 4];
			lo = lane_b16(row, 2 * (lane % 4)), hi = lane_b16(row, 2 * (lane % 4) + 1);
		} else {
			lo = lane_b16(w.ptr[8 * j + 2 * (lane % 4)], lane / 4);
			hi = lane_b16(w.ptr[8 * j + 2 * (lane % 4) + 1], lane / 4);
		}
		r[j] = (uint32_t)lo | (uint32_t)hi << 16;
	}
	warp_sync();
}
static void ldsm_x4(uint32_t r[4], const bf16 *p) { emu_ldsm(r, p, 0, 4); }
static void ldsm_x4_t(uint32_t r[4], const bf16 *p) { emu_ldsm(r, p, 1, 4); }
static void ldsm_x2_t(uint32_t r[2], const bf16 *p) { emu_ldsm(r, p, 1, 2); }

static float b16f(uint32_t reg, int hi)
{
	uint32_t bits = (hi ? reg >> 16 : reg & 0xffff) << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/* mma.sync m16n8k16 row.col f32.bf16.bf16.f32, fragments per the PTX ISA tables */
static void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	warp_slots &w = my_warp();
	int lane = t_thread.x % 32;
	memcpy(w.a[lane], a, 16);
	w.b[lane][0] = b0, w.b[lane][1] = b1;
	warp_sync();
	float A[16][16], B[16][8];
	for (int L = 0; L < 32; L++) {
		int g = L / 4, t = L % 4;
		for (int i = 0; i < 4; i++) { /* a0: (g, 2t) a1: (g+8, 2t) a2: (g, 2t+8) a3: (g+8, 2t+8) */
			int r = g + (i & 1) * 8, col = 2 * t + (i >> 1) * 8;
			A[r][col] = b16f(w.a[L][i], 0), A[r][col + 1] = b16f(w.a[L][i], 1);
		}
		for (int i = 0; i < 2; i++) { /* b0: k 2t, 2t+1; b1: k 2t+8, 2t+9; n = g */
			B[2 * t + 8 * i][g] = b16f(w.b[L][i], 0), B[2 * t + 8 * i + 1][g] = b16f(w.b[L][i], 1);
		}
	}
	int g = lane / 4, t = lane % 4;
	for (int i = 0; i < 4; i++) { /* c0, c1: row g; c2, c3: row g+8; columns 2t, 2t+1 */
		int r = g + (i >> 1) * 8, col = 2 * t + (i & 1);
		float s = 0.f;
		for (int k = 0; k < 16; k++)
			s += A[r][k] * B[k][col];
		c[i] += s;
	}
	warp_sync();
}

static void cp_async16(bf16 *dst, const bf16 *src)
{
	check_smem(dst, 16, "cp.async destination outside shared memory");
	if ((uintptr_t)src % 16)
		emu_fail("cp.async source not 16-byte aligned");
	t_copies.push_back({ dst, src });
}
static void cp_async_commit(void) {}
static void cp_async_wait_all(void)
{
	for (const pending_copy &c : t_copies)
		memcpy(c.dst, c.src, 16);
	t_copies.clear();
}

#define ZB_FLASH_EMU 1
#include "exec/flash_mma.cu"

/* ---- launches ------------------------------------------------------------------------ */

template <typename F> static void emu_launch(F kernel, dim3 grid, size_t bytes, const fm_args &a)
{
	if (bytes > EMU_SMEM) {
		fprintf(stderr, "flash_emu: %zu bytes of shared memory\n", bytes);
		exit(2);
	}
	g_smem_bytes = bytes;
	g_grid = make_uint3(grid.x, grid.y, grid.z);
	for (unsigned z = 0; z < grid.z; z++)
		for (unsigned y = 0; y < grid.y; y++)
			for (unsigned x = 0; x < grid.x; x++) {
				g_block = make_uint3(x, y, z);
				memset(smem, 0xff, sizeof smem);
				std::vector<std::thread> th;
				for (int t = 0; t < g_threads; t++)
					th.emplace_back([t, &kernel, &a] {
						t_thread = make_uint3(t, 0, 0);
						kernel(a);
						if (!t_copies.empty())
							emu_fail("cp.async never waited for");
					});
				for (auto &x : th)
					x.join();
			}
}

/* The tile variants: fwd_mw 1 or 2 (m16 tiles per warp), bwd_br 32 or 64 (query rows
 * per backward tile), bwd_w 4 or 8 (warps per backward CTA), where fm_bwd_ok; 0 =
 * flash_mma.cu's default. */
static int g_fwd_mw, g_bwd_br, g_bwd_w;

template <int D> static void run_fwd(const fm_args &a, int batch, int heads)
{
	int mw = g_fwd_mw ? g_fwd_mw : fm_fwd_mw_default(D);
	if (mw == 2)
		emu_launch(fm_fwd_kernel<D, 2>, dim3((a.seq + 127) / 128, heads, batch), fm_fwd_cfg<D, 2>::bytes, a);
	else
		emu_launch(fm_fwd_kernel<D, 1>, dim3((a.seq + 63) / 64, heads, batch), fm_fwd_cfg<D, 1>::bytes, a);
}
template <int D, int BR, int W> static void run_bwd_tiles(const fm_args &a, int batch, int kv)
{
	typedef fm_bwd_cfg<D, BR, W> C;
	g_threads = C::THREADS;
	emu_launch(fm_bwd_kernel<D, BR, W>, dim3((a.seq + C::BC - 1) / C::BC, kv, batch), C::bytes, a);
	g_threads = FM_THREADS;
}
template <int D> static void run_bwd(const fm_args &a, int batch, int kv)
{
	int br = g_bwd_br ? g_bwd_br : fm_bwd_br_default(D), w = g_bwd_w ? g_bwd_w : fm_bwd_warps_default(D);
	if constexpr (fm_bwd_ok(D, 32, 4))
		if (br == 32 && w == 4)
			return run_bwd_tiles<D, 32, 4>(a, batch, kv);
	if constexpr (fm_bwd_ok(D, 32, 8))
		if (br == 32 && w == 8)
			return run_bwd_tiles<D, 32, 8>(a, batch, kv);
	if constexpr (fm_bwd_ok(D, 64, 8))
		if (br == 64 && w == 8)
			return run_bwd_tiles<D, 64, 8>(a, batch, kv);
	run_bwd_tiles<D, 64, 4>(a, batch, kv);
}

static void dispatch(int d, int bwd, const fm_args &a, int batch, int n)
{
	switch (d) {
	case 32: return bwd ? run_bwd<32>(a, batch, n) : run_fwd<32>(a, batch, n);
	case 64: return bwd ? run_bwd<64>(a, batch, n) : run_fwd<64>(a, batch, n);
	case 80: return bwd ? run_bwd<80>(a, batch, n) : run_fwd<80>(a, batch, n);
	case 96: return bwd ? run_bwd<96>(a, batch, n) : run_fwd<96>(a, batch, n);
	case 128: return bwd ? run_bwd<128>(a, batch, n) : run_fwd<128>(a, batch, n);
	}
	abort();
}

/* ---- reference and check (as tests/gpu/test_flash_attn.c) --------------------------- */

struct ecase {
	int batch, seq, heads, kv, d, causal, pad;
};

static float bf2f(uint16_t h)
{
	uint32_t b = (uint32_t)h << 16;
	float f;
	memcpy(&f, &b, 4);
	return f;
}
static uint16_t f2bf(float f)
{
	bf16 v = __float2bfloat16_rn(f);
	uint16_t h;
	memcpy(&h, &v, 2);
	return h;
}
static float urand(uint64_t *s, float lo, float hi)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return lo + (hi - lo) * (float)((*s >> 40) & 0xffffff) / 16777216.f;
}

/* max |got - ref| / max |ref| over rows x cols (got bf16 with stride ld at col0) */
static double rel_err(const uint16_t *got, int64_t ld, int64_t col0, const double *ref, int64_t rows, int64_t cols)
{
	double e = 0, m = 0;
	for (int64_t t = 0; t < rows; t++)
		for (int64_t c = 0; c < cols; c++) {
			double g = bf2f(got[t * ld + col0 + c]), w = ref[t * cols + c];
			if (!isfinite(g))
				return INFINITY;
			e = fmax(e, fabs(g - w)), m = fmax(m, fabs(w));
		}
	return m > 0 ? e / m : e;
}

static int run_case(const ecase &c)
{
	const int S = c.seq, D = c.d, H = c.heads, KV = c.kv, grp = H / KV;
	const int64_t T = (int64_t)c.batch * S, ho = (int64_t)H * D, ko = (int64_t)KV * D, ld = ho + 2 * ko + c.pad;
	const double scale = 1.0 / sqrt((double)D);
	/* one allocation, 16-byte aligned, as cudaMalloc's */
	std::vector<uint16_t> qkv(T * ld + 8), dout(T * ho), o(T * ho, 0xffff), g(T * ld + 8, 0xffff);
	std::vector<float> lse(T * H, NAN), dd(T * H), dqacc(T * ho, 0.f);
	uint64_t seed = 1234 + S + D;
	for (auto &x : qkv)
		x = f2bf(urand(&seed, -2.f, 2.f));
	for (auto &x : dout)
		x = f2bf(urand(&seed, -1.f, 1.f));
	const bf16 *q = (const bf16 *)qkv.data();
	fm_args a;
	memset(&a, 0, sizeof a);
	a.q = q, a.k = q + ho, a.v = q + ho + ko, a.dout = (const bf16 *)dout.data();
	a.o = (bf16 *)o.data();
	a.dk = (bf16 *)g.data() + ho, a.dv = (bf16 *)g.data() + ho + ko;
	a.ldq = a.ldk = a.ldv = ld, a.ldo = a.lddo = ho, a.lddk = a.lddv = ld;
	a.lse_out = lse.data(), a.lse = lse.data(), a.dd = dd.data(), a.dqacc = dqacc.data();
	a.seq = S, a.heads = H, a.kv_heads = KV, a.causal = c.causal, a.scale = (float)scale;
	/* flash_attn.cu's choices: cp.async only for 16-byte rows; bf16 pairs for even strides */
	auto al = [](const void *p, int64_t l, int n) { return (uintptr_t)p % (2 * n) == 0 && l % n == 0; };
	a.vec = al(a.q, ld, 8) && al(a.k, ld, 8) && al(a.v, ld, 8) && al(a.dout, ho, 8);
	a.ovec = al(a.o, ho, 2);
	dispatch(D, 0, a, c.batch, H);
	/* dD = rowsum(dO * O) from the bf16 O, as flash_attn.cu's kernel */
	for (int b = 0; b < c.batch; b++)
		for (int h = 0; h < H; h++)
			for (int i = 0; i < S; i++) {
				float s = 0;
				for (int e = 0; e < D; e++) {
					int64_t x = ((int64_t)b * S + i) * ho + (int64_t)h * D + e;
					s += bf2f(o[x]) * bf2f(dout[x]);
				}
				dd[((int64_t)b * H + h) * S + i] = s;
			}
	a.ovec = al(a.dk, ld, 2) && al(a.dv, ld, 2);
	dispatch(D, 1, a, c.batch, KV);
	for (int64_t t = 0; t < T; t++)
		for (int64_t e = 0; e < ho; e++)
			g[t * ld + e] = f2bf(dqacc[t * ho + e]);

	/* reference in double */
	std::vector<double> ro(T * ho), rl(T * H), rdq(T * ho, 0.0), rdk(T * ko, 0.0), rdv(T * ko, 0.0), p(S), dp(S);
	auto Q = [&](int b, int t, int h, int e) { return (double)bf2f(qkv[((int64_t)b * S + t) * ld + (int64_t)h * D + e]); };
	auto K = [&](int b, int t, int hk, int e, int w) {
		return (double)bf2f(qkv[((int64_t)b * S + t) * ld + ho + w * ko + (int64_t)hk * D + e]);
	};
	for (int b = 0; b < c.batch; b++)
		for (int h = 0; h < H; h++) {
			int hk = h / grp;
			for (int i = 0; i < S; i++) {
				int n = c.causal ? i + 1 : S;
				int64_t row = (int64_t)b * S + i;
				double mx = -INFINITY, sum = 0, dsum = 0;
				for (int j = 0; j < n; j++) {
					double s = 0;
					for (int e = 0; e < D; e++)
						s += Q(b, i, h, e) * K(b, j, hk, e, 0);
					p[j] = s * scale, mx = fmax(mx, p[j]);
				}
				for (int j = 0; j < n; j++)
					sum += (p[j] = exp(p[j] - mx));
				rl[((int64_t)b * H + h) * S + i] = mx + log(sum);
				for (int j = 0; j < n; j++) {
					p[j] /= sum;
					double t = 0;
					for (int e = 0; e < D; e++)
						t += bf2f(dout[row * ho + (int64_t)h * D + e]) * K(b, j, hk, e, 1);
					dp[j] = t, dsum += p[j] * t;
				}
				for (int e = 0; e < D; e++) {
					double x = 0;
					for (int j = 0; j < n; j++)
						x += p[j] * K(b, j, hk, e, 1);
					ro[row * ho + (int64_t)h * D + e] = x;
				}
				for (int j = 0; j < n; j++) {
					double ds = p[j] * (dp[j] - dsum) * scale;
					int64_t jr = (int64_t)b * S + j;
					for (int e = 0; e < D; e++) {
						rdq[row * ho + (int64_t)h * D + e] += ds * K(b, j, hk, e, 0);
						rdk[jr * ko + (int64_t)hk * D + e] += ds * Q(b, i, h, e);
						rdv[jr * ko + (int64_t)hk * D + e] += p[j] * bf2f(dout[row * ho + (int64_t)h * D + e]);
					}
				}
			}
		}
	double eo = rel_err(o.data(), ho, 0, ro.data(), T, ho), eq = rel_err(g.data(), ld, 0, rdq.data(), T, ho);
	double ek = rel_err(g.data(), ld, ho, rdk.data(), T, ko), ev = rel_err(g.data(), ld, ho + ko, rdv.data(), T, ko);
	double el = 0;
	for (int64_t i = 0; i < T * H; i++)
		el = isfinite(lse[i]) ? fmax(el, fabs(lse[i] - rl[i])) : INFINITY;
	const double tol = 2e-2;
	int ok = eo <= tol && eq <= tol && ek <= tol && ev <= tol && el <= 1e-3;
	int mw = g_fwd_mw ? g_fwd_mw : fm_fwd_mw_default(D), br = g_bwd_br ? g_bwd_br : fm_bwd_br_default(D);
	int w = g_bwd_w ? g_bwd_w : fm_bwd_warps_default(D);
	printf("%s emu b%d s%d h%d kv%d d%d %s pad%d (%s, fwd %d rows/warp, bwd %d rows %d warps): max rel err O %.2e "
	       "dQ %.2e dK %.2e dV %.2e, lse abs %.2e\n",
	       ok ? "ok  " : "FAIL", c.batch, S, H, KV, D, c.causal ? "causal" : "full", c.pad,
	       a.vec ? "cp.async" : "scalar loads", 16 * mw, br, w, eo, eq, ek, ev, el);
	fflush(stdout);
	return ok;
}

int main(int argc, char **argv)
{
	static const ecase cases[] = {
		{ 1, 130, 2, 1, 128, 1, 0 }, { 1, 150, 2, 2, 80, 0, 0 }, { 1, 190, 2, 2, 80, 1, 0 },
		{ 2, 70, 2, 1, 32, 1, 0 },   { 1, 64, 2, 2, 96, 0, 0 },  { 1, 128, 2, 2, 64, 1, 0 },
		{ 1, 100, 2, 1, 64, 1, 3 },  { 1, 200, 2, 1, 96, 1, 8 }, { 1, 161, 4, 1, 128, 0, 0 },
	};
	/* flash_emu [case [fwd_mw [bwd_br [bwd_w]]]] */
	int n = (int)(sizeof cases / sizeof cases[0]), only = argc > 1 ? atoi(argv[1]) : -1, fails = 0, ran = 0;
	g_fwd_mw = argc > 2 ? atoi(argv[2]) : 0;
	g_bwd_br = argc > 3 ? atoi(argv[3]) : 0;
	g_bwd_w = argc > 4 ? atoi(argv[4]) : 0;
	pthread_barrier_init(&g_cta_bar[0], NULL, 128);
	pthread_barrier_init(&g_cta_bar[1], NULL, 256);
	for (auto &w : g_warp)
		pthread_barrier_init(&w.bar, NULL, 32);
	for (int i = 0; i < n; i++)
		if ((only < 0 || only == i) &&
		    fm_bwd_ok(cases[i].d, g_bwd_br ? g_bwd_br : fm_bwd_br_default(cases[i].d),
			      g_bwd_w ? g_bwd_w : fm_bwd_warps_default(cases[i].d)))
			fails += !run_case(cases[i]), ran++;
	printf("flash_emu: %d of %d cases failed\n", fails, ran);
	return fails ? 1 : 0;
}
