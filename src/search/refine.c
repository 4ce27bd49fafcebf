/* Local search around the best plan: see refine.h. */
#include "search/refine.h"

#include "search/uneven.h"

#include "search/memory_dimensions.h"

#include <stdlib.h>
#include <string.h>

struct option {
	short gpu, zone, tp;
};

struct refine {
	const struct sl_sim_env *env;
	const struct sl_pool *pool;
	struct sl_ranking *rank;
	struct sl_plan current, candidate, best_move;
	struct sl_sim_result current_result, candidate_result, best_move_result;
	int have_move;
	int zone_rank[SL_MAX_ZONES];  /* the seed plan's zone order, kept by every move */
	struct option options[SL_MAX_GPU_TYPES * SL_MAX_SEARCH_ZONES * 4];
	int option_count;
	long long simulated;
};

/* Whether the plan uses no more GPUs of a type in a zone than the pool has. */
static int within_pool(const struct sl_pool *pool, const struct sl_plan *plan)
{
	/* only the entries of the plan's replicas are read: they are zeroed first, not the whole
	 * table (32 KB for a plan of a few replicas, on every move tried) */
	int used[SL_MAX_GPU_TYPES][SL_MAX_ZONES];
	for (int k = 0; k < plan->num_stages; k++)
		for (int j = 0; j < plan->num_pipelines; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			used[r->gpu][r->zone] = 0;
		}
	for (int k = 0; k < plan->num_stages; k++)
		for (int j = 0; j < plan->num_pipelines; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			used[r->gpu][r->zone] += r->tp;
			if (used[r->gpu][r->zone] > pool->counts[r->gpu][r->zone])
				return 0;
		}
	return 1;
}

/* Simulates the candidate; keeps it as the round's best move if it improves on both the current
 * plan and the best move so far. */
static int try_candidate(struct refine *rf, struct sl_err *err)
{
	if (!within_pool(rf->pool, &rf->candidate))
		return 0;
	sl_search_canonicalize(&rf->candidate, rf->zone_rank);
	/* the moved replicas change which pipelines are fastest: the split is made again (with
	 * --uneven-microbatches the counts stay those of the plan refined, as they always have) */
	if (!rf->rank->req->uneven_microbatches &&
	    sl_search_share_microbatches(rf->env, rf->rank->req->cost_model, &rf->candidate,
					 rf->candidate.global_batch))
		return 0;
	/* the moved replicas may need other memory options (none when the search has none) */
	sl_search_choose_options(rf->env, rf->rank->req, &rf->candidate, rf->candidate.global_batch);
	struct sl_err sim_err = {0};
	rf->simulated++;
	if (sl_simulate(rf->env, &rf->candidate, rf->rank->req->cost_model, &rf->candidate_result,
			&sim_err))
		return 0;
	int rc = sl_ranking_consider(rf->rank, &rf->candidate, &rf->candidate_result, err);
	if (rc)
		return rc;
	const struct sl_search_request *req = rf->rank->req;
	if (!sl_search_meets(req, &rf->candidate_result) ||
	    !sl_search_better(req, &rf->candidate_result, &rf->current_result))
		return 0;
	if (rf->have_move && !sl_search_better(req, &rf->candidate_result, &rf->best_move_result))
		return 0;
	rc = sl_plan_copy(&rf->best_move, &rf->candidate, err);
	rf->best_move_result = rf->candidate_result;
	rf->have_move = !rc;
	return rc;
}

static int shift_boundaries(struct refine *rf, struct sl_err *err)
{
	int rc = 0;
	for (int k = 0; k + 1 < rf->current.num_stages && !rc; k++) {
		for (int dir = -1; dir <= 1 && !rc; dir += 2) {
			if ((rc = sl_plan_copy(&rf->candidate, &rf->current, err)))
				break;
			struct sl_plan_stage *a = &rf->candidate.stages[k], *b = &rf->candidate.stages[k + 1];
			a->last_layer += dir;
			b->first_layer += dir;
			if (a->last_layer < a->first_layer || b->first_layer > b->last_layer)
				continue;
			rc = try_candidate(rf, err);
		}
	}
	return rc;
}

static int replace_replicas(struct refine *rf, struct sl_err *err)
{
	const struct sl_plan *cur = &rf->current;
	int D = cur->num_pipelines;
	int rc = 0;
	for (int k = 0; k < cur->num_stages && !rc; k++) {
		int j = 0;
		while (j < D && !rc) {
			const struct sl_replica *r = sl_plan_replica(cur, k, j);
			int n = 1;
			while (j + n < D && !memcmp(sl_plan_replica(cur, k, j + n), r, sizeof(*r)))
				n++;
			for (int o = 0; o < rf->option_count && !rc; o++) {
				const struct option *opt = &rf->options[o];
				if (opt->gpu == r->gpu && opt->zone == r->zone && opt->tp == r->tp)
					continue;
				/* the whole group, then (if the group has several) only its last replica */
				for (int whole = 1; whole >= (n > 1 ? 0 : 1) && !rc; whole--) {
					if ((rc = sl_plan_copy(&rf->candidate, cur, err)))
						break;
					for (int i = whole ? 0 : n - 1; i < n; i++) {
						struct sl_replica *c = sl_plan_replica(&rf->candidate, k, j + i);
						c->gpu = opt->gpu;
						c->zone = opt->zone;
						c->tp = opt->tp;
					}
					rc = try_candidate(rf, err);
				}
			}
			j += n;
		}
	}
	return rc;
}

/* Two group replacements in two different stages at once, when the neighbourhood is small enough
 * (SL_REFINE_PAIR_BUDGET simulations): moves that only pay off together, such as moving two
 * adjacent stages to the same zone. */
static int replace_pairs(struct refine *rf, struct sl_err *err)
{
	const struct sl_plan *cur = &rf->current;
	int P = cur->num_stages, D = cur->num_pipelines;
	long long moves = (long long)P * rf->option_count;
	if (D != 1 || moves * moves > SL_REFINE_PAIR_BUDGET)
		return 0;
	int rc = 0;
	for (int a = 0; a < P && !rc; a++)
		for (int b = a + 1; b < P && !rc; b++)
			for (int oa = 0; oa < rf->option_count && !rc; oa++)
				for (int ob = 0; ob < rf->option_count && !rc; ob++) {
					if ((rc = sl_plan_copy(&rf->candidate, cur, err)))
						break;
					struct sl_replica *ra = sl_plan_replica(&rf->candidate, a, 0);
					struct sl_replica *rb = sl_plan_replica(&rf->candidate, b, 0);
					ra->gpu = rf->options[oa].gpu;
					ra->zone = rf->options[oa].zone;
					ra->tp = rf->options[oa].tp;
					rb->gpu = rf->options[ob].gpu;
					rb->zone = rf->options[ob].zone;
					rb->tp = rf->options[ob].tp;
					rc = try_candidate(rf, err);
				}
	return rc;
}

int sl_search_refine(const struct sl_sim_env *env, const struct sl_pool *pool,
		     struct sl_ranking *rank, long long *simulated, struct sl_err *err)
{
	if (rank->out->count == 0)
		return 0;
	struct refine *rf = calloc(1, sizeof(*rf));
	if (!rf)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the local search");
	rf->env = env;
	rf->pool = pool;
	rf->rank = rank;
	sl_plan_init(&rf->current);
	sl_plan_init(&rf->candidate);
	sl_plan_init(&rf->best_move);
	const struct sl_catalogue *cat = &env->catalogue;
	int zones[SL_MAX_SEARCH_ZONES];
	int zone_count = sl_pool_zones(pool, zones, SL_MAX_SEARCH_ZONES);
	if (zone_count > SL_MAX_SEARCH_ZONES)
		zone_count = SL_MAX_SEARCH_ZONES; /* sl_search_run refuses such pools first */
	for (int zi = 0; zi < zone_count; zi++)
		for (int g = 0, z = zones[zi]; g < cat->gpu_count; g++)
			for (int tp = 1; tp <= sl_sim_gpus_per_node(env, g); tp *= 2)
				if (pool->counts[g][z] >= tp)
					rf->options[rf->option_count++] =
						(struct option){(short)g, (short)z, (short)tp};
	int rc = sl_plan_copy(&rf->current, &rank->out->best[0].plan, err);
	sl_search_zone_rank_of(&rf->current, zones, zone_count, rf->zone_rank);
	rf->current_result = rank->out->best[0].result;
	for (int round = 0; round < SL_REFINE_MAX_ROUNDS && !rc; round++) {
		if (rf->simulated >= SL_REFINE_MAX_SIMULATIONS)
			break;
		rf->have_move = 0;
		if (!rank->req->only_shape) /* a pinned shape keeps its partition */
			rc = shift_boundaries(rf, err);
		if (!rc)
			rc = replace_replicas(rf, err);
		if (!rc && !rf->have_move)
			rc = replace_pairs(rf, err);
		if (rc || !rf->have_move)
			break;
		rc = sl_plan_copy(&rf->current, &rf->best_move, err);
		rf->current_result = rf->best_move_result;
	}
	*simulated += rf->simulated;
	sl_plan_free(&rf->current);
	sl_plan_free(&rf->candidate);
	sl_plan_free(&rf->best_move);
	free(rf);
	return rc;
}
