/* Token and position embedding (GPT-2: learned positions added to token vectors), forward and
 * backward. The backward pass scatters into the token table, where a token may repeat: threads
 * split the columns (hidden dimension) and each walks every position in order, so there are no
 * races and the sums do not depend on the thread count. */
#include "train/cpu/kernels.h"

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
