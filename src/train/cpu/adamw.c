/* AdamW update and the gradient norm, element-wise (formulas in kernels.h: torch.optim.AdamW
 * 1.13's single-tensor path, and torch.nn.utils.clip_grad_norm_'s 2-norm).
 * The sum of squares is taken over fixed blocks whose partial sums (double) are added in block
 * order, so the norm depends only on the data, not on the thread count. */
#include "train/cpu/kernels.h"

#include <math.h>

#include "train/cpu/vmath.h"

#define CHUNK 8192
#define NORM_BLOCKS 64

static SL_KERNEL_CLONES void adamw_chunk(float *p, const float *g, float *m, float *v, long n,
					 const struct sl_adamw_step *s)
{
	const float decay = s->decay;
	const float b1 = s->beta1, b2 = s->beta2, c1 = s->one_minus_beta1, c2 = s->one_minus_beta2;
	const float gs = s->grad_scale, step = s->step_size, bc2 = s->bias_correction2_sqrt;
	const float eps = s->eps;
#pragma omp simd
	for (long i = 0; i < n; i++) {
		float gi = g[i] * gs;
		float pi = p[i] * decay;
		float mi = m[i] * b1 + gi * c1;
		float vi = v[i] * b2 + gi * gi * c2;
		m[i] = mi;
		v[i] = vi;
		p[i] = pi - step * (mi / (sqrtf(vi) / bc2 + eps));
	}
}

void sl_adamw_update(float *param, const float *grad, float *m, float *v, long n,
		     const struct sl_adamw_step *s)
{
#pragma omp parallel for schedule(static)
	for (long c = 0; c < n; c += CHUNK)
		adamw_chunk(param + c, grad + c, m + c, v + c, n - c < CHUNK ? n - c : CHUNK, s);
}

static SL_KERNEL_CLONES double block_squares(const float *x, long n)
{
	double sum = 0.0;
#pragma omp simd reduction(+ : sum)
	for (long i = 0; i < n; i++)
		sum += (double)x[i] * (double)x[i];
	return sum;
}

double sl_sum_squares(const float *x, long n)
{
	double partial[NORM_BLOCKS];
	long per = (n + NORM_BLOCKS - 1) / NORM_BLOCKS;
#pragma omp parallel for schedule(static)
	for (int b = 0; b < NORM_BLOCKS; b++) {
		long lo = (long)b * per, hi = lo + per < n ? lo + per : n;
		partial[b] = lo < hi ? block_squares(x + lo, hi - lo) : 0.0;
	}
	double sum = 0.0;
	for (int b = 0; b < NORM_BLOCKS; b++)
		sum += partial[b];
	return sum;
}
