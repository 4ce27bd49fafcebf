/* The planner's search: see search.h for the method. This file holds the loops (work items on
 * threads, micro-batch sizes, depths, partitions, data-parallel degrees, time thresholds) and the
 * pruning; zones.c chooses zone sets and orders, partition.c proposes layer splits, assign.c
 * picks and places replicas, ranking.c keeps the best, refine.c and uneven.c improve on them.
 */
#include "search/search.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/assign.h"
#include "search/options.h"
#include "search/partition.h"
#include "search/ranking.h"
#include "search/refine.h"
#include "search/uneven.h"
#include "search/zones.h"

/* Threads the search runs on: the machine's cores (SAILOR_THREADS overrides), at most this. */
#define SEARCH_MAX_THREADS 64
#define TP_SLOTS 4                       /* TP degrees 1, 2, 4, 8 */
static const int tp_values[TP_SLOTS] = {1, 2, 4, 8};
/* Without a budget or throughput floor, the smallest feasible threshold gives the fastest plan
 * of a shape; slower thresholds only use fewer GPUs (the local search afterwards still tries
 * single-replica changes that trade compute for a faster sync). */
#define THRESHOLDS_FOR_THROUGHPUT 1
/* With a budget, a throughput floor or the cost objective, a slower threshold can be the better
 * plan (cheaper GPUs, fewer of them); the next feasible one after the fastest covers the cases
 * seen on the SOSP'25 scenarios (2, 4 and 8 gave the same plans there at 1x, 1.8x and 2.8x the
 * simulations), and small shapes are enumerated completely anyway. */
#define THRESHOLDS_CONSTRAINED 2

struct enumeration;

/* search_thresholds' record of a shape of one work item in the search without options */
struct shape_record {
	unsigned long long key;  /* shape_key */
	double tau_max_s;        /* the largest threshold it considered */
};

struct shape_records {
	struct shape_record *v;
	int count, capacity;
	int failed;              /* out of memory: no record is trusted */
};

/* A replica kind's memory at one recomputation level with D > 1 and as many micro-batches in
 * flight as its stage can hold (sim/memory.c), by the parts that do not depend on D; see
 * kind_level. */
struct kind_memory {
	double params_grads, optimizer_full, activations, buffers, runtime, capacity;
};

/* sync_lower_bound's memo: entries of the current work item (stamp) by (stage layers, D) */
#define SYNC_MEMO_SLOTS 4096
struct sync_memo {
	unsigned long long key;
	unsigned stamp;
	double value;
};

struct search_state {
	const struct sl_sim_env *env;
	const struct sl_search_request *req;
	enum sl_cost_model cm;
	long long global_batch;
	struct sl_ranking rank;
	struct sl_plan plan;                 /* scratch plan, reused */
	struct sl_plan uneven_plan;          /* scratch: plan with uneven micro-batch counts */
	struct sl_sim_result result;         /* scratch result */
	struct sl_assign_input assign;
	struct sl_assign_result *assigned;   /* scratch for sl_assign_count */
	long long enumerate_max;             /* shapes with at most this many assignments: all */
	struct enumeration *enumeration;     /* scratch for enumerate_small_shape */
	double *layer_time_storage;          /* [gpu][layer] scratch for partition candidates */
	_Atomic double *shared_bound;        /* see shared_bound_lower; NULL: own ranking only */
	double sync_lb_s;                    /* the current shape's sync lower bound (search_partition) */
	long long type_gpus[SL_MAX_GPU_TYPES]; /* GPUs of each type in the zones searched */
	/* the current (shape, D)'s thresholds: the distinct fit times of the replica kinds that fit */
	double taus[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * TP_SLOTS];
	double taus_scratch[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * TP_SLOTS];
	int tau_count;
	unsigned taus_stamp;                 /* the partition taus etc. hold (0: none, see fit_kinds) */
	int fits[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	long long need_per_pipeline[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * TP_SLOTS + 1];
	int missing_stages[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * TP_SLOTS + 1];
	double fastest_fit_s[SL_PLAN_MAX_STAGES], cheapest_fit_usd_per_s[SL_PLAN_MAX_STAGES];
	struct sl_partition *partitions;     /* scratch: SL_PARTITION_MAX_CANDIDATES */
	long long simulated;
	/* per stage, per gpu, per tp slot: compute seconds per micro-batch (< 0: none) */
	double stage_time_s[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	/* the same with each recomputation level of search/options.h (memory options on; level 0
	 * is stage_time_s) */
	double stage_time_rc_s[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS][SL_SEARCH_RECOMPUTE_LEVELS];
	/* at the current (D, micro-batches): the time of each replica kind at the least
	 * recomputation under which it fits (= stage_time_s without options) */
	double fit_time_s[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	int options_on;                      /* sl_search_options_on(req) */
	/* the simulator may model plans as our runtime, whose times the bounds do not bound
	 * (sl_sim_runtime_model_possible): then nothing is pruned by a bound */
	int bounds_unsound;
	/* The search without memory options (search_with_options) hands each plan it simulates to
	 * this state too: the search with options at the same replicas (NULL: none) */
	struct search_state *variant;
	/* the search with options, after that: skip shapes where the options change nothing */
	int skip_unchanged_shapes;
	long long shapes, skipped_shapes, gpu_pruned_shapes; /* sl_search_stats */
	struct sync_memo *sync_memo;         /* [SYNC_MEMO_SLOTS] */
	/* kind_level's memo for the current partition (entries of other partitions: older stamp) */
	struct kind_memory (*kind_mem)[SL_MAX_GPU_TYPES][TP_SLOTS][SL_SEARCH_RECOMPUTE_LEVELS];
	unsigned kind_mem_stamp[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	signed char kind_mem_levels[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	signed char sosp25_fits[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	unsigned partition_stamp;
	int partition_index;                 /* the partition's index among its depth's candidates */
	struct shape_records *record_into;   /* the work item's records (search without options) */
	const struct shape_records *record_from; /* and the search with options reading them */
	unsigned item_stamp;                 /* the work item being searched (from 1) */
};

/* GPUs of type g in the zones being searched. */
static long long subset_gpus(const struct sl_assign_input *in, int g)
{
	long long n = 0;
	for (int zi = 0; zi < in->zone_order_count; zi++)
		n += in->avail[g][in->zone_order[zi]];
	return n;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The objective value threads share for pruning when only the best plan is wanted: iteration
 * seconds (throughput) or dollars per iteration (cost) of the best plan meeting the constraints
 * found by any thread. Lowering it is a compare-and-swap loop; reading it is relaxed, because a
 * stale value only prunes less. */
static void shared_bound_lower(_Atomic double *bound, double value)
{
	double seen = atomic_load_explicit(bound, memory_order_relaxed);
	while (value < seen &&
	       !atomic_compare_exchange_weak_explicit(bound, &seen, value, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

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
		shared_bound_lower(st->shared_bound, value);
		/* a variant that cannot beat this plan cannot beat the seed it joins either (the
		 * variants never lower this search's bound: it stays the search it was) */
		if (st->variant && st->variant->shared_bound)
			shared_bound_lower(st->variant->shared_bound, value);
	}
	return sl_ranking_consider(&st->rank, plan, &st->result, err);
}

static int simulate_and_rank(struct search_state *st, struct sl_err *err);
static int prunable(const struct search_state *st, double time_lb_s, double cost_lb);

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
	if (bound.time_lb_s > 0 && prunable(v, bound.time_lb_s, bound.cost_lb_usd))
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
	return simulate_and_rank(v, err);
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
 * ZeRO-1 costs time over slow links (options.h), also without it. */
static int simulate_and_rank(struct search_state *st, struct sl_err *err)
{
	int rc = simulate_and_rank_with(st, 1, err);
	if (!rc && st->options_on && st->plan.num_pipelines > 1 &&
	    sl_sim_runtime_uses(st->env, &st->plan))
		rc = simulate_and_rank_with(st, 0, err);
	return rc;
}

/* Lower bound on the iteration time of any plan whose stage k takes at least fastest_s[k] per
 * micro-batch, with nmb micro-batches per pipeline: micro-batch 0 must pass stages 0..k-1 before
 * stage k starts, and stage k then runs nmb forward+backward passes one after another:
 *   T >= max_k ( nmb * fastest_s[k] + sum_{j<k} fastest_s[j] ).
 * Both cost models add communication, bubbles and synchronisation to this, never less. */
static double time_lower_bound(int stages, double nmb, const double *fastest_s)
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
static double busiest_microbatches(const struct search_state *st, int mbs, long long D,
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
static double fewest_microbatches(const struct search_state *st, int mbs, long long D,
				  long long nmb)
{
	long long M = st->global_batch / mbs;
	return M % D && st->cm != SL_COST_SOSP25 ? (double)(M / D) : (double)nmb;
}

/* Insertion sort of values[0..n), ascending. */
static void insertion_sort(double *values, int n)
{
	for (int i = 1; i < n; i++) {
		double v = values[i];
		int j = i;
		for (; j > 0 && values[j - 1] > v; j--)
			values[j] = values[j - 1];
		values[j] = v;
	}
}

/* Sorts values[0..n) ascending and drops repeats; returns how many remain; scratch holds n values.
 * Runs of 16 by insertion sort, then merged bottom-up: the arrays hold up to P x types x 4 values
 * (hundreds for deep pipelines, where a plain insertion sort was a tenth of the whole search),
 * and qsort's call overhead showed in profiles for the short ones. */
static int sort_unique(double *values, int n, double *scratch)
{
	enum { RUN = 16 };
	for (int i = 0; i < n; i += RUN)
		insertion_sort(values + i, n - i < RUN ? n - i : RUN);
	double *from = values, *to = scratch;
	for (int width = RUN; width < n; width *= 2) {
		for (int lo = 0; lo < n; lo += 2 * width) {
			int mid = lo + width < n ? lo + width : n;
			int hi = lo + 2 * width < n ? lo + 2 * width : n;
			int a = lo, b = mid, o = lo;
			while (a < mid && b < hi)
				to[o++] = from[b] < from[a] ? from[b++] : from[a++];
			while (a < mid)
				to[o++] = from[a++];
			while (b < hi)
				to[o++] = from[b++];
		}
		double *swap = from;
		from = to;
		to = swap;
	}
	if (from != values)
		memcpy(values, from, sizeof(*values) * (size_t)n);
	int unique = 0;
	for (int i = 0; i < n; i++)
		if (!unique || values[i] != values[unique - 1])
			values[unique++] = values[i];
	return unique;
}

/* Whether no plan whose iteration takes at least time_lb_s and costs at least cost_lb_usd can
 * enter the result: it misses a constraint, or it cannot beat the K-th best plan kept so far.
 * Nothing is, where the bounds do not hold (bounds_unsound). Equal bounds are not pruned: such
 * a plan may still win a tie-break. With --pareto only constraints prune. */
static int prunable(const struct search_state *st, double time_lb_s, double cost_lb)
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
					 (const int(*)[SL_MAX_ZONES])st->assign.avail);
}

/* sync_lower_bound_uncached, memoised per work item: it depends only on the bounding stage's
 * layers, D and the GPUs of the zones searched, and evaluates every (GPU type, TP, zone pair)
 * hop, a tenth of the search's time when it was asked anew for every partition and D. */
static double sync_lower_bound(struct search_state *st, const struct sl_partition *part, int D)
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

/* The bounds again, now from the replicas actually assigned: each stage is as slow as its slowest
 * replica, and the rent is exact. Tighter than the bounds before assignment, and cheap next to a
 * simulation. */
static int plan_prunable(const struct search_state *st, double time_lb_s, double bottleneck_s,
			 double rent_usd_per_s);

/* The first of those bounds, from the stage times and rent of the replicas; *time_lb_s gets it.
 * slow_count[k]: how many of stage k's D replicas take stage_s[k]. Under the planner's split the
 * r = M mod D pipelines with one micro-batch more hold, by pigeonhole, one of those replicas when
 * more than D - r of them are slow: then the stage is charged the busiest count, else the
 * fewest (fewest_microbatches). */
static int replicas_prunable(const struct search_state *st, int P, int D, int mbs, long long nmb,
			     const double *stage_s, const int *slow_count, double rent_usd_per_s,
			     double *time_lb_s, double *bottleneck_s)
{
	double busiest = busiest_microbatches(st, mbs, D, nmb);
	double fewest = st->req->uneven_microbatches ? busiest
						      : fewest_microbatches(st, mbs, D, nmb);
	int with_more = (int)((st->global_batch / mbs) % D);
	*bottleneck_s = 0;
	double bound = 0, before = 0;
	for (int k = 0; k < P; k++) {
		double n = fewest != busiest && slow_count[k] > D - with_more ? busiest : fewest;
		if (n * stage_s[k] > *bottleneck_s)
			*bottleneck_s = n * stage_s[k];
		/* time_lower_bound with the stage's own count */
		if (n * stage_s[k] + before > bound)
			bound = n * stage_s[k] + before;
		before += stage_s[k];
	}
	*time_lb_s = bound + st->sync_lb_s;
	return prunable(st, *time_lb_s, rent_usd_per_s * *time_lb_s);
}

static int assigned_prunable(const struct search_state *st, long long nmb)
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

/* assigned_prunable from the assignment's groups before its plan is written (the same values,
 * summed in the same order); writes the plan into st->plan when the first bound leaves it. */
static int counted_prunable(struct search_state *st, long long nmb)
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
	if (sl_search_share_microbatches(st->env, st->cm, &st->plan, st->global_batch))
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
	    prunable(st, bottleneck_s + sync_s, rent_usd_per_s * (bottleneck_s + sync_s)))
		return 1;
	double plan_lb_s = sl_sim_plan_time_lower_bound_sync_s(st->env, st->cm, plan,
								st->global_batch, sync_s);
	if (st->cm == SL_COST_SOSP25)
		plan_lb_s += pipeline_lb_s; /* its bound is the sync alone */
	if (plan_lb_s > time_lb_s)
		time_lb_s = plan_lb_s;
	return prunable(st, time_lb_s, rent_usd_per_s * time_lb_s);
}

/* ---- complete enumeration of small shapes ----
 * When a shape (micro-batch, partition, D) admits at most SL_SEARCH_ENUMERATE_MAX canonical
 * replica assignments, all of them are simulated instead of the threshold heuristic: the
 * heuristic decides from compute times alone, and on small pools which stage sits in which zone
 * and on which GPU is decided by the links as much as by compute. */
#define SL_SEARCH_ENUMERATE_MAX 512

struct enum_option {
	short gpu, zone, tp;
};

struct enumeration {
	struct search_state *st;
	long long nmb;
	struct enum_option options[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES * SL_MAX_ZONES * TP_SLOTS];
	int option_count[SL_PLAN_MAX_STAGES];
	int used[SL_MAX_GPU_TYPES][SL_MAX_ZONES];
	struct sl_err *err;
	int rc;
};

static void enumerate_from(struct enumeration *en, int stage, int slot, int min_option)
{
	struct search_state *st = en->st;
	struct sl_plan *plan = &st->plan;
	if (en->rc)
		return;
	if (slot == plan->num_pipelines) {
		if (stage + 1 < plan->num_stages) {
			enumerate_from(en, stage + 1, 0, 0);
		} else if (!sl_search_share_microbatches(st->env, st->cm, plan, st->global_batch) &&
			   !assigned_prunable(st, en->nmb)) {
			en->rc = simulate_and_rank(st, en->err);
		}
		return;
	}
	for (int i = min_option; i < en->option_count[stage]; i++) {
		const struct enum_option *o = &en->options[stage][i];
		if (en->used[o->gpu][o->zone] + o->tp > st->assign.avail[o->gpu][o->zone])
			continue;
		en->used[o->gpu][o->zone] += o->tp;
		struct sl_replica *r = sl_plan_replica(plan, stage, slot);
		r->gpu = o->gpu;
		r->zone = o->zone;
		r->tp = o->tp;
		r->pad = 0;
		enumerate_from(en, stage, slot + 1, i);
		en->used[o->gpu][o->zone] -= o->tp;
	}
}

/* C(n + D - 1, D): multisets of D options out of n, saturating above limit. */
static long long multisets(int n, int D, long long limit)
{
	long long c = 1;
	for (int i = 1; i <= D; i++) {
		c = c * (n - 1 + i) / i;
		if (c > limit)
			return limit + 1;
	}
	return c;
}

/* Enumerates every assignment of the shape if there are few; returns 1 if it did (rc in *rc). */
static int enumerate_small_shape(struct search_state *st, int P, int D, long long nmb,
				 int fits[][SL_MAX_GPU_TYPES][TP_SLOTS], int *rc,
				 struct sl_err *err)
{
	if (st->enumerate_max <= 0)
		return 0;
	struct enumeration *en = st->enumeration;
	const struct sl_assign_input *in = &st->assign;
	long long total = 1;
	for (int k = 0; k < P; k++) {
		int n = 0;
		for (int zi = 0; zi < in->zone_order_count; zi++) {
			int z = in->zone_order[zi];
			for (int ti = 0; ti < in->type_count; ti++) {
				int g = in->types[ti];
				for (int t = 0; t < TP_SLOTS; t++)
					if (fits[k][g][t] && in->avail[g][z] >= tp_values[t])
						en->options[k][n++] = (struct enum_option){
							(short)g, (short)z, (short)tp_values[t]};
			}
		}
		en->option_count[k] = n;
		total *= multisets(n, D, st->enumerate_max);
		if (n == 0 || total > st->enumerate_max)
			return n == 0; /* no option: nothing to search either way */
	}
	en->st = st;
	en->nmb = nmb;
	en->err = err;
	en->rc = 0;
	memset(en->used, 0, sizeof(en->used));
	enumerate_from(en, 0, 0, 0);
	*rc = en->rc;
	return 1;
}

/* Sets the assignment's eligible TP per (stage, type) for threshold tau, and the bounds of any
 * plan built from it. Returns 0 when some stage has no eligible replica. */
static int eligible_at(struct search_state *st, int P, int D, double tau,
		       int fits[][SL_MAX_GPU_TYPES][TP_SLOTS], double *fastest_eligible_s,
		       double *rent_usd_per_s)
{
	struct sl_assign_input *in = &st->assign;
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

/* A necessary condition for sl_assign_replicas to succeed, much cheaper: the pool holds at least
 * D replicas' worth of GPUs for every stage at its least GPU-hungry eligible type. */
static int enough_gpus(const struct sl_assign_input *in)
{
	long long total = 0, need = 0;
	for (int ti = 0; ti < in->type_count; ti++)
		for (int zi = 0; zi < in->zone_order_count; zi++)
			total += in->avail[in->types[ti]][in->zone_order[zi]];
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

/* The least recomputation level (index into sl_search_recompute_order) under which replica kind
 * (g, tp_values[t]) of stage k (layers [first, last] of P) fits with nmb micro-batches per
 * pipeline and D pipelines, -1 if none: with options (ZeRO-1 when D > 1) as
 * sl_search_least_level, without as sl_sim_replica_fits (0 or -1). Bit for bit what those give,
 * memoised per partition: asked for every (kind, D) of every shape, they were a fifth of the
 * search. Under sosp25 whether a replica fits depends on neither D nor nmb; under sailor, once
 * D > 1 and the stage holds as many micro-batches in flight as it can (nmb >= P - k), only the
 * optimizer state depends on D (ZeRO-1 divides it): the other parts are kept, and the total is
 * summed in sim/memory.c's order. Other cases are computed directly. */
static int kind_level(struct search_state *st, int options, int k, int g, int t, int first,
		      int last, int P, int mbs, int nmb, int D)
{
	const struct sl_sim_env *env = st->env;
	int tp = tp_values[t];
	if (st->cm == SL_COST_SOSP25) {
		if (st->kind_mem_stamp[k][g][t] != st->partition_stamp) {
			st->kind_mem_stamp[k][g][t] = st->partition_stamp;
			st->sosp25_fits[k][g][t] =
				(signed char)sl_sim_replica_fits(env, st->cm, g, mbs, tp, first, last, k,
								 P, nmb, D);
		}
		/* no options under sosp25 (sl_search_options_on) */
		return st->sosp25_fits[k][g][t] ? 0 : -1;
	}
	if (D < 2 || nmb < P - k) {
		if (options)
			return sl_search_least_level(env, st->req, g, mbs, tp, first, last, k, P, nmb,
						     D);
		return sl_sim_replica_fits(env, st->cm, g, mbs, tp, first, last, k, P, nmb, D) ? 0
											      : -1;
	}
	struct kind_memory *m = st->kind_mem[k][g][t];
	if (st->kind_mem_stamp[k][g][t] != st->partition_stamp) {
		st->kind_mem_stamp[k][g][t] = st->partition_stamp;
		int levels = sl_sim_effective_recompute(env, first, last, SL_RECOMPUTE_FULL) !=
					     SL_RECOMPUTE_NONE
				     ? SL_SEARCH_RECOMPUTE_LEVELS
				     : 1;
		st->kind_mem_levels[k][g][t] = (signed char)levels;
		for (int lv = 0; lv < levels; lv++) {
			struct sl_sim_memory mem;
			/* D = 2 without ZeRO-1: the full optimizer state, a data-parallel group */
			sl_sim_replica_memory_opt(env, st->cm, g, mbs, tp, first, last, k, P, P - k, 2,
						  sl_search_recompute_order[lv], 0, &mem);
			m[lv] = (struct kind_memory){mem.params_bytes + mem.grads_bytes,
						     mem.optimizer_bytes, mem.activations_bytes,
						     mem.buffers_bytes, mem.runtime_bytes,
						     mem.capacity_bytes};
		}
	}
	int levels = options ? st->kind_mem_levels[k][g][t] : 1;
	for (int lv = 0; lv < levels; lv++) {
		double optimizer = options ? m[lv].optimizer_full / D : m[lv].optimizer_full;
		double total = m[lv].params_grads + optimizer + m[lv].activations + m[lv].buffers +
			       m[lv].runtime;
		if (total <= m[lv].capacity)
			return lv;
	}
	return -1;
}

/* The fastest fit time among the replica kinds that fit only with some option at this shape
 * (DBL_MAX: none, the options change nothing). Cheap: kind_level is memoised.
 * Where none does, the replica kinds that fit and their times are those of the search without
 * options: every kind either fits without any option (so with options at no recomputation too)
 * or fits under none. The search with options then takes exactly the steps the search without
 * them took here, and that search already simulated each of its plans with the options
 * (simulate_variant), or pruned it by a bound that holds for them too (the bounds count neither
 * the optimizer nor recomputation, sim/bounds.c) and that its result only lowers. */
static double fastest_changed_kind_s(struct search_state *st, const struct sl_partition *part,
				     int mbs, int D, int nmb)
{
	const struct sl_assign_input *in = &st->assign;
	int P = part->num_stages;
	double fastest_s = DBL_MAX;
	for (int k = 0; k < P; k++) {
		int first = part->first[k], last = part->first[k + 1] - 1;
		for (int ti = 0; ti < in->type_count; ti++)
			for (int t = 0; t < TP_SLOTS; t++) {
				int g = in->types[ti];
				if (st->stage_time_s[k][g][t] < 0 ||
				    kind_level(st, 0, k, g, t, first, last, P, mbs, nmb, D) == 0)
					continue;
				int level = kind_level(st, 1, k, g, t, first, last, P, mbs, nmb, D);
				if (level < 0)
					continue;
				double c = level > 0 ? st->stage_time_rc_s[k][g][t][level]
						     : st->stage_time_s[k][g][t];
				if (c < fastest_s)
					fastest_s = c;
			}
	}
	return fastest_s;
}

/* Whether every replica kind with a time fits this partition without options whatever D and
 * nmb: then at none of its shapes do the options let a kind fit that did not (the search with
 * options would skip each, fastest_changed_kind_s). A replica needs the most memory without
 * options once D > 1 (a data-parallel communicator) and its stage holds all the micro-batches
 * it can (sim/memory.c), which kind_level's memo evaluates. */
static int options_change_no_shape(struct search_state *st, const struct sl_partition *part,
				   int mbs)
{
	const struct sl_sim_env *env = st->env;
	const struct sl_assign_input *in = &st->assign;
	int P = part->num_stages;
	for (int k = 0; k < P; k++) {
		int first = part->first[k], last = part->first[k + 1] - 1;
		for (int ti = 0; ti < in->type_count; ti++)
			for (int t = 0; t < TP_SLOTS; t++) {
				int g = in->types[ti];
				/* the kinds search_partition gives a time */
				if (tp_values[t] > sl_sim_gpus_per_node(env, g) ||
				    st->type_gpus[g] < tp_values[t] ||
				    sl_sim_stage_compute_s(env, st->cm, g, mbs, tp_values[t], first,
							   last) < 0)
					continue;
				if (kind_level(st, 0, k, g, t, first, last, P, mbs, P, 2) != 0)
					return 0;
			}
	}
	return 1;
}

/* Shapes the search without options took to its threshold limit (shape_record_add): the key
 * orders them as the loops visit them, so the search with options finds them by bisection. */
static unsigned long long shape_key(int P, int partition, int D)
{
	return ((unsigned long long)P << 40) | ((unsigned long long)partition << 20) |
	       (unsigned long long)(SL_PLAN_MAX_PIPELINES - D);
}

static void shape_record_add(struct search_state *st, int P, int D, double tau_max_s)
{
	struct shape_records *r = st->record_into;
	if (!r || r->failed)
		return;
	if (r->count == r->capacity) {
		int capacity = r->capacity ? 2 * r->capacity : 256;
		struct shape_record *v = realloc(r->v, sizeof(*v) * (size_t)capacity);
		if (!v) {
			r->failed = 1; /* then the search with options searches this item's shapes */
			return;
		}
		r->v = v;
		r->capacity = capacity;
	}
	r->v[r->count++] = (struct shape_record){shape_key(P, st->partition_index, D), tau_max_s};
}

/* The largest threshold the search without options considered at this shape, if it went to its
 * limit; -1 otherwise. */
static double shape_record_find(const struct search_state *st, int P, int D)
{
	const struct shape_records *r = st->record_from;
	if (!r || r->failed)
		return -1;
	unsigned long long key = shape_key(P, st->partition_index, D);
	int lo = 0, hi = r->count;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (r->v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->count && r->v[lo].key == key ? r->v[lo].tau_max_s : -1;
}

/* search_thresholds' preparation for one (micro-batch, partition, D, nmb): which replica kinds
 * fit (st->fits) and their times there (st->fit_time_s: with options at the least
 * recomputation that fits); the candidate thresholds (st->taus: the eligible set changes only
 * where tau crosses the fit time of a kind that fits, so those times, sorted and without
 * repeats, are all the distinct sets there are); per threshold the GPUs a pipeline needs at
 * least (st->need_per_pipeline, what enough_gpus counts, per pipeline; LLONG_MAX where some
 * stage has no eligible kind); per stage the fastest fit time and the cheapest rent of the
 * kinds that fit. Returns 0 when some stage has no kind that fits. */
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
				int level = kind_level(st, st->options_on, k, g, t, first, last, P,
						       mbs, nmb, D);
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
	n = st->tau_count = sort_unique(st->taus, n, st->taus_scratch);
	/* enough_gpus at each threshold: stage k's replicas need at least the smallest TP degree
	 * among its eligible kinds, which only falls as tau grows; summed over the stages through
	 * its changes at the thresholds where a stage's least TP falls */
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
	return 1;
}

/* For one (micro-batch, partition, D): the thresholds tau are the distinct per-stage times of
 * replicas that fit. A larger tau makes more replicas eligible, each with fewer GPUs, so whether
 * the pool can supply the plan is monotone in tau: a binary search finds the smallest feasible
 * one (the fastest plan of this shape); with a budget, a throughput floor or the cost objective,
 * larger thresholds (slower, cheaper plans) are tried after it too. */
static int search_thresholds(struct search_state *st, const struct sl_partition *part, int mbs,
			     int D, int nmb, struct sl_err *err)
{
	int P = part->num_stages;
	int (*fits)[SL_MAX_GPU_TYPES][TP_SLOTS] = st->fits;
	struct sl_assign_input *in = &st->assign;
	st->shapes++;
	if (st->skip_unchanged_shapes) {
		/* Where the options let more kinds fit, but all of them are slower than every
		 * threshold the search without options considered here, and that search went to its
		 * threshold limit: this search would consider exactly the same eligible sets (the
		 * new kinds are eligible only above them), build the same plans, and that search
		 * already ranked each with its options or pruned it (see fastest_changed_kind_s). */
		double fastest_new_s = fastest_changed_kind_s(st, part, mbs, D, nmb);
		double tau_max_s = fastest_new_s < DBL_MAX ? shape_record_find(st, P, D) : -1;
		if (fastest_new_s == DBL_MAX || (tau_max_s >= 0 && fastest_new_s > tau_max_s)) {
			st->skipped_shapes++;
			return 0;
		}
	}
	/* Which kinds fit, their times, the thresholds and the GPUs they need depend on D and nmb
	 * only through the memory: under sosp25 not at all, without options not once D > 1 and
	 * every stage holds all the micro-batches it can (kind_level). There the previous D's are
	 * reused (taus_stamp: the partition they belong to). */
	int stable = st->cm == SL_COST_SOSP25 || (!st->options_on && D >= 2 && nmb >= P);
	if (!(stable && st->taus_stamp == st->partition_stamp)) {
		st->taus_stamp = 0;
		if (!fit_kinds(st, part, mbs, D, nmb))
			return 0;
		if (stable)
			st->taus_stamp = st->partition_stamp;
	}
	int tau_count = st->tau_count;
	const double *taus = st->taus;

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
	in->num_stages = P;
	in->num_pipelines = D;
	double fastest_eligible_s[SL_PLAN_MAX_STAGES], rent_usd_per_s;

	/* Every plan of this shape, whichever replicas it takes, is as slow as its slowest
	 * replica's fit time tau_plan, and uses at least D replicas per stage of the fewest GPUs a
	 * kind no slower than tau_plan needs: so the pool's GPU count alone (enough_gpus, monotone
	 * in tau) bounds tau_plan from below, and with it the iteration (the bottleneck runs all its
	 * micro-batches), before any assignment; the rent at the cheapest kind that fits. Shapes
	 * this prunes never reach the assignment's search below. need_per_pipeline[i] (fit_kinds)
	 * is what enough_gpus counts at taus[i], per pipeline. */
	long long total = 0;
	for (int ti = 0; ti < in->type_count; ti++)
		for (int zi = 0; zi < in->zone_order_count; zi++)
			total += in->avail[in->types[ti]][in->zone_order[zi]];
	int lo = 0, hi = tau_count;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (st->need_per_pipeline[mid] != LLONG_MAX && st->need_per_pipeline[mid] * D <= total)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == tau_count)
		return 0; /* too few GPUs for D replicas of every stage at any threshold */
	double least_tau_s = taus[lo];
	{
		/* as eligible_at at the largest threshold: every kind that fits */
		rent_usd_per_s = 0;
		for (int k = 0; k < P; k++)
			rent_usd_per_s += D * st->cheapest_fit_usd_per_s[k];
		double busiest = busiest_microbatches(st, mbs, D, nmb);
		double time_lb_s = time_lower_bound(P, busiest, st->fastest_fit_s);
		/* the slowest replica's pipeline runs at least the fewest micro-batches of the
		 * planner's split (with uneven counts it may get fewer than the average) */
		double fewest = fewest_microbatches(st, mbs, D, nmb);
		if (!st->req->uneven_microbatches && time_lb_s < fewest * least_tau_s)
			time_lb_s = fewest * least_tau_s;
		time_lb_s += st->sync_lb_s;
		if (prunable(st, time_lb_s, rent_usd_per_s * time_lb_s)) {
			st->gpu_pruned_shapes++;
			return 0;
		}
	}
	if (enumerate_small_shape(st, P, D, nmb, fits, &rc, err))
		return rc;
	
	/* smallest feasible threshold: no smaller than the GPU count allows, and usually that one
	 * or close above it, so searched from there in growing steps, then bisected */
	hi = tau_count; /* answer in [lo, hi]; hi = tau_count means none */
	int held = -1;  /* the threshold whose assignment st->assigned holds (its last probe) */
	for (int step = 1, probe = lo; probe < hi; step *= 2) {
		held = -1;
		if (eligible_at(st, P, D, taus[probe], fits, fastest_eligible_s, &rent_usd_per_s) &&
		    enough_gpus(in) && !sl_assign_count(in, st->assigned)) {
			hi = held = probe;
			break;
		}
		lo = probe + 1;
		probe = lo + step;
	}
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		held = -1;
		if (eligible_at(st, P, D, taus[mid], fits, fastest_eligible_s, &rent_usd_per_s) &&
		    enough_gpus(in) && !sl_assign_count(in, st->assigned))
			hi = held = mid;
		else
			lo = mid + 1;
	}
	int constrained = st->req->objective == SL_OBJECTIVE_COST ||
			  st->req->max_cost_usd_per_iter > 0 || st->req->min_throughput_it_s > 0;
	/* thresholds from the smallest feasible one up: each that yields a new set of eligible
	 * replicas counts, simulated or pruned, up to the limit */
	int considered = 0;
	int previous_tp[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES];
	int have_previous = 0;
	int limit = constrained ? THRESHOLDS_CONSTRAINED : THRESHOLDS_FOR_THROUGHPUT;
	double tau_max_s = 0; /* the largest threshold considered (shape_record_add) */
	for (int i = lo; i < tau_count && considered < limit; i++) {
		/* the feasible probe held was the last to set the eligible replicas */
		if (i != held &&
		    !eligible_at(st, P, D, taus[i], fits, fastest_eligible_s, &rent_usd_per_s))
			continue;
		size_t table = sizeof(previous_tp[0]) * (size_t)P;
		if (have_previous && !memcmp(previous_tp, in->tp_for, table))
			continue; /* the same replicas are eligible: the same plan */
		memcpy(previous_tp, in->tp_for, table);
		have_previous = 1;
		considered++;
		tau_max_s = taus[i];
		double time_lb_s = time_lower_bound(P, busiest_microbatches(st, mbs, D, nmb),
						    fastest_eligible_s) + st->sync_lb_s;
		if (prunable(st, time_lb_s, rent_usd_per_s * time_lb_s))
			continue;
		if ((i != held && sl_assign_count(in, st->assigned)) || counted_prunable(st, nmb))
			continue;
		if ((rc = simulate_and_rank(st, err)))
			return rc;
	}
	if (considered == limit)
		shape_record_add(st, P, D, tau_max_s);
	return 0;
}

static int search_partition(struct search_state *st, const struct sl_partition *part, int mbs,
			    long long max_gpus, struct sl_err *err)
{
	const struct sl_sim_env *env = st->env;
	int P = part->num_stages;
	st->partition_stamp++; /* kind_level's memo holds this partition's kinds from here */
	if (st->skip_unchanged_shapes && options_change_no_shape(st, part, mbs))
		return 0;
	double fastest_s[SL_PLAN_MAX_STAGES];
	double cheapest_usd_per_s[SL_PLAN_MAX_STAGES];
	/* work of one micro-batch through every stage on its most efficient replica: GPU-seconds
	 * and dollars (rent x busy time) */
	double work_gpu_s = 0, work_usd = 0;
	int min_gpus_per_pipeline = 0;
	for (int k = 0; k < P; k++) {
		int first = part->first[k], last = part->first[k + 1] - 1;
		fastest_s[k] = DBL_MAX;
		cheapest_usd_per_s[k] = DBL_MAX;
		double least_gpu_s = DBL_MAX, least_usd = DBL_MAX;
		int min_tp = 0;
		for (int g = 0; g < env->catalogue.gpu_count; g++) {
			for (int t = 0; t < TP_SLOTS; t++) {
				double c = -1;
				if (tp_values[t] <= sl_sim_gpus_per_node(env, g) &&
				    st->type_gpus[g] >= tp_values[t])
					c = sl_sim_stage_compute_s(env, st->cm, g, mbs, tp_values[t], first, last);
				st->stage_time_s[k][g][t] = c;
				if (c < 0)
					continue;
				st->stage_time_rc_s[k][g][t][0] = c;
				for (int lv = 1; st->options_on && lv < SL_SEARCH_RECOMPUTE_LEVELS; lv++)
					st->stage_time_rc_s[k][g][t][lv] = sl_sim_stage_compute_opt_s(
						env, st->cm, g, mbs, tp_values[t], first, last,
						sl_search_recompute_order[lv]);
				if (c < fastest_s[k])
					fastest_s[k] = c;
				double usd = tp_values[t] * st->assign.usd_per_hour[g] / 3600.0;
				if (usd < cheapest_usd_per_s[k])
					cheapest_usd_per_s[k] = usd;
				/* the work bounds count only replicas that can hold the stage at all: with
				 * one micro-batch in flight and one pipeline, the least memory it needs
				 * (under some recomputation, with options; c is no more than its time) */
				if (sl_search_least_level(env, st->req, g, mbs, tp_values[t], first, last,
							  k, P, 1, 1) >= 0) {
					if (tp_values[t] * c < least_gpu_s)
						least_gpu_s = tp_values[t] * c;
					if (usd * c < least_usd)
						least_usd = usd * c;
				}
				if (!min_tp || tp_values[t] < min_tp)
					min_tp = tp_values[t];
			}
		}
		if (!min_tp || least_gpu_s == DBL_MAX)
			return 0; /* no GPU of the pool has a time for this stage, or none holds it */
		min_gpus_per_pipeline += min_tp;
		work_gpu_s += least_gpu_s;
		work_usd += least_usd;
	}
	/* Every plan of this shape runs at least ceil(G/b) micro-batches through every stage: the
	 * pool's GPUs need work_gpu_s each, so T >= passes * work_gpu_s / GPUs, and every busy GPU
	 * is rented, so cost >= passes * work_usd. Whole shapes are pruned by these. */
	double passes = (double)((st->global_batch + mbs - 1) / mbs);
	if (prunable(st, passes * work_gpu_s / (double)max_gpus, passes * work_usd))
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
		double time_lb_s = time_lower_bound(P, busiest_microbatches(st, mbs, D, nmb), fastest_s);
		if (time_lb_s < d_passes * work_gpu_s / (double)max_gpus)
			time_lb_s = d_passes * work_gpu_s / (double)max_gpus;
		double cost_lb = rent_usd_per_s * time_lb_s;
		if (cost_lb < d_passes * work_usd)
			cost_lb = d_passes * work_usd;
		if (prunable(st, time_lb_s, cost_lb))
			continue;
		/* then with the gradient synchronisation the shape cannot avoid */
		st->sync_lb_s = sync_lower_bound(st, part, (int)D);
		time_lb_s += st->sync_lb_s;
		if (cost_lb < rent_usd_per_s * time_lb_s)
			cost_lb = rent_usd_per_s * time_lb_s;
		if (prunable(st, time_lb_s, cost_lb))
			continue;
		int rc = search_thresholds(st, part, mbs, (int)D, (int)nmb, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Per-layer times of each GPU type at this micro-batch (smallest TP with a time), for the
 * balanced partitions. */
static void layer_times(const struct search_state *st, int mbs, double *storage,
			const double **per_gpu)
{
	const struct sl_sim_env *env = st->env;
	int L = env->num_layers;
	for (int g = 0; g < env->catalogue.gpu_count; g++) {
		per_gpu[g] = NULL;
		if (subset_gpus(&st->assign, g) == 0)
			continue;
		for (int t = 0; t < TP_SLOTS && !per_gpu[g]; t++) {
			if (tp_values[t] > sl_sim_gpus_per_node(env, g) ||
			    sl_sim_stage_compute_s(env, st->cm, g, mbs, tp_values[t], 0, 0) < 0)
				continue;
			double *row = storage + (size_t)g * (size_t)L;
			for (int l = 0; l < L; l++)
				row[l] = sl_sim_stage_compute_s(env, st->cm, g, mbs, tp_values[t], l, l);
			per_gpu[g] = row;
		}
	}
}

/* One work item: every depth and partition at one micro-batch size, over the zones (and fill
 * order) set in st->assign. */
static int search_micro_batch(struct search_state *st, int mbs, struct sl_err *err)
{
	const struct sl_sim_env *env = st->env;
	int L = env->num_layers;
	long long gpus = 0;
	for (int g = 0; g < env->catalogue.gpu_count; g++)
		gpus += subset_gpus(&st->assign, g);
	if (gpus == 0)
		return 0;
	int max_stages = st->req->max_stages > 0 ? st->req->max_stages : L;
	if (max_stages > L)
		max_stages = L;
	if (max_stages > SL_PLAN_MAX_STAGES)
		max_stages = SL_PLAN_MAX_STAGES;
	if (max_stages > gpus)
		max_stages = (int)gpus;
	const double *per_gpu[SL_MAX_GPU_TYPES];
	layer_times(st, mbs, st->layer_time_storage, per_gpu);
	int any = 0;
	for (int g = 0; g < env->catalogue.gpu_count; g++)
		any |= per_gpu[g] != NULL;
	int rc = 0;
	for (int P = 1; any && P <= max_stages && !rc; P++) {
		int n = sl_partition_candidates(L, P, per_gpu, env->catalogue.gpu_count,
						st->partitions, SL_PARTITION_MAX_CANDIDATES);
		for (int i = 0; i < n && !rc; i++) {
			st->partition_index = i;
			rc = search_partition(st, &st->partitions[i], mbs, gpus, err);
		}
	}
	return rc;
}

static int max_gpus_in_a_zone(const struct sl_pool *pool, const struct sl_catalogue *cat, int g)
{
	int most = 0;
	for (int z = 0; z < cat->zone_count; z++)
		if (pool->counts[g][z] > most)
			most = pool->counts[g][z];
	return most;
}

static int fits_anywhere(const struct sl_sim_env *env, const struct sl_pool *pool,
			 const struct sl_search_request *req)
{
	/* Pipelining over as many stages as there are layers, one micro-batch of 1 in flight: the
	 * least memory per GPU any plan can ask; if that fits nowhere, nothing does. */
	const struct sl_catalogue *cat = &env->catalogue;
	int L = env->num_layers;
	for (int g = 0; g < cat->gpu_count; g++) {
		if (sl_pool_gpu_total(pool, g) == 0)
			continue;
		for (int t = 0; t < TP_SLOTS; t++) {
			if (tp_values[t] > sl_sim_gpus_per_node(env, g) ||
			    tp_values[t] > max_gpus_in_a_zone(pool, cat, g))
				continue;
			int all = 1;
			for (int l = 0; l < L && all; l++)
				all = sl_search_least_level(env, req, g, 1, tp_values[t], l, l, L - 1, L,
							    1, 1) >= 0;
			if (all)
				return 1;
		}
	}
	return 0;
}

/* A unit of parallel work: the zones searched, in fill order, and one micro-batch size. */
struct work_item {
	int zone_order[SL_MAX_ZONES];
	int zone_count;
	int mbs;
};

/* Work items: every zone set in every fill order searched (zones.h), times every micro-batch
 * size, large micro-batches first (usually the most efficient, so strong plans come early and the
 * bounds prune more of what follows). Returns their count; *items is malloc'd. */
static int work_items(const struct sl_sim_env *env, const struct sl_pool *pool,
		      long long global_batch, struct work_item **items)
{
	int sets[SL_ZONE_SETS_MAX][SL_MAX_ZONES], sizes[SL_ZONE_SETS_MAX];
	int set_count = sl_zone_sets(&env->catalogue, pool, sets, sizes);
	int top_mbs = 1;
	/* micro-batches divide the global batch (plan/microbatch_share.h): powers of two up to
	 * the largest that does */
	while (top_mbs * 2 <= global_batch && top_mbs * 2 <= 1024 && global_batch % (top_mbs * 2) == 0)
		top_mbs *= 2;
	int per_order = 0;
	for (int mbs = top_mbs; mbs >= 1; mbs /= 2)
		per_order++;
	int capacity = 0;
	for (int s = 0; s < set_count; s++)
		capacity += per_order * sl_zone_order_count(sizes[s]);
	*items = malloc(sizeof(**items) * (size_t)capacity);
	if (!*items)
		return -1;
	int count = 0;
	for (int mbs = top_mbs; mbs >= 1; mbs /= 2) {
		for (int s = 0; s < set_count; s++) {
			int order[SL_MAX_ZONES];
			memcpy(order, sets[s], sizeof(int) * (size_t)sizes[s]);
			for (int o = 0; o < sl_zone_order_count(sizes[s]); o++) {
				if (o > 0)
					sl_zone_next_order(order, sizes[s]);
				struct work_item *w = &(*items)[count++];
				memcpy(w->zone_order, order, sizeof(int) * (size_t)sizes[s]);
				w->zone_count = sizes[s];
				w->mbs = mbs;
			}
		}
	}
	return count;
}

static void state_free(struct search_state *st)
{
	if (!st)
		return;
	sl_plan_free(&st->plan);
	sl_plan_free(&st->uneven_plan);
	free(st->enumeration);
	free(st->layer_time_storage);
	free(st->partitions);
	free(st->assigned);
	free(st->sync_memo);
	free(st->kind_mem);
	free(st);
}

static struct search_state *state_new(const struct sl_sim_env *env,
				      const struct sl_search_request *req,
				      struct sl_search_outcome *outcome, struct sl_err *err)
{
	struct search_state *st = calloc(1, sizeof(*st));
	if (st) {
		st->enumeration = malloc(sizeof(*st->enumeration));
		st->layer_time_storage =
			malloc(sizeof(double) * (size_t)env->num_layers * SL_MAX_GPU_TYPES);
		st->partitions = malloc(sizeof(*st->partitions) * SL_PARTITION_MAX_CANDIDATES);
		st->assigned = malloc(sizeof(*st->assigned));
		st->sync_memo = calloc(SYNC_MEMO_SLOTS, sizeof(*st->sync_memo));
		st->kind_mem = malloc(sizeof(*st->kind_mem) * SL_PLAN_MAX_STAGES);
	}
	if (!st || !st->enumeration || !st->layer_time_storage || !st->partitions ||
	    !st->assigned || !st->sync_memo || !st->kind_mem) {
		state_free(st);
		sl_err_set(err, SL_ENOMEM, "out of memory for the search state");
		return NULL;
	}
	st->env = env;
	st->req = req;
	st->enumerate_max = req->structured_only ? 0 : SL_SEARCH_ENUMERATE_MAX;
	st->cm = req->cost_model;
	st->options_on = sl_search_options_on(req);
	st->bounds_unsound = sl_sim_runtime_model_possible(env, st->cm);
	st->global_batch = req->global_batch > 0 ? req->global_batch
						 : env->model.default_global_batch;
	sl_plan_init(&st->plan);
	sl_plan_init(&st->uneven_plan);
	const struct sl_catalogue *cat = &env->catalogue;
	for (int g = 0; g < cat->gpu_count; g++)
		st->assign.usd_per_hour[g] = sl_sim_gpu_usd_per_hour(env, st->cm, g);
	st->assign.gpu_count = cat->gpu_count;
	st->assign.zone_count = cat->zone_count;
	st->assign.prefer_cost = req->objective == SL_OBJECTIVE_COST;
	if (sl_ranking_init(&st->rank, req, outcome, err)) {
		state_free(st);
		return NULL;
	}
	return st;
}

/* Offers every plan a thread kept to the final ranking (in thread order, so the result does not
 * depend on which thread ran what: pruning only ever drops plans that cannot win). */
static int merge(struct sl_ranking *into, const struct sl_search_outcome *from, struct sl_err *err)
{
	int rc = 0;
	for (int i = 0; i < from->count && !rc; i++)
		rc = sl_ranking_consider(into, &from->best[i].plan, &from->best[i].result, err);
	for (int i = 0; i < from->pareto_count && !rc; i++)
		rc = sl_ranking_consider(into, &from->pareto[i].plan, &from->pareto[i].result, err);
	return rc;
}

static int search_threads(void)
{
	const char *env = getenv("SAILOR_THREADS");
	int n = env && *env ? atoi(env) : omp_get_num_procs();
	return n < 1 ? 1 : n > SEARCH_MAX_THREADS ? SEARCH_MAX_THREADS : n;
}

/* Lowers bound to the best plan of outcome that meets req's constraints. */
static void bound_from(_Atomic double *bound, const struct sl_search_request *req,
		       const struct sl_search_outcome *outcome)
{
	if (outcome && outcome->count && sl_search_meets(req, &outcome->best[0].result))
		shared_bound_lower(bound, req->objective == SL_OBJECTIVE_COST
						  ? outcome->best[0].result.cost_usd_per_iter
						  : outcome->best[0].result.iteration_time_s);
}

const char *sl_search_phase_name(enum sl_search_phase phase)
{
	static const char *const names[SL_SEARCH_PHASES] = {"plain", "variants", "options", "refine",
							    "uneven", "relaxed"};
	return phase >= 0 && phase < SL_SEARCH_PHASES ? names[phase] : "?";
}

static void stats_add(struct sl_search_stats *into, const struct sl_search_stats *from)
{
	for (int ph = 0; ph < SL_SEARCH_PHASES; ph++) {
		into->simulated[ph] += from->simulated[ph];
		into->time_s[ph] += from->time_s[ph];
	}
	into->shapes += from->shapes;
	into->skipped_shapes += from->skipped_shapes;
	into->gpu_pruned_shapes += from->gpu_pruned_shapes;
}

static void stats_total(struct sl_search_outcome *outcome)
{
	outcome->plans_simulated = 0;
	for (int ph = 0; ph < SL_SEARCH_PHASES; ph++)
		outcome->plans_simulated += outcome->stats.simulated[ph];
}

/* How search_once is run within search_with_options (all NULL/0: a plain search). */
struct search_pass {
	/* plans found before, by the search without memory options: every thread's ranking starts
	 * with them (and the shared bound at their best), so this search only simulates what can
	 * beat them and its result can only be as good or better */
	const struct sl_search_outcome *seed;
	/* the search without options: also simulate each plan with the options variant_req gives
	 * it, ranked into variants (search_with_options) */
	const struct sl_search_request *variant_req;
	struct sl_search_outcome *variants;
	/* the search with options after such a pass: skip what it covered */
	int skip_unchanged_shapes;
	enum sl_search_phase phase;  /* SL_PHASE_PLAIN or SL_PHASE_OPTIONS: the loop's stats */
	/* per work item, the shapes the search without options took to its threshold limit:
	 * written by that search (record), read by the one with options (skip_unchanged_shapes) */
	struct shape_records *records;
	int record;
};

/* One search of the space req describes, as pass says. */
static int search_once(const struct sl_sim_env *env, const struct sl_pool *pool,
		       const struct sl_search_request *req, const struct search_pass *pass,
		       struct sl_search_outcome *outcome, struct sl_err *err)
{
	const struct sl_search_outcome *seed = pass->seed;
	double start_s = now_s();
	sl_search_outcome_init(outcome);
	struct sl_search_stats *stats = &outcome->stats;
	if (sl_pool_total(pool) <= 0)
		return sl_err_set(err, SL_EINPUT, "the pool has no GPUs: give at least one GPU type "
						  "and zone with a positive count");
	long long global_batch = req->global_batch > 0 ? req->global_batch
						       : env->model.default_global_batch;
	struct work_item *items = NULL;
	int item_count = work_items(env, pool, global_batch, &items);
	if (item_count < 0)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the search");
	int threads = search_threads();
	if (threads > item_count)
		threads = item_count > 0 ? item_count : 1;
	struct search_state *states[SEARCH_MAX_THREADS] = {0};
	struct search_state *variant_states[SEARCH_MAX_THREADS] = {0};
	struct sl_search_outcome partial[SEARCH_MAX_THREADS];
	struct sl_search_outcome variant_partial[SEARCH_MAX_THREADS];
	struct sl_err errs[SEARCH_MAX_THREADS];
	int rcs[SEARCH_MAX_THREADS] = {0};
	int rc = 0;
	for (int t = 0; t < threads; t++) {
		sl_search_outcome_init(&partial[t]);
		sl_search_outcome_init(&variant_partial[t]);
	}
	for (int t = 0; t < threads && !rc; t++) {
		errs[t] = (struct sl_err){0};
		states[t] = state_new(env, req, &partial[t], err);
		if (states[t] && pass->variant_req) {
			variant_states[t] = state_new(env, pass->variant_req, &variant_partial[t], err);
			states[t]->variant = variant_states[t];
		}
		if (!states[t] || (pass->variant_req && !variant_states[t]))
			rc = SL_ENOMEM;
		else
			states[t]->skip_unchanged_shapes = pass->skip_unchanged_shapes;
	}
	const struct sl_catalogue *cat = &env->catalogue;
	/* one shared bound when only the best plan counts; top K and the frontier need each
	 * thread's own K-th best (the variants have their own: they must not prune this search) */
	_Atomic double shared_bound = DBL_MAX, variant_bound = DBL_MAX;
	for (int t = 0; t < threads && !rc; t++) {
		states[t]->shared_bound = req->top_k <= 1 && !req->pareto ? &shared_bound : NULL;
		if (variant_states[t])
			variant_states[t]->shared_bound =
				req->top_k <= 1 && !req->pareto ? &variant_bound : NULL;
	}
	for (int t = 0; t < threads && !rc && seed; t++)
		rc = merge(&states[t]->rank, seed, err);
	if (!rc)
		bound_from(&shared_bound, req, seed);
	if (!rc) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
		for (int i = 0; i < item_count; i++) {
			int t = omp_get_thread_num();
			struct search_state *st = states[t];
			if (rcs[t])
				continue;
			const struct work_item *w = &items[i];
			st->item_stamp++; /* a new work item: other GPUs, other syncs */
			memset(st->assign.avail, 0, sizeof(st->assign.avail));
			st->assign.zone_order_count = w->zone_count;
			for (int zi = 0; zi < w->zone_count; zi++) {
				int z = w->zone_order[zi];
				st->assign.zone_order[zi] = z;
				for (int g = 0; g < cat->gpu_count; g++)
					st->assign.avail[g][z] = pool->counts[g][z];
			}
			st->assign.type_count = 0;
			for (int g = 0; g < cat->gpu_count; g++) {
				st->type_gpus[g] = subset_gpus(&st->assign, g);
				if (st->type_gpus[g] > 0)
					st->assign.types[st->assign.type_count++] = g;
			}
			st->record_into = pass->records && pass->record ? &pass->records[i] : NULL;
			st->record_from = pass->records && !pass->record ? &pass->records[i] : NULL;
			rcs[t] = search_micro_batch(st, w->mbs, &errs[t]);
		}
		for (int t = 0; t < threads && !rc; t++)
			if (rcs[t]) {
				rc = rcs[t];
				if (err)
					*err = errs[t];
			}
	}
	free(items);
	double loop_end_s = now_s();
	stats->time_s[pass->phase] += loop_end_s - start_s;
	struct search_state *final = rc ? NULL : state_new(env, req, outcome, err);
	if (!rc && !final)
		rc = SL_ENOMEM;
	struct sl_ranking variant_rank;
	if (!rc && pass->variants)
		rc = sl_ranking_init(&variant_rank, pass->variant_req, pass->variants, err);
	for (int t = 0; t < threads; t++) {
		if (!rc && states[t])
			rc = merge(&final->rank, &partial[t], err);
		if (!rc && variant_states[t])
			rc = merge(&variant_rank, &variant_partial[t], err);
		if (states[t]) {
			stats->simulated[pass->phase] += states[t]->simulated;
			stats->shapes += states[t]->shapes;
			stats->skipped_shapes += states[t]->skipped_shapes;
			stats->gpu_pruned_shapes += states[t]->gpu_pruned_shapes;
		}
		if (variant_states[t])
			stats->simulated[SL_PHASE_VARIANTS] += variant_states[t]->simulated;
		state_free(states[t]);
		state_free(variant_states[t]);
		sl_search_outcome_free(&partial[t]);
		sl_search_outcome_free(&variant_partial[t]);
	}
	if (!rc && pass->variants)
		sl_ranking_finish(&variant_rank);
	double refine_start_s = now_s();
	if (!rc)
		rc = sl_search_refine(env, pool, &final->rank, &stats->simulated[SL_PHASE_REFINE], err);
	double uneven_start_s = now_s();
	stats->time_s[SL_PHASE_REFINE] += uneven_start_s - refine_start_s;
	if (!rc && req->uneven_microbatches)
		rc = sl_search_try_uneven(env, &final->rank, global_batch,
					  &stats->simulated[SL_PHASE_UNEVEN], err);
	stats->time_s[SL_PHASE_UNEVEN] += now_s() - uneven_start_s;
	if (!rc)
		sl_ranking_finish(&final->rank);
	stats_total(outcome);
	state_free(final);
	return rc;
}

/* With memory options: first the search without them (exactly the search as it was before they
 * existed), then the search with them seeded by its plans. The heuristic parts of the search
 * (thresholds, local search) take other paths when replicas may use recomputation, so running
 * the old search first is what guarantees the options never make a result worse.
 * The first search also simulates each of its plans with the options the second would give the
 * same replicas (ZeRO-1 wherever D > 1, recomputation where needed), so the second skips every
 * shape where the options change which replicas fit or how fast (fastest_changed_kind_s) and
 * searches only the rest, seeded with both rankings and pruning all that cannot beat them. */
static int search_with_options(const struct sl_sim_env *env, const struct sl_pool *pool,
			       const struct sl_search_request *req,
			       struct sl_search_outcome *outcome, struct sl_err *err)
{
	if (!sl_search_options_on(req))
		return search_once(env, pool, req, &(struct search_pass){0}, outcome, err);
	sl_search_outcome_init(outcome);
	struct sl_search_request without = *req;
	without.memory_options = 0;
	struct sl_search_outcome first, variants, seed;
	sl_search_outcome_init(&variants);
	sl_search_outcome_init(&seed);
	/* one record list per work item (the same items in both searches) */
	struct work_item *items = NULL;
	long long global_batch = req->global_batch > 0 ? req->global_batch
						       : env->model.default_global_batch;
	int item_count = work_items(env, pool, global_batch, &items);
	free(items);
	struct shape_records *records =
		item_count > 0 ? calloc((size_t)item_count, sizeof(*records)) : NULL;
	int rc = search_once(env, pool, &without,
			     &(struct search_pass){.variant_req = req, .variants = &variants,
						   .records = records, .record = 1},
			     &first, err);
	/* one seed of both: the plans without options and their variants, ranked as req ranks */
	struct sl_ranking seed_rank;
	if (!rc)
		rc = sl_ranking_init(&seed_rank, req, &seed, err);
	if (!rc)
		rc = merge(&seed_rank, &first, err);
	if (!rc)
		rc = merge(&seed_rank, &variants, err);
	if (!rc) {
		sl_ranking_finish(&seed_rank);
		rc = search_once(env, pool, req,
				 &(struct search_pass){.seed = &seed, .skip_unchanged_shapes = 1,
						       .phase = SL_PHASE_OPTIONS, .records = records},
				 outcome, err);
	}
	for (int i = 0; records && i < item_count; i++)
		free(records[i].v);
	free(records);
	stats_add(&outcome->stats, &first.stats);
	stats_total(outcome);
	sl_search_outcome_free(&first);
	sl_search_outcome_free(&variants);
	sl_search_outcome_free(&seed);
	return rc;
}

int sl_search_run(const struct sl_sim_env *env, const struct sl_pool *pool,
		  const struct sl_search_request *req, struct sl_search_outcome *outcome,
		  struct sl_err *err)
{
	double start_s = now_s();
	int rc = search_with_options(env, pool, req, outcome, err);
	/* Nothing meets the constraints: find what is possible, so the caller can say it. Separate
	 * searches, because the first pruned by the constraints. */
	for (int pass = 0; pass < 2 && !rc && outcome->count == 0; pass++) {
		int want_cheapest = pass == 0;
		if (want_cheapest ? !(req->max_cost_usd_per_iter > 0) : !(req->min_throughput_it_s > 0))
			continue;
		struct sl_search_request relaxed = *req;
		relaxed.max_cost_usd_per_iter = 0;
		relaxed.min_throughput_it_s = 0;
		relaxed.top_k = 1;
		relaxed.pareto = 0;
		relaxed.objective = want_cheapest ? SL_OBJECTIVE_COST : SL_OBJECTIVE_THROUGHPUT;
		struct sl_search_outcome other;
		rc = search_with_options(env, pool, &relaxed, &other, err);
		if (!rc && other.count) {
			struct sl_search_candidate *slot = want_cheapest ? &outcome->cheapest
									 : &outcome->fastest;
			rc = sl_plan_copy(&slot->plan, &other.best[0].plan, err);
			slot->result = other.best[0].result;
			if (want_cheapest)
				outcome->has_cheapest = !rc;
			else
				outcome->has_fastest = !rc;
		}
		for (int ph = 0; ph < SL_SEARCH_PHASES; ph++) {
			outcome->stats.simulated[SL_PHASE_RELAXED] += other.stats.simulated[ph];
			if (ph != SL_PHASE_RELAXED)
				outcome->stats.time_s[SL_PHASE_RELAXED] += other.stats.time_s[ph];
		}
		outcome->stats.time_s[SL_PHASE_RELAXED] += other.stats.time_s[SL_PHASE_RELAXED];
		outcome->stats.shapes += other.stats.shapes;
		outcome->stats.skipped_shapes += other.stats.skipped_shapes;
		outcome->stats.gpu_pruned_shapes += other.stats.gpu_pruned_shapes;
		stats_total(outcome);
		sl_search_outcome_free(&other);
	}
	outcome->search_time_s = now_s() - start_s;
	if (!rc && outcome->count == 0 && !outcome->has_cheapest && !outcome->has_fastest &&
	    !fits_anywhere(env, pool, req))
		rc = sl_err_set(err, SL_EINFEASIBLE,
				"model '%s' fits on none of the pool's GPUs, even split into one layer "
				"per stage with micro-batch 1 and the largest TP degree the pool allows: "
				"add GPUs with more memory, or more GPUs per zone for a higher TP degree",
				env->model.name);
	return rc;
}
