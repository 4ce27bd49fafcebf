/* The islands' outer exchange counted from the plan (outer_bytes.h).
 * Invariants: the tensors, their order and their sharding are train/gpt_layers.c's and
 * train/param.h's (tests/unit/test_plan_outer_bytes.c compares the lanes with the parameters
 * sl_gpt_init builds); the byte count of a chunk is the codec's own, sl_outer_wire_bytes
 * (runtime/outer_wire.h is pure: no MPI, no state, so plan/ may use it without depending on the
 * executor). */
#include "plan/outer_bytes.h"

#include <stdlib.h>
#include <string.h>

#include "plan/islands.h"
#include "runtime/outer_wire.h"

/* A tensor as a layer declares it: whole shape (cols 0: a vector) and how TP splits it. */
struct tensor_shape {
	long long rows, cols;
	int shard_dim;   /* -1 replicated, 0 rows, 1 columns */
	int parts;       /* equal parts of the sharded dimension (3: the fused Q|K|V) */
};

/* The values of TP rank `rank` of tp of a tensor: sl_param_describe's arithmetic. */
static long long local_numel(const struct tensor_shape *s, int tp, int rank, int whole)
{
	long long dims[2] = {s->rows, s->cols > 0 ? s->cols : 1};
	if (whole || tp <= 1 || s->shard_dim < 0)
		return dims[0] * dims[1];
	long long part = dims[s->shard_dim] / s->parts;
	long long start = part * rank / tp, end = part * (rank + 1) / tp;
	dims[s->shard_dim] = (end - start) * s->parts;
	return dims[0] * dims[1];
}

/* Block tensor i (0..11) in the order the layer declares it. */
static struct tensor_shape block_shape(const struct sl_model_config *m, int i)
{
	long long C = m->hidden, F = m->ffn_hidden;
	static const struct {
		int rows, cols; /* 1: C, 2: 3C, 3: F; cols 0: a vector */
		int shard_dim, parts;
	} t[12] = {
		{1, 0, -1, 1}, {1, 0, -1, 1},  /* ln1 weight, bias */
		{2, 1, 0, 3},  {2, 0, 0, 3},   /* attn.qkv weight, bias: Q|K|V by rows */
		{1, 1, 1, 1},  {1, 0, -1, 1},  /* attn.proj weight (by columns), bias */
		{1, 0, -1, 1}, {1, 0, -1, 1},  /* ln2 weight, bias */
		{3, 1, 0, 1},  {3, 0, 0, 1},   /* mlp.fc weight, bias: by rows */
		{1, 3, 1, 1},  {1, 0, -1, 1},  /* mlp.proj weight (by columns), bias */
	};
	long long size[4] = {0, C, 3 * C, F};
	return (struct tensor_shape){size[t[i].rows], size[t[i].cols], t[i].shard_dim, t[i].parts};
}

static int fragment_of(const int *starts, int fragments, int tensor)
{
	int f = 0;
	while (f + 1 < fragments && starts[f + 1] <= tensor)
		f++;
	return f;
}

/* A rank's shard of one tensor, added to its fragment's lane. */
struct lane_ctx {
	const int *starts;
	int fragments, tp, tp_rank, whole;
	long long *lane;
};

static void add(const struct lane_ctx *c, int tensor, struct tensor_shape shape)
{
	c->lane[fragment_of(c->starts, c->fragments, tensor)] +=
		local_numel(&shape, c->tp, c->tp_rank, c->whole);
}

void sl_outer_bytes_lanes(const struct sl_model_config *m, int first, int last, int tp,
			  int tp_rank, int whole, const int *starts, int fragments,
			  long long *lane)
{
	int N = m->num_blocks, T = sl_islands_model_tensors(m);
	long long C = m->hidden;
	struct tensor_shape wte = {m->vocab, C, 0, 1}, wpe = {m->seq_len, C, -1, 1};
	struct tensor_shape ln_f = {C, 0, -1, 1};
	struct lane_ctx c = {starts, fragments, tp, tp_rank, whole, lane};
	memset(lane, 0, (size_t)fragments * sizeof(*lane));
	for (int layer = first; layer <= last; layer++) {
		if (layer == 0) {
			add(&c, 0, wte);
			add(&c, 1, wpe);
		} else if (layer <= N) {
			for (int i = 0; i < 12; i++)
				add(&c, 2 + (layer - 1) * 12 + i, block_shape(m, i));
		} else {
			add(&c, T - 2, ln_f);
			add(&c, T - 1, ln_f);
			if (first > 0) /* the head's own copy of the tied table */
				add(&c, 0, wte);
		}
	}
}

/* Every replica of the stage, in every island, has one TP degree (runtime/groups.h's
 * sl_groups_stage_uniform_tp). */
static int stage_uniform_tp(const struct sl_plan *plan, int k)
{
	for (int j = 1; j < plan->num_pipelines; j++)
		if (sl_plan_replica(plan, k, j)->tp != sl_plan_replica(plan, k, 0)->tp)
			return 0;
	return 1;
}

/* Working memory of one count. */
struct counting {
	const struct sl_plan *plan;
	const struct sl_model_config *model;
	const struct sl_catalogue *cat;
	enum sl_outer_wire_format wire;
	int n, Q, F;
	int *starts;       /* F + 1 */
	int *member;       /* n x Q: the q-th pipeline of island i at [i * Q + q] */
	long long *lane;   /* F */
	long long *chunk;  /* n: bytes of chunk c of the piece, over every fragment */
	sl_outer_bytes_visit_fn visit; /* optional: every transfer */
	void *visit_ctx;
};

/* One outer group: stage k, the lane vectors in c->lane, piece q. */
static void count_group(struct counting *c, int k, int q, struct sl_outer_bytes *out)
{
	int n = c->n;
	memset(c->chunk, 0, (size_t)n * sizeof(*c->chunk));
	for (int f = 0; f < c->F; f++) {
		long long L = c->lane[f];
		long long P = (long long)(q + 1) * L / c->Q - (long long)q * L / c->Q;
		for (int ch = 0; ch < n; ch++)
			c->chunk[ch] += sl_outer_wire_bytes(c->wire, (long long)(ch + 1) * P / n -
								      (long long)ch * P / n);
	}
	for (int i = 0; i < n; i++) {
		int zi = sl_plan_replica(c->plan, k, c->member[i * c->Q + q])->zone;
		for (int ch = 0; ch < n; ch++) {
			if (ch == i)
				continue;
			int zc = sl_plan_replica(c->plan, k, c->member[ch * c->Q + q])->zone;
			/* phase 1: i sends chunk ch to ch; phase 2: ch sends it back to i */
			if (c->visit) {
				const struct sl_replica *ri =
					sl_plan_replica(c->plan, k, c->member[i * c->Q + q]);
				const struct sl_replica *rc =
					sl_plan_replica(c->plan, k, c->member[ch * c->Q + q]);
				int ji = c->member[i * c->Q + q], jc = c->member[ch * c->Q + q];
				struct sl_outer_transfer t = {out->groups, 1, i, ch, zi, ri->gpu, zc,
							      rc->gpu, c->chunk[ch], k, ji, jc};
				c->visit(c->visit_ctx, &t);
				t = (struct sl_outer_transfer){out->groups, 2, ch, i, zc, rc->gpu, zi,
							       ri->gpu, c->chunk[ch], k, jc, ji};
				c->visit(c->visit_ctx, &t);
			}
			out->class_bytes[sl_link_model_class_of(c->cat, zi, zc)] += c->chunk[ch];
			out->class_bytes[sl_link_model_class_of(c->cat, zc, zi)] += c->chunk[ch];
			out->total_bytes += 2 * c->chunk[ch];
		}
	}
	out->groups++;
}

static void count_stages(struct counting *c, struct sl_outer_bytes *out)
{
	const struct sl_plan *plan = c->plan;
	for (int k = 0; k < plan->num_stages; k++) {
		int uniform = stage_uniform_tp(plan, k);
		int tp = sl_plan_replica(plan, k, 0)->tp, lanes = uniform ? tp : 1;
		for (int t = 0; t < lanes; t++) {
			sl_outer_bytes_lanes(c->model, plan->stages[k].first_layer,
					     plan->stages[k].last_layer, tp, t, !uniform, c->starts,
					     c->F, c->lane);
			for (int q = 0; q < c->Q; q++)
				count_group(c, k, q, out);
		}
	}
}

/* member[i * Q + q] = the q-th pipeline of island i; Q = the fewest pipelines of an island. */
static int island_members(const struct sl_plan_islands *isl, int *member)
{
	int Q = isl->num_pipelines;
	for (int i = 0; i < isl->count; i++) {
		int size = 0;
		for (int j = 0; j < isl->num_pipelines; j++)
			size += isl->island_of[j] == i;
		Q = size < Q ? size : Q;
	}
	for (int i = 0; i < isl->count; i++)
		for (int j = 0, q = 0; j < isl->num_pipelines && q < Q; j++)
			if (isl->island_of[j] == i)
				member[i * Q + q++] = j;
	return Q;
}

int sl_outer_bytes_count(const struct sl_plan *plan, const struct sl_model_config *model,
			 long long global_batch, int seq_len, const struct sl_catalogue *cat,
			 struct sl_outer_bytes *out, struct sl_err *err)
{
	return sl_outer_bytes_visit(plan, model, global_batch, seq_len, cat, NULL, NULL, out, err);
}

double sl_outer_tokens_per_round(const struct sl_plan *plan, long long global_batch, int seq_len)
{
	const struct sl_plan_islands *isl = plan->islands;
	double tokens = 0;
	for (int j = 0; isl && isl->count >= 2 && j < plan->num_pipelines; j++)
		tokens += (double)isl->inner_steps[isl->island_of[j]] *
			  sl_plan_pipeline_microbatches(plan, j, global_batch) * plan->micro_batch *
			  seq_len;
	return tokens;
}

int sl_outer_bytes_visit(const struct sl_plan *plan, const struct sl_model_config *model,
			 long long global_batch, int seq_len, const struct sl_catalogue *cat,
			 sl_outer_bytes_visit_fn visit, void *ctx, struct sl_outer_bytes *out,
			 struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	const struct sl_plan_islands *isl = plan->islands;
	if (!isl || isl->count < 2)
		return 0;
	int rc = sl_islands_check_model(isl, model, err);
	if (rc)
		return rc;
	struct counting c = {.plan = plan, .model = model, .cat = cat, .n = isl->count,
			     .F = isl->fragments, .wire = (enum sl_outer_wire_format)isl->wire,
			     .visit = visit, .visit_ctx = ctx};
	c.starts = malloc((size_t)(c.F + 1) * sizeof(int));
	c.member = malloc((size_t)isl->num_pipelines * sizeof(int));
	c.lane = malloc((size_t)c.F * sizeof(long long));
	c.chunk = malloc((size_t)c.n * sizeof(long long));
	if (!c.starts || !c.member || !c.lane || !c.chunk ||
	    sl_islands_fragment_starts(model, c.F, c.starts))
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	if (!rc) {
		c.Q = out->pieces = island_members(isl, c.member);
		count_stages(&c, out);
		out->tokens_per_round = sl_outer_tokens_per_round(plan, global_batch, seq_len);
		if (out->tokens_per_round > 0)
			out->bytes_per_1k_tokens = 1e3 * (double)out->total_bytes /
						   out->tokens_per_round;
	}
	free(c.starts);
	free(c.member);
	free(c.lane);
	free(c.chunk);
	return rc;
}
