/* Point-to-point transfer times kept: see transfer_cache.h. Direct-mapped: a slot holds the last
 * triple that hashed to it, so a collision costs a new timing, never a wrong one. */
#include "sim/transfer_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/internal.h"

#define TRANSFER_CACHE_SLOTS 2048 /* a power of two */

struct transfer_slot {
	struct sl_replica src, dst;
	double bytes;
	struct sl_sim_transfer t;
	int used;
};

struct sl_sim_transfer_cache {
	unsigned long long env_serial; /* whose times the slots hold (sl_sim_env.serial; 0: none) */
	int clean;                    /* no slot used yet: nothing to empty */
	struct transfer_slot slots[TRANSFER_CACHE_SLOTS];
};

struct sl_sim_transfer_cache *sl_sim_transfer_cache_new(void)
{
	/* calloc, and emptied by writing only once used: a fresh one's pages are touched only
	 * where slots are filled */
	struct sl_sim_transfer_cache *cache = calloc(1, sizeof(*cache));
	if (cache)
		cache->clean = 1;
	return cache;
}

void sl_sim_transfer_cache_free(struct sl_sim_transfer_cache *cache)
{
	free(cache);
}

static unsigned slot_of(const struct sl_replica *src, const struct sl_replica *dst, double bytes)
{
	uint64_t a, b, c;
	memcpy(&a, src, sizeof(a));
	memcpy(&b, dst, sizeof(b));
	memcpy(&c, &bytes, sizeof(c));
	uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full) ^
		     (c * 0x165667B19E3779F9ull);
	return (unsigned)(h >> 53) & (TRANSFER_CACHE_SLOTS - 1);
}

void sl_sim_p2p_transfer_cached(const struct sl_sim_env *env, struct sl_sim_transfer_cache *cache,
				const struct sl_replica *src, const struct sl_replica *dst,
				double bytes, struct sl_sim_transfer *out)
{
	if (!cache || !env->serial) { /* no cache, or an environment not loaded (no serial) */
		sl_sim_p2p_transfer(env, src, dst, bytes, out);
		return;
	}
	if (cache->env_serial != env->serial) {
		if (!cache->clean)
			memset(cache->slots, 0, sizeof(cache->slots));
		cache->env_serial = env->serial;
	}
	cache->clean = 0;
	struct transfer_slot *s = &cache->slots[slot_of(src, dst, bytes)];
	if (s->used && s->bytes == bytes && !memcmp(&s->src, src, sizeof(*src)) &&
	    !memcmp(&s->dst, dst, sizeof(*dst))) {
		*out = s->t;
		return;
	}
	sl_sim_p2p_transfer(env, src, dst, bytes, out);
	*s = (struct transfer_slot){*src, *dst, bytes, *out, 1};
}
