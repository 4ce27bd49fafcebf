/* Exact gradient synchronisation across the replicas of a stage, the tied embedding between the
 * first and the last stage, and the global gradient norm.
 *
 * After a step's micro-batches, each rank holds the gradient of its shard summed over its own
 * pipeline's micro-batches (each scaled by 1 / the step's micro-batch count, as single-process
 * gradient accumulation scales them). Summing over the replicas of a stage then gives exactly
 * the single-process gradient; replicas may hold different TP shards:
 *   - uniform stage (one TP degree): each rank all-reduces its shard with the ranks of equal TP
 *     rank (they hold the same elements), in buckets of SL_GRAD_BUCKET_FLOATS;
 *   - mixed TP degrees: each rank writes its shard into a zeroed whole-tensor buffer at the
 *     shard's whole-tensor indices (replicated tensors from TP rank 0 only, so each replica
 *     contributes every element once), the stage all-reduces the whole tensors, and each rank
 *     reads its shard back. Exact for any mix of degrees, at the price of moving whole tensors.
 * The token table "layer0.wte.weight" (P > 1) is summed over the embedding group (groups.h), so
 * the embedding's table and the head's copy receive the same total and stay equal.
 *
 * The global norm counts every element of the model once: the first pipeline's ranks contribute
 * their shards (replicated tensors from TP rank 0 only, the head's copy of the token table not at
 * all), summed over the world. With islands (plan/islands.h) every group here is the island's:
 * the sums and the norm are the island's own.
 *
 * With a sharded optimizer (s->zero, zero.h) the stage's parameters are reduce-scattered
 * instead and the norm counts each member's piece; the tied table is synchronised as above.
 *
 * Ownership: sl_grad_sync_init() allocates the bucket; sl_grad_sync_free() releases it.
 */
#ifndef SL_RUNTIME_GRAD_SYNC_H
#define SL_RUNTIME_GRAD_SYNC_H

#include "runtime/comm.h"
#include "runtime/groups.h"
#include "plan/roles.h"
#include "train/param.h"

/* 4 Mi floats (16 MiB) per all-reduce: large enough that per-call latency is amortised on the
 * CPU path, small enough not to double a small model's memory. */
#define SL_GRAD_BUCKET_FLOATS (4L << 20)
#define SL_TIED_EMBEDDING_NAME "layer0.wte.weight"

struct sl_zero;

struct sl_grad_sync {
	struct sl_comm *comm;
	const struct sl_groups *groups;
	struct sl_role me;
	int num_stages;
	float *bucket;
	size_t bucket_floats;
	/* set when the stage's optimizer is sharded (zero.h): its parameters' gradients are then
	 * reduce-scattered into the pieces, and the norm counts the pieces */
	struct sl_zero *zero;
};

int sl_grad_sync_init(struct sl_grad_sync *s, struct sl_comm *comm,
		      const struct sl_groups *groups, const struct sl_role_table *table,
		      struct sl_param *const *params, int count, struct sl_err *err);
void sl_grad_sync_free(struct sl_grad_sync *s);

/* Sums the gradients of params over their groups, in place. */
int sl_grad_sync_run(struct sl_grad_sync *s, struct sl_param *const *params, int count,
		     struct sl_err *err);

/* Global 2-norm of the (synchronised) gradients of the whole model. */
int sl_grad_sync_norm(struct sl_grad_sync *s, struct sl_param *const *params, int count,
		      double *norm, struct sl_err *err);

/* 1 when p is split across its TP group (each element held by one TP rank). */
int sl_grad_sync_param_is_sharded(const struct sl_param *p);

#endif
