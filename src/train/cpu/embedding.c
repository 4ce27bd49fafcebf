/* Token and position embedding (GPT-2: learned positions added to token vectors), forward and
 * backward. The backward pass scatters into the token table, where a token may repeat: threads
 * split the columns (hidden dimension) and each walks every position in order, so there are no
 * races and the sums do not depend on the thread count.
 * Vocabulary-parallel shard (tp > 1, Megatron-LM's VocabParallelEmbedding): a rank holds rows
 * [v0, v0 + vlen) of the table; its forward writes those tokens' rows and zeros elsewhere, the
 * caller sums over the TP group and then adds the positions once (x + 0 + ... + 0 is exact, so
 * the result equals tp = 1's bit for bit). */
#include "train/cpu/kernels.h"

#include <string.h>

#include "train/cpu/vmath.h"

#define COL_BLOCK 64

static SL_KERNEL_CLONES void forward_row(float *out, const float *te, const float *pe, int C)
{
#pragma omp simd
	for (int j = 0; j < C; j++)
		out[j] = te[j] + pe[j];
}

void sl_embedding_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe,
			  int B, int T, int C)
{
#pragma omp parallel for schedule(static)
	for (int i = 0; i < B * T; i++)
		forward_row(out + (size_t)i * C, wte + (size_t)tokens[i] * C,
			    wpe + (size_t)(i % T) * C, C);
}

static SL_KERNEL_CLONES void backward_block(float *dwte, float *dwpe, const float *dout,
					    const int32_t *tokens, int B, int T, int C, int j0,
					    int width)
{
	for (int i = 0; i < B * T; i++) {
		const float *d = dout + (size_t)i * C + j0;
		float *te = dwte + (size_t)tokens[i] * C + j0;
		float *pe = dwpe + (size_t)(i % T) * C + j0;
#pragma omp simd
		for (int j = 0; j < width; j++) {
			te[j] += d[j];
			pe[j] += d[j];
		}
	}
}

void sl_embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
			   int B, int T, int C)
{
	int blocks = (C + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(static)
	for (int b = 0; b < blocks; b++) {
		int j0 = b * COL_BLOCK;
		backward_block(dwte, dwpe, dout, tokens, B, T, C, j0,
			       C - j0 < COL_BLOCK ? C - j0 : COL_BLOCK);
	}
}

/* --- vocabulary-parallel shard (tp > 1): this rank holds rows [v0, v0 + vlen) --- */

void sl_embedding_forward_shard(float *out, const int32_t *tokens, const float *wte, int v0,
				int vlen, int rows, int C)
{
#pragma omp parallel for schedule(static)
	for (int i = 0; i < rows; i++) {
		float *o = out + (size_t)i * C;
		int t = tokens[i] - v0;
		if (t >= 0 && t < vlen)
			memcpy(o, wte + (size_t)t * C, (size_t)C * sizeof(float));
		else
			memset(o, 0, (size_t)C * sizeof(float));
	}
}

static SL_KERNEL_CLONES void add_row(float *out, const float *pe, int C)
{
#pragma omp simd
	for (int j = 0; j < C; j++)
		out[j] += pe[j];
}

void sl_embedding_add_positions(float *out, const float *wpe, int B, int T, int C)
{
#pragma omp parallel for schedule(static)
	for (int i = 0; i < B * T; i++)
		add_row(out + (size_t)i * C, wpe + (size_t)(i % T) * C, C);
}

static SL_KERNEL_CLONES void backward_shard_block(float *dwte, float *dwpe, const float *dout,
						  const int32_t *tokens, int v0, int vlen, int B,
						  int T, int C, int j0, int width)
{
	for (int i = 0; i < B * T; i++) {
		const float *d = dout + (size_t)i * C + j0;
		float *pe = dwpe + (size_t)(i % T) * C + j0;
#pragma omp simd
		for (int j = 0; j < width; j++)
			pe[j] += d[j];
		int t = tokens[i] - v0;
		if (t < 0 || t >= vlen)
			continue;
		float *te = dwte + (size_t)t * C + j0;
#pragma omp simd
		for (int j = 0; j < width; j++)
			te[j] += d[j];
	}
}

void sl_embedding_backward_shard(float *dwte, float *dwpe, const float *dout,
				 const int32_t *tokens, int v0, int vlen, int B, int T, int C)
{
	int blocks = (C + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(static)
	for (int b = 0; b < blocks; b++) {
		int j0 = b * COL_BLOCK;
		backward_shard_block(dwte, dwpe, dout, tokens, v0, vlen, B, T, C, j0,
				     C - j0 < COL_BLOCK ? C - j0 : COL_BLOCK);
	}
}
