/* The search's own pruning: lower bounds on the iteration time and cost of every plan of a
 * shape (micro-batch, partition, D), of the replicas a threshold makes eligible, of the replicas
 * assigned and of the plan written, checked against the constraints and the K-th best plan so
 * far (prunable). The per-plan bounds of the simulator that these build on (communication, sync)
 * are in sim/bounds.c.
 *
 * Invariants: each bound is no more than what sl_simulate gives any plan it covers, so a pruned
 * plan could not have entered the result; equal bounds are not pruned (tie-breaks); nothing is
 * pruned by a bound where the simulator may model plans as our runtime (bounds_unsound).
 */
#include <float.h>
#include <math.h>
#include <stdatomic.h>

#include "search/search_state.h"
#include "search/uneven.h"
#include "sim/transfer_cache.h"

/* The objective value threads share for pruning when only the best plan is wanted: iteration
 * seconds (throughput) or dollars per iteration (cost) of the best plan meeting the constraints
 * found by any thread. Lowering it is a compare-and-swap loop; reading it is relaxed, because a
 * stale value only prunes less. */
void sl_search_shared_bound_lower(_Atomic double *bound, double value)
{
	double seen = atomic_load_explicit(bound, memory_order_relaxed);
	while (value < seen &&
	       !atomic_compare_exchange_weak_explicit(bound, &seen, value, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

/* Lower bound on the iteration time of any plan whose stage k takes at least fastest_s[k] per
 * micro-batch, with nmb micro-batches per pipeline: micro-batch 0 must pass stages 0..k-1 before
 * stage k starts, and stage k then runs nmb forward+backward passes one after another:
 *   T >= max_k ( nmb * fastest_s[k] + sum_{j<k} fastest_s[j] ).
 * Both cost models add communication, bubbles and synchronisation to this, never less. */
double sl_search_time_lower_bound(int stages, double nmb, const double *fastest_s)
{
	double bound = 0, before = 0;
	for (int k = 0; k < stages; k++) {
		double t = nmb * fastest_s[k] + before;
		if (t > bound)
			bound = t;
		before += fastest_s[k];
	}
	return bound;
}

/* Micro-batches of the busiest pipeline, for the bounds: Nmb; with uneven counts, at least the
 * average G / (b·D) (some pipeline gets no fewer than that). */
double sl_search_busiest_microbatches(const struct search_state *st, int mbs, long long D,
				      long long nmb)
{
	if (!st->req->uneven_microbatches)
		return (double)nmb;
	return (double)st->global_batch / ((double)mbs * (double)D);
}

/* Micro-batches the bounds may charge to the slowest replica of a stage: under the planner's
 * split (plan/microbatch_share.h) its pipeline may get the fewest, floor(G / (b·D)), where D
 * pipelines do not share the G / b micro-batches evenly. The sosp25 model times every stage with
 * the busiest pipeline's count whichever pipeline its slowest replica is in (time_sosp25.c), so
 * there it is nmb. */
double sl_search_fewest_microbatches(const struct search_state *st, int mbs, long long D,
				     long long nmb)
{
	long long M = st->global_batch / mbs;
	return M % D && st->cm != SL_COST_SOSP25 ? (double)(M / D) : (double)nmb;
}

/* Whether no plan whose iteration takes at least time_lb_s and costs at least cost_lb_usd can
 * enter the result: it misses a constraint, or it cannot beat the K-th best plan kept so far.
 * Nothing is, where the bounds do not hold (bounds_unsound). Equal bounds are not pruned: such
 * a plan may still win a tie-break. With --pareto only constraints prune. prunable_above_s below
 * states the same rules as a time to stop at: a rule added here goes there too (or the plan bound
 * only stops later, never wrongly). */
int sl_search_prunable(const struct search_state *st, double time_lb_s, double cost_lb)
{
	const struct sl_search_request *req = st->req;
	if (st->bounds_unsound)
		return 0;
	if (req->min_throughput_it_s > 0 && 1.0 / time_lb_s < req->min_throughput_it_s)
		return 1;
	if (req->max_cost_usd_per_iter > 0 && cost_lb > req->max_cost_usd_per_iter)
		return 1;
	if (st->shared_bound) {
		double best = atomic_load_explicit(st->shared_bound, memory_order_relaxed);
		return (req->objective == SL_OBJECTIVE_THROUGHPUT ? time_lb_s : cost_lb) > best;
	}
	const struct sl_search_outcome *out = st->rank.out;
	if (req->pareto) {
		/* a kept frontier plan strictly faster and strictly cheaper than the bounds dominates
		 * every plan of this shape (consider_pareto would reject each), so only it needs no
		 * simulating: without this, --pareto simulated the whole space, at a cost that grows
		 * with the global batch (the schedule is O(micro-batches)). Not with uneven
		 * micro-batches: the bounds are those of the even plan, its uneven variant may beat
		 * them. */
		for (int i = 0; !req->uneven_microbatches && i < out->pareto_count; i++)
			if (out->pareto[i].result.iteration_time_s < time_lb_s &&
			    out->pareto[i].result.cost_usd_per_iter < cost_lb)
				return 1;
		return 0;
	}
	if (out->count < st->rank.top_capacity)
		return 0;
	const struct sl_sim_result *kth = &out->best[out->count - 1].result;
	if (req->objective == SL_OBJECTIVE_THROUGHPUT)
		return time_lb_s > kth->iteration_time_s;
	return cost_lb > kth->cost_usd_per_iter;
}

/* The least iteration time above which sl_search_prunable(st, t, rent_usd_per_s * t) holds
 * (DBL_MAX: none is known, as in a Pareto search), for a bound that may stop once past it. */
static double prunable_above_s(const struct search_state *st, double rent_usd_per_s)
{
	const struct sl_search_request *req = st->req;
	if (st->bounds_unsound || req->pareto)
		return DBL_MAX;
	double above = DBL_MAX, best = DBL_MAX;
	if (req->min_throughput_it_s > 0)
		above = fmin(above, 1.0 / req->min_throughput_it_s);
	if (req->max_cost_usd_per_iter > 0 && rent_usd_per_s > 0)
		above = fmin(above, req->max_cost_usd_per_iter / rent_usd_per_s);
	const struct sl_search_outcome *out = st->rank.out;
	if (st->shared_bound)
		best = atomic_load_explicit(st->shared_bound, memory_order_relaxed);
	else if (out->count >= st->rank.top_capacity)
		best = req->objective == SL_OBJECTIVE_THROUGHPUT
			       ? out->best[out->count - 1].result.iteration_time_s
			       : out->best[out->count - 1].result.cost_usd_per_iter;
	if (req->objective == SL_OBJECTIVE_THROUGHPUT)
		above = fmin(above, best);
	else if (rent_usd_per_s > 0 && best < DBL_MAX)
		above = fmin(above, best / rent_usd_per_s);
	return above;
}

/* The gradient synchronisation any plan of this shape pays after its pipeline (sim.h,
 * sl_sim_sync_lower_bound_s): sosp25 adds the slowest stage's sync, bounded here by the stage with
 * the most parameters; sailor exposes at least stage 0's (it finishes last). */
static double sync_lower_bound_uncached(const struct search_state *st,
					const struct sl_partition *part, int D)
{
	const struct sl_sim_env *env = st->env;
	int k = 0;
	if (st->cm == SL_COST_SOSP25) {
		double most = -1;
		for (int i = 0; i < part->num_stages; i++) {
			double w = sl_sim_stage_params_bytes(env, part->first[i], part->first[i + 1] - 1);
			if (w > most) {
				most = w;
				k = i;
			}
		}
	}
	return sl_sim_sync_lower_bound_s(env, st->cm, part->first[k], part->first[k + 1] - 1, D,
					 st->assign.zone_order, st->assign.zone_order_count,
					 (const int(*)[SL_MAX_SEARCH_ZONES])st->assign.avail);
}

/* sync_lower_bound_uncached, memoised per work item: it depends only on the bounding stage's
 * layers, D and the GPUs of the zones searched, and evaluates every (GPU type, TP, zone pair)
 * hop, a tenth of the search's time when it was asked anew for every partition and D. */
double sl_search_sync_lower_bound(struct search_state *st, const struct sl_partition *part, int D)
{
	int first = 0, last = part->first[1] - 1;
	if (st->cm == SL_COST_SOSP25) {
		/* the stage with the most parameters, as sync_lower_bound_uncached picks it */
		double most = -1;
		for (int i = 0; i < part->num_stages; i++) {
			double w = sl_sim_stage_params_bytes(st->env, part->first[i],
							     part->first[i + 1] - 1);
			if (w > most) {
				most = w;
				first = part->first[i];
				last = part->first[i + 1] - 1;
			}
		}
	}
	unsigned long long key = ((unsigned long long)first << 40) |
				 ((unsigned long long)last << 20) | (unsigned long long)D;
	unsigned slot = (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 52) & (SYNC_MEMO_SLOTS - 1);
	for (int probe = 0; probe < 8; probe++) {
		struct sync_memo *m = &st->sync_memo[(slot + (unsigned)probe) & (SYNC_MEMO_SLOTS - 1)];
		if (m->stamp == st->item_stamp && m->key == key)
			return m->value;
		if (m->stamp != st->item_stamp) {
			m->stamp = st->item_stamp;
			m->key = key;
			m->value = sync_lower_bound_uncached(st, part, D);
			return m->value;
		}
	}
	return sync_lower_bound_uncached(st, part, D);
}

static int tp_slot(int tp)
{
	return tp >= 8 ? 3 : tp >= 4 ? 2 : tp >= 2 ? 1 : 0;
}

static double shape_kind_time_s(const void *ctx, int k, const struct sl_replica *r)
{
	const struct search_state *st = ctx;
	return st->stage_time_s[k][r->gpu][tp_slot(r->tp)];
}

int sl_search_share_shape_microbatches(struct search_state *st)
{
	struct sl_stage_kind_times kinds = {shape_kind_time_s, st};
	return sl_search_share_microbatches_timed(st->env, st->cm, &st->plan, st->global_batch,
						  &kinds);
}

/* The bounds again, now from the replicas actually assigned: each stage is as slow as its slowest
 * replica, and the rent is exact. Tighter than the bounds before assignment, and cheap next to a
 * simulation. */
static int plan_prunable(const struct search_state *st, double time_lb_s, double bottleneck_s,
			 double rent_usd_per_s);

/* The first of those bounds, from the stage times and rent of the replicas; *time_lb_s gets it.
 * slow_count[k]: how many of stage k's D replicas take stage_s[k]. Under the planner's split the
 * r = M mod D pipelines with one micro-batch more hold, by pigeonhole, one of those replicas when
 * more than D - r of them are slow: then the stage is charged the busiest count, else the
 * fewest (sl_search_fewest_microbatches). */
static int replicas_prunable(const struct search_state *st, int P, int D, int mbs, long long nmb,
			     const double *stage_s, const int *slow_count, double rent_usd_per_s,
			     double *time_lb_s, double *bottleneck_s)
{
	double busiest = sl_search_busiest_microbatches(st, mbs, D, nmb);
	double fewest = st->req->uneven_microbatches ? busiest
						      : sl_search_fewest_microbatches(st, mbs, D, nmb);
	int with_more = (int)((st->global_batch / mbs) % D);
	*bottleneck_s = 0;
	double bound = 0, before = 0;
	for (int k = 0; k < P; k++) {
		double n = fewest != busiest && slow_count[k] > D - with_more ? busiest : fewest;
		if (n * stage_s[k] > *bottleneck_s)
			*bottleneck_s = n * stage_s[k];
		/* sl_search_time_lower_bound with the stage's own count */
		if (n * stage_s[k] + before > bound)
			bound = n * stage_s[k] + before;
		before += stage_s[k];
	}
	*time_lb_s = bound + st->sync_lb_s;
	return sl_search_prunable(st, *time_lb_s, rent_usd_per_s * *time_lb_s);
}

int sl_search_assigned_prunable(const struct search_state *st, long long nmb)
{
	const struct sl_plan *plan = &st->plan;
	double stage_s[SL_PLAN_MAX_STAGES], rent_usd_per_s = 0;
	int slow_count[SL_PLAN_MAX_STAGES];
	for (int k = 0; k < plan->num_stages; k++) {
		stage_s[k] = 0;
		slow_count[k] = 0;
		for (int j = 0; j < plan->num_pipelines; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			/* the stage's recomputation is at least this replica's least */
			double c = st->fit_time_s[k][r->gpu][tp_slot(r->tp)];
			if (c > stage_s[k]) {
				stage_s[k] = c;
				slow_count[k] = 0;
			}
			slow_count[k] += c == stage_s[k];
			rent_usd_per_s += r->tp * st->assign.usd_per_hour[r->gpu] / 3600.0;
		}
	}
	double time_lb_s, bottleneck_s;
	if (replicas_prunable(st, plan->num_stages, plan->num_pipelines, plan->micro_batch, nmb,
			      stage_s, slow_count, rent_usd_per_s, &time_lb_s, &bottleneck_s))
		return 1;
	return plan_prunable(st, time_lb_s, bottleneck_s, rent_usd_per_s);
}

/* sl_search_assigned_prunable from the assignment's groups before its plan is written (the same
 * values, summed in the same order); writes the plan into st->plan when the first bound leaves
 * it. */
int sl_search_counted_prunable(struct search_state *st, long long nmb)
{
	const struct sl_assign_input *in = &st->assign;
	const struct sl_assign_result *res = st->assigned;
	double stage_s[SL_PLAN_MAX_STAGES], rent_usd_per_s = 0;
	int slow_count[SL_PLAN_MAX_STAGES];
	for (int k = 0; k < in->num_stages; k++) {
		stage_s[k] = 0;
		slow_count[k] = 0;
		for (int i = res->begin[k]; i < res->end[k]; i++) {
			const struct sl_assign_group *grp = &res->groups[i];
			double c = st->fit_time_s[k][grp->gpu][tp_slot(grp->tp)];
			if (c > stage_s[k]) {
				stage_s[k] = c;
				slow_count[k] = 0;
			}
			slow_count[k] += c == stage_s[k] ? grp->count : 0;
			double usd = grp->tp * in->usd_per_hour[grp->gpu] / 3600.0;
			for (int n = 0; n < grp->count; n++)
				rent_usd_per_s += usd;
		}
	}
	double time_lb_s, bottleneck_s;
	if (replicas_prunable(st, in->num_stages, in->num_pipelines, st->plan.micro_batch, nmb,
			      stage_s, slow_count, rent_usd_per_s, &time_lb_s, &bottleneck_s))
		return 1;
	sl_assign_write(in, res, &st->plan);
	/* the plan's micro-batch split, before the bounds that read its pipelines' counts */
	if (sl_search_share_shape_microbatches(st))
		return 1;
	return plan_prunable(st, time_lb_s, bottleneck_s, rent_usd_per_s);
}

/* The bound from the replicas in st->plan: their links, zones crossed and TP degrees. */
static int plan_prunable(const struct search_state *st, double time_lb_s, double bottleneck_s,
			 double rent_usd_per_s)
{
	const struct sl_plan *plan = &st->plan;
	/* now from these very replicas: their links, zones crossed and TP degrees (sync, and with
	 * the sailor model the transfers that block each stage), still far cheaper than simulating */
	double sync_s = sl_sim_plan_sync_lower_bound_s(st->env, st->cm, plan);
	/* first the sync of these replicas after the bottleneck stage's micro-batches (the
	 * pipeline cannot end before the slowest replica of the bottleneck stage has run all of
	 * them; with the sailor model stage 0 then all-reduces, with sosp25 the slowest stage's
	 * sync follows the pipeline): that alone prunes many plans, before any transfer is timed.
	 * Not with uneven micro-batch counts, where that replica's pipeline may run fewer. */
	double pipeline_lb_s = time_lb_s - st->sync_lb_s;
	if (sync_s > st->sync_lb_s && !st->req->uneven_microbatches &&
	    sl_search_prunable(st, bottleneck_s + sync_s, rent_usd_per_s * (bottleneck_s + sync_s)))
		return 1;
	double plan_lb_s = sl_sim_plan_time_lower_bound_sync_s(
		st->env, st->cm, plan, st->global_batch, sync_s, st->transfer_cache,
		prunable_above_s(st, rent_usd_per_s));
	if (st->cm == SL_COST_SOSP25)
		plan_lb_s += pipeline_lb_s; /* its bound is the sync alone */
	if (plan_lb_s > time_lb_s)
		time_lb_s = plan_lb_s;
	return sl_search_prunable(st, time_lb_s, rent_usd_per_s * time_lb_s);
}
