/* Layer normalisation (Ba, Kiros & Hinton 2016), forward and backward, eps = 1e-5 as
 * torch.nn.LayerNorm. Per row of C values:
 *   mean = sum(x)/C, var = sum((x-mean)^2)/C (biased, like torch), rstd = 1/sqrt(var+eps),
 *   xhat = (x-mean) rstd, out = xhat w + b.
 * Backward (the standard derivation, as in llm.c's layernorm_backward):
 *   g = dout w; dx = rstd (g - mean(g) - xhat mean(g xhat)); dw += sum_rows dout xhat;
 *   db += sum_rows dout.
 * Rows are split across threads; the parameter gradients are column sums computed in a second
 * pass split by columns (rows in order), so no per-thread partial buffers and no dependence of
 * the result on the thread count. */
#include "train/cpu/kernels.h"

#include <math.h>

#include "train/cpu/vmath.h"

#define LN_EPS 1e-5f
#define ROW_CHUNK 8
#define COL_BLOCK 64

static SL_KERNEL_CLONES void forward_rows(float *out, float *mean, float *rstd, const float *inp,
					  const float *w, const float *b, int rows, int C)
{
	for (int i = 0; i < rows; i++) {
		const float *x = inp + (size_t)i * C;
		float *o = out + (size_t)i * C;
		float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
		for (int j = 0; j < C; j++)
			sum += x[j];
		float m = sum / (float)C;
		float var = 0.0f;
#pragma omp simd reduction(+ : var)
		for (int j = 0; j < C; j++)
			var += (x[j] - m) * (x[j] - m);
		float s = 1.0f / sqrtf(var / (float)C + LN_EPS);
#pragma omp simd
		for (int j = 0; j < C; j++)
			o[j] = (x[j] - m) * s * w[j] + b[j];
		mean[i] = m;
		rstd[i] = s;
	}
}

void sl_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
			  const float *weight, const float *bias, int rows, int C)
{
#pragma omp parallel for schedule(static)
	for (int i0 = 0; i0 < rows; i0 += ROW_CHUNK) {
		size_t off = (size_t)i0 * C;
		forward_rows(out + off, mean + i0, rstd + i0, inp + off, weight, bias,
			     rows - i0 < ROW_CHUNK ? rows - i0 : ROW_CHUNK, C);
	}
}

static SL_KERNEL_CLONES void backward_rows(float *dinp, const float *dout, const float *inp,
					   const float *w, const float *mean, const float *rstd,
					   int rows, int C)
{
	for (int i = 0; i < rows; i++) {
		const float *x = inp + (size_t)i * C;
		const float *d = dout + (size_t)i * C;
		float *dx = dinp + (size_t)i * C;
		float m = mean[i], s = rstd[i];
		float g_sum = 0.0f, gx_sum = 0.0f;
#pragma omp simd reduction(+ : g_sum, gx_sum)
		for (int j = 0; j < C; j++) {
			float g = d[j] * w[j];
			g_sum += g;
			gx_sum += g * ((x[j] - m) * s);
		}
		float g_mean = g_sum / (float)C, gx_mean = gx_sum / (float)C;
#pragma omp simd
		for (int j = 0; j < C; j++) {
			float xhat = (x[j] - m) * s;
			dx[j] += s * (d[j] * w[j] - g_mean - xhat * gx_mean);
		}
	}
}

static SL_KERNEL_CLONES void param_grad_block(float *dweight, float *dbias, const float *dout,
					      const float *inp, const float *mean,
					      const float *rstd, int rows, int C, int j0, int width)
{
	float dw[COL_BLOCK], db[COL_BLOCK];
	for (int j = 0; j < width; j++)
		dw[j] = db[j] = 0.0f;
	for (int i = 0; i < rows; i++) {
		const float *x = inp + (size_t)i * C + j0;
		const float *d = dout + (size_t)i * C + j0;
		float m = mean[i], s = rstd[i];
#pragma omp simd
		for (int j = 0; j < width; j++) {
			dw[j] += d[j] * ((x[j] - m) * s);
			db[j] += d[j];
		}
	}
	for (int j = 0; j < width; j++) {
		dweight[j0 + j] += dw[j];
		dbias[j0 + j] += db[j];
	}
}

void sl_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
			   const float *inp, const float *weight, const float *mean,
			   const float *rstd, int rows, int C)
{
	int blocks = (C + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel
	{
#pragma omp for schedule(static) nowait
		for (int i0 = 0; i0 < rows; i0 += ROW_CHUNK) {
			size_t off = (size_t)i0 * C;
			backward_rows(dinp + off, dout + off, inp + off, weight, mean + i0,
				      rstd + i0, rows - i0 < ROW_CHUNK ? rows - i0 : ROW_CHUNK, C);
		}
#pragma omp for schedule(static)
		for (int b = 0; b < blocks; b++) {
			int j0 = b * COL_BLOCK;
			param_grad_block(dweight, dbias, dout, inp, mean, rstd, rows, C, j0,
					 C - j0 < COL_BLOCK ? C - j0 : COL_BLOCK);
		}
	}
}
