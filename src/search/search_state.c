/* A search thread's state made and released (search_state.h), with spares kept for the next
 * search. A state holds about 1.5 MB of scratch (the struct's per-shape tables, the replica
 * assignment, the memory memo); the island search runs a hundred small searches a plan, and
 * allocating those pages and faulting them in again took more of their time than the search
 * itself. Released states keep their buffers on a short list; a state taken from it is reset to
 * what a fresh one is (zeroed but for its scratch tables and the sync memo, whose stamps keep
 * counting: search_state.h), so nothing of a former search leaks into the next. Invariant: the list
 * holds at most SPARE_STATES states, each owning its buffers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "search/memory_dimensions.h"
#include "search/search_state.h"
#include "sim/transfer_cache.h"

#define SPARE_STATES 16

static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct search_state *spare[SPARE_STATES];
static int spare_count;

static void state_destroy(struct search_state *st)
{
	if (!st)
		return;
	sl_plan_free(&st->plan);
	sl_plan_free(&st->uneven_plan);
	free(st->enumeration);
	free(st->layer_time_storage);
	free(st->partitions);
	free(st->partition_scratch);
	sl_partition_cache_free(st->partition_cache);
	sl_options_memo_free(st->options_memo);
	free(st->assigned);
	free(st->sync_memo);
	sl_sim_transfer_cache_free(st->transfer_cache);
	free(st->kind_mem);
	free(st);
}

void sl_search_state_release(struct search_state *st)
{
	if (!st)
		return;
	sl_plan_free(&st->plan);
	sl_plan_free(&st->uneven_plan);
	pthread_mutex_lock(&spare_lock);
	int kept = spare_count < SPARE_STATES;
	if (kept)
		spare[spare_count++] = st;
	pthread_mutex_unlock(&spare_lock);
	if (!kept)
		state_destroy(st);
}

/* A spare state reset to a fresh one's contents but for its scratch (search_state.h), its
 * buffers kept (layer times regrown for a model with more layers); NULL when there is none or
 * it could not grow. */
static struct search_state *spare_state(int num_layers)
{
	pthread_mutex_lock(&spare_lock);
	struct search_state *st = spare_count ? spare[--spare_count] : NULL;
	pthread_mutex_unlock(&spare_lock);
	if (!st)
		return NULL;
	struct search_state kept = *st;
	size_t layer_times = (size_t)num_layers * SL_MAX_GPU_TYPES;
	if (layer_times > kept.layer_time_capacity) {
		double *grown = realloc(kept.layer_time_storage, sizeof(double) * layer_times);
		if (!grown) {
			state_destroy(st);
			return NULL;
		}
		kept.layer_time_storage = grown;
		kept.layer_time_capacity = layer_times;
	}
	memset(st, 0, SEARCH_STATE_RESET_BYTES);
	st->enumeration = kept.enumeration;
	st->layer_time_storage = kept.layer_time_storage;
	st->layer_time_capacity = kept.layer_time_capacity;
	st->partitions = kept.partitions;
	st->partition_scratch = kept.partition_scratch;
	st->partition_cache = kept.partition_cache; /* keyed by the environment's serial */
	st->options_memo = kept.options_memo;       /* likewise */
	st->assigned = kept.assigned;
	st->sync_memo = kept.sync_memo;
	st->transfer_cache = kept.transfer_cache; /* it empties itself for another environment */
	st->kind_mem = kept.kind_mem;
	return st;
}

static struct search_state *fresh_state(int num_layers)
{
	/* not calloc: glibc may serve it from the heap and zero all of it, faulting in pages no
	 * search touches; only what search_state.h says a fresh state needs zeroed is */
	struct search_state *st = malloc(sizeof(*st));
	if (!st)
		return NULL;
	memset(st, 0, SEARCH_STATE_STAMPS_END);
	st->layer_time_capacity = (size_t)num_layers * SL_MAX_GPU_TYPES;
	st->enumeration = sl_search_enumeration_new();
	st->layer_time_storage = malloc(sizeof(double) * st->layer_time_capacity);
	st->partitions = malloc(sizeof(*st->partitions) * SL_PARTITION_MAX_CANDIDATES);
	st->partition_scratch = malloc(sizeof(*st->partition_scratch));
	st->assigned = malloc(sizeof(*st->assigned));
	st->sync_memo = calloc(SYNC_MEMO_SLOTS, sizeof(*st->sync_memo));
	st->kind_mem = malloc(sizeof(*st->kind_mem) * SL_PLAN_MAX_STAGES);
	st->transfer_cache = sl_sim_transfer_cache_new(); /* optional: NULL only slows bounds */
	st->partition_cache = sl_partition_cache_new();   /* optional too */
	st->options_memo = sl_options_memo_new();         /* and this */
	if (!st->enumeration || !st->layer_time_storage || !st->partitions ||
	    !st->partition_scratch || !st->assigned ||
	    !st->sync_memo || !st->kind_mem) {
		state_destroy(st);
		return NULL;
	}
	return st;
}

struct search_state *sl_search_state_new(const struct sl_sim_env *env, const struct sl_pool *pool,
					 const struct sl_search_request *req,
					 struct sl_search_outcome *outcome, struct sl_err *err)
{
	struct search_state *st = spare_state(env->num_layers);
	if (!st)
		st = fresh_state(env->num_layers);
	if (!st) {
		sl_err_set(err, SL_ENOMEM, "out of memory for the search state");
		return NULL;
	}
	st->env = env;
	st->req = req;
	st->enumerate_max = req->structured_only ? 0 : SL_SEARCH_ENUMERATE_MAX;
	st->cm = req->cost_model;
	st->options_on = sl_search_options_on(req);
	st->bounds_unsound = sl_sim_replay_model_possible(env, st->cm);
	st->global_batch = req->global_batch > 0 ? req->global_batch
						 : env->model.default_global_batch;
	sl_plan_init(&st->plan);
	sl_plan_init(&st->uneven_plan);
	const struct sl_catalogue *cat = &env->catalogue;
	/* a type's least price over the pool's zones: the bounds that read it stay lower bounds,
	 * and where every zone costs the same (the SOSP'25 artifact's) it is that price */
	int zones[SL_MAX_SEARCH_ZONES];
	int zone_count = sl_pool_zones(pool, zones, SL_MAX_SEARCH_ZONES);
	for (int g = 0; g < cat->gpu_count; g++) {
		st->assign.usd_per_hour[g] = sl_sim_gpu_usd_per_hour(env, st->cm, g, -1);
		for (int i = 0; i < zone_count && i < SL_MAX_SEARCH_ZONES; i++) {
			double p = sl_sim_gpu_usd_per_hour(env, st->cm, g, zones[i]);
			if (i == 0 || p < st->assign.usd_per_hour[g])
				st->assign.usd_per_hour[g] = p;
		}
	}
	st->assign.gpu_count = cat->gpu_count;
	st->assign.zone_count = cat->zone_count;
	st->assign.prefer_cost = req->objective == SL_OBJECTIVE_COST;
	if (sl_ranking_init(&st->rank, req, outcome, err)) {
		sl_search_state_release(st);
		return NULL;
	}
	return st;
}

