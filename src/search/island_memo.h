/* The island searches of one planning (islands_search.c), kept so that an island another one
 * stands for is not searched again: one asked the same (request, batch, plans kept, shape) on
 * the same GPUs, whose outcome is copied, or on the same GPUs of one zone in another zone the
 * simulator cannot tell apart from it (search/zone_equivalence.h), whose plans are copied with
 * the zone renamed and simulated again there (kept only if their figures are the same; else the
 * island is searched). The oracle keeps none: it searches every island itself. */
#ifndef SL_SEARCH_ISLAND_MEMO_H
#define SL_SEARCH_ISLAND_MEMO_H

#include "search/search.h"

/* The GPUs of an island's pool, compactly: its zones with GPUs (in index order) and the count of
 * each GPU type in each; zone_count -1: stands for nothing. */
struct sl_island_pool_key {
	int zone_count;
	int zones[SL_MAX_SEARCH_ZONES];
	int counts[SL_MAX_SEARCH_ZONES][SL_MAX_GPU_TYPES];
};

/* What one island's search is asked: the fields its request can differ in (the requests all
 * derive from the planner's own and differ at most in max_stages, the surveys'), the batch, the
 * plans kept, the shape, and the pool's GPUs. */
struct sl_island_task_key {
	int max_stages;
	long long global_batch;
	int top_k;
	int has_shape;
	struct sl_search_shape shape;
	struct sl_island_pool_key pool;
};

struct sl_island_searched {
	struct sl_island_task_key task;
	struct sl_search_outcome out;  /* owned */
};

struct sl_island_memo {
	const struct sl_sim_env *env;  /* the islands' searches' environment */
	int enabled;                   /* 0 for the oracle */
	struct sl_island_searched *done;
	int count, capacity;
	long long made, reused;        /* island searches made, and not made (stood for) */
};

void sl_island_memo_free(struct sl_island_memo *memo);

/* The key of a search of pool for req (sub-request fields as given), types: the catalogue's. */
void sl_island_memo_key(const struct sl_pool *pool, const struct sl_search_request *req,
			long long global_batch, int top_k, const struct sl_search_shape *shape,
			int types, struct sl_island_task_key *key);

/* Whether the search done stands for want: -1 no; else the zone that done's one zone is renamed
 * to (done's own zone when the pools are the same). */
int sl_island_memo_stands_for(const struct sl_island_memo *memo, enum sl_cost_model cm,
			      const struct sl_island_task_key *done,
			      const struct sl_island_task_key *want);

/* Keeps a copy of out (the outcome of the search sub, key) in the memo, as memo->done[count]. */
int sl_island_memo_add(struct sl_island_memo *memo, const struct sl_island_task_key *key,
		       const struct sl_search_request *sub, const struct sl_search_outcome *out,
		       struct sl_err *err);

/* out (initialised) from done's outcome for the search sub: the same plans, their zone renamed
 * to zone and each simulated again there (adding to *simulated). *equal is 0 (and out empty)
 * when some plan's figures there differ from done's: the zones were not interchangeable after
 * all, and the island must be searched. */
int sl_island_memo_copy(const struct sl_island_memo *memo, const struct sl_island_searched *done,
			int zone, const struct sl_search_request *sub, struct sl_search_outcome *out,
			long long *simulated, int *equal, struct sl_err *err);

#endif
