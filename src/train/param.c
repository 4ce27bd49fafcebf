/* Parameters: description, shard index mapping and deterministic initialisation (param.h). */
#include "train/param.h"

#include <stdio.h>
#include <string.h>

#include "train/rng.h"

void sl_param_describe(struct sl_param *p, const char *name, long long full0, long long full1,
		       int shard_dim, int shard_parts, int tp, int tp_rank)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->ndim = full1 > 0 ? 2 : 1;
	p->full_shape[0] = full0;
	p->full_shape[1] = full1 > 0 ? full1 : 1;
	p->shard_dim = tp > 1 ? shard_dim : -1;
	p->shard_parts = shard_parts > 0 ? shard_parts : 1;
	p->tp = tp > 0 ? tp : 1;
	p->tp_rank = tp_rank;
	p->shape[0] = p->full_shape[0];
	p->shape[1] = p->full_shape[1];
	if (p->shard_dim >= 0) {
		long long part = p->full_shape[p->shard_dim] / p->shard_parts;
		sl_param_shard_range(part, p->tp, tp_rank, &p->shard_start, &p->shard_len);
		p->shape[p->shard_dim] = p->shard_len * p->shard_parts;
	}
	p->numel = p->shape[0] * p->shape[1];
}

void sl_param_shard_range(long long n, int tp, int rank, long long *start, long long *len)
{
	long long a = n * rank / tp, b = n * (rank + 1) / tp;
	*start = a;
	*len = b - a;
}

long long sl_param_full_index(const struct sl_param *p, long long local)
{
	if (p->shard_dim < 0)
		return local;
	long long coord[2] = {local / p->shape[1], local % p->shape[1]};
	int d = p->shard_dim;
	long long part_full = p->full_shape[d] / p->shard_parts;
	long long part = coord[d] / p->shard_len, offset = coord[d] % p->shard_len;
	coord[d] = part * part_full + p->shard_start + offset;
	return coord[0] * p->full_shape[1] + coord[1];
}

void sl_param_init(struct sl_param *p, uint64_t seed)
{
	if (p->init_std <= 0.0f) {
		for (long long i = 0; i < p->numel; i++)
			p->value[i] = p->init_value;
		return;
	}
	uint64_t key = sl_rng_stream_key(seed, p->name);
	float std = p->init_std;
	float *value = p->value;
#pragma omp parallel for schedule(static)
	for (long long i = 0; i < p->numel; i++)
		value[i] = std * sl_rng_normal_at(key, (uint64_t)sl_param_full_index(p, i));
}
