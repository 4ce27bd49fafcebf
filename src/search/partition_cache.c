/* A search state's kept layer partitions (partition_cache.h): an open-addressing table of keys,
 * each pointing at its partitions' stage boundaries in one growing array. */
#include <stdlib.h>
#include <string.h>

#include "search/partition_cache.h"

/* Past this many keys the table stops taking more (probes stay short). */
#define MOST_KEYS (SL_PARTITION_CACHE_SLOTS * 3 / 4)

struct slot {
	struct sl_partition_key key;
	int used;
	int count;        /* partitions */
	size_t offset;    /* into firsts: count runs of num_stages + 1 boundaries */
};

struct sl_partition_cache {
	struct slot slots[SL_PARTITION_CACHE_SLOTS];
	int keys;
	int *firsts;
	size_t firsts_used, firsts_capacity;
};

struct sl_partition_cache *sl_partition_cache_new(void)
{
	return calloc(1, sizeof(struct sl_partition_cache));
}

void sl_partition_cache_free(struct sl_partition_cache *cache)
{
	if (!cache)
		return;
	free(cache->firsts);
	free(cache);
}

static int same_key(const struct sl_partition_key *a, const struct sl_partition_key *b)
{
	return a->env_serial == b->env_serial && a->cost_model == b->cost_model &&
	       a->micro_batch == b->micro_batch && a->num_stages == b->num_stages &&
	       a->types == b->types;
}

static unsigned first_slot(const struct sl_partition_key *key)
{
	unsigned long long h = key->env_serial * 0x9E3779B97F4A7C15ull;
	h ^= (unsigned long long)key->cost_model + 0x7F4A7C15ull * (unsigned long long)key->micro_batch;
	h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
	h ^= (unsigned long long)key->num_stages * 0x94D049BB133111EBull + key->types;
	h ^= h >> 31;
	return (unsigned)(h % SL_PARTITION_CACHE_SLOTS);
}

/* The slot holding key, or the empty slot where it would go. */
static struct slot *find(const struct sl_partition_cache *cache, const struct sl_partition_key *key)
{
	unsigned i = first_slot(key);
	for (;;) {
		const struct slot *s = &cache->slots[i];
		if (!s->used || same_key(&s->key, key))
			return (struct slot *)s;
		i = (i + 1) % SL_PARTITION_CACHE_SLOTS;
	}
}

int sl_partition_cache_get(const struct sl_partition_cache *cache,
			   const struct sl_partition_key *key, struct sl_partition *out,
			   int max_out)
{
	if (!cache)
		return -1;
	const struct slot *s = find(cache, key);
	if (!s->used)
		return -1;
	int P = key->num_stages, n = s->count < max_out ? s->count : max_out;
	const int *firsts = cache->firsts + s->offset;
	for (int i = 0; i < n; i++) {
		out[i].num_stages = P;
		memcpy(out[i].first, firsts + (size_t)i * (size_t)(P + 1), sizeof(int) * (size_t)(P + 1));
	}
	return n;
}

void sl_partition_cache_put(struct sl_partition_cache *cache, const struct sl_partition_key *key,
			    const struct sl_partition *parts, int n)
{
	if (!cache || cache->keys >= MOST_KEYS)
		return;
	struct slot *s = find(cache, key);
	if (s->used)
		return;
	size_t per = (size_t)key->num_stages + 1, need = cache->firsts_used + per * (size_t)n;
	if (need > cache->firsts_capacity) {
		size_t capacity = cache->firsts_capacity ? 2 * cache->firsts_capacity : 4096;
		while (capacity < need)
			capacity *= 2;
		int *grown = realloc(cache->firsts, sizeof(int) * capacity);
		if (!grown)
			return; /* not kept: the next search computes it again */
		cache->firsts = grown;
		cache->firsts_capacity = capacity;
	}
	for (int i = 0; i < n; i++)
		memcpy(cache->firsts + cache->firsts_used + (size_t)i * per, parts[i].first,
		       sizeof(int) * per);
	*s = (struct slot){.key = *key, .used = 1, .count = n, .offset = cache->firsts_used};
	cache->firsts_used = need;
	cache->keys++;
}
