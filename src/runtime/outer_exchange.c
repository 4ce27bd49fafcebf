/* The outer exchange of one fragment and its landing (outer_sync.h): start (weights, the
 * pseudo-gradient, phase 1), phase 2 once phase 1 is done, landing (the average shared inside
 * the island, the outer Nesterov step on the rank's own shards, the island's values replaced or
 * merged). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/outer_sync.h"
#include "runtime/outer_wire.h"
#include "train/gpt_layers.h"
#include "util/clock.h"


static int counted_param(const struct sl_outer_sync *o, const struct sl_param *p)
{
	/* a mixed stage's replicated tensors come from TP rank 0 only: each element once */
	return !o->mixed || (p->tp > 1 && p->shard_dim >= 0) || o->me.tp_rank == 0;
}

/* Index in the fragment's lane vector of element e of parameter i. */
static long long lane_index(const struct sl_outer_sync *o, int i, long long e)
{
	return o->lane_off[i] + (o->mixed ? sl_param_full_index(o->params[i], e) : e);
}

/* The name of the tensor that holds lane element `at` of fragment f (for an error). */
static const char *tensor_at(const struct sl_outer_sync *o, int f, long long at)
{
	const char *name = "?";
	for (int i = 0; i < o->count; i++)
		if (o->fragment_of[i] == f && o->lane_off[i] <= at)
			name = o->params[i]->name;
	return name;
}

/* The replica's pseudo-gradient of fragment f, theta - theta_i, in o->scratch. */
static int pseudo_gradient(struct sl_outer_sync *o, int f, struct sl_err *err)
{
	struct sl_outer_fragment *fr = &o->frags[f];
	if (o->mixed)
		memset(o->scratch, 0, (size_t)fr->lane_len * sizeof(float));
	for (int i = 0; i < o->count; i++) {
		const struct sl_param *p = o->params[i];
		if (o->fragment_of[i] != f || !counted_param(o, p))
			continue;
		for (long long e = 0; e < p->numel; e++)
			o->scratch[lane_index(o, i, e)] = o->global[i][e] - p->value[e];
	}
	if (o->mixed)
		return sl_comm_allreduce(o->comm, o->tp, o->scratch, fr->lane_len, SL_COMM_FLOAT,
					 SL_COMM_SUM, err);
	return 0;
}

static long long chunk_start(long long len, int n, int c) { return (long long)c * len / n; }

static int encode_piece(struct sl_outer_sync *o, int f, const float *values, unsigned char *out,
			const int *displs, struct sl_err *err)
{
	struct sl_outer_fragment *fr = &o->frags[f];
	for (int c = 0; c < o->n; c++) {
		long long c0 = chunk_start(fr->piece_len, o->n, c);
		long long len = chunk_start(fr->piece_len, o->n, c + 1) - c0, bad = -1;
		if (sl_outer_wire_encode(sl_outer_sync_wire(o), values + c0, len, out + displs[c], &bad, NULL)) {
			long long at = fr->piece_off + c0 + bad;
			return sl_err_set(err, SL_EINFEASIBLE,
					  "outer step of fragment %d: island %d's pseudo-gradient is "
					  "%g in tensor '%s': the island diverged (try a lower --lr or "
					  "--grad-clip); nothing was averaged", f, o->me.island,
					  (double)values[c0 + bad], tensor_at(o, f, at));
		}
	}
	return 0;
}

static int phase1(struct sl_outer_sync *o, struct sl_outer_fragment *fr, struct sl_err *err)
{
	int n = o->n, *sc = fr->counts, *sd = sc + n, *r1c = sd + n, *r1d = r1c + n;
	fr->phase = SL_OUTER_PHASE1;
	return o->comm->backend->ialltoallv(o->comm, &o->outer1, fr->send, sc, sd, fr->recv1, r1c,
					    r1d, &fr->req1, err);
}

static int start(struct sl_outer_sync *o, int f, long long k, long long step,
		 struct sl_err *err)
{
	struct sl_outer_fragment *fr = &o->frags[f];
	double total = 0, tokens[SL_ISLANDS_MAX_ISLANDS];
	for (int j = 0; j < o->n; j++) {
		tokens[j] = (double)sl_outer_schedule_steps_in_sync(&o->sched, j, f, k) *
			    o->table->island_microbatches[j];
		total += tokens[j];
	}
	fr->flush = k == 0;
	fr->land_step = fr->flush ? step : step + o->isl->overlap_steps;
	fr->fifo = o->next_fifo++;
	fr->skip = total <= 0;
	fr->phase = fr->skip ? SL_OUTER_DONE : SL_OUTER_PHASE1;
	if (fr->skip)
		return 0;
	for (int j = 0; j < o->n; j++)
		fr->weights[j] = (float)(tokens[j] / total);
	/* only the replicas that carry a piece need the pseudo-gradient now */
	if (o->me.island_pipeline >= o->pieces)
		return 0;
	int rc = pseudo_gradient(o, f, err);
	if (rc || !o->carrier)
		return rc;
	int n = o->n, *sc = fr->counts, *sd = sc + n;
	if ((rc = encode_piece(o, f, o->scratch + fr->piece_off, fr->send, sd, err)))
		return rc;
	for (int c = 0; c < n; c++)
		if (c != o->me.island)
			o->stats.bytes_sent += sc[c];
	if (o->blocking && o->isl->overlap_steps > 0 && !fr->flush) {
		fr->phase = SL_OUTER_DEFERRED; /* the snapshot is fr->send: sent at the landing */
		return 0;
	}
	return phase1(o, fr, err);
}

/* Phase 1 done: this member's chunk averaged in fp32, in island order; phase 2 started: the
 * averaged chunk to every member, as an all-to-all of one buffer (send displacements 0), not
 * MPI_Iallgatherv: OpenMPI 4.1's took as long as a pair's two directions one after the other
 * (on the testbed 1.85 s for 1.68 MB each way, every time; the all-to-all 1.0-1.4 s for the same
 * bytes: docs/design/islands.md, what was measured). The values are the same. */
static int average_chunk(struct sl_outer_sync *o, struct sl_outer_fragment *fr,
			 struct sl_err *err)
{
	int n = o->n, me = o->me.island, *r1d = fr->counts + 3 * n;
	int *r2c = r1d + n, *r2d = r2c + n, *s2c = r2d + n, *s2d = s2c + n;
	long long c0 = chunk_start(fr->piece_len, n, me);
	long long len = chunk_start(fr->piece_len, n, me + 1) - c0, bad = -1;
	memset(o->acc, 0, (size_t)len * sizeof(float));
	for (int i = 0; i < n; i++)
		sl_outer_wire_decode_add(sl_outer_sync_wire(o), fr->recv1 + r1d[i], len, fr->weights[i], o->acc);
	if (sl_outer_wire_encode(sl_outer_sync_wire(o), o->acc, len, fr->mid, &bad, NULL))
		return sl_err_set(err, SL_EINFEASIBLE, "outer step: the islands' average is %g: "
				  "the islands diverged (try a lower --lr)", (double)o->acc[bad]);
	o->stats.bytes_sent += (double)(n - 1) * r2c[me];
	fr->phase = SL_OUTER_PHASE2;
	return o->comm->backend->ialltoallv(o->comm, &o->outer2, fr->mid, s2c, s2d, fr->recv2, r2c,
					    r2d, &fr->req2, err);
}

/* Phase 2 of every exchange up to start order `fifo`, in start order, waiting for phase 1 where
 * it has not finished. Waiting is safe: an exchange this island started by then, every island
 * starts before it waits on anything newer (the order of starts is the same everywhere), and
 * phase 2 starts in start order on every member whatever moment its phase 1 ends. */
static int advance_through(struct sl_outer_sync *o, long long fifo, struct sl_err *err)
{
	if (!o->carrier)
		return 0;
	for (;;) {
		struct sl_outer_fragment *oldest = NULL;
		for (int f = 0; f < o->isl->fragments; f++) {
			struct sl_outer_fragment *fr = &o->frags[f];
			if ((fr->phase == SL_OUTER_PHASE1 || fr->phase == SL_OUTER_DEFERRED) &&
			    fr->fifo <= fifo && (!oldest || fr->fifo < oldest->fifo))
				oldest = fr;
		}
		if (!oldest)
			return 0;
		/* SAILOR_TEST_OUTER_BLOCKING sends late, never later than this: when the bytes
		 * move changes no value, and waiting here for a send deferred past the round end
		 * would wait on an island already in the stop agreement */
		int rc = oldest->phase == SL_OUTER_DEFERRED ? phase1(o, oldest, err) : 0;
		double t0 = sl_now_s();
		if (!rc)
			rc = sl_comm_wait(o->comm, &oldest->req1, err);
		o->stats.wait_s += sl_now_s() - t0;
		if (!rc)
			rc = average_chunk(o, oldest, err);
		if (rc)
			return rc;
	}
}

int sl_outer_sync_round_end(struct sl_outer_sync *o, struct sl_err *err)
{
	return advance_through(o, o->next_fifo, err);
}

int sl_outer_sync_progress(struct sl_outer_sync *o, struct sl_err *err)
{
	if (!o->carrier)
		return 0;
	/* phase 2 starts in start order on every member: only the oldest exchange still in
	 * phase 1 may move on */
	for (;;) {
		struct sl_outer_fragment *oldest = NULL;
		for (int f = 0; f < o->isl->fragments; f++) {
			struct sl_outer_fragment *fr = &o->frags[f];
			if (fr->phase == SL_OUTER_PHASE1 && (!oldest || fr->fifo < oldest->fifo))
				oldest = fr;
		}
		if (!oldest)
			break;
		int done = 0;
		int rc = sl_comm_test(o->comm, &oldest->req1, &done, err);
		if (rc || !done)
			return rc;
		if ((rc = average_chunk(o, oldest, err)))
			return rc;
	}
	/* only second phases left: a test of one moves them all (OpenMPI's progress engine runs
	 * every transfer in flight inside any test); the landing's wait finds it done */
	for (int f = 0; f < o->isl->fragments; f++) {
		struct sl_outer_fragment *fr = &o->frags[f];
		if (fr->phase == SL_OUTER_PHASE2 && fr->req2.active) {
			int done = 0;
			return sl_comm_test(o->comm, &fr->req2, &done, err);
		}
	}
	return 0;
}

/* The outer Nesterov step on the rank's shards of f, and the island's values replaced (no
 * overlap, the flush) or merged (overlap). */
static void apply(struct sl_outer_sync *o, int f, int replace)
{
	float mu = (float)o->isl->outer_momentum, lr = (float)o->isl->outer_lr;
	float alpha = (float)o->isl->merge;
	for (int i = 0; i < o->count; i++) {
		if (o->fragment_of[i] != f)
			continue;
		struct sl_param *p = o->params[i];
		float *g = o->global[i], *m = o->momentum[i];
		for (long long e = 0; e < p->numel; e++) {
			sl_outer_sync_nesterov(&g[e], &m[e], o->scratch[lane_index(o, i, e)], mu, lr);
			p->value[e] = replace ? g[e] : alpha * g[e] + (1.0f - alpha) * p->value[e];
		}
	}
}

/* Finishes fragment f's exchange: the average of the whole lane vector in o->scratch, on every
 * rank of the island (the pieces shared inside it, a mixed stage's whole tensors broadcast). */
static int complete(struct sl_outer_sync *o, int f, struct sl_err *err)
{
	struct sl_outer_fragment *fr = &o->frags[f];
	int rc = 0, n = o->n;
	if (fr->phase == SL_OUTER_SETTLED) {
		memcpy(o->scratch, fr->pending, (size_t)fr->lane_len * sizeof(float));
		return 0;
	}
	double t0 = sl_now_s();
	if (o->carrier && fr->phase == SL_OUTER_DEFERRED && (rc = phase1(o, fr, err)))
		return rc;
	/* older exchanges move on first: phase 2 starts in start order everywhere */
	if ((rc = advance_through(o, fr->fifo, err)))
		return rc;
	if (o->carrier) {
		if ((rc = sl_comm_wait(o->comm, &fr->req2, err)))
			return rc;
		int *r2d = fr->counts + 5 * n;
		for (int c = 0; c < n; c++) {
			long long c0 = chunk_start(fr->piece_len, n, c);
			long long len = chunk_start(fr->piece_len, n, c + 1) - c0;
			sl_outer_wire_decode(sl_outer_sync_wire(o), fr->recv2 + r2d[c], len,
					     o->scratch + fr->piece_off + c0);
		}
	}
	o->stats.wait_s += sl_now_s() - t0;
	if (o->lane_member)
		rc = sl_comm_allgatherv(o->comm, &o->island_lane, o->scratch, fr->island_counts,
					SL_COMM_FLOAT, err);
	if (!rc && o->mixed)
		rc = sl_comm_broadcast(o->comm, o->tp, o->scratch, fr->lane_len, SL_COMM_FLOAT, 0,
				       err);
	return rc;
}

static int land(struct sl_outer_sync *o, int f, struct sl_err *err)
{
	struct sl_outer_fragment *fr = &o->frags[f];
	int rc = fr->skip ? 0 : complete(o, f, err);
	if (rc)
		return rc;
	if (!fr->skip) {
		apply(o, f, fr->flush || o->isl->overlap_steps == 0);
		o->stats.outer_steps++;
	}
	fr->phase = SL_OUTER_IDLE;
	return 0;
}

int sl_outer_sync_settle(struct sl_outer_sync *o, struct sl_err *err)
{
	for (;;) {
		int next = -1;
		for (int f = 0; f < o->isl->fragments; f++) {
			const struct sl_outer_fragment *fr = &o->frags[f];
			if (fr->phase != SL_OUTER_IDLE && fr->phase != SL_OUTER_SETTLED && !fr->skip &&
			    (next < 0 || fr->fifo < o->frags[next].fifo))
				next = f;
		}
		if (next < 0)
			return 0;
		struct sl_outer_fragment *fr = &o->frags[next];
		if (!fr->pending && !(fr->pending = sl_alloc_floats((size_t)fr->lane_len + 1)))
			return sl_err_set(err, SL_ENOMEM, "out of memory");
		int rc = complete(o, next, err);
		if (rc)
			return rc;
		memcpy(fr->pending, o->scratch, (size_t)fr->lane_len * sizeof(float));
		fr->phase = SL_OUTER_SETTLED;
	}
}

/* Lands, in start order, every exchange in flight that is due by `step` (all: step < 0). */
static int land_due(struct sl_outer_sync *o, long long step, int *landed, struct sl_err *err)
{
	for (;;) {
		int next = -1;
		for (int f = 0; f < o->isl->fragments; f++) {
			const struct sl_outer_fragment *fr = &o->frags[f];
			if (fr->phase != SL_OUTER_IDLE && (step < 0 || fr->land_step <= step) &&
			    (next < 0 || fr->fifo < o->frags[next].fifo))
				next = f;
		}
		if (next < 0)
			return 0;
		*landed |= !o->frags[next].skip;
		int rc = land(o, next, err);
		if (rc)
			return rc;
	}
}

int sl_outer_sync_after_step(struct sl_outer_sync *o, long long step, int *landed,
			     struct sl_err *err)
{
	*landed = 0;
	int rc = sl_outer_sync_progress(o, err);
	if (!rc)
		rc = land_due(o, step, landed, err);
	for (int f = o->isl->fragments - 1; !rc && f >= 0; f--) {
		if (!sl_outer_schedule_syncs_after(&o->sched, o->me.island, step, f))
			continue;
		long long k = sl_outer_schedule_sync_index(&o->sched, o->me.island, step, f);
		rc = start(o, f, k, step, err);
		if (!rc && o->isl->overlap_steps == 0)
			rc = land_due(o, step, landed, err);
	}
	if (!rc && o->isl->overlap_steps > 0)
		rc = sl_outer_sync_progress(o, err);
	return rc;
}

void sl_outer_sync_global_view(const struct sl_outer_sync *o, float **view)
{
	float mu = (float)o->isl->outer_momentum, lr = (float)o->isl->outer_lr;
	for (int i = 0; i < o->count; i++) {
		const struct sl_param *p = o->params[i];
		const struct sl_outer_fragment *fr = &o->frags[o->fragment_of[i]];
		for (long long e = 0; e < p->numel; e++) {
			float g = o->global[i][e];
			if (fr->phase == SL_OUTER_SETTLED) {
				/* the landing's arithmetic (apply), on a copy */
				float m = o->momentum[i][e]; /* a copy: the view changes nothing */
				sl_outer_sync_nesterov(&g, &m, fr->pending[lane_index(o, i, e)], mu,
						       lr);
			}
			view[i][e] = g;
		}
	}
}

int sl_outer_sync_finish(struct sl_outer_sync *o, int *landed, struct sl_err *err)
{
	*landed = 0;
	int rc = land_due(o, -1, landed, err);
	long long total = sl_outer_schedule_steps_before(&o->sched, o->me.island,
							 o->sched.run_steps);
	for (int f = o->isl->fragments - 1; !rc && f >= 0; f--) {
		rc = start(o, f, 0, total, err);
		if (!rc)
			rc = land_due(o, -1, landed, err);
	}
	if (rc)
		return rc;
	/* the trained model is the global weights; the islands' own are discarded */
	for (int i = 0; i < o->count; i++)
		memcpy(o->params[i]->value, o->global[i], (size_t)o->params[i]->numel * sizeof(float));
	*landed = 1;
	return 0;
}
