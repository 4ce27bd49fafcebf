/* CPU kernels of training: the forward and backward passes of every operation in a
 * GPT-2 layer, and the AdamW update, on row-major fp32 arrays.
 *
 * Matrix products go to OpenBLAS (cblas_sgemm); everything else is a loop over rows or columns
 * parallelised with OpenMP and vectorised (vmath.h). Shapes: a batch of `rows` = B*T token
 * positions; C the hidden size; weights are stored like torch.nn.Linear, [out_features,
 * in_features], so y = x W^T + b.
 *
 * Threads: sl_cpu_set_threads() sets both OpenBLAS's and OpenMP's thread count; kernels use
 * that many. Determinism: every reduction runs in a fixed order that does not depend on the
 * thread count (row-wise sums stay inside one thread; column sums such as bias gradients run
 * over rows in order, split across threads by columns), so results are bit-identical run to
 * run, and across thread counts as far as OpenBLAS's own kernels are.
 *
 * Ownership: kernels never allocate; callers own every buffer. Unless said otherwise, output
 * buffers must not alias inputs. Gradients of parameters are accumulated (+=) so micro-batches
 * add up; gradients of activations are overwritten unless the name says "accumulate".
 */
#ifndef SL_TRAIN_CPU_KERNELS_H
#define SL_TRAIN_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* --- threads (threads.c) --- */

/* Loads OpenBLAS (blas.h; its error when it cannot be) and sets the number of threads (>= 1)
 * the kernels use. OpenBLAS itself is kept at one thread: every parallel loop, sgemm included
 * (sl_sgemm), runs on the one OpenMP team, so BLAS worker threads never spin against OpenMP
 * workers for the same cores. A command that trains calls it before its first kernel. */
int sl_cpu_set_threads(int threads, struct sl_err *err);

int sl_cpu_threads(void);
/* Name of the OpenBLAS kernel set in use ("Haswell", "SkylakeX", ...), for reports. */
const char *sl_cpu_blas_core(void);

/* Row-major C = alpha op(A) op(B) + beta C, like cblas_sgemm, with the M x N output split
 * into one block per thread (along M or N, whichever is larger), each block a single-threaded
 * sgemm. Called inside a parallel region it runs on the calling thread only. */
void sl_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
	      const float *B, int ldb, float beta, float *C, int ldc);

/* --- matrix products (matmul.c) --- */

/* out[M,N] = inp[M,K] w[N,K]^T + bias[N]; bias may be NULL. */
void sl_matmul_forward(float *out, const float *inp, const float *w, const float *bias, int M,
		       int K, int N);
/* out[M,N] = residual[M,N] + inp[M,K] w[N,K]^T + bias[N] (the fused residual connection);
 * bias may be NULL; residual may equal out. */
void sl_matmul_forward_residual(float *out, const float *residual, const float *inp,
				const float *w, const float *bias, int M, int K, int N);
/* dinp[M,K] = dout[M,N] w[N,K] (overwritten), dw[N,K] += dout^T inp, dbias[N] += column sums
 * of dout. Any of dinp, dw, dbias may be NULL to skip it. */
void sl_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
			const float *w, int M, int K, int N);
/* dbias[N] += sum over the M rows of d[M,N], rows in order for every column. */
void sl_colsum_accumulate(float *dbias, const float *d, int M, int N);

/* --- layer normalisation (layernorm.c), eps 1e-5 like torch.nn.LayerNorm --- */

/* out = (inp - mean) * rstd * weight + bias per row; saves mean[rows] and rstd[rows]. */
void sl_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
			  const float *weight, const float *bias, int rows, int C);
/* dinp += d LN / d inp (accumulates: dinp already holds the residual branch's gradient);
 * dweight += sum(dout * xhat), dbias += sum(dout) over rows. */
void sl_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
			   const float *inp, const float *weight, const float *mean,
			   const float *rstd, int rows, int C);

/* --- GELU, tanh approximation (gelu.c) --- */

void sl_gelu_forward(float *out, const float *inp, long n);
/* dinp = dout * gelu'(inp); dinp may equal dout. */
void sl_gelu_backward(float *dinp, const float *inp, const float *dout, long n);

/* --- causal multi-head self-attention (attention.c) ---
 * qkv[B,T,3*C] holds Q, K, V side by side (each C = NH*hs wide, head h at columns h*hs), as
 * torch's qkv.split(C, dim=2). att[B,NH,T,T] keeps the softmax probabilities (zero above the
 * diagonal) for the backward pass. y[B,T,C] has head h's output at columns h*hs.
 * Only the causal part is computed: rows are taken in blocks of 64 and each block multiplies
 * against the keys up to its last row. */
void sl_attention_forward(float *y, float *att, const float *qkv, int B, int T, int NH, int hs);
/* Floats of scratch the backward pass needs when run on `threads` threads (one T x T block
 * each). */
size_t sl_attention_scratch_floats(int T, int threads);
/* dqkv[B,T,3C] = gradient of the inputs (overwritten), from dy[B,T,C]. scratch holds
 * sl_attention_scratch_floats(T, scratch_threads) floats; the pass uses at most
 * scratch_threads threads. */
void sl_attention_backward(float *dqkv, float *scratch, int scratch_threads, const float *dy,
			   const float *att, const float *qkv, int B, int T, int NH, int hs);

/* --- embedding (embedding.c) --- */

/* out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]; tokens must be < vocab (checked by the caller). */
void sl_embedding_forward(float *out, const int32_t *tokens, const float *wte, const float *wpe,
			  int B, int T, int C);
/* dwte[tokens[b,t],:] += dout[b,t,:]; dwpe[t,:] += dout[b,t,:]. */
void sl_embedding_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tokens,
			   int B, int T, int C);

/* Vocabulary-parallel shard of the table holding rows [v0, v0 + vlen) (wte is vlen x C):
 * out[i,:] = wte[tokens[i] - v0,:] for tokens in the shard, else 0 (no positions: the caller
 * sums over the TP group first, then calls sl_embedding_add_positions). */
void sl_embedding_forward_shard(float *out, const int32_t *tokens, const float *wte, int v0,
				int vlen, int rows, int C);
/* out[b,t,:] += wpe[t,:]. */
void sl_embedding_add_positions(float *out, const float *wpe, int B, int T, int C);
/* dwte[tokens[b,t] - v0,:] += dout[b,t,:] for tokens in the shard; dwpe[t,:] += dout[b,t,:]. */
void sl_embedding_backward_shard(float *dwte, float *dwpe, const float *dout,
				 const int32_t *tokens, int v0, int vlen, int B, int T, int C);

/* --- softmax cross-entropy (crossentropy.c) --- */

/* losses[r] = logsumexp(logits[r,:]) - logits[r,targets[r]]; lse[r] = logsumexp. */
void sl_crossentropy_forward(float *losses, float *lse, const float *logits,
			     const int32_t *targets, int rows, int V);
/* dlogits[r,j] = scale * (softmax(logits[r])_j - [j == targets[r]]); dlogits may equal logits
 * (computed in place). scale is d total_loss / d losses[r], e.g. 1/(rows * micro-batches). */
void sl_crossentropy_backward(float *dlogits, const float *logits, const float *lse,
			      const int32_t *targets, int rows, int V, float scale);

/* Vocabulary-parallel pieces (logits [rows, V] hold vocabulary entries [v0, v0 + V); see
 * crossentropy.c for how the caller combines them over the TP group):
 * max[r] = max_j logits[r,j] (-inf when V = 0). */
void sl_crossentropy_rowmax(float *max, const float *logits, int rows, int V);
/* sumexp[r] = sum_j exp(logits[r,j] - max[r]); target_logit[r] = logits[r, targets[r] - v0]
 * when the target is in this shard, else 0. */
void sl_crossentropy_shard_partials(float *sumexp, float *target_logit, const float *logits,
				    const float *max, const int32_t *targets, int v0, int rows,
				    int V);
/* dlogits[r,j] = scale * (exp(logits[r,j] - lse[r]) - [j + v0 == targets[r]]); may be in
 * place. */
void sl_crossentropy_backward_shard(float *dlogits, const float *logits, const float *lse,
				    const int32_t *targets, int v0, int rows, int V, float scale);

/* --- optimizer (adamw.c) --- */

/* Scalars of one AdamW step, computed once per step in double precision like torch does. */
struct sl_adamw_step {
	float decay;         /* 1 - lr * weight_decay (1 for parameters that do not decay) */
	float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
	float grad_scale;    /* gradient clipping factor (1 when not clipped) */
	float step_size;     /* lr / (1 - beta1^t) */
	float bias_correction2_sqrt; /* sqrt(1 - beta2^t) */
};
/* torch.optim.AdamW (1.13, single-tensor path), element-wise, with g = grad * grad_scale:
 *   p *= decay; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *   p -= step_size * m / (sqrt(v)/sqrt(1-b2^t) + eps)
 * (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization", Algorithm 2). */
void sl_adamw_update(float *param, const float *grad, float *m, float *v, long n,
		     const struct sl_adamw_step *s);
/* Sum of squares in double, in an order that depends only on n. */
double sl_sum_squares(const float *x, long n);

#endif
