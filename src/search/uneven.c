/* Uneven micro-batch counts: see uneven.h. */
#include "search/uneven.h"

#include "plan/microbatch_share.h"
#include "search/memory_dimensions.h"

#include <math.h>
#include <stdlib.h>

int sl_uneven_counts(const double *pipeline_s, int D, long long total, int *n)
{
	if (total < D)
		return -1;
	double speed_sum = 0;
	for (int j = 0; j < D; j++)
		speed_sum += 1.0 / pipeline_s[j];
	/* one micro-batch each first, the rest by speed, largest remainders last */
	long long rest = total - D, given = 0;
	double frac[SL_PLAN_MAX_PIPELINES];
	for (int j = 0; j < D; j++) {
		double share = (double)rest * (1.0 / pipeline_s[j]) / speed_sum;
		n[j] = 1 + (int)floor(share);
		frac[j] = share - floor(share);
		given += n[j] - 1;
	}
	while (given < rest) {
		int pick = 0;
		for (int j = 1; j < D; j++)
			if (frac[j] > frac[pick])
				pick = j;
		n[pick]++;
		frac[pick] = -1;
		given++;
	}
	return 0;
}

/* Stage k's compute per micro-batch on replica r, without the stage's options (< 0: none). */
static double stage_compute_s(const struct sl_sim_env *env, enum sl_cost_model cm,
			      const struct sl_plan *plan, int k, const struct sl_replica *r)
{
	struct sl_sim_replica_query q = {.gpu = r->gpu, .mbs = plan->micro_batch, .tp = r->tp,
					.first_layer = plan->stages[k].first_layer,
					.last_layer = plan->stages[k].last_layer};
	return sl_sim_stage_compute_s(env, cm, &q);
}

/* Pipeline j's slowest stage per micro-batch, from kind_s(k, replica) (a search passes its table
 * of the shape's kinds) or, with none, the simulator's time; 0 when all are equal or one has no
 * time. */
static int pipeline_times(const struct sl_sim_env *env, enum sl_cost_model cm,
			  const struct sl_plan *plan, const struct sl_stage_kind_times *kinds,
			  double *pipeline_s)
{
	const int D = plan->num_pipelines;
	for (int j = 0; j < D; j++)
		pipeline_s[j] = 0;
	/* stage by stage: a stage's replicas come grouped by kind (canonical order), so a kind's
	 * time is looked up once per run of equal replicas, not once per replica */
	for (int k = 0; k < plan->num_stages; k++) {
		int prev_gpu = -1, prev_tp = -1;
		double c = 0;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			if (r->gpu != prev_gpu || r->tp != prev_tp) {
				c = kinds ? kinds->time_s(kinds->ctx, k, r)
					  : stage_compute_s(env, cm, plan, k, r);
				prev_gpu = r->gpu;
				prev_tp = r->tp;
			}
			if (c > pipeline_s[j])
				pipeline_s[j] = c;
		}
	}
	int differ = 0;
	for (int j = 0; j < D; j++) {
		if (!(pipeline_s[j] > 0))
			return 0;
		differ |= pipeline_s[j] != pipeline_s[0];
	}
	return differ;
}

int sl_search_share_microbatches_timed(const struct sl_sim_env *env, enum sl_cost_model cm,
				       struct sl_plan *plan, long long global_batch,
				       const struct sl_stage_kind_times *kinds)
{
	plan->uneven_microbatches = 0;
	int D = plan->num_pipelines, b = plan->micro_batch;
	if (D < 1 || b < 1 || global_batch % b)
		return -1;
	long long M = global_batch / b;
	if (M < D)
		return -1;
	if (M % D == 0)
		return 0;
	double pipeline_s[SL_PLAN_MAX_PIPELINES];
	int differ = pipeline_times(env, cm, plan, kinds, pipeline_s);
	return sl_plan_split_microbatches(plan, global_batch, differ ? pipeline_s : NULL);
}

int sl_search_share_microbatches(const struct sl_sim_env *env, enum sl_cost_model cm,
				 struct sl_plan *plan, long long global_batch)
{
	return sl_search_share_microbatches_timed(env, cm, plan, global_batch, NULL);
}

int sl_uneven_apply(const struct sl_sim_env *env, enum sl_cost_model cm, struct sl_plan *plan,
		    long long global_batch, struct sl_err *err)
{
	int D = plan->num_pipelines, b = plan->micro_batch;
	if (D < 2 || global_batch % b)
		return 0;
	double pipeline_s[SL_PLAN_MAX_PIPELINES];
	if (!pipeline_times(env, cm, plan, NULL, pipeline_s))
		return 0;
	int rc = sl_plan_reserve(plan, plan->num_stages, D, err);
	if (rc)
		return rc;
	if (sl_uneven_counts(pipeline_s, D, global_batch / b, plan->microbatches))
		return 0;
	plan->uneven_microbatches = 1;
	return 1;
}

int sl_search_try_uneven(const struct sl_sim_env *env, struct sl_ranking *rank,
			 long long global_batch, long long *simulated, struct sl_err *err)
{
	struct sl_search_outcome *out = rank->out;
	int count = out->count;
	struct sl_plan *seeds = calloc((size_t)(count ? count : 1), sizeof(*seeds));
	struct sl_sim_result *result = malloc(sizeof(*result));
	if (!seeds || !result) {
		free(seeds);
		free(result);
		return sl_err_set(err, SL_ENOMEM, "out of memory for uneven micro-batch plans");
	}
	int rc = 0;
	/* copies first: offering variants reorders the top list */
	for (int i = 0; i < count && !rc; i++) {
		sl_plan_init(&seeds[i]);
		rc = sl_plan_copy(&seeds[i], &out->best[i].plan, err);
	}
	for (int i = 0; i < count && !rc; i++) {
		int applied = sl_uneven_apply(env, rank->req->cost_model, &seeds[i], global_batch, err);
		if (applied <= 0) {
			rc = applied;
			continue;
		}
		/* other micro-batch counts, other memory in flight: options chosen again */
		sl_search_choose_options(env, rank->req, &seeds[i], global_batch);
		struct sl_err sim_err = {0};
		(*simulated)++;
		if (!sl_simulate(env, &seeds[i], rank->req->cost_model, result, &sim_err))
			rc = sl_ranking_consider(rank, &seeds[i], result, err);
	}
	for (int i = 0; i < count; i++)
		sl_plan_free(&seeds[i]);
	free(seeds);
	free(result);
	return rc;
}
