/* Point-to-point transfer times kept for the next asker: the planner bounds thousands of plans
 * whose pipelines repeat the same few (sender, receiver, bytes) triples, and timing each anew
 * (two network-fit lookups and a logarithm) was a third of its work on a 640-GPU pool of five
 * zones (Fig. 10). Values are exactly sl_sim_p2p_transfer's; a cache belongs to one thread and
 * holds the times of one environment load (sl_sim_env.serial: a copy of the struct shares them,
 * a new load at a reused address does not); it empties itself when asked about another. */
#ifndef SL_SIM_TRANSFER_CACHE_H
#define SL_SIM_TRANSFER_CACHE_H

#include "plan/plan.h"

struct sl_sim_env;
struct sl_sim_transfer;
struct sl_sim_transfer_cache;

/* An empty cache, or NULL when out of memory (callers then time every transfer anew). */
struct sl_sim_transfer_cache *sl_sim_transfer_cache_new(void);
void sl_sim_transfer_cache_free(struct sl_sim_transfer_cache *cache);

/* sl_sim_p2p_transfer(env, src, dst, bytes, out), from cache when it holds it (cache may be
 * NULL: then timed anew). */
void sl_sim_p2p_transfer_cached(const struct sl_sim_env *env, struct sl_sim_transfer_cache *cache,
				const struct sl_replica *src, const struct sl_replica *dst,
				double bytes, struct sl_sim_transfer *out);

#endif
