/* One work item of the search (one micro-batch size over one zone set): every depth P and
 * candidate partition (partition.h), every data-parallel degree D that changes the micro-batch
 * count, and for each (partition, D) and each fill order of the zone set the time thresholds
 * tau: the replica kinds no slower than tau are eligible, assign.h picks and places D replicas
 * per stage from them, and the plan is simulated (evaluate.c). Small shapes are enumerated
 * completely instead (enumerate.c); the bounds of prune.c cut shapes, thresholds and plans on
 * the way.
 *
 * Invariants: shapes are visited in a fixed order (P ascending, partitions as proposed, D
 * descending; within a shape the zone set's fill orders in turn, and in each the thresholds
 * ascending), which the shape records and the tie-breaks rely on; the eligible sets only grow
 * with tau, so feasibility is monotone in it nearly always, and the threshold search finds a
 * feasible threshold whose predecessor is not (where the greedy assignment makes feasibility
 * non-monotone, see smallest_feasible_threshold, that need not be the smallest).
 */
#include <float.h>
#include <limits.h>
#include <string.h>

#include "search/search_state.h"
#include "util/sort_unique.h"

/* Without a budget or throughput floor, the smallest feasible threshold gives the fastest plan
 * of a shape; slower thresholds only use fewer GPUs (the local search afterwards still tries
 * single-replica changes that trade compute for a faster sync). */
#define THRESHOLDS_FOR_THROUGHPUT 1
/* With a budget, a throughput floor or the cost objective, a slower threshold can be the better
 * plan (cheaper GPUs, fewer of them); the next feasible one after the fastest covers the cases
 * seen on the SOSP'25 scenarios (2, 4 and 8 gave the same plans there at 1x, 1.8x and 2.8x the
 * simulations), and small shapes are enumerated completely anyway. */
#define THRESHOLDS_CONSTRAINED 2

/* Sets the assignment's eligible TP per (stage, type) for threshold tau, and the bounds of any
 * plan built from it. Returns 0 when some stage has no eligible replica. */
static int eligible_at_tau(struct search_state *st, int P, int D, double tau,
			   double *fastest_eligible_s, double *rent_usd_per_s)
{
	struct sl_assign_input *in = &st->assign;
	int (*fits)[SL_MAX_GPU_TYPES][TP_SLOTS] = st->fits;
	*rent_usd_per_s = 0;
	for (int k = 0; k < P; k++) {
		double fastest_s = DBL_MAX, cheapest_usd_per_s = DBL_MAX;
		memset(in->tp_for[k], 0, sizeof(in->tp_for[k]));
		for (int ti = 0; ti < in->type_count; ti++) {
			int g = in->types[ti];
			for (int t = 0; t < TP_SLOTS; t++) {
				double c = st->fit_time_s[k][g][t];
				if (!fits[k][g][t] || c > tau)
					continue;
				if (!in->tp_for[k][g])
					in->tp_for[k][g] = tp_values[t];
				if (c < fastest_s)
					fastest_s = c;
				double usd = tp_values[t] * in->usd_per_hour[g] / 3600.0;
				if (usd < cheapest_usd_per_s)
					cheapest_usd_per_s = usd;
			}
		}
		if (fastest_s == DBL_MAX)
			return 0;
		fastest_eligible_s[k] = fastest_s;
		*rent_usd_per_s += D * cheapest_usd_per_s;
	}
	return 1;
}

/* eligible_at_tau at threshold taus[i] of the current shape, memoised: every fill order of the
 * shape asks for the same few thresholds (search_thresholds stamps each shape anew). With it
 * the order the assignment takes stages and types in (st->assign_order), which depends on the
 * eligible replicas alone. */
static int eligible_at(struct search_state *st, int P, int D, int i, double *fastest_eligible_s,
		       double *rent_usd_per_s)
{
	struct eligible_memo *m = &st->eligible_memo[i & (ELIGIBLE_MEMO_SLOTS - 1)];
	size_t rows = sizeof(st->assign.tp_for[0]) * (size_t)P;
	size_t times = sizeof(*fastest_eligible_s) * (size_t)P;
	unsigned *stamp = &st->eligible_memo_stamp[i & (ELIGIBLE_MEMO_SLOTS - 1)];
	if (*stamp == st->shape_stamp && m->tau_index == i) {
		if (m->eligible) {
			memcpy(st->assign.tp_for, m->tp_for, rows);
			memcpy(fastest_eligible_s, m->fastest_eligible_s, times);
			*rent_usd_per_s = m->rent_usd_per_s;
			st->assign_order = &m->order;
			return 1;
		}
	} else {
		*stamp = st->shape_stamp;
		m->tau_index = i;
		m->eligible = eligible_at_tau(st, P, D, st->taus[i], fastest_eligible_s,
					      rent_usd_per_s);
		if (m->eligible) {
			memcpy(m->tp_for, st->assign.tp_for, rows);
			memcpy(m->fastest_eligible_s, fastest_eligible_s, times);
			m->rent_usd_per_s = *rent_usd_per_s;
			sl_assign_order_of(&st->assign, &m->order);
			st->assign_order = &m->order;
			return 1;
		}
	}
	return 0;
}

/* A necessary condition for sl_assign_count to succeed, much cheaper: the pool holds at least
 * D replicas' worth of GPUs for every stage at its least GPU-hungry eligible type. */
static int enough_gpus(const struct sl_assign_input *in)
{
	long long total = 0, need = 0;
	for (int ti = 0; ti < in->type_count; ti++)
		for (int zi = 0; zi < in->zone_order_count; zi++)
			total += in->avail[in->types[ti]][zi];
	for (int k = 0; k < in->num_stages; k++) {
		int least = 0;
		for (int ti = 0; ti < in->type_count; ti++) {
			int tp = in->tp_for[k][in->types[ti]];
			if (tp && (!least || tp < least))
				least = tp;
		}
		need += (long long)least * in->num_pipelines;
	}
	return need <= total;
}

/* fit_kinds' last step: per threshold taus[i] (of n), the GPUs a pipeline needs at least
 * (st->need_per_pipeline[i], what enough_gpus counts, per pipeline; LLONG_MAX where some stage has
 * no eligible kind). Stage k's replicas need at least the smallest TP degree among its eligible
 * kinds, which only falls as tau grows; summed over the stages through its changes at the
 * thresholds where a stage's least TP falls. */
static void count_needed_gpus(struct search_state *st, int P, int n)
{
	const struct sl_assign_input *in = &st->assign;
	int (*fits)[SL_MAX_GPU_TYPES][TP_SLOTS] = st->fits;
	long long *need = st->need_per_pipeline;
	int *missing = st->missing_stages;
	for (int i = 0; i <= n; i++) {
		need[i] = 0;
		missing[i] = 0;
	}
	for (int k = 0; k < P; k++) {
		int from[TP_SLOTS]; /* the first threshold at which TP slot t has an eligible kind */
		for (int t = 0; t < TP_SLOTS; t++) {
			from[t] = n;
			for (int ti = 0; ti < in->type_count; ti++) {
				int g = in->types[ti];
				if (!fits[k][g][t])
					continue;
				double c = st->fit_time_s[k][g][t];
				int lo = 0, hi = n - 1;
				while (lo < hi) {
					int mid = lo + (hi - lo) / 2;
					if (st->taus[mid] < c)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (lo < from[t])
					from[t] = lo;
			}
		}
		/* the least TP as a step function of the threshold index */
		int least = 0;
		for (int i = 0;; i++) {
			int next = n, tp = 0;
			for (int t = 0; t < TP_SLOTS; t++)
				if (from[t] >= i && from[t] < n && (!least || tp_values[t] < least) &&
				    (from[t] < next || (from[t] == next && tp_values[t] < tp))) {
					next = from[t];
					tp = tp_values[t];
				}
			if (next == n)
				break;
			if (!least)
				missing[next] -= 1;
			need[next] += tp - least;
			least = tp;
			i = next;
		}
	}
	long long sum = 0;
	int lacking = P;
	for (int i = 0; i < n; i++) {
		sum += need[i];
		lacking += missing[i];
		need[i] = lacking > 0 ? LLONG_MAX : sum;
	}
}

/* search_thresholds' preparation for one (micro-batch, partition, D, nmb): which replica kinds
 * fit (st->fits) and their times there (st->fit_time_s: with options at the least
 * recomputation that fits); the candidate thresholds (st->taus: the eligible set changes only
 * where tau crosses the fit time of a kind that fits, so those times, sorted and without
 * repeats, are all the distinct sets there are); per threshold the GPUs a pipeline needs at
 * least (count_needed_gpus); per stage the fastest fit time and the cheapest rent of the kinds
 * that fit. Returns 0 when some stage has no kind that fits. */
static int fit_kinds(struct search_state *st, const struct sl_partition *part, int mbs, int D,
		     int nmb)
{
	const struct sl_assign_input *in = &st->assign;
	int P = part->num_stages;
	int (*fits)[SL_MAX_GPU_TYPES][TP_SLOTS] = st->fits;
	for (int k = 0; k < P; k++) {
		int first = part->first[k], last = part->first[k + 1] - 1;
		int any = 0;
		memset(fits[k], 0, sizeof(fits[k]));
		st->fastest_fit_s[k] = DBL_MAX;
		st->cheapest_fit_usd_per_s[k] = DBL_MAX;
		for (int ti = 0; ti < in->type_count; ti++) {
			int g = in->types[ti];
			for (int t = 0; t < TP_SLOTS; t++) {
				if (st->stage_time_s[k][g][t] < 0)
					continue;
				/* without options: whether it fits (level 0); with: the least
				 * recomputation under which it fits, and its time there */
				int level = sl_search_kind_level(st, st->options_on, k, g, t, first,
								  last, P, mbs, nmb, D);
				fits[k][g][t] = level >= 0;
				double c = level > 0 ? st->stage_time_rc_s[k][g][t][level]
						     : st->stage_time_s[k][g][t];
				st->fit_time_s[k][g][t] = c;
				if (!fits[k][g][t])
					continue;
				any = 1;
				/* as eligible_at computes them */
				if (c < st->fastest_fit_s[k])
					st->fastest_fit_s[k] = c;
				double usd = tp_values[t] * in->usd_per_hour[g] / 3600.0;
				if (usd < st->cheapest_fit_usd_per_s[k])
					st->cheapest_fit_usd_per_s[k] = usd;
			}
		}
		if (!any)
			return 0;
	}
	int n = 0;
	for (int k = 0; k < P; k++)
		for (int ti = 0; ti < in->type_count; ti++)
			for (int t = 0; t < TP_SLOTS; t++)
				if (fits[k][in->types[ti]][t])
					st->taus[n++] = st->fit_time_s[k][in->types[ti]][t];
	n = st->tau_count = sl_sort_unique(st->taus, n, st->taus_scratch);
	count_needed_gpus(st, P, n);
	return 1;
}

/* The fill orders in which the search with options would only repeat the search without them
 * on this shape, as a bit mask: where the options let more kinds fit, but all of them are
 * slower than every threshold the search without options considered in that order, and that
 * search went to its threshold limit there, this search would consider exactly the same
 * eligible sets (the new kinds are eligible only above them), build the same plans, and that
 * search already ranked each with its options or pruned it (see
 * sl_search_fastest_changed_kind_s). */
static unsigned orders_unchanged_by_options(struct search_state *st,
					    const struct sl_partition *part, int mbs, int D,
					    int nmb)
{
	unsigned all = (1u << st->fill_order_count) - 1;
	double fastest_new_s = sl_search_fastest_changed_kind_s(st, part, mbs, D, nmb);
	if (fastest_new_s == DBL_MAX)
		return all;
	unsigned unchanged = 0;
	for (int o = 0; o < st->fill_order_count; o++) {
		double tau_max_s = sl_search_shape_record_find(st, part->num_stages, D, o);
		if (tau_max_s >= 0 && fastest_new_s > tau_max_s)
			unchanged |= 1u << o;
	}
	return unchanged;
}

/* Which kinds fit, their times, the thresholds and the GPUs they need (fit_kinds). They depend
 * on D and nmb only through the memory: under sosp25 not at all, without options not once D > 1
 * and every stage holds all the micro-batches it can (sl_search_kind_level). There the previous
 * D's are reused (taus_stamp: the partition they belong to). Returns 0 when some stage has no
 * kind that fits. */
static int shape_kinds(struct search_state *st, const struct sl_partition *part, int mbs, int D,
		       int nmb)
{
	int P = part->num_stages;
	int stable = st->cm == SL_COST_SOSP25 || (!st->options_on && D >= 2 && nmb >= P);
	if (!(stable && st->taus_stamp == st->partition_stamp)) {
		st->taus_stamp = 0;
		if (!fit_kinds(st, part, mbs, D, nmb))
			return 0;
		if (stable)
			st->taus_stamp = st->partition_stamp;
	}
	return 1;
}

/* The plan every candidate of this shape is built in (st->plan: its batch and stages; the
 * replicas are the assignment's) and the assignment's shape. */
static int start_shape_plan(struct search_state *st, const struct sl_partition *part, int mbs,
			    int D, struct sl_err *err)
{
	int P = part->num_stages;
	int rc = sl_plan_reserve(&st->plan, P, D, err);
	if (rc)
		return rc;
	st->plan.micro_batch = mbs;
	st->plan.global_batch = st->global_batch;
	st->plan.uneven_microbatches = 0;
	for (int k = 0; k < P; k++) {
		st->plan.stages[k] = (struct sl_plan_stage){.first_layer = part->first[k],
							    .last_layer = part->first[k + 1] - 1};
	}
	st->assign.num_stages = P;
	st->assign.num_pipelines = D;
	return 0;
}

/* The smallest threshold index at which the pool's GPUs (of the types and zones searched) are
 * enough for D replicas of every stage, counted as enough_gpus counts (need_per_pipeline,
 * fit_kinds; monotone in tau); tau_count when there is none. */
static int least_threshold_by_gpus(const struct search_state *st, int D)
{
	const struct sl_assign_input *in = &st->assign;
	long long total = 0;
	for (int ti = 0; ti < in->type_count; ti++)
		for (int zi = 0; zi < in->zone_order_count; zi++)
			total += in->avail[in->types[ti]][zi];
	int lo = 0, hi = st->tau_count;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (st->need_per_pipeline[mid] != LLONG_MAX && st->need_per_pipeline[mid] * D <= total)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Whether no plan of this shape can win, by the bounds that hold before any assignment: the
 * slowest replica is no faster than least_tau_s (the GPU count allows no smaller threshold), the
 * pipeline no faster than its stages' fastest fit times, and the rent at the cheapest kind that
 * fits (as eligible_at at the largest threshold: every kind that fits). */
static int shape_prunable_by_gpus(struct search_state *st, int P, int mbs, int D, int nmb,
				  double least_tau_s)
{
	double rent_usd_per_s = 0;
	for (int k = 0; k < P; k++)
		rent_usd_per_s += D * st->cheapest_fit_usd_per_s[k];
	double busiest = sl_search_busiest_microbatches(st, mbs, D, nmb);
	double time_lb_s = sl_search_time_lower_bound(P, busiest, st->fastest_fit_s);
	/* the slowest replica's pipeline runs at least the fewest micro-batches of the
	 * planner's split (with uneven counts it may get fewer than the average) */
	double fewest = sl_search_fewest_microbatches(st, mbs, D, nmb);
	if (!st->req->uneven_microbatches && time_lb_s < fewest * least_tau_s)
		time_lb_s = fewest * least_tau_s;
	time_lb_s += st->sync_lb_s;
	return sl_search_prunable(st, time_lb_s, rent_usd_per_s * time_lb_s);
}

/* One probe of smallest_feasible_threshold: whether threshold taus[i] is feasible (eligible_at,
 * then enough GPUs, then the assignment, which st->assigned then holds). *held: i when it is,
 * else -1. */
static int feasible_probe(struct search_state *st, int P, int D, int i,
			  double *fastest_eligible_s, double *rent_usd_per_s, int *held)
{
	struct sl_assign_input *in = &st->assign;
	*held = -1;
	if (eligible_at(st, P, D, i, fastest_eligible_s, rent_usd_per_s) &&
	    enough_gpus(in) && !sl_assign_count(in, st->assign_order, st->assigned))
		*held = i;
	return *held == i;
}

/* The smallest feasible threshold index from lo on (tau_count: none), taken as where an
 * infeasible threshold is followed by a feasible one. The shape's other fill orders usually
 * have it at the same index: hint (-1: none) is tried first, with the one below it. Otherwise:
 * no smaller than the GPU count allows, and usually that one or close above it, so searched
 * from lo in growing steps, then bisected.
 * Feasibility is monotone in the threshold but for rare corners of the greedy assignment (a
 * stage that gains an eligible type may take GPUs a later stage needed, or the stages choose
 * in another order): there a feasible threshold can follow an infeasible one above a smaller
 * feasible one, and which of them is found depends on the probes. Over the benchmark pools
 * and scenarios (both cost models, one thread), the hint settled on another one than the
 * search without it 8 times (all in 3types-256-5zones, higher each time), and no plan the
 * planner returns changed.
 * *held: the threshold whose assignment st->assigned holds (its last probe), -1 when the last
 * probe failed; eligible_at's outputs are that last probe's. */
static int smallest_feasible_threshold(struct search_state *st, int P, int D, int lo, int hint,
				       double *fastest_eligible_s, double *rent_usd_per_s,
				       int *held)
{
	int hi = st->tau_count; /* answer in [lo, hi]; hi = tau_count means none */
	*held = -1;
	if (hint > lo && hint < hi) {
		if (feasible_probe(st, P, D, hint - 1, fastest_eligible_s, rent_usd_per_s, held))
			hi = hint - 1;
		else if (feasible_probe(st, P, D, hint, fastest_eligible_s, rent_usd_per_s, held))
			return hint;
		else
			lo = hint + 1;
	} else if (hint == lo && hint < hi) {
		if (feasible_probe(st, P, D, hint, fastest_eligible_s, rent_usd_per_s, held))
			return hint;
		lo = hint + 1;
	}
	for (int step = 1, probe = lo; probe < hi; step *= 2) {
		if (feasible_probe(st, P, D, probe, fastest_eligible_s, rent_usd_per_s, held)) {
			hi = probe;
			break;
		}
		lo = probe + 1;
		probe = lo + step;
	}
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (feasible_probe(st, P, D, mid, fastest_eligible_s, rent_usd_per_s, held))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Thresholds from the smallest feasible one (lo) up: each that yields a new set of eligible
 * replicas counts, simulated or pruned, up to the limit; a shape taken to the limit is recorded
 * (sl_search_shape_record_add). held, fastest_eligible_s and *rent_usd_per_s as
 * smallest_feasible_threshold left them. */
static int rank_thresholds(struct search_state *st, int P, int mbs, int D, int nmb, int lo,
			   int held, double *fastest_eligible_s, double *rent_usd_per_s,
			   struct sl_err *err)
{
	struct sl_assign_input *in = &st->assign;
	int tau_count = st->tau_count;
	const double *taus = st->taus;
	int rc = 0;
	int constrained = st->req->objective == SL_OBJECTIVE_COST ||
			  st->req->max_cost_usd_per_iter > 0 || st->req->min_throughput_it_s > 0;
	int considered = 0;
	int previous_tp[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES];
	int have_previous = 0;
	int limit = constrained ? THRESHOLDS_CONSTRAINED : THRESHOLDS_FOR_THROUGHPUT;
	double tau_max_s = 0; /* the largest threshold considered (sl_search_shape_record_add) */
	for (int i = lo; i < tau_count && considered < limit; i++) {
		/* the feasible probe held was the last to set the eligible replicas */
		if (i != held &&
		    !eligible_at(st, P, D, i, fastest_eligible_s, rent_usd_per_s))
			continue;
		size_t table = sizeof(previous_tp[0]) * (size_t)P;
		if (have_previous && !memcmp(previous_tp, in->tp_for, table))
			continue; /* the same replicas are eligible: the same plan */
		memcpy(previous_tp, in->tp_for, table);
		have_previous = 1;
		considered++;
		tau_max_s = taus[i];
		double busiest = sl_search_busiest_microbatches(st, mbs, D, nmb);
		double time_lb_s = sl_search_time_lower_bound(P, busiest, fastest_eligible_s) +
				   st->sync_lb_s;
		if (sl_search_prunable(st, time_lb_s, *rent_usd_per_s * time_lb_s))
			continue;
		if ((i != held && sl_assign_count(in, st->assign_order, st->assigned)) ||
		    sl_search_counted_prunable(st, nmb))
			continue;
		if ((rc = sl_search_simulate_and_rank(st, err)))
			return rc;
	}
	if (considered == limit)
		sl_search_shape_record_add(st, P, D, st->fill_order_index, tau_max_s);
	return 0;
}

/* The replicas of one shape in the fill order st->assign holds: every assignment of a small
 * shape, else the thresholds from the smallest feasible one (at least lo). *hint: the smallest
 * feasible threshold an earlier fill order found (-1: none yet), updated to this order's. */
static int search_fill_order(struct search_state *st, int P, int mbs, int D, int nmb, int lo,
			     int *hint, struct sl_err *err)
{
	int rc = 0;
	if (sl_search_enumerate_small_shape(st, P, D, nmb, st->fits, &rc, err))
		return rc;
	double fastest_eligible_s[SL_PLAN_MAX_STAGES], rent_usd_per_s = 0;
	int held;
	lo = *hint = smallest_feasible_threshold(st, P, D, lo, *hint, fastest_eligible_s,
						 &rent_usd_per_s, &held);
	return rank_thresholds(st, P, mbs, D, nmb, lo, held, fastest_eligible_s, &rent_usd_per_s,
			       err);
}

/* For one (micro-batch, partition, D): the thresholds tau are the distinct per-stage times of
 * replicas that fit. A larger tau makes more replicas eligible, each with fewer GPUs, so whether
 * the pool can supply the plan is monotone in tau: a binary search finds the smallest feasible
 * one (the fastest plan of this shape); with a budget, a throughput floor or the cost objective,
 * larger thresholds (slower, cheaper plans) are tried after it too. All of it up to the choice
 * of replicas is the same in every fill order of the zone set, so it is done once, and the
 * replicas are then chosen in each order. */
static int search_thresholds(struct search_state *st, const struct sl_partition *part, int mbs,
			     int D, int nmb, struct sl_err *err)
{
	int P = part->num_stages;
	st->shapes++;
	st->shape_stamp++; /* eligible_at's memo: a new shape, new thresholds */
	unsigned skip_orders = st->skip_unchanged_shapes
				       ? orders_unchanged_by_options(st, part, mbs, D, nmb)
				       : 0;
	if (skip_orders == (1u << st->fill_order_count) - 1) {
		st->skipped_shapes++;
		return 0;
	}
	if (!shape_kinds(st, part, mbs, D, nmb))
		return 0;
	int rc = start_shape_plan(st, part, mbs, D, err);
	if (rc)
		return rc;
	/* Every plan of this shape, whichever replicas it takes, is as slow as its slowest
	 * replica's fit time tau_plan, and uses at least D replicas per stage of the fewest GPUs a
	 * kind no slower than tau_plan needs: so the pool's GPU count alone (enough_gpus, monotone
	 * in tau) bounds tau_plan from below, and with it the iteration (the bottleneck runs all its
	 * micro-batches), before any assignment; the rent at the cheapest kind that fits. Shapes
	 * this prunes never reach the assignment's search below. */
	int lo = least_threshold_by_gpus(st, D);
	if (lo == st->tau_count)
		return 0; /* too few GPUs for D replicas of every stage at any threshold */
	if (shape_prunable_by_gpus(st, P, mbs, D, nmb, st->taus[lo])) {
		st->gpu_pruned_shapes++;
		return 0;
	}
	int hint = -1; /* the smallest feasible threshold in the last order searched */
	for (int o = 0; o < st->fill_order_count && !rc; o++) {
		if (skip_orders & (1u << o))
			continue;
		sl_search_use_fill_order(st, o);
		rc = search_fill_order(st, P, mbs, D, nmb, lo, &hint, err);
	}
	return rc;
}

/* The least a stage's micro-batch costs over the kinds that can hold it (search_partition's work
 * bounds): GPU-seconds and dollars (rent x busy time). */
struct stage_work {
	double least_gpu_s, least_usd;
};

/* Stage k of the partition on every replica kind (GPU type, TP slot) of the types searched, with
 * one micro-batch in flight and one pipeline: its compute times (st->stage_time_s, -1 where the
 * kind cannot run it; st->stage_time_rc_s per recomputation level with options), the fastest
 * time and the cheapest rent (*fastest_s, *cheapest_usd_per_s) and the least work (*work) of
 * the kinds. Returns the smallest TP degree with a time, 0 when none has one. */
static int time_stage_kinds(struct search_state *st, const struct sl_partition *part, int k,
			    int mbs, double *fastest_s, double *cheapest_usd_per_s,
			    struct stage_work *work)
{
	const struct sl_sim_env *env = st->env;
	int P = part->num_stages;
	int first = part->first[k], last = part->first[k + 1] - 1;
	double fastest = DBL_MAX, cheapest = DBL_MAX;
	double least_gpu_s = DBL_MAX, least_usd = DBL_MAX;
	int min_tp = 0;
	for (int g = 0; g < env->catalogue.gpu_count; g++) {
		/* a type the zones searched lack (most of the catalogue, in most pools) has no
		 * kind: no query is built for it */
		int per_node = st->type_gpus[g] ? sl_sim_gpus_per_node(env, g) : 0;
		for (int t = 0; t < TP_SLOTS; t++) {
			st->stage_time_s[k][g][t] = -1;
			if (tp_values[t] > per_node || st->type_gpus[g] < tp_values[t])
				continue;
			/* the replica kind, with one micro-batch in flight and one pipeline (for
			 * the work bounds below) */
			struct sl_sim_replica_query q = {
				.gpu = g, .mbs = mbs, .tp = tp_values[t], .first_layer = first,
				.last_layer = last, .stage = k, .num_stages = P,
				.microbatches = 1, .num_pipelines = 1};
			double c = sl_sim_stage_compute_s(env, st->cm, &q);
			st->stage_time_s[k][g][t] = c;
			if (c < 0)
				continue;
			st->stage_time_rc_s[k][g][t][0] = c;
			for (int lv = 1; st->options_on && lv < SL_SEARCH_RECOMPUTE_LEVELS; lv++) {
				struct sl_sim_replica_query rc = q;
				rc.recompute = sl_search_recompute_order[lv];
				st->stage_time_rc_s[k][g][t][lv] =
					sl_sim_stage_compute_s(env, st->cm, &rc);
			}
			if (c < fastest)
				fastest = c;
			double usd = tp_values[t] * st->assign.usd_per_hour[g] / 3600.0;
			if (usd < cheapest)
				cheapest = usd;
			/* the work bounds count only replicas that can hold the stage at all: with
			 * one micro-batch in flight and one pipeline, the least memory it needs
			 * (under some recomputation, with options; c is no more than its time) */
			if (sl_search_least_level(env, st->req, &q) >= 0) {
				if (tp_values[t] * c < least_gpu_s)
					least_gpu_s = tp_values[t] * c;
				if (usd * c < least_usd)
					least_usd = usd * c;
			}
			if (!min_tp || tp_values[t] < min_tp)
				min_tp = tp_values[t];
		}
	}
	*fastest_s = fastest;
	*cheapest_usd_per_s = cheapest;
	work->least_gpu_s = least_gpu_s;
	work->least_usd = least_usd;
	return min_tp;
}

/* sl_search_options_change_no_shape, kept for the state's later items and searches
 * (options_memo.h; a pinned shape's partition is not among the candidates it names). */
static int options_change_nothing(struct search_state *st, const struct sl_partition *part,
				  int mbs)
{
	if (st->req->only_shape)
		return sl_search_options_change_no_shape(st, part, mbs);
	struct sl_options_key key = {.env_serial = st->env->serial,
				     .reserve_param_copies = st->env->reserve_param_copies,
				     .kinds = st->offered_kinds, .cost_model = st->cm,
				     .micro_batch = mbs, .num_stages = part->num_stages,
				     .partition_index = st->partition_index,
				     .types = st->partition_types};
	int nothing = sl_options_memo_get(st->options_memo, &key);
	if (nothing < 0) {
		nothing = sl_search_options_change_no_shape(st, part, mbs);
		sl_options_memo_put(st->options_memo, &key, nothing);
	}
	return nothing;
}

static int search_partition(struct search_state *st, const struct sl_partition *part, int mbs,
			    long long max_gpus, struct sl_err *err)
{
	int P = part->num_stages;
	st->partition_stamp++; /* sl_search_kind_level's memo holds this partition's kinds from here */
	if (st->skip_unchanged_shapes && options_change_nothing(st, part, mbs))
		return 0;
	double fastest_s[SL_PLAN_MAX_STAGES];
	double cheapest_usd_per_s[SL_PLAN_MAX_STAGES];
	/* work of one micro-batch through every stage on its most efficient replica: GPU-seconds
	 * and dollars (rent x busy time) */
	double work_gpu_s = 0, work_usd = 0;
	int min_gpus_per_pipeline = 0;
	for (int k = 0; k < P; k++) {
		struct stage_work work;
		int min_tp = time_stage_kinds(st, part, k, mbs, &fastest_s[k], &cheapest_usd_per_s[k],
					      &work);
		if (!min_tp || work.least_gpu_s == DBL_MAX)
			return 0; /* no GPU of the pool has a time for this stage, or none holds it */
		min_gpus_per_pipeline += min_tp;
		work_gpu_s += work.least_gpu_s;
		work_usd += work.least_usd;
	}
	/* Every plan of this shape runs at least ceil(G/b) micro-batches through every stage: the
	 * pool's GPUs need work_gpu_s each, so T >= passes * work_gpu_s / GPUs, and every busy GPU
	 * is rented, so cost >= passes * work_usd. Whole shapes are pruned by these. */
	double passes = (double)((st->global_batch + mbs - 1) / mbs);
	if (sl_search_prunable(st, passes * work_gpu_s / (double)max_gpus, passes * work_usd))
		return 0;
	long long max_d = max_gpus / min_gpus_per_pipeline;
	long long max_useful_d = (st->global_batch + mbs - 1) / mbs;
	if (max_d > max_useful_d)
		max_d = max_useful_d;
	if (max_d > SL_PLAN_MAX_PIPELINES)
		max_d = SL_PLAN_MAX_PIPELINES;
	/* D from large to small, one D per distinct micro-batch count (the smallest D giving it) */
	long long last_nmb = -1;
	for (long long d = max_d; d >= 1; d--) {
		long long nmb = (st->global_batch + mbs * d - 1) / (mbs * d);
		if (nmb == last_nmb)
			continue;
		last_nmb = nmb;
		/* the same micro-batch count with fewer pipelines needs fewer GPUs */
		long long D = (st->global_batch + mbs * nmb - 1) / (mbs * nmb);
		double rent_usd_per_s = 0;
		for (int k = 0; k < P; k++)
			rent_usd_per_s += D * cheapest_usd_per_s[k];
		double d_passes = (double)(nmb * D);
		double time_lb_s = sl_search_time_lower_bound(
			P, sl_search_busiest_microbatches(st, mbs, D, nmb), fastest_s);
		if (time_lb_s < d_passes * work_gpu_s / (double)max_gpus)
			time_lb_s = d_passes * work_gpu_s / (double)max_gpus;
		double cost_lb = rent_usd_per_s * time_lb_s;
		if (cost_lb < d_passes * work_usd)
			cost_lb = d_passes * work_usd;
		if (sl_search_prunable(st, time_lb_s, cost_lb))
			continue;
		/* then with the gradient synchronisation the shape cannot avoid */
		st->sync_lb_s = sl_search_sync_lower_bound(st, part, (int)D);
		time_lb_s += st->sync_lb_s;
		if (cost_lb < rent_usd_per_s * time_lb_s)
			cost_lb = rent_usd_per_s * time_lb_s;
		if (sl_search_prunable(st, time_lb_s, cost_lb))
			continue;
		int rc = search_thresholds(st, part, mbs, (int)D, (int)nmb, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* For each GPU type of the zones searched, the smallest TP slot at which it has a time at this
 * micro-batch (-1: none, or not searched); returns the types that have one as bits. */
static unsigned layer_time_slots(const struct search_state *st, int mbs, int *slot)
{
	const struct sl_sim_env *env = st->env;
	unsigned types = 0;
	for (int g = 0; g < env->catalogue.gpu_count; g++) {
		slot[g] = -1;
		if (sl_search_subset_gpus(&st->assign, g) == 0)
			continue;
		for (int t = 0; t < TP_SLOTS && slot[g] < 0; t++) {
			struct sl_sim_replica_query q = {.gpu = g, .mbs = mbs, .tp = tp_values[t]};
			if (tp_values[t] <= sl_sim_gpus_per_node(env, g) &&
			    sl_sim_stage_compute_s(env, st->cm, &q) >= 0)
				slot[g] = t;
		}
		if (slot[g] >= 0)
			types |= 1u << g;
	}
	return types;
}

/* Per-layer times of each GPU type at this micro-batch (at its slot's TP), for the balanced
 * partitions. */
static void layer_times(const struct search_state *st, int mbs, const int *slot, double *storage,
			const double **per_gpu)
{
	const struct sl_sim_env *env = st->env;
	int L = env->num_layers;
	for (int g = 0; g < env->catalogue.gpu_count; g++) {
		per_gpu[g] = NULL;
		if (slot[g] < 0)
			continue;
		struct sl_sim_replica_query q = {.gpu = g, .mbs = mbs, .tp = tp_values[slot[g]]};
		double *row = storage + (size_t)g * (size_t)L;
		for (int l = 0; l < L; l++) {
			q.first_layer = q.last_layer = l;
			row[l] = sl_sim_stage_compute_s(env, st->cm, &q);
		}
		per_gpu[g] = row;
	}
}

/* One work item: every depth and partition at one micro-batch size, over the zones (and fill
 * order) set in st->assign. */
/* The one partition of a pinned shape (req->only_shape). */
static int pinned_partition(const struct sl_search_shape *only, struct sl_partition *out)
{
	out->num_stages = only->num_stages;
	memcpy(out->first, only->first, sizeof(int) * (size_t)(only->num_stages + 1));
	return 1;
}

int sl_search_micro_batch(struct search_state *st, int mbs, struct sl_err *err)
{
	const struct sl_sim_env *env = st->env;
	int L = env->num_layers;
	long long gpus = 0;
	for (int g = 0; g < env->catalogue.gpu_count; g++)
		gpus += sl_search_subset_gpus(&st->assign, g);
	if (gpus == 0)
		return 0;
	int max_stages = st->req->max_stages > 0 ? st->req->max_stages : L;
	if (max_stages > L)
		max_stages = L;
	if (max_stages > SL_PLAN_MAX_STAGES)
		max_stages = SL_PLAN_MAX_STAGES;
	if (max_stages > gpus)
		max_stages = (int)gpus;
	int slot[SL_MAX_GPU_TYPES];
	unsigned types = layer_time_slots(st, mbs, slot);
	st->partition_types = types;
	st->offered_kinds = 0;
	for (int g = 0; g < env->catalogue.gpu_count; g++) {
		unsigned long long offered = 0; /* TP degrees ascend: those offered are the first */
		for (int t = 0; t < TP_SLOTS && st->type_gpus[g] > 0; t++)
			offered += tp_values[t] <= sl_sim_gpus_per_node(env, g) &&
				   st->type_gpus[g] >= tp_values[t];
		st->offered_kinds |= offered << (3 * g);
	}
	const double *per_gpu[SL_MAX_GPU_TYPES];
	int timed = 0; /* per_gpu holds the layer times (only when a partition is computed) */
	int rc = 0;
	const struct sl_search_shape *only = st->req->only_shape;
	for (int P = 1; types && P <= max_stages && !rc; P++) {
		if (only && only->num_stages != P)
			continue;
		struct sl_partition_key key = {.env_serial = env->serial, .cost_model = st->cm,
					       .micro_batch = mbs, .num_stages = P, .types = types};
		int n = only ? pinned_partition(only, st->partitions)
			     : sl_partition_cache_get(st->partition_cache, &key, st->partitions,
						      SL_PARTITION_MAX_CANDIDATES);
		if (n < 0) {
			if (!timed)
				layer_times(st, mbs, slot, st->layer_time_storage, per_gpu);
			timed = 1;
			n = sl_partition_candidates(L, P, per_gpu, env->catalogue.gpu_count,
						    st->partition_scratch, st->partitions,
						    SL_PARTITION_MAX_CANDIDATES);
			sl_partition_cache_put(st->partition_cache, &key, st->partitions, n);
		}
		for (int i = 0; i < n && !rc; i++) {
			st->partition_index = i;
			rc = search_partition(st, &st->partitions[i], mbs, gpus, err);
		}
	}
	return rc;
}
