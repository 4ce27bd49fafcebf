/* Causal multi-head self-attention (Vaswani et al. 2017, section 3.2; GPT-2's masked variant),
 * forward and backward, one (batch, head) pair per OpenMP iteration; each pair's matrix
 * products are single-threaded sgemm calls (OpenBLAS runs single-threaded, threads.c) on
 * strided views into qkv, so no head is ever copied out.
 *
 * Per head, with Q, K, V of T x hs and scale = 1/sqrt(hs):
 *   S = scale Q K^T, P = softmax(S + causal mask) row-wise, Y = P V.
 * Backward, given dY:
 *   dP = dY V^T, dV = P^T dY, dS = P * (dP - rowsum(P * dP)) (softmax Jacobian), scaled by
 *   `scale`, dQ = dS K, dK = dS^T Q.
 * Causality is exploited by row blocks of ROWS rows: block [r0, r1) only needs keys [0, r1).
 * Blocks run from the last (which covers every key, so it initialises dK and dV with beta = 0)
 * to the first (which accumulates with beta = 1). Entries of P above the diagonal inside a
 * computed block are stored as zero; entries right of a block are never read.
 * Every (b, h) pair is computed by one thread in a fixed order: results do not depend on the
 * thread count. */
#include "train/cpu/kernels.h"
#include "train/cpu/blas.h"

#include <math.h>
#include <omp.h>

#include "train/cpu/vmath.h"

#define ROWS 64

/* Rows [r0, r1) of a causal softmax over s (row stride ld), in place. */
static SL_KERNEL_CLONES void softmax_rows(float *s, int ld, int r0, int r1)
{
	for (int i = r0; i < r1; i++) {
		float *row = s + (size_t)(i - r0) * ld;
		int n = i + 1;
		float max = row[0];
		for (int j = 1; j < n; j++)
			max = row[j] > max ? row[j] : max;
		float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
		for (int j = 0; j < n; j++) {
			float e = sl_vexpf(row[j] - max);
			row[j] = e;
			sum += e;
		}
		float inv = 1.0f / sum;
#pragma omp simd
		for (int j = 0; j < n; j++)
			row[j] *= inv;
		for (int j = n; j < r1; j++)
			row[j] = 0.0f;
	}
}

/* dS = scale * P * (dP - rowsum(P * dP)) for rows [r0, r1), in place in dp. */
static SL_KERNEL_CLONES void softmax_backward_rows(float *dp, const float *p, int ld, int r0,
						   int r1, float scale)
{
	for (int i = r0; i < r1; i++) {
		float *d = dp + (size_t)(i - r0) * ld;
		const float *pr = p + (size_t)(i - r0) * ld;
		int n = i + 1;
		float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
		for (int j = 0; j < n; j++)
			dot += pr[j] * d[j];
#pragma omp simd
		for (int j = 0; j < n; j++)
			d[j] = scale * pr[j] * (d[j] - dot);
		for (int j = n; j < r1; j++)
			d[j] = 0.0f;
	}
}

void sl_attention_forward(float *y, float *att, const float *qkv, int B, int T, int NH, int hs)
{
	const int C = NH * hs, C3 = 3 * C;
	const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(static)
	for (int bh = 0; bh < B * NH; bh++) {
		int b = bh / NH, h = bh % NH;
		const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hs;
		const float *k = q + C, *v = q + 2 * C;
		float *p = att + (size_t)bh * T * T;
		float *yh = y + (size_t)b * T * C + (size_t)h * hs;
		for (int r0 = 0; r0 < T; r0 += ROWS) {
			int r1 = r0 + ROWS < T ? r0 + ROWS : T;
			float *pb = p + (size_t)r0 * T;
			sl_blas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, r1, hs, scale,
				      q + (size_t)r0 * C3, C3, k, C3, 0.0f, pb, T);
			softmax_rows(pb, T, r0, r1);
			sl_blas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, hs, r1, 1.0f,
				      pb, T, v, C3, 0.0f, yh + (size_t)r0 * C, C);
		}
	}
}

size_t sl_attention_scratch_floats(int T, int threads)
{
	return (size_t)T * T * (size_t)(threads > 0 ? threads : 1);
}

void sl_attention_backward(float *dqkv, float *scratch, int scratch_threads, const float *dy,
			   const float *att, const float *qkv, int B, int T, int NH, int hs)
{
	const int C = NH * hs, C3 = 3 * C;
	const float scale = 1.0f / sqrtf((float)hs);
	int threads = sl_cpu_threads() < scratch_threads ? sl_cpu_threads() : scratch_threads;
#pragma omp parallel for schedule(static) num_threads(threads)
	for (int bh = 0; bh < B * NH; bh++) {
		int b = bh / NH, h = bh % NH;
		size_t head = (size_t)b * T * C3 + (size_t)h * hs;
		const float *q = qkv + head, *k = q + C, *v = q + 2 * C;
		float *dq = dqkv + head, *dk = dq + C, *dv = dq + 2 * C;
		const float *p = att + (size_t)bh * T * T;
		const float *dyh = dy + (size_t)b * T * C + (size_t)h * hs;
		float *dp = scratch + (size_t)omp_get_thread_num() * T * T;
		int last = ((T - 1) / ROWS) * ROWS;
		for (int r0 = last; r0 >= 0; r0 -= ROWS) {
			int r1 = r0 + ROWS < T ? r0 + ROWS : T, rb = r1 - r0;
			float beta = r0 == last ? 0.0f : 1.0f;
			const float *pb = p + (size_t)r0 * T;
			const float *dyb = dyh + (size_t)r0 * C;
			sl_blas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rb, r1, hs, 1.0f, dyb, C,
				      v, C3, 0.0f, dp, T);
			sl_blas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1, hs, rb, 1.0f, pb, T,
				      dyb, C, beta, dv, C3);
			softmax_backward_rows(dp, pb, T, r0, r1, scale);
			sl_blas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rb, hs, r1, 1.0f, dp, T,
				      k, C3, 0.0f, dq + (size_t)r0 * C3, C3);
			sl_blas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r1, hs, rb, 1.0f, dp, T,
				      q + (size_t)r0 * C3, C3, beta, dk, C3);
		}
	}
}
