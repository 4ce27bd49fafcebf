/* The memory options of a stage under the sailor cost model (plan.h: "recompute", "zero"): what
 * they cost in time, which of them change anything, and the stage time queries of sim.h
 * (sl_sim_stage_fwd_bwd, _compute_s, _update_s: a struct sl_sim_replica_query, its options
 * applied to the tables' times that env.c reads). The memory they save, and the memory queries,
 * are in memory.c.
 *
 * Activation recomputation (Megatron-LM's --recompute-granularity; Korthikanti et al. 2022,
 * "Reducing Activation Recomputation in Large Transformer Models", section 4):
 *   full       every transformer block of the stage keeps only its boundary activation during
 *              forward and runs its forward again, per micro-batch, just before its backward:
 *              the backward of a micro-batch grows by exactly the forward time of the stage's
 *              blocks (embedding, final norm and head are not recomputed; they are not blocks);
 *   selective  only the attention core (scores Q·K^T, softmax, weighted sum of V) is recomputed:
 *              the backward grows by the core's share of each block's forward times the
 *              block's profiled (or estimated) forward time. The share is the one the profile
 *              measured at that (mbs, TP) (`sailor profile` times the core alone: its
 *              recompute_attention phase); where it did not, the share of the block's forward
 *              FLOPs (4·s²·h of the block's total, model/layer_sizes.c), a lower estimate: the
 *              core is memory-bound (measured on the testbed's CPUs, 1.2-1.8 x that share).
 * ZeRO-1 (DeepSpeed stage 1; Megatron's distributed optimizer): the stage's optimizer state is
 * split evenly over its D replicas, so each replica's optimizer step updates 1/D of the stage's
 * parameters (its update time divides by D); the gradient all-reduce becomes a reduce-scatter
 * before the step and an all-gather of the updated parameters after it. A ring reduce-scatter
 * and a ring all-gather are the two halves of a ring all-reduce (D-1 steps of 1/D of the bytes
 * each), so the synchronisation time and the bytes on the wire (egress) are those of the
 * all-reduce; time_sailor.c therefore charges the same sync and the divided update.
 *
 * An option that changes nothing is no option: recomputation on a stage without blocks, ZeRO-1
 * on a stage with one replica. Every function here treats them as "none" / 0, so such a plan
 * costs bit for bit what the plan without them costs. */
#include "sim/internal.h"

int sl_sim_stage_blocks(const struct sl_sim_env *env, int first, int last, int *block_first,
			int *block_last)
{
	/* blocks are layers 1..num_blocks in every model (model/layer_sizes.h) */
	int s = first > 1 ? first : 1;
	int e = last < env->model.num_blocks ? last : env->model.num_blocks;
	if (block_first)
		*block_first = s;
	if (block_last)
		*block_last = e;
	return e >= s ? e - s + 1 : 0;
}

enum sl_recompute sl_sim_effective_recompute(const struct sl_sim_env *env, int first, int last,
					     enum sl_recompute recompute)
{
	if (recompute != SL_RECOMPUTE_FULL && recompute != SL_RECOMPUTE_SELECTIVE)
		return SL_RECOMPUTE_NONE;
	return sl_sim_stage_blocks(env, first, last, NULL, NULL) > 0 ? recompute : SL_RECOMPUTE_NONE;
}

int sl_sim_effective_zero(int zero, int replicas)
{
	return zero && replicas > 1;
}

int sl_sim_plan_uses_options(const struct sl_sim_env *env, const struct sl_plan *plan)
{
	for (int k = 0; k < plan->num_stages; k++) {
		const struct sl_plan_stage *s = &plan->stages[k];
		if (sl_sim_effective_recompute(env, s->first_layer, s->last_layer, s->recompute) ||
		    sl_sim_effective_zero(s->zero, plan->num_pipelines))
			return 1;
	}
	return 0;
}

/* Share of a block's forward that selective recomputation runs again: the attention core's
 * share of the block's forward time as the profile measured it at (mbs, tp) (the core is
 * memory-bound: on the testbed's CPUs 1.2-1.8 x its share of the FLOPs), else its share of the
 * block's forward FLOPs (scores and weighted sum, 2·s²·h each per sample; model/layer_sizes.c
 * fill_flops), a lower estimate. */
static double attention_core_share(const struct sl_sim_env *env, int gpu, int mbs, int tp,
				   int layer)
{
	const struct sl_time_slot *slot = sl_sim_slot(env, gpu, mbs, tp);
	if (slot && slot->attention_core_share > 0)
		return slot->attention_core_share;
	double sq = env->model.seq_len, h = env->model.hidden;
	double block = env->sizes->fwd_flops[layer];
	return block > 0 ? 4.0 * sq * sq * h / block : 0.0;
}

double sl_sim_stage_recompute_s(const struct sl_sim_env *env, enum sl_cost_model cm,
				const struct sl_sim_replica_query *q)
{
	const int gpu = q->gpu, mbs = q->mbs, tp = q->tp, first = q->first_layer, last = q->last_layer;
	enum sl_recompute recompute = q->recompute;
	double f, b;
	if (sl_sim_layers_fwd_bwd(env, cm, gpu, mbs, tp, first, last, &f, &b))
		return -1.0;
	if (cm == SL_COST_SOSP25)
		return 0.0; /* that model has no options (sl_simulate refuses plans using them) */
	recompute = sl_sim_effective_recompute(env, first, last, recompute);
	if (recompute == SL_RECOMPUTE_NONE)
		return 0.0;
	int s, e;
	sl_sim_stage_blocks(env, first, last, &s, &e);
	double blocks_fwd_s, unused;
	if (sl_sim_layers_fwd_bwd(env, cm, gpu, mbs, tp, s, e, &blocks_fwd_s, &unused))
		return -1.0;
	if (recompute == SL_RECOMPUTE_FULL)
		return blocks_fwd_s;
	/* every block of a model has the same shape: one share for all */
	return attention_core_share(env, gpu, mbs, tp, s) * blocks_fwd_s;
}

int sl_sim_stage_fwd_bwd(const struct sl_sim_env *env, enum sl_cost_model cm,
			 const struct sl_sim_replica_query *q, double *fwd_s, double *bwd_s)
{
	int rc = sl_sim_layers_fwd_bwd(env, cm, q->gpu, q->mbs, q->tp, q->first_layer, q->last_layer,
				       fwd_s, bwd_s);
	if (rc)
		return rc;
	if (cm == SL_COST_SOSP25 ||
	    sl_sim_effective_recompute(env, q->first_layer, q->last_layer, q->recompute) ==
		    SL_RECOMPUTE_NONE)
		return 0;
	*bwd_s += sl_sim_stage_recompute_s(env, cm, q);
	return 0;
}

double sl_sim_stage_compute_s(const struct sl_sim_env *env, enum sl_cost_model cm,
			      const struct sl_sim_replica_query *q)
{
	double f, b;
	if (sl_sim_stage_fwd_bwd(env, cm, q, &f, &b))
		return -1.0;
	return f + b;
}

double sl_sim_stage_update_s(const struct sl_sim_env *env, enum sl_cost_model cm,
			     const struct sl_sim_replica_query *q)
{
	double u = sl_sim_layers_update_s(env, cm, q->gpu, q->mbs, q->tp, q->first_layer,
					  q->last_layer);
	if (u < 0 || cm == SL_COST_SOSP25 || !sl_sim_effective_zero(q->zero, q->num_pipelines))
		return u;
	return u / q->num_pipelines;
}
