/* Matrix products of the linear layers through OpenBLAS, split across threads by sl_sgemm
 * (see kernels.h for the contracts).
 *
 * Row-major, weights [N out, K in] as torch.nn.Linear:
 *   forward   out = inp w^T (+ bias)      sgemm(NoTrans, Trans)   M x N x K
 *   dinp      dinp = dout w               sgemm(NoTrans, NoTrans) M x K x N
 *   dw        dw += dout^T inp            sgemm(Trans, NoTrans)   N x K x M, beta 1
 * Bias and residual are folded in before the product (out is first set to residual + bias, then
 * sgemm runs with beta = 1), so no separate pass over the output is needed afterwards.
 * Column sums run over rows in order for each column, split across threads by column blocks:
 * the result does not depend on the thread count. */
#include "train/cpu/kernels.h"

#include <string.h>

#include "train/cpu/vmath.h"

/* Columns per block in column-split loops: 64 floats = one 256-byte run per row. */
#define COL_BLOCK 64

static SL_KERNEL_CLONES void fill_rows(float *out, const float *residual, const float *bias,
				       int rows, int N)
{
	for (int i = 0; i < rows; i++) {
		float *o = out + (size_t)i * N;
		if (residual && bias) {
			const float *r = residual + (size_t)i * N;
#pragma omp simd
			for (int j = 0; j < N; j++)
				o[j] = r[j] + bias[j];
		} else if (residual) {
			if (residual != out)
				memcpy(o, residual + (size_t)i * N, (size_t)N * sizeof(float));
		} else {
			memcpy(o, bias, (size_t)N * sizeof(float));
		}
	}
}

static void prologue(float *out, const float *residual, const float *bias, int M, int N)
{
	if (residual == out && !bias)
		return;
	const int chunk = 16;
#pragma omp parallel for schedule(static)
	for (int i0 = 0; i0 < M; i0 += chunk)
		fill_rows(out + (size_t)i0 * N, residual ? residual + (size_t)i0 * N : NULL, bias,
			  M - i0 < chunk ? M - i0 : chunk, N);
}

void sl_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int M,
		       int K, int N)
{
	if (bias)
		prologue(out, NULL, bias, M, N);
	sl_sgemm(0, 1, M, N, K, 1.0f, inp, K, w, K,
		    bias ? 1.0f : 0.0f, out, N);
}

void sl_matmul_forward_residual(float *out, const float *residual, const float *inp,
				const float *w, const float *bias, int M, int K, int N)
{
	prologue(out, residual, bias, M, N);
	sl_sgemm(0, 1, M, N, K, 1.0f, inp, K, w, K, 1.0f,
		    out, N);
}

static SL_KERNEL_CLONES void colsum_block(float *dbias, const float *d, int M, int N, int j0,
					  int width)
{
	float acc[COL_BLOCK];
	for (int j = 0; j < width; j++)
		acc[j] = 0.0f;
	for (int i = 0; i < M; i++) {
		const float *row = d + (size_t)i * N + j0;
#pragma omp simd
		for (int j = 0; j < width; j++)
			acc[j] += row[j];
	}
	for (int j = 0; j < width; j++)
		dbias[j0 + j] += acc[j];
}

void sl_colsum_accumulate(float *dbias, const float *d, int M, int N)
{
	int blocks = (N + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(static)
	for (int b = 0; b < blocks; b++) {
		int j0 = b * COL_BLOCK;
		colsum_block(dbias, d, M, N, j0, N - j0 < COL_BLOCK ? N - j0 : COL_BLOCK);
	}
}

void sl_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
			const float *w, int M, int K, int N)
{
	if (dinp)
		sl_sgemm(0, 0, M, K, N, 1.0f, dout, N, w, K,
			    0.0f, dinp, K);
	if (dw)
		sl_sgemm(1, 0, N, K, M, 1.0f, dout, N, inp, K,
			    1.0f, dw, K);
	if (dbias)
		sl_colsum_accumulate(dbias, dout, M, N);
}
