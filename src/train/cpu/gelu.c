/* GELU with the tanh approximation (GPT-2; torch.nn.functional.gelu(approximate='tanh')),
 * element-wise forward and backward; formulas in vmath.h. Split across threads in fixed chunks;
 * every element is independent, so results do not depend on the thread count. */
#include "train/cpu/kernels.h"

#include "train/cpu/vmath.h"

#define CHUNK 4096

static SL_KERNEL_CLONES void forward_chunk(float *out, const float *inp, long n)
{
#pragma omp simd
	for (long i = 0; i < n; i++)
		out[i] = sl_vgeluf(inp[i]);
}

static SL_KERNEL_CLONES void backward_chunk(float *dinp, const float *inp, const float *dout,
					    long n)
{
#pragma omp simd
	for (long i = 0; i < n; i++)
		dinp[i] = dout[i] * sl_vgelu_gradf(inp[i]);
}

void sl_gelu_forward(float *out, const float *inp, long n)
{
#pragma omp parallel for schedule(static)
	for (long c = 0; c < n; c += CHUNK)
		forward_chunk(out + c, inp + c, n - c < CHUNK ? n - c : CHUNK);
}

void sl_gelu_backward(float *dinp, const float *inp, const float *dout, long n)
{
#pragma omp parallel for schedule(static)
	for (long c = 0; c < n; c += CHUNK)
		backward_chunk(dinp + c, inp + c, dout + c, n - c < CHUNK ? n - c : CHUNK);
}
