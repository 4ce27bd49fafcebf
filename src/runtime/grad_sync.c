/* Gradient synchronisation (grad_sync.h).
 * Invariants: every member of a group walks the same parameter list in the same order (the
 * replicas of a stage hold the same layers, hence the same names in the same order; the
 * embedding group's members each hold exactly one token table), so bucket boundaries agree on
 * every member without being exchanged. */
#include "runtime/grad_sync.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/cpu/kernels.h"
#include "train/gpt_layers.h"
#include "runtime/zero.h"

int sl_grad_sync_param_is_sharded(const struct sl_param *p)
{
	return p->tp > 1 && p->shard_dim >= 0;
}

static long long whole_numel(const struct sl_param *p)
{
	return p->full_shape[0] * p->full_shape[1];
}

static int is_tied(const struct sl_grad_sync *s, const struct sl_param *p)
{
	return s->num_stages > 1 && !strcmp(p->name, SL_TIED_EMBEDDING_NAME);
}

int sl_grad_sync_init(struct sl_grad_sync *s, struct sl_comm *comm,
		      const struct sl_groups *groups, const struct sl_role_table *table,
		      struct sl_param *const *params, int count, struct sl_err *err)
{
	memset(s, 0, sizeof(*s));
	s->comm = comm;
	s->groups = groups;
	s->me = table->roles[comm->rank];
	s->num_stages = table->num_stages;
	/* SL_GRAD_BUCKET_FLOATS, or the largest whole tensor when whole tensors are reduced and it
	 * is larger. Never smaller for a small model: the simulator's memory model
	 * (sim/replay_memory.c) and every measured run it is validated on hold the bucket at this
	 * size, zeroed and resident on every rank (a bucket sized to a small model's gradients
	 * left gpt2-tiny runs 13 MB under their prediction; tests/unit/test_sim_replay.c). */
	size_t need = SL_GRAD_BUCKET_FLOATS;
	for (int i = 0; i < count; i++)
		if ((size_t)whole_numel(params[i]) > need)
			need = (size_t)whole_numel(params[i]);
	s->bucket_floats = need;
	s->bucket = sl_alloc_floats(need);
	if (!s->bucket)
		return sl_err_set(err, SL_ENOMEM, "cannot allocate a %.1f MiB gradient bucket",
				  (double)need * 4 / (1 << 20));
	return 0;
}

void sl_grad_sync_free(struct sl_grad_sync *s)
{
	free(s->bucket);
	memset(s, 0, sizeof(*s));
}

/* Shard-wise: packs consecutive gradients into the bucket, all-reduces, unpacks. */
static int sync_shards(struct sl_grad_sync *s, const struct sl_comm_group *g,
		       struct sl_param *const *list, int n, struct sl_err *err)
{
	int i = 0;
	while (i < n) {
		if ((size_t)list[i]->numel >= s->bucket_floats) {
			int rc = sl_comm_allreduce(s->comm, g, list[i]->grad, list[i]->numel,
						   SL_COMM_FLOAT, SL_COMM_SUM, err);
			if (rc)
				return rc;
			i++;
			continue;
		}
		int first = i;
		size_t used = 0;
		while (i < n && used + (size_t)list[i]->numel <= s->bucket_floats) {
			memcpy(s->bucket + used, list[i]->grad, (size_t)list[i]->numel * sizeof(float));
			used += (size_t)list[i]->numel;
			i++;
		}
		int rc = sl_comm_allreduce(s->comm, g, s->bucket, (long long)used, SL_COMM_FLOAT,
					   SL_COMM_SUM, err);
		if (rc)
			return rc;
		used = 0;
		for (int k = first; k < i; k++) {
			memcpy(list[k]->grad, s->bucket + used, (size_t)list[k]->numel * sizeof(float));
			used += (size_t)list[k]->numel;
		}
	}
	return 0;
}

static void scatter_whole(const struct sl_param *p, float *whole, int contributes)
{
	long long n = whole_numel(p);
	memset(whole, 0, (size_t)n * sizeof(float));
	if (!contributes)
		return;
	if (!sl_grad_sync_param_is_sharded(p)) {
		memcpy(whole, p->grad, (size_t)p->numel * sizeof(float));
		return;
	}
	for (long long i = 0; i < p->numel; i++)
		whole[sl_param_full_index(p, i)] = p->grad[i];
}

static void gather_whole(struct sl_param *p, const float *whole)
{
	if (!sl_grad_sync_param_is_sharded(p)) {
		memcpy(p->grad, whole, (size_t)p->numel * sizeof(float));
		return;
	}
	for (long long i = 0; i < p->numel; i++)
		p->grad[i] = whole[sl_param_full_index(p, i)];
}

/* Whole-tensor: each member contributes its shard at whole-tensor indices. */
static int sync_whole(struct sl_grad_sync *s, const struct sl_comm_group *g,
		      struct sl_param *const *list, int n, struct sl_err *err)
{
	int i = 0;
	while (i < n) {
		int first = i;
		size_t used = 0;
		while (i < n && used + (size_t)whole_numel(list[i]) <= s->bucket_floats) {
			const struct sl_param *p = list[i];
			scatter_whole(p, s->bucket + used,
				      sl_grad_sync_param_is_sharded(p) || s->me.tp_rank == 0);
			used += (size_t)whole_numel(p);
			i++;
		}
		int rc = sl_comm_allreduce(s->comm, g, s->bucket, (long long)used, SL_COMM_FLOAT,
					   SL_COMM_SUM, err);
		if (rc)
			return rc;
		used = 0;
		for (int k = first; k < i; k++) {
			gather_whole(list[k], s->bucket + used);
			used += (size_t)whole_numel(list[k]);
		}
	}
	return 0;
}

int sl_grad_sync_run(struct sl_grad_sync *s, struct sl_param *const *params, int count,
		     struct sl_err *err)
{
	struct sl_param **stage = malloc((size_t)(count ? count : 1) * sizeof(*stage));
	if (!stage)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	struct sl_param *tied = NULL;
	int n = 0;
	for (int i = 0; i < count; i++) {
		if (is_tied(s, params[i]))
			tied = params[i];
		else if (!s->zero || !sl_zero_holds(s->zero, params[i]))
			stage[n++] = params[i];
	}
	const struct sl_groups *g = s->groups;
	int rc = 0;
	if (s->zero)
		rc = sl_zero_reduce_grads(s->zero, err);
	if (!rc && n > 0 && g->stage_sync.size > 1)
		rc = g->stage_sync_uniform ? sync_shards(s, &g->stage_sync, stage, n, err)
					   : sync_whole(s, &g->stage_sync, stage, n, err);
	free(stage);
	if (!rc && tied && g->embedding.size > 1)
		rc = g->embedding_uniform ? sync_shards(s, &g->embedding, &tied, 1, err)
					  : sync_whole(s, &g->embedding, &tied, 1, err);
	if (rc)
		return sl_err_prefix(err, "gradient synchronisation");
	return 0;
}

int sl_grad_sync_norm(struct sl_grad_sync *s, struct sl_param *const *params, int count,
		      double *norm, struct sl_err *err)
{
	double sum = s->zero ? sl_zero_grad_sumsq(s->zero) : 0.0;
	if (s->me.island_pipeline == 0) /* the island's first pipeline counts its shards */
		for (int i = 0; i < count; i++) {
			const struct sl_param *p = params[i];
			if (s->zero && sl_zero_holds(s->zero, p))
				continue; /* counted in the pieces */
			if (!sl_grad_sync_param_is_sharded(p) && s->me.tp_rank != 0)
				continue;
			if (is_tied(s, p) && s->me.stage != 0)
				continue; /* the head's copy: the embedding's table counts */
			sum += sl_sum_squares(p->grad, (long)p->numel);
		}
	int rc = sl_comm_allreduce(s->comm, &s->groups->island, &sum, 1, SL_COMM_DOUBLE, SL_COMM_SUM,
				   err);
	if (rc)
		return sl_err_prefix(err, "gradient norm");
	*norm = sqrt(sum);
	return 0;
}
