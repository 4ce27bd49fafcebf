/* Softmax cross-entropy over the vocabulary, fused so the probabilities are never stored:
 * the forward pass keeps one log-sum-exp per row, the backward pass rebuilds the softmax from it
 * and writes the gradient over the logits in place.
 *   lse = max + log(sum_j exp(x_j - max)), loss = lse - x_target,
 *   dx_j = scale (exp(x_j - lse) - [j == target]).
 * A row is handled by one thread; rows are independent, so results do not depend on the thread
 * count.
 * Vocabulary-parallel (tp > 1, Megatron-LM's vocab-parallel cross entropy): each rank holds the
 * logits of its vocabulary rows [v0, v0 + V); the caller takes the row max over the TP group
 * (all-reduce max) then sums this file's partial exp-sums and target logits (all-reduce sum):
 *   lse = M + log(sum over ranks of sum_j exp(x_j - M)), loss = lse - x_target.
 * The target's logit is held by exactly one rank, the others contribute 0. */
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

/* Max of an empty row (a rank holding no vocabulary rows) is -inf: neutral for the max. */
static SL_KERNEL_CLONES float row_max(const float *x, int V)
{
	float max = -INFINITY;
#pragma omp simd reduction(max : max)
	for (int j = 0; j < V; j++)
		max = x[j] > max ? x[j] : max;
	return max;
}

static SL_KERNEL_CLONES float row_sumexp(const float *x, float max, int V)
{
	float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
	for (int j = 0; j < V; j++)
		sum += sl_vexpf(x[j] - max);
	return sum;
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

void sl_crossentropy_rowmax(float *max, const float *logits, int rows, int V)
{
#pragma omp parallel for schedule(static)
	for (int r = 0; r < rows; r++) {
		const float *x = logits + (size_t)r * V;
		max[r] = row_max(x, V);
	}
}

void sl_crossentropy_shard_partials(float *sumexp, float *target_logit, const float *logits,
				    const float *max, const int32_t *targets, int v0, int rows,
				    int V)
{
#pragma omp parallel for schedule(static)
	for (int r = 0; r < rows; r++) {
		const float *x = logits + (size_t)r * V;
		sumexp[r] = row_sumexp(x, max[r], V);
		int t = targets[r] - v0;
		target_logit[r] = t >= 0 && t < V ? x[t] : 0.0f;
	}
}

void sl_crossentropy_backward_shard(float *dlogits, const float *logits, const float *lse,
				    const int32_t *targets, int v0, int rows, int V, float scale)
{
#pragma omp parallel for schedule(static)
	for (int r = 0; r < rows; r++) {
		float *d = dlogits + (size_t)r * V;
		row_grad(d, logits + (size_t)r * V, lse[r], V, scale);
		int t = targets[r] - v0;
		if (t >= 0 && t < V)
			d[t] -= scale;
	}
}
