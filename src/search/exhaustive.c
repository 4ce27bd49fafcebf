/* Brute-force planner for oracle tests: enumerates the whole search space of small pools and
 * ranks every plan with the same simulator and the same ranking as the planner (search.h).
 *
 * Space: every micro-batch size 1, 2, 4, ... up to the global batch, every depth P, every
 * contiguous layer partition, every D with P·D GPUs or fewer, and per stage every multiset of D
 * replicas (gpu, zone, tp) — tp a power of two up to the GPU's node — whose GPUs the pool has,
 * written in the canonical (zone rank, gpu, tp) order for every order of the pool's zones;
 * with memory options (search/memory_dimensions.h), every plan also under every option set: per stage
 * each recomputation level (stages holding a transformer block) and ZeRO-1 on or off (stages
 * with D > 1). Nothing is pruned; a plan whose replicas do not all fit in memory is passed over
 * without simulating it, as the ranking would reject it anyway.
 */
#include <stdlib.h>
#include <string.h>

#include "search/memory_dimensions.h"
#include "search/partition.h"
#include "search/ranking.h"
#include "search/search.h"
#include "search/uneven.h"
#include "search/zones.h"

struct option {
	short gpu, zone, tp;
};

struct brute {
	const struct sl_sim_env *env;
	const struct sl_pool *pool;
	enum sl_cost_model cm;
	long long global_batch;
	struct sl_ranking rank;
	struct sl_plan plan;
	struct sl_sim_result result;
	struct option options[SL_MAX_GPU_TYPES * SL_MAX_SEARCH_ZONES * 4];
	int option_count;
	int used[SL_MAX_GPU_TYPES][SL_MAX_ZONES];
	long long simulated;
	int options_on;
	const struct sl_search_shape *only; /* req->only_shape */
	int rc;
	struct sl_err *err;
};

static void fill_replicas(struct brute *b, int stage, int slot, int min_option);

/* Whether every replica of stage k fits under the stage's options as set. */
static int stage_fits(struct brute *b, int k)
{
	const struct sl_plan *plan = &b->plan;
	for (int j = 0; j < plan->num_pipelines; j++) {
		struct sl_sim_replica_query query = sl_sim_replica_query_of(
			plan, k, j, sl_plan_pipeline_microbatches(plan, j, b->global_batch));
		if (!sl_sim_replica_fits(b->env, b->cm, &query))
			return 0;
	}
	return 1;
}

static void leaf(struct brute *b);

/* Every option set of stages k.. of the plan whose replicas are chosen. */
static void options_from(struct brute *b, int k)
{
	struct sl_plan *plan = &b->plan;
	if (b->rc)
		return;
	if (k == plan->num_stages) {
		leaf(b);
		return;
	}
	struct sl_plan_stage *s = &plan->stages[k];
	int levels = sl_sim_effective_recompute(b->env, s->first_layer, s->last_layer,
						SL_RECOMPUTE_FULL) != SL_RECOMPUTE_NONE
			     ? SL_SEARCH_RECOMPUTE_LEVELS
			     : 1;
	int zeros = plan->num_pipelines > 1 ? 2 : 1;
	for (int lv = 0; lv < levels; lv++)
		for (int z = 0; z < zeros; z++) {
			s->recompute = (unsigned char)sl_search_recompute_order[lv];
			s->zero = (unsigned char)z;
			if (stage_fits(b, k))
				options_from(b, k + 1);
		}
	s->recompute = SL_RECOMPUTE_NONE;
	s->zero = 0;
}

static void leaf(struct brute *b)
{
	struct sl_err sim_err = {0};
	b->simulated++;
	if (sl_simulate(b->env, &b->plan, b->cm, &b->result, &sim_err))
		return;
	if (!b->rc)
		b->rc = sl_ranking_consider(&b->rank, &b->plan, &b->result, b->err);
}

static void fill_replicas(struct brute *b, int stage, int slot, int min_option)
{
	if (b->rc)
		return;
	if (slot == b->plan.num_pipelines) {
		if (stage + 1 < b->plan.num_stages)
			fill_replicas(b, stage + 1, 0, 0);
		else if (!sl_search_share_microbatches(b->env, b->cm, &b->plan, b->global_batch))
			b->options_on ? options_from(b, 0) : leaf(b);
		return;
	}
	for (int i = min_option; i < b->option_count; i++) {
		const struct option *o = &b->options[i];
		if (b->used[o->gpu][o->zone] + o->tp > b->pool->counts[o->gpu][o->zone])
			continue;
		b->used[o->gpu][o->zone] += o->tp;
		struct sl_replica *r = sl_plan_replica(&b->plan, stage, slot);
		r->gpu = o->gpu;
		r->zone = o->zone;
		r->tp = o->tp;
		r->pad = 0;
		fill_replicas(b, stage, slot + 1, i);
		b->used[o->gpu][o->zone] -= o->tp;
	}
}

struct partition_ctx {
	struct brute *b;
	int mbs;
	long long gpus;
};

static int visit_partition(const struct sl_partition *part, void *vctx)
{
	struct partition_ctx *ctx = vctx;
	struct brute *b = ctx->b;
	int P = part->num_stages;
	const struct sl_search_shape *only = b->only;
	if (only && (only->num_stages != P ||
		     memcmp(only->first, part->first, sizeof(int) * (size_t)(P + 1))))
		return 0;
	long long max_d = ctx->gpus / P;
	long long useful = (b->global_batch + ctx->mbs - 1) / ctx->mbs;
	if (max_d > useful)
		max_d = useful;
	for (int D = 1; D <= max_d && !b->rc; D++) {
		if ((b->rc = sl_plan_reserve(&b->plan, P, D, b->err)))
			break;
		b->plan.micro_batch = ctx->mbs;
		b->plan.global_batch = b->global_batch;
		b->plan.uneven_microbatches = 0;
		for (int k = 0; k < P; k++)
			b->plan.stages[k] = (struct sl_plan_stage){.first_layer = part->first[k],
								   .last_layer = part->first[k + 1] - 1};
		fill_replicas(b, 0, 0, 0);
	}
	return b->rc;
}

int sl_search_exhaustive(const struct sl_sim_env *env, const struct sl_pool *pool,
			 const struct sl_search_request *req, struct sl_search_outcome *outcome,
			 struct sl_err *err)
{
	sl_search_outcome_init(outcome);
	struct sl_search_request one = *req;
	one.top_k = 1;
	one.pareto = 0;
	struct brute *b = calloc(1, sizeof(*b));
	if (!b)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the exhaustive search");
	b->env = env;
	b->pool = pool;
	b->cm = req->cost_model;
	b->options_on = sl_search_options_on(req);
	b->only = req->only_shape;
	b->err = err;
	b->global_batch = req->global_batch > 0 ? req->global_batch : env->model.default_global_batch;
	sl_plan_init(&b->plan);
	int rc = sl_ranking_init(&b->rank, &one, outcome, err);
	const struct sl_catalogue *cat = &env->catalogue;
	int zones[SL_MAX_SEARCH_ZONES];
	int zone_count = sl_pool_zones(pool, zones, SL_MAX_SEARCH_ZONES);
	if (zone_count > SL_MAX_SEARCH_ZONES)
		rc = sl_err_set(err, SL_EINPUT, "the exhaustive search takes pools of at most %d zones",
				SL_MAX_SEARCH_ZONES);
	if (rc)
		zone_count = 0;
	long long gpus = sl_pool_total(pool);
	int L = env->num_layers;
	int max_stages = req->max_stages > 0 && req->max_stages < L ? req->max_stages : L;
	/* every order of the zones (the canonical order ranks zones by it): they start sorted by
	 * index, the first of n! permutations */
	int orders = 1;
	for (int i = 2; i <= zone_count; i++)
		orders *= i;
	for (int order = 0; order < orders && !rc; order++) {
		if (order > 0)
			sl_zone_next_permutation(zones, zone_count);
		b->option_count = 0;
		for (int zi = 0; zi < zone_count; zi++)
			for (int g = 0, z = zones[zi]; g < cat->gpu_count; g++)
				for (int tp = 1; tp <= sl_sim_gpus_per_node(env, g); tp *= 2)
					if (pool->counts[g][z] >= tp)
						b->options[b->option_count++] =
							(struct option){(short)g, (short)z, (short)tp};
		for (int mbs = 1; !rc && mbs <= b->global_batch && mbs <= 1024 &&
				  b->global_batch % mbs == 0; mbs *= 2) {
			if (b->only && b->only->micro_batch != mbs)
				continue;
			struct partition_ctx ctx = {b, mbs, gpus};
			for (int P = 1; P <= max_stages && P <= gpus && !rc; P++)
				rc = sl_partition_each(L, P, visit_partition, &ctx);
			if (!rc)
				rc = b->rc;
		}
	}
	outcome->plans_simulated = b->simulated;
	sl_plan_free(&b->plan);
	free(b);
	return rc;
}
