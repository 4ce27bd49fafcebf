/* The island searches of one planning, and which stands for which: see island_memo.h. */
#include "search/island_memo.h"

#include <stdlib.h>
#include <string.h>

#include "search/ranking.h"
#include "search/zone_equivalence.h"

void sl_island_memo_free(struct sl_island_memo *memo)
{
	for (int i = 0; i < memo->count; i++)
		sl_search_outcome_free(&memo->done[i].out);
	free(memo->done);
	memo->done = NULL;
	memo->count = memo->capacity = 0;
}

void sl_island_memo_key(const struct sl_pool *pool, const struct sl_search_request *req,
			long long global_batch, int top_k, const struct sl_search_shape *shape,
			int types, struct sl_island_task_key *key)
{
	memset(key, 0, sizeof(*key));
	key->max_stages = req->max_stages;
	key->global_batch = global_batch;
	key->top_k = top_k;
	key->has_shape = shape != NULL;
	if (shape)
		key->shape = *shape;
	struct sl_island_pool_key *p = &key->pool;
	p->zone_count = sl_pool_zones(pool, p->zones, SL_MAX_SEARCH_ZONES);
	if (p->zone_count > SL_MAX_SEARCH_ZONES)
		p->zone_count = -1; /* too many to compare: stands for nothing */
	for (int i = 0; i < p->zone_count; i++)
		for (int g = 0; g < types; g++)
			p->counts[i][g] = pool->counts[g][p->zones[i]];
}

static int same_task(const struct sl_island_task_key *a, const struct sl_island_task_key *b)
{
	return a->max_stages == b->max_stages && a->global_batch == b->global_batch &&
	       a->top_k == b->top_k && a->has_shape == b->has_shape &&
	       (!a->has_shape || !memcmp(&a->shape, &b->shape, sizeof(a->shape)));
}

int sl_island_memo_stands_for(const struct sl_island_memo *memo, enum sl_cost_model cm,
			      const struct sl_island_task_key *done,
			      const struct sl_island_task_key *want)
{
	const struct sl_island_pool_key *a = &done->pool, *b = &want->pool;
	if (a->zone_count < 1 || a->zone_count != b->zone_count || !same_task(done, want) ||
	    memcmp(a->counts, b->counts, sizeof(a->counts)))
		return -1;
	if (!memcmp(a->zones, b->zones, sizeof(a->zones)))
		return a->zones[0];
	if (a->zone_count == 1 && sl_zones_interchangeable(memo->env, cm, a->zones[0], b->zones[0]))
		return b->zones[0];
	return -1;
}

int sl_island_memo_add(struct sl_island_memo *memo, const struct sl_island_task_key *key,
		       const struct sl_search_request *sub, const struct sl_search_outcome *out,
		       struct sl_err *err)
{
	if (memo->count == memo->capacity) {
		int capacity = memo->capacity ? 2 * memo->capacity : 32;
		struct sl_island_searched *grown =
			realloc(memo->done, (size_t)capacity * sizeof(*grown));
		if (!grown)
			return sl_err_set(err, SL_ENOMEM, "out of memory for the island search");
		memo->done = grown;
		memo->capacity = capacity;
	}
	struct sl_island_searched *d = &memo->done[memo->count];
	d->task = *key;
	sl_search_outcome_init(&d->out);
	struct sl_ranking rank;
	int rc = sl_ranking_init(&rank, sub, &d->out, err);
	for (int i = 0; i < out->count && !rc; i++)
		rc = sl_ranking_consider(&rank, &out->best[i].plan, &out->best[i].result, err);
	if (rc) {
		sl_search_outcome_free(&d->out);
		return rc;
	}
	memo->count++;
	return 0;
}

static int same_figures(const struct sl_sim_result *a, const struct sl_sim_result *b)
{
	return a->iteration_time_s == b->iteration_time_s &&
	       a->cost_usd_per_iter == b->cost_usd_per_iter &&
	       a->peak_memory_bytes == b->peak_memory_bytes && a->fits_memory == b->fits_memory;
}

int sl_island_memo_copy(const struct sl_island_memo *memo, const struct sl_island_searched *done,
			int zone, const struct sl_search_request *sub, struct sl_search_outcome *out,
			long long *simulated, int *equal, struct sl_err *err)
{
	struct sl_ranking rank;
	struct sl_plan plan;
	sl_plan_init(&plan);
	*equal = 1;
	int rc = sl_ranking_init(&rank, sub, out, err);
	int renamed = zone != done->task.pool.zones[0];
	for (int i = 0; i < done->out.count && !rc && *equal; i++) {
		const struct sl_search_candidate *c = &done->out.best[i];
		if (!renamed) {
			rc = sl_ranking_consider(&rank, &c->plan, &c->result, err);
			continue;
		}
		if ((rc = sl_plan_copy(&plan, &c->plan, err)))
			break;
		for (int k = 0; k < plan.num_stages; k++)
			for (int j = 0; j < plan.num_pipelines; j++)
				sl_plan_replica(&plan, k, j)->zone = (short)zone;
		struct sl_sim_result res;
		struct sl_err sim_err = {0};
		(*simulated)++;
		*equal = !sl_simulate(memo->env, &plan, sub->cost_model, &res, &sim_err) &&
			 same_figures(&res, &c->result);
		if (*equal)
			rc = sl_ranking_consider(&rank, &plan, &res, err);
	}
	sl_plan_free(&plan);
	if (!rc && !*equal) {
		sl_search_outcome_free(out);
		sl_search_outcome_init(out);
	}
	return rc;
}
