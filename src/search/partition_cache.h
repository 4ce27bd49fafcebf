/* The layer partitions a search state has computed, kept for its later work items and searches.
 *
 * sl_partition_candidates (partition.h) depends on the model's layers, the depth and the per-
 * layer times of the GPU types searched; those times depend on the environment, the cost model,
 * the micro-batch size and which types the zones searched hold. A search asks the same question
 * for every zone set and fill order, and the island search asks it again in each island's
 * searches: about 7% of a `--sync auto` plan's instructions went to answering it anew. A cache
 * is keyed by exactly those inputs (the environment by its load serial, sim.h), so what it
 * returns is what sl_partition_candidates would.
 *
 * One cache belongs to one search state (one thread at a time); it keeps at most
 * SL_PARTITION_CACHE_SLOTS answers and stops adding when full (later ones are computed anew).
 */
#ifndef SL_SEARCH_PARTITION_CACHE_H
#define SL_SEARCH_PARTITION_CACHE_H

#include "search/partition.h"

#define SL_PARTITION_CACHE_SLOTS 2048

struct sl_partition_key {
	unsigned long long env_serial; /* sl_sim_env.serial */
	int cost_model;
	int micro_batch;
	int num_stages;
	unsigned types;                /* bit g: GPU type g is in the zones searched */
};

struct sl_partition_cache;

/* NULL when out of memory (the search then computes every answer). */
struct sl_partition_cache *sl_partition_cache_new(void);
void sl_partition_cache_free(struct sl_partition_cache *cache);

/* The partitions kept under key into out (at most max_out) and their count; -1 when none are. */
int sl_partition_cache_get(const struct sl_partition_cache *cache,
			   const struct sl_partition_key *key, struct sl_partition *out,
			   int max_out);

/* Keeps parts[0..n-1] under key (a key already kept, or a full cache, keeps nothing). */
void sl_partition_cache_put(struct sl_partition_cache *cache, const struct sl_partition_key *key,
			    const struct sl_partition *parts, int n);

#endif
