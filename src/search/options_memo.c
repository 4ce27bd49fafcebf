/* A search state's kept answers of options_change_no_shape (options_memo.h): an open-addressing
 * table that doubles when three quarters full. */
#include <stdlib.h>

#include "search/options_memo.h"

struct slot {
	struct sl_options_key key;
	signed char used, answer;
};

struct sl_options_memo {
	struct slot *slots;
	unsigned capacity; /* a power of two */
	unsigned used;
};

struct sl_options_memo *sl_options_memo_new(void)
{
	struct sl_options_memo *memo = calloc(1, sizeof(*memo));
	if (!memo)
		return NULL;
	memo->capacity = 1024;
	memo->slots = calloc(memo->capacity, sizeof(*memo->slots));
	if (!memo->slots) {
		free(memo);
		return NULL;
	}
	return memo;
}

void sl_options_memo_free(struct sl_options_memo *memo)
{
	if (!memo)
		return;
	free(memo->slots);
	free(memo);
}

static int same_key(const struct sl_options_key *a, const struct sl_options_key *b)
{
	return a->env_serial == b->env_serial && a->reserve_param_copies == b->reserve_param_copies &&
	       a->kinds == b->kinds && a->cost_model == b->cost_model &&
	       a->micro_batch == b->micro_batch && a->num_stages == b->num_stages &&
	       a->partition_index == b->partition_index && a->types == b->types;
}

static unsigned long long mix(unsigned long long h, unsigned long long v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	return h * 0xBF58476D1CE4E5B9ull;
}

static unsigned long long hash_of(const struct sl_options_key *key)
{
	unsigned long long h = mix(key->env_serial, key->kinds);
	h = mix(h, (unsigned long long)(key->reserve_param_copies * 1024.0));
	h = mix(h, ((unsigned long long)(unsigned)key->cost_model << 32) | (unsigned)key->micro_batch);
	h = mix(h, ((unsigned long long)(unsigned)key->num_stages << 32) |
			   (unsigned)key->partition_index);
	return mix(h, key->types) ^ (h >> 29);
}

/* The slot holding key, or the empty one where it would go. */
static struct slot *find(struct slot *slots, unsigned capacity, const struct sl_options_key *key)
{
	unsigned i = (unsigned)hash_of(key) & (capacity - 1);
	while (slots[i].used && !same_key(&slots[i].key, key))
		i = (i + 1) & (capacity - 1);
	return &slots[i];
}

int sl_options_memo_get(const struct sl_options_memo *memo, const struct sl_options_key *key)
{
	if (!memo)
		return -1;
	const struct slot *s = find(memo->slots, memo->capacity, key);
	return s->used ? s->answer : -1;
}

void sl_options_memo_put(struct sl_options_memo *memo, const struct sl_options_key *key,
			 int answer)
{
	if (!memo)
		return;
	if (4 * (memo->used + 1) > 3 * memo->capacity) {
		unsigned capacity = 2 * memo->capacity;
		struct slot *grown = calloc(capacity, sizeof(*grown));
		if (!grown)
			return; /* not kept: answered again next time */
		for (unsigned i = 0; i < memo->capacity; i++)
			if (memo->slots[i].used)
				*find(grown, capacity, &memo->slots[i].key) = memo->slots[i];
		free(memo->slots);
		memo->slots = grown;
		memo->capacity = capacity;
	}
	struct slot *s = find(memo->slots, memo->capacity, key);
	if (s->used)
		return;
	*s = (struct slot){.key = *key, .used = 1, .answer = (signed char)(answer != 0)};
	memo->used++;
}
