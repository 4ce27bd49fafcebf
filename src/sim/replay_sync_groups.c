/* The replay model's gradient-sync groups of a stage (time_replay.c), as the runtime builds
 * them (runtime/groups.c): when every replica of the stage has one TP degree, one group per TP
 * rank, of that TP rank of each replica, reducing each rank's shard; else one group of every
 * rank of the stage, reducing whole tensors. The tied token table of the first and last stages
 * is reduced in a group of its own (time_replay.c), not in these. ZeRO-1 shards a stage's
 * optimizer over one such group.
 *
 * Invariants: members come in group-rank order (the world ranks' order, as runtime/groups.c
 * orders them); a stage has sl_replay_stage_sync_groups groups of sl_replay_stage_sync_group_size ranks
 * each. */
#include "sim/replay.h"

/* Bytes of one rank's parameters in layers [first, last] at TP degree tp (fp32). */
static double shard_bytes(const struct sl_sim_env *env, int tp, int first, int last)
{
	return SL_FP32_BYTES * sl_sim_stage_params(env, tp, first, last);
}

/* Whether stage k's replicas all have one TP degree (then its sync groups are per TP rank). */
int sl_replay_stage_uniform(const struct sl_plan *plan, int k)
{
	int uniform = 1;
	for (int j = 1; j < plan->num_pipelines; j++)
		uniform &= sl_plan_replica(plan, k, j)->tp == sl_plan_replica(plan, k, 0)->tp;
	return uniform;
}

/* Stage k's gradient-sync groups: one per TP rank (one TP degree), else one of every rank. */
int sl_replay_stage_sync_groups(const struct sl_plan *plan, int k)
{
	return sl_replay_stage_uniform(plan, k) ? sl_plan_replica(plan, k, 0)->tp : 1;
}

/* Writes the world ranks of stage k's sync group gi (in group-rank order, runtime/groups.c) to
 * members and the bytes the group reduces to *bytes; returns their number. */
int sl_replay_stage_sync_members(const struct sl_sim_env *env, const struct sl_plan *plan,
			     const struct sl_role_table *t, int k, int gi, int *members,
			     double *bytes)
{
	int uniform = sl_replay_stage_uniform(plan, k), m = 0, tp_of = 1, P = plan->num_stages;
	for (int j = 0; j < plan->num_pipelines; j++) {
		const struct sl_replica *rep = sl_plan_replica(plan, k, j);
		for (int tr = 0; tr < rep->tp; tr++)
			if (!uniform || tr == gi) {
				members[m++] = sl_role_of(t, k, j, tr)->rank;
				tp_of = rep->tp;
			}
	}
	/* uniform: each rank's shard; mixed: whole tensors */
	int first = plan->stages[k].first_layer, last = plan->stages[k].last_layer;
	*bytes = shard_bytes(env, uniform ? tp_of : 1, first, last);
	if (P > 1 && env->sizes->head_holds_embedding && (k == 0 || k == P - 1))
		/* the tied table is reduced in the embedding group instead */
		*bytes -= SL_FP32_BYTES * (double)env->model.vocab * env->model.hidden /
			  (uniform ? tp_of : 1);
	return m;
}

/* Ranks of stage k's gradient-sync group: the replicas (one TP degree), else every rank. */
int sl_replay_stage_sync_group_size(const struct sl_plan *plan, int k)
{
	int D = plan->num_pipelines, ranks = 0;
	if (sl_replay_stage_uniform(plan, k))
		return D;
	for (int j = 0; j < D; j++)
		ranks += sl_plan_replica(plan, k, j)->tp;
	return ranks;
}

/* Whether stage k shards its optimizer (ZeRO-1 over a sync group of more than one rank). */
int sl_replay_stage_zero(const struct sl_plan *plan, int k)
{
	return plan->stages[k].zero && sl_replay_stage_sync_group_size(plan, k) > 1;
}
