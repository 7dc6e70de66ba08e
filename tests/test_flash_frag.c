/*
 * test_flash_frag.c - the fragment index math of the FlashAttention-2 kernels
 * (exec/flash_frag.h, used by exec/flash_mma.cu), checked on the host: ldmatrix
 * (.x4, plain and .trans) and mma.sync m16n8k16 are emulated for a whole warp from
 * the PTX ISA's fragment tables (written here independently of flash_frag.h), and
 * each product the kernels form is composed exactly as the kernels compose it and
 * compared with a plain matrix product:
 *   forward   S = Q K^T (Q rows of one warp, K a 64-key tile), O = P V with P taken
 *             from the S accumulators;
 *   backward  S^T = K_w Q^T, dV = P^T dO and dK = dS^T Q (accumulators as the A
 *             operand), dS^T staged in shared memory as the kernel stores it and
 *             reloaded with .trans for dQ = dS K.
 * Values are small integers, so every product is exact in float. Head dims 32, 80
 * and 128, query tiles of 64 and 32.
 */
#include "tests/harness.h"

#include "exec/flash_frag.h"

/* ---- the PTX ISA's layouts (m16n8k16, 16-bit A and B, fp32 C) --------------------- */

/* A: register i of lane L holds elements (row, col) and (row, col + 1) */
static int isa_a_row(int lane, int i) { return (lane >> 2) + ((i & 1) ? 8 : 0); }
static int isa_a_col(int lane, int i) { return (lane % 4) * 2 + ((i >= 2) ? 8 : 0); }
/* B: register i holds (k, n) and (k + 1, n) */
static int isa_b_k(int lane, int i) { return (lane % 4) * 2 + (i ? 8 : 0); }
static int isa_b_n(int lane) { return lane >> 2; }
/* C: element i at (row, col) */
static int isa_c_row(int lane, int i) { return (lane >> 2) + (i >= 2 ? 8 : 0); }
static int isa_c_col(int lane, int i) { return (lane % 4) * 2 + (i & 1); }

typedef struct pair {
	float lo, hi; /* the two 16-bit halves of a register: lo = lower column/row */
} pair;

/* ldmatrix .x4 on a row-major float matrix m (row stride ld): lanes 8j..8j+7 address
 * the rows of matrix j at (row[l], col[l]); lane L gets, in register j, row L/4,
 * elements 2(L%4), +1 of matrix j, or of its transpose. */
static void emu_ldsm(const float *m, int ld, const int row[32], const int col[32], int trans, pair out[32][4])
{
	for (int L = 0; L < 32; L++)
		for (int j = 0; j < 4; j++) {
			if (!trans) {
				int l = 8 * j + L / 4, c = col[l] + 2 * (L % 4);
				out[L][j].lo = m[row[l] * ld + c];
				out[L][j].hi = m[row[l] * ld + c + 1];
			} else {
				int l0 = 8 * j + 2 * (L % 4), c = L / 4;
				out[L][j].lo = m[row[l0] * ld + col[l0] + c];
				out[L][j].hi = m[row[l0 + 1] * ld + col[l0 + 1] + c];
			}
		}
}

/* c[L][i] += (A B) where A comes from a[L][0..3] and B from b0[L], b1[L] */
static void emu_mma(float c[32][4], pair a[32][4], const pair b0[32], const pair b1[32])
{
	float A[16][16], B[16][8];
	for (int L = 0; L < 32; L++) {
		for (int i = 0; i < 4; i++) {
			A[isa_a_row(L, i)][isa_a_col(L, i)] = a[L][i].lo;
			A[isa_a_row(L, i)][isa_a_col(L, i) + 1] = a[L][i].hi;
		}
		const pair *b[2] = { &b0[L], &b1[L] };
		for (int i = 0; i < 2; i++) {
			B[isa_b_k(L, i)][isa_b_n(L)] = b[i]->lo;
			B[isa_b_k(L, i) + 1][isa_b_n(L)] = b[i]->hi;
		}
	}
	for (int L = 0; L < 32; L++)
		for (int i = 0; i < 4; i++) {
			float s = 0;
			for (int k = 0; k < 16; k++)
				s += A[isa_c_row(L, i)][k] * B[k][isa_c_col(L, i)];
			c[L][i] += s;
		}
}

/* ---- helpers in the kernels' terms ------------------------------------------------ */

enum { MAXN = 16 }; /* n8 tiles: up to 128 columns */

typedef float acc_t[MAXN][32][4]; /* [n8 tile][lane][element] */

static void addr_of(int (*rowf)(int), int (*colf)(int), int row0, int col0, int row[32], int col[32])
{
	for (int L = 0; L < 32; L++)
		row[L] = row0 + rowf(L), col[L] = col0 + colf(L);
}

/* A operand of k-step kk from two adjacent accumulator tiles (the kernels' pack) */
static void acc_to_a(acc_t acc, int kk, pair a[32][4])
{
	for (int L = 0; L < 32; L++) {
		float *lo = acc[2 * kk][L], *hi = acc[2 * kk + 1][L];
		a[L][0] = (pair){ lo[0], lo[1] };
		a[L][1] = (pair){ lo[2], lo[3] };
		a[L][2] = (pair){ hi[0], hi[1] };
		a[L][3] = (pair){ hi[2], hi[3] };
	}
}

/* acc[n] += A times B (B: a [k][n] tile at rows k0.., columns 0.., .trans), over
 * nd n8 tiles: the kernels' mma_bt_row */
static void mma_bt(acc_t acc, pair a[32][4], const float *B, int ldb, int k0, int nd)
{
	for (int dp = 0; dp < nd / 2; dp++) {
		int row[32], col[32];
		pair r[32][4], b0[32], b1[32], b2[32], b3[32];
		addr_of(zb_frag_bt_row, zb_frag_bt_col, k0, dp * 16, row, col);
		emu_ldsm(B, ldb, row, col, 1, r);
		for (int L = 0; L < 32; L++)
			b0[L] = r[L][0], b1[L] = r[L][1], b2[L] = r[L][2], b3[L] = r[L][3];
		emu_mma(acc[2 * dp], a, b0, b1);
		emu_mma(acc[2 * dp + 1], a, b2, b3);
	}
}

/* acc (16 x 8 nt) = rows m0.. of M (A operand, row-major [m][k]) times N^T where N
 * is [n][k] (the kernels' S = Q K^T loop), k over kd16 steps of 16 */
static void mma_abn(acc_t acc, const float *M, int ldm, int m0, const float *N, int ldn, int nt, int kd16)
{
	memset(acc, 0, sizeof(acc_t));
	for (int kd = 0; kd < kd16; kd++) {
		int row[32], col[32];
		pair a[32][4], r[32][4], b0[32], b1[32], b2[32], b3[32];
		addr_of(zb_frag_a_row, zb_frag_a_col, m0, kd * 16, row, col);
		emu_ldsm(M, ldm, row, col, 0, a);
		for (int np = 0; np < nt / 2; np++) {
			addr_of(zb_frag_bn_row, zb_frag_bn_col, np * 16, kd * 16, row, col);
			emu_ldsm(N, ldn, row, col, 0, r);
			for (int L = 0; L < 32; L++)
				b0[L] = r[L][0], b1[L] = r[L][1], b2[L] = r[L][2], b3[L] = r[L][3];
			emu_mma(acc[2 * np], a, b0, b1);
			emu_mma(acc[2 * np + 1], a, b2, b3);
		}
	}
}

/* every accumulator element against want (row-major, ld), via zb_frag_c_* */
static void check_acc(acc_t acc, int nt, const float *want, int ld, const char *what)
{
	for (int n = 0; n < nt; n++)
		for (int L = 0; L < 32; L++)
			for (int e = 0; e < 4; e++) {
				int r = zb_frag_c_row(L, e), c = n * 8 + zb_frag_c_col(L, e);
				if (acc[n][L][e] != want[r * ld + c])
					fail_msg("%s: tile %d lane %d element %d (row %d col %d): got %g want %g", what, n,
						 L, e, r, c, (double)acc[n][L][e], (double)want[r * ld + c]);
			}
}

static void fill(float *m, int n, unsigned seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		m[i] = (float)((int)((seed >> 16) % 9) - 4);
	}
}

/* C[m][n] = sum_k A[m][k] B[k][n] (strides given) */
static void matmul(float *C, int ldc, const float *A, int lda_m, int lda_k, const float *B, int ldb_k, int ldb_n,
		   int M, int N, int K)
{
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			float s = 0;
			for (int k = 0; k < K; k++)
				s += A[m * lda_m + k * lda_k] * B[k * ldb_k + n * ldb_n];
			C[m * ldc + n] = s;
		}
}

/* ---- the kernels' products ---------------------------------------------------------- */

/* forward: one warp's 16 query rows (at row 16 of a 64-row Q tile), a 64-key tile */
static void forward_case(int D)
{
	const int LD = D + 8, BC = 64, qw = 16;
	float *Q = calloc(64 * LD, 4), *K = calloc(BC * LD, 4), *V = calloc(BC * LD, 4);
	float *Sref = calloc(16 * BC, 4), *Oref = calloc(16 * D, 4);
	acc_t *s = malloc(sizeof(acc_t)), *o = calloc(1, sizeof(acc_t));
	fill(Q, 64 * LD, 1 + D), fill(K, BC * LD, 2 + D), fill(V, BC * LD, 3 + D);
	mma_abn(*s, Q, LD, qw, K, LD, BC / 8, D / 16);
	matmul(Sref, BC, Q + qw * LD, LD, 1, K, 1, LD, 16, BC, D); /* S = Q K^T */
	check_acc(*s, BC / 8, Sref, BC, "S = Q K^T");
	for (int kk = 0; kk < BC / 16; kk++) { /* O = P V, P = S here */
		pair a[32][4];
		acc_to_a(*s, kk, a);
		mma_bt(*o, a, V, LD, kk * 16, D / 8);
	}
	matmul(Oref, D, Sref, BC, 1, V, LD, 1, 16, D, BC);
	check_acc(*o, D / 8, Oref, D, "O = P V");
	free(Q), free(K), free(V), free(Sref), free(Oref), free(s), free(o);
}

/* backward: a 64-key block (the warp of keys 32..47), a BR-query tile */
static void backward_case(int D, int BR)
{
	const int LD = D + 8, LDS = BR + 8, BC = 64, kw = 32, nb = BR / 8;
	float *K = calloc(BC * LD, 4), *Q = calloc(BR * LD, 4), *dO = calloc(BR * LD, 4);
	float *dSt = calloc(BC * LDS, 4), *St = calloc(16 * BR, 4), *ref = calloc(BC * (D > BR ? D : BR), 4);
	float *dS_all = calloc(BC * BR, 4);
	acc_t *s = malloc(sizeof(acc_t)), *acc = calloc(1, sizeof(acc_t));
	fill(K, BC * LD, 10 + D), fill(Q, BR * LD, 11 + D), fill(dO, BR * LD, 12 + D), fill(dS_all, BC * BR, 13);
	mma_abn(*s, K, LD, kw, Q, LD, nb, D / 16); /* S^T = K_w Q^T */
	matmul(St, BR, K + kw * LD, LD, 1, Q, 1, LD, 16, BR, D);
	check_acc(*s, nb, St, BR, "S^T = K_w Q^T");
	for (int kk = 0; kk < BR / 16; kk++) { /* dV_w = P^T dO with P^T = S^T */
		pair a[32][4];
		acc_to_a(*s, kk, a);
		mma_bt(*acc, a, dO, LD, kk * 16, D / 8);
	}
	matmul(ref, D, St, BR, 1, dO, LD, 1, 16, D, BR);
	check_acc(*acc, D / 8, ref, D, "dV = P^T dO");

	/* dS^T: every warp w stores its 16 keys' accumulators as the kernel does */
	for (int w = 0; w < 4; w++) {
		acc_t *ds = calloc(1, sizeof(acc_t));
		for (int n = 0; n < nb; n++) /* the warp's dS^T in accumulator layout */
			for (int L = 0; L < 32; L++)
				for (int e = 0; e < 4; e++)
					(*ds)[n][L][e] = dS_all[(w * 16 + zb_frag_c_row(L, e)) * BR + n * 8 +
								zb_frag_c_col(L, e)];
		for (int kk = 0; kk < BR / 16; kk++) {
			pair da[32][4];
			acc_to_a(*ds, kk, da);
			for (int L = 0; L < 32; L++) { /* flash_mma.cu: row = dSt + (kw + g) * LDS + kk * 16 + 2t */
				float *row = dSt + (w * 16 + L / 4) * LDS + kk * 16 + 2 * (L % 4);
				row[0] = da[L][0].lo, row[1] = da[L][0].hi;
				row[8 * LDS] = da[L][1].lo, row[8 * LDS + 1] = da[L][1].hi;
				row[8] = da[L][2].lo, row[9] = da[L][2].hi;
				row[8 * LDS + 8] = da[L][3].lo, row[8 * LDS + 9] = da[L][3].hi;
			}
		}
		free(ds);
	}
	for (int k = 0; k < BC; k++)
		for (int q = 0; q < BR; q++)
			if (dSt[k * LDS + q] != dS_all[k * BR + q])
				fail_msg("dS^T staged: key %d query %d: got %g want %g", k, q, (double)dSt[k * LDS + q],
					 (double)dS_all[k * BR + q]);
	/* dQ rows mt*16.. columns c0.. = dS K, warps as MT x G (flash_mma.cu fm_bwd_cfg) */
	const int MT = BR / 16, G = 4 / MT, NCOL = D / G;
	for (int w = 0; w < 4; w++) {
		int mt = w % MT, c0 = (w / MT) * NCOL;
		memset(*acc, 0, sizeof(acc_t));
		for (int kk = 0; kk < BC / 16; kk++) {
			int row[32], col[32];
			pair sa[32][4];
			addr_of(zb_frag_at_row, zb_frag_at_col, kk * 16, mt * 16, row, col);
			emu_ldsm(dSt, LDS, row, col, 1, sa);
			mma_bt(*acc, sa, K + c0, LD, kk * 16, NCOL / 8);
		}
		/* ref[q][c] = sum_k dS[q][k] K[k][c0 + c], dS[q][k] = dS_all[k][q] */
		matmul(ref, NCOL, dS_all + mt * 16, 1, BR, K + c0, LD, 1, 16, NCOL, BC);
		check_acc(*acc, NCOL / 8, ref, NCOL, "dQ = dS K");
	}
	free(K), free(Q), free(dO), free(dSt), free(St), free(ref), free(dS_all), free(s), free(acc);
}

static void test_forward(void **state)
{
	(void)state;
	forward_case(32);
	forward_case(80);
	forward_case(128);
}

static void test_backward(void **state)
{
	(void)state;
	backward_case(32, 64);
	backward_case(64, 64);
	backward_case(80, 64);
	backward_case(96, 32);
	backward_case(128, 32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward),
		cmocka_unit_test(test_backward),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
