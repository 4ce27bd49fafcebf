/* The memory options as search dimensions: see memory_dimensions.h. */
#include "search/memory_dimensions.h"

#include <string.h>

const enum sl_recompute sl_search_recompute_order[SL_SEARCH_RECOMPUTE_LEVELS] = {
	SL_RECOMPUTE_NONE, SL_RECOMPUTE_SELECTIVE, SL_RECOMPUTE_FULL};

int sl_search_options_on(const struct sl_search_request *req)
{
	return req->memory_options && req->cost_model == SL_COST_SAILOR;
}

/* sl_search_least_level with ZeRO-1 on (when D > 1) or off. */
static int least_level(const struct sl_sim_env *env, const struct sl_search_request *req,
		       const struct sl_sim_replica_query *query, int zero)
{
	struct sl_sim_replica_query q = *query;
	q.recompute = SL_RECOMPUTE_NONE;
	q.zero = 0;
	if (!sl_search_options_on(req))
		return sl_sim_replica_fits(env, req->cost_model, &q) ? 0 : -1;
	int levels = sl_sim_effective_recompute(env, q.first_layer, q.last_layer,
						SL_RECOMPUTE_FULL) != SL_RECOMPUTE_NONE
			     ? SL_SEARCH_RECOMPUTE_LEVELS
			     : 1;
	q.zero = zero && q.num_pipelines > 1;
	for (int i = 0; i < levels; i++) {
		q.recompute = sl_search_recompute_order[i];
		if (sl_sim_replica_fits(env, req->cost_model, &q))
			return i;
	}
	return -1;
}

int sl_search_least_level(const struct sl_sim_env *env, const struct sl_search_request *req,
			  const struct sl_sim_replica_query *query)
{
	return least_level(env, req, query, 1);
}

void sl_search_choose_options(const struct sl_sim_env *env, const struct sl_search_request *req,
			      struct sl_plan *plan, long long global_batch)
{
	sl_search_choose_options_zero(env, req, plan, global_batch, 1);
}

void sl_search_choose_options_zero(const struct sl_sim_env *env,
				   const struct sl_search_request *req, struct sl_plan *plan,
				   long long global_batch, int zero_allowed)
{
	const int P = plan->num_stages, D = plan->num_pipelines;
	int on = sl_search_options_on(req);
	for (int k = 0; k < P; k++) {
		struct sl_plan_stage *s = &plan->stages[k];
		s->recompute = SL_RECOMPUTE_NONE;
		s->zero = (unsigned char)(on && zero_allowed && D > 1);
		if (!on)
			continue;
		int level = 0;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			/* replicas equal to the previous one with as many micro-batches need the same */
			if (j > 0 && !memcmp(r, sl_plan_replica(plan, k, j - 1), sizeof(*r)) &&
			    sl_plan_pipeline_microbatches(plan, j, global_batch) ==
				    sl_plan_pipeline_microbatches(plan, j - 1, global_batch))
				continue;
			struct sl_sim_replica_query query = sl_sim_replica_query_of(
				plan, k, j, sl_plan_pipeline_microbatches(plan, j, global_batch));
			int l = least_level(env, req, &query, zero_allowed);
			if (l < 0) {
				level = 0; /* fits under no option: the plan does not fit anyway */
				break;
			}
			if (l > level)
				level = l;
		}
		s->recompute = (unsigned char)sl_search_recompute_order[level];
	}
}
