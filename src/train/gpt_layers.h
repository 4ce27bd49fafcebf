/* The layers of a GPT-2-style decoder, numbered as the plan numbers them: layer 0 the token and
 * position embedding, layers 1..N the transformer blocks (pre-LayerNorm, causal multi-head
 * attention, GELU MLP, two residual connections), layer N+1 the final LayerNorm, the LM head
 * and the cross-entropy loss. (Radford et al. 2019, "Language Models are Unsupervised Multitask
 * Learners", section 2.3; the code follows the layout of nanoGPT/llm.c.)
 *
 * Each layer runs on its own: forward from an input activation to an output activation,
 * backward from the gradient of its output to the gradient of its input, so that a pipeline
 * stage is just a contiguous range of layers (model.h) and the activations crossing a stage
 * boundary are exactly `input`/`output` here, [batch, seq, hidden] fp32.
 *   embedding: input = the micro-batch's tokens (no float input), output [B,T,C];
 *              backward has no grad_input.
 *   block:     input [B,T,C] -> output [B,T,C]; backward grad_output -> grad_input.
 *   head:      input [B,T,C] -> loss (mean cross-entropy over the B*T targets), no float output;
 *              backward starts from loss_scale = d(total loss)/d(this micro-batch's loss) and
 *              produces grad_input.
 * Backward needs the same input pointer, unchanged, that forward was given, and the layer's
 * activation cache from that forward.
 *
 * Activation slots (for pipeline schedules such as 1F1B, where a stage forwards several
 * micro-batches before the first backward): a layer has cfg.slots activation caches (0 or 1:
 * one). sl_gpt_layer_select_slot() chooses the cache that the following forward fills and
 * backward reads; backward of slot s uses the activations of the last forward into slot s,
 * whatever ran in other slots in between. The views (ln1, qkv, ..., logits) always point into
 * the selected slot. The workspace is not per slot: one layer runs at a time.
 *
 * Tied embedding: the head multiplies by the embedding table (logits = x wte^T). When layer 0
 * and layer N+1 are in the same process, sl_gpt_layer_tie() gives the head the embedding's
 * parameter by reference and the head accumulates its gradient into the embedding's gradient,
 * so the optimizer sees one tensor. When a stage holds the head without layer 0
 * (cfg.own_wte), the head declares its own copy of "layer0.wte.weight" (same name, so the same
 * seed stream and the same checkpoint entry: the copies start identical); the distributed
 * runtime then sums that tensor's gradient between the first and the last stage before the
 * optimizer step (Megatron-LM's embedding group), which keeps both copies equal.
 *
 * Tensor parallelism: a layer config carries (tp, tp_rank). A block then holds heads/tp
 * attention heads and ffn_hidden/tp MLP columns: QKV and fc are split by output rows
 * (column-parallel), attn.proj and mlp.proj by input columns (row-parallel), LayerNorms and the
 * row-parallel biases are replicated (Megatron-LM, Shoeybi et al. 2019, figure 3). Four sums over
 * the TP group complete a block: after attn.proj and mlp.proj in forward, and on the gradients
 * of the two LayerNorm outputs in backward; they go through cfg.comm, which the distributed
 * runtime provides.
 * The embedding and the head are vocabulary-parallel (Megatron-LM's VocabParallelEmbedding and
 * vocab-parallel cross entropy): rank r holds rows [floor(r V/tp), floor((r+1) V/tp)) of the
 * token table (vocab_start, local_vocab; V need not be divisible by tp, param.h), so no rank
 * ever computes the full logits.
 *   embedding forward: each rank looks up the tokens of its rows (0 for the others), one
 *     all-reduce sum, then the replicated position table wpe is added once; backward: the local
 *     rows' gradient; wpe's gradient is the same full gradient on every rank.
 *   head forward: final LayerNorm replicated; logits [B*T, local_vocab] = ln wte_local^T; the
 *     loss needs one all-reduce max (row maxima) and one all-reduce sum of 2 B*T floats
 *     (exp-sums and target logits): every rank gets the same per-token losses, so the same
 *     loss. Backward: local dlogits; d ln = all-reduce sum of dlogits wte_local (one more);
 *     local rows' gradient; LN_f gradients identical on every rank.
 * The head's own copy of the table (own_wte) is split the same way; a tied head uses the
 * embedding's shard (same rows). With tp = 1 none of this runs: the code is today's exactly.
 *
 * Ownership: a layer owns its parameter storage (values, gradients, AdamW moments) and its
 * activation cache; sl_gpt_layer_free() releases both. The workspace is owned by whoever
 * created it (model.h: one per stage) and shared by the stage's layers.
 */
#ifndef SL_TRAIN_GPT_LAYERS_H
#define SL_TRAIN_GPT_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "train/param.h"
#include "util/err.h"

enum sl_gpt_layer_kind { SL_GPT_EMBEDDING, SL_GPT_BLOCK, SL_GPT_HEAD };

/* Activation recomputation of a block (the plan's "recompute", plan.h; same values). The
 * tensors a block recomputes live in a working set shared by every block of the stage and
 * every slot (sl_gpt_layer_attach_shared), not in the per-slot cache:
 *   NONE       every intermediate is kept per slot;
 *   FULL       nothing is kept: backward first reruns the block's forward from its input
 *              (which the stage keeps per slot), Chen et al. 2016, "Training Deep Nets with
 *              Sublinear Memory Cost";
 *   SELECTIVE  the attention core (scores/softmax `att`, weighted sum `atty`) is not kept:
 *              backward reruns sl_attention_forward from the kept qkv (Korthikanti et al.
 *              2022, "Reducing Activation Recomputation in Large Transformer Models", 4.2).
 * The kernels are deterministic, so a recomputed tensor is bit-for-bit the one forward made
 * and backward's results equal those without recomputation. Ignored by the embedding and the
 * head (they have no block intermediates). */
enum sl_gpt_recompute {
	SL_GPT_RECOMPUTE_NONE = 0,
	SL_GPT_RECOMPUTE_FULL = 1,
	SL_GPT_RECOMPUTE_SELECTIVE = 2,
};

/* "none", "full", "selective" (the plan's and --recompute's spelling); "?" otherwise. */
const char *sl_gpt_recompute_name(int recompute);

/* Which parameters get AdamW moment arrays in the layer's storage. NONE and TABLE_ONLY are for
 * a sharded optimizer (runtime/zero.h) that keeps the moments elsewhere; their exp_avg and
 * exp_avg_sq are then NULL. TABLE_ONLY keeps them for the token table "layer0.wte.weight"
 * only (the tied table of a pipeline, synchronised across stages, is not sharded). */
enum sl_gpt_moments { SL_GPT_MOMENTS_ALL = 0, SL_GPT_MOMENTS_NONE, SL_GPT_MOMENTS_TABLE_ONLY };

/* Collectives over the layer's tensor-parallel group, in place, element-wise over count floats;
 * each returns 0 or a negative SL_E* code. Every rank of the group makes the same calls in the
 * same order, and the result must be identical on every rank (the ranks then compute identical
 * replicated values). Needed when tp > 1: allreduce_sum by blocks, the embedding and the head;
 * allreduce_max by the head only (the row maxima of the vocabulary-parallel softmax). */
struct sl_tp_comm {
	int (*allreduce_sum)(float *buf, long long count, void *ctx);
	int (*allreduce_max)(float *buf, long long count, void *ctx);
	void *ctx;
};

struct sl_gpt_layer_config {
	enum sl_gpt_layer_kind kind;
	int index;          /* plan layer number: 0, 1..num_blocks, num_blocks + 1 */
	int num_blocks;
	int hidden, heads, ffn_hidden, max_seq_len, vocab;
	int tp, tp_rank;    /* this layer holds shard tp_rank of tp (tp = 1: the whole layer) */
	int own_wte;        /* head only: hold a copy of the embedding table (no layer 0 here) */
	int slots;          /* activation caches (micro-batches in flight); 0 means 1 */
	int recompute;      /* enum sl_gpt_recompute (blocks only) */
	int moments;        /* enum sl_gpt_moments */
	struct sl_tp_comm comm; /* required when tp > 1 (see struct sl_tp_comm) */
};

/* A micro-batch: batch sequences of seq tokens; targets[i] is the token after tokens[i]. */
struct sl_gpt_microbatch {
	int batch, seq;
	const int32_t *tokens;
	const int32_t *targets;
};

/* Scratch for backward (and for tensor-parallel partial sums in forward), shared by the layers
 * of a stage since one layer runs at a time. Sized for the largest layer of the stage. */
struct sl_gpt_workspace {
	int max_tokens, seq, threads;
	float *dres, *dln, *dy, *dqkv, *dfc, *att_scratch;
	float *recompute_out; /* full recomputation: where backward's rerun writes the output */
	float *block;    /* the one allocation the views above point into (owned) */
	size_t floats;
};

#define SL_GPT_MAX_LAYER_PARAMS 12

struct sl_gpt_layer {
	struct sl_gpt_layer_config cfg;
	int head_size, local_heads, local_hidden, local_ffn;
	int vocab_start, local_vocab; /* embedding and head: rows of the token table held */
	int max_batch, seq;           /* activation cache capacity (per slot) */
	int slots, slot;              /* activation caches, and the one in use */
	struct sl_param params[SL_GPT_MAX_LAYER_PARAMS];
	int param_count;
	float *storage;               /* owned: values | grads | exp_avg | exp_avg_sq (moments
				       * only of the parameters cfg.moments keeps them for) */
	size_t storage_floats;
	struct sl_param *wte;         /* head only: the tied embedding table, borrowed */
	float *cache;                 /* owned: slots caches of slot_floats, one per slot */
	size_t slot_floats, cache_floats; /* per slot; all slots (slots * slot_floats) */
	float *shared;                /* borrowed: the recomputed tensors' working set */
	size_t shared_floats;         /* floats of it this layer needs (0: recomputes nothing) */
	/* views into the selected slot's cache (NULL where the kind does not use them) */
	float *ln1, *ln1_mean, *ln1_rstd, *qkv, *att, *atty, *res1;
	float *ln2, *ln2_mean, *ln2_rstd, *fch, *fcg;
	float *logits, *lse, *losses; /* head (its final LayerNorm uses ln1*); logits are
				       * [B*T, local_vocab] */
	float *ce_sum;                /* head, tp > 1: exp-sums | target logits, 2 B*T */
};

/* Validates cfg (hidden divisible by heads, heads and ffn_hidden divisible by tp for blocks,
 * vocab >= tp, sizes positive, the collectives tp > 1 needs), names and shapes the parameters,
 * and allocates storage and cfg.slots activation caches for micro-batches of up to max_batch
 * sequences of seq tokens (seq <= max_seq_len). Slot 0 is selected. Weights are zero until
 * sl_gpt_layer_init_weights(). */
int sl_gpt_layer_init(struct sl_gpt_layer *layer, const struct sl_gpt_layer_config *cfg,
		      int max_batch, int seq, struct sl_err *err);
void sl_gpt_layer_free(struct sl_gpt_layer *layer);

/* GPT-2 initialisation from the seed (see param.h: the same values whatever the sharding):
 * weights N(0, 0.02), the two residual projections N(0, 0.02/sqrt(2N)) (GPT-2 section 2.3),
 * biases 0, LayerNorm weights 1. Gradients and moments are zeroed. */
void sl_gpt_layer_init_weights(struct sl_gpt_layer *layer, uint64_t seed);

/* Makes the following forward/backward use activation cache `slot` (0 <= slot < slots). */
void sl_gpt_layer_select_slot(struct sl_gpt_layer *layer, int slot);

/* Gives a recomputing layer its working set: shared_floats floats, 64-byte aligned, that
 * outlive the layer and may be shared by other layers (one runs at a time). Forward and
 * backward of a layer with shared_floats > 0 fail until it has one. */
void sl_gpt_layer_attach_shared(struct sl_gpt_layer *layer, float *shared);

/* Gives the head the embedding table of layer 0 (tied weights, see above). */
void sl_gpt_layer_tie(struct sl_gpt_layer *head, struct sl_gpt_layer *embedding);

struct sl_param *sl_gpt_layer_param(struct sl_gpt_layer *layer, const char *name);

/* Forward of one micro-batch. loss is written by the head only (may be NULL otherwise).
 * Errors: a token outside the vocabulary, a micro-batch larger than the cache, a failed TP sum. */
int sl_gpt_layer_forward(struct sl_gpt_layer *layer, struct sl_gpt_workspace *ws,
			 const struct sl_gpt_microbatch *mb, const float *input, float *output,
			 double *loss, struct sl_err *err);

/* Selective recomputation's work (a block only): the attention core of the last forward into
 * the selected slot run again (scores, softmax, weighted sum of V, from the kept Q, K, V),
 * rewriting bit for bit what forward wrote. A backward of a block built with
 * SL_GPT_RECOMPUTE_SELECTIVE runs it first; the profiler times it alone. */
void sl_gpt_layer_recompute_attention(struct sl_gpt_layer *block,
				      const struct sl_gpt_microbatch *mb);

/* Backward of the micro-batch of the last forward into the selected slot: accumulates
 * parameter gradients, writes
 * grad_input (blocks and head). grad_output is NULL for the head, grad_input NULL for the
 * embedding. grad_input must not alias grad_output. */
int sl_gpt_layer_backward(struct sl_gpt_layer *layer, struct sl_gpt_workspace *ws,
			  const struct sl_gpt_microbatch *mb, const float *input,
			  const float *grad_output, float *grad_input, float loss_scale,
			  struct sl_err *err);

/* A workspace large enough for every layer in layers[0..count). */
int sl_gpt_workspace_init(struct sl_gpt_workspace *ws, const struct sl_gpt_layer *layers,
			  int count, int threads, struct sl_err *err);
void sl_gpt_workspace_free(struct sl_gpt_workspace *ws);

/* 64-byte aligned, zeroed allocation of n floats (NULL on failure); free with free(). */
float *sl_alloc_floats(size_t n);

#endif
