/* The sharded optimizer (zero.h).
 * Invariants: every member of the group holds the same parameter names in the same order (the
 * replicas of a stage hold the same layers), so the view, the members' ranges and the bucket
 * boundaries agree on every member without being exchanged; the members' ranges partition the
 * view, so in a bucket the counts sum to the bucket's length and member i's part starts at
 * max(start_i, b0) - b0. */
#include "runtime/zero.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/grad_sync.h"
#include "train/cpu/kernels.h"
#include "train/gpt_layers.h"

enum { ARR_VALUE, ARR_GRAD, ARR_M, ARR_V };

static float *array_of(struct sl_param *p, int which)
{
	switch (which) {
	case ARR_VALUE: return p->value;
	case ARR_GRAD: return p->grad;
	case ARR_M: return p->exp_avg;
	default: return p->exp_avg_sq;
	}
}

static long long view_numel(const struct sl_zero *z, const struct sl_param *p)
{
	return z->uniform ? p->numel : p->full_shape[0] * p->full_shape[1];
}

/* The view range of member i: [floor(i W / G), floor((i + 1) W / G)). */
static void member_range(const struct sl_zero *z, int i, long long *start, long long *end)
{
	long long W = z->view_numel, G = z->group->size;
	*start = (long long)((__int128)i * W / G);
	*end = (long long)((__int128)(i + 1) * W / G);
}

static long long max_ll(long long a, long long b) { return a > b ? a : b; }
static long long min_ll(long long a, long long b) { return a < b ? a : b; }

/* counts[] of the bucket [b0, b1) and this member's displacement in it. */
static long long bucket_counts(struct sl_zero *z, long long b0, long long b1)
{
	long long mine = 0;
	for (int i = 0; i < z->group->size; i++) {
		long long s, e;
		member_range(z, i, &s, &e);
		long long lo = max_ll(s, b0), hi = min_ll(e, b1);
		z->counts[i] = hi > lo ? (int)(hi - lo) : 0;
		if (i == z->group->rank)
			mine = max_ll(s, b0) - b0;
	}
	return mine;
}

/* Mixed view: whether this rank adds p's local values (replicated tensors: TP rank 0 only). */
static int adds(const struct sl_zero *z, const struct sl_param *p)
{
	return z->uniform || sl_grad_sync_param_is_sharded(p) || z->me.tp_rank == 0;
}

/* Copies between the bucket [b0, b1) of the view and the held parameters' local arrays:
 * to_bucket writes this rank's contribution (zeros elsewhere; nothing when !contributes),
 * otherwise reads every local element that lies in the bucket. */
static void transfer(struct sl_zero *z, long long b0, long long b1, int which, int to_bucket,
		     int contributes)
{
	float *bucket = z->bucket;
	if (to_bucket)
		memset(bucket, 0, (size_t)(b1 - b0) * sizeof(float));
	if (to_bucket && !contributes)
		return;
	for (int k = 0; k < z->held_count; k++) {
		struct sl_param *p = z->held[k];
		long long vs = z->view_start[k], ve = vs + view_numel(z, p);
		long long lo = max_ll(vs, b0), hi = min_ll(ve, b1);
		if (lo >= hi || (to_bucket && !adds(z, p)))
			continue;
		float *local = array_of(p, which);
		if (z->uniform || !sl_grad_sync_param_is_sharded(p)) {
			/* the local array is the view's range of p, element for element */
			if (to_bucket)
				memcpy(bucket + (lo - b0), local + (lo - vs),
				       (size_t)(hi - lo) * sizeof(float));
			else
				memcpy(local + (lo - vs), bucket + (lo - b0),
				       (size_t)(hi - lo) * sizeof(float));
			continue;
		}
		for (long long i = 0; i < p->numel; i++) {
			long long at = vs + sl_param_full_index(p, i);
			if (at < lo || at >= hi)
				continue;
			if (to_bucket)
				bucket[at - b0] = local[i];
			else
				local[i] = bucket[at - b0];
		}
	}
}

int sl_zero_init(struct sl_zero *z, struct sl_comm *comm, const struct sl_comm_group *group,
		 int uniform, const struct sl_role_table *table, struct sl_param *const *params,
		 int count, float *bucket, long long bucket_floats, struct sl_err *err)
{
	memset(z, 0, sizeof(*z));
	z->comm = comm;
	z->group = group;
	z->uniform = uniform;
	z->me = table->roles[comm->rank];
	z->bucket = bucket;
	/* MPI's reduce-scatter and all-gather allocate temporaries about the size of the call:
	 * smaller calls keep those from eating what sharding saves */
	z->bucket_floats = bucket_floats < SL_ZERO_BUCKET_FLOATS ? bucket_floats
								 : SL_ZERO_BUCKET_FLOATS;
	z->held = calloc((size_t)(count ? count : 1), sizeof(*z->held));
	z->view_start = calloc((size_t)(count ? count : 1), sizeof(*z->view_start));
	z->counts = calloc((size_t)group->size, sizeof(*z->counts));
	if (!z->held || !z->view_start || !z->counts)
		goto oom;
	for (int i = 0; i < count; i++) {
		struct sl_param *p = params[i];
		if (table->num_stages > 1 && !strcmp(p->name, SL_TIED_EMBEDDING_NAME))
			continue;
		if (p->exp_avg)
			return sl_err_set(err, SL_EINPUT, "zero: '%s' already has moments in its layer",
					  p->name);
		z->view_start[z->held_count] = z->view_numel;
		z->held[z->held_count++] = p;
		z->view_numel += view_numel(z, p);
	}
	long long end;
	member_range(z, group->rank, &z->own_start, &end);
	z->own_len = end - z->own_start;
	size_t n = (size_t)z->own_len;
	int parts = uniform ? 2 : 4;
	z->pieces = sl_alloc_floats((size_t)parts * (n ? n : 1));
	if (!z->pieces)
		goto oom;
	z->m = z->pieces;
	z->v = z->m + n;
	/* uniform: the piece's values and summed gradients live in the local arrays */
	z->grad = uniform ? NULL : z->v + n;
	z->master = uniform ? NULL : z->grad + n;
	/* segments: this member's range cut at parameter boundaries */
	z->segs = calloc((size_t)(z->held_count ? z->held_count : 1), sizeof(*z->segs));
	if (!z->segs)
		goto oom;
	for (int k = 0; k < z->held_count; k++) {
		long long vs = z->view_start[k], ve = vs + view_numel(z, z->held[k]);
		long long lo = max_ll(vs, z->own_start), hi = min_ll(ve, end);
		if (lo >= hi)
			continue;
		z->segs[z->seg_count++] = (struct sl_zero_segment){
			.param = k, .piece_off = lo - z->own_start, .len = hi - lo,
			.local_off = lo - vs};
	}
	return 0;
oom:
	sl_zero_free(z);
	return sl_err_set(err, SL_ENOMEM, "cannot allocate the sharded optimizer state");
}

void sl_zero_free(struct sl_zero *z)
{
	sl_zero_release(z);
	free(z->held);
	free(z->view_start);
	free(z->counts);
	free(z->pieces);
	free(z->segs);
	memset(z, 0, sizeof(*z));
}

int sl_zero_holds(const struct sl_zero *z, const struct sl_param *p)
{
	for (int k = 0; k < z->held_count; k++)
		if (z->held[k] == p)
			return 1;
	return 0;
}

/* Reduce-scatters the `which` arrays of the contributing ranks into piece (own_len floats). */
static int scatter_into(struct sl_zero *z, int which, int contributes, float *piece,
			struct sl_err *err)
{
	for (long long b0 = 0; b0 < z->view_numel; b0 += z->bucket_floats) {
		long long b1 = min_ll(z->view_numel, b0 + z->bucket_floats);
		bucket_counts(z, b0, b1);
		transfer(z, b0, b1, which, 1, contributes);
		float *out = piece + (max_ll(z->own_start, b0) - z->own_start);
		if (z->counts[z->group->rank] == 0)
			out = piece; /* nothing is written */
		int rc = sl_comm_reduce_scatter(z->comm, z->group, z->bucket, out, z->counts,
						SL_COMM_FLOAT, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* All-gathers the members' pieces (piece, or with piece NULL this rank's local `which` values)
 * and writes every rank's local `which` arrays from the result. */
static int gather_from(struct sl_zero *z, const float *piece, int which, struct sl_err *err)
{
	for (long long b0 = 0; b0 < z->view_numel; b0 += z->bucket_floats) {
		long long b1 = min_ll(z->view_numel, b0 + z->bucket_floats);
		long long at = bucket_counts(z, b0, b1);
		int mine = z->counts[z->group->rank];
		if (piece) {
			if (mine)
				memcpy(z->bucket + at, piece + (b0 + at - z->own_start),
				       (size_t)mine * sizeof(float));
		} else {
			transfer(z, b0, b1, which, 1, 1); /* uniform: the local view is the view */
		}
		int rc = sl_comm_allgatherv(z->comm, z->group, z->bucket, z->counts, SL_COMM_FLOAT,
					    err);
		if (rc)
			return rc;
		transfer(z, b0, b1, which, 0, 0);
	}
	return 0;
}

int sl_zero_load(struct sl_zero *z, int moments, struct sl_err *err)
{
	int first = z->me.island_pipeline == 0; /* the group is the island's */
	int rc = 0;
	if (z->uniform) {
		/* every member holds the same shards: its piece is a slice of its own arrays */
		if (!moments)
			return 0;
		for (int i = 0; i < z->seg_count; i++) {
			const struct sl_zero_segment *s = &z->segs[i];
			struct sl_param *p = z->held[s->param];
			memcpy(z->m + s->piece_off, p->exp_avg + s->local_off,
			       (size_t)s->len * sizeof(float));
			memcpy(z->v + s->piece_off, p->exp_avg_sq + s->local_off,
			       (size_t)s->len * sizeof(float));
		}
		return 0;
	}
	rc = scatter_into(z, ARR_VALUE, first, z->master, err);
	if (!rc && moments)
		rc = scatter_into(z, ARR_M, first, z->m, err);
	if (!rc && moments)
		rc = scatter_into(z, ARR_V, first, z->v, err);
	return rc ? sl_err_prefix(err, "sharded optimizer: load") : 0;
}

/* Uniform view: copies src (the view's elements [lo, hi)) into the local `which` arrays. */
static void copy_to_local(struct sl_zero *z, long long lo, long long hi, int which,
			  const float *src)
{
	for (int k = 0; k < z->held_count; k++) {
		long long vs = z->view_start[k], ve = vs + z->held[k]->numel;
		long long a = max_ll(vs, lo), b = min_ll(ve, hi);
		if (a < b)
			memcpy(array_of(z->held[k], which) + (a - vs), src + (a - lo),
			       (size_t)(b - a) * sizeof(float));
	}
}

int sl_zero_reduce_grads(struct sl_zero *z, struct sl_err *err)
{
	int rc = 0;
	if (!z->uniform) {
		rc = scatter_into(z, ARR_GRAD, 1, z->grad, err);
	} else {
		/* in place: the summed piece lands at the bucket's start, then in the local
		 * gradients (the rest of them stays unsummed and is not read) */
		for (long long b0 = 0; b0 < z->view_numel && !rc; b0 += z->bucket_floats) {
			long long b1 = min_ll(z->view_numel, b0 + z->bucket_floats);
			long long at = bucket_counts(z, b0, b1);
			int mine = z->counts[z->group->rank];
			transfer(z, b0, b1, ARR_GRAD, 1, 1);
			rc = sl_comm_reduce_scatter(z->comm, z->group, z->bucket, z->bucket,
						    z->counts, SL_COMM_FLOAT, err);
			if (!rc && mine)
				copy_to_local(z, b0 + at, b0 + at + mine, ARR_GRAD, z->bucket);
		}
	}
	return rc ? sl_err_prefix(err, "sharded optimizer: gradient reduce-scatter") : 0;
}

/* The summed gradient of a segment. */
static const float *seg_grad(const struct sl_zero *z, const struct sl_zero_segment *s)
{
	return z->uniform ? z->held[s->param]->grad + s->local_off : z->grad + s->piece_off;
}

double sl_zero_grad_sumsq(const struct sl_zero *z)
{
	double sum = 0.0;
	for (int i = 0; i < z->seg_count; i++) {
		const struct sl_zero_segment *s = &z->segs[i];
		const struct sl_param *p = z->held[s->param];
		/* uniform: every TP rank's group holds the replicated tensors; count them once */
		if (z->uniform && !sl_grad_sync_param_is_sharded(p) && z->me.tp_rank != 0)
			continue;
		sum += sl_sum_squares(seg_grad(z, s), (long)s->len);
	}
	return sum;
}

int sl_zero_step(struct sl_zero *z, const struct sl_adamw_config *cfg, double lr,
		 const struct sl_adamw_step *step, struct sl_err *err)
{
	struct sl_adamw_step s = *step;
	float decay = (float)(1.0 - lr * cfg->weight_decay);
	for (int i = 0; i < z->seg_count; i++) {
		const struct sl_zero_segment *g = &z->segs[i];
		struct sl_param *p = z->held[g->param];
		float *value = z->uniform ? p->value + g->local_off : z->master + g->piece_off;
		s.decay = p->decay ? decay : 1.0f;
		sl_adamw_update(value, seg_grad(z, g), z->m + g->piece_off,
				z->v + g->piece_off, (long)g->len, &s);
	}
	int rc = gather_from(z, z->uniform ? NULL : z->master, ARR_VALUE, err);
	return rc ? sl_err_prefix(err, "sharded optimizer: parameter all-gather") : 0;
}

int sl_zero_materialize(struct sl_zero *z, int fill, struct sl_err *err)
{
	size_t total = 0;
	for (int k = 0; k < z->held_count; k++)
		total += (size_t)z->held[k]->numel;
	sl_zero_release(z);
	z->materialized = sl_alloc_floats(2 * (total ? total : 1));
	if (!z->materialized)
		return sl_err_set(err, SL_ENOMEM, "cannot allocate %.1f MiB for the whole moments of a "
				  "checkpoint", (double)total * 8 / (1 << 20));
	size_t off = 0;
	for (int k = 0; k < z->held_count; k++) {
		z->held[k]->exp_avg = z->materialized + off;
		z->held[k]->exp_avg_sq = z->materialized + total + off;
		off += (size_t)z->held[k]->numel;
	}
	if (!fill)
		return 0;
	int rc = gather_from(z, z->m, ARR_M, err);
	if (!rc)
		rc = gather_from(z, z->v, ARR_V, err);
	return rc ? sl_err_prefix(err, "sharded optimizer: moment all-gather") : 0;
}

void sl_zero_release(struct sl_zero *z)
{
	if (!z->materialized)
		return;
	for (int k = 0; k < z->held_count; k++)
		z->held[k]->exp_avg = z->held[k]->exp_avg_sq = NULL;
	free(z->materialized);
	z->materialized = NULL;
}
