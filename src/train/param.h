/* Parameters: named fp32 tensors with their gradient and AdamW moments, and how a local tensor
 * maps onto the whole one when a layer holds a tensor-parallel shard.
 *
 * Names are plan-independent: "layer<k>.<module>.<tensor>" with k the plan layer number
 * (0 embedding, 1..N blocks, N+1 final norm + head), e.g. "layer3.attn.qkv.weight". A
 * checkpoint stores whole tensors under these names, so any plan can load any checkpoint.
 *
 * Sharding (Megatron-LM, Shoeybi et al. 2019, section 3): a tensor is split along shard_dim
 * (-1: replicated). That dimension is made of shard_parts equal parts (3 for the fused Q|K|V
 * projection, else 1) of P = full_shape[shard_dim] / shard_parts indices each; rank r of tp
 * holds the piece [shard_start, shard_start + shard_len) of every part, concatenated, with
 *   shard_start = floor(r P / tp),  shard_len = floor((r + 1) P / tp) - shard_start
 * (sl_param_shard_range). When tp divides P this is the usual equal split (piece r of P/tp);
 * when it does not, the pieces differ by at most one index: that is how the vocabulary-parallel
 * token table "layer0.wte.weight" [vocab, C] is split by rows (vocab need not be divisible by
 * tp; blocks require tp to divide heads and ffn_hidden, so their shards are equal). With tp = 1
 * the local tensor is the whole tensor.
 *
 * Ownership: value/grad/exp_avg/exp_avg_sq point into storage owned by the layer that declares
 * the parameter (see gpt_layers.h); a struct sl_param never frees anything.
 */
#ifndef SL_TRAIN_PARAM_H
#define SL_TRAIN_PARAM_H

#include <stddef.h>
#include <stdint.h>

#define SL_PARAM_NAME_MAX 64

struct sl_param {
	char name[SL_PARAM_NAME_MAX];
	int ndim;                  /* 1 or 2 */
	long long shape[2];        /* this shard's shape (shape[1] = 1 when ndim == 1) */
	long long full_shape[2];   /* the whole tensor's shape */
	long long numel;           /* shape[0] * shape[1] */
	int shard_dim;             /* -1 replicated, 0 rows, 1 columns */
	int shard_parts;           /* equal parts of the sharded dimension (>= 1) */
	long long shard_start;     /* sharded only (else 0): first index, within each part, of
				    * this rank's piece along shard_dim */
	long long shard_len;       /* sharded only (else 0): length of that piece */
	int tp, tp_rank;
	int decay;                 /* AdamW weight decay applies (matrices of linear layers) */
	float init_std;            /* init: normal(0, init_std) if > 0, else the constant init_value */
	float init_value;
	float *value, *grad, *exp_avg, *exp_avg_sq;
};

/* Describes a parameter (everything except the four pointers). shape1 = 0 for a vector. */
void sl_param_describe(struct sl_param *p, const char *name, long long full0, long long full1,
		       int shard_dim, int shard_parts, int tp, int tp_rank);

/* Index in the whole tensor (row-major) of element `local` of this shard, for every sharding
 * (replicated, equal parts, uneven rows): what checkpoints and gathers use to place a shard. */
long long sl_param_full_index(const struct sl_param *p, long long local);

/* The piece [*start, *start + *len) of n indices that rank `rank` of tp holds:
 * start = floor(rank n / tp), len = floor((rank + 1) n / tp) - start. */
void sl_param_shard_range(long long n, int tp, int rank, long long *start, long long *len);

/* Fills value from the seed: normal(0, init_std) sample number full_index of the stream named
 * after the parameter, or init_value. Same values for a tensor whatever the sharding. */
void sl_param_init(struct sl_param *p, uint64_t seed);

#endif
