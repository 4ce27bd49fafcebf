/* Softmax cross-entropy over the vocabulary, fused so the probabilities are never stored:
 * the forward pass keeps one log-sum-exp per row, the backward pass rebuilds the softmax from it
 * and writes the gradient over the logits in place.
 *   lse = max + log(sum_j exp(x_j - max)), loss = lse - x_target,
 *   dx_j = scale (exp(x_j - lse) - [j == target]).
 * A row is handled by one thread; rows are independent, so results do not depend on the thread
 * count. */
#include "train/cpu/kernels.h"

#include <math.h>

#include "train/cpu/vmath.h"

static SL_KERNEL_CLONES float row_lse(const float *x, int V)
{
	float max = x[0];
#pragma omp simd reduction(max : max)
	for (int j = 0; j < V; j++)
		max = x[j] > max ? x[j] : max;
	float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
	for (int j = 0; j < V; j++)
		sum += sl_vexpf(x[j] - max);
	return max + logf(sum);
}

static SL_KERNEL_CLONES void row_grad(float *d, const float *x, float lse, int V, float scale)
{
#pragma omp simd
	for (int j = 0; j < V; j++)
		d[j] = scale * sl_vexpf(x[j] - lse);
}

void sl_crossentropy_forward(float *losses, float *lse, const float *logits,
			     const int32_t *targets, int rows, int V)
{
#pragma omp parallel for schedule(static)
	for (int r = 0; r < rows; r++) {
		const float *x = logits + (size_t)r * V;
		float l = row_lse(x, V);
		lse[r] = l;
		losses[r] = l - x[targets[r]];
	}
}

void sl_crossentropy_backward(float *dlogits, const float *logits, const float *lse,
			      const int32_t *targets, int rows, int V, float scale)
{
#pragma omp parallel for schedule(static)
	for (int r = 0; r < rows; r++) {
		float *d = dlogits + (size_t)r * V;
		row_grad(d, logits + (size_t)r * V, lse[r], V, scale);
		d[targets[r]] -= scale;
	}
}
