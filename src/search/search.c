/* The planner's search: see search.h for the method. This file drives it: the work items on
 * threads, the search without and then with memory options (search_with_options), the relaxed
 * searches when nothing meets the constraints, and the merge of the threads' rankings. One work
 * item is searched in thresholds.c (with enumerate.c, evaluate.c, prune.c and shape_skip.c, which
 * share search_state.h); zones.c chooses zone sets and orders, partition.c proposes layer splits,
 * assign.c picks and places replicas, ranking.c keeps the best, refine.c and uneven.c improve on
 * them.
 *
 * Invariants: the result does not depend on the number of threads nor on which thread ran which
 * item (the threads' rankings are merged in thread order, and pruning only drops plans that
 * cannot win); with memory options the result is never worse than without them.
 */
#include "search/search.h"

#include <float.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/refine.h"
#include "search/search_state.h"
#include "search/uneven.h"
#include "search/zones.h"
#include "util/clock.h"

/* Threads the search runs on: the machine's cores (SAILOR_THREADS overrides), at most this. */
#define SEARCH_MAX_THREADS 64

static int max_gpus_in_a_zone(const struct sl_pool *pool, int g)
{
	int zones[SL_MAX_SEARCH_ZONES], most = 0;
	int n = sl_pool_zones(pool, zones, SL_MAX_SEARCH_ZONES);
	for (int i = 0; i < n && i < SL_MAX_SEARCH_ZONES; i++)
		if (pool->counts[g][zones[i]] > most)
			most = pool->counts[g][zones[i]];
	return most;
}

/* Whether one layer per stage, one micro-batch of mbs in flight, fits on GPU type g at TP slot
 * t: the least memory per GPU any plan at (mbs, tp) can ask. */
static int fits_split_fully(const struct sl_sim_env *env, const struct sl_search_request *req,
			    int g, int t, int mbs)
{
	int L = env->num_layers;
	for (int l = 0; l < L; l++)
		if (sl_search_least_level(env, req,
					  &(struct sl_sim_replica_query){
						  .gpu = g, .mbs = mbs, .tp = tp_values[t],
						  .first_layer = l, .last_layer = l, .stage = L - 1,
						  .num_stages = L, .microbatches = 1,
						  .num_pipelines = 1}) < 0)
			return 0;
	return 1;
}

/* Why a search found no plan when every pool type has some layer time (untimed_pool_types),
 * from the replica kinds (GPU type, TP degree, micro-batch size up to top_mbs) the pool allows
 * that fit split into one layer per stage (a bound: a whole plan may need more):
 *   - some such kind has no profile entry: the search skips it as it skips one that does not
 *     fit, so the plans it could make are unknown; err names an entry to measure;
 *   - none fits: err says so (more memory per GPU, or a higher TP degree);
 *   - otherwise 0: the plans failed on the pool's size or the constraints (the caller says so). */
static int fit_diagnosis(const struct sl_sim_env *env, const struct sl_pool *pool,
			 const struct sl_search_request *req, int top_mbs, struct sl_err *err)
{
	const struct sl_catalogue *cat = &env->catalogue;
	int any_fits = 0;
	for (int g = 0; g < cat->gpu_count; g++) {
		if (sl_pool_gpu_total(pool, g) == 0)
			continue;
		for (int t = 0; t < TP_SLOTS; t++) {
			int tp = tp_values[t];
			if (tp > sl_sim_gpus_per_node(env, g) || tp > max_gpus_in_a_zone(pool, g))
				continue;
			/* a larger micro-batch needs more memory: stop at the first that does not
			 * fit; the sizes that fit without an entry, into missing */
			char missing[64] = "";
			for (int mbs = 1; mbs <= top_mbs && fits_split_fully(env, req, g, t, mbs);
			     mbs *= 2) {
				any_fits = 1;
				if (sl_sim_time_source(env, g, mbs, tp) == SL_TIME_NONE)
					snprintf(missing + strlen(missing),
						 sizeof(missing) - strlen(missing), "%s%d",
						 missing[0] ? "," : "", mbs);
			}
			if (missing[0])
				return sl_err_set(
					err, SL_EINFEASIBLE, "no plan fits in memory with the profile "
					"entries there are, and the profile of model '%s' on %s has no "
					"entry for micro-batch %s at TP %d, which the search could not "
					"consider: measure them with `sailor profile --model %s --gpu %s "
					"--tp %d --mbs %s -o DIR`, then plan with --profiles DIR; or add "
					"GPUs with more memory", env->model.name, cat->gpus[g].name,
					missing, tp, env->model.name, cat->gpus[g].name, tp, missing);
		}
	}
	if (any_fits)
		return 0;
	return sl_err_set(err, SL_EINFEASIBLE,
			  "model '%s' fits on none of the pool's GPUs, even split into one layer per "
			  "stage with micro-batch 1 and the largest TP degree the pool allows: add GPUs "
			  "with more memory, or more GPUs per zone for a higher TP degree",
			  env->model.name);
}

/* The largest micro-batch size the search tries for a global batch: micro-batches divide it
 * (plan/microbatch_share.h), so powers of two up to the largest that does. */
static int top_micro_batch(long long global_batch)
{
	int top_mbs = 1;
	while (top_mbs * 2 <= global_batch && top_mbs * 2 <= 1024 && global_batch % (top_mbs * 2) == 0)
		top_mbs *= 2;
	return top_mbs;
}

/* Whether GPU type g has a layer time for the model at some micro-batch size from 1 to top_mbs
 * (powers of two) and some TP degree. */
static int timed_up_to(const struct sl_sim_env *env, int g, int top_mbs)
{
	for (int mbs = 1; mbs <= top_mbs; mbs *= 2)
		for (int t = 0; t < TP_SLOTS; t++)
			if (sl_sim_time_source(env, g, mbs, tp_values[t]) != SL_TIME_NONE)
				return 1;
	return 0;
}

/* The pool's GPU types that have no layer time for the model at any micro-batch size the search
 * tries (top_mbs and below) and TP degree: no profile of it and none to estimate one from
 * (sim/estimate.c), or a profile without those micro-batch sizes. The search cannot place a
 * replica on such a type, and skips it as it skips one that does not fit, so a search that found
 * nothing must say so rather than blame memory. Returns 0 when every type has a time, else an
 * error (SL_ENOTFOUND when no type has one) with err saying the cause and what to run. */
static int untimed_pool_types(const struct sl_sim_env *env, const struct sl_pool *pool,
			      long long global_batch, struct sl_err *err)
{
	const struct sl_catalogue *cat = &env->catalogue;
	int top_mbs = top_micro_batch(global_batch);
	int types = 0, untimed = 0, other_sizes = 0;
	char names[512] = "";
	size_t used = 0;
	for (int g = 0; g < cat->gpu_count; g++) {
		if (sl_pool_gpu_total(pool, g) == 0)
			continue;
		types++;
		if (timed_up_to(env, g, top_mbs))
			continue;
		/* timed at a micro-batch size the global batch rules out: a profile lacking entries */
		other_sizes += timed_up_to(env, g, 1 << (SL_SIM_MBS_SLOTS - 1));
		int n = snprintf(names + used, sizeof(names) - used, "%s%s", untimed ? ", " : "",
				 cat->gpus[g].name);
		if (n > 0 && (size_t)n < sizeof(names) - used)
			used += (size_t)n;
		untimed++;
	}
	if (!untimed)
		return 0;
	const char *others = untimed == types ? "" : "no plan fits in memory on the pool's GPU "
						     "types that have a profile; ";
	int code = untimed == types ? SL_ENOTFOUND : SL_EINFEASIBLE;
	if (other_sizes) {
		char sizes[64] = "1";
		for (int mbs = 2; mbs <= top_mbs; mbs *= 2)
			snprintf(sizes + strlen(sizes), sizeof(sizes) - strlen(sizes), ",%d", mbs);
		return sl_err_set(err, code, "%s%s: no profile entry of model '%s' at micro-batch %s "
				  "(the sizes that divide global batch %lld): measure them with "
				  "`sailor profile --model %s --gpu TYPE --mbs %s -o DIR` (with the --gpus "
				  "file that defines TYPE), then plan with --profiles DIR; or give a "
				  "--global-batch that the profiled sizes divide", others, names,
				  env->model.name, sizes, global_batch, env->model.name, sizes);
	}
	return sl_err_set(err, code, "%s%s %s no profile of model '%s', and no profiled type to "
			  "estimate one from: measure one on each with `sailor profile --model %s "
			  "--gpu TYPE -o DIR` (with the --gpus file that defines TYPE), then plan with "
			  "--profiles DIR", others, names, untimed > 1 ? "have" : "has",
			  env->model.name, env->model.name);
}

/* A unit of parallel work: one zone set (searched in each of its fill orders) and one
 * micro-batch size. */
struct work_item {
	int zones[SL_MAX_SEARCH_ZONES];
	int zone_count;
	int mbs;
};

/* Work items: every zone set (zones.h) times every micro-batch size, large micro-batches first
 * (usually the most efficient, so strong plans come early and the bounds prune more of what
 * follows). Returns their count; *items is malloc'd. */
static int work_items(const struct sl_sim_env *env, const struct sl_pool *pool,
		      long long global_batch, const struct sl_search_shape *only,
		      struct work_item **items)
{
	int sets[SL_ZONE_SETS_MAX][SL_MAX_SEARCH_ZONES], sizes[SL_ZONE_SETS_MAX];
	int set_count = sl_zone_sets(&env->catalogue, pool, sets, sizes);
	int top_mbs = top_micro_batch(global_batch);
	int sizes_count = 0;
	for (int mbs = top_mbs; mbs >= 1; mbs /= 2)
		sizes_count++;
	*items = malloc(sizeof(**items) * (size_t)(sizes_count * set_count));
	if (!*items)
		return -1;
	int count = 0;
	for (int mbs = top_mbs; mbs >= 1; mbs /= 2) {
		if (only && only->micro_batch != mbs)
			continue;
		for (int s = 0; s < set_count; s++) {
			struct work_item *w = &(*items)[count++];
			memcpy(w->zones, sets[s], sizeof(int) * (size_t)sizes[s]);
			w->zone_count = sizes[s];
			w->mbs = mbs;
		}
	}
	return count;
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

int sl_search_threads(void)
{
	const char *env = getenv("SAILOR_THREADS");
	int n = env && *env ? atoi(env) : omp_get_num_procs();
	return n < 1 ? 1 : n > SEARCH_MAX_THREADS ? SEARCH_MAX_THREADS : n;
}

/* A search called from a parallel region (the island search runs its islands' searches side by
 * side) runs on its caller's thread. */
static int search_threads(void)
{
	return omp_in_parallel() ? 1 : sl_search_threads();
}

/* Lowers bound to the best plan of outcome that meets req's constraints. */
static void bound_from(_Atomic double *bound, const struct sl_search_request *req,
		       const struct sl_search_outcome *outcome)
{
	if (outcome && outcome->count && sl_search_meets(req, &outcome->best[0].result))
		sl_search_shared_bound_lower(bound, req->objective == SL_OBJECTIVE_COST
						  ? outcome->best[0].result.cost_usd_per_iter
						  : outcome->best[0].result.iteration_time_s);
}

const char *sl_search_phase_name(enum sl_search_phase phase)
{
	static const char *const names[SL_SEARCH_PHASES] = {"plain", "variants", "options", "refine",
							    "uneven", "relaxed", "islands"};
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

/* The searches of one search_once on its threads: thread t's state (and its variants' state,
 * with a variant_req), the rankings they fill, and its error. */
struct thread_searches {
	int count;
	struct search_state *states[SEARCH_MAX_THREADS];
	struct search_state *variant_states[SEARCH_MAX_THREADS];
	struct sl_search_outcome partial[SEARCH_MAX_THREADS];
	struct sl_search_outcome variant_partial[SEARCH_MAX_THREADS];
	struct sl_err errs[SEARCH_MAX_THREADS];
	int rcs[SEARCH_MAX_THREADS];
};

/* Every thread's state (ts->count of them), its rankings empty. Returns SL_ENOMEM (err says so)
 * when a state could not be made; the states made are freed by finish_threads. */
static int start_threads(const struct sl_sim_env *env, const struct sl_pool *pool,
			 const struct sl_search_request *req, const struct search_pass *pass,
			 struct thread_searches *ts, struct sl_err *err)
{
	int rc = 0;
	for (int t = 0; t < ts->count; t++) {
		sl_search_outcome_init(&ts->partial[t]);
		sl_search_outcome_init(&ts->variant_partial[t]);
	}
	for (int t = 0; t < ts->count && !rc; t++) {
		ts->errs[t] = (struct sl_err){0};
		ts->states[t] = sl_search_state_new(env, pool, req, &ts->partial[t], err);
		if (ts->states[t] && pass->variant_req) {
			ts->variant_states[t] =
				sl_search_state_new(env, pool, pass->variant_req, &ts->variant_partial[t], err);
			ts->states[t]->variant = ts->variant_states[t];
		}
		if (!ts->states[t] || (pass->variant_req && !ts->variant_states[t]))
			rc = SL_ENOMEM;
		else
			ts->states[t]->skip_unchanged_shapes = pass->skip_unchanged_shapes;
	}
	return rc;
}

/* A thread's state set up for work item i (w): the pool's GPUs in the item's zones in each of
 * its fill orders (the first one in st->assign), the GPU types there, and the item's shape
 * records. */
static void start_item(struct search_state *st, const struct work_item *w, int i,
		       const struct sl_pool *pool, const struct sl_catalogue *cat,
		       const struct search_pass *pass)
{
	st->item_stamp++; /* a new work item: other GPUs, other syncs */
	int order[SL_MAX_SEARCH_ZONES];
	memcpy(order, w->zones, sizeof(int) * (size_t)w->zone_count);
	st->fill_order_count = sl_zone_order_count(w->zone_count);
	for (int o = 0; o < st->fill_order_count; o++) {
		if (o > 0)
			sl_zone_next_order(order, w->zone_count);
		struct fill_order *f = &st->fill_orders[o];
		memset(f->avail, 0, sizeof(f->avail));
		for (int zi = 0; zi < w->zone_count; zi++) {
			f->zones[zi] = order[zi];
			for (int g = 0; g < cat->gpu_count; g++)
				f->avail[g][zi] = pool->counts[g][order[zi]];
		}
	}
	memset(st->assign.avail, 0, sizeof(st->assign.avail));
	st->assign.zone_order_count = w->zone_count;
	sl_search_use_fill_order(st, 0);
	st->assign.type_count = 0;
	for (int g = 0; g < cat->gpu_count; g++) {
		st->type_gpus[g] = sl_search_subset_gpus(&st->assign, g);
		if (st->type_gpus[g] > 0)
			st->assign.types[st->assign.type_count++] = g;
	}
	st->record_into = pass->records && pass->record ? &pass->records[i] : NULL;
	st->record_from = pass->records && !pass->record ? &pass->records[i] : NULL;
}

/* The work items, shared out over the threads as they come free; a thread that failed takes no
 * more. Returns the first failed thread's error (in thread order), into err. */
static int run_items(const struct work_item *items, int item_count, const struct sl_pool *pool,
		     const struct sl_catalogue *cat, const struct search_pass *pass,
		     struct thread_searches *ts, struct sl_err *err)
{
#pragma omp parallel for num_threads(ts->count) schedule(dynamic, 1)
	for (int i = 0; i < item_count; i++) {
		int t = omp_get_thread_num();
		struct search_state *st = ts->states[t];
		if (ts->rcs[t])
			continue;
		const struct work_item *w = &items[i];
		start_item(st, w, i, pool, cat, pass);
		ts->rcs[t] = sl_search_micro_batch(st, w->mbs, &ts->errs[t]);
	}
	for (int t = 0; t < ts->count; t++)
		if (ts->rcs[t]) {
			if (err)
				*err = ts->errs[t];
			return ts->rcs[t];
		}
	return 0;
}

/* Merges the threads' rankings in thread order (into final's, and the variants' into
 * variant_rank), adds their counts to stats, and frees them. Merges only while rc is 0;
 * returns rc or the first merge's error. */
static int finish_threads(struct thread_searches *ts, struct search_state *final,
			  struct sl_ranking *variant_rank, const struct search_pass *pass,
			  struct sl_search_stats *stats, int rc, struct sl_err *err)
{
	for (int t = 0; t < ts->count; t++) {
		if (!rc && ts->states[t])
			rc = merge(&final->rank, &ts->partial[t], err);
		if (!rc && ts->variant_states[t])
			rc = merge(variant_rank, &ts->variant_partial[t], err);
		if (ts->states[t]) {
			stats->simulated[pass->phase] += ts->states[t]->simulated;
			stats->shapes += ts->states[t]->shapes;
			stats->skipped_shapes += ts->states[t]->skipped_shapes;
			stats->gpu_pruned_shapes += ts->states[t]->gpu_pruned_shapes;
		}
		if (ts->variant_states[t])
			stats->simulated[SL_PHASE_VARIANTS] += ts->variant_states[t]->simulated;
		sl_search_state_release(ts->states[t]);
		sl_search_state_release(ts->variant_states[t]);
		sl_search_outcome_free(&ts->partial[t]);
		sl_search_outcome_free(&ts->variant_partial[t]);
	}
	return rc;
}

/* After the threads: the local search, then (with the option) uneven micro-batch counts, on the
 * merged ranking, each timed into stats. */
static int improve_ranking(const struct sl_sim_env *env, const struct sl_pool *pool,
			   const struct sl_search_request *req, long long global_batch,
			   struct search_state *final, struct sl_search_stats *stats, int rc,
			   struct sl_err *err)
{
	double refine_start_s = sl_now_s();
	if (!rc)
		rc = sl_search_refine(env, pool, &final->rank, &stats->simulated[SL_PHASE_REFINE], err);
	double uneven_start_s = sl_now_s();
	stats->time_s[SL_PHASE_REFINE] += uneven_start_s - refine_start_s;
	if (!rc && req->uneven_microbatches)
		rc = sl_search_try_uneven(env, &final->rank, global_batch,
					  &stats->simulated[SL_PHASE_UNEVEN], err);
	stats->time_s[SL_PHASE_UNEVEN] += sl_now_s() - uneven_start_s;
	return rc;
}

/* One search of the space req describes, as pass says. */
static int search_once(const struct sl_sim_env *env, const struct sl_pool *pool,
		       const struct sl_search_request *req, const struct search_pass *pass,
		       struct sl_search_outcome *outcome, struct sl_err *err)
{
	const struct sl_search_outcome *seed = pass->seed;
	double start_s = sl_now_s();
	sl_search_outcome_init(outcome);
	struct sl_search_stats *stats = &outcome->stats;
	if (sl_pool_total(pool) <= 0)
		return sl_err_set(err, SL_EINPUT, "the pool has no GPUs: give at least one GPU type "
						  "and zone with a positive count");
	long long global_batch = req->global_batch > 0 ? req->global_batch
						       : env->model.default_global_batch;
	struct work_item *items = NULL;
	int item_count = work_items(env, pool, global_batch, req->only_shape, &items);
	if (item_count < 0)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the search");
	struct thread_searches ts;
	ts.count = search_threads();
	if (ts.count > item_count)
		ts.count = item_count > 0 ? item_count : 1;
	memset(ts.states, 0, sizeof(ts.states));
	memset(ts.variant_states, 0, sizeof(ts.variant_states));
	memset(ts.rcs, 0, sizeof(ts.rcs));
	int rc = start_threads(env, pool, req, pass, &ts, err);
	const struct sl_catalogue *cat = &env->catalogue;
	/* one shared bound when only the best plan counts; top K and the frontier need each
	 * thread's own K-th best (the variants have their own: they must not prune this search) */
	_Atomic double shared_bound = DBL_MAX, variant_bound = DBL_MAX;
	for (int t = 0; t < ts.count && !rc; t++) {
		ts.states[t]->shared_bound = req->top_k <= 1 && !req->pareto ? &shared_bound : NULL;
		if (ts.variant_states[t])
			ts.variant_states[t]->shared_bound =
				req->top_k <= 1 && !req->pareto ? &variant_bound : NULL;
	}
	for (int t = 0; t < ts.count && !rc && seed; t++)
		rc = merge(&ts.states[t]->rank, seed, err);
	if (!rc)
		bound_from(&shared_bound, req, seed);
	if (!rc)
		rc = run_items(items, item_count, pool, cat, pass, &ts, err);
	free(items);
	double loop_end_s = sl_now_s();
	stats->time_s[pass->phase] += loop_end_s - start_s;
	struct search_state *final = rc ? NULL : sl_search_state_new(env, pool, req, outcome, err);
	if (!rc && !final)
		rc = SL_ENOMEM;
	struct sl_ranking variant_rank;
	if (!rc && pass->variants)
		rc = sl_ranking_init(&variant_rank, pass->variant_req, pass->variants, err);
	rc = finish_threads(&ts, final, &variant_rank, pass, stats, rc, err);
	if (!rc && pass->variants)
		sl_ranking_finish(&variant_rank);
	rc = improve_ranking(env, pool, req, global_batch, final, stats, rc, err);
	if (!rc)
		sl_ranking_finish(&final->rank);
	stats_total(outcome);
	sl_search_state_release(final);
	return rc;
}

/* With memory options: first the search without them (exactly the search as it was before they
 * existed), then the search with them seeded by its plans. The heuristic parts of the search
 * (thresholds, local search) take other paths when replicas may use recomputation, so running
 * the old search first is what guarantees the options never make a result worse.
 * The first search also simulates each of its plans with the options the second would give the
 * same replicas (ZeRO-1 wherever D > 1, recomputation where needed), so the second skips every
 * shape where the options change which replicas fit or how fast
 * (sl_search_fastest_changed_kind_s) and searches only the rest, seeded with both rankings and
 * pruning all that cannot beat them. */
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
	int item_count = work_items(env, pool, global_batch, req->only_shape, &items);
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
	double start_s = sl_now_s();
	int zones[SL_MAX_SEARCH_ZONES], zone_count = sl_pool_zones(pool, zones, SL_MAX_SEARCH_ZONES);
	if (zone_count > SL_MAX_SEARCH_ZONES) {
		sl_search_outcome_init(outcome);
		return sl_err_set(err, SL_EINPUT, "the pool has GPUs in %d zones: the planner searches "
				  "at most %d at once; plan the zones you would use together",
				  zone_count, SL_MAX_SEARCH_ZONES);
	}
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
		if (!rc && other.count)
			rc = sl_search_outcome_keep(want_cheapest ? &outcome->cheapest : &outcome->fastest,
						    &other.best[0], err);
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
	outcome->search_time_s = sl_now_s() - start_s;
	int nothing = !rc && outcome->count == 0 && !outcome->cheapest && !outcome->fastest;
	long long global_batch = req->global_batch > 0 ? req->global_batch
						       : env->model.default_global_batch;
	if (nothing)
		rc = untimed_pool_types(env, pool, global_batch, err);
	if (nothing && !rc)
		rc = fit_diagnosis(env, pool, req, top_micro_batch(global_batch), err);
	return rc;
}
