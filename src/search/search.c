/* The planner's search: see search.h for the method. This file holds the loops (zone subsets,
 * micro-batch sizes, depths, partitions, data-parallel degrees, time thresholds) and the pruning;
 * partition.c proposes layer splits, assign.c picks and places replicas, ranking.c keeps the best.
 */
#include "search/search.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/assign.h"
#include "search/partition.h"
#include "search/ranking.h"
#include "search/refine.h"

#define TP_SLOTS 4                       /* TP degrees 1, 2, 4, 8 */
static const int tp_values[TP_SLOTS] = {1, 2, 4, 8};
/* Without a budget or throughput floor, the smallest feasible thresholds give the fastest
 * plans; a few more cover cases where a slightly slower stage frees GPUs for a faster sync. */
#define THRESHOLDS_FOR_THROUGHPUT 1

struct enumeration;

struct search_state {
	const struct sl_sim_env *env;
	const struct sl_search_request *req;
	enum sl_cost_model cm;
	long long global_batch;
	struct sl_ranking rank;
	struct sl_plan plan;                 /* scratch plan, reused */
	struct sl_sim_result result;         /* scratch result */
	struct sl_assign_input assign;
	int prune_constraints;               /* 0 while looking for the best plan ignoring them */
	long long enumerate_max;             /* shapes with at most this many assignments: all */
	struct enumeration *enumeration;     /* scratch for enumerate_small_shape */
	long long simulated;
	/* per stage, per gpu, per tp slot: compute seconds per micro-batch (< 0: none) */
	double stage_time_s[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
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

static int replica_before(const struct sl_replica *x, const struct sl_replica *y,
			  const int *zone_rank)
{
	if (x->zone != y->zone)
		return zone_rank[x->zone] < zone_rank[y->zone];
	if (x->gpu != y->gpu)
		return x->gpu < y->gpu;
	return x->tp < y->tp;
}

void sl_search_canonicalize(struct sl_plan *plan, const int *zone_rank)
{
	/* insertion sort: stable, allocation-free, and plans arrive nearly sorted */
	for (int k = 0; k < plan->num_stages; k++) {
		struct sl_replica *r = sl_plan_replica(plan, k, 0);
		for (int i = 1; i < plan->num_pipelines; i++) {
			struct sl_replica key = r[i];
			int j = i;
			while (j > 0 && replica_before(&key, &r[j - 1], zone_rank)) {
				r[j] = r[j - 1];
				j--;
			}
			r[j] = key;
		}
	}
}

void sl_search_zone_rank_of(const struct sl_plan *plan, int zone_count, int *zone_rank)
{
	int next = 0;
	for (int z = 0; z < SL_MAX_ZONES; z++)
		zone_rank[z] = -1;
	for (int k = 0; k < plan->num_stages; k++)
		for (int j = 0; j < plan->num_pipelines; j++) {
			int z = sl_plan_replica(plan, k, j)->zone;
			if (zone_rank[z] < 0)
				zone_rank[z] = next++;
		}
	for (int z = 0; z < zone_count; z++)
		if (zone_rank[z] < 0)
			zone_rank[z] = next++;
}

/* The plan in st->plan is in canonical order already (assign.c writes it so). */
static int simulate_and_rank(struct search_state *st, struct sl_err *err)
{
	struct sl_err sim_err = {0};
	st->simulated++;
	if (sl_simulate(st->env, &st->plan, st->cm, &st->result, &sim_err))
		return 0; /* a combination the simulator has no time for: not a candidate */
	return sl_ranking_consider(&st->rank, &st->plan, &st->result, err);
}

/* Lower bound on the iteration time of any plan whose stage k takes at least fastest_s[k] per
 * micro-batch, with nmb micro-batches per pipeline: micro-batch 0 must pass stages 0..k-1 before
 * stage k starts, and stage k then runs nmb forward+backward passes one after another:
 *   T >= max_k ( nmb * fastest_s[k] + sum_{j<k} fastest_s[j] ).
 * Both cost models add communication, bubbles and synchronisation to this, never less. */
static double time_lower_bound(int stages, long long nmb, const double *fastest_s)
{
	double bound = 0, before = 0;
	for (int k = 0; k < stages; k++) {
		double t = (double)nmb * fastest_s[k] + before;
		if (t > bound)
			bound = t;
		before += fastest_s[k];
	}
	return bound;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Whether no plan whose iteration takes at least time_lb_s and whose GPUs rent for at least
 * rent_lb_usd_per_s can enter the result: it misses a constraint (cost >= rent x time, egress
 * only adds), or it cannot beat the K-th best plan kept so far. Equal bounds are not pruned:
 * such a plan may still win a tie-break. With --pareto only constraints prune. */
static int prunable(const struct search_state *st, double time_lb_s, double rent_lb_usd_per_s)
{
	const struct sl_search_request *req = st->req;
	double cost_lb = rent_lb_usd_per_s * time_lb_s;
	if (st->prune_constraints) {
		if (req->min_throughput_it_s > 0 && 1.0 / time_lb_s < req->min_throughput_it_s)
			return 1;
		if (req->max_cost_usd_per_iter > 0 && cost_lb > req->max_cost_usd_per_iter)
			return 1;
	}
	const struct sl_search_outcome *out = st->rank.out;
	if (req->pareto || out->count < st->rank.top_capacity)
		return 0;
	const struct sl_sim_result *kth = &out->best[out->count - 1].result;
	if (req->objective == SL_OBJECTIVE_THROUGHPUT)
		return time_lb_s > kth->iteration_time_s;
	return cost_lb > kth->cost_usd_per_iter;
}

static int tp_slot(int tp)
{
	return tp >= 8 ? 3 : tp >= 4 ? 2 : tp >= 2 ? 1 : 0;
}

/* The bounds again, now from the replicas actually assigned: each stage is as slow as its slowest
 * replica, and the rent is exact. Tighter than the bounds before assignment, and cheap next to a
 * simulation. */
static int assigned_prunable(const struct search_state *st, long long nmb)
{
	const struct sl_plan *plan = &st->plan;
	double stage_s[SL_PLAN_MAX_STAGES], rent_usd_per_s = 0;
	for (int k = 0; k < plan->num_stages; k++) {
		stage_s[k] = 0;
		for (int j = 0; j < plan->num_pipelines; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			double c = st->stage_time_s[k][r->gpu][tp_slot(r->tp)];
			if (c > stage_s[k])
				stage_s[k] = c;
			rent_usd_per_s += r->tp * st->assign.usd_per_hour[r->gpu] / 3600.0;
		}
	}
	return prunable(st, time_lower_bound(plan->num_stages, nmb, stage_s), rent_usd_per_s);
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
		} else if (!assigned_prunable(st, en->nmb)) {
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
		for (int zi = 0; zi < in->zone_order_count; zi++)
			for (int g = 0, z = in->zone_order[zi]; g < in->gpu_count; g++)
				for (int t = 0; t < TP_SLOTS; t++)
					if (fits[k][g][t] && in->avail[g][z] >= tp_values[t])
						en->options[k][n++] = (struct enum_option){
							(short)g, (short)z, (short)tp_values[t]};
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
		for (int g = 0; g < in->gpu_count; g++) {
			in->tp_for[k][g] = 0;
			for (int t = 0; t < TP_SLOTS; t++) {
				double c = st->stage_time_s[k][g][t];
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

/* For one (micro-batch, partition, D): the thresholds tau are the distinct per-stage times of
 * replicas that fit. A larger tau makes more replicas eligible, each with fewer GPUs, so whether
 * the pool can supply the plan is monotone in tau: a binary search finds the smallest feasible
 * one (the fastest plan of this shape); with a budget, a throughput floor or the cost objective,
 * larger thresholds (slower, cheaper plans) are tried after it too. */
static int search_thresholds(struct search_state *st, const struct sl_partition *part, int mbs,
			     int D, int nmb, struct sl_err *err)
{
	const struct sl_sim_env *env = st->env;
	int P = part->num_stages;
	int fits[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	double taus[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * TP_SLOTS];
	int tau_count = 0;
	for (int k = 0; k < P; k++) {
		int first = part->first[k], last = part->first[k + 1] - 1;
		int any = 0;
		for (int g = 0; g < env->catalogue.gpu_count; g++) {
			for (int t = 0; t < TP_SLOTS; t++) {
				fits[k][g][t] = 0;
				double c = st->stage_time_s[k][g][t];
				if (c < 0)
					continue;
				fits[k][g][t] = sl_sim_replica_fits(env, st->cm, g, mbs, tp_values[t],
								    first, last, k, P, nmb, D);
				if (fits[k][g][t]) {
					taus[tau_count++] = c;
					any = 1;
				}
			}
		}
		if (!any)
			return 0;
	}
	qsort(taus, (size_t)tau_count, sizeof(double), cmp_double);
	int unique = 0;
	for (int i = 0; i < tau_count; i++)
		if (!unique || taus[i] != taus[unique - 1])
			taus[unique++] = taus[i];

	int rc = sl_plan_reserve(&st->plan, P, D, err);
	if (rc)
		return rc;
	st->plan.micro_batch = mbs;
	st->plan.global_batch = st->global_batch;
	st->plan.uneven_microbatches = 0;
	for (int k = 0; k < P; k++) {
		st->plan.stages[k].first_layer = part->first[k];
		st->plan.stages[k].last_layer = part->first[k + 1] - 1;
	}
	if (enumerate_small_shape(st, P, D, nmb, fits, &rc, err))
		return rc;
	struct sl_assign_input *in = &st->assign;
	in->num_stages = P;
	in->num_pipelines = D;
	double fastest_eligible_s[SL_PLAN_MAX_STAGES], rent_usd_per_s;

	/* smallest feasible threshold */
	int lo = 0, hi = unique; /* answer in [lo, hi]; hi = unique means none */
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (eligible_at(st, P, D, taus[mid], fits, fastest_eligible_s, &rent_usd_per_s) &&
		    !sl_assign_replicas(in, &st->plan))
			hi = mid;
		else
			lo = mid + 1;
	}
	int constrained = st->req->objective == SL_OBJECTIVE_COST ||
			  st->req->max_cost_usd_per_iter > 0 || st->req->min_throughput_it_s > 0;
	int tried = 0;
	for (int i = lo; i < unique; i++) {
		if (!eligible_at(st, P, D, taus[i], fits, fastest_eligible_s, &rent_usd_per_s))
			continue;
		if (prunable(st, time_lower_bound(P, nmb, fastest_eligible_s), rent_usd_per_s))
			continue;
		if (sl_assign_replicas(in, &st->plan) || assigned_prunable(st, nmb))
			continue;
		if ((rc = simulate_and_rank(st, err)))
			return rc;
		if (++tried >= THRESHOLDS_FOR_THROUGHPUT && !constrained)
			break;
	}
	return 0;
}

static int search_partition(struct search_state *st, const struct sl_partition *part, int mbs,
			    long long max_gpus, struct sl_err *err)
{
	const struct sl_sim_env *env = st->env;
	int P = part->num_stages;
	double fastest_s[SL_PLAN_MAX_STAGES];
	double cheapest_usd_per_s[SL_PLAN_MAX_STAGES];
	int min_gpus_per_pipeline = 0;
	for (int k = 0; k < P; k++) {
		int first = part->first[k], last = part->first[k + 1] - 1;
		fastest_s[k] = DBL_MAX;
		cheapest_usd_per_s[k] = DBL_MAX;
		int min_tp = 0;
		for (int g = 0; g < env->catalogue.gpu_count; g++) {
			for (int t = 0; t < TP_SLOTS; t++) {
				double c = -1;
				if (tp_values[t] <= sl_sim_gpus_per_node(env, g) &&
				    subset_gpus(&st->assign, g) >= tp_values[t])
					c = sl_sim_stage_compute_s(env, st->cm, g, mbs, tp_values[t], first, last);
				st->stage_time_s[k][g][t] = c;
				if (c < 0)
					continue;
				if (c < fastest_s[k])
					fastest_s[k] = c;
				double usd = tp_values[t] * st->assign.usd_per_hour[g] / 3600.0;
				if (usd < cheapest_usd_per_s[k])
					cheapest_usd_per_s[k] = usd;
				if (!min_tp || tp_values[t] < min_tp)
					min_tp = tp_values[t];
			}
		}
		if (!min_tp)
			return 0; /* no GPU of the pool has a time for this stage */
		min_gpus_per_pipeline += min_tp;
	}
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
		if (prunable(st, time_lower_bound(P, nmb, fastest_s), rent_usd_per_s))
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

static int search_zone_subset(struct search_state *st, struct sl_err *err)
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
	double *storage = malloc(sizeof(double) * (size_t)L * SL_MAX_GPU_TYPES);
	struct sl_partition *parts = malloc(sizeof(*parts) * SL_PARTITION_MAX_CANDIDATES);
	if (!storage || !parts) {
		free(storage);
		free(parts);
		return sl_err_set(err, SL_ENOMEM, "out of memory for the search tables");
	}
	int rc = 0;
	int top_mbs = 1;
	while (top_mbs * 2 <= st->global_batch && top_mbs * 2 <= 1024)
		top_mbs *= 2;
	/* large micro-batches first: they are usually the most efficient, and a strong plan found
	 * early lets the lower bounds prune more of what follows */
	for (int mbs = top_mbs; mbs >= 1 && !rc; mbs /= 2) {
		const double *per_gpu[SL_MAX_GPU_TYPES];
		layer_times(st, mbs, storage, per_gpu);
		int any = 0;
		for (int g = 0; g < env->catalogue.gpu_count; g++)
			any |= per_gpu[g] != NULL;
		if (!any)
			continue;
		for (int P = 1; P <= max_stages && !rc; P++) {
			int n = sl_partition_candidates(L, P, per_gpu, env->catalogue.gpu_count, parts,
							SL_PARTITION_MAX_CANDIDATES);
			for (int i = 0; i < n && !rc; i++)
				rc = search_partition(st, &parts[i], mbs, gpus, err);
		}
	}
	free(storage);
	free(parts);
	return rc;
}

#define ZONE_ORDERS_EXHAUSTIVE 3

static int factorial(int n)
{
	return n <= 1 ? 1 : n * factorial(n - 1);
}

static void reverse(int *a, int n)
{
	for (int i = 0, j = n - 1; i < j; i++, j--) {
		int t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

/* Steps a through all n! orders (lexicographic, wrapping around), whatever order it starts in. */
static void next_permutation(int *a, int n)
{
	int i = n - 2;
	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i >= 0) {
		int j = n - 1;
		while (a[j] <= a[i])
			j--;
		int t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
	reverse(a + i + 1, n - i - 1);
}

/* Zone subsets worth searching: all zones with GPUs; each region on its own (a stage spanning
 * regions pays the slow inter-region links in its all-reduce); each zone on its own. */
static int zone_subsets(const struct sl_sim_env *env, const struct sl_pool *pool,
			int subsets[][SL_MAX_ZONES], int *sizes)
{
	const struct sl_catalogue *cat = &env->catalogue;
	int zone_gpus[SL_MAX_ZONES] = {0};
	int used[SL_MAX_ZONES], used_count = 0;
	for (int z = 0; z < cat->zone_count; z++) {
		for (int g = 0; g < cat->gpu_count; g++)
			zone_gpus[z] += pool->counts[g][z];
		if (zone_gpus[z] > 0) {
			/* most GPUs first, then by index: the fill order of assign.c */
			int j = used_count++;
			while (j > 0 && zone_gpus[used[j - 1]] < zone_gpus[z]) {
				used[j] = used[j - 1];
				j--;
			}
			used[j] = z;
		}
	}
	int count = 0;
	memcpy(subsets[count], used, sizeof(int) * (size_t)used_count);
	sizes[count++] = used_count;
	int regions[SL_MAX_ZONES], region_count = 0;
	for (int i = 0; i < used_count; i++) {
		int r = sl_catalogue_zone_region(cat, used[i]), seen = 0;
		for (int j = 0; j < region_count; j++)
			seen |= regions[j] == r;
		if (!seen)
			regions[region_count++] = r;
	}
	if (region_count > 1) {
		for (int j = 0; j < region_count; j++) {
			int n = 0;
			for (int i = 0; i < used_count; i++)
				if (sl_catalogue_zone_region(cat, used[i]) == regions[j])
					subsets[count][n++] = used[i];
			sizes[count++] = n;
		}
	}
	if (used_count > 1) {
		for (int i = 0; i < used_count; i++) {
			int dup = 0;
			for (int s = 0; s < count; s++)
				dup |= sizes[s] == 1 && subsets[s][0] == used[i];
			if (dup)
				continue;
			subsets[count][0] = used[i];
			sizes[count++] = 1;
		}
	}
	return count;
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
			 enum sl_cost_model cm)
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
				all = sl_sim_replica_fits(env, cm, g, 1, tp_values[t], l, l, L - 1, L, 1, 1);
			if (all)
				return 1;
		}
	}
	return 0;
}

static int search_once(const struct sl_sim_env *env, const struct sl_pool *pool,
		       const struct sl_search_request *req, struct sl_search_outcome *outcome,
		       struct sl_err *err)
{
	sl_search_outcome_init(outcome);
	if (sl_pool_total(pool) <= 0)
		return sl_err_set(err, SL_EINPUT, "the pool has no GPUs: give at least one GPU type "
						  "and zone with a positive count");
	struct search_state *st = calloc(1, sizeof(*st));
	if (!st)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the search state");
	st->env = env;
	st->req = req;
	st->prune_constraints = 1;
	st->enumerate_max = req->structured_only ? 0 : SL_SEARCH_ENUMERATE_MAX;
	st->enumeration = malloc(sizeof(*st->enumeration));
	if (!st->enumeration) {
		free(st);
		return sl_err_set(err, SL_ENOMEM, "out of memory for the search state");
	}
	st->cm = req->cost_model;
	st->global_batch = req->global_batch > 0 ? req->global_batch
						 : env->model.default_global_batch;
	sl_plan_init(&st->plan);
	int rc = sl_ranking_init(&st->rank, req, outcome, err);
	const struct sl_catalogue *cat = &env->catalogue;
	for (int g = 0; g < cat->gpu_count; g++)
		st->assign.usd_per_hour[g] = sl_sim_gpu_usd_per_hour(env, st->cm, g);
	st->assign.gpu_count = cat->gpu_count;
	st->assign.zone_count = cat->zone_count;
	st->assign.prefer_cost = req->objective == SL_OBJECTIVE_COST;

	int subsets[2 * SL_MAX_ZONES + 1][SL_MAX_ZONES], sizes[2 * SL_MAX_ZONES + 1];
	int subset_count = zone_subsets(env, pool, subsets, sizes);
	for (int s = 0; s < subset_count && !rc; s++) {
		memset(st->assign.avail, 0, sizeof(st->assign.avail));
		st->assign.zone_order_count = sizes[s];
		for (int i = 0; i < sizes[s]; i++) {
			int z = subsets[s][i];
			st->assign.zone_order[i] = z;
			for (int g = 0; g < cat->gpu_count; g++)
				st->assign.avail[g][z] = pool->counts[g][z];
		}
		/* The fill order decides which stages cross zones, and links are not symmetric:
		 * every order of up to ZONE_ORDERS_EXHAUSTIVE zones, else the order and its reverse. */
		int orders = sizes[s] <= ZONE_ORDERS_EXHAUSTIVE ? factorial(sizes[s])
							       : (sizes[s] > 1 ? 2 : 1);
		for (int o = 0; o < orders && !rc; o++) {
			if (o > 0) {
				if (sizes[s] <= ZONE_ORDERS_EXHAUSTIVE)
					next_permutation(st->assign.zone_order, sizes[s]);
				else
					reverse(st->assign.zone_order, sizes[s]);
			}
			rc = search_zone_subset(st, err);
		}
	}
	if (!rc)
		rc = sl_search_refine(env, pool, &st->rank, &st->simulated, err);
	if (!rc)
		sl_ranking_finish(&st->rank);
	outcome->plans_simulated = st->simulated;
	sl_plan_free(&st->plan);
	free(st->enumeration);
	free(st);
	return rc;
}

int sl_search_run(const struct sl_sim_env *env, const struct sl_pool *pool,
		  const struct sl_search_request *req, struct sl_search_outcome *outcome,
		  struct sl_err *err)
{
	double start_s = now_s();
	int rc = search_once(env, pool, req, outcome, err);
	int constrained = req->max_cost_usd_per_iter > 0 || req->min_throughput_it_s > 0;
	if (!rc && outcome->count == 0 && constrained) {
		/* Nothing meets the constraints: find the best plan without them, so the caller can
		 * say what is possible. A second search, because the first pruned by the constraints. */
		struct sl_search_request relaxed = *req;
		relaxed.max_cost_usd_per_iter = 0;
		relaxed.min_throughput_it_s = 0;
		relaxed.top_k = 1;
		relaxed.pareto = 0;
		struct sl_search_outcome other;
		rc = search_once(env, pool, &relaxed, &other, err);
		if (!rc && other.count) {
			rc = sl_plan_copy(&outcome->unconstrained.plan, &other.best[0].plan, err);
			outcome->unconstrained.result = other.best[0].result;
			outcome->has_unconstrained = !rc;
		}
		outcome->plans_simulated += other.plans_simulated;
		sl_search_outcome_free(&other);
	}
	outcome->search_time_s = now_s() - start_s;
	if (!rc && outcome->count == 0 && !outcome->has_unconstrained &&
	    !fits_anywhere(env, pool, req->cost_model))
		rc = sl_err_set(err, SL_EINFEASIBLE,
				"model '%s' fits on none of the pool's GPUs, even split into one layer "
				"per stage with micro-batch 1 and the largest TP degree the pool allows: "
				"add GPUs with more memory, or more GPUs per zone for a higher TP degree",
				env->model.name);
	return rc;
}
