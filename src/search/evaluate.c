/* One candidate plan of the search, simulated and offered to the ranking: the plan in st->plan
 * as the search built it, its uneven micro-batch variant (--uneven-microbatches), its variants
 * with ZeRO-1 on and off where the options put it, and, in the search without memory options,
 * the same replicas with the options the search with them would give (simulate_variant).
 *
 * Invariants: every plan simulated here is counted in st->simulated; a result that meets the
 * constraints lowers the shared bound (and the variant search's), never raises it; a variant is
 * skipped only when its bound (variant_bound_of) shows it cannot enter that search's result, or
 * when it is the plan itself (one pipeline, no recomputation), ranked already.
 */
#include <stdatomic.h>

#include "search/search_state.h"
#include "search/uneven.h"

/* Simulates plan and offers it to this thread's ranking and the shared bound; *ok (NULL: not
 * wanted) says whether st->result holds its result. */
static int simulate_one(struct search_state *st, const struct sl_plan *plan, int *ok,
			struct sl_err *err)
{
	struct sl_err sim_err = {0};
	st->simulated++;
	if (sl_simulate(st->env, plan, st->cm, &st->result, &sim_err))
		return 0; /* a combination the simulator has no time for: not a candidate */
	if (ok)
		*ok = 1;
	if (st->shared_bound && sl_search_meets(st->req, &st->result)) {
		double value = st->req->objective == SL_OBJECTIVE_COST ? st->result.cost_usd_per_iter
								       : st->result.iteration_time_s;
		sl_search_shared_bound_lower(st->shared_bound, value);
		/* a variant that cannot beat this plan cannot beat the seed it joins either (the
		 * variants never lower this search's bound: it stays the search it was) */
		if (st->variant && st->variant->shared_bound)
			sl_search_shared_bound_lower(st->variant->shared_bound, value);
	}
	return sl_ranking_consider(&st->rank, plan, &st->result, err);
}

/* Bounds on the variant of a plan (simulate_variant) from the plan's result without options:
 * under the sailor model the options only shorten the optimizer step (ZeRO-1) and lengthen the
 * backward (recomputation); transfers, syncs and their bytes stay (time_sailor.c). So the
 * variant's iteration takes at least the plan's less its longest optimizer step, at the same
 * rent and egress. Not for the model of our runtime (its steps overlap otherwise) nor with
 * uneven micro-batches (the variant's counts are chosen anew): there time_lb_s is 0. */
struct variant_bound {
	double time_lb_s, cost_lb_usd;
};

static struct variant_bound variant_bound_of(const struct search_state *st,
					      const struct sl_sim_result *without)
{
	struct variant_bound b = {0, 0};
	if (without->runtime_sailor || st->variant->req->uneven_microbatches)
		return b;
	double longest_update_s = 0;
	for (int k = 0; k < without->num_stages; k++)
		if (without->stages[k].optimizer_s > longest_update_s)
			longest_update_s = without->stages[k].optimizer_s;
	b.time_lb_s = without->iteration_time_s - longest_update_s;
	b.cost_lb_usd = without->gpu_usd_per_hour / 3600.0 * b.time_lb_s +
			without->egress_cost_usd_per_iter;
	return b;
}

/* The same replicas as st->plan, with the options the search with options would give them
 * (search_with_options), unless bound shows they cannot enter its result; a plan with D = 1 and
 * no recomputation is st->plan itself, ranked already. */
static int simulate_variant(struct search_state *st, struct variant_bound bound,
			    struct sl_err *err)
{
	struct search_state *v = st->variant;
	if (bound.time_lb_s > 0 && sl_search_prunable(v, bound.time_lb_s, bound.cost_lb_usd))
		return 0;
	int rc = sl_plan_copy(&v->plan, &st->plan, err);
	if (rc)
		return rc;
	if (v->plan.num_pipelines == 1) {
		sl_search_choose_options(v->env, v->req, &v->plan, v->global_batch);
		if (v->plan.stages[0].recompute == SL_RECOMPUTE_NONE && !v->plan.stages[0].zero) {
			int any = 0;
			for (int k = 1; k < v->plan.num_stages; k++)
				any |= v->plan.stages[k].recompute != SL_RECOMPUTE_NONE;
			if (!any)
				return 0;
		}
	}
	return sl_search_simulate_and_rank(v, err);
}

/* Whether some stage of plan recomputes. */
static int recomputes(const struct sl_plan *plan)
{
	for (int k = 0; k < plan->num_stages; k++)
		if (plan->stages[k].recompute != SL_RECOMPUTE_NONE)
			return 1;
	return 0;
}

/* The plan in st->plan (canonical already: assign.c and the enumeration write it so), and with
 * --uneven-microbatches the same replicas with micro-batches in proportion to pipeline speed;
 * then, in the search without options that has one, the variant with options. With options on,
 * their set with ZeRO-1 (when zero) or without; a set without ZeRO-1 or recomputation is the
 * plan the search without options ranks, so it is skipped. */
static int simulate_and_rank_with(struct search_state *st, int zero, struct sl_err *err)
{
	if (st->options_on) {
		sl_search_choose_options_zero(st->env, st->req, &st->plan, st->global_batch, zero);
		if (!zero && !recomputes(&st->plan))
			return 0;
	}
	int simulated = 0;
	int rc = simulate_one(st, &st->plan, &simulated, err);
	/* the variant's bounds, from this result before the uneven plan's overwrites it */
	struct variant_bound bound = {0, 0};
	if (simulated && st->variant)
		bound = variant_bound_of(st, &st->result);
	if (!rc && st->req->uneven_microbatches) {
		if ((rc = sl_plan_copy(&st->uneven_plan, &st->plan, err)))
			return rc;
		int applied = sl_uneven_apply(st->env, st->cm, &st->uneven_plan, st->global_batch, err);
		if (applied > 0 && st->options_on)
			sl_search_choose_options_zero(st->env, st->req, &st->uneven_plan,
						      st->global_batch, zero);
		rc = applied < 0 ? applied
				 : applied > 0 ? simulate_one(st, &st->uneven_plan, NULL, err) : 0;
	}
	if (!rc && st->variant)
		rc = simulate_variant(st, bound, err);
	return rc;
}

/* simulate_and_rank_with ZeRO-1 where the options put it; under the model of our runtime, whose
 * ZeRO-1 costs time over slow links (memory_dimensions.h), also without it. */
int sl_search_simulate_and_rank(struct search_state *st, struct sl_err *err)
{
	int rc = simulate_and_rank_with(st, 1, err);
	if (!rc && st->options_on && st->plan.num_pipelines > 1 &&
	    sl_sim_replay_uses(st->env, &st->plan))
		rc = simulate_and_rank_with(st, 0, err);
	return rc;
}
